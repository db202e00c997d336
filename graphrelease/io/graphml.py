"""GraphML via networkx (see :mod:`graphrelease.io._nx` for the label / feature attribute convention)."""

from __future__ import annotations

from pathlib import Path

from graphrelease.graph import CleaningReport, Graph
from graphrelease.io._nx import read_with, to_networkx


def _read(path: Path):
    import networkx as nx

    return nx.read_graphml(path)


def read_graphml(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    return read_with(_read, path, fmt="graphml", name=name)


def write_graphml(graph: Graph, path: Path) -> None:
    import networkx as nx

    nx.write_graphml(to_networkx(graph), Path(path))
