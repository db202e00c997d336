"""DP Chung-Lu on Cora: valid output, edge count within its Laplace bound, exact budget, probes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.errors import BudgetError, OptionError
from graphrelease.generators.chung_lu import DPChungLu, FittedChungLu
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


@pytest.mark.parametrize("degree_query", ["sorted", "per_node"])
def test_fit_sample_on_cora(cora, degree_query):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = DPChungLu(degree_query=degree_query).fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert [e.stage for e in budget.ledger] == [
        "chung_lu.edge_count", "chung_lu.sorted_degrees" if degree_query == "sorted" else "chung_lu.degrees"]
    assert budget.ledger.entries[1].sensitivity == 2.0
    (g,) = fitted.sample(1)
    assert g.num_nodes == cora.num_nodes
    # m~ = m + Lap(1/0.05): |m~ - m| <= 20 ln(1/1e-6) = 276 except with probability 1e-6; the sampler reaches m~
    # up to a few pairs it could not place.
    assert abs(g.num_edges - cora.num_edges) <= 20 * math.log(1e6) + 10
    # The mean degree is 2|E|/n, so the edge-count tail bound above carries over (same 1e-6 failure probability).
    assert abs(g.degrees().mean() - cora.degrees().mean()) <= 2 * (20 * math.log(1e6) + 10) / cora.num_nodes
    assert not fitted.reproducible_seed_used


def test_sorted_degree_query_sensitivity_probe(cora):
    sub = small_subgraph(cora, 400)
    rng = np.random.default_rng(0)
    r = probe_sensitivity(lambda g, _r: np.sort(g.degrees()).astype(float), sub, edge_neighbours, 2.0, draws=300,
                          rng=rng, norm="l1")
    assert_within(r)
    assert r.max_ratio == 1.0  # every edge change moves the sorted sequence by exactly 2
    r = probe_sensitivity(lambda g, _r: np.array([float(g.num_edges)]), sub, edge_neighbours, 1.0, draws=50,
                          rng=rng, norm="l1")
    assert_within(r)


def test_save_load_and_seed(cora, tmp_path):
    fitted = DPChungLu(seed=3).fit(cora, Budget(epsilon=2.0, delta=1e-5, adjacency="edge"))
    assert fitted.reproducible_seed_used
    fitted.save(tmp_path)
    again = FittedChungLu.load(tmp_path)
    np.testing.assert_array_equal(again.arrays["degrees"], fitted.arrays["degrees"])
    a = fitted.sample(1, rng=np.random.default_rng(1))[0]
    b = again.sample(1, rng=np.random.default_rng(1))[0]
    assert a.structurally_equal(b)
    with pytest.raises(OptionError):
        fitted.sample(1, num_nodes=10)


def test_budget_too_small_records_nothing(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    DPChungLu().fit(cora, budget)
    before = len(budget.ledger)
    with pytest.raises(BudgetError):
        DPChungLu().fit(cora, budget)  # a second full-epsilon fit cannot fit in the spent budget
    assert len(budget.ledger) == before  # the refused charge recorded nothing and no noise was released


def test_rejects_node_adjacency(cora):
    with pytest.raises(OptionError):
        DPChungLu().fit(cora, Budget(epsilon=1.0, delta=1e-5, adjacency="node"))
