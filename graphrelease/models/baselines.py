"""Non-private node-classification baselines: MLP on features, GCN (Kipf & Welling 2017), GraphSAGE (Hamilton et al.
2017, mean aggregator). They read the private graph without any mechanism: they need an unlimited budget
(``Budget.unlimited``), record nothing in the ledger, and their certificate says ``guarantee: none`` (non-private).

Training: full-batch Adam for a fixed number of epochs on the training nodes; no best-validation checkpointing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.models.base import FitContext, MODELS, PrivateModel
from graphrelease.models.common import (
    MLP,
    NodeModelMixin,
    NodeSplitOptions,
    OneNetworkMixin,
    as_index,
    feature_matrix,
)


@dataclass
class BaselineConfig(NodeSplitOptions):
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.5
    epochs: int = 200
    lr: float = 1e-2
    weight_decay: float = 5e-4


class _GNN(nn.Module):
    def __init__(self, kind: str, in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv, SAGEConv

        conv = {"gcn": GCNConv, "sage": SAGEConv}[kind]
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.convs = nn.ModuleList(conv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = nn.functional.dropout(x, self.dropout, training=self.training)
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = torch.relu(x)
        return x


def _edge_index(graph: Graph) -> torch.Tensor:
    e = torch.as_tensor(np.array(graph.edges), dtype=torch.long).t()
    return torch.cat([e, e.flip(0)], dim=1)


class _Baseline(OneNetworkMixin, PrivateModel, NodeModelMixin):
    config_class = BaselineConfig
    non_private = True
    adjacencies = frozenset({"edge", "node", "k-neighbor"})
    gives_logits = True
    kind: str = "mlp"

    def __init__(self, **options: Any) -> None:
        self.config = BaselineConfig(**options)
        self.net: nn.Module | None = None
        self.public_assumptions = {"non_private": "non-private baseline: reads the graph without any mechanism"}

    def _build_net(self) -> nn.Module:
        c = self.config
        if self.kind == "mlp":
            return MLP(self.in_dim, c.hidden, self.num_classes, layers=c.layers, dropout=c.dropout)
        return _GNN(self.kind, self.in_dim, c.hidden, self.num_classes, c.layers, c.dropout)

    def _forward(self, x: torch.Tensor, graph: Graph) -> torch.Tensor:
        assert self.net is not None
        return self.net(x) if self.kind == "mlp" else self.net(x, _edge_index(graph))

    def _check_options(self, kind: str, *, private: bool, budget: Any) -> None:
        if private:
            raise OptionError(
                f"'{self.name}' is a non-private baseline: it cannot meet epsilon={budget.epsilon}; "
                "use a private method (dp-mlp, gap, dpdgc) or an unlimited budget (--epsilon inf)"
            )

    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        c, split = self.config, ctx.split
        self.public_assumptions = {"non_private": "non-private baseline: reads the graph without any mechanism"}
        x = feature_matrix(graph)
        y = torch.as_tensor(np.array(graph.labels), dtype=torch.long)
        self.in_dim = x.shape[1]
        self.net = self._build_net()
        opt = torch.optim.Adam(self.net.parameters(), lr=c.lr, weight_decay=c.weight_decay)
        idx = as_index(split.train)
        for _ in range(c.epochs):
            self.net.train()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(self._forward(x, graph)[idx], y[idx])
            loss.backward()
            opt.step()
            if progress is not None:
                progress()
        self.net.eval()
        self._evaluate(graph, self.predict(graph))


@MODELS.register("mlp")
class MLPBaseline(_Baseline):
    """Non-private MLP on node features (ignores edges)."""

    kind = "mlp"


@MODELS.register("gcn")
class GCNBaseline(_Baseline):
    """Non-private 2-layer GCN (Kipf & Welling 2017)."""

    kind = "gcn"


@MODELS.register("sage")
class SAGEBaseline(_Baseline):
    """Non-private 2-layer GraphSAGE with mean aggregation (Hamilton et al. 2017)."""

    kind = "sage"
