"""Randomized response (EdgeRand / symmetric) on Cora: bounded range per cell, budget, output size, probe."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.errors import OptionError
from graphrelease.generators.randomized_response import (
    RandomizedResponse,
    bounded_range_epsilon,
    rr_probabilities,
)
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph, triu_cells


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def test_edgerand_on_cora(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = RandomizedResponse().fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    cells = budget.ledger.entries[-1]
    assert cells.mechanism == "exponential" and cells.stage == "randomized_response.cells"
    p, q = fitted.config["p"], fitted.config["q"]
    assert bounded_range_epsilon(p, q) <= cells.params["epsilon"] * (1 + 1e-9)
    assert p / q <= math.exp(cells.params["epsilon"]) * (1 + 1e-9)
    (g,) = fitted.sample(1)
    # Expected size m~ (within 276 of m w.p. 1-1e-6) plus binomial fluctuation.
    assert abs(g.num_edges - cora.num_edges) <= 20 * math.log(1e6) + 6 * math.sqrt(cora.num_edges)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0, 12.0])
@pytest.mark.parametrize("mode", ["edgerand", "symmetric"])
def test_probabilities_have_exact_bounded_range(eps, mode):
    p, q = rr_probabilities(mode, eps, 5000.0, 3_000_000)
    assert 0 < q < p < 1
    assert bounded_range_epsilon(p, q) <= eps * (1 + 1e-9)
    assert bounded_range_epsilon(p, q) >= eps * (1 - 1e-4)  # the budget is used, not wasted
    if mode == "edgerand":  # expected output size equals the released count
        assert p * 5000 + q * (3_000_000 - 5000) == pytest.approx(5000, rel=1e-3) or p >= 0.5


def test_symmetric_refuses_dense_output(cora):
    with pytest.raises(OptionError, match="edgerand"):
        RandomizedResponse(mode="symmetric", max_edges=1_000_000).fit(
            cora, Budget(epsilon=1.0, delta=1e-5, adjacency="edge"))


def test_symmetric_on_small_graph(cora):
    sub = small_subgraph(cora, 200)
    budget = Budget(epsilon=4.0, delta=1e-5, adjacency="edge")
    (g,) = RandomizedResponse(mode="symmetric").fit(sub, budget).sample(1)
    check_budget_spent_exactly(budget, 4.0)
    p, q = rr_probabilities("symmetric", 4.0, None, 0)
    total = 200 * 199 // 2
    mean = sub.num_edges * p + (total - sub.num_edges) * q
    assert abs(g.num_edges - mean) < 6 * math.sqrt(total * 0.25)


def test_cell_probe(cora):
    sub = small_subgraph(cora, 150, seed=2)
    r = probe_sensitivity(lambda g, _r: triu_cells(g), sub, edge_neighbours, 1.0, draws=100,
                          rng=np.random.default_rng(2), norm="l1")
    assert_within(r)
