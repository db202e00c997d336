"""A collection stored as a directory of per-graph files (what ``write_graph(collection, dir, fmt=...)`` writes).

Files named ``graph_<number>.<ext>`` (``csv``, ``tsv``, ``txt``, ``npz``, ``graphml``, ``gml``, ``gexf``, ``pt``,
optionally ``.gz`` for text) are read in numeric order; ``graph_labels.csv`` (``graph,label`` rows, header
optional) supplies graph labels. Every graph file goes through the ordinary single-graph readers.
"""

from __future__ import annotations

import re
from pathlib import Path

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import CleaningReport, Graph, GraphCollection
from graphrelease.io._common import ensure_text, read_bytes
from graphrelease.io.table import check_rectangular, split_table, to_int64, token_array

GRAPH_FILE = re.compile(r"^graph_(\d+)\.(csv|tsv|txt|npz|graphml|gml|gexf|pt)(\.gz)?$")
LABELS_FILE = "graph_labels.csv"


def graph_files(directory: Path) -> list[Path]:
    """The per-graph files of ``directory`` in numeric order (empty if there are none)."""
    found = [(int(m.group(1)), p) for p in Path(directory).iterdir() if p.is_file() and (m := GRAPH_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def read_graph_dir(directory: Path, *, name: str | None = None) -> tuple[GraphCollection, CleaningReport]:
    from graphrelease.io import read_graph

    directory = Path(directory)
    files = graph_files(directory)
    if not files:
        raise InputFormatError(f"{directory}: no graph_<number>.<ext> files in this directory")
    graphs: list[Graph] = []
    report = CleaningReport()
    for path in files:
        result = read_graph(path)
        if not isinstance(result.data, Graph):
            raise InputFormatError(f"{path}: holds a collection; a graph directory holds one graph per file")
        graphs.append(result.data)
        report = report.merge(result.report)
    labels = None
    labels_path = directory / LABELS_FILE
    if labels_path.is_file():
        table = split_table(ensure_text(read_bytes(labels_path), str(labels_path)), source=str(labels_path))
        if table.rows and not table.rows[0][-1].lstrip(b"-").isdigit():
            table.header, table.rows, table.header_skipped = table.rows[0], table.rows[1:], True
        ncols = check_rectangular(table, min_columns=1, what="graph label")
        labels = to_int64(token_array(table, [ncols - 1]), table, what="graph label", allow_negative=True)[:, 0]
        if labels.size != len(graphs):
            raise GraphValidationError(f"{labels_path}: {labels.size} graph labels for {len(graphs)} graph files")
    collection = GraphCollection(tuple(graphs), labels, name or directory.name)
    return collection, CleaningReport(**{**report.__dict__, "notes": tuple(dict.fromkeys(report.notes))})
