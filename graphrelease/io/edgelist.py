"""Edge lists: whitespace / CSV / TSV, optional header, ``#`` and ``%`` comments, gzip, CRLF, integer or string ids.

Parsing (:func:`parse_edgelist`, on bytes) is separate from file handling (:func:`read_edgelist`).

* Node ids: if every row's ids are integers they are read as integers; when all of ``0..max`` occur they are used
  as they are, otherwise they are renumbered ``0..n-1`` in sorted order and the originals kept in ``node_ids``.
  Non-integer ids are strings, renumbered in sorted order. With ``id_type="auto"`` the first data row decides:
  a later non-integer id in an integer file is an error naming the line (pass ``id_type="str"`` to read such ids
  as strings).
* Columns beyond the first two (weights, timestamps) are ignored, with a note in the report.
* A header row is detected when the first row is not numeric and the second is (or its names look like a
  header: source/target, node_1/node_2, from/to, ...); force it with ``header=True/False``.
* Files written by :func:`write_edgelist` start with ``# graphrelease edge list: nodes=N`` so that isolated nodes
  survive a round trip.

Example
-------
>>> parsed = parse_edgelist(b"a b\\nb c\\n", source="<string>")
>>> parsed.pairs.tolist(), parsed.node_ids.tolist()
([[0, 1], [1, 2]], ['a', 'b', 'c'])
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphrelease.errors import InputFormatError, OptionError
from graphrelease.graph import NODE_SET_FROM_EDGES, CleaningReport, Graph
from graphrelease.io._common import ensure_text, read_bytes, remap_integer_ids, remap_string_ids
from graphrelease.io.table import (
    check_rectangular,
    fast_numeric,
    is_int_token,
    split_table,
    to_int64,
    token_array,
)

MARKER = "# graphrelease edge list:"
_MARKER_RE = re.compile(rb"^#\s*graphrelease edge list:.*\bnodes=(\d+)")
_HEADER_WORDS = {
    b"source", b"target", b"src", b"dst", b"from", b"to", b"u", b"v", b"node", b"node1", b"node2", b"node_1",
    b"node_2", b"id1", b"id2", b"id_1", b"id_2", b"head", b"tail", b"fromnodeid", b"tonodeid",
    b"weight", b"timestamp", b"time", b"sign",
}
ID_TYPES = ("auto", "int", "str")


@dataclass
class ParsedEdgeList:
    """Raw integer pairs (not yet canonical) plus what the parser learned about the file."""

    pairs: np.ndarray
    num_nodes: int
    node_ids: np.ndarray | None
    notes: list[str] = field(default_factory=list)
    directed_declared: bool | None = None
    #: the file declared its node count (``# graphrelease edge list: nodes=N``); otherwise it came from the edges
    nodes_declared: bool = False


def _looks_like_header(rows: list[list[bytes]]) -> bool:
    first = rows[0][:2]
    if all(is_int_token(tok) for tok in first):
        return False
    if len(rows) > 1 and all(is_int_token(tok) for tok in rows[1][:2]):
        return True
    return all(tok.strip().strip(b'"').lower() in _HEADER_WORDS for tok in first)


def parse_edgelist(
    data: bytes | str,
    *,
    source: str = "<string>",
    delimiter: str | None = None,
    header: bool | None = None,
    id_type: str = "auto",
) -> ParsedEdgeList:
    """Parse edge-list text into integer pairs over ``0..num_nodes-1``."""
    if id_type not in ID_TYPES:
        raise OptionError(f"id_type must be one of {', '.join(ID_TYPES)}, got {id_type!r}")
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = ensure_text(data, source)
    if id_type != "str":
        fast = _parse_fast(data, delimiter=delimiter, header=header)
        if fast is not None:
            return fast
    table = split_table(data, source=source, delimiter=delimiter)
    notes: list[str] = []
    declared_nodes, directed_declared = _scan_comments(table.comments)
    if not table.rows:
        if declared_nodes:  # a declared node set without edges (e.g. a synthetic release with no edges)
            return _edgeless(declared_nodes, notes, directed_declared)
        raise InputFormatError(f"{source}: empty graph — the file has no edges (only comments or blank lines)")
    skip_header = _looks_like_header(table.rows) if header is None else header
    if skip_header:
        table.header = table.rows[0]
        table.rows = table.rows[1:]
        table.header_skipped = True
        notes.append("header row skipped: " + b",".join(table.header).decode("utf-8", "replace"))
        if not table.rows:
            if declared_nodes:
                return _edgeless(declared_nodes, notes, directed_declared)
            raise InputFormatError(f"{source}: empty graph — the file has a header but no edges")
    ncols = check_rectangular(table, min_columns=2, what="source and target node ids")
    if ncols > 2:
        notes.append(_extra_columns_note(ncols))
    tokens = token_array(table, slice(0, 2))
    use_int = id_type == "int" or (id_type == "auto" and all(is_int_token(t) for t in table.rows[0][:2]))
    if use_int:
        ids = to_int64(tokens, table, what="node id")
        if declared_nodes is not None and ids.size and int(ids.max()) >= declared_nodes:
            bad = int(np.argmax((ids >= declared_nodes).any(axis=1)))
            raise InputFormatError(
                f"{source}, line {table.line_of_row(bad)}: node id {int(ids[bad].max())} >= nodes={declared_nodes} "
                f"declared in the header comment"
            )
        nodes = remap_integer_ids(ids, declared_nodes=declared_nodes)
    else:
        nodes = remap_string_ids(tokens, source)
    return ParsedEdgeList(nodes.index, nodes.num_nodes, nodes.node_ids, notes + nodes.notes, directed_declared,
                          nodes_declared=declared_nodes is not None and use_int)


def _edgeless(num_nodes: int, notes: list[str], directed_declared: bool | None) -> ParsedEdgeList:
    return ParsedEdgeList(np.zeros((0, 2), dtype=np.int64), num_nodes, None, notes + ["the graph has no edges"],
                          directed_declared, nodes_declared=True)


def _extra_columns_note(ncols: int) -> str:
    return f"{ncols - 2} extra column(s) ignored (weights/timestamps are not part of the graph)"


def _scan_comments(comments: list[bytes]) -> tuple[int | None, bool | None]:
    """Our own ``nodes=N`` marker, and SNAP's "Directed graph" / "Undirected graph" first-line declaration."""
    declared_nodes = None
    directed_declared = None
    for comment in comments[:20]:
        match = _MARKER_RE.match(comment)
        if match:
            declared_nodes = int(match.group(1))
        lowered = comment.lower()
        if b"directed graph" in lowered and b"undirected" not in lowered:
            directed_declared = True
        elif b"undirected graph" in lowered:
            directed_declared = False
    return declared_nodes, directed_declared


