"""GEXF via networkx (see :mod:`graphrelease.io._nx` for the label / feature attribute convention)."""

from __future__ import annotations

from pathlib import Path

from graphrelease.graph import CleaningReport, Graph
from graphrelease.io._nx import read_with, to_networkx


def _read(path: Path):
    import networkx as nx

    return nx.read_gexf(path, node_type=None)


def read_gexf(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    return read_with(_read, path, fmt="gexf", name=name)


def write_gexf(graph: Graph, path: Path) -> None:
    import networkx as nx

    from graphrelease.errors import OptionError

    if graph.node_set_inferred:  # GEXF drops graph attributes: the file would read back as a declared node set
        raise OptionError(f"{path}: the graph's node set was read off its edges and GEXF cannot record that; write "
                          "csv, npz, GraphML or GML, or declare the nodes first (--nodes)")

    nx.write_gexf(to_networkx(graph), Path(path))
