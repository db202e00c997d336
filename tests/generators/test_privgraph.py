"""PrivGraph on Cora: exact budget split, phase probes, and the stale-loop-variable regression."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.generators.community_dp import group_pair_counts, neighbour_counts
from graphrelease.generators.privgraph import PrivGraph, bernoulli_chung_lu, intra_degrees_and_inter_counts
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


@pytest.fixture(scope="module")
def fitted(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    return PrivGraph(seed=0).fit(cora, budget), budget  # seeded: the sampler checks below need a fixed fit


def test_budget_split_in_three(fitted):
    f, budget = fitted
    check_budget_spent_exactly(budget, 1.0)
    stages = [(e.stage, e.mechanism, e.count) for e in budget.ledger]
    assert stages == [("privgraph.community_init", "laplace", 1), ("privgraph.community_adjust", "exponential", 2),
                      ("privgraph.extract", "laplace", 1)]
    eps = [float(e.params["epsilon"]) * e.count for e in budget.ledger]
    np.testing.assert_allclose(eps, [1 / 3, 1 / 3, 1 / 3])


def test_inter_community_edges_land_between_the_right_communities(fitted, cora):
    """Regression for the public code's stale loop variable (first endpoint always from the last community)."""
    f, _ = fitted
    labels = f.arrays["labels"]
    k = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=k)
    (g,) = f.sample(1, rng=np.random.default_rng(5))
    assert g.num_nodes == cora.num_nodes
    a, b = labels[g.edges[:, 0]], labels[g.edges[:, 1]]
    inter = a != b
    lo, hi = np.minimum(a[inter], b[inter]), np.maximum(a[inter], b[inter])
    got = np.zeros((k, k), dtype=np.int64)
    np.add.at(got, (lo, hi), 1)
    iu, ju = np.triu_indices(k, 1)
    want = np.minimum(f.arrays["inter_counts"], sizes[iu] * sizes[ju])
    np.testing.assert_array_equal(got[iu, ju], want)
    assert want.sum() > 0 and (want > 0).sum() > 1
    # Intra-community edges: each pair independently with min(1, d_i d_j / S_c) (the paper's rule), so community c
    # holds a sum of independent Bernoullis with mean mu_c (variance <= mu_c). Bernstein: |X - mu| >= sqrt(2 mu L) +
    # 2L/3 has probability <= 2 exp(-L); L = ln(2k / 1e-6) makes the union over the k communities <= 1e-6.
    intra_got = np.bincount(a[~inter], minlength=k)
    deg = f.arrays["intra_degrees"].astype(np.float64)
    L = math.log(2 * k / 1e-6)
    for c in range(k):
        d = deg[labels == c]
        if d.size < 2 or d.sum() == 0:
            assert intra_got[c] == 0
            continue
        i, j = np.triu_indices(d.size, 1)
        mu = np.minimum(1.0, d[i] * d[j] / d.sum()).sum()
        assert abs(intra_got[c] - mu) <= math.sqrt(2 * mu * L) + 2 * L / 3, (c, intra_got[c], mu)


def test_bernoulli_chung_lu_pair_probabilities():
    """Every pair appears with probability min(1, w_i w_j / S), heavy (saturated) and light pairs alike."""
    w = np.array([10.0, 6, 3, 2, 1, 1, 1, 0.5, 0, 4])
    n, total, trials = w.size, w.sum(), 20000
    rng = np.random.default_rng(11)
    members = np.array([3, 0, 7, 9, 1, 2, 4, 6, 5, 8])  # ids need not be sorted or match positions
    counts = {}
    for _ in range(trials):
        for key in bernoulli_chung_lu(n, members, w, rng).tolist():
            counts[key] = counts.get(key, 0) + 1
    i, j = np.triu_indices(n, 1)
    # Hoeffding per pair, union over the 45 pairs: failure <= 1e-6.
    tol = math.sqrt(math.log(2 * i.size / 1e-6) / (2 * trials))
    for x, y in zip(i.tolist(), j.tolist()):
        lo, hi = sorted((int(members[x]), int(members[y])))
        want = min(1.0, w[x] * w[y] / total)
        assert abs(counts.get(lo * n + hi, 0) / trials - want) <= tol, (x, y)
    assert set(counts) <= {min(a, b) * n + max(a, b) for a, b in zip(members[i], members[j])}


