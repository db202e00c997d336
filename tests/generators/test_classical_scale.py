"""Every classical generator runs sparse on the 504k-edge Slashdot graph (slow)."""

from __future__ import annotations

import math

import pytest

from graphrelease.generators import GENERATORS
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import check_budget_spent_exactly, load_slashdot


@pytest.mark.slow
@pytest.mark.parametrize("name", ["randomized_response", "tmf", "chung_lu", "dpdk", "privgraph", "dp_dcsbm"])
def test_slashdot(data_dir, name):
    graph = load_slashdot(data_dir)
    assert (graph.num_nodes, graph.num_edges) == (82168, 504230)
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    (g,) = GENERATORS.get(name)().fit(graph, budget).sample(1)
    check_budget_spent_exactly(budget, 1.0)
    assert g.num_nodes == graph.num_nodes
    if name in ("randomized_response", "tmf", "chung_lu"):
        # m~ = m + Lap(1/0.05): within 20 ln(1e6) w.p. 1 - 1e-6; binomial output fluctuation below 6 sqrt(m).
        assert abs(g.num_edges - graph.num_edges) <= 20 * math.log(1e6) + 6 * math.sqrt(graph.num_edges)
    else:
        assert g.num_edges > 0.3 * graph.num_edges
