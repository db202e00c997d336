"""dp_bter's component join reaches the released component count (issue 15; structure verdict: 2-62 components
where the inputs have 1). The paid joins delete edges of the largest component, and a deleted edge can be a bridge,
so they split small pieces off again; the second, unpaid pass joins those."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from graphrelease.generators.affinity import (
    COMPONENT_SHRINK,
    component_target,
    csr_from_keys,
    keys_to_edges,
    merge_components,
    pair_stranded_nodes,
    triangle_count_keys,
)
from graphrelease.generators.bter import DEFAULT_FRACTIONS, DPBTER
from graphrelease.generators.classical_common import pair_keys
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import bfs_ball, load_npz_graph


def _components(n: int, keys: np.ndarray) -> int:
    return int(sp.csgraph.connected_components(csr_from_keys(n, keys), directed=False)[0])


def test_unpaid_join_adds_one_edge_per_piece_and_deletes_none(data_dir):
    graph = load_npz_graph(data_dir, "cora")  # 78 components: a giant one and many small pieces
    n = graph.num_nodes
    keys = np.sort(pair_keys(np.asarray(graph.edges), n))
    degrees = np.bincount(keys_to_edges(keys, n).ravel(), minlength=n).astype(np.float64)
    before = _components(n, keys)
    out = merge_components(n, keys, 1.0, degrees, np.random.default_rng(0), pay=False)
    assert before > 1 and _components(n, out) == 1
    assert out.size == keys.size + before - 1
    assert np.isin(keys, out).all()  # nothing deleted


def test_sampled_graph_reaches_the_released_component_count(data_dir):
    graph = load_npz_graph(data_dir, "cora")
    for seed in range(3):  # seeded fits and samples: a test of the sampler
        fitted = DPBTER(seed=seed).fit(graph, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        (synth,) = fitted.sample(1, rng=np.random.default_rng(seed))
        keys = np.sort(pair_keys(np.asarray(synth.edges), synth.num_nodes))
        target = max(1, int(round(component_target(float(fitted.arrays["components"]),
                                                   fitted.config["component_scale"]))))
        # The sampler's draw has hundreds of components; the joins leave exactly the count read off the release
        # (before the unpaid pass, the paid joins' deletions left pieces over it: LastFM 15-25 for a released 1).
        assert _components(synth.num_nodes, keys) == target, seed
        assert abs(keys.size - graph.num_edges) <= 0.02 * graph.num_edges
        # ... and the pieces kept apart are not isolated nodes released with an edge (Cora has no isolated node;
        # before the leaves were handed over, 40-89 of its degree-1 nodes came out isolated).
        isolated = np.bincount(keys_to_edges(keys, synth.num_nodes).ravel(), minlength=synth.num_nodes) == 0
        assert not (isolated & (np.rint(fitted.arrays["degrees"]) >= 1)).any(), seed


def test_stranded_nodes_take_over_leaves_keeping_edges_components_and_triangles(data_dir):
    graph = load_npz_graph(data_dir, "cora")
    n = graph.num_nodes
    keys = np.sort(pair_keys(np.asarray(graph.edges), n))
    e = keys_to_edges(keys, n)
    degrees = np.bincount(e.ravel(), minlength=n).astype(np.float64)
    # Strand 40 degree-1 nodes whose neighbour keeps degree >= 3 (a draw's misses), and one node released at 0.
    leaf_rows = np.flatnonzero((degrees[e[:, 0]] == 1) & (degrees[e[:, 1]] >= 4))[:40]
    stranded = e[leaf_rows, 0]
    drawn = np.delete(keys, leaf_rows)
    released = degrees.copy()
    released[stranded[0]] = 0.0
    d_before = np.bincount(keys_to_edges(drawn, n).ravel(), minlength=n)
    out = pair_stranded_nodes(n, drawn, released, np.random.default_rng(0))
    d_after = np.bincount(keys_to_edges(out, n).ravel(), minlength=n)
    assert leaf_rows.size == 40 and out.size == drawn.size
    assert _components(n, out) == _components(n, drawn)
    assert triangle_count_keys(n, out) == triangle_count_keys(n, drawn)
    assert (d_after[stranded[1:]] == 1).all() and d_after[stranded[0]] == 0  # released at 0: left alone
    moved = np.flatnonzero(d_after != d_before)
    # Only the 39 stranded nodes gained, each by one, and the hubs that gave a leaf lost one each: leaves keep 1.
    assert (d_after[moved] - d_before[moved]).sum() == 0 and set(stranded[1:]) <= set(moved.tolist())
    assert (d_after >= np.minimum(d_before, 2)).all()


def test_component_target_soft_thresholds_the_released_count_by_its_noise_scale():
    scale = 33.3  # the count's Laplace scale at epsilon 1 (share 0.03)
    assert component_target(1.0, scale) == 1.0
    assert component_target(1.0 + 0.9 * COMPONENT_SHRINK * scale, scale) == 1.0  # inside the noise: one component
    assert component_target(500.0, scale) == 500.0 - COMPONENT_SHRINK * scale  # far above it: shifted by the threshold
    assert component_target(40.0, 0.0) == 40.0  # releases that did not state the scale keep their count


def test_a_small_connected_graph_stays_connected_when_its_count_is_inside_the_noise(data_dir):
    """A 300-node piece of Cora around its hub (one component) at epsilon 1, where the count's noise scale (33) is a
    tenth of the nodes. Read as it stood, a released 7-15 left 7-15 components (seeds 0, 8, 12, 13) and a released
    50-68 cost the largest component 18-22% of the nodes (seeds 2, 4, 6: 0.777 / 0.817 / 0.817, against 0.887 /
    0.927 / 0.950 with the threshold); the soft threshold joins what the count cannot tell from noise (seeded fits
    and samples: a test of the sampler)."""
    cora = load_npz_graph(data_dir, "cora")
    ball = bfs_ball(cora, int(np.argmax(cora.degrees())), 300, name="cora_ball")
    assert _components(ball.num_nodes, np.sort(pair_keys(np.asarray(ball.edges), ball.num_nodes))) == 1
    inside, shares = 0, []
    # The default share set, given explicitly: the seeds above were read without the edge count's second release
    # (this piece's 624 edges would take it), which re-draws every later noise.
    shares_as_given = dict(DEFAULT_FRACTIONS)
    for seed in range(16):
        fitted = DPBTER(seed=seed, fractions=shares_as_given).fit(ball, Budget(epsilon=1.0, delta=1e-6,
                                                                                 adjacency="edge"))
        (synth,) = fitted.sample(1, rng=np.random.default_rng(seed))
        ncomp, comp = sp.csgraph.connected_components(synth.to_csr(), directed=False)
        shares.append(np.bincount(comp).max() / synth.num_nodes)
        if float(fitted.arrays["components"]) <= 1.0 + COMPONENT_SHRINK * fitted.config["component_scale"]:
            inside += 1
            assert ncomp == 1, seed
    assert inside >= 12  # the seeds above: 13 of 16 releases are inside the noise
    assert np.median(shares) == 1.0 and min(shares) >= 0.85  # without the threshold: 0.777 (seed 2)
