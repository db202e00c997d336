"""Every dataset in shared/data loads through the public reader with the counts of its README table."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.graph import Graph, GraphCollection
from graphrelease.io import read_graph

# path, format, nodes, undirected edges, feature dimensions (None: no features), classes (None: no labels)
DATASETS = [
    ("single/cora.npz", "npz", 2708, 5278, 1433, 7),
    ("single/citeseer.npz", "npz", 3312, 4536, 3703, 6),
    ("single/pubmed.npz", "npz", 19717, 44324, None, 3),
    ("single/cora_planetoid.npz", "npz", 2708, 5278, 1433, 7),
    ("single/cora_ml.npz", "npz", 2995, 8158, 2879, 7),
    ("single/chameleon.npz", "npz", 2277, 31371, 2325, 5),
    ("single/squirrel.npz", "npz", 5201, 198353, 2089, 5),
    ("single/tolokers.npz", "npz", 11758, 519000, 10, 2),
    ("raw/facebook_combined.txt.gz", "edgelist", 4039, 88234, None, None),
    ("raw/soc-Slashdot0902.txt.gz", "edgelist", 82168, 504230, None, None),
    ("raw/lastfm_asia_edges.csv", "csv", 7624, 27806, None, None),
]
COLLECTIONS = [
    # path, graphs, total nodes, total edges, node-attribute dimensions, graph classes
    ("collections/IMDB-MULTI", 1500, 19502, 98903, None, 3),
    ("collections/IMDB-BINARY", 1000, 19773, 96531, None, 2),
    ("collections/MUTAG", 188, 3371, 3721, None, 2),
    ("collections/ENZYMES", 600, 19580, 37282, 18, 6),
]


@pytest.mark.parametrize("relpath, fmt, nodes, edges, dims, classes", DATASETS, ids=[d[0] for d in DATASETS])
def test_single_graph_counts(data_dir, relpath, fmt, nodes, edges, dims, classes):
    result = read_graph(data_dir / relpath)
    graph = result.data
    assert isinstance(graph, Graph)
    assert result.format == fmt
    assert (graph.num_nodes, graph.num_edges) == (nodes, edges)
    assert graph.num_features == (dims or 0)
    assert graph.num_classes == (classes or 0)
    assert np.all(graph.edges[:, 0] < graph.edges[:, 1])


def test_slashdot_cleaning_report(data_dir):
    """Slashdot is directed with self-loops: the report says so, and the counts add up to the raw rows."""
    result = read_graph(data_dir / "raw/soc-Slashdot0902.txt.gz")
    rep = result.report
    assert rep.directed_input  # SNAP header says "Directed graph"
    assert rep.input_rows == 948464  # SNAP header: "Edges: 948464"
    assert rep.self_loops > 0 and rep.reverse_edges_merged > 0
    assert rep.input_rows - rep.self_loops - rep.duplicate_edges - rep.reverse_edges_merged == result.data.num_edges


def test_lastfm_with_label_file(data_dir):
    result = read_graph(data_dir / "raw/lastfm_asia_edges.csv", labels=data_dir / "raw/lastfm_asia_target.csv")
    graph = result.data
    assert graph.num_classes == 18
    assert (graph.labels >= 0).all()
    # the label file's row for node 0 is "0,8"
    assert graph.labels[0] == 8


@pytest.mark.parametrize("relpath, graphs, nodes, edges, dims, classes", COLLECTIONS, ids=[c[0] for c in COLLECTIONS])
def test_collection_counts(data_dir, relpath, graphs, nodes, edges, dims, classes):
    result = read_graph(data_dir / relpath)
    coll = result.data
    assert isinstance(coll, GraphCollection)
    assert result.format == "tu"
    assert (len(coll), coll.num_nodes, coll.num_edges) == (graphs, nodes, edges)
    assert np.unique(coll.graph_labels).tolist() == list(range(classes))
    if dims:
        assert all(g.num_features == dims for g in coll.graphs)


@pytest.mark.parametrize("name", ["MUTAG", "ENZYMES"])
def test_graph_labels_renumbered(data_dir, name):
    """Graph labels that are not 0..k-1 (MUTAG 0/2, ENZYMES 1..6) are renumbered in sorted order, with a note."""
    result = read_graph(data_dir / "collections" / name)
    raw = np.loadtxt(data_dir / "collections" / name / f"{name}_graph_labels.txt", dtype=np.int64)
    uniq = np.unique(raw)
    assert not np.array_equal(uniq, np.arange(uniq.size))
    assert np.array_equal(result.data.graph_labels, np.searchsorted(uniq, raw))
    assert any("graph labels renumbered" in n for n in result.report.notes)


def test_enzymes_features_follow_nodes(data_dir):
    coll = read_graph(data_dir / "collections/ENZYMES").data
    attrs = np.loadtxt(data_dir / "collections/ENZYMES/ENZYMES_node_attributes.txt", delimiter=",")
    first = coll.graphs[0]
    assert np.allclose(first.dense_features(), attrs[: first.num_nodes], atol=1e-5)
    last = coll.graphs[-1]
    assert np.allclose(last.dense_features(), attrs[-last.num_nodes :], atol=1e-5)
