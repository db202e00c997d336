"""Edge-list parsing on strings: comments, CRLF, headers, delimiters, string ids, gzip, fast vs slow path."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphrelease.errors import InputFormatError, OptionError
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.io.edgelist import format_edgelist, parse_edgelist


def edge_set(parsed) -> set[tuple]:
    """Edges as unordered pairs of original ids (so the test does not depend on the numbering)."""
    ids = parsed.node_ids if parsed.node_ids is not None else np.arange(parsed.num_nodes)
    return {frozenset((ids[u].item(), ids[v].item())) for u, v in parsed.pairs.tolist()}


def test_whitespace_comments_crlf_blank_lines():
    text = b"# Directed graph\r\n% matrix-market style comment\r\n\r\n0 1\r\n  1\t2  \r\n\r\n2 0\r\n"
    parsed = parse_edgelist(text)
    assert parsed.pairs.tolist() == [[0, 1], [1, 2], [2, 0]]
    assert parsed.num_nodes == 3 and parsed.node_ids is None
    assert parsed.directed_declared is True


@pytest.mark.parametrize(
    "text, delimiter",
    [
        ("source,target\n0,1\n1,2\n", None),
        ("node_1, node_2\n0, 1\n1, 2\n", None),
        ("0\t1\n1\t2\n", None),
        ("0;1\n1;2\n", None),
        ("0|1\n1|2\n", "|"),
    ],
)
def test_delimiters_and_headers(text, delimiter):
    parsed = parse_edgelist(text, delimiter=delimiter)
    assert parsed.pairs.tolist() == [[0, 1], [1, 2]]


def test_header_note_and_forced_header():
    parsed = parse_edgelist("u,v\n5,6\n")
    assert parsed.notes[0].startswith("header row skipped")
    # header=True drops a numeric first row too
    assert parse_edgelist("9 9\n0 1\n", header=True).pairs.tolist() == [[0, 1]]


def test_string_ids_sorted_and_kept():
    parsed = parse_edgelist("bob alice\ncarol bob\n")
    assert list(parsed.node_ids) == ["alice", "bob", "carol"]
    assert edge_set(parsed) == {frozenset(("alice", "bob")), frozenset(("bob", "carol"))}


def test_quoted_csv_with_spaces_in_ids():
    parsed = parse_edgelist('"New York","Los Angeles"\n"Los Angeles",Boston\n', header=False)
    assert set(parsed.node_ids) == {"New York", "Los Angeles", "Boston"}


def test_sparse_integer_ids_are_renumbered():
    parsed = parse_edgelist("10 1000000000000\n10 7\n")
    assert parsed.num_nodes == 3
    assert parsed.node_ids.tolist() == [7, 10, 1000000000000]
    assert edge_set(parsed) == {frozenset((10, 1000000000000)), frozenset((10, 7))}


def test_extra_columns_ignored_with_note():
    parsed = parse_edgelist("0 1 0.5 1234\n1 2 0.7 1235\n")
    assert parsed.pairs.tolist() == [[0, 1], [1, 2]]
    assert any("extra column" in n for n in parsed.notes)


def test_marker_keeps_isolated_nodes():
    g, _ = Graph.from_edges(6, np.array([[0, 1], [2, 3]]))
    parsed = parse_edgelist(format_edgelist(g))
    assert parsed.num_nodes == 6 and parsed.node_ids is None


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("0 1\n1 2 3\n", "line 2: ragged row"),
        ("# c\n0 1\n1\n", "line 3: ragged row"),
        ("0 1\n1 x\n", "line 2: node id 'x' is not an integer"),
        ("0 1\n1 -2\n", "line 2: negative node id -2"),
        ("0 1\n1 99999999999999999999\n", "line 2: node id 99999999999999999999 overflows"),
        ("0 1\n1.5 2\n", "line 2: node id '1.5' is not an integer"),
        ("0,1\n1,,2\n", "line 2"),
        ("# only a comment\n", "empty graph"),
        ("source,target\n", "empty graph"),
        ("5\n6\n", "expected at least 2"),
    ],
)
def test_errors_name_the_line(text, fragment):
    with pytest.raises(InputFormatError) as info:
        parse_edgelist(text, source="edges.txt")
    assert "edges.txt" in str(info.value)
    assert fragment in str(info.value)


def test_id_type_option():
    assert list(parse_edgelist("1 2\n2 3\n", id_type="str").node_ids) == ["1", "2", "3"]
    with pytest.raises(InputFormatError, match="line 1"):
        parse_edgelist("a b\n", id_type="int", header=False)
    with pytest.raises(OptionError):
        parse_edgelist("0 1\n", id_type="float")


def test_binary_content_rejected():
    with pytest.raises(InputFormatError, match="binary"):
        parse_edgelist(b"\x00\x01\x02garbage\xff\xfe", source="x.bin")


def test_gzip_file_and_truncated_gzip(tmp_path):
    good = tmp_path / "g.txt.gz"
    good.write_bytes(gzip.compress(b"0 1\n1 2\n"))
    assert read_graph(good).data.num_edges == 2
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(gzip.compress(b"0 1\n1 2\n" * 1000)[:-30])
    with pytest.raises(InputFormatError, match="truncated or corrupt"):
        read_graph(bad)


def test_fast_and_line_by_line_paths_agree():
    """The vectorised path (numeric files) and the general path (forced via string ids) give the same graph."""
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 300, size=(2000, 2))
    text = "# comment\n" + "\n".join(f"{u}\t{v}" for u, v in pairs.tolist()) + "\n"
    fast = parse_edgelist(text)
    slow = parse_edgelist(text, id_type="str")
    assert edge_set(fast) == {frozenset((int(a), int(b))) for a, b in (tuple(e) for e in map(sorted, _as_str_pairs(slow)))}


def _as_str_pairs(parsed):
    ids = parsed.node_ids
    return [(ids[u], ids[v]) for u, v in parsed.pairs.tolist()]


node_token = st.one_of(
    st.integers(min_value=0, max_value=10**12),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC_-.0123456789", min_size=1, max_size=8).filter(
        lambda s: not s.lstrip("+-").isdigit() and s[0] not in "#%"
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    edges=st.lists(st.tuples(node_token, node_token), min_size=1, max_size=40),
    delimiter=st.sampled_from([" ", "\t", ","]),
    newline=st.sampled_from(["\n", "\r\n"]),
    comment=st.booleans(),
)
def test_parser_round_trip_property(edges, delimiter, newline, comment):
    """Writing any edge list as text and parsing it back gives the same set of (unordered) id pairs."""
    all_int = all(isinstance(t, int) for e in edges for t in e)
    lines = [f"{u}{delimiter}{v}" for u, v in edges]
    if comment:
        lines.insert(0, "# generated")
    text = newline.join(lines) + newline
    parsed = parse_edgelist(text, header=False, id_type="auto" if all_int else "str")
    expected = {frozenset((u, v) if all_int else (str(u), str(v))) for u, v in edges}
    assert edge_set(parsed) == expected
