"""Shared conversion between networkx graphs and :class:`Graph` for the XML / GML readers and writers.

Conventions (used by our writers, understood by our readers): nodes are written as ``0..n-1``; a node attribute
``y`` holds the class label (-1 unknown) and attributes ``x0..x{d-1}`` the feature vector. Other attributes are
ignored. Original node identifiers of foreign files are kept in ``node_ids`` unless they are exactly ``0..n-1``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import NODE_SET_FROM_EDGES, CleaningReport, Graph

if TYPE_CHECKING:
    import networkx as nx

_FEATURE_RE = re.compile(r"^x(\d+)$")
#: Graph attribute our writers set when the node set was read off the edges.
NODE_SET_ATTRIBUTE = "graphrelease_node_set"


def _as_int(value: object) -> int | None:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
        return int(value)
    return None


def _edges_name_only_declared_nodes(path: Path, fmt: str) -> bool:
    """GraphML / GEXF: does every edge endpoint have its own ``<node>`` element? networkx silently adds the endpoints
    of edges to undeclared nodes, and then the node set came partly from the edges. GML is always declared: networkx
    refuses an edge to an undefined node."""
    if fmt == "gml":
        return True
    import xml.etree.ElementTree as ET

    ids: set[str] = set()
    ends: set[str] = set()
    for _, elem in ET.iterparse(str(path), events=("end",)):
        tag = elem.tag.rsplit("}", 1)[-1]
        if tag == "node" and "id" in elem.attrib:
            ids.add(elem.attrib["id"])
        elif tag == "edge":
            ends.update(elem.attrib.get(k) for k in ("source", "target") if k in elem.attrib)
        if tag in ("node", "edge"):
            elem.clear()
    return ends <= ids


def from_networkx(nxg: "nx.Graph", *, source: str, name: str, nodes_declared: bool = True
                  ) -> tuple[Graph, CleaningReport]:
    """``nodes_declared``: every node of the file has its own node element (see
    :func:`_edges_name_only_declared_nodes`); otherwise the node set came partly from the edges."""
    nodes = list(nxg.nodes())
    if not nodes:
        raise GraphValidationError(f"{source}: empty graph (no nodes)")
    as_ints = [_as_int(v) for v in nodes]
    notes: list[str] = []
    if all(v is not None for v in as_ints) and sorted(as_ints) == list(range(len(nodes))):
        order = sorted(range(len(nodes)), key=lambda i: as_ints[i])
        nodes = [nodes[i] for i in order]
        node_ids = None
    else:
        node_ids = np.array([str(v) for v in nodes])
        notes.append(f"node ids mapped to 0..{len(nodes) - 1} in file order (original ids kept as node_ids)")
    index = {v: i for i, v in enumerate(nodes)}
    pairs = np.array([(index[u], index[v]) for u, v, *_ in nxg.edges], dtype=np.int64).reshape(-1, 2)
    attrs = [nxg.nodes[v] for v in nodes]
    labels = None
    if attrs and all("y" in a and _as_int(a["y"]) is not None for a in attrs):
        labels = np.array([_as_int(a["y"]) for a in attrs], dtype=np.int64)
    features = None
    dims = sorted({int(m.group(1)) for a in attrs for k in a if (m := _FEATURE_RE.match(str(k)))})
    if dims:
        if dims != list(range(len(dims))) or not all(all(f"x{d}" in a for d in dims) for a in attrs):
            raise InputFormatError(f"{source}: feature attributes x0..x{dims[-1]} are missing on some nodes")
        try:
            features = np.array([[float(a[f"x{d}"]) for d in dims] for a in attrs], dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InputFormatError(f"{source}: non-numeric feature attribute ({err})") from err
    try:
        graph, report = Graph.from_edges(
            len(nodes),
            pairs,
            features=features,
            labels=labels,
            node_ids=node_ids,
            name=name,
            directed_input=nxg.is_directed(),
            node_set=(f"the node elements listed in {source}" if nodes_declared
                      and nxg.graph.get(NODE_SET_ATTRIBUTE) != NODE_SET_FROM_EDGES else NODE_SET_FROM_EDGES),
        )
    except GraphValidationError as err:
        raise GraphValidationError(f"{source}: {err}") from err
    if nxg.is_multigraph():
        notes.append("multigraph: parallel edges merged")
    return graph, CleaningReport(**{**report.__dict__, "notes": report.notes + tuple(notes)})


def to_networkx(graph: Graph) -> "nx.Graph":
    import networkx as nx

    nxg = nx.Graph(name=graph.name)
    if graph.node_set_inferred:  # GraphML and GML keep graph attributes: the provenance survives a round trip
        nxg.graph[NODE_SET_ATTRIBUTE] = NODE_SET_FROM_EDGES
    dense = graph.dense_features()
    for i in range(graph.num_nodes):
        attrs: dict[str, object] = {}
        if graph.labels is not None:
            attrs["y"] = int(graph.labels[i])
        if dense is not None:
            attrs.update({f"x{d}": float(v) for d, v in enumerate(dense[i])})
        nxg.add_node(i, **attrs)
    nxg.add_edges_from(graph.edges.tolist())
    return nxg


def read_with(
    reader: Callable[[Path], "nx.Graph"], path: Path, *, fmt: str, name: str | None
) -> tuple[Graph, CleaningReport]:
    """Run a networkx reader, turning its many parse exceptions into one clean InputFormatError."""
    import xml.etree.ElementTree as ET

    import networkx as nx

    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file")
    try:
        nxg = reader(path)
    except (nx.NetworkXError, ET.ParseError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError,
            AttributeError, EOFError, OSError) as err:
        raise InputFormatError(f"{path}: cannot parse as {fmt} ({type(err).__name__}: {err})") from err
    try:
        declared = _edges_name_only_declared_nodes(path, fmt)
    except ET.ParseError:  # networkx read it (e.g. gzip-wrapped); without our own parse nothing is declared
        declared = False
    return from_networkx(nxg, source=str(path), name=name or path.stem.removesuffix(f".{fmt}"),
                         nodes_declared=declared)
