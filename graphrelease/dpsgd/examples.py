"""Building examples for the engine: whole graphs as padded dense tensors, and a dense GCN that honours masks.

Whole-graph examples (a collection under ``graph`` adjacency, one graph per example) have different sizes. Two ways
to feed them to :mod:`graphrelease.dpsgd.per_example`:

* :func:`graph_examples` — a ``list`` of per-graph dicts (exact sizes; gradients by a Python loop);
* :func:`pad_graphs` — one batched dict padded to the largest graph with a node ``mask`` (``vmap``; the model
  must ignore padded nodes: :class:`DenseGCN` zeroes their rows and leaves them out of the readout, and padded
  rows/columns of the normalised adjacency are zero). ``tests/dpsgd`` checks both give identical gradients.

Padding costs :math:`O(M^2)` per example for the largest size :math:`M`; prefer the list layout when sizes are
very skewed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from graphrelease.errors import OptionError
from graphrelease.graph import Graph

_FEATURES = ("given", "ones", "degree")


def normalized_adjacency(graph: Graph) -> np.ndarray:
    """Dense :math:`\\hat A = D^{-1/2}(A + I)D^{-1/2}` (Kipf & Welling 2017), float32."""
    n = graph.num_nodes
    a = np.zeros((n, n), dtype=np.float64)
    if graph.num_edges:
        u, v = graph.edges[:, 0], graph.edges[:, 1]
        a[u, v] = 1.0
        a[v, u] = 1.0
    a += np.eye(n)
    d = a.sum(axis=1)
    inv = 1.0 / np.sqrt(d)
    return (a * inv[:, None] * inv[None, :]).astype(np.float32)


def node_inputs(graph: Graph, features: str = "given", max_degree: int = 64) -> np.ndarray:
    """Node input features: the graph's own (``given``), constant ones, or one-hot degree capped at
    ``max_degree`` (a function of the example itself, so it is inside the clipped example)."""
    if features not in _FEATURES:
        raise OptionError(f"features must be one of {_FEATURES}, got {features!r}")
    if features == "given":
        x = graph.dense_features()
        if x is None:
            raise OptionError(f"graph '{graph.name}' has no node features: use features='ones' or 'degree'")
        return np.asarray(x, dtype=np.float32)
    if features == "ones":
        return np.ones((graph.num_nodes, 1), dtype=np.float32)
    deg = np.minimum(graph.degrees(), max_degree)
    out = np.zeros((graph.num_nodes, max_degree + 1), dtype=np.float32)
    out[np.arange(graph.num_nodes), deg] = 1.0
    return out


def graph_examples(
    graphs: Sequence[Graph], labels: Sequence[int] | np.ndarray | None = None, *, features: str = "given",
    max_degree: int = 64,
) -> list[dict[str, torch.Tensor]]:
    """One dict per graph: ``adj`` (n, n) normalised, ``x`` (n, d), ``mask`` (n,) ones, ``y`` () if labels."""
    out = []
    for i, g in enumerate(graphs):
        ex = {
            "adj": torch.from_numpy(normalized_adjacency(g)),
            "x": torch.from_numpy(node_inputs(g, features, max_degree)),
            "mask": torch.ones(g.num_nodes, dtype=torch.float32),
        }
        if labels is not None:
            ex["y"] = torch.as_tensor(int(labels[i]), dtype=torch.long)
        out.append(ex)
    return out


def pad_graphs(
    graphs: Sequence[Graph], labels: Sequence[int] | np.ndarray | None = None, *, features: str = "given",
    max_degree: int = 64, max_nodes: int | None = None,
) -> dict[str, torch.Tensor]:
    """Batched dict padded to ``max_nodes`` (default: the largest graph): ``adj`` (B, M, M), ``x`` (B, M, d),
    ``mask`` (B, M) with 1 on real nodes, ``y`` (B,) if labels."""
    if not graphs:
        raise OptionError("pad_graphs needs at least one graph")
    m = max(g.num_nodes for g in graphs) if max_nodes is None else int(max_nodes)
    if any(g.num_nodes > m for g in graphs):
        raise OptionError(f"a graph has more than max_nodes={m} nodes")
    xs = [node_inputs(g, features, max_degree) for g in graphs]
    d = xs[0].shape[1]
    if any(x.shape[1] != d for x in xs):
        raise OptionError("graphs have different feature dimensions; they cannot be padded into one batch")
    b = len(graphs)
    adj = np.zeros((b, m, m), dtype=np.float32)
    x = np.zeros((b, m, d), dtype=np.float32)
    mask = np.zeros((b, m), dtype=np.float32)
    for i, g in enumerate(graphs):
        n = g.num_nodes
        adj[i, :n, :n] = normalized_adjacency(g)
        x[i, :n] = xs[i]
        mask[i, :n] = 1.0
    out = {"adj": torch.from_numpy(adj), "x": torch.from_numpy(x), "mask": torch.from_numpy(mask)}
    if labels is not None:
        out["y"] = torch.from_numpy(np.array(labels, dtype=np.int64))
    return out


class DenseGCN(nn.Module):
    """Two-layer GCN on one dense normalised adjacency, with masked mean readout for graph classification.

    ``forward(adj, x, mask)`` takes ONE example (``adj`` (n, n), ``x`` (n, d), ``mask`` (n,)) and returns graph
    logits (out_dim,); ``node_logits`` returns per-node logits (n, out_dim). Padded nodes (mask 0) have zero rows
    and columns in ``adj`` and are excluded from the readout, so padding does not change the output.
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int) -> None:
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hidden)
        self.lin2 = nn.Linear(hidden, out_dim)

    def node_logits(self, adj: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = torch.relu(adj @ self.lin1(x)) * mask.unsqueeze(-1)
        return (adj @ self.lin2(h)) * mask.unsqueeze(-1)

    def forward(self, adj: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        z = self.node_logits(adj, x, mask)
        return z.sum(dim=-2) / mask.sum(dim=-1, keepdim=True).clamp(min=1.0)
