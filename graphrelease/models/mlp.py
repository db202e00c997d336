"""DP-MLP: an MLP on node features trained with DP-SGD; it never reads the edges.

Per adjacency (see ``docs/privacy.md#dp-mlp``):

* ``edge``: features and labels are public and the MLP reads nothing else, so training is post-processing of
  public data: no mechanism, nothing charged (the certificate states the public assumption).
* ``node``: one node = one training example (features, label). Poisson-sampled DP-SGD, add/remove, clipped sum
  sensitivity :math:`C` (Abadi et al. 2016; Mironov, Talwar, Zhang 2019 for the sampled Gaussian).
* ``k-neighbor``: the node's features and label are replaced: one example replaced, Poisson DP-SGD under
  replace-one (the two versions of the example are at most :math:`2C` apart).

The noise multiplier is calibrated from the target (epsilon, delta) before training; the engine charges every step
before applying it.
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
    OneNetworkMixin,
    PublicTrainingOptions,
    TrainConfig,
    as_index,
    feature_matrix,
    steps_for,
    train_nonprivate,
    validation_select,
)
from graphrelease.models.private_training import calibrate_common_noise, make_dpsgd_trainer, run_dpsgd, with_noise


@dataclass
class DPMLPConfig(PublicTrainingOptions):
    hidden: int = 64
    layers: int = 2
    epochs: int = 50


def dpsgd_setting(kind: str) -> tuple[str, float]:
    """(neighboring, sensitivity in units of C) of a per-node DP-SGD example under adjacency ``kind``."""
    if kind == "node":
        return "add_remove", 1.0
    if kind == "k-neighbor":
        # The accountant's replace-one pair is (qN(s)+(1-q)N(0), qN(-s)+(1-q)N(0)): s bounds ONE version of the
        # example (C), the two versions are then 2C apart. So s = 1 here, not 2.
        return "replace_one", 1.0
    raise OptionError(f"no per-node DP-SGD analysis for adjacency '{kind}'")


def node_example_loss(model_fn, example):
    x, y = example
    return nn.functional.cross_entropy(model_fn(x.unsqueeze(0)), y.unsqueeze(0))


def node_batch_loss(module, batch):
    """Per-example losses of a batch (entry i reads only example i): the ghost-clipping path of the engine."""
    x, y = batch
    return nn.functional.cross_entropy(module(x), y, reduction="none")


@MODELS.register("dp-mlp")
class DPMLP(OneNetworkMixin, PrivateModel, NodeModelMixin):
    """MLP on node features; DP-SGD under node / k-neighbor adjacency, free under edge adjacency."""

    config_class = DPMLPConfig
    adjacencies = frozenset({"edge", "node", "k-neighbor"})
    gives_logits = True

    def __init__(self, **options: Any) -> None:
        self.config = DPMLPConfig(**options)
        self.net: MLP | None = None
        self.noise_multiplier = 0.0
        self.steps = 0

    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        c, kind, split, rng, tgen = self.config, ctx.kind, ctx.split, ctx.rng, ctx.tgen
        x = feature_matrix(graph)
        y = torch.as_tensor(np.array(graph.labels), dtype=torch.long)
        self.in_dim = x.shape[1]
        tr = as_index(split.train)
        if kind == "edge" or not ctx.private:
            # Public inputs (edge adjacency) or a non-private run: ordinary training, nothing charged, with the
            # optimiser every noise-free stage shares (public_lr / public_dropout, models/common.py PUBLIC_LR).
            self.net = self._build_net(dropout=c.public_dropout)
            tcfg = TrainConfig(epochs=c.epochs, lr=c.public_lr, batch_size=c.batch_size)
            def loss(module, idx):
                return nn.functional.cross_entropy(module(x[tr[idx]]), y[tr[idx]])

            # Best-validation epoch under edge adjacency only (public labels; models/common.py validation_select).
            select = validation_select(lambda m, v: m(x[v]), y, split.val, public=kind == "edge",
                                       notes=self.selection_notes)
            train_nonprivate(self.net, loss, tr.numel(), tcfg, generator=tgen, progress=progress, select=select)
        else:
            self.net = self._build_net()
            tcfg = TrainConfig(epochs=c.epochs, lr=c.lr, batch_size=c.batch_size, max_grad_norm=c.max_grad_norm)
            neighboring, sens = dpsgd_setting(kind)
            steps, _ = steps_for(c.epochs, split.train_slots, c.batch_size)
            trainer = make_dpsgd_trainer(
                self.net, node_example_loss, budget=budget, cfg=tcfg, num_examples=tr.numel(), public_num_examples=split.train_slots,
                noise_multiplier=1.0,
                stage="dp_mlp.dpsgd", rng=rng, noise_generator=tgen, sensitivity=sens, neighboring=neighboring,
                proof="dp-mlp", batch_loss=node_batch_loss,
            )
            template = trainer.ledger_entry(1)
            sigma = calibrate_common_noise(lambda s: [with_noise(template, s, steps)], budget)
            trainer.noise_multiplier = sigma
            self.noise_multiplier, self.steps = sigma, steps
            self.net.train()
            run_dpsgd(trainer, (x[tr], y[tr]), steps, progress)
        self.net.eval()
        self._evaluate(graph, self.predict(graph))
