"""The degree-mixed group model of ``benchmarks/bench_mixed_groups.py`` (structure log item 36) does what its docstring
says, so ``reports/mixed_groups.md`` stays reproducible while the sampler it patches changes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_mixed_groups as bmg  # noqa: E402

import graphrelease.generators.bter as bter  # noqa: E402
from graphrelease.io import read_graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402


def _cora(data_dir):
    g = read_graph(data_dir / "single" / "cora.npz").data
    return g, g.degrees().astype(np.float64)


def test_groups_span_degrees_and_hubs_join_several(data_dir):
    g, degrees = _cora(data_dir)
    blocks = (np.arange(g.num_nodes) % 3).astype(np.int64)
    model = bmg.MixedGroups()
    order, starts = model.groups(degrees, blocks, np.random.default_rng(0))
    groups = [order[a:b] for a, b in zip(starts[:-1], starts[1:])]
    for members in groups:
        assert np.unique(blocks[members]).size == 1  # groups stay inside their block
        assert np.unique(members).size == members.size
    counts = np.bincount(order, minlength=g.num_nodes)
    # integer degrees survive the randomised rounding: every node of degree >= 2 is in a group, no other node is
    assert np.all(counts[degrees >= 2] >= 1) and np.all(counts[degrees < 2] == 0)
    for block in range(3):
        nodes = np.flatnonzero((blocks == block) & (degrees >= 2))
        size = int(round(2.0 * degrees[nodes].mean())) + 1
        hub = nodes[np.argmax(degrees[nodes])]
        assert counts[hub] == np.ceil(degrees[hub] / (size - 1)) > 1  # the block's top hub joins several groups
    # dealt, not cut from the sorted order: each group's first member comes from the block's top `count` nodes
    top = np.array([degrees[m].max() for m in groups])
    assert np.median(top) >= np.quantile(degrees[degrees >= 2], 0.8)
    for phi in model.phis:
        s = phi.shape[0]
        assert np.isclose(phi[np.triu_indices(s, 1)].mean(), 1.0)


def test_densities_meet_the_triangles_asked_and_edges_stay_in_groups(data_dir):
    g, degrees = _cora(data_dir)
    blocks = np.zeros(g.num_nodes, dtype=np.int64)
    model = bmg.MixedGroups()
    order, starts = model.groups(degrees, blocks, np.random.default_rng(1))
    rho = model.densities(starts, max_edges=1e9, triangles=800.0)
    sizes = np.diff(starts).astype(np.float64)
    # handed over as BTER densities with the same expected triangles
    assert np.isclose(np.sum(rho ** 3 * sizes * (sizes - 1) * (sizes - 2) / 6), 800.0, rtol=1e-3)
    keys = model.sample(g.num_nodes, order, starts, rho, np.random.default_rng(2))
    group_of = {}
    for gi, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        for v in order[a:b].tolist():
            group_of.setdefault(v, set()).add(gi)
    u, v = keys // g.num_nodes, keys % g.num_nodes
    assert all(group_of[a] & group_of[b] for a, b in zip(u.tolist(), v.tolist()))


def test_arms_patch_the_sampler_and_restore_it(data_dir):
    g, _ = _cora(data_dir)
    shipped = (bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges)
    with bmg.arm("mixed"):
        assert bter.affinity_groups is not shipped[0]
        fitted = bter.DPBTER(seed=900).fit(g, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
        release = fitted.sample(1, rng=np.random.default_rng(0))[0]
    assert (bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges) == shipped
    assert abs(release.num_edges - float(fitted.arrays["block_counts"].sum())) <= 0.02 * g.num_edges


def test_gamma_concentrates_the_pair_weights_on_the_heavy_members(data_dir):
    g, degrees = _cora(data_dir)
    blocks = np.zeros(g.num_nodes, dtype=np.int64)
    plain, steep = bmg.MixedGroups(), bmg.MixedGroups(gamma=2.0)
    order, starts = plain.groups(degrees, blocks, np.random.default_rng(3))
    order2, starts2 = steep.groups(degrees, blocks, np.random.default_rng(3))
    assert np.array_equal(order, order2) and np.array_equal(starts, starts2)  # same groups, other weights
    for phi1, phi2, (a, b) in zip(plain.phis, steep.phis, zip(starts[:-1], starts[1:])):
        iu = np.triu_indices(phi1.shape[0], 1)
        assert np.isclose(phi2[iu].mean(), 1.0)
        w = degrees[order[a:b]] / np.bincount(order, minlength=g.num_nodes)[order[a:b]]  # weight per membership
        # the exponent itself: phi ~ (w_u w_v)^2, scaled to mean 1 over the pairs
        expected = np.outer(w ** 2, w ** 2)
        np.fill_diagonal(expected, 0.0)
        assert np.allclose(phi2, expected / expected[iu].mean())
        if w.max() > w.min():
            heavy = np.unravel_index(np.argmax(np.outer(w, w) - np.diag(w * w)), phi1.shape)
            assert phi2[heavy] > phi1[heavy]
