"""Round trips for every writer, sniffing, side files, and never unpickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.errors import GraphValidationError, InputFormatError, OptionError
from graphrelease.graph import Graph, GraphCollection
from graphrelease.io import load_default_graph, read_graph, sniff_format, write_graph


def same_graph(a: Graph, b: Graph, *, features=True, labels=True) -> None:
    assert a.structurally_equal(b)
    if labels:
        assert (a.labels is None) == (b.labels is None)
        if a.labels is not None:
            assert np.array_equal(a.labels, b.labels)
    if features:
        fa, fb = a.dense_features(), b.dense_features()
        assert (fa is None) == (fb is None)
        if fa is not None:
            assert np.array_equal(fa, fb)


@pytest.fixture(scope="module")
def small_graph() -> Graph:
    """A Cora subgraph with an isolated node, features and labels (including unknown ones)."""
    cora = load_default_graph()
    sub = cora.induced_subgraph(np.arange(60))
    labels = np.array(sub.labels)
    labels[:3] = -1
    feats = sub.dense_features()[:, :12]
    return Graph(sub.num_nodes + 1, sub.edges, features=np.vstack([feats, np.ones((1, 12))]),
                 labels=np.append(labels, 2), name="small")


# format -> (file name, keeps features, keeps labels)
WRITERS = {
    "csv": ("g.csv", False, False),
    "tsv": ("g.tsv", False, False),
    "npz": ("g.npz", True, True),
    "graphml": ("g.graphml", True, True),
    "gml": ("g.gml", True, True),
    "gexf": ("g.gexf", True, True),
    "pt": ("g.pt", True, True),
}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_round_trip_every_writer(tmp_path, small_graph, fmt):
    name, feats, labels = WRITERS[fmt]
    path = write_graph(small_graph, tmp_path / name)
    assert sniff_format(path) == fmt
    back = read_graph(path)
    assert back.format == fmt
    same_graph(small_graph, back.data, features=feats, labels=labels)
    assert back.data.num_nodes == small_graph.num_nodes  # the isolated node survives every format
    if fmt != "pt":  # edge_index stores both directions by convention
        assert back.report.dropped_summary() == {"self_loops": 0, "duplicate_edges": 0, "reverse_edges_merged": 0}


def test_round_trip_gzip_edge_list(tmp_path, small_graph):
    path = write_graph(small_graph, tmp_path / "g.csv.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    same_graph(small_graph, read_graph(path).data, features=False, labels=False)


def test_round_trip_real_graph_npz(tmp_path, data_dir):
    cora = read_graph(data_dir / "single/cora.npz").data
    back = read_graph(write_graph(cora, tmp_path / "cora.npz")).data
    assert back == cora  # includes sparse features, labels and name


def test_round_trip_string_ids_npz(tmp_path):
    g = read_graph(_write(tmp_path / "s.txt", "bob alice\ncarol bob\n")).data
    back = read_graph(write_graph(g, tmp_path / "s.npz")).data
    assert list(back.node_ids) == ["alice", "bob", "carol"]


def test_round_trip_collection_tu_and_directory(tmp_path, data_dir):
    coll = read_graph(data_dir / "collections/ENZYMES").data.subset(range(0, 600, 60))
    tu_dir = write_graph(coll, tmp_path / "ENZ", fmt="tu")
    back = read_graph(tu_dir).data
    assert isinstance(back, GraphCollection) and len(back) == len(coll)
    assert np.array_equal(back.graph_labels, coll.graph_labels)
    for a, b in zip(coll.graphs, back.graphs):
        same_graph(a, b)
    per_graph = write_graph(coll, tmp_path / "per_graph", fmt="npz")
    files = sorted(p.name for p in per_graph.iterdir())
    assert files[:2] == ["graph_000.npz", "graph_001.npz"] and "graph_labels.csv" in files
    for i, g in enumerate(coll.graphs):
        same_graph(g, read_graph(per_graph / f"graph_{i:03d}.npz").data)
    whole = read_graph(per_graph)
    assert whole.format == "graphdir" and np.array_equal(whole.data.graph_labels, coll.graph_labels)
    for a, b in zip(coll.graphs, whole.data.graphs):
        same_graph(a, b)
    as_csv = read_graph(write_graph(coll, tmp_path / "csv_dir", fmt="csv")).data
    assert [g.num_edges for g in as_csv.graphs] == [g.num_edges for g in coll.graphs]


def _write(path, text: str | bytes):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_format_override(tmp_path):
    path = _write(tmp_path / "edges.data", "0,1\n1,2\n")
    assert read_graph(path, fmt="csv").data.num_edges == 2
    with pytest.raises(OptionError, match="unknown format"):
        read_graph(path, fmt="parquet")


def test_content_beats_a_misleading_text_extension(tmp_path, small_graph):
    path = write_graph(small_graph, tmp_path / "g.npz").rename(tmp_path / "g.txt")
    assert sniff_format(path) == "npz"
    same_graph(small_graph, read_graph(path).data)


def test_sniff_by_content_without_extension(tmp_path, small_graph):
    for fmt in ("npz", "graphml", "gexf", "gml", "pt"):
        path = write_graph(small_graph, tmp_path / f"x.{fmt}")
        renamed = path.rename(tmp_path / f"noext_{fmt}")
        assert sniff_format(renamed) == fmt


def test_features_and_labels_side_files(tmp_path):
    edges = _write(tmp_path / "e.csv", "src,dst\nb,a\nc,b\n")
    feats = _write(tmp_path / "f.csv", "id,x1,x2\nc,5,6\na,1,2\nb,3,4\n")
    labels = _write(tmp_path / "l.csv", "id,label\na,cat\nc,dog\n")
    result = read_graph(edges, features=feats, labels=labels)
    g = result.data
    assert list(g.node_ids) == ["a", "b", "c"]
    assert g.dense_features().tolist() == [[1, 2], [3, 4], [5, 6]]
    assert g.labels.tolist() == [0, -1, 1]  # cat->0, dog->1, b unknown
    assert any("no label row" in n for n in result.report.notes)


def test_side_files_npz_and_npy(tmp_path):
    edges = _write(tmp_path / "e.txt", "0 1\n1 2\n")
    np.save(tmp_path / "f.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    np.savez(tmp_path / "l.npz", ids=np.array([2, 0]), labels=np.array([1, 0]))
    g = read_graph(edges, features=tmp_path / "f.npy", labels=tmp_path / "l.npz").data
    assert g.dense_features()[2].tolist() == [4, 5]
    assert g.labels.tolist() == [0, -1, 1]
    x = sp.random(3, 5, density=0.5, format="csr", random_state=0)
    np.savez(tmp_path / "fx.npz", attr_data=x.data, attr_indices=x.indices, attr_indptr=x.indptr, attr_shape=x.shape)
    g2 = read_graph(edges, features=tmp_path / "fx.npz").data
    assert np.allclose(g2.dense_features(), x.toarray())


@pytest.mark.parametrize(
    "feature_text, error, fragment",
    [
        ("0,1\n1,2\n9,3\n", GraphValidationError, "line 3: node id '9' does not match"),
        ("0,1\n1,2\n", GraphValidationError, "node 2 has no feature row"),
        ("0,1\n1,2\n1,2\n2,3\n", GraphValidationError, "line 3: node id '1' appears twice"),
        ("0,1\n1,nan\n2,3\n", InputFormatError, "line 2: feature value is NaN or infinite"),
        ("0,1\n1,inf\n2,3\n", InputFormatError, "line 2"),
    ],
)
def test_side_file_errors(tmp_path, feature_text, error, fragment):
    edges = _write(tmp_path / "e.txt", "0 1\n1 2\n")
    feats = _write(tmp_path / "f.csv", feature_text)
    with pytest.raises(error) as info:
        read_graph(edges, features=feats)
    assert fragment in str(info.value) and "f.csv" in str(info.value)


def test_never_unpickles(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    import torch

    torch.save({"edge_index": torch.tensor([[0], [1]]), "evil": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(InputFormatError, match="refusing to unpickle"):
        read_graph(tmp_path / "evil.pt")
    np.save(tmp_path / "obj.npy", np.array([Evil()], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "obj.npz", edges=np.array([Evil()], dtype=object))
    with pytest.raises(InputFormatError, match="pickle"):
        read_graph(tmp_path / "obj.npz")
    _write(tmp_path / "e.txt", "0 1\n")
    with pytest.raises(InputFormatError, match="pickle"):
        read_graph(tmp_path / "e.txt", features=tmp_path / "obj.npy")
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps(Evil()))
    with pytest.raises(InputFormatError, match="pickle"):
        read_graph(tmp_path / "plain.pkl")
    assert not marker.exists()


def test_pyg_data_object_is_allowed(tmp_path):
    import torch
    from torch_geometric.data import Data

    torch.save(Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), y=torch.tensor([0, 1, 0])), tmp_path / "d.pt")
    g = read_graph(tmp_path / "d.pt").data
    assert g.edges.tolist() == [[0, 1], [1, 2]] and g.labels.tolist() == [0, 1, 0]


def test_directed_declaration_recorded(tmp_path):
    path = _write(tmp_path / "d.txt", "0 1\n1 0\n1 2\n")
    assert read_graph(path, directed=True).report.directed_input
    assert not read_graph(path).report.directed_input
    assert read_graph(path).report.reverse_edges_merged == 1
