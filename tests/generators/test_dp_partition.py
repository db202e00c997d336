"""Degree-ordered label sweeps (issue 15): the sensitivity probe of each sweep's query, the ledger, and community
signal on a planted partition whose numbering carries nothing."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.generators.dp_partition import (
    degree_ordered_partition,
    degree_rank,
    label_count,
    oriented_counts,
    oriented_neighbours,
    sweep_epsilon_needed,
    sweeps_can_separate,
)
from graphrelease.graph import Graph
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import edge_neighbours
from tests.generators.classical_helpers import load_npz_graph, small_subgraph


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def _all_counts(graph: Graph, rank: np.ndarray, labels: np.ndarray, k: int, direction: str) -> np.ndarray:
    oriented = oriented_neighbours(graph, rank, direction)
    return np.stack([oriented_counts(oriented, labels, i, k) for i in range(graph.num_nodes)])


def test_each_edge_enters_one_selection_per_sweep_monotonically(cora):
    """Probe of the proof's query: for any labels (standing for the earlier outputs) and any ranking, G and a
    neighbour G' (one edge added or removed, random pairs and edges at the hubs) give the same utility vector to
    every node but one per sweep — the lower-ranked endpoint in the down sweep, the higher-ranked one in the up sweep
    — and that one moves by exactly 1 in one coordinate, in the edge's direction (monotone, sensitivity 1)."""
    sub = small_subgraph(cora, 300)
    rng = np.random.default_rng(0)
    k = 5
    for trial in range(60):
        labels = rng.integers(0, k, size=sub.num_nodes)
        rank = degree_rank(sub.degrees() + rng.normal(0, 2, sub.num_nodes), rng)
        pair = edge_neighbours(sub, rng)
        added = pair.neighbour.num_edges > sub.num_edges
        for direction in ("down", "up"):
            after = _all_counts(pair.neighbour, rank, labels, k, direction)
            diff = after - _all_counts(sub, rank, labels, k, direction)
            rows = np.nonzero(np.abs(diff).sum(axis=1))[0]
            assert rows.size == 1, (trial, direction, rows)
            row = diff[rows[0]]
            assert np.abs(row).sum() == 1.0 and (row.sum() == 1.0) == added
            # the reader is the endpoint the proof names
            u, v = _changed_edge(sub, pair.neighbour)
            above, below = (u, v) if rank[u] < rank[v] else (v, u)  # rank 0 = highest released degree
            assert rows[0] == (below if direction == "down" else above)


def _changed_edge(a: Graph, b: Graph) -> tuple[int, int]:
    sa, sb = set(map(tuple, a.edges.tolist())), set(map(tuple, b.edges.tolist()))
    (edge,) = sa ^ sb
    return edge


def test_sweeps_charge_one_entry_each_and_skip_a_zero_epsilon(cora):
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    rng = np.random.default_rng(1)
    labels = degree_ordered_partition(cora, cora.degrees().astype(float), budget, rng, epsilon_down=0.3,
                                      epsilon_up=0.1, stage="probe.partition", proof="docs/privacy.md#dp-partition",
                                      num_labels=4)
    assert labels.shape == (cora.num_nodes,) and labels.min() >= 0 and labels.max() < 4
    entries = budget.ledger.entries
    assert [(e.stage, e.mechanism, e.count, e.sensitivity, e.params["epsilon"]) for e in entries] == [
        ("probe.partition_down", "permute_and_flip", 1, 1.0, 0.3),
        ("probe.partition_up", "permute_and_flip", 1, 1.0, 0.1)]
    budget2 = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    degree_ordered_partition(cora, cora.degrees().astype(float), budget2, rng, epsilon_down=0.3, epsilon_up=0.0,
                             stage="probe.partition", proof="docs/privacy.md#dp-partition", num_labels=4)
    assert [e.stage for e in budget2.ledger.entries] == ["probe.partition_down"]


