r"""DPAR: decoupled GNN with differentially private approximate personalized PageRank (Zhang, Xu, Ma, Xiong,
"Decoupled GNN with Differentially Private Approximate Personalized PageRank", 2024; reference Emory-AIMS/DPAR).

Two stages, one budget, one ledger:

1. **DP-APPR** (:mod:`graphrelease.models.appr`): clipped ISTA APPR rows of ``M`` source nodes (the training nodes,
   or a subset drawn with the public split seed), released as a sparse top-K matrix :math:`\tilde\Pi` by ``GM``,
   ``EM0`` or ``EM1``. Every row may change when one edge/node changes; the sensitivities come from clipping.
2. **Classifier**: an MLP on :math:`z_s = [x_s,\ (\mathrm{colclip}(\tilde\Pi) X)_s]` with X the row-normalised
   features. :math:`\mathrm{colclip}` keeps at most ``col_cap`` entries per column (the largest) and scales each
   column to L1 norm at most ``col_l1`` — post-processing of :math:`\tilde\Pi`, data-independent given it.

   * ``edge`` adjacency: features and labels are public and :math:`\tilde\Pi` is released, so stage 2 is
     post-processing: trained without noise, nothing charged; the whole budget goes to stage 1.
   * ``node`` adjacency: node ``j`` enters its own example and the inputs :math:`z_s` of the at most ``col_cap``
     rows with :math:`\tilde\Pi_{sj}\ne0`. DP-SGD with Poisson rate ``q``: the examples ``j`` touches are sampled
     with probability at most :math:`p=1-(1-q)^{\mathrm{col\_cap}+1}` and then move the clipped sum by at most
     :math:`(2\,\mathrm{col\_cap}+1)C` (own example added/removed: C; others replaced: 2C each). By joint convexity
     (PRIVACY.md option B) the step costs ``joint_convexity_gaussian`` with ``pair_rate`` p and sensitivity
     ``col_cap + 1/2`` (the entry's distance is twice the sensitivity). Stage 1 spends ``appr_fraction`` of
     epsilon, stage 2's noise is calibrated so that the composed ledger meets the total.

Inference (``predict``) computes personalized PageRank of the GIVEN graph
(:math:`\pi = \alpha e_s + (1-\alpha)\pi D^{-1}A`) by forward push from the queried nodes only (default;
``inference="power"`` keeps the dense all-node power iteration), keeps the top-K per node and applies the released
classifier. The release (weights + config) is a function of the DP-APPR output, public features and labels only;
inference reads the raw structure of the graph it is given, which no part of the analysis covers, so predictions
on the private training graph are not a private release of it (docs/privacy.md#dpar-classifier). ``embed``
refuses for that reason: DPAR's private output is the trained model (``graphrelease train``).

Accuracy reported after ``fit`` (test nodes via power iteration on the training graph) is for the internal report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.models import appr
from graphrelease.models.base import FitContext, MODELS, PrivateModel
from graphrelease.models.ppr_sparse import push_ppr_topk
from graphrelease.models.mlp import node_batch_loss, node_example_loss
from graphrelease.models.common import (
    MLP,
    NodeModelMixin,
    NodeTrainingOptions,
    OneNetworkMixin,
    TrainConfig,
    as_index,
    feature_matrix,
    row_normalize,
    steps_for,
    train_nonprivate,
)
from graphrelease.models.private_training import calibrate_common_noise, make_dpsgd_trainer, run_dpsgd
from graphrelease.privacy.ledger import LedgerEntry


@dataclass
class DPARConfig(NodeTrainingOptions):
    mechanism: str = "EM1"
    alpha: float = 0.25
    rho: float = 1e-4
    tol: float = 1e-6
    max_iter: int = 100
    topk: int = 16
    clip: float = 0.3
    num_sources: int | None = None  # default: all training nodes
    value_fraction: float = 0.5  # EM1: share of the per-row APPR budget spent on the values
    appr_fraction: float = 0.5  # node adjacency: share of epsilon for stage 1
    col_cap: int = 8
    col_l1: float = 1.0
    power_iterations: int = 20
    # Inference PPR: "push" = forward push from the queried nodes (models/ppr_sparse.py), each entry within
    # push_r_max * degree of the exact PPR; "power" = the dense all-node power iteration (550 s on Tolokers).
    inference: str = "push"
    push_r_max: float = 1e-4
    hidden: int = 64
    layers: int = 2
    epochs: int = 100


def column_clip(pi: sp.csr_matrix, *, col_cap: int, col_l1: float) -> sp.csr_matrix:
    """Keep the ``col_cap`` largest entries of each column, then scale columns to L1 norm <= ``col_l1``."""
    c = pi.tocsc(copy=True)
    c.eliminate_zeros()
    data, indptr = c.data, c.indptr
    keep = np.ones(data.size, dtype=bool)
    for j in range(c.shape[1]):
        a, b = indptr[j], indptr[j + 1]
        if b - a > col_cap:
            vals = np.abs(data[a:b])
            drop = np.argsort(-vals, kind="stable")[col_cap:]
            keep[a + drop] = False
    c.data = np.where(keep, data, 0.0)
    c.eliminate_zeros()
    l1 = np.asarray(np.abs(c).sum(axis=0)).ravel()
    scale = np.minimum(1.0, col_l1 / np.maximum(l1, 1e-300))
    return (c @ sp.diags(scale)).tocsr()


def power_iteration_topk(graph: Graph, *, alpha: float, iterations: int, k: int, batch: int = 1024) -> sp.csr_matrix:
    """Personalized PageRank of every node of ``graph`` by power iteration, top-``k`` per row (inference only)."""
    n = graph.num_nodes
    A = graph.to_csr().astype(np.float64)
    deg = np.maximum(np.asarray(A.sum(axis=1)).ravel(), 1.0)
    WT = (sp.diags(1.0 / deg) @ A).T.tocsr()  # (D^{-1} A)^T
    k = min(k, n)
    rows, cols, vals = [], [], []
    for start in range(0, n, batch):
        src = np.arange(start, min(n, start + batch))
        E = np.zeros((n, src.size))
        E[src, np.arange(src.size)] = 1.0
        P = alpha * E
        for _ in range(int(iterations)):
            P = alpha * E + (1 - alpha) * (WT @ P)
        P = P.T
        idx = np.argpartition(-P, k - 1, axis=1)[:, :k]
        rows.append(np.repeat(src, k))
        cols.append(idx.ravel())
        vals.append(np.take_along_axis(P, idx, axis=1).ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


def sparse_row_topk(p: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """The ``k`` largest stored entries of each row of ``p`` (CSR in, CSR out)."""
    p = p.tocsr()
    rows, cols, vals = [], [], []
    for i in range(p.shape[0]):
        a, b = p.indptr[i], p.indptr[i + 1]
        idx, val = p.indices[a:b], p.data[a:b]
        if idx.size > k:
            keep = np.argpartition(-val, k - 1)[:k]
            idx, val = idx[keep], val[keep]
        rows.append(np.full(idx.size, i))
        cols.append(idx)
        vals.append(val)
    if not rows:
        return sp.csr_matrix(p.shape)
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=p.shape)


def stage2_entry(*, noise_multiplier: float, sample_rate: float, col_cap: int, count: int) -> LedgerEntry:
    """Node-adjacency DP-SGD step of DPAR's classifier (joint convexity over the col_cap + 1 touched examples)."""
    pair_rate = float(-np.expm1((col_cap + 1) * np.log1p(-sample_rate))) if sample_rate < 1 else 1.0
    return LedgerEntry(
        mechanism="joint_convexity_gaussian", stage="dpar.classifier.dpsgd", count=count,
        params={"noise_multiplier": float(noise_multiplier), "pair_rate": pair_rate},
        sensitivity=col_cap + 0.5, proof="dpar-classifier",
        note=f"node j touches its own example and <= {col_cap} aggregated inputs (column cap of the released APPR)",
    )


