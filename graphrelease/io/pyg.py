"""PyTorch Geometric ``.pt`` files, loaded with ``torch.load(weights_only=True)`` — never a general unpickler.

Accepted content: a dict with ``edge_index`` (``(2, m)`` integer tensor) and optional ``x`` (node features),
``y`` (node labels, one per node) and ``num_nodes``; a bare ``edge_index`` tensor; or a PyG ``Data`` object, for
which only PyG's plain storage classes (``Data``, ``GlobalStorage`` and its attribute records) are allow-listed.
Anything else in the pickle stream (arbitrary classes, functions) makes ``torch.load`` refuse the file.
"""

from __future__ import annotations

import pickle
import warnings
import zipfile
from pathlib import Path

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import NODE_SET_FROM_EDGES, CleaningReport, Graph


def _safe_globals() -> list:
    try:
        from torch_geometric.data import Data
        from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
        from torch_geometric.data.storage import GlobalStorage
    except ImportError:  # pragma: no cover - torch-geometric is a pinned dependency
        return []
    return [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]


def _numpy(value: object, key: str, source: str) -> np.ndarray:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    raise InputFormatError(f"{source}: '{key}' is a {type(value).__name__}, expected a tensor")


def parse_pyg_object(obj: object, *, source: str, name: str = "graph") -> tuple[Graph, CleaningReport]:
    """Build a :class:`Graph` from what ``torch.load`` returned."""
    import torch

    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, dict):
        import warnings

        with warnings.catch_warnings():  # PyG warns when it has to infer num_nodes; the edges decide below
            warnings.simplefilter("ignore")
            num_nodes = getattr(obj, "num_nodes", None)
        obj = dict(obj.to_dict())
        if num_nodes is not None:
            obj.setdefault("num_nodes", num_nodes)
    if isinstance(obj, torch.Tensor):
        obj = {"edge_index": obj}
    if not isinstance(obj, dict):
        raise InputFormatError(
            f"{source}: holds a {type(obj).__name__}; expected a dict with 'edge_index' (and optional 'x', 'y', "
            f"'num_nodes') or a PyG Data object"
        )
    if "edge_index" not in obj:
        raise InputFormatError(f"{source}: no 'edge_index' in the file (found keys: {sorted(map(str, obj))})")
    edge_index = _numpy(obj["edge_index"], "edge_index", source)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or not np.issubdtype(edge_index.dtype, np.integer):
        raise InputFormatError(
            f"{source}: 'edge_index' must be a (2, m) integer tensor, got {edge_index.dtype} {edge_index.shape}"
        )
    pairs = edge_index.T.astype(np.int64)
    if pairs.size and pairs.min() < 0:
        raise InputFormatError(f"{source}: negative node index {int(pairs.min())} in 'edge_index'")
    x = _numpy(obj["x"], "x", source) if obj.get("x") is not None else None
    y = _numpy(obj["y"], "y", source) if obj.get("y") is not None else None
    if obj.get("num_nodes") is not None:
        num_nodes = int(obj["num_nodes"])
        node_set = f"'num_nodes' in {source}"
    elif x is not None:
        num_nodes = int(x.shape[0])
        node_set = f"the rows of 'x' in {source}"
    else:
        num_nodes = int(pairs.max()) + 1 if pairs.size else 0
        node_set = f"the labels 'y' in {source}" if y is not None and y.reshape(-1).shape[0] == num_nodes else (
            NODE_SET_FROM_EDGES)
    if num_nodes <= 0:
        raise GraphValidationError(f"{source}: empty graph (0 nodes)")
    if obj.get("node_set_inferred") is not None and bool(_numpy(obj["node_set_inferred"], "node_set_inferred", source)):
        node_set = NODE_SET_FROM_EDGES
    if pairs.size and int(pairs.max()) >= num_nodes:
        raise GraphValidationError(f"{source}: edge_index refers to node {int(pairs.max())} but num_nodes={num_nodes}")
    if y is not None:
        y = y.reshape(-1)
        if not np.issubdtype(y.dtype, np.integer) or y.shape[0] != num_nodes:
            raise InputFormatError(f"{source}: 'y' must hold one integer label per node (got {y.dtype} {y.shape})")
    try:
        graph, report = Graph.from_edges(num_nodes, pairs, features=x, labels=y, name=name, node_set=node_set)
    except GraphValidationError as err:
        raise GraphValidationError(f"{source}: {err}") from err
    # edge_index stores both directions by convention; merged reverse copies are expected, not dropped data.
    return graph, report


def read_pyg(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    import torch

    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file")
    with open(path, "rb") as handle:
        head = handle.read(4)
    # torch.save writes a zip archive; very old files are a bare pickle stream (protocol 2: 0x80 0x02).
    if not (head.startswith(b"PK") or head[:1] == b"\x80"):
        raise InputFormatError(f"{path}: not a PyTorch file (expected a torch.save zip archive)")
    try:
        # A bare pickle stream of another protocol makes torch warn before it refuses; the refusal says it all.
        with torch.serialization.safe_globals(_safe_globals()), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "GLOBAL" in ln or "Unsupported" in ln), lines[0] if lines else "")
        raise InputFormatError(
            f"{path}: refusing to unpickle: the file contains objects other than tensors and plain containers "
            f"({first[:160]}); save a dict of tensors instead (e.g. data.to_dict())"
        ) from err
    except (RuntimeError, zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise InputFormatError(f"{path}: not a readable PyTorch file ({str(err).splitlines()[0][:160]})") from err
    return parse_pyg_object(obj, source=str(path), name=name or path.stem)


def write_pyg(graph: Graph, path: Path) -> None:
    """Write a plain dict of tensors (loadable with ``weights_only=True`` anywhere)."""
    import torch

    data = graph.to_pyg()
    payload = {"edge_index": data.edge_index, "num_nodes": graph.num_nodes}
    if graph.node_set_inferred:  # keep the provenance (num_nodes would otherwise read back as a declaration)
        payload["node_set_inferred"] = torch.tensor(True)
    if graph.features is not None:
        payload["x"] = data.x
    if graph.labels is not None:
        payload["y"] = data.y
    torch.save(payload, Path(path))