def test_label_count_follows_the_ordering_threshold():
    assert label_count(0.3, 44.0) == 6  # floor(0.3 * 44 / 2.1)
    assert label_count(0.3, 4.0) == 2 and label_count(100.0, 50.0) == 32
    assert sweeps_can_separate(0.3, 44.0) and not sweeps_can_separate(0.25, 4.0)
    assert sweeps_can_separate(0.31, 20.4) and not sweeps_can_separate(0.31, 20.2)  # 3 labels at 0.31 * d / 2.1
    needed = sweep_epsilon_needed(20.3)  # the same rule solved for epsilon
    assert sweeps_can_separate(needed * 1.001, 20.3) and not sweeps_can_separate(needed * 0.999, 20.3)


def _planted(n: int, k: int, mean_degree: float, mixing: float, seed: int) -> tuple[Graph, np.ndarray]:
    """A degree-corrected planted partition (Pareto(2) node weights, a share ``mixing`` of each node's edges outside
    its block), blocks interleaved in the numbering (node i's block is random)."""
    rng = np.random.default_rng(seed)
    block = rng.integers(0, k, size=n)
    w = rng.pareto(2.0, size=n) + 1.0
    w *= mean_degree / w.mean()
    iu, ju = np.triu_indices(n, 1)
    same = block[iu] == block[ju]
    vol_in = np.bincount(block, weights=w, minlength=k)
    p = np.where(same, (1 - mixing) * w[iu] * w[ju] / vol_in[block[iu]],
                 mixing * w[iu] * w[ju] / (w.sum() - vol_in[block[iu]]))
    keep = rng.random(iu.size) < np.minimum(p, 1.0)
    g, _ = Graph.from_edges(n, np.stack([iu[keep], ju[keep]], axis=1))
    return g, block


def test_planted_communities_are_found_whatever_the_numbering():
    """Seeded: 1,500 nodes, 6 planted blocks scattered over the ids, heavy-tailed degrees (mean 40, 10% of the edges
    between blocks). With the sweeps at the default split's epsilons for a total of 4 (0.98 + 0.42) the labels agree
    with the planted blocks far above chance, while contiguous runs of the numbering carry nothing. The released
    degrees stand in for the exact ones at the default split's noise scale. Known limit (measured, see
    docs/privacy.md#dp-partition): at a total epsilon of 1 (0.25 + 0.1) this graph gives NMI 0.02-0.07 — the sweeps
    need hubs that lead their communities (Facebook: 0.20)."""
    from sklearn.metrics import normalized_mutual_info_score as nmi

    g, block = _planted(1500, 6, 40.0, 0.1, seed=5)
    rng = np.random.default_rng(7)
    released = g.degrees() + rng.laplace(0.0, 2.0 / 0.4, size=g.num_nodes)
    budget = Budget(epsilon=4.0, delta=1e-6, adjacency="edge")
    labels = degree_ordered_partition(g, released, budget, rng, epsilon_down=0.98, epsilon_up=0.42,
                                      stage="probe.partition", proof="docs/privacy.md#dp-partition")
    runs = (np.arange(g.num_nodes) * 6) // g.num_nodes
    assert nmi(block, runs) < 0.02
    assert nmi(block, labels) > 0.4


