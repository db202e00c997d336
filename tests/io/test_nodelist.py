"""Where the node set comes from: declared by the owner (header, --nodes, node list, node-data files, per-node
formats) or read off the edges; and the refusal of an undeclared node set under edge / node adjacency."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.errors import GraphValidationError, InputFormatError, NodeSetError, OptionError
from graphrelease.graph import NODE_SET_FROM_EDGES
from graphrelease.io import read_graph, write_graph
from graphrelease.privacy.public_inputs import FROM_EDGES_DISCLOSURE, node_set_assumption


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_edge_list_without_declaration_is_inferred(tmp_path):
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n5,6\n")).data
    assert g.node_set == NODE_SET_FROM_EDGES and g.num_nodes == 5  # ids 3, 4 never named: renumbered


def test_nodes_count_keeps_ids_and_adds_isolated_nodes(tmp_path):
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n5,6\n"), nodes=10).data
    assert not g.node_set_inferred and g.num_nodes == 10 and g.node_ids is None
    assert g.edges.tolist() == [[0, 1], [1, 2], [5, 6]]
    assert int((g.degrees() == 0).sum()) == 5


def test_one_edge_never_renumbers_declared_nodes(tmp_path):
    """Dropping the only edge of node 3 changes nothing else: same node count, same ids for every other node."""
    with_edge = read_graph(_write(tmp_path / "a.csv", "0,1\n1,2\n2,3\n4,5\n"), nodes=6).data
    without = read_graph(_write(tmp_path / "b.csv", "0,1\n1,2\n4,5\n"), nodes=6).data
    assert with_edge.num_nodes == without.num_nodes == 6
    assert without.edges.tolist() == [[0, 1], [1, 2], [4, 5]]


def test_node_list_file_with_string_ids(tmp_path):
    _write(tmp_path / "nodes.txt", "id\nalice\nbob\ncarol\ndave\n")
    g = read_graph(_write(tmp_path / "g.txt", "alice bob\nbob carol\n"), nodes=tmp_path / "nodes.txt").data
    assert g.num_nodes == 4 and list(g.node_ids) == ["alice", "bob", "carol", "dave"]
    assert g.edges.tolist() == [[0, 1], [1, 2]] and "nodes.txt" in g.node_set


def test_undeclared_endpoint_is_an_error_naming_it(tmp_path):
    _write(tmp_path / "nodes.txt", "alice\nbob\n")
    with pytest.raises(GraphValidationError, match="carol"):
        read_graph(_write(tmp_path / "g.txt", "alice bob\nbob carol\n"), nodes=tmp_path / "nodes.txt")
    with pytest.raises(GraphValidationError, match="outside the declared 0..2"):
        read_graph(_write(tmp_path / "g.csv", "0,1\n1,5\n"), nodes=3)


def test_a_count_over_ids_numbered_from_one_says_how_to_declare_them(tmp_path):
    edges = _write(tmp_path / "g.txt", "% 1-based, as Network Repository writes them\n1 2\n2 3\n")
    with pytest.raises(GraphValidationError, match="if the file numbers its nodes from 1, declare them with a node-list file"):
        read_graph(edges, nodes=3)
    _write(tmp_path / "nodes.txt", "1\n2\n3\n")
    g = read_graph(edges, nodes=tmp_path / "nodes.txt").data
    assert g.num_nodes == 3 and g.edges.tolist() == [[0, 1], [1, 2]]


def test_duplicate_node_in_list_names_the_line(tmp_path):
    _write(tmp_path / "nodes.txt", "a\nb\na\n")
    with pytest.raises(InputFormatError, match="line 3"):
        read_graph(_write(tmp_path / "g.txt", "a b\n"), nodes=tmp_path / "nodes.txt")


def test_header_declares_and_round_trip_keeps_isolated_nodes(tmp_path):
    from graphrelease.io import load_default_graph

    cora = load_default_graph()
    path = tmp_path / "cora.csv"
    write_graph(cora, path)
    back = read_graph(path).data
    assert not back.node_set_inferred and back.num_nodes == cora.num_nodes


def test_labels_file_listing_every_node_declares(tmp_path):
    _write(tmp_path / "labels.csv", "node,label\n0,1\n1,0\n2,1\n3,0\n9,1\n")
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n"), labels=tmp_path / "labels.csv").data
    assert not g.node_set_inferred and g.num_nodes == 5 and "labels" in g.node_set
    assert list(g.node_ids) == [0, 1, 2, 3, 9] and g.labels.tolist() == [1, 0, 1, 0, 1]


def test_labels_file_missing_an_edge_node_keeps_it_inferred(tmp_path):
    _write(tmp_path / "labels.csv", "0,1\n1,0\n")
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n"), labels=tmp_path / "labels.csv").data
    assert g.node_set_inferred and g.labels.tolist() == [1, 0, -1]


def test_npz_without_num_nodes_is_inferred_with_it_declared(tmp_path):
    np.savez(tmp_path / "a.npz", edges=np.array([[0, 1], [1, 2]]))
    np.savez(tmp_path / "b.npz", edges=np.array([[0, 1], [1, 2]]), num_nodes=5)
    assert read_graph(tmp_path / "a.npz").data.node_set_inferred
    assert not read_graph(tmp_path / "b.npz").data.node_set_inferred


def test_graphml_edge_to_undeclared_node_is_inferred(tmp_path):
    head = '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="undirected">'
    _write(tmp_path / "ok.graphml", head + '<node id="a"/><node id="b"/><node id="c"/><edge source="a" target="b"/>'
           '</graph></graphml>')
    _write(tmp_path / "bad.graphml", head + '<node id="a"/><node id="b"/><edge source="a" target="b"/>'
           '<edge source="b" target="z"/></graph></graphml>')
    ok = read_graph(tmp_path / "ok.graphml").data
    assert not ok.node_set_inferred and ok.num_nodes == 3
    assert read_graph(tmp_path / "bad.graphml").data.node_set_inferred


def test_nodes_option_is_for_edge_lists_only(tmp_path):
    from graphrelease.io import load_default_graph

    write_graph(load_default_graph(), tmp_path / "c.npz")
    with pytest.raises(OptionError, match="--nodes applies to edge lists"):
        read_graph(tmp_path / "c.npz", nodes=5)


def test_policy_refuses_inferred_under_edge_and_node_adjacency(tmp_path):
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n")).data
    for kind in ("edge", "node", "k-neighbor"):
        with pytest.raises(NodeSetError, match="--nodes"):
            node_set_assumption(g, adjacency=kind)
    assert node_set_assumption(g, adjacency="edge", policy="from-edges") == {"node_set": FROM_EDGES_DISCLOSURE}


def test_train_refuses_an_undeclared_edge_list(tmp_path):
    from graphrelease.train import train_model

    path = _write(tmp_path / "g.csv", "0,1\n1,2\n2,3\n")
    with pytest.raises(NodeSetError):
        train_model(path, tmp_path / "model", method="dp-mlp", epsilon=1.0)
    assert not (tmp_path / "model").exists()


def test_cli_synth_refusal_is_one_line_and_leaves_nothing(tmp_path, capsys):
    from cli.app import app
    from cli.common import run_cli

    path = _write(tmp_path / "g.csv", "0,1\n1,2\n2,3\n")
    assert run_cli(app, ["synth", str(path), "--epsilon", "1", "--out", str(tmp_path / "rel")]) != 0
    err = capsys.readouterr().err
    assert "--nodes" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 3
    assert not (tmp_path / "rel").exists() and not (tmp_path / "rel.key").exists()
    rc = run_cli(app, ["synth", str(path), "--epsilon", "1", "--out", str(tmp_path / "rel"), "--nodes", "6"])
    assert rc == 0 and (tmp_path / "rel.key").exists()


@pytest.mark.parametrize("ext", ["csv", "npz", "pt", "graphml", "gml"])
def test_writing_an_inferred_graph_keeps_it_inferred(tmp_path, ext):
    """Converting a file must not launder a node set read off the edges into a declared one."""
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n2,3\n5,6\n")).data
    assert g.node_set_inferred
    write_graph(g, tmp_path / f"out.{ext}")
    back = read_graph(tmp_path / f"out.{ext}").data
    assert back.node_set_inferred, (ext, back.node_set)
    declared = read_graph(tmp_path / "g.csv", nodes=10).data
    write_graph(declared, tmp_path / f"declared.{ext}")
    assert not read_graph(tmp_path / f"declared.{ext}").data.node_set_inferred


def test_gexf_refuses_an_inferred_node_set(tmp_path):
    g = read_graph(_write(tmp_path / "g.csv", "0,1\n1,2\n")).data
    with pytest.raises(OptionError, match="GEXF"):
        write_graph(g, tmp_path / "out.gexf")


def test_graphml_comment_or_repeat_cannot_fake_a_declaration(tmp_path):
    """Counting <node> strings is not enough: a commented-out or repeated node element must not hide an edge to an
    undeclared node."""
    head = ('<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<graph edgedefault="undirected">')
    _write(tmp_path / "comment.graphml", head + '<!-- <node id="zz"/> --><node id="a"/><node id="b"/>'
           '<edge source="a" target="b"/><edge source="a" target="c"/></graph></graphml>')
    _write(tmp_path / "repeat.graphml", head + '<node id="a"/><node id="a"/><node id="b"/>'
           '<edge source="a" target="b"/><edge source="a" target="c"/></graph></graphml>')
    for name in ("comment.graphml", "repeat.graphml"):
        assert read_graph(tmp_path / name).data.node_set_inferred, name
