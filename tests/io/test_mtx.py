"""MatrixMarket inputs: 1-based rows are nodes, the header's size declares the node set, sniffing by banner."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from cli.app import app
from cli.common import run_cli
from graphrelease.errors import InputFormatError, OptionError
from graphrelease.graph import NODE_SET_FROM_EDGES
from graphrelease.io import read_graph, sniff_format, write_graph


@pytest.fixture(scope="module")
def cora(data_dir):
    return read_graph(data_dir / "single" / "cora.npz").data


def _upper(graph, n: int) -> sp.coo_matrix:
    e = np.asarray(graph.edges)
    return sp.coo_matrix((np.ones(len(e)), (e.max(1), e.min(1))), shape=(n, n))


def test_cora_as_symmetric_pattern_keeps_edges_and_an_isolated_last_node(tmp_path, cora):
    # One more row than Cora has nodes: the header declares an isolated node that no edge names.
    path = tmp_path / "cora.mtx"
    scipy.io.mmwrite(str(path), _upper(cora, cora.num_nodes + 1), field="pattern", symmetry="symmetric")
    assert path.read_bytes().startswith(b"%%MatrixMarket matrix coordinate pattern symmetric")
    loaded = read_graph(path)
    g = loaded.data
    assert loaded.format == "mtx"
    assert g.num_nodes == cora.num_nodes + 1 and g.num_edges == cora.num_edges == 5278
    assert g.degrees()[-1] == 0 and loaded.report.isolated_nodes == 1
    assert not g.node_set_inferred and g.node_set != NODE_SET_FROM_EDGES and "MatrixMarket header" in g.node_set
    assert np.array_equal(np.asarray(g.edges), np.asarray(cora.edges))  # row i of the file is node i - 1
    assert loaded.report.reverse_edges_merged == 0 and not loaded.report.directed_input


def test_general_weighted_matrix_is_symmetrised_and_reports_what_it_dropped(tmp_path):
    # 1-based in the file: (1,2) (2,1) (2,3) (4,4) and an explicit zero (1,3); node 5 has no entry.
    text = ("%%MatrixMarket matrix coordinate real general\n% weights\n5 5 5\n"
            "1 2 0.5\n2 1 2.0\n2 3 1.5\n4 4 3.0\n1 3 0\n")
    path = tmp_path / "w.mtx"
    path.write_text(text)
    loaded = read_graph(path)
    g = loaded.data
    assert g.num_nodes == 5 and sorted(map(tuple, np.asarray(g.edges).tolist())) == [(0, 1), (1, 2)]
    assert loaded.report.directed_input and loaded.report.self_loops == 1
    assert loaded.report.reverse_edges_merged == 1
    notes = " ".join(loaded.report.notes)
    assert "1 explicitly stored zero entries" in notes and "real entries" in notes


def test_dense_array_format(tmp_path):
    a = np.zeros((4, 4))
    a[0, 1] = a[1, 0] = a[2, 3] = a[3, 2] = 1
    path = tmp_path / "dense.mtx"
    scipy.io.mmwrite(str(path), a)
    g = read_graph(path).data
    assert g.num_nodes == 4 and g.num_edges == 2


def test_banner_wins_over_an_edge_list_extension_and_gzip(tmp_path, cora):
    plain = tmp_path / "net.edges"
    scipy.io.mmwrite(str(tmp_path / "tmp.mtx"), _upper(cora, cora.num_nodes), field="pattern", symmetry="symmetric")
    plain.write_bytes((tmp_path / "tmp.mtx").read_bytes())
    packed = tmp_path / "net.edges.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed, tmp_path / "tmp.mtx"):
        assert sniff_format(path) == "mtx"
        # Read as an edge list, the size line "2708 2708 5278" would have been a self-loop on a node 2708.
        assert read_graph(path).data.num_nodes == cora.num_nodes


PATTERN = b"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n"
REAL = b"%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1.0\n3 2 0.5\n"


# gzip with mtime=0 and ids by name: pytest-xdist workers must collect identical test ids.
@pytest.mark.parametrize("name, content", [
    ("lower.mtx", PATTERN.replace(b"%%MatrixMarket", b"%%matrixmarket")),
    ("bom_space.edges", b"\xef\xbb\xbf  " + PATTERN),
    ("packed.edges", gzip.compress(REAL, mtime=0)),
    ("packed_no_gz_name.mtx", gzip.compress(PATTERN, mtime=0)),
], ids=["lower", "bom_space", "packed", "packed_no_gz_name"])
def test_banner_spellings_and_compression_found_by_content(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    loaded = read_graph(path)
    assert loaded.format == "mtx" and loaded.data.num_nodes == 3 and loaded.data.edges.tolist() == [[0, 1], [1, 2]]


def test_zero_entries_of_a_symmetric_file_are_counted_once(tmp_path):
    path = tmp_path / "z.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 1.0\n3 1 0\n4 2 0\n")
    loaded = read_graph(path)
    assert loaded.data.num_edges == 1 and "2 explicitly stored zero entries" in " ".join(loaded.report.notes)


@pytest.mark.parametrize("text, fragment", [
    ("%%MatrixMarket matrix coordinate integer symmetric\n3 3 1\n2 1 99999999999999999999999999\n", "not a readable"),
    ("%%MatrixMarket matrix coordinate pattern symmetric\n99999999999999999999999 99999999999999999999999 1\n2 1\n",
     "not a readable"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n", "3 x 4"),
    ("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 2\n", "not a readable MatrixMarket"),
    ("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 0\n", "no non-zero"),
    ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1.0 0.0\n", "complex"),
])
def test_bad_matrices_name_the_file(tmp_path, text, fragment):
    path = tmp_path / "bad.mtx"
    path.write_text(text)
    with pytest.raises(InputFormatError) as err:
        read_graph(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_mtx_is_read_only_and_declares_its_own_nodes(tmp_path, cora):
    with pytest.raises(OptionError, match="read-only"):
        write_graph(cora, tmp_path / "x.mtx", fmt="mtx")
    path = tmp_path / "c.mtx"
    scipy.io.mmwrite(str(path), _upper(cora, cora.num_nodes), field="pattern", symmetry="symmetric")
    with pytest.raises(OptionError, match="MatrixMarket: the header's size"):
        read_graph(path, nodes=cora.num_nodes)


def test_cli_releases_a_matrix_market_file_without_nodes_option(tmp_path, cora, capsys):
    sub = cora.induced_subgraph(np.arange(300))
    path = tmp_path / "sub.mtx"
    scipy.io.mmwrite(str(path), _upper(sub, sub.num_nodes), field="pattern", symmetry="symmetric")
    out = tmp_path / "rel"
    code = run_cli(app, ["synth", str(path), "--epsilon", "1", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    cert = json.loads((out / "certificate.json").read_text())
    assumptions = json.dumps(cert["public_assumptions"])
    assert "MatrixMarket header of" in assumptions and "sub.mtx" in assumptions
    code = run_cli(app, ["certificate", "verify", str(out), "--input", str(path), "--key", str(tmp_path / "rel.key")])
    assert code == 0, capsys.readouterr().err
