"""The owner's declaration of the node set: a node count or a node-list file, applied to a graph read off its edges.

An edge list names only nodes that have an edge. Under edge adjacency that node set is a function of the private
edges (removing the one edge of a node removes the node, and renumbers every node after it), so it may not be called
public. The owner declares the node set instead:

* ``nodes=N`` (an integer): the nodes are ``0..N-1``; every edge id must be an integer below ``N``;
* a node-list file (one id per line, first column; optional header; ``#`` comments; gzip): the nodes are the listed
  ids, numbered in the file's order; every edge id must be listed;
* a node-feature or label file keyed by id that lists every node (``read_graph(..., features=, labels=)``).

Node numbers then come from the declaration alone, so one edge never renumbers other nodes.

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph, NODE_SET_FROM_EDGES
>>> g, _ = Graph.from_edges(2, np.array([[0, 1]]), node_set=NODE_SET_FROM_EDGES)
>>> h = declare_nodes(g, 4, source="nodes=4")
>>> h.num_nodes, h.node_set, h.node_set_inferred
(4, 'nodes=4', False)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError, OptionError
from graphrelease.graph import Graph
from graphrelease.io._common import ensure_text, read_bytes
from graphrelease.io.table import check_rectangular, is_int_token, split_table, token_array

_HEADER_WORDS = {b"id", b"node", b"node_id", b"nodeid", b"name", b"nodes", b"vertex"}


def parse_node_list(data: bytes, *, source: str) -> np.ndarray:
    """Node ids (first column) of a node-list text, in file order, as an int64 array when every id is an integer,
    else as a ``str`` array. Duplicates are errors naming the line."""
    table = split_table(ensure_text(data, source), source=source)
    if table.rows and (table.rows[0][0].strip(b'"').lower() in _HEADER_WORDS
                       or (len(table.rows) > 1 and not is_int_token(table.rows[0][0])
                           and is_int_token(table.rows[1][0]))):
        table.header, table.rows, table.header_skipped = table.rows[0], table.rows[1:], True
    if not table.rows:
        raise InputFormatError(f"{source}: the node list is empty")
    check_rectangular(table, min_columns=1, what="node id")
    tokens = token_array(table, [0])[:, 0]
    if all(is_int_token(t) for t in tokens):
        ids: np.ndarray = tokens.astype(np.int64)
    else:
        try:
            ids = np.char.decode(tokens, "utf-8") if tokens.dtype.kind == "S" else tokens.astype(str)
        except UnicodeDecodeError as err:
            raise InputFormatError(f"{source}: node id is not valid UTF-8 ({err})") from err
    order = np.argsort(ids, kind="stable")
    same = ids[order][1:] == ids[order][:-1]
    if same.any():
        row = int(order[1:][same][0])
        raise InputFormatError(f"{source}, line {table.line_of_row(row)}: node id {ids[row]!s} is listed twice")
    return ids


def read_node_list(path: str | Path) -> np.ndarray:
    """:func:`parse_node_list` of a file (gzip-aware)."""
    path = Path(path)
    return parse_node_list(read_bytes(path), source=str(path))


def parse_nodes_option(value: int | str | Path) -> int | Path:
    """``--nodes`` as given: a positive integer (the node count) or a path to a node-list file."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        count = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        count = int(value.strip())
    else:
        path = Path(value)
        if not path.is_file():
            raise OptionError(f"--nodes {value}: neither a node count nor an existing node-list file")
        return path
    if count < 1:
        raise OptionError(f"--nodes must be a node count >= 1 or a node-list file, got {value!r}")
    return count


def _original_ids(graph: Graph) -> np.ndarray:
    return np.arange(graph.num_nodes, dtype=np.int64) if graph.node_ids is None else np.asarray(graph.node_ids)


def covers(graph: Graph, declared: np.ndarray) -> bool:
    """True when every node of ``graph`` (by original id) is among ``declared``."""
    return _positions(_original_ids(graph), declared) is not None


def _positions(ids: np.ndarray, declared: np.ndarray) -> np.ndarray | None:
    """Position of each id in ``declared`` (compared as integers when both are, else as strings); None if any
    id is missing."""
    if np.issubdtype(ids.dtype, np.integer) and np.issubdtype(declared.dtype, np.integer):
        a, b = ids.astype(np.int64), declared.astype(np.int64)
    else:
        a, b = ids.astype(str), declared.astype(str)
    order = np.argsort(b, kind="stable")
    where = np.clip(np.searchsorted(b[order], a), 0, max(b.size - 1, 0))
    if b.size == 0 or np.any(b[order][where] != a):
        return None
    return order[where]


def declare_nodes(graph: Graph, declared: int | np.ndarray, *, source: str) -> Graph:
    """``graph`` re-indexed onto the declared node set; ``node_set`` then names ``source``.

    ``declared`` is a node count (ids ``0..N-1``) or an array of node ids in the owner's order. Edges whose
    endpoints are not declared are errors naming the id; features and labels follow their nodes (labels of newly
    declared nodes are -1).
    """
    ids = _original_ids(graph)
    if isinstance(declared, (int, np.integer)):
        count = int(declared)
        if not np.issubdtype(ids.dtype, np.integer):
            raise GraphValidationError(f"{source}: a node count needs integer node ids 0..N-1, but the graph's ids "
                                       f"are strings (e.g. {ids[0]!s}); declare the nodes with a node-list file")
        top = int(ids.max()) if ids.size else -1
        if top >= count or (ids.size and int(ids.min()) < 0):
            # Files numbered from 1 (Network Repository, many SNAP-derived sets) are the common case of this.
            hint = (f"; if the file numbers its nodes from 1, declare them with a node-list file of the ids "
                    f"1..{count}" if top == count and int(ids.min()) >= 1 else "")
            raise GraphValidationError(f"{source}: the edges name node {top}, outside the declared "
                                       f"0..{count - 1}{hint}")
        new_index, new_ids, total = ids.astype(np.int64), None, count
    else:
        declared = np.asarray(declared)
        positions = _positions(ids, declared)
        if positions is None:
            missing = [i for i in ids.tolist() if _positions(np.asarray([i]), declared) is None][:1]
            raise GraphValidationError(f"{source}: node {missing[0]!s} has an edge but is not in the declared "
                                       f"node list")
        new_index, total = positions.astype(np.int64), int(declared.size)
        identity = np.issubdtype(declared.dtype, np.integer) and np.array_equal(declared, np.arange(total))
        new_ids = None if identity else declared
    labels = None
    if graph.labels is not None:
        labels = np.full(total, -1, dtype=np.int64)
        labels[new_index] = graph.labels
    if graph.features is not None and total != graph.num_nodes:
        raise GraphValidationError(f"{source}: declares {total} nodes but the graph's features cover "
                                   f"{graph.num_nodes}; declare the node set before attaching features")
    features = graph.features if graph.features is None else graph.features[np.argsort(new_index)]
    edges = new_index[graph.edges] if graph.num_edges else graph.edges
    out, _ = Graph.from_edges(total, edges, features=features, labels=labels, node_ids=new_ids, name=graph.name,
                              node_set=source)
    return out
