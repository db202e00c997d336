"""The probe harness: neighbour generators produce true neighbours, coupling is exact, violations are caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection
from graphrelease.testing import (
    assert_within,
    coupled_poisson_mask,
    edge_neighbours,
    flatten_output,
    graph_neighbours,
    k_neighbour_neighbours,
    keyed_uniform,
    node_neighbours,
    output_distance,
    probe_sensitivity,
)


@pytest.fixture(scope="module")
def cora(data_dir: Path) -> Graph:
    d = np.load(data_dir / "single" / "cora.npz", allow_pickle=False)
    adj = sp.csr_matrix((d["adj_data"], d["adj_indices"], d["adj_indptr"]), shape=tuple(d["adj_shape"]))
    feats = sp.csr_matrix((d["attr_data"], d["attr_indices"], d["attr_indptr"]), shape=tuple(d["attr_shape"]))
    g, _ = Graph.from_csr(adj, features=feats, labels=d["labels"].astype(np.int64), name="cora")
    return g.induced_subgraph(np.arange(400))


def _edge_set(g):
    return set(map(tuple, g.edges.tolist()))


def test_edge_neighbours_differ_in_exactly_one_edge(cora):
    rng = np.random.default_rng(0)
    kinds = set()
    for _ in range(40):
        pair = edge_neighbours(cora, rng)
        assert pair.base is cora
        diff = _edge_set(pair.base) ^ _edge_set(pair.neighbour)
        assert len(diff) == 1
        kinds.add(pair.change.split()[0])
        assert (pair.neighbour.features != cora.features).nnz == 0
        assert np.array_equal(pair.neighbour.labels, cora.labels)
    assert kinds == {"add", "remove"}


def test_node_neighbours_remove_a_node_with_everything(cora):
    rng = np.random.default_rng(1)
    for _ in range(20):
        pair = node_neighbours(cora, rng)
        g = pair.neighbour
        v = int(pair.change.split()[2])
        assert g.degrees()[v] == 0 and g.labels[v] == -1
        assert g.features[v].nnz == 0
        removed = _edge_set(cora) - _edge_set(g)
        assert removed == {e for e in _edge_set(cora) if v in e}
        assert _edge_set(g) <= _edge_set(cora)
        keep = np.arange(cora.num_nodes) != v
        assert np.array_equal(g.labels[keep], cora.labels[keep])


def test_k_neighbour_neighbours_change_one_row_by_at_most_k(cora):
    rng = np.random.default_rng(2)
    fn = k_neighbour_neighbours(3)
    for _ in range(20):
        pair = fn(cora, rng)
        diff = _edge_set(cora) ^ _edge_set(pair.neighbour)
        assert 1 <= len(diff) <= 3
        v = int(pair.change.split()[1].rstrip(":"))
        assert all(v in e for e in diff)
        other = np.arange(cora.num_nodes) != v
        assert np.array_equal(pair.neighbour.labels[other], cora.labels[other])


def test_graph_neighbours_keep_shared_graphs_aligned():
    rng = np.random.default_rng(3)
    graphs = tuple(Graph.from_edges(k + 2, np.array([[0, 1]]), name=f"g{k}")[0] for k in range(6))
    coll = GraphCollection(graphs, np.arange(6), "toy")
    for _ in range(10):
        pair = graph_neighbours(coll, rng)
        assert len(pair.base) == 6 and len(pair.neighbour) == 5
        assert all(a == b for a, b in zip(pair.base.graphs[:5], pair.neighbour.graphs))
        assert sorted(g.name for g in pair.base) == sorted(g.name for g in coll)


def test_keyed_uniform_is_coupled_by_key_and_uniform():
    keys = np.arange(20000)
    a = keyed_uniform(keys, np.random.default_rng(5))
    b = keyed_uniform(keys[::-1][:15000], np.random.default_rng(5))
    np.testing.assert_array_equal(a[::-1][:15000], b)
    assert abs(a.mean() - 0.5) < 0.01 and 0 <= a.min() and a.max() < 1
    edges = np.array([[0, 1], [1, 0], [2, 3]])
    u = keyed_uniform(edges, np.random.default_rng(6))
    assert len(set(u.tolist())) == 3
    m = coupled_poisson_mask(keys, 0.1, np.random.default_rng(7))
    assert abs(m.mean() - 0.1) < 0.01


def test_probe_measures_exact_sensitivity_of_degree_vector(cora):
    # one edge changes two degrees by 1: L1 sensitivity 2, L2 sensitivity sqrt(2)
    degrees = lambda g, rng: g.degrees().astype(float)  # noqa: E731
    r1 = probe_sensitivity(degrees, cora, edge_neighbours, 2.0, draws=30, rng=np.random.default_rng(8), norm="l1")
    r2 = probe_sensitivity(degrees, cora, edge_neighbours, np.sqrt(2), draws=30, rng=np.random.default_rng(8))
    assert r1.max_ratio == pytest.approx(1.0) and r2.max_ratio == pytest.approx(1.0)
    assert_within(r1)
    assert_within(r2)


def test_probe_catches_an_understated_bound(cora):
    degrees = lambda g, rng: g.degrees().astype(float)  # noqa: E731
    r = probe_sensitivity(degrees, cora, edge_neighbours, 1.0, draws=10, rng=np.random.default_rng(9))
    assert r.max_ratio == pytest.approx(np.sqrt(2))
    with pytest.raises(AssertionError, match="exceeded"):
        assert_within(r)
    assert "edge" in r.worst_case["change"]


def test_probe_couples_query_randomness(cora):
    # a query that is pure randomness: identical on both sides when coupled, so ratio 0
    noise = lambda g, rng: rng.standard_normal(5)  # noqa: E731
    r = probe_sensitivity(noise, cora, edge_neighbours, 1.0, draws=5, rng=np.random.default_rng(10))
    assert r.max_ratio == 0.0


def test_flatten_output_handles_pytrees():
    out = flatten_output({"b": torch.ones(2), "a": [np.zeros(1), 3.0]})
    np.testing.assert_array_equal(out, [0.0, 3.0, 1.0, 1.0])
    assert output_distance({"w": torch.zeros(2)}, {"w": torch.tensor([3.0, 4.0])}) == pytest.approx(5.0)
    with pytest.raises(OptionError, match="differ in size"):
        output_distance(np.zeros(2), np.zeros(3))
