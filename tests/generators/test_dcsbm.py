"""DP-DCSBM (our generator) on Cora: partitions, exact budget, block counts kept exactly, probes."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.generators.community_dp import group_pair_counts
from graphrelease.generators.dcsbm import (
    DPDCSBM,
    MODULARITY_UTILITY_SENSITIVITY,
    FittedDCSBM,
    modularity_utility,
    sorted_block_degrees,
)
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def _block_counts_of(g, labels):
    k = int(labels.max()) + 1
    return group_pair_counts(g, labels, k)


def test_public_labels_partition(cora, tmp_path):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPDCSBM(partition="public_labels").fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert fitted.config["partition"] == "public_labels"
    assert "node_labels" in fitted.public_assumptions and "num_nodes" in fitted.public_assumptions
    assert [e.stage for e in budget.ledger] == ["dp_dcsbm.block_counts", "dp_dcsbm.block_sorted_degrees"]
    (g,) = fitted.sample(1, rng=np.random.default_rng(0))
    labels = fitted.arrays["labels"]
    sizes = np.bincount(labels)
    iu, ju = np.triu_indices(labels.max() + 1)
    cap = np.where(iu == ju, sizes[iu] * (sizes[iu] - 1) // 2, sizes[iu] * sizes[ju])
    np.testing.assert_array_equal(_block_counts_of(g, labels), np.minimum(fitted.arrays["block_counts"], cap))
    # Block counts: Lap(1/0.2) per cell, norm-sub keeps the noisy sum; the sum of c cells has std 5 sqrt(2c):
    # a 6-sigma bound.
    c = iu.size
    assert abs(g.num_edges - cora.num_edges) <= 6 * 5 * np.sqrt(2 * c)
    fitted.save(tmp_path)
    again = FittedDCSBM.load(tmp_path)
    assert again.sample(1, rng=np.random.default_rng(0))[0].structurally_equal(g)


def test_dp_partition(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPDCSBM(partition="dp").fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert [e.stage for e in budget.ledger][:2] == ["dp_dcsbm.partition_init", "dp_dcsbm.partition_adjust"]
    assert "node_labels" not in fitted.public_assumptions
    (g,) = fitted.sample(1)
    assert g.num_nodes == cora.num_nodes


def test_public_features_partition(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPDCSBM(partition="public_features", num_blocks=8).fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert fitted.arrays["labels"].max() + 1 == 8 and "node_features" in fitted.public_assumptions


def test_block_queries_probe(cora):
    sub = small_subgraph(cora, 400)
    labels = np.random.default_rng(3).integers(0, 7, sub.num_nodes)
    res = probe_sensitivity(lambda g, _r: _block_counts_of(g, labels), sub, edge_neighbours, 1.0, draws=200,
                            rng=np.random.default_rng(3), norm="l1")
    assert_within(res)
    res = probe_sensitivity(lambda g, _r: sorted_block_degrees(g, labels)[0], sub, edge_neighbours, 2.0, draws=200,
                            rng=np.random.default_rng(4), norm="l1")
    assert_within(res)
    assert res.max_ratio == 1.0


def test_auto_selects_among_public_partitions(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPDCSBM().fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    first = budget.ledger.entries[0]
    assert first.stage == "dp_dcsbm.partition_select" and first.mechanism == "exponential"
    assert first.sensitivity == MODULARITY_UTILITY_SENSITIVITY
    # On Cora the label partition has far higher modularity (about 0.64 x 5278 edge units) than the feature
    # clusterings: the mechanism at epsilon 0.05 / 8 per unit picks it except with negligible probability.
    assert fitted.config["partition"] == "public_labels"
    assert {"node_labels", "node_features"} <= set(fitted.public_assumptions)


def test_modularity_utility_probe(cora):
    sub = small_subgraph(cora, 400)
    rng = np.random.default_rng(7)
    for k in (1, 3, 12):
        labels = rng.integers(0, k, sub.num_nodes)
        res = probe_sensitivity(lambda g, _r: np.array([modularity_utility(g, labels)]), sub, edge_neighbours,
                                MODULARITY_UTILITY_SENSITIVITY, draws=150, rng=rng, norm="l1")
        assert_within(res)


def test_degree_classes_partition(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPDCSBM(partition="degree_classes").fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert [e.stage for e in budget.ledger] == ["dp_dcsbm.node_degrees", "dp_dcsbm.block_counts"]
    assert [e.sensitivity for e in budget.ledger] == [2.0, 1.0]
    assert set(fitted.public_assumptions) == {"num_nodes"}
    labels = fitted.arrays["labels"]
    (g,) = fitted.sample(1, rng=np.random.default_rng(0))
    sizes = np.bincount(labels)
    iu, ju = np.triu_indices(labels.max() + 1)
    cap = np.where(iu == ju, sizes[iu] * (sizes[iu] - 1) // 2, sizes[iu] * sizes[ju])
    # Exact counts unless the degree weights concentrate a pair beyond what 40 rounds of redraws can place.
    got, want = _block_counts_of(g, labels), np.minimum(fitted.arrays["block_counts"], cap)
    assert np.all(got <= want) and got.sum() >= 0.99 * want.sum()
    # Classes are log-binned released degrees: higher class, higher released degree (post-processing only).
    deg = np.empty(cora.num_nodes)
    deg[fitted.arrays["node_order"]] = fitted.arrays["block_degrees"]
    means = np.array([deg[labels == c].mean() for c in range(labels.max() + 1)])
    assert np.all(np.diff(means) > 0)


def test_per_node_degree_probe(cora):
    sub = small_subgraph(cora, 400)
    res = probe_sensitivity(lambda g, _r: g.degrees().astype(float), sub, edge_neighbours, 2.0, draws=100,
                            rng=np.random.default_rng(9), norm="l1")
    assert_within(res)
    assert res.max_ratio == 1.0
