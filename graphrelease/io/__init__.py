"""Reading and writing graphs: one module per format, format sniffing, clear errors.

Public API::

    read_graph(path, fmt=None, *, features=None, labels=None, directed=None, **opts) -> LoadResult
    write_graph(data, path, fmt=None)
    load_default_graph() -> Graph            # the embedded Cora (graphrelease/data/cora.npz)
    sniff_format(path) -> str                # one of FORMATS

Every reader returns canonical data (undirected, no self-loops, no duplicates, nodes ``0..n-1`` with original ids
kept in ``node_ids``) plus a :class:`~graphrelease.graph.CleaningReport` counting what was dropped. Nothing is ever
unpickled: ``.npz`` loads with ``allow_pickle=False`` and ``.pt`` with ``torch.load(weights_only=True)``.

Example
-------
>>> g = load_default_graph()
>>> g.num_nodes, g.num_edges, g.num_features, g.num_classes
(2708, 5278, 1433, 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrelease.errors import GraphValidationError, InputFormatError, OptionError, UserError
from graphrelease.graph import CleaningReport, Graph, GraphCollection, GraphLike
from graphrelease.io.sniff import FORMATS, sniff_format

__all__ = ["FORMATS", "LoadResult", "load_default_graph", "read_default_graph", "read_graph", "sniff_format", "write_graph"]

_EDGELIST_OPTIONS = ("delimiter", "header", "id_type", "nodes")


@dataclass(frozen=True)
class LoadResult:
    """What a reader produced: the data, the format it was read as, what cleaning changed, and the source path."""

    data: GraphLike
    format: str
    report: CleaningReport
    path: str | None = None

    @property
    def is_collection(self) -> bool:
        return isinstance(self.data, GraphCollection)


def _check_format(fmt: str | None) -> str | None:
    if fmt is None:
        return None
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise OptionError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return fmt


def _read(path: Path, fmt: str, directed: bool | None, opts: dict[str, Any]) -> tuple[GraphLike, CleaningReport]:
    if opts.get("nodes") is None:
        opts.pop("nodes", None)
    elif fmt not in ("edgelist", "csv", "tsv"):
        raise OptionError(f"--nodes applies to edge lists; a {fmt} input declares its nodes itself (npz/pt: a "
                          f"'num_nodes' entry or one feature row per node; GraphML/GEXF/GML: node elements; TU: the "
                          f"graph indicator; a graph directory: a nodes=N header in each edge list; MatrixMarket: "
                          f"the header's size)")
    unexpected = set(opts) - set(_EDGELIST_OPTIONS)
    if unexpected or (opts and fmt not in ("edgelist", "csv", "tsv")):
        raise OptionError(f"options {sorted(opts)} apply only to edge lists (allowed: {', '.join(_EDGELIST_OPTIONS)})")
    if fmt in ("edgelist", "csv", "tsv"):
        from graphrelease.io.edgelist import read_edgelist

        # The extension names a family, not the separator: a ".csv" with semicolons is common (European locales),
        # so the separator is sniffed from the first data line either way; --delimiter-style options still win.
        return read_edgelist(path, directed=directed, **opts)
    if fmt == "npz":
        from graphrelease.io.npz import read_npz

        return read_npz(path)
    if fmt == "tu":
        from graphrelease.io.tudataset import read_tu

        return read_tu(path)
    if fmt == "pt":
        from graphrelease.io.pyg import read_pyg

        return read_pyg(path)
    if fmt == "graphdir":
        from graphrelease.io.graphdir import read_graph_dir

        return read_graph_dir(path)
    module = __import__(f"graphrelease.io.{fmt}", fromlist=[f"read_{fmt}"])
    return getattr(module, f"read_{fmt}")(path)


def read_graph(
    path: str | Path,
    fmt: str | None = None,
    *,
    features: str | Path | None = None,
    labels: str | Path | None = None,
    directed: bool | None = None,
    **opts: Any,
) -> LoadResult:
    """Read a graph or a collection, sniffing the format unless ``fmt`` is given.

    Parameters
    ----------
    path:
        A graph file or a TU Dortmund collection directory.
    fmt:
        One of :data:`FORMATS`; overrides sniffing.
    features, labels:
        Optional node-feature / node-label files (CSV / npz / npy) joined by node id (single graphs only).
    directed:
        Declare the input directed (it is symmetrised either way; the report records it).
    opts:
        Edge-list options: ``delimiter``, ``header`` (bool), ``id_type`` (``"auto" | "int" | "str"``), ``nodes``
        (the owner's node set: a count ``N`` or a node-list file; see :mod:`graphrelease.io.nodelist`).

    A graph whose node set came from its edges has ``graph.node_set == NODE_SET_FROM_EDGES``; a features or
    labels file whose ids include every node declares the node set (its ids become the nodes).
    """
    path = Path(path)
    fmt = _check_format(fmt) or sniff_format(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    try:
        data, report = _read(path, fmt, directed, dict(opts))
        notes = list(report.notes)
        if (features is not None or labels is not None) and isinstance(data, GraphCollection):
            raise OptionError("--features/--labels apply to single graphs, not to collections")
        if features is not None:
            from graphrelease.io.sidecar import attach_features, declare_from_sidecar

            data, extra = attach_features(declare_from_sidecar(data, Path(features), "features"), Path(features))
            notes += extra
        if labels is not None:
            from graphrelease.io.sidecar import attach_labels, declare_from_sidecar

            data, extra = attach_labels(declare_from_sidecar(data, Path(labels), "labels"), Path(labels))
            notes += extra
    except (InputFormatError, GraphValidationError) as err:
        if str(path) in str(err) or (features and str(features) in str(err)) or (labels and str(labels) in str(err)):
            raise
        raise type(err)(f"{path}: {err}") from err
    except UserError:
        raise
    except MemoryError as err:
        raise InputFormatError(f"{path}: too large to load into memory") from err
    if directed is not None:
        report = CleaningReport(**{**report.__dict__, "directed_input": directed})
    report = CleaningReport(**{**report.__dict__, "notes": tuple(notes)})
    return LoadResult(data=data, format=fmt, report=report, path=str(path))


_WRITE_BY_EXTENSION = {
    ".csv": "csv",
    ".txt": "csv",
    ".edges": "csv",
    ".tsv": "tsv",
    ".npz": "npz",
    ".graphml": "graphml",
    ".gml": "gml",
    ".gexf": "gexf",
    ".pt": "pt",
}
_EXTENSION_BY_FORMAT = {"csv": ".csv", "edgelist": ".csv", "tsv": ".tsv", "npz": ".npz", "graphml": ".graphml",
                        "gml": ".gml", "gexf": ".gexf", "pt": ".pt"}


def _write_one(graph: Graph, path: Path, fmt: str) -> None:
    if fmt in ("csv", "edgelist", "tsv"):
        from graphrelease.io.edgelist import write_edgelist

        write_edgelist(graph, path, delimiter="\t" if fmt == "tsv" else ",")
    elif fmt == "npz":
        from graphrelease.io.npz import write_npz

        write_npz(graph, path)
    elif fmt == "pt":
        from graphrelease.io.pyg import write_pyg

        write_pyg(graph, path)
    else:
        module = __import__(f"graphrelease.io.{fmt}", fromlist=[f"write_{fmt}"])
        getattr(module, f"write_{fmt}")(graph, path)


def write_graph(data: GraphLike, path: str | Path, fmt: str | None = None) -> Path:
    """Write a graph (edge-list CSV/TSV, npz, GraphML, GML, GEXF, PyG .pt) or a collection.

    Collections go to a directory: ``fmt="tu"`` (default) writes the TU Dortmund files; any single-graph format
    writes ``graph_000.<ext>``, ``graph_001.<ext>``, ... plus ``graph_labels.csv`` when there are graph labels.
    Edge lists never carry original node ids (nodes are ``0..n-1``). Returns the path written.
    """
    path = Path(path)
    fmt = _check_format(fmt)
    if fmt == "mtx":
        raise OptionError("MatrixMarket is read-only here; write csv, npz or graphml")
    if isinstance(data, GraphCollection):
        fmt = fmt or "tu"
        if fmt == "tu":
            from graphrelease.io.tudataset import write_tu

            write_tu(data, path)
            return path
        if fmt == "graphdir":
            fmt = "csv"
        path.mkdir(parents=True, exist_ok=True)
        ext = _EXTENSION_BY_FORMAT[fmt]
        for i, graph in enumerate(data.graphs):
            _write_one(graph, path / f"graph_{i:03d}{ext}", fmt)
        if data.graph_labels is not None:
            rows = "".join(f"graph_{i:03d},{int(lab)}\n" for i, lab in enumerate(data.graph_labels))
            (path / "graph_labels.csv").write_text("graph,label\n" + rows, encoding="utf-8")
        return path
    if not isinstance(data, Graph):
        raise OptionError(f"write_graph needs a Graph or GraphCollection, got {type(data).__name__}")
    if fmt is None:
        suffix = path.suffixes[-2].lower() if path.suffix == ".gz" and len(path.suffixes) > 1 else path.suffix.lower()
        fmt = _WRITE_BY_EXTENSION.get(suffix)
        if fmt is None:
            raise OptionError(
                f"cannot tell the output format from {path.name!r}; use a .csv/.tsv/.npz/.graphml/.gml/.gexf/.pt "
                f"name or pass fmt"
            )
    if fmt in ("tu", "graphdir"):
        raise OptionError(f"format {fmt!r} is for collections; write a single graph as csv, npz or graphml")
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    _write_one(data, path, fmt)
    return path


DEFAULT_GRAPH = "graphrelease/data/cora.npz"


def read_default_graph() -> LoadResult:
    """:func:`load_default_graph` as a :class:`LoadResult` (for ``graphrelease inspect --default``)."""
    from graphrelease.io.npz import load_npz_archive, parse_npz

    # Package data beside the sources (importlib.resources trips over setuptools' editable-install finder).
    content = (Path(__file__).resolve().parents[1] / "data" / "cora.npz").read_bytes()
    with load_npz_archive(content, DEFAULT_GRAPH) as archive:
        graph, report = parse_npz(archive, source=DEFAULT_GRAPH, name="cora")
    return LoadResult(data=graph, format="npz", report=report, path=DEFAULT_GRAPH)


def load_default_graph() -> Graph:
    """The embedded default graph: Cora (2,708 nodes, 5,278 edges, 1,433 features, 7 classes; see data/ATTRIBUTION.md)."""
    return read_default_graph().data  # type: ignore[return-value]
