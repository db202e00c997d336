"""DP-dK (dK-2) on Cora: DP cap selection, capped-series sensitivity 4D-3 (probe and tight case), budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.generators.dpdk import DPdK, capped_dk2, dk2_sensitivity
from graphrelease.graph import Graph
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def test_fit_with_dp_cap(cora):
    budget = Budget(epsilon=2.0, delta=1e-5, adjacency="edge")
    fitted = DPdK().fit(cora, budget)
    check_budget_spent_exactly(budget, 2.0)
    assert [e.stage for e in budget.ledger] == ["dpdk.degree_cap", "dpdk.edge_count", "dpdk.dk2_series"]
    cap = fitted.config["degree_cap"]
    assert budget.ledger.entries[2].sensitivity == 4 * cap - 3
    # The DP 0.9-quantile lands near the real one (Cora: 8) with overwhelming probability at eps_D = 0.4.
    assert 4 <= cap <= 16
    (g,) = fitted.sample(1)
    assert g.num_nodes == cora.num_nodes
    # The series is projected onto total m~ = m + Lap(1/0.1) (|m~ - m| <= 10 ln(1e6) w.p. 1 - 1e-6); the 2K sampler
    # places all of it unless a degree class is too small to host its bins.
    assert g.num_edges <= cora.num_edges + 10 * math.log(1e6) and g.num_edges >= 0.5 * cora.num_edges
    assert "degree_cap" not in fitted.public_assumptions


def test_public_cap_declared(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPdK(degree_cap=10).fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert len(budget.ledger) == 2 and "degree_cap" in fitted.public_assumptions


@pytest.mark.parametrize("cap", [3, 6, 12])
def test_capped_series_probe(cora, cap):
    sub = small_subgraph(cora, 400)
    res = probe_sensitivity(lambda g, _r: capped_dk2(g, cap), sub, edge_neighbours, dk2_sensitivity(cap), draws=200,
                            rng=np.random.default_rng(cap), norm="l1")
    assert_within(res)


def test_capped_series_bound_is_tight():
    """Two nodes of degree D-1 (disjoint neighbourhoods of degree-1 leaves) gaining an edge move 4D-3 units."""
    cap = 5
    edges = [(0, 2 + i) for i in range(cap - 1)] + [(1, 10 + i) for i in range(cap - 1)]
    g, _ = Graph.from_edges(20, np.array(edges))
    h, _ = Graph.from_edges(20, np.array(edges + [(0, 1)]))
    assert np.abs(capped_dk2(g, cap) - capped_dk2(h, cap)).sum() == dk2_sensitivity(cap)
