r"""GAP for link prediction under edge adjacency: GAP's perturbed aggregates as DP node embeddings, and a pair
scorer trained with DP-SGD over edge examples (``graphrelease train --task link-prediction --method gap``).

Design (proof: ``docs/privacy.md#gap-link``). The training graph (held-out test edges already removed by
:func:`graphrelease.models.link.holdout_split`) is split by a public per-pair coin into *message* edges
:math:`E_m` and *supervision* edges :math:`E_s` (``sup_frac``). One edge is in exactly one of them, whatever the
other edges are.

1. :math:`H_0 = \mathrm{rownorm}((X-\bar x)P)`, :math:`P` the top ``encoder_dim`` right singular vectors of the
   centred features (features are public under edge adjacency: no cost); a graph without features gets public
   random Gaussian rows instead (then :math:`H_1` is a noisy random-projection sketch of :math:`A`).
2. GAP aggregation perturbation over :math:`E_m` only:
   :math:`H_k=\mathrm{rownorm}(A_m H_{k-1}+\mathcal N(0,\sigma_a^2 I))`, k = 1..K, sensitivity :math:`\sqrt2` per
   hop (one undirected edge changes two rows by at most 1 each; probed in ``tests/models/test_gap.py``).
   :math:`Z_u=[H_0\|H_1\|\dots\|H_K]_u` is a DP release (post-processing from here on).
3. Scorer :math:`s(u,v)=w^\top(\phi(Z_u)\odot\phi(Z_v))+b` trained by DP-SGD on tuples: each supervision edge joins
   the batch with probability :math:`\gamma` (Poisson, ``sample_rate``, a public constant); the tuple
   :math:`(u, v, n_1..n_k)` with a random orientation and :math:`k` negatives drawn uniformly from the node slots,
   independently of :math:`E` and of the other tuples, has loss
   :math:`\mathrm{softplus}(-s(u,v)) + \frac1k\sum_j \mathrm{softplus}(s(u,n_j))`, reading only released rows of
   :math:`Z`. Its gradient is clipped to :math:`C`; removing an edge of :math:`E_s` removes exactly one tuple, so
   each step is the Poisson-subsampled Gaussian (add/remove, sensitivity :math:`C`). The noisy sum is divided by
   :math:`\gamma n` (public node count; Adam is invariant to this scale up to its epsilon), so :math:`|E|` is
   neither used nor released.

Accounting: ``gaussian`` (count K, sensitivity :math:`\sqrt2`) + ``subsampled_gaussian`` (count T, rate
:math:`\gamma`). An edge affects only one of the two mechanisms (parallel composition would charge their maximum);
the ledger composes both, which is an upper bound. The aggregation and DP-SGD share one noise-to-sensitivity ratio,
calibrated before anything private is read; every DP-SGD step is charged before it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.models.base import FitContext, MODELS, PrivateModel
from graphrelease.models.common import (
    MLP,
    adjacency_matrix,
    feature_matrix,
    load_tensors,
    noise_generators,
    row_normalize,
    save_module,
    split_state,
)
from graphrelease.models.private_training import calibrate_common_noise
from graphrelease.models.gap import aggregation_sensitivity, perturbed_hops
from graphrelease.models.link import pair_coins
from graphrelease.privacy.ledger import LedgerEntry


@dataclass
class GAPLinkConfig:
    hops: int = 2
    encoder_dim: int = 32
    hidden: int = 64
    scorer: str = "blocks"
    sup_frac: float = 0.3
    sample_rate: float = 0.1
    steps: int = 100
    num_negatives: int = 4
    lr: float = 1e-2
    max_grad_norm: float = 1.0
    chunk_size: int = 512
    split_seed: int = 0
    seed: int | None = None


SCORERS = ("blocks", "hadamard", "mlp", "dot")


class PairScorer(nn.Module):
    r"""Symmetric pair scores from released rows :math:`z=[H_0\|\dots\|H_K]` (``blocks`` hop vectors of ``dim``).

    * ``blocks``: :math:`b+\sum_{k\le l} a_{kl}\,(\langle H_k(u),H_l(v)\rangle+\langle H_l(u),H_k(v)\rangle)/2`,
      :math:`(K+1)(K+2)/2+1` parameters. Few parameters keep DP-SGD's noise norm small (it grows with the square
      root of the parameter count while the clipped signal does not).
    * ``hadamard``: :math:`b+w^\top(z_u\odot z_v)`.
    * ``mlp``: :math:`b+w^\top(\phi(z_u)\odot\phi(z_v))`, :math:`\phi` a 2-layer MLP.
    * ``dot``: :math:`\langle z_u, z_v\rangle`, nothing trained (no DP-SGD stage, no cost beyond the aggregates).
    """

    def __init__(self, kind: str, dim: int, blocks: int, hidden: int) -> None:
        super().__init__()
        if kind not in SCORERS:
            raise OptionError(f"gap link prediction: scorer must be one of {SCORERS}, got {kind!r}")
        self.kind, self.dim, self.blocks = kind, dim, blocks
        if kind == "blocks":
            iu = torch.triu_indices(blocks, blocks)
            self.register_buffer("iu", iu, persistent=False)
            self.a = nn.Parameter(torch.zeros(iu.shape[1]))
            self.b = nn.Parameter(torch.zeros(1))
        elif kind == "hadamard":
            self.lin = nn.Linear(dim * blocks, 1)
        elif kind == "mlp":
            self.phi = MLP(dim * blocks, hidden, hidden, layers=2)
            self.out = nn.Linear(hidden, 1)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:  # pairs: (m, 2, blocks * dim) -> scores (m,)
        zu, zv = pairs[:, 0], pairs[:, 1]
        if self.kind == "dot":
            return (zu * zv).sum(-1)
        if self.kind == "hadamard":
            return self.lin(zu * zv).squeeze(-1)
        if self.kind == "mlp":
            return self.out(self.phi(zu) * self.phi(zv)).squeeze(-1)
        hu = zu.reshape(-1, self.blocks, self.dim)
        hv = zv.reshape(-1, self.blocks, self.dim)
        g = torch.einsum("mkd,mld->mkl", hu, hv)
        g = 0.5 * (g + g.transpose(1, 2))
        return g[:, self.iu[0], self.iu[1]] @ self.a + self.b


def tuple_loss(model_fn, example):
    """Loss of one tuple ``(z_u, z_v, z_negs (k, dim))``: logistic loss of the edge and the mean over negatives."""
    zu, zv, zn = example
    k = zn.shape[0]
    left = torch.cat([zu.unsqueeze(0), zu.unsqueeze(0).expand(k, -1)])
    right = torch.cat([zv.unsqueeze(0), zn])
    s = model_fn(torch.stack([left, right], dim=1))
    return nn.functional.softplus(-s[0]) + nn.functional.softplus(s[1:]).mean()


def clipped_tuple_sum(scorer: nn.Module, z: torch.Tensor, pos: np.ndarray, negs: np.ndarray, *, max_grad_norm: float,
                      chunk_size: int = 512) -> dict[str, torch.Tensor]:
    """The pre-noise query of one DP-SGD step: sum over the batch's tuples of clipped gradients (float64)."""
    from graphrelease.dpsgd import FlatClipping, clipped_grad_sum

    p = torch.as_tensor(np.asarray(pos), dtype=torch.long).reshape(-1, 2)
    ex = (z[p[:, 0]], z[p[:, 1]], z[torch.as_tensor(np.asarray(negs), dtype=torch.long)])
    return clipped_grad_sum(scorer, tuple_loss, ex, torch.arange(p.shape[0]), FlatClipping(max_grad_norm=max_grad_norm),
                            chunk_size=chunk_size)


