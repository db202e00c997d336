"""What the audit reads: release directories, graph files or graphs, and the checks that they come from the input.

A *release* is a release directory (``certificate.json``, ``manifest.json``, ``graphs/*``) or a plain graph file or
an in-memory :class:`~graphrelease.graph.Graph`. Synthetic graphs of a collection release inherit graph labels only
when the release has ``graphs/graph_labels.csv`` (``graph,label`` rows, one per synthetic graph file in sorted
order).

An audit of a release against an input it was not made from gives confident-looking numbers about nothing, so
:func:`check_releases_match` refuses a node-count mismatch (unless overridden) and, given the owner's input-binding
keys, a certificate whose HMAC does not match the original.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError, OptionError
from graphrelease.graph import Graph, GraphCollection

GRAPH_SUFFIXES = (".csv", ".tsv", ".txt", ".edges", ".edgelist", ".gz", ".npz", ".graphml", ".gml", ".gexf", ".pt")

@dataclass
class ReleaseInput:
    """One release as the audit sees it: its graphs and what its certificate claims."""

    label: str
    graphs: list[Graph]
    path: str | None = None
    certificate: dict[str, Any] | None = None
    graph_labels: np.ndarray | None = None
    method: str | None = None
    mode: str | None = None
    epsilon: float | None = None
    delta: float | None = None
    guarantee: str | None = None
    guarantee_reason: str | None = None
    adjacency: str | None = None
    #: Problems found re-hashing the release against its manifest (empty: intact; None: no manifest).
    integrity: list[str] | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "label": self.label, "path": self.path, "method": self.method, "mode": self.mode,
            "epsilon": self.epsilon, "delta": self.delta, "guarantee": self.guarantee,
            "guarantee_reason": self.guarantee_reason, "adjacency": self.adjacency,
            "num_graphs": len(self.graphs),
            "num_nodes": [g.num_nodes for g in self.graphs[:1]][0] if self.graphs else None,
            "num_edges": [g.num_edges for g in self.graphs[:1]][0] if self.graphs else None,
            "graph_labels": self.graph_labels is not None,
        }


def _first(d: dict[str, Any], *keys: str) -> Any:
    """First present key, also looking one level down in common sub-objects of a certificate."""
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    for sub in ("privacy", "privacy_unit", "guarantee", "accounting", "method"):
        inner = d.get(sub)
        if isinstance(inner, dict):
            for k in keys:
                if k in inner and inner[k] is not None:
                    return inner[k]
    return None


def _float_or_none(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _read_certificate(cert: dict[str, Any], rel: ReleaseInput) -> None:
    method = _first(cert, "method", "generator", "name")
    rel.method = method if isinstance(method, str) else (method or {}).get("name") if isinstance(method, dict) else None
    mode = _first(cert, "mode")
    rel.mode = mode if isinstance(mode, str) else None
    rel.epsilon = _float_or_none(_first(cert, "epsilon"))
    rel.delta = _float_or_none(_first(cert, "delta"))
    g = cert.get("guarantee")
    if isinstance(g, dict):
        rel.guarantee = str(g.get("status") or g.get("value") or g.get("guarantee") or "") or None
        reason = g.get("reason") or g.get("reasons")
        rel.guarantee_reason = "; ".join(reason) if isinstance(reason, list) else reason
    elif g is not None:
        rel.guarantee = str(g)
        reason = cert.get("guarantee_reason") or cert.get("reason")
        rel.guarantee_reason = "; ".join(reason) if isinstance(reason, list) else reason
    adj = _first(cert, "adjacency")
    rel.adjacency = adj if isinstance(adj, str) else (adj or {}).get("name") if isinstance(adj, dict) else None


def _read_graph_file(path: Path, **opts: Any) -> Graph | GraphCollection:
    from graphrelease.io import read_graph

    return read_graph(path, **opts).data


def _read_graph_labels(path: Path, count: int) -> np.ndarray:
    rows = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    if rows and not rows[0].split(",")[0].strip().lstrip("-").isdigit():
        rows = rows[1:]
    labels = []
    for i, row in enumerate(rows):
        parts = row.split(",")
        try:
            labels.append(int(parts[-1]))
        except ValueError:
            raise InputFormatError(f"{path}: line {i + 2}: graph label '{parts[-1]}' is not an integer") from None
    if len(labels) != count:
        raise InputFormatError(f"{path}: {len(labels)} graph labels for {count} synthetic graphs")
    return np.asarray(labels, dtype=np.int64)


def load_release(source: "str | Path | Graph | GraphCollection | ReleaseInput", *, label: str | None = None
                 ) -> ReleaseInput:
    """A release directory, a graph file or an in-memory graph -> :class:`ReleaseInput`."""
    if isinstance(source, ReleaseInput):
        return source
    if isinstance(source, Graph):
        return ReleaseInput(label=label or source.name, graphs=[source])
    if isinstance(source, GraphCollection):
        return ReleaseInput(label=label or source.name, graphs=list(source.graphs), graph_labels=source.graph_labels)
    path = Path(source)
    if not path.exists():
        raise InputFormatError(f"release '{path}' does not exist (give a release directory or a graph file)")
    if path.is_file():
        data = _read_graph_file(path)
        rel = load_release(data, label=label or path.stem)
        rel.path = str(path)
        return rel
    cert_path = path / "certificate.json"
    graph_dir = path / "graphs"
    model_only = not graph_dir.is_dir() and (path / "model" / "config.json").is_file() and cert_path.is_file()
    if not graph_dir.is_dir() and not model_only:
        raise InputFormatError(
            f"'{path}' has no graphs/ directory: the audit needs a release with synthetic graphs, or a model "
            "release (model/config.json + certificate.json) for the canary audit"
        )
    graphs: list[Graph] = []
    if not model_only:
        files = sorted(p for p in graph_dir.iterdir()
                       if p.is_file() and p.name != "graph_labels.csv" and p.name.endswith(GRAPH_SUFFIXES))
        if not files:
            raise InputFormatError(f"'{graph_dir}' holds no graph files")
        for f in files:
            data = _read_graph_file(f)
            graphs.extend(data.graphs if isinstance(data, GraphCollection) else [data])
    rel = ReleaseInput(label=label or path.name, graphs=graphs, path=str(path))
    if cert_path.is_file():
        try:
            rel.certificate = json.loads(cert_path.read_text())
        except json.JSONDecodeError as err:
            raise InputFormatError(f"{cert_path}: not valid JSON ({err})") from err
        _read_certificate(rel.certificate, rel)
    if cert_path.is_file() and (path / "manifest.json").is_file():
        from graphrelease.release import check_manifest

        rel.integrity = check_manifest(path)
    labels_path = graph_dir / "graph_labels.csv"
    if not model_only and labels_path.is_file():
        rel.graph_labels = _read_graph_labels(labels_path, len(graphs))
    if label is None and rel.method:
        eps = f" eps={rel.epsilon:.3g}" if rel.epsilon is not None else ""
        rel.label = f"{rel.method}{'/' + rel.mode if rel.mode else ''}{eps} ({path.name})"
    return rel


def load_original(source: "str | Path | Graph | GraphCollection", *, nodes: "int | str | Path | None" = None,
                  input_format: str | None = None, features: "str | Path | None" = None,
                  labels: "str | Path | None" = None) -> Graph | GraphCollection:
    """The private input; ``nodes`` declares an edge list's node set (a count or a node-list file, as for synth);
    ``input_format``, ``features``, ``labels`` as for :func:`graphrelease.io.read_graph`."""
    if isinstance(source, (Graph, GraphCollection)):
        return source
    path = Path(source)
    if not path.exists():
        raise InputFormatError(f"original input '{path}' does not exist")
    opts = {k: v for k, v in {"nodes": nodes, "fmt": input_format, "features": features, "labels": labels}.items()
            if v is not None}
    return _read_graph_file(path, **opts)


# ---------------------------------------------------------------------------------------------------- matching
def _where(rel: ReleaseInput) -> str:
    return f"release '{rel.path or rel.label}'"


def check_releases_match(original: Graph | GraphCollection, releases: Sequence[ReleaseInput], *,
                         keys: Sequence[bytes | str | Path] = (), allow_mismatch: bool = False) -> list[str]:
    """Refuse releases that were not made from ``original``; return notes on what could not be checked.

    Node counts: a single-graph release samples graphs on the input's node set, so a release graph with another
    node count was made from another input (or re-sampled at another size with ``--num-nodes``): refused with
    :class:`GraphValidationError` unless ``allow_mismatch``. Collection releases hold anonymous graphs of any size,
    so only their binding can tie them to the input.

    Keys: ``keys[i]`` is the input-binding key written beside ``releases[i]`` (``<release>.key``); the certificate's
    ``input_hmac_sha256`` must match the HMAC of ``original`` under it, else :class:`GraphValidationError` (never
    overridden: a key proves the pairing, and a failed proof is not a judgement call).
    """
    notes: list[str] = []
    if keys and len(keys) != len(releases):
        raise OptionError(f"--key given {len(keys)} time(s) for {len(releases)} release(s): give one key per "
                          "release, in the order of --release (each release has its own <release>.key)")
    if isinstance(original, Graph):
        n = original.num_nodes
        for rel in releases:
            sizes = sorted({g.num_nodes for g in rel.graphs})
            if not sizes or sizes == [n]:
                continue
            shown = ", ".join(f"{s:,}" for s in sizes[:3]) + (", ..." if len(sizes) > 3 else "")
            what = (f"{_where(rel)} has graphs of {shown} nodes but the original '{original.name}' has {n:,}: it was "
                    "not made from this input")
            if not allow_mismatch:
                raise GraphValidationError(what + " (--allow-mismatch to audit it anyway, with degree-rank "
                                                  "alignment)")
            notes.append(what + "; audited anyway (--allow-mismatch): nodes aligned by degree rank")
    for rel, key in zip(releases, keys):
        from graphrelease.privacy.binding import load_key, verify_hmac

        key_bytes = bytes(key) if isinstance(key, (bytes, bytearray)) else load_key(key)
        cert = rel.certificate or {}
        stated = cert.get("input_hmac_sha256") or (cert.get("extra") or {}).get("input_hmac_sha256")
        if not stated:
            raise GraphValidationError(f"{_where(rel)}: its certificate carries no input binding "
                                       "(input_hmac_sha256), so --key cannot check it")
        if not verify_hmac(original, key_bytes, stated):
            raise GraphValidationError(f"{_where(rel)}: input binding does not match the original "
                                       f"'{original.name}' under the given --key: wrong input or wrong key")
        notes.append(f"{rel.label}: input binding (HMAC-SHA256) matches the original under the given key")
    return notes
