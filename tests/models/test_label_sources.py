"""One-sided label aggregation (graphrelease/models/label_sources.py): sensitivity probe through GAP's own row and
adjacency builders, the public coin, and a fit's ledger."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.models.gap import GAP, aggregate_once  # noqa: E402
from graphrelease.models.label_sources import label_sources, receiver_adjacency  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity  # noqa: E402


def _one_sided(g) -> GAP:
    m = GAP(hop0="labels", hops=1)
    m.num_classes = int(np.asarray(g.labels).max()) + 1
    m.kind = "edge"
    assert m.one_sided
    return m


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_edge_probe_one(data_dir, norm):
    """The pre-noise query of the model (its receiver adjacency times its label rows) moves by <= 1 per edge in L1
    and L2, and attains 1 (an edge between a source and a receiver)."""
    g = small_cora(data_dir)
    m = _one_sided(g)

    def query(graph, rng):
        rows = m._aggregated_rows(graph, torch.zeros(graph.num_nodes, m.num_classes))
        return aggregate_once(m._adjacency(graph, None, rows), rows).numpy()

    r = probe_sensitivity(query, g, edge_neighbours, declared=1.0, draws=60, rng=np.random.default_rng(5), norm=norm)
    assert_within(r)
    assert r.max_ratio == pytest.approx(1.0)


def test_two_sided_query_exceeds_one(data_dir):
    """Control: without the source/receiver split the same label rows move by 2 (why the split halves the noise)."""
    g = small_cora(data_dir)
    m = _one_sided(g)

    def query(graph, rng):
        from graphrelease.models.common import adjacency_matrix

        rows = m._aggregated_rows(graph, torch.zeros(graph.num_nodes, m.num_classes))
        return aggregate_once(adjacency_matrix(graph), rows).numpy()

    r = probe_sensitivity(query, g, edge_neighbours, declared=1.0, draws=60, rng=np.random.default_rng(6), norm="l1")
    assert r.max_ratio == pytest.approx(2.0)


def test_sources_are_a_public_coin_of_the_training_nodes():
    train = np.arange(0, 1000, 2)
    s = label_sources(train, 0.8, seed=3)
    assert s.size == 400 and np.isin(s, train).all()
    assert np.array_equal(s, label_sources(train[::-1], 0.8, seed=3))  # order of the input does not matter
    assert not np.array_equal(s, label_sources(train, 0.8, seed=4))


def test_receiver_adjacency_keeps_receiver_rows_and_source_columns():
    import scipy.sparse as sp

    a = sp.csr_matrix(np.ones((4, 4)) - np.eye(4))
    r = receiver_adjacency(a, np.array([0, 1])).toarray()
    assert np.array_equal(r, np.array([[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]], dtype=float))


def test_fit_charges_sensitivity_one_and_trains_on_receivers(data_dir):
    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = GAP(hop0="labels", hops=1, encoder_epochs=2, epochs=2, noise="laplace").fit(g, b)
    (e,) = b.ledger.entries
    assert e.mechanism == "laplace" and e.sensitivity == 1.0 and "one-sided" in e.note
    assert m.aggregation_noise_std == pytest.approx(1.0 / e.params["epsilon"])
    assert 0.95 <= b.spent_epsilon() <= 1.0
    tr = torch.as_tensor(np.asarray(m.split.train))
    cls = m._classifier_nodes(g, tr)
    assert cls.numel() == tr.numel() - label_sources(np.asarray(m.split.train), 0.8, 0).size
    assert not torch.isin(cls, torch.as_tensor(m._sources(g))).any()
