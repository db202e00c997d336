"""MatrixMarket adjacency matrices (``.mtx``, ``.mtx.gz``; the format of SuiteSparse and Network Repository).

The matrix is the adjacency matrix: row and column ``i`` (1-based in the file) are node ``i - 1``, every stored
non-zero entry is an edge, values (weights) are ignored. The header's ``n x n`` size is the owner's declaration of the
node set, as a GraphML file's node elements are: it counts the nodes whether or not they have edges, so no edge can
add or remove one. A ``general`` (unsymmetric) matrix is a directed graph, symmetrised like every input. Parsing is
scipy's (``scipy.io.mmread``: the reference reader, C++-accelerated since SciPy 1.12).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphrelease.errors import GraphValidationError, InputFormatError
from graphrelease.graph import CleaningReport, Graph

#: The banner every MatrixMarket file starts with (case-insensitive by the format's definition).
BANNER = b"%%matrixmarket"


def read_mtx(path: Path, *, name: str | None = None) -> tuple[Graph, CleaningReport]:
    import scipy.io
    import scipy.sparse as sp

    source = str(path)
    try:
        rows, cols, entries, form, field, symmetry = scipy.io.mminfo(source)
        if field == "complex":
            raise InputFormatError(f"{source}: a complex MatrixMarket matrix is not an adjacency matrix")
        matrix = scipy.io.mmread(source)
    except InputFormatError:
        raise
    except (ValueError, OSError, EOFError, IndexError, TypeError) as err:
        raise InputFormatError(f"{source}: not a readable MatrixMarket file ({err})") from err
    if rows != cols:
        raise InputFormatError(
            f"{source}: a {rows} x {cols} MatrixMarket matrix is not an adjacency matrix (rows != columns); "
            f"write a bipartite graph as an edge list over one node set"
        )
    coo = sp.coo_matrix(matrix)
    keep = coo.data != 0  # explicitly stored zeros are not edges
    dropped_zeros = int((~keep).sum())
    pairs = np.stack([coo.row[keep], coo.col[keep]], axis=1).astype(np.int64)
    if symmetry != "general":
        # scipy expands a symmetric file to both triangles; the file stored each edge once.
        pairs = pairs[pairs[:, 0] >= pairs[:, 1]]
    notes = [f"MatrixMarket rows and columns 1..{rows} are nodes 0..{rows - 1}"]
    if field not in ("pattern",):
        notes.append(f"{field} entries: values (weights) are not part of the graph, non-zero entries are edges")
    if dropped_zeros:
        notes.append(f"{dropped_zeros} explicitly stored zero entries are not edges")
    try:
        graph, report = Graph.from_edges(
            int(rows), pairs, name=name or path.name.split(".")[0], directed_input=symmetry == "general",
            node_set=f"the {rows} x {cols} size in the MatrixMarket header of {path.name}",
        )
    except GraphValidationError as err:
        raise GraphValidationError(f"{source}: {err}") from err
    if report.input_rows == 0 or graph.num_edges == 0:
        raise InputFormatError(f"{source}: empty graph — the matrix has no non-zero off-diagonal entries")
    return graph, CleaningReport(**{**report.__dict__, "notes": report.notes + tuple(notes)})
