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
    # Measured (these seeds): epsilon 1 triangles 0.081, global 0.027, average 0.020; epsilon 4 0.050 / 0.012 /
    # 0.009. The bounds leave room for the sampler's run-to-run spread (bench_structure, 3 runs per cell,
    # reports/structure_fidelity.md); session 6's epsilon-4 range quoted above fails all three.
    for eps in (1.0, 4.0):
        assert err[eps]["triangles"] <= 0.10
        assert err[eps]["global"] <= 0.06
        assert err[eps]["average"] <= 0.08
    # Epsilon 4 no worse, up to the spread of one seeded draw: 3 unseeded bench runs of the session-7 code at epsilon 1
    # gave triangles 0.036-0.077, global 0.000-0.036, average 0.029-0.071 (ranges about 0.04); a seed whose epsilon-1
    # draw lands at the bottom of that range (average 0.002 against epsilon 4's 0.022 on the session-7 code) is not
    # a regression. The absolute bounds above are what session 6's epsilon-4 draws failed.
    for key in ("triangles", "global", "average"):
        assert err[4.0][key] <= err[1.0][key] + 0.04, key
