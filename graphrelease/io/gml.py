"""GML via networkx; nodes are keyed by their mandatory ``id`` (not the optional display ``label``)."""

from __future__ import annotations

from pathlib import Path

from graphrelease.graph import CleaningReport, Graph
from graphrelease.io._nx import read_with, to_networkx


def _read(path: Path):
    import networkx as nx

    return nx.read_gml(path, label=None)


def read_gml(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    return read_with(_read, path, fmt="gml", name=name)


def write_gml(graph: Graph, path: Path) -> None:
    import networkx as nx

    nx.write_gml(to_networkx(graph), Path(path))