@MODELS.register("dpar")
class DPAR(OneNetworkMixin, PrivateModel, NodeModelMixin):
    """DP-APPR (GM / EM0 / EM1) + MLP classifier on APPR-aggregated features."""

    config_class = DPARConfig
    adjacencies = frozenset({"edge", "node"})
    gives_logits = True

    def __init__(self, **options: Any) -> None:
        self.config = DPARConfig(**options)
        c = self.config
        if c.mechanism not in appr.MECHANISMS:
            raise OptionError(f"dpar: mechanism must be one of {appr.MECHANISMS}, got {c.mechanism!r}")
        if not (0 < c.appr_fraction < 1) or not (0 < c.value_fraction < 1):
            raise OptionError(f"dpar: appr_fraction and value_fraction must be in (0, 1), got {c.appr_fraction}, "
                              f"{c.value_fraction}")
        if c.inference not in ("push", "power"):
            raise OptionError(f"dpar: inference must be 'push' or 'power', got {c.inference!r}")
        if c.col_cap < 1 or c.col_l1 <= 0 or c.topk < 1 or c.clip <= 0:
            raise OptionError(f"dpar: need col_cap >= 1, col_l1 > 0, topk >= 1, clip > 0 (got {c})")
        self.net: MLP | None = None
        self.appr_params: appr.DPAPPRParams | None = None
        self.noise_multiplier = 0.0
        self.steps = 0

    # ------------------------------------------------------------------ features
    @staticmethod
    def _features(graph: Graph) -> torch.Tensor:
        return row_normalize(feature_matrix(graph).double()).float()

    @staticmethod
    def _aggregate(pi: sp.csr_matrix, x: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(pi @ x.double().numpy()).float()

    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        c, kind, private, split, rng, tgen = self.config, ctx.kind, ctx.private, ctx.split, ctx.rng, ctx.tgen
        # Sources are chosen among the PUBLIC training slots by a public per-node coin, so removing a node changes
        # only its own slot; the public slot count bounds the number of sources in every sensitivity and rate.
        slots = split.train_slot_ids
        if c.num_sources is not None and c.num_sources < slots.size:
            coin = np.random.default_rng(c.split_seed + 1).random(graph.num_nodes)
            slots = slots[coin[slots] < c.num_sources / slots.size]
        m_public = max(1, int(slots.size))
        labels_np = np.asarray(graph.labels)
        sources = np.sort(slots[labels_np[slots] >= 0])
        x = self._features(graph)
        y = torch.as_tensor(np.array(graph.labels), dtype=torch.long)

        # ---- stage 1: DP-APPR (charged before the APPR is computed)
        pbar_args = dict(alpha=c.alpha, rho=c.rho, tol=c.tol, max_iter=c.max_iter, clip=c.clip)
        if private:
            steps, q = steps_for(c.epochs, m_public, c.batch_size)
            self.appr_params, sigma2 = self._calibrate_stages(kind, budget, m_public, steps, q)
            for entry in appr.ledger_entries(self.appr_params):
                budget.charge(entry)
            pi = appr.release(appr.clipped_appr_sparse(graph, sources, **pbar_args), self.appr_params, rng)
        else:  # non-private baseline: exact top-K of the clipped APPR
            pi = sparse_row_topk(appr.clipped_appr_sparse(graph, sources, **pbar_args), c.topk)
        pi = column_clip(pi, col_cap=c.col_cap, col_l1=c.col_l1)
        z = torch.cat([x[as_index(sources)], self._aggregate(pi, x)], dim=1)
        ys = y[as_index(sources)]

        # ---- stage 2: classifier on [x_s, (Pi X)_s]
        self.in_dim = z.shape[1]
        self.net = self._build_net()
        tcfg = TrainConfig(epochs=c.epochs, lr=c.lr, batch_size=c.batch_size, max_grad_norm=c.max_grad_norm)
        n_ex = int(sources.size)
        if kind == "edge" or not private:
            def loss(module, idx):
                return nn.functional.cross_entropy(module(z[idx]), ys[idx])

            train_nonprivate(self.net, loss, n_ex, tcfg, generator=tgen, progress=progress)
        else:
            steps, q = steps_for(c.epochs, m_public, c.batch_size)

            def entry_fn(count: int, s: float | None = None) -> LedgerEntry:
                return stage2_entry(noise_multiplier=trainer.noise_multiplier if s is None else s, sample_rate=q,
                                    col_cap=c.col_cap, count=count)

            trainer = make_dpsgd_trainer(
                self.net, node_example_loss, budget=budget, cfg=tcfg, num_examples=n_ex, public_num_examples=m_public,
                noise_multiplier=1.0,
                stage="dpar.classifier.dpsgd", rng=rng, noise_generator=tgen, entry_fn=lambda n: entry_fn(n),
                proof="dpar-classifier", batch_loss=node_batch_loss)
            sigma = sigma2
            trainer.noise_multiplier = sigma
            self.noise_multiplier, self.steps = sigma, steps
            self.net.train()
            run_dpsgd(trainer, (z, ys), steps, progress)
        self.net.eval()
        # Only the nodes the report scores are queried: push costs follow the queried nodes, not n.
        scored = np.union1d(split.train, split.test)
        pred = np.full(graph.num_nodes, -1, dtype=np.int64)
        pred[scored] = self.predict(graph, scored)
        self._evaluate(graph, pred)

    def _calibrate_stages(self, kind: str, budget: Any, num_sources: int, steps: int, q: float):
        """(DP-APPR parameters, classifier noise multiplier), both decided before anything is charged.

        Stage 1 is calibrated to ``appr_fraction * epsilon`` (all of epsilon under edge adjacency); under node
        adjacency the classifier's noise is then calibrated so that the composed ledger meets epsilon. If no noise
        multiplier fits (the conversion to (epsilon, delta) is not additive), stage 1's share is lowered by 30% and
        both are recalibrated (at most 6 times) — the split is a planning choice, the ledger decides.
        """
        from graphrelease.errors import BudgetError

        c = self.config
        frac = c.appr_fraction if kind == "node" else 1.0
        last: Exception | None = None
        for _ in range(6):
            params = appr.calibrate(
                c.mechanism, k=c.topk, clip=c.clip, num_sources=num_sources, target_epsilon=budget.epsilon * frac,
                delta=budget.delta, accountant=budget.accountant, base_entries=budget.ledger.entries,
                value_fraction=c.value_fraction)
            if kind != "node":
                return params, 0.0
            stage1 = appr.ledger_entries(params)
            try:
                sigma = calibrate_common_noise(
                    lambda s: stage1 + [stage2_entry(noise_multiplier=s, sample_rate=q, col_cap=c.col_cap,
                                                     count=steps)], budget)
                return params, sigma
            except BudgetError as err:
                last, frac = err, frac * 0.7
        raise BudgetError(f"dpar: epsilon={budget.epsilon} cannot cover both the DP-APPR release and {steps} "
                          f"classifier steps; raise --epsilon or lower epochs ({last})")

    @torch.no_grad()
    def logits(self, graph: Graph, nodes: np.ndarray | None = None) -> torch.Tensor:
        """Logits of ``nodes`` (default: every node; rows of other nodes are computed from an empty PPR row)."""
        if self.net is None:
            raise OptionError("dpar: call fit() or load() before predict()")
        c = self.config
        x = self._features(graph)
        if 2 * x.shape[1] != self.in_dim:
            raise OptionError(f"dpar: the model expects {self.in_dim // 2} features, the graph has {x.shape[1]}")
        if nodes is None:
            nodes = np.arange(graph.num_nodes)
        if c.inference == "push":
            pi = push_ppr_topk(graph.to_csr().astype(np.float64), nodes, alpha=c.alpha, r_max=c.push_r_max, k=c.topk)
        else:
            pi = power_iteration_topk(graph, alpha=c.alpha, iterations=c.power_iterations, k=c.topk)
        pi = sp.diags(1.0 / np.maximum(np.asarray(pi.sum(axis=1)).ravel(), 1e-12)) @ pi * min(1.0, c.col_l1)
        z = torch.cat([x, self._aggregate(pi.tocsr(), x)], dim=1)
        return self.net(z[torch.as_tensor(np.asarray(nodes), dtype=torch.long)])

    def predict(self, graph: Graph, nodes: np.ndarray | None = None) -> np.ndarray:
        """Class of each of ``nodes`` (default all); with ``nodes``, PPR is pushed from those nodes only."""
        return self.logits(graph, nodes).argmax(dim=1).numpy()

    def embed(self, graph: Graph) -> np.ndarray:
        raise OptionError(
            "dpar: embeddings of a graph need its structure (power iteration at inference), which is not a private "
            "release; DPAR's private output is the trained model: use `graphrelease train --method dpar`"
        )


