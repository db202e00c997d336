"""TU Dortmund graph collections (Morris et al., TUDataset, 2020): a directory of ``NAME_*.txt`` files.

``NAME_A.txt`` holds 1-based ``u, v`` node pairs (usually both directions), ``NAME_graph_indicator.txt`` the 1-based
graph of every node, ``NAME_graph_labels.txt`` one label per graph; optional ``NAME_node_labels.txt`` (one int per
node, becomes ``Graph.labels``) and ``NAME_node_attributes.txt`` (comma-separated floats, becomes
``Graph.features``). Graph and node labels that are not already ``0..k-1`` (ENZYMES uses 1..6, MUTAG variants use
-1/1 or 0/2) are renumbered ``0..k-1`` in sorted order, with a note: class indices must be contiguous, and -1 means
"unknown" in a :class:`Graph`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import CleaningReport, Graph, GraphCollection
from graphrelease.io._common import ensure_text, read_bytes
from graphrelease.io.table import numeric_table, split_table


def find_tu_name(directory: Path) -> str | None:
    """The dataset name if ``directory`` holds exactly one ``*_A.txt`` with its graph indicator, else ``None``."""
    candidates = sorted(p.name[: -len("_A.txt")] for p in Path(directory).glob("*_A.txt"))
    candidates = [c for c in candidates if (Path(directory) / f"{c}_graph_indicator.txt").is_file()]
    return candidates[0] if len(candidates) == 1 else None


def _table(path: Path, **kwargs) -> np.ndarray:
    return numeric_table(ensure_text(read_bytes(path), str(path)), source=str(path), delimiter=",", **kwargs)


def _int_column(path: Path, *, what: str, allow_negative: bool = False) -> np.ndarray:
    return _table(path, min_columns=1, what=what, allow_negative=allow_negative)[:, 0]


def _line(path: Path, row: int) -> str:
    """'line N' of data row ``row`` (error path only: re-reads the file)."""
    table = split_table(read_bytes(path), source=str(path), delimiter=",")
    return f"line {table.line_of_row(row)}"


def _relabel(values: np.ndarray, what: str, notes: list[str]) -> np.ndarray:
    """Renumber labels to ``0..k-1`` (sorted) unless they already are exactly that."""
    uniq, inverse = np.unique(values, return_inverse=True)
    if not np.array_equal(uniq, np.arange(uniq.size)):
        notes.append(f"{what} renumbered: " + ", ".join(f"{int(u)}->{i}" for i, u in enumerate(uniq)))
        return inverse.astype(np.int64)
    return values


def read_tu(directory: Path, *, name: str | None = None) -> tuple[GraphCollection, CleaningReport]:
    """Read a TU Dortmund collection directory into a :class:`GraphCollection`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputFormatError(f"{directory}: not a directory (TU collections are directories of NAME_*.txt files)")
    dataset = find_tu_name(directory)
    if dataset is None:
        raise InputFormatError(
            f"{directory}: no TU Dortmund collection here: expected exactly one NAME_A.txt with "
            f"NAME_graph_indicator.txt beside it"
        )
    base = directory / dataset
    notes: list[str] = []
    a_path = Path(f"{base}_A.txt")
    pairs = _table(a_path, min_columns=2, what="node id")[:, :2]
    indicator = _int_column(Path(f"{base}_graph_indicator.txt"), what="graph id")
    num_nodes = indicator.size
    if pairs.size and pairs.min() < 1:
        bad = int(np.argmax((pairs < 1).any(axis=1)))
        raise InputFormatError(f"{a_path}, {_line(a_path, bad)}: node id 0; TU node ids are 1-based")
    if pairs.size and pairs.max() > num_nodes:
        bad = int(np.argmax((pairs > num_nodes).any(axis=1)))
        raise InputFormatError(
            f"{a_path}, {_line(a_path, bad)}: node id {int(pairs[bad].max())} but the graph indicator "
            f"lists only {num_nodes} nodes"
        )
    if indicator.min() < 1:
        raise InputFormatError(f"{base}_graph_indicator.txt: graph id {int(indicator.min())}; graph ids are 1-based")
    num_graphs = int(indicator.max())
    sizes = np.bincount(indicator - 1, minlength=num_graphs)
    if np.any(sizes == 0):
        empty = int(np.argmax(sizes == 0)) + 1
        raise GraphValidationError(
            f"{base}_graph_indicator.txt: graph {empty} of {num_graphs} has no nodes (empty graph in the collection)"
        )
    pairs = pairs - 1
    graph_of = indicator - 1
    gu, gv = graph_of[pairs[:, 0]], graph_of[pairs[:, 1]]
    if np.any(gu != gv):
        bad = int(np.argmax(gu != gv))
        raise InputFormatError(
            f"{a_path}, {_line(a_path, bad)}: edge joins graph {int(gu[bad]) + 1} and graph "
            f"{int(gv[bad]) + 1}; edges must stay inside one graph"
        )
    # Local numbering: nodes of each graph in file order, 0..size-1.
    order = np.argsort(graph_of, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    local = np.empty(num_nodes, dtype=np.int64)
    local[order] = np.arange(num_nodes) - starts[graph_of[order]]
    edge_order = np.argsort(gu, kind="stable")
    edge_splits = np.cumsum(np.bincount(gu, minlength=num_graphs))[:-1]
    local_pairs = np.split(local[pairs[edge_order]], edge_splits)
    node_split = np.cumsum(sizes)[:-1]

    node_labels = None
    if Path(f"{base}_node_labels.txt").is_file():
        node_labels = _int_column(Path(f"{base}_node_labels.txt"), what="node label", allow_negative=True)
        if node_labels.size != num_nodes:
            raise InputFormatError(
                f"{base}_node_labels.txt: {node_labels.size} labels for {num_nodes} nodes; need one per node"
            )
        node_labels = np.split(_relabel(node_labels, "node labels", notes)[order], node_split)
    features = None
    attr_path = Path(f"{base}_node_attributes.txt")
    if attr_path.is_file():
        values = _table(attr_path, min_columns=1, what="node attribute", dtype=np.float64)
        if values.shape[0] != num_nodes:
            raise InputFormatError(f"{attr_path}: {values.shape[0]} rows for {num_nodes} nodes; need one per node")
        features = np.split(values[order], node_split)
    graph_labels = None
    label_path = Path(f"{base}_graph_labels.txt")
    if label_path.is_file():
        graph_labels = _int_column(label_path, what="graph label", allow_negative=True)
        if graph_labels.size != num_graphs:
            raise InputFormatError(f"{label_path}: {graph_labels.size} labels for {num_graphs} graphs")
        graph_labels = _relabel(graph_labels, "graph labels", notes)

    graphs = []
    report = CleaningReport()
    for g in range(num_graphs):
        try:
            graph, rep = Graph.from_edges(
                int(sizes[g]),
                local_pairs[g],
                features=None if features is None else features[g],
                labels=None if node_labels is None else node_labels[g],
                name=f"{name or dataset}[{g}]",
                node_set=f"{base}_graph_indicator.txt (one row per node)",
            )
        except GraphValidationError as err:
            raise GraphValidationError(f"{directory}: graph {g + 1}: {err}") from err
        graphs.append(graph)
        report = report.merge(rep)
    collection = GraphCollection(tuple(graphs), graph_labels, name or dataset)
    return collection, CleaningReport(**{**report.__dict__, "notes": tuple(notes)})


def write_tu(collection: GraphCollection, directory: Path, *, name: str | None = None) -> None:
    """Write a collection in TU format (1-based ids, both edge directions), creating ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    dataset = name or collection.name
    offsets = np.concatenate([[0], np.cumsum([g.num_nodes for g in collection.graphs])])
    rows = []
    for g, off in zip(collection.graphs, offsets):
        e = g.edges + off + 1
        rows.append(np.concatenate([e, e[:, ::-1]]))
    pairs = np.concatenate(rows) if rows else np.zeros((0, 2), dtype=np.int64)
    _write_lines(directory / f"{dataset}_A.txt", (f"{u}, {v}" for u, v in pairs.tolist()))
    indicator = np.repeat(np.arange(1, len(collection) + 1), [g.num_nodes for g in collection.graphs])
    _write_lines(directory / f"{dataset}_graph_indicator.txt", map(str, indicator.tolist()))
    if collection.graph_labels is not None:
        _write_lines(directory / f"{dataset}_graph_labels.txt", map(str, collection.graph_labels.tolist()))
    if all(g.labels is not None for g in collection.graphs):
        labels = np.concatenate([g.labels for g in collection.graphs])
        _write_lines(directory / f"{dataset}_node_labels.txt", map(str, labels.tolist()))
    if all(g.features is not None for g in collection.graphs):
        feats = np.concatenate([g.dense_features() for g in collection.graphs])
        _write_lines(
            directory / f"{dataset}_node_attributes.txt", (", ".join(repr(float(v)) for v in row) for row in feats)
        )


def _write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