def test_phase1_group_counts_probe(cora):
    sub = small_subgraph(cora, 400)

    def query(g, r):  # coupled: the same random grouping on both sides
        group_of = (np.arange(g.num_nodes) // 20)[r.permutation(g.num_nodes)]
        return group_pair_counts(g, group_of, 20)

    res = probe_sensitivity(query, sub, edge_neighbours, 1.0, draws=200, rng=np.random.default_rng(0), norm="l1")
    assert_within(res)
    assert res.max_ratio == 1.0


def test_phase3_extract_probe(cora):
    sub = small_subgraph(cora, 400)
    labels = np.random.default_rng(1).integers(0, 6, sub.num_nodes)  # a released (public) partition

    def query(g, _r):
        deg_in, inter = intra_degrees_and_inter_counts(g, labels)
        return np.concatenate([deg_in / 2.0, inter])

    res = probe_sensitivity(query, sub, edge_neighbours, 1.0, draws=200, rng=np.random.default_rng(1), norm="l1")
    assert_within(res)
    assert res.max_ratio == 1.0


def test_phase2_utility_sensitivity(cora):
    """EM utilities u_i(C) = k_iC - d_i f_C: one edge changes only its endpoints' rows, each coordinate by <= 1."""
    sub = small_subgraph(cora, 300)
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 5, sub.num_nodes)
    share = rng.dirichlet(np.ones(5))

    def utilities(g):
        return neighbour_counts(g, labels, 5).toarray() - g.degrees()[:, None] * share[None, :]

    base = utilities(sub)
    for _ in range(100):
        pair = edge_neighbours(sub, rng)
        diff = np.abs(utilities(pair.neighbour) - base)
        assert diff.max() <= 1.0 + 1e-12
        assert (diff.max(axis=1) > 0).sum() <= 2


def test_sequential_adjustment_sees_an_edge_only_at_its_endpoints(cora):
    """The sequential pass's utility of node w is k_{w,C} under the labels already output. For any such labels, G
    and G + {u, v} give the same utility vector to every node except u and v, whose vectors differ by one unit in one
    coordinate (sensitivity 1): exactly two selections see the edge."""
    from graphrelease.generators.community_dp import em_refine_sequential, neighbour_counts

    sub = small_subgraph(cora, 300)
    rng = np.random.default_rng(0)
    adj = sub.to_csr()
    for _ in range(20):
        labels = rng.integers(0, 6, size=sub.num_nodes)  # stands for whatever the earlier selections output
        u, v = sorted(rng.choice(sub.num_nodes, size=2, replace=False).tolist())
        if adj[u, v]:
            continue
        plus = sub.replace(edges=np.unique(np.vstack([sub.edges, [[u, v]]]), axis=0))
        diff = np.abs((neighbour_counts(plus, labels, 6) - neighbour_counts(sub, labels, 6)).toarray())
        changed = np.nonzero(diff.sum(axis=1))[0]
        assert set(changed.tolist()) == {u, v} and diff.sum(axis=1)[[u, v]].tolist() == [1, 1]
    # and the pass charges what the proof says: two selections at the given epsilon
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    em_refine_sequential(sub, rng.integers(0, 6, size=sub.num_nodes), b, rng, epsilon=0.25, stage="probe",
                         proof="privgraph")
    (entry,) = b.ledger.entries
    assert entry.mechanism == "exponential" and entry.count == 2 and entry.params["epsilon"] == 0.25


def test_seeded_fit_is_the_same_fit_twice(cora, fitted):
    """igraph's Louvain shuffles vertices from its own global generator; a seeded fit must not depend on it."""
    f, _ = fitted
    again = PrivGraph(seed=0).fit(cora, Budget(epsilon=1.0, delta=1e-5, adjacency="edge"))
    np.testing.assert_array_equal(again.arrays["labels"], f.arrays["labels"])
