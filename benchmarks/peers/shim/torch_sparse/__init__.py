"""Minimal stand-in for the ``torch_sparse`` extension (not installable here: it compiles against torch, and no
wheel for torch 2.13 CPU is cached). Only what the peers' edge-level code paths call is provided:

- ``SparseTensor(row=, col=, value=, sparse_sizes=)`` with ``t()``, row selection ``adj[idx, :]`` (rows renumbered
  in the order of ``idx``, as torch_sparse's ``index_select``), ``coo()``, ``to_dense()``,
  ``to_torch_sparse_coo_tensor()``, ``nnz()``, ``sizes()``/``sparse_sizes()``, ``to()``;
- ``matmul(adj, x)`` for a shim ``SparseTensor`` or a torch sparse tensor, by torch's own sparse product.

Node-level paths of the peers (``torch.ops.torch_sparse.neighbor_sample``) are NOT provided and fail loudly.
"""

from __future__ import annotations

import torch


class SparseTensor:
    def __init__(self, *, row: torch.Tensor, col: torch.Tensor, value: torch.Tensor | None = None,
                 sparse_sizes: tuple[int, int] | None = None, is_sorted: bool = False, **_: object) -> None:
        row, col = row.long(), col.long()
        if sparse_sizes is None:
            sparse_sizes = (int(row.max()) + 1 if row.numel() else 0, int(col.max()) + 1 if col.numel() else 0)
        self._sizes = (int(sparse_sizes[0]), int(sparse_sizes[1]))
        if not is_sorted:
            order = torch.argsort(row * max(self._sizes[1], 1) + col, stable=True)
            row, col = row[order], col[order]
            value = value[order] if value is not None else None
        self._row, self._col, self._value = row, col, value
        counts = torch.bincount(row, minlength=self._sizes[0])
        self._rowptr = torch.zeros(self._sizes[0] + 1, dtype=torch.long)
        self._rowptr[1:] = torch.cumsum(counts, 0)

    # -- shape ---------------------------------------------------------------------------------------------------
    def sizes(self) -> list[int]:
        return list(self._sizes)

    def sparse_sizes(self) -> tuple[int, int]:
        return self._sizes

    def size(self, dim: int | None = None):
        return self._sizes if dim is None else self._sizes[dim]

    def nnz(self) -> int:
        return int(self._row.numel())

    def dim(self) -> int:
        return 2

    def to(self, *_args, **_kwargs) -> "SparseTensor":
        return self  # CPU only

    # -- conversions ---------------------------------------------------------------------------------------------
    def coo(self):
        return self._row.clone(), self._col.clone(), self._value

    def _values(self) -> torch.Tensor:
        return self._value if self._value is not None else torch.ones(self._row.numel())

    def to_torch_sparse_coo_tensor(self) -> torch.Tensor:
        return torch.sparse_coo_tensor(torch.stack([self._row, self._col]), self._values(), self._sizes).coalesce()

    def to_dense(self) -> torch.Tensor:
        out = torch.zeros(self._sizes)
        out[self._row, self._col] = self._values()
        return out

    def t(self) -> "SparseTensor":
        return SparseTensor(row=self._col, col=self._row, value=self._value, sparse_sizes=self._sizes[::-1])

    # -- row selection -------------------------------------------------------------------------------------------
    def __getitem__(self, index) -> "SparseTensor":
        idx = index[0] if isinstance(index, tuple) else index
        if isinstance(index, tuple) and not (isinstance(index[1], slice) and index[1] == slice(None)):
            raise NotImplementedError("shim SparseTensor supports row selection adj[idx, :] only")
        idx = torch.as_tensor(idx).long()
        if idx.dtype == torch.bool:
            idx = idx.nonzero().view(-1)
        starts, ends = self._rowptr[idx], self._rowptr[idx + 1]
        lengths = ends - starts
        new_row = torch.repeat_interleave(torch.arange(idx.numel()), lengths)
        offsets = torch.repeat_interleave(starts - torch.cumsum(lengths, 0) + lengths, lengths)
        pos = torch.arange(int(lengths.sum())) + offsets
        value = self._value[pos] if self._value is not None else None
        return SparseTensor(row=new_row, col=self._col[pos], value=value, sparse_sizes=(idx.numel(), self._sizes[1]),
                            is_sorted=True)


def matmul(src, other: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
    if reduce != "sum":
        raise NotImplementedError("shim torch_sparse.matmul supports reduce='sum' only")
    if isinstance(src, SparseTensor):
        src = src.to_torch_sparse_coo_tensor()
    return src @ other


def eye(*_args, **_kwargs):
    """Imported by the peers' AddSelfLoops transform (not on the edge-level path): fails loudly if called."""
    raise NotImplementedError("shim torch_sparse.eye is not provided")
