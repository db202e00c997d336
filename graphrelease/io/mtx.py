"""MatrixMarket adjacency matrices (``.mtx``, ``.mtx.gz``; the format of SuiteSparse and Network Repository).

The matrix is the adjacency matrix: row and column ``i`` (1-based in the file) are node ``i - 1``, every stored
non-zero entry is an edge, values (weights) are ignored. The header's ``n x n`` size is the owner's declaration of the
node set, as a GraphML file's node elements are: it counts the nodes whether or not they have edges, so no edge can
add or remove one. A ``general`` (unsymmetric) matrix is a directed graph, symmetrised like every input. Parsing is
scipy's (``scipy.io.mmread``: the reference reader, C++-accelerated since SciPy 1.12).
"""

from __future__ import annotations

import bz2
import io
from pathlib import Path

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import CleaningReport, Graph
from graphrelease.io._common import read_bytes
from graphrelease.io.sniff import MTX_BANNER, starts_with_mtx_banner

#: What scipy's parser raises on a malformed file (OverflowError: numbers beyond int64, e.g. a size of 10^23).
_PARSE_ERRORS = (ValueError, OverflowError, OSError, EOFError, IndexError, TypeError, MemoryError)


def _unreadable(source: str, err: Exception) -> InputFormatError:
    return InputFormatError(f"{source}: not a readable MatrixMarket file ({err})")


def _normalised_bytes(path: Path) -> bytes:
    """The file's text, decompressed by its magic bytes (gzip, bzip2) whatever its name, with the banner in the exact
    spelling scipy wants (the sniffer accepts other case, a UTF-8 BOM and leading whitespace)."""
    raw = read_bytes(path)  # gunzips by magic bytes, with clean errors for a broken stream
    if raw.startswith(b"BZh"):
        raw = bz2.decompress(raw)
    if not starts_with_mtx_banner(raw):
        raise InputFormatError(f"{path}: no %%MatrixMarket banner on the first line")
    text = raw.removeprefix(b"\xef\xbb\xbf").lstrip()
    return b"%%MatrixMarket" + text[len(MTX_BANNER):]


def read_mtx(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    """The graph of a MatrixMarket file and what reading it changed (self-loops, reverse copies, weights, zeros).

    Example
    -------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "g.mtx"
    >>> _ = f.write_text("%%MatrixMarket matrix coordinate pattern symmetric\\n4 4 2\\n2 1\\n3 2\\n")
    >>> g, report = read_mtx(f)
    >>> g.num_nodes, g.edges.tolist(), report.isolated_nodes
    (4, [[0, 1], [1, 2]], 1)
    """
    import scipy.io
    import scipy.sparse as sp

    source = str(path)
    try:
        text = _normalised_bytes(path)
        rows, cols, _, _, field, symmetry = scipy.io.mminfo(io.BytesIO(text))
    except _PARSE_ERRORS as err:
        raise _unreadable(source, err) from err
    if field == "complex":
        raise InputFormatError(f"{source}: a complex MatrixMarket matrix is not an adjacency matrix")
    if rows != cols:
        raise InputFormatError(
            f"{source}: a {rows} x {cols} MatrixMarket matrix is not an adjacency matrix (rows != columns); "
            f"write a bipartite graph as an edge list over one node set"
        )
    try:
        coo = sp.coo_matrix(scipy.io.mmread(io.BytesIO(text)))
    except _PARSE_ERRORS as err:
        raise _unreadable(source, err) from err
    row, col, data = coo.row, coo.col, coo.data
    if symmetry != "general":
        # scipy mirrors a symmetric file into both triangles; the file stored each edge once.
        lower = row >= col
        row, col, data = row[lower], col[lower], data[lower]
    stored_zeros = data == 0  # explicitly stored zeros are not edges
    pairs = np.stack([row[~stored_zeros], col[~stored_zeros]], axis=1).astype(np.int64)
    notes = [f"MatrixMarket rows and columns 1..{rows} are nodes 0..{rows - 1}"]
    if field != "pattern":
        notes.append(f"{field} entries: values (weights) are not part of the graph, non-zero entries are edges")
    if stored_zeros.any():
        notes.append(f"{int(stored_zeros.sum())} explicitly stored zero entries are not edges")
    try:
        graph, report = Graph.from_edges(
            int(rows), pairs, name=name or path.name.split(".")[0], directed_input=symmetry == "general",
            node_set=f"the {rows} x {cols} size in the MatrixMarket header of {source}",
        )
    except GraphValidationError as err:
        raise GraphValidationError(f"{source}: {err}") from err
    if graph.num_edges == 0:
        raise InputFormatError(f"{source}: empty graph — the matrix has no non-zero off-diagonal entries")
    return graph, CleaningReport(**{**report.__dict__, "notes": report.notes + tuple(notes)})
