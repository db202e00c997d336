r"""A feature-only path with a graph read added to its logits: the node-/k-neighbour-adjacency classifier of GAP and
DPDGC (issue #17).

Why. Under node or k-neighbour adjacency a node's features and label are private, so every stage costs epsilon and
the feature-only model (DP-MLP) is the floor a graph model has to clear. GAP's and DPDGC's original classifiers read
the node's own features through a different network (GAP: a per-hop base layer on the encoder's probabilities;
DPDGC: a one-layer X channel concatenated with the Z channel) trained with more noise than DP-MLP gets, so with
noise-dominated graph inputs they fell 1-5 points below DP-MLP (reports/private_models.md, measured on Cora node
eps 8: GAP's encoder at noise multiplier 2.15 against DP-MLP's 1.58, 64.4% vs 68.4% validation accuracy).

:class:`ResidualGraphHead` makes the classifier DP-MLP's network plus a linear read of the released graph inputs,
initialised at zero: before any step the model *is* the feature-only network, and in the limit of useless graph
inputs the head stays near zero and the model is a DP-MLP trained with the same architecture, learning rate,
batches and clipping. GAP passes its encoder's network in (the encoder phase and the classifier phase are then one
network trained in two charged DP-SGD runs); DPDGC a fresh DP-MLP network. Nothing here is a mechanism: training
is DP-SGD through the engine, which charges every step, and the graph inputs are releases already charged.
"""

from __future__ import annotations

import torch
from torch import nn


class ResidualGraphHead(nn.Module):
    """``logits = net(x) + graph(z)``: ``net`` the feature-only network, ``graph`` a zero-initialised linear map of
    the released graph inputs ``z`` (one row per node)."""

    def __init__(self, net: nn.Module, graph_dim: int, classes: int) -> None:
        super().__init__()
        self.net = net
        self.graph = nn.Linear(graph_dim, classes)
        nn.init.zeros_(self.graph.weight)
        nn.init.zeros_(self.graph.bias)

    def forward(self, xz: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, z = xz
        return self.net(x) + self.graph(z)


def xz_example_loss(model_fn, example):
    """One example (x, z, y): the engine's exact per-example path."""
    x, z, y = example
    return nn.functional.cross_entropy(model_fn((x.unsqueeze(0), z.unsqueeze(0))), y.unsqueeze(0))


def xz_batch_loss(module, batch):
    """Per-example losses of a batch (entry i reads only example i): the engine's ghost-clipping path."""
    x, z, y = batch
    return nn.functional.cross_entropy(module((x, z)), y, reduction="none")