def _parse_fast(data: bytes, *, delimiter: str | None, header: bool | None) -> ParsedEdgeList | None:
    """The vectorised path for purely numeric files; ``None`` hands over to the line-by-line path."""
    block = fast_numeric(data, delimiter=delimiter)
    if block is None or block.values.shape[1] < 2:
        return None
    values = block.values
    first_numeric = len(block.first_row) == values.shape[1] and all(is_int_token(t) for t in block.first_row)
    skip = header if header is not None else not first_numeric
    if not skip and not first_numeric:
        return None
    notes: list[str] = []
    if skip:
        notes.append("header row skipped: " + b",".join(block.first_row).decode("utf-8", "replace"))
    else:
        try:
            first = np.array([int(t) for t in block.first_row], dtype=np.int64)
        except OverflowError:
            return None
        values = np.concatenate([first[None, :], values])
    if values.shape[0] == 0 or (values.size and values[:, :2].min() < 0):
        return None  # empty or negative ids: the line-by-line path raises with the line number
    if values.shape[1] > 2:
        notes.append(_extra_columns_note(values.shape[1]))
    declared_nodes, directed_declared = _scan_comments(block.comments)
    ids = np.ascontiguousarray(values[:, :2])
    if declared_nodes is not None and int(ids.max()) >= declared_nodes:
        return None
    nodes = remap_integer_ids(ids, declared_nodes=declared_nodes)
    return ParsedEdgeList(nodes.index, nodes.num_nodes, nodes.node_ids, notes + nodes.notes, directed_declared,
                          nodes_declared=declared_nodes is not None)