def message_supervision_split(graph: Graph, *, sup_frac: float, seed: int) -> tuple[Graph, np.ndarray]:
    """(graph on the message edges, supervision edges) by the public pair coin (salt 2; the hold-out uses salt 1)."""
    if not 0.0 < float(sup_frac) < 1.0:
        raise OptionError(f"gap link prediction: sup_frac must be in (0, 1), got {sup_frac}")
    e = np.asarray(graph.edges)
    sup = pair_coins(e, seed, salt=2) < float(sup_frac)
    return graph.replace(edges=e[~sup]), e[sup]


def gap_link_entries(*, scale: float, hops: int, sample_rate: float, steps: int) -> list[LedgerEntry]:
    """Ledger entries of one fit at noise-to-sensitivity ratio ``scale`` (see the module docstring)."""
    sens = aggregation_sensitivity("edge", 0)
    out = [
        LedgerEntry(mechanism="gaussian", stage="gap_link.aggregation", params={"noise_multiplier": scale * sens},
                    count=hops, sensitivity=sens, proof="gap-link",
                    note=f"K={hops} hops over the message edges, rows normalised"),
        LedgerEntry(mechanism="subsampled_gaussian", stage="gap_link.scorer.dpsgd", count=steps, sensitivity=1.0,
                    params={"noise_multiplier": float(scale), "sample_rate": float(sample_rate), "sampling": "poisson",
                            "neighboring": "add_remove"},
                    proof="gap-link", note="supervision-edge tuples, independent uniform negatives, flat clipping"),
    ]
    return out if steps > 0 else out[:1]  # no DP-SGD stage (scorer 'dot' or steps=0): nothing to charge for it


