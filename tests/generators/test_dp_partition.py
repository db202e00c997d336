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
        ("probe.partition_down", "exponential", 1, 1.0, 0.3), ("probe.partition_up", "exponential", 1, 1.0, 0.1)]
    budget2 = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    degree_ordered_partition(cora, cora.degrees().astype(float), budget2, rng, epsilon_down=0.3, epsilon_up=0.0,
                             stage="probe.partition", proof="docs/privacy.md#dp-partition", num_labels=4)
    assert [e.stage for e in budget2.ledger.entries] == ["probe.partition_down"]


def test_label_count_follows_the_ordering_threshold():
    assert label_count(0.3, 44.0) == 8  # floor(0.3 * 44 / 1.5)
    assert label_count(0.3, 4.0) == 2 and label_count(100.0, 50.0) == 32
    assert sweeps_can_separate(0.3, 44.0) and not sweeps_can_separate(0.25, 4.0)


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