def read_edgelist(
    path: Path,
    *,
    delimiter: str | None = None,
    header: bool | None = None,
    id_type: str = "auto",
    directed: bool | None = None,
    name: str | None = None,
    nodes: int | str | Path | None = None,
) -> tuple[Graph, CleaningReport]:
    """Read an edge-list file (gzip-aware) into a canonical :class:`Graph`.

    ``nodes``: the owner's node set, a count ``N`` (ids ``0..N-1``) or a node-list file (see
    :mod:`graphrelease.io.nodelist`). Without it (and without a ``nodes=N`` header) the node set is inferred from
    the edges and ``graph.node_set`` says so.
    """
    path = Path(path)
    parsed = parse_edgelist(read_bytes(path), source=str(path), delimiter=delimiter, header=header, id_type=id_type)
    directed_input = directed if directed is not None else parsed.directed_declared
    graph, report = Graph.from_edges(
        parsed.num_nodes,
        parsed.pairs,
        node_ids=parsed.node_ids,
        name=name or _stem(path),
        directed_input=bool(directed_input) if directed_input is not None else False,
        node_set=f"the nodes=N header of {path}" if parsed.nodes_declared else NODE_SET_FROM_EDGES,
    )
    if nodes is not None:
        from graphrelease.io.nodelist import declare_nodes, parse_nodes_option, read_node_list

        declared = parse_nodes_option(nodes)
        if parsed.nodes_declared and isinstance(declared, int) and declared != parsed.num_nodes:
            raise InputFormatError(f"{path}: the header declares nodes={parsed.num_nodes} but --nodes says {declared}")
        if isinstance(declared, int):
            graph = declare_nodes(graph, declared, source=f"nodes={declared}")
        else:
            graph = declare_nodes(graph, read_node_list(declared), source=f"the node list {declared}")
        isolated = int((graph.degrees() == 0).sum())
        report = CleaningReport(**{**report.__dict__, "isolated_nodes": isolated})
    return graph, CleaningReport(**{**report.__dict__, "notes": report.notes + tuple(parsed.notes)})


def format_edgelist(graph: Graph, *, delimiter: str = ",") -> str:
    """The text :func:`write_edgelist` writes: marker comment, header, one ``u,v`` row per undirected edge."""
    # A node set read off the edges is written without nodes=N: reading the file back must not turn it into a
    # declared one (the certificate would then call it public).
    declared = "node set read off the edges" if graph.node_set_inferred else f"nodes={graph.num_nodes}"
    lines = [f"{MARKER} {declared} edges={graph.num_edges}", delimiter.join(("source", "target"))]
    if graph.num_edges:
        lines.append("\n".join(f"{u}{delimiter}{v}" for u, v in graph.edges.tolist()))
    return "\n".join(lines) + "\n"


def write_edgelist(graph: Graph, path: Path, *, delimiter: str = ",") -> None:
    """Write node numbers ``0..n-1`` (never the original ids); ``.gz`` paths are gzip-compressed."""
    path = Path(path)
    text = format_edgelist(graph, delimiter=delimiter).encode("utf-8")
    if path.suffix == ".gz":
        text = gzip.compress(text, mtime=0)
    with open(path, "wb") as handle:
        handle.write(text)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".txt", ".csv", ".tsv", ".edges", ".edgelist", ".el"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name
