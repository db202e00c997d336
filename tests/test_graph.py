"""The canonical Graph: validation, canonicalisation counts, immutability, conversions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.errors import GraphValidationError
from graphrelease.graph import Graph, GraphCollection, canonical_edges
from graphrelease.io import load_default_graph


def test_canonicalisation_counts_each_kind_of_drop():
    raw = np.array([[2, 1], [1, 2], [1, 2], [3, 3], [0, 4], [4, 0], [4, 0]])
    edges, report = canonical_edges(5, raw)
    assert edges.tolist() == [[0, 4], [1, 2]]
    assert report.input_rows == 7
    assert report.self_loops == 1
    # rows (1,2) and (4,0) appear twice exactly; (2,1) and (0,4) are reverse copies
    assert report.duplicate_edges == 2
    assert report.reverse_edges_merged == 2
    assert report.input_rows - report.self_loops - report.duplicate_edges - report.reverse_edges_merged == len(edges)


def test_canonical_edges_matches_python_reference():
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 40, size=(3000, 2))
    edges, _ = canonical_edges(40, raw)
    expected = sorted({(min(u, v), max(u, v)) for u, v in raw.tolist() if u != v})
    assert [tuple(e) for e in edges.tolist()] == expected


def test_from_edges_reports_isolated_nodes():
    g, report = Graph.from_edges(5, np.array([[0, 1]]))
    assert report.isolated_nodes == 3 and g.num_nodes == 5


def test_immutable_arrays_and_fields():
    g = load_default_graph()
    for array in (g.edges, g.labels, g.degrees(), g.to_csr().data):
        with pytest.raises(ValueError):
            array[0] = 1
    with pytest.raises(AttributeError):
        g.num_nodes = 3  # type: ignore[misc]
    assert g.replace(labels=None).labels is None and g.labels is not None  # replace returns a new object


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(num_nodes=0, edges=np.zeros((0, 2), dtype=np.int64)), "empty"),
        (dict(num_nodes=3, edges=np.array([[1, 0]])), "u < v"),
        (dict(num_nodes=3, edges=np.array([[0, 1], [0, 1]])), "sorted and unique"),
        (dict(num_nodes=3, edges=np.array([[0, 5]])), "outside"),
        (dict(num_nodes=2, edges=np.array([[0, 1]]), features=np.array([[np.nan], [1.0]])), "NaN"),
        (dict(num_nodes=2, edges=np.array([[0, 1]]), features=np.ones((3, 1))), "3 rows"),
        (dict(num_nodes=2, edges=np.array([[0, 1]]), labels=np.array([0, -2])), "< -1"),
        (dict(num_nodes=2, edges=np.array([[0, 1]]), labels=np.array([0.5, 1.0])), "integers"),
    ],
)
def test_validation_errors(kwargs, fragment):
    with pytest.raises(GraphValidationError, match=fragment):
        Graph(**kwargs)


def test_conversions_agree():
    g = load_default_graph().induced_subgraph(np.arange(300))
    csr = g.to_csr()
    assert (csr != csr.T).nnz == 0 and csr.nnz == 2 * g.num_edges
    assert np.array_equal(np.asarray(csr.sum(axis=1)).ravel(), g.degrees())
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == g.num_nodes and nxg.number_of_edges() == g.num_edges
    ig = g.to_igraph()
    assert ig.vcount() == g.num_nodes and ig.ecount() == g.num_edges
    data = g.to_pyg()
    assert data.edge_index.shape == (2, 2 * g.num_edges)
    assert data.x.shape == (g.num_nodes, g.num_features) and data.y.shape == (g.num_nodes,)
    assert sp.issparse(g.features)


def test_induced_subgraph_and_private_metadata():
    g, _ = Graph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3]]), node_ids=np.array(["a", "b", "c", "d"]))
    sub = g.induced_subgraph(np.array([2, 1]))
    assert sub.edges.tolist() == [[0, 1]] and list(sub.node_ids) == ["c", "b"]
    assert g.without_private_metadata().node_ids is None


def test_collection_validation():
    g, _ = Graph.from_edges(2, np.array([[0, 1]]))
    with pytest.raises(GraphValidationError, match="no graphs"):
        GraphCollection(())
    with pytest.raises(GraphValidationError, match="graph labels"):
        GraphCollection((g, g), graph_labels=np.array([1]))
    coll = GraphCollection((g, g), graph_labels=np.array([0, 1]))
    assert coll.num_edges == 2 and coll.subset([1]).graph_labels.tolist() == [1]