def _noisy_max_law(scaled: np.ndarray) -> np.ndarray:
    """Exact selection probabilities of argmax(scaled + Exp(1)): P(r) = int_0^inf e^-z prod_{s != r}
    F(scaled_r + z - scaled_s) dz with F the Exp(1) cdf (numerical quadrature, breakpoints at the kinks)."""
    from scipy.integrate import quad

    out = np.empty(scaled.size)
    for r in range(scaled.size):
        others = np.delete(scaled, r) - scaled[r]

        def integrand(z, others=others):
            return np.exp(-z) * np.prod(-np.expm1(-np.clip(z - others, 0.0, None)))

        kinks = sorted(float(x) for x in others if x > 0)
        out[r] = quad(integrand, 0.0, 80.0, points=kinks or None, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    return out


def test_noisy_max_with_exponential_noise_is_epsilon_dp_for_monotone_utilities():
    """Check of the selection's law (docs/privacy.md#dp-partition; the code's noise scale is tested by
    test_the_sweep_draws_its_noise_at_the_scale_the_proof_needs): for utilities u and u + e_j (one edge
    added to one coordinate, the only change a sweep's selection sees), every label's probability under
    argmax(eps u + Exp(1)) moves by a factor within [e^-eps, e^eps]. The same check fails for a non-monotone change
    (+1 on one coordinate, -1 on another), so it is the monotone structure that the proof uses, and the exponential
    mechanism's Gumbel noise at the same epsilon has a lower chance of the best label (the gain)."""
    rng = np.random.default_rng(3)
    worst = 0.0
    for trial in range(40):
        k = int(rng.integers(2, 6))
        eps = float(rng.choice([0.1, 0.3, 1.0, 2.0]))
        u = rng.integers(0, 6, size=k).astype(float) - rng.random(k)  # counts minus a released penalty
        j = int(rng.integers(k))
        p, q = _noisy_max_law(eps * u), _noisy_max_law(eps * (u + np.eye(k)[j]))
        assert abs(p.sum() - 1) < 1e-7 and abs(q.sum() - 1) < 1e-7
        worst = max(worst, float(np.max(np.abs(np.log(q / p)))) / eps)
    assert worst <= 1.0 + 1e-6
    # Non-monotone neighbours (not what a sweep sees) break the eps bound: the check can fail.
    u = np.array([0.0, 0.0, 0.0])
    p, q = _noisy_max_law(1.0 * u), _noisy_max_law(1.0 * (u + np.array([1.0, -1.0, 0.0])))
    assert np.max(np.abs(np.log(q / p))) > 1.0 + 0.05
    # The gain: two labels one count apart at eps 0.05: noisy max picks the better with 1 - e^-0.05 / 2, the
    # exponential mechanism with e^0.05 / (1 + e^0.05): twice the excess over 1/2 as eps -> 0 (1.95x here).
    best = _noisy_max_law(np.array([0.05, 0.0]))[0]
    assert best == pytest.approx(1 - np.exp(-0.05) / 2, abs=1e-9)
    assert best - 0.5 > 1.9 * (np.exp(0.05) / (1 + np.exp(0.05)) - 0.5)


def test_permute_and_flip_entries_are_accounted_as_pure_dp_not_bounded_range():
    from graphrelease.privacy.accountants import compute_epsilon, entry_rdp
    from graphrelease.privacy.analysis import rdp as rdp_analysis
    from graphrelease.privacy.ledger import LedgerEntry

    pf = LedgerEntry(mechanism="permute_and_flip", stage="s", params={"epsilon": 0.31}, sensitivity=1.0)
    for acc in ("pld", "rdp"):
        assert 0 < compute_epsilon(pf, 1e-6, acc) <= 0.31 + 1e-9
    orders = [2.0, 8.0]  # below the orders where both curves reach epsilon
    assert np.allclose(entry_rdp(pf, orders), rdp_analysis.pure_dp(0.31, orders))
    assert np.all(entry_rdp(pf, orders) > rdp_analysis.bounded_range(0.31, orders))


def test_noisy_max_sweep_finds_more_facebook_communities_than_the_exponential_mechanism(data_dir):
    """Seeded gain on permuted Facebook at dp_bter's partition epsilon for a total of 1 (0.31): the down sweep with
    exponential noise against the earlier sweeps (exponential mechanism, 70% down / 30% up, K from 1.5), NMI against
    the input's Louvain partition, median of 3 seeds (these seeds: 0.325 / 0.273 / 0.265 against 0.181 / 0.124 /
    0.161; the benchmark's 3 runs: 0.270 against 0.166)."""
    from sklearn.metrics import normalized_mutual_info_score as nmi

    from graphrelease.audit.statistics import louvain_partition
    from graphrelease.generators.dp_stats import release_degrees
    from graphrelease.io import read_graph

    fb = read_graph(data_dir / "raw" / "facebook_combined.txt.gz").data
    perm = np.random.default_rng(11).permutation(fb.num_nodes)
    g, _ = Graph.from_edges(fb.num_nodes, perm[fb.edges])
    louvain = louvain_partition(g, seed=0)
    new, old = [], []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
        dhat = release_degrees(g, budget, rng, epsilon_sorted=0.22, epsilon_rank=0.10, stage="d").plain
        new.append(nmi(louvain, degree_ordered_partition(g, dhat, budget, rng, epsilon_down=0.31, epsilon_up=0.0,
                                                         stage="p", proof="docs/privacy.md#dp-partition")))
        k_old = int(np.clip(np.floor(0.217 * dhat.mean() / 1.5), 2, 32))
        budget2 = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
        old.append(nmi(louvain, degree_ordered_partition(g, dhat, budget2, rng, epsilon_down=0.217, epsilon_up=0.093,
                                                         stage="p", proof="docs/privacy.md#dp-partition",
                                                         num_labels=k_old, selection="exponential")))
    assert np.median(new) > np.median(old) + 0.05, (new, old)
    assert np.median(new) > 0.22, new


class _NoCharge:
    """The sweep charges its stage before reading the graph; this test reads only the law of its output."""

    def charge(self, entry):
        pass


@pytest.mark.parametrize("selection,expected", [
    ("noisy_max", 1 - np.exp(-1.0) / 2),              # argmax(u + Exp(scale 1/eps)), eps * gap = 3 * 1/3
    ("exponential", np.exp(1.0) / (1 + np.exp(1.0))),  # P ~ exp(eps * u)
])
def test_the_sweep_draws_its_noise_at_the_scale_the_proof_needs(selection, expected):
    """The code, not the maths: two nodes, one edge, released degrees (2, 1), K = 2. Node 0 (rank 0) chooses first;
    node 1's utility is 1 - (1/3) * 2 = 1/3 on node 0's label and 0 on the other, so P(same label) has a closed
    form in epsilon. Noise at scale 1/(2 eps) (a 2 eps-DP sweep charged as eps) gives 0.93, at 2/eps 0.70: both far
    outside the tolerance (4,000 seeded runs, standard error <= 0.008). From the privacy review of the switch to
    noisy max, which found that halving the noise passed every other test."""
    g, _ = Graph.from_edges(2, np.array([[0, 1]]))
    rng = np.random.default_rng(5)
    same = np.mean([int(np.ptp(degree_ordered_partition(g, np.array([2.0, 1.0]), _NoCharge(), rng, epsilon_down=3.0,
                                                         epsilon_up=0.0, stage="x", proof="x", num_labels=2,
                                                         selection=selection))) == 0 for _ in range(4000)])
    assert same == pytest.approx(expected, abs=0.03)


def test_certificate_verify_recomputes_the_noisy_max_epsilon_from_its_scale():
    """The sweep's entry states its noise scale; an entry whose epsilon was edited without its scale is caught."""
    import dataclasses

    from graphrelease.privacy.sensitivities import entry_problems

    g, _ = Graph.from_edges(3, np.array([[0, 1], [1, 2]]))
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    degree_ordered_partition(g, np.array([1.0, 2.0, 1.0]), budget, np.random.default_rng(0), epsilon_down=0.5,
                             epsilon_up=0.0, stage="dp_bter.partition", proof="dp-partition", num_labels=2)
    (entry,) = budget.ledger.entries
    assert entry.params["scale"] == pytest.approx(2.0) and entry_problems(entry, "edge") == []
    edited = dataclasses.replace(entry, params={**entry.params, "epsilon": 0.25})
    assert any("noisy-max epsilon" in p for p in entry_problems(edited, "edge"))
