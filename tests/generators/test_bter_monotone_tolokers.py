"""dp_bter on Tolokers: epsilon 4 keeps the triangles and the clustering that epsilon 1 keeps (issue 15).

Tolokers (mean degree 88) is where wedge closures cannot lift the clustering sum: a closure at a node of degree ``d``
adds about ``1 / C(d, 2)``. The sampler used to trade the triangle count against the sum and kept a draw with 8-13%
too many triangles at epsilon 4 (triangle RE 0.118-0.134, global clustering RE 0.174-0.188, average clustering RE
0.289-0.315 over 3 bench runs, all worse than at epsilon 1). It now flattens the affinity groups' densities (small
groups denser) until both are met. Seeded fits and samples: a test of the sampler, not a release.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.audit.statistics import node_triangles
from graphrelease.generators.bter import DPBTER
from graphrelease.graph import Graph
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import load_npz_graph


def _structure(graph: Graph) -> dict[str, float]:
    d = graph.degrees().astype(np.float64)
    t = node_triangles(graph).astype(np.float64)
    wedges = d * (d - 1) / 2
    local = np.divide(t, wedges, out=np.zeros_like(t), where=wedges > 0)
    return {"triangles": t.sum() / 3, "global": t.sum() / wedges.sum(), "average": float(local.mean())}


@pytest.mark.slow
def test_tolokers_triangles_and_clustering_no_worse_at_epsilon_4(data_dir):
    graph = load_npz_graph(data_dir, "tolokers")
    perm = np.random.default_rng(5).permutation(graph.num_nodes)  # a numbering that carries nothing
    graph, _ = Graph.from_edges(graph.num_nodes, perm[graph.edges], name="tolokers")
    truth = _structure(graph)
    err = {}
    for eps in (1.0, 4.0):
        fitted = DPBTER(seed=11).fit(graph, Budget(epsilon=eps, delta=1e-6, adjacency="edge"))
        (synth,) = fitted.sample(1, rng=np.random.default_rng(11))
        got = _structure(synth)
        err[eps] = {k: abs(got[k] - truth[k]) / truth[k] for k in truth}
    # Measured (these seeds, session 16's code): epsilon 1 triangles 0.086, global 0.049, average 0.012; epsilon 4
    # 0.015 / 0.017 / 0.053. With each block's hubs in their own group and the density steer limited to one draw,
    # the epsilon-1 draw's average clustering was 0.256 short (structure log items 21-22). The bounds leave room for
    # the sampler's run-to-run spread (bench_structure, 3 runs per cell, reports/structure_fidelity.md); session 6's
    # epsilon-4 range quoted above fails all three.
    for eps in (1.0, 4.0):
        assert err[eps]["triangles"] <= 0.10
        assert err[eps]["global"] <= 0.06
        assert err[eps]["average"] <= 0.08
    # Epsilon 4 no worse, up to the spread of one seeded draw: 3 unseeded bench runs of the session-7 code at epsilon 1
    # gave triangles 0.036-0.077, global 0.000-0.036, average 0.029-0.071 (ranges about 0.04); a seed whose epsilon-1
    # draw lands at the bottom of that range (average 0.002 against epsilon 4's 0.022 on the session-7 code) is not
    # a regression. The absolute bounds above are what session 6's epsilon-4 draws failed.
    # Session 16's code (each block's hubs in their block, log item 22): 3 bench fits per epsilon gave average
    # clustering 0.010-0.077 at epsilon 1 and 0.011-0.045 at 4 (medians 0.026 / 0.034), and these seeds 0.012 ->
    # 0.053: the spread of one draw is now about 0.07, so the allowance is 0.05.
    for key in ("triangles", "global", "average"):
        assert err[4.0][key] <= err[1.0][key] + 0.05, key


@pytest.mark.slow
def test_tolokers_draws_reach_the_count_after_a_deep_first_cut(data_dir):
    """Seeded: the structure benchmark's permutation of Tolokers, fit seed 902, draw seed 33, epsilon 4. The first
    draw (every group at density 1) has twice the released triangle count, and the split then asks the groups for 17k
    triangles, 0.1% of the count; that draw is 23% short. With fourfold secant steps the later draws could climb only
    to 69k and 278k and stayed 17-23% short, and the swaps left the average clustering 35% short. The first draw
    brackets the answer, so the secant may now go as far as it (structure log item 22)."""
    graph = load_npz_graph(data_dir, "tolokers")
    perm = np.random.default_rng(sum(map(ord, "tolokers"))).permutation(graph.num_nodes)
    graph, _ = Graph.from_edges(graph.num_nodes, perm[graph.edges], name="tolokers")
    truth = _structure(graph)
    fitted = DPBTER(seed=902).fit(graph, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
    (synth,) = fitted.sample(1, rng=np.random.default_rng(33))
    got = _structure(synth)
    err = {k: abs(got[k] - truth[k]) / truth[k] for k in truth}
    # Measured (these seeds): triangles 0.027, global 0.006, average 0.045; before the bracket 0.127 / 0.112 / 0.347.
    assert err["triangles"] <= 0.10 and err["global"] <= 0.06 and err["average"] <= 0.08, err
