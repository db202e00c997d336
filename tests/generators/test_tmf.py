"""TmF on Cora: threshold calibration, sparse exactness of the zero-cell sampling, budget, probe."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.errors import OptionError
from graphrelease.generators.classical_common import pair_keys, sample_uniform_nonedges
from graphrelease.generators.tmf import TmF, laplace_tail, tmf_threshold
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity
from tests.generators.classical_helpers import check_budget_spent_exactly, load_npz_graph, small_subgraph, triu_cells


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def test_fit_on_cora(cora):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    fitted = TmF().fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert [e.stage for e in budget.ledger] == ["tmf.edge_count", "tmf.cells"]
    (g,) = fitted.sample(1)
    assert g.num_nodes == cora.num_nodes
    # Output size: mean m~ (|m~ - m| <= 276 w.p. 1 - 1e-6) plus binomial fluctuation (< 6 sqrt(m)).
    assert abs(g.num_edges - cora.num_edges) <= 20 * math.log(1e6) + 6 * math.sqrt(cora.num_edges)
    with pytest.raises(OptionError):
        fitted.sample(2)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0, 10.0])
def test_threshold_gives_expected_size(eps):
    total, m = 3_000_000, 5000.0
    theta = tmf_threshold(m, total, eps)
    expected = m * laplace_tail(theta - 1.0, 1 / eps) + (total - m) * laplace_tail(theta, 1 / eps)
    assert expected == pytest.approx(m, rel=1e-6)


def test_uniform_nonedge_sampler_is_uniform_and_excludes_edges():
    rng = np.random.default_rng(0)
    n = 12
    existing = np.sort(pair_keys(np.array([[0, 1], [2, 3], [4, 5]]), n))
    hits = np.zeros(n * n)
    for _ in range(3000):
        keys = sample_uniform_nonedges(n, 5, existing, rng)
        assert np.unique(keys).size == 5 and not np.isin(keys, existing).any()
        hits[keys] += 1
    free = (n * (n - 1)) // 2 - 3
    counts = hits[hits > 0]
    assert counts.size == free
    # Each free pair is chosen with probability 5/free: chi-square style bound on the spread.
    expect = 3000 * 5 / free
    assert np.all(np.abs(counts - expect) < 6 * math.sqrt(expect))


def test_cell_vector_probe(cora):
    sub = small_subgraph(cora, 150)
    r = probe_sensitivity(lambda g, _r: triu_cells(g), sub, edge_neighbours, 1.0, draws=100,
                          rng=np.random.default_rng(1), norm="l1")
    assert_within(r)
    assert r.max_ratio == 1.0
