"""Optional node-feature and node-label files, joined to a graph by node id.

Text files (CSV / TSV / whitespace, optional header, gzip): first column the node id (as in the edge list), then
the feature values / one label. ``.npz``: ``ids`` (optional) plus ``features`` / ``x`` (dense) or ``attr_*`` (CSR),
or ``labels`` / ``y``. ``.npy``: values in node order. Without ids, rows are taken in node order ``0..n-1``.

Rules: every feature row must match a node and every node needs a feature row; label rows must match nodes, and
nodes without a label row get -1 (unknown, noted in the report). Duplicate ids, unknown ids, NaN / inf features
are errors naming the file and line. Non-integer labels ("cat", "dog") are renumbered in sorted order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import Graph
from graphrelease.io._common import ensure_text, read_bytes
from graphrelease.io.table import Table, check_rectangular, is_int_token, split_table, to_float64, token_array


def _node_positions(graph: Graph, ids: np.ndarray, table: Table | None, source: str) -> np.ndarray:
    """Map id tokens (bytes) of a side file to node indices; unknown ids are errors naming the line."""
    def fail(row: int, token: bytes, why: str):
        where = f"{source}, line {table.line_of_row(row)}" if table is not None else source
        raise GraphValidationError(f"{where}: node id {token.decode('utf-8', 'replace')!r} {why}")

    known = graph.node_ids
    if known is None or np.issubdtype(np.asarray(known).dtype, np.integer):
        try:
            values = ids.astype(np.int64)
        except (ValueError, OverflowError):
            bad = next(i for i, t in enumerate(ids) if not is_int_token(t))
            fail(bad, ids[bad], "is not an integer, but the graph's node ids are integers")
        if known is None:
            pos = values
            bad_mask = (values < 0) | (values >= graph.num_nodes)
        else:
            order = np.argsort(known)
            sorted_ids = np.asarray(known)[order]
            where = np.clip(np.searchsorted(sorted_ids, values), 0, sorted_ids.size - 1)
            bad_mask = sorted_ids[where] != values
            pos = order[where]
    else:
        names = np.char.decode(ids, "utf-8") if ids.dtype.kind == "S" else ids.astype(str)
        known_str = np.asarray(known).astype(str)
        order = np.argsort(known_str)
        sorted_ids = known_str[order]
        where = np.clip(np.searchsorted(sorted_ids, names), 0, sorted_ids.size - 1)
        bad_mask = sorted_ids[where] != names
        pos = order[where]
    if bad_mask.any():
        bad = int(np.argmax(bad_mask))
        fail(bad, ids[bad], "does not match any node of the graph")
    counts = np.bincount(pos, minlength=graph.num_nodes)
    if counts.max() > 1:
        dup_node = int(np.argmax(counts > 1))
        bad = int(np.nonzero(pos == dup_node)[0][1])
        fail(bad, ids[bad], "appears twice")
    return pos.astype(np.int64)


_HEADER_WORDS = {b"id", b"node", b"node_id", b"nodeid", b"name", b"label", b"labels", b"target", b"class", b"y"}


def _looks_like_header(rows: list[list[bytes]], what: str) -> bool:
    first = rows[0]
    if all(t.strip(b'"').lower() in _HEADER_WORDS for t in first[:2]):
        return True
    if what == "feature":
        # Feature values are numbers: a non-numeric first row above a numeric second row is a header.
        return not all(_is_float(t) for t in first[1:]) and (len(rows) < 2 or all(_is_float(t) for t in rows[1][1:]))
    return len(rows) > 1 and not is_int_token(first[0]) and is_int_token(rows[1][0])


def _read_table(path: Path, min_columns: int, what: str) -> tuple[Table, int]:
    table = split_table(ensure_text(read_bytes(path), str(path)), source=str(path))
    if table.rows and _looks_like_header(table.rows, what):
        table.header = table.rows[0]
        table.rows = table.rows[1:]
        table.header_skipped = True
    ncols = check_rectangular(table, min_columns=min_columns, what=what)
    return table, ncols


def _is_float(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _load_array_file(path: Path, keys: tuple[str, ...]) -> tuple[np.ndarray | None, np.ndarray | sp.csr_matrix]:
    from graphrelease.io.npz import array_from_archive, csr_from_archive, load_npz_archive

    if path.suffix == ".npy":
        try:
            values = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise InputFormatError(f"{path}: contains pickled data; refusing to unpickle ({err})") from err
        except (OSError, EOFError) as err:
            raise InputFormatError(f"{path}: not a valid .npy file ({err})") from err
        return None, values
    with load_npz_archive(path, str(path)) as archive:
        names = set(archive.keys())
        ids = array_from_archive(archive, "ids", str(path)) if "ids" in names else None
        if keys[0] == "features" and {"attr_data", "attr_indices", "attr_indptr", "attr_shape"} <= names:
            return ids, csr_from_archive(archive, ("attr_data", "attr_indices", "attr_indptr", "attr_shape"), str(path))
        for key in keys:
            if key in names:
                return ids, array_from_archive(archive, key, str(path))
    raise InputFormatError(f"{path}: no array named {' / '.join(keys)} (found: {sorted(names)})")


def attach_features(graph: Graph, path: Path) -> tuple[Graph, list[str]]:
    """A copy of ``graph`` with features read from ``path`` (rows joined by node id)."""
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file (features)")
    if path.suffix in (".npz", ".npy"):
        ids, values = _load_array_file(path, ("features", "x", "attr_matrix"))
        if not sp.issparse(values):
            values = np.asarray(values)
            if values.ndim == 1:
                values = values[:, None]
            if values.ndim != 2 or not np.issubdtype(values.dtype, np.number):
                raise InputFormatError(f"{path}: features must be a 2-D numeric array, got {values.dtype} {values.shape}")
            if not np.all(np.isfinite(values)):
                bad = int(np.argmax(~np.isfinite(values).all(axis=1)))
                raise GraphValidationError(f"{path}: feature row {bad} contains NaN or infinite values")
        elif not np.all(np.isfinite(values.data)):
            raise GraphValidationError(f"{path}: features contain NaN or infinite values")
        if ids is None:
            if values.shape[0] != graph.num_nodes:
                raise GraphValidationError(
                    f"{path}: {values.shape[0]} feature rows for {graph.num_nodes} nodes (without 'ids', rows must be "
                    f"in node order, one per node)"
                )
            return graph.replace(features=values), []
        pos = _node_positions(graph, np.asarray(ids).astype(str).astype(bytes), None, str(path))
        table = None
    else:
        table, ncols = _read_table(path, 2, "feature")
        values = to_float64(token_array(table, slice(1, ncols)), table, what="feature value")
        pos = _node_positions(graph, token_array(table, [0])[:, 0], table, str(path))
    if pos.size != graph.num_nodes:
        missing = int(np.setdiff1d(np.arange(graph.num_nodes), pos)[0])
        label = graph.node_ids[missing] if graph.node_ids is not None else missing
        raise GraphValidationError(
            f"{path}: features for {pos.size} of {graph.num_nodes} nodes; node {label!r} has no feature row"
        )
    if sp.issparse(values):
        inverse = np.empty_like(pos)
        inverse[pos] = np.arange(pos.size)
        feats = sp.csr_matrix(values)[inverse]
    else:
        feats = np.empty_like(values)
        feats[pos] = values
    return graph.replace(features=feats), []


def attach_labels(graph: Graph, path: Path) -> tuple[Graph, list[str]]:
    """A copy of ``graph`` with labels read from ``path``; nodes without a row get -1 (unknown)."""
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file (labels)")
    notes: list[str] = []
    table = None
    if path.suffix in (".npz", ".npy"):
        ids, raw = _load_array_file(path, ("labels", "y"))
        raw = np.asarray(raw).reshape(-1)
        if ids is None:
            if raw.size != graph.num_nodes:
                raise GraphValidationError(f"{path}: {raw.size} labels for {graph.num_nodes} nodes (one per node)")
            pos = np.arange(graph.num_nodes)
        else:
            pos = _node_positions(graph, np.asarray(ids).astype(str).astype(bytes), None, str(path))
    else:
        table, _ = _read_table(path, 2, "label")
        raw = token_array(table, [1])[:, 0]
        pos = _node_positions(graph, token_array(table, [0])[:, 0], table, str(path))
    if raw.dtype.kind in "SU" and all(is_int_token(t if isinstance(t, bytes) else str(t).encode()) for t in raw):
        raw = raw.astype(np.int64)
    if not np.issubdtype(raw.dtype, np.integer):
        uniq, raw = np.unique(raw, return_inverse=True)
        shown = ", ".join(f"{u.decode() if isinstance(u, bytes) else u}->{i}" for i, u in enumerate(uniq[:10]))
        notes.append(f"labels renumbered in sorted order: {shown}{' ...' if uniq.size > 10 else ''}")
    raw = raw.astype(np.int64)
    if raw.size and raw.min() < -1:
        bad = int(np.argmax(raw < -1))
        where = f"{path}, line {table.line_of_row(bad)}" if table is not None else str(path)
        raise GraphValidationError(f"{where}: label {int(raw[bad])} < -1 (labels are >= 0, -1 = unknown)")
    labels = np.full(graph.num_nodes, -1, dtype=np.int64)
    labels[pos] = raw
    if pos.size < graph.num_nodes:
        notes.append(f"{graph.num_nodes - pos.size} node(s) have no label row: label -1 (unknown)")
    return graph.replace(labels=labels), notes


def _sidecar_ids(path: Path, what: str) -> np.ndarray | int | None:
    """The node ids a side file lists (its first column, or the npz ``ids`` array), or its row count when it has
    no ids (rows in node order); ``None`` when it cannot tell."""
    if path.suffix in (".npz", ".npy"):
        ids, values = _load_array_file(path, ("features", "x", "attr_matrix") if what == "features" else ("labels", "y"))
        if ids is None:
            return int(np.asarray(values).shape[0]) if not sp.issparse(values) else int(values.shape[0])
        ids = np.asarray(ids)
        return ids.astype(np.int64) if np.issubdtype(ids.dtype, np.integer) else ids.astype(str)
    table, _ = _read_table(path, 2, "feature" if what == "features" else "label")
    tokens = token_array(table, [0])[:, 0]
    if all(is_int_token(t) for t in tokens):
        return tokens.astype(np.int64)
    return np.char.decode(tokens, "utf-8") if tokens.dtype.kind == "S" else tokens.astype(str)


def declare_from_sidecar(graph: Graph, path: Path, what: str) -> Graph:
    """A graph whose node set came from its edges, re-indexed onto the nodes a features / labels file lists when
    that file names every node of the graph (the owner's file then declares the node set, and nodes without an
    edge join as isolated nodes). Otherwise the graph is returned as it is (still ``from-edges``)."""
    from graphrelease.graph import NODE_SET_FROM_EDGES
    from graphrelease.io.nodelist import covers, declare_nodes

    if graph.node_set != NODE_SET_FROM_EDGES or not path.exists():
        return graph
    listed = _sidecar_ids(Path(path), what)
    source = f"the node ids of the {what} file {path}"
    if isinstance(listed, int):
        if graph.node_ids is None and listed >= graph.num_nodes:
            return declare_nodes(graph, listed, source=f"the rows of the {what} file {path} (one per node)")
        return graph
    if listed is None or np.unique(listed).size != listed.size or not covers(graph, listed):
        return graph
    order = np.argsort(listed, kind="stable")
    return declare_nodes(graph, listed[order], source=source)