@MODELS.register("gap-link")
class GAPLink(PrivateModel):
    """GAP aggregates + DP-SGD pair scorer for link prediction (edge adjacency)."""

    config_class = GAPLinkConfig
    adjacencies = frozenset({"edge"})
    adjacency_refusal_note = (": gap link prediction runs under edge only (node-level link prediction would need "
                              "the node-level GAP analysis for every stage)")
    pair_score = "logit"

    def holds_release_for(self, graph: Graph) -> bool:
        return self._cache is not None and self._cache[0] is graph
    #: node labels are not used; ``graphrelease.train`` reports the held-out AUC instead
    train_accuracy: float = float("nan")
    test_accuracy: float = float("nan")

    def __init__(self, **options: Any) -> None:
        self.config = c = GAPLinkConfig(**options)
        if c.hops < 1 or c.steps < 0 or c.num_negatives < 1 or not 0.0 < c.sample_rate <= 1.0:
            raise OptionError(f"gap link prediction: need hops >= 1, steps >= 0, num_negatives >= 1, "
                              f"0 < sample_rate <= 1 (got {c})")
        self.scorer: PairScorer | None = None
        self.projection: torch.Tensor | None = None
        self.mean: torch.Tensor | None = None
        self.aggregation_noise_std = 0.0
        self.noise_multiplier = 0.0
        self.steps = 0  # DP-SGD steps the fit ran (0 for scorer 'dot')
        self.used_seed = False
        self.public_assumptions: dict[str, str] = {}
        self._cache: tuple[Graph, torch.Tensor] | None = None

    # ------------------------------------------------------------------ embeddings
    def _base_rows(self, graph: Graph, tgen: torch.Generator | None = None) -> torch.Tensor:
        x = feature_matrix(graph)
        if self.projection is None:  # no features: public random rows (a random-projection sketch base)
            g = tgen if tgen is not None else noise_generators(None)[1]
            return row_normalize(torch.randn(graph.num_nodes, self.config.encoder_dim, generator=g))
        if x.shape[1] != self.projection.shape[0]:
            raise OptionError(f"gap link prediction: the model expects {self.projection.shape[0]} features, "
                              f"the graph has {x.shape[1]}")
        return row_normalize((x - self.mean) @ self.projection)

    def _fit_projection(self, graph: Graph) -> None:
        x = feature_matrix(graph)
        if x.shape[1] <= 1:
            self.projection = self.mean = None
            return
        self.mean = x.mean(dim=0, keepdim=True)
        q = min(self.config.encoder_dim, x.shape[1], x.shape[0])
        if x.shape[1] <= self.config.encoder_dim:
            self.projection = torch.eye(x.shape[1])
        else:  # public features: an SVD of them costs nothing
            self.projection = torch.svd_lowrank(x - self.mean, q=q, niter=4)[2].contiguous()

    def _embeddings(self, graph: Graph, tgen: torch.Generator | None = None) -> torch.Tensor:
        h0 = self._base_rows(graph, tgen)
        hops = perturbed_hops(adjacency_matrix(graph), h0, self.config.hops, self.aggregation_noise_std, tgen)
        return torch.cat([h0] + hops, dim=1)

    # ------------------------------------------------------------------ fitting
    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        from graphrelease.dpsgd import gaussian_noise_like

        c, private, rng, tgen = self.config, ctx.private, ctx.rng, ctx.tgen
        self.public_assumptions = {
            "node_set": "the node set and its size are public (edge adjacency)",
            "features": "node features are public under edge adjacency (the released projection is computed from them)",
            "split": f"held-out/message/supervision edges are chosen by public per-pair coins (split_seed="
                     f"{c.split_seed}), independent of the other edges",
            "sample_rate": f"the DP-SGD sampling rate {c.sample_rate} and step count {c.steps} are public constants",
        }
        msg_graph, sup = message_supervision_split(graph, sup_frac=c.sup_frac, seed=c.split_seed)
        if sup.shape[0] == 0:
            raise OptionError(f"gap link prediction: no supervision edges at sup_frac={c.sup_frac}")
        self._fit_projection(graph)
        n = graph.num_nodes
        self.steps = 0 if c.scorer == "dot" else c.steps

        def entries(s: float) -> list[LedgerEntry]:
            return gap_link_entries(scale=s, hops=c.hops, sample_rate=c.sample_rate, steps=self.steps)

        scale = calibrate_common_noise(entries, budget) if private else 0.0
        self.noise_multiplier = scale
        self.aggregation_noise_std = scale * aggregation_sensitivity("edge", 0)
        agg_entry, *rest = entries(scale)
        if private:
            budget.charge(agg_entry)  # before the noisy aggregates exist
        z = self._embeddings(msg_graph, tgen)
        self._cache = (graph, z)

        self.scorer = PairScorer(c.scorer, z.shape[1] // (c.hops + 1), c.hops + 1, c.hidden)
        self.scorer.train()
        steps = self.steps
        if steps:
            opt = torch.optim.Adam(self.scorer.parameters(), lr=c.lr)
            named = dict(self.scorer.named_parameters())
            one_step = rest[0].with_count(1)
        for _ in range(steps):
            if private:
                budget.charge(one_step)  # before the batch is sampled
            pos = sup[rng.random(sup.shape[0]) < c.sample_rate]
            flip = rng.random(pos.shape[0]) < 0.5  # random orientation: u is the anchor of the negatives
            pos = np.where(flip[:, None], pos[:, ::-1], pos)
            negs = rng.integers(0, n, size=(pos.shape[0], c.num_negatives))
            summed = clipped_tuple_sum(self.scorer, z, pos, negs, max_grad_norm=c.max_grad_norm,
                                       chunk_size=c.chunk_size)
            noise = gaussian_noise_like(summed, scale * c.max_grad_norm, tgen) if private else None
            opt.zero_grad(set_to_none=True)
            for name, total in summed.items():
                gsum = total if noise is None else total + noise[name]
                named[name].grad = (gsum / (c.sample_rate * n)).to(named[name].dtype)
            opt.step()
            if progress is not None:
                progress()
        self.scorer.eval()

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def score_pairs(self, graph: Graph, pairs: np.ndarray) -> np.ndarray:
        """Scores (logits) of node pairs of ``graph``. On the training graph the released, already-charged
        embeddings are reused; on another graph (the user's own data) its aggregates are computed with the training
        noise level (not a release of the training graph; not charged)."""
        if self.scorer is None:
            raise OptionError("gap link prediction: call fit() or load() before scoring")
        if self._cache is not None and self._cache[0] is graph:
            z = self._cache[1]
        else:
            z = self._embeddings(graph)
        p = torch.as_tensor(np.asarray(pairs), dtype=torch.long).reshape(-1, 2)
        if p.numel() and (int(p.min()) < 0 or int(p.max()) >= graph.num_nodes):
            raise OptionError(f"gap link prediction: pairs must name nodes 0..{graph.num_nodes - 1}")
        return self.scorer(torch.stack([z[p[:, 0]], z[p[:, 1]]], dim=1)).numpy()

    def predict(self, graph: Graph) -> np.ndarray:
        """Per node: the released embedding row (pair scores come from :meth:`score_pairs`)."""
        return self.embed(graph)

    @torch.no_grad()
    def embed(self, graph: Graph) -> np.ndarray:
        if self._cache is not None and self._cache[0] is graph:
            return self._cache[1].numpy()
        return self._embeddings(graph).numpy()

    # ------------------------------------------------------------------ persistence
    def save(self, directory: Path) -> list[Path]:
        if self.scorer is None:
            raise OptionError("gap link prediction: nothing to save before fit()")
        extra = {} if self.projection is None else {"projection": self.projection, "mean": self.mean}
        return [save_module(directory, "weights", {"scorer": self.scorer}, extra),
                self.write_released_config(directory, aggregation_noise_std=self.aggregation_noise_std,
                                           block_dim=int(self.scorer.dim))]

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> "GAPLink":
        model = cls.from_released_config(config)
        model.aggregation_noise_std = float(config.get("aggregation_noise_std", 0.0))
        tensors = load_tensors(Path(directory) / "weights.safetensors")
        extra = split_state(tensors, "extra")
        model.projection, model.mean = extra.get("projection"), extra.get("mean")
        c = model.config
        model.scorer = PairScorer(c.scorer, int(config["block_dim"]), c.hops + 1, c.hidden)
        model.scorer.load_state_dict(split_state(tensors, "scorer"))
        model.scorer.eval()
        return model
