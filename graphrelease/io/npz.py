"""gnn-benchmark ``.npz`` graphs (shchur/gnn-benchmark layout), loaded with ``allow_pickle=False``.

Keys read: the CSR adjacency ``adj_data, adj_indices, adj_indptr, adj_shape`` (or, for convenience, ``edges``
``(m, 2)`` / ``edge_index`` ``(2, m)`` plus ``num_nodes``); optional CSR features ``attr_data, attr_indices,
attr_indptr, attr_shape`` or a dense ``attr_matrix`` / ``features``; optional ``labels`` (int, -1 unknown);
optional ``node_ids``. Object (pickled) arrays are refused.

Example
-------
>>> import io as _io
>>> buf = _io.BytesIO(); np.savez(buf, edges=np.array([[0, 1], [1, 2]]), num_nodes=3); _ = buf.seek(0)
>>> g, report = parse_npz(np.load(buf, allow_pickle=False), source="<bytes>")
>>> g.num_nodes, g.num_edges
(3, 2)
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import NODE_SET_FROM_EDGES, CleaningReport, Graph

_ADJ_KEYS = ("adj_data", "adj_indices", "adj_indptr", "adj_shape")
_ATTR_KEYS = ("attr_data", "attr_indices", "attr_indptr", "attr_shape")


def array_from_archive(archive: Mapping[str, np.ndarray], key: str, source: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as err:  # numpy refuses object arrays when allow_pickle=False
        raise InputFormatError(
            f"{source}: array '{key}' is a pickled object array; refusing to unpickle (save plain numeric arrays)"
        ) from err
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise InputFormatError(f"{source}: array '{key}' is corrupt ({err})") from err


def csr_from_archive(archive: Mapping[str, np.ndarray], keys: tuple[str, ...], source: str) -> sp.csr_matrix:
    data, indices, indptr, shape = (array_from_archive(archive, k, source) for k in keys)
    try:
        matrix = sp.csr_matrix((data, indices, indptr), shape=tuple(int(s) for s in shape))
        matrix.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as err:
        raise InputFormatError(f"{source}: {keys[0].split('_')[0]}_* arrays do not form a valid CSR matrix ({err})") from err
    return matrix


def _declared_by_node_data(node_set: str, source: str, features, labels, num_nodes: int) -> str:
    """Per-node arrays with one row per node declare the node set even when the edges alone would not."""
    if node_set != NODE_SET_FROM_EDGES:
        return node_set
    if features is not None and features.shape[0] == num_nodes:
        return f"the feature rows in {source}"
    if labels is not None and labels.shape[0] == num_nodes:
        return f"the labels in {source}"
    return node_set


def parse_npz(archive: Mapping[str, np.ndarray], *, source: str, name: str = "graph") -> tuple[Graph, CleaningReport]:
    """Build a :class:`Graph` from an opened (pickle-free) npz archive."""
    keys = set(archive.keys()) if hasattr(archive, "keys") else set(archive)
    notes: list[str] = []
    if set(_ADJ_KEYS) <= keys:
        adj = csr_from_archive(archive, _ADJ_KEYS, source)
        if adj.shape[0] != adj.shape[1]:
            raise InputFormatError(f"{source}: adjacency is {adj.shape[0]}x{adj.shape[1]}, expected square")
        num_nodes = adj.shape[0]
        node_set = f"the adjacency matrix's shape in {source}"
        adj.eliminate_zeros()
        if adj.nnz and not np.all(adj.data == 1):
            notes.append("edge weights ignored (non-zero entries are edges)")
        coo = adj.tocoo()
        pairs = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
        symmetric = (adj != adj.T).nnz == 0
        if symmetric:
            # A symmetric matrix stores every edge twice by design: read one triangle (plus the diagonal, so
            # self-loops are still counted) so the report does not call every edge a merged reverse copy.
            pairs = pairs[pairs[:, 0] <= pairs[:, 1]]
        directed = not symmetric
    elif "edges" in keys or "edge_index" in keys:
        raw = array_from_archive(archive, "edges" if "edges" in keys else "edge_index", source)
        if "edge_index" in keys and "edges" not in keys:
            raw = np.asarray(raw).T
        raw = np.asarray(raw)
        if raw.ndim != 2 or raw.shape[1] != 2 or not np.issubdtype(raw.dtype, np.integer):
            raise InputFormatError(f"{source}: 'edges' must be an (m, 2) integer array, got {raw.dtype} {raw.shape}")
        pairs = raw.astype(np.int64)
        if pairs.size and pairs.min() < 0:
            raise InputFormatError(f"{source}: negative node index {int(pairs.min())} in 'edges'")
        if "num_nodes" in keys:
            num_nodes = int(array_from_archive(archive, "num_nodes", source))
            node_set = f"'num_nodes' in {source}"
        else:
            num_nodes = int(pairs.max()) + 1 if pairs.size else 0
            node_set = NODE_SET_FROM_EDGES
        directed = False
    else:
        raise InputFormatError(
            f"{source}: not a gnn-benchmark npz: found keys {sorted(keys) or 'none'}, expected "
            f"{', '.join(_ADJ_KEYS)} (or 'edges' + 'num_nodes')"
        )
    if num_nodes <= 0:
        raise GraphValidationError(f"{source}: empty graph (0 nodes)")
    features = None
    if set(_ATTR_KEYS) <= keys:
        features = csr_from_archive(archive, _ATTR_KEYS, source)
    elif "attr_matrix" in keys or "features" in keys:
        features = np.asarray(array_from_archive(archive, "attr_matrix" if "attr_matrix" in keys else "features", source))
    elif any(k in keys for k in _ATTR_KEYS):
        raise InputFormatError(f"{source}: incomplete feature keys; need all of {', '.join(_ATTR_KEYS)}")
    if features is not None:
        if not np.issubdtype(features.dtype, np.number):
            raise InputFormatError(f"{source}: features have non-numeric dtype {features.dtype}")
        values = features.data if sp.issparse(features) else features
        if not np.all(np.isfinite(values)):
            raise GraphValidationError(f"{source}: features contain NaN or infinite values")
    labels = None
    if "labels" in keys:
        labels = np.asarray(array_from_archive(archive, "labels", source))
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise InputFormatError(f"{source}: 'labels' must be a 1-D integer array, got {labels.dtype} {labels.shape}")
    node_ids = np.asarray(array_from_archive(archive, "node_ids", source)) if "node_ids" in keys else None
    inferred = "node_set_inferred" in keys and bool(np.asarray(array_from_archive(archive, "node_set_inferred",
                                                                                   source)))
    try:
        graph, report = Graph.from_edges(
            num_nodes, pairs, features=features, labels=labels, node_ids=node_ids, name=name, directed_input=directed,
            node_set=NODE_SET_FROM_EDGES if inferred else _declared_by_node_data(node_set, source, features, labels,
                                                                                  num_nodes),
        )
    except GraphValidationError as err:
        raise GraphValidationError(f"{source}: {err}") from err
    return graph, CleaningReport(**{**report.__dict__, "notes": report.notes + tuple(notes)})


def load_npz_archive(content: bytes | Path, source: str):
    """``np.load`` with pickling disabled and clean errors for non-zip or corrupt files."""
    if isinstance(content, bytes):
        head = content[:6]
    else:
        try:
            with open(content, "rb") as fh:
                head = fh.read(6)
        except OSError as err:
            raise InputFormatError(f"{source}: cannot read ({err.strerror or err})") from err
    if head.startswith(b"\x93NUMPY"):
        raise InputFormatError(f"{source}: is a single .npy array, expected an .npz archive of named arrays")
    if not head.startswith(b"PK"):
        raise InputFormatError(f"{source}: not a valid .npz archive (not a zip file)")
    try:
        handle = io.BytesIO(content) if isinstance(content, bytes) else content
        archive = np.load(handle, allow_pickle=False)
    except FileNotFoundError as err:
        raise InputFormatError(f"{source}: no such file") from err
    except ValueError as err:
        raise InputFormatError(f"{source}: contains pickled data; refusing to unpickle ({err})") from err
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise InputFormatError(f"{source}: not a valid .npz archive ({err})") from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InputFormatError(f"{source}: is a single .npy array, expected an .npz archive of named arrays")
    return archive


def read_npz(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    path = Path(path)
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file")
    with load_npz_archive(path, str(path)) as archive:
        return parse_npz(archive, source=str(path), name=name or path.stem)


def write_npz(graph: Graph, path: Path) -> None:
    """Write the gnn-benchmark layout (upper+lower CSR adjacency, CSR features, labels, node ids if any)."""
    adj = graph.to_csr()
    arrays: dict[str, np.ndarray] = {
        "adj_data": np.asarray(adj.data, dtype=np.float32),
        "adj_indices": np.asarray(adj.indices, dtype=np.int32 if graph.num_nodes < 2**31 else np.int64),
        "adj_indptr": np.asarray(adj.indptr, dtype=np.int64),
        "adj_shape": np.array(adj.shape, dtype=np.int64),
    }
    if graph.node_set_inferred:  # keep the provenance: the adjacency's shape must not read back as a declaration
        arrays["node_set_inferred"] = np.array(True)
    if graph.features is not None:
        x = sp.csr_matrix(graph.features)
        arrays.update(
            attr_data=x.data.astype(np.float32),
            attr_indices=x.indices.astype(np.int32),
            attr_indptr=x.indptr.astype(np.int64),
            attr_shape=np.array(x.shape, dtype=np.int64),
        )
    if graph.labels is not None:
        arrays["labels"] = np.asarray(graph.labels, dtype=np.int64)
    if graph.node_ids is not None:
        ids = np.asarray(graph.node_ids)
        arrays["node_ids"] = ids if ids.dtype.kind in "iuU" else ids.astype(str)
    with open(Path(path), "wb") as handle:
        np.savez_compressed(handle, **arrays)
