"""Many independent per-graph GVAE/GGAN models trained in lockstep: the seed's collection protocol (one model per
graph, e.g. all 1500 IMDB-MULTI ego networks) without one Python training loop per graph.

Why: a 13-node graph's step costs ~10 ms of Python, autograd and optimizer dispatch and ~0.1 ms of arithmetic, so
1500 graphs x 8 settings of separate fits take hours; the same fits batched over graphs take minutes.

What it computes: graphs are padded to a common size ``P`` (padded nodes masked out of every sum and mean) and their
parameters stacked along a leading graph axis. Each graph's loss depends only on its own parameters, so
``torch.func.vmap(grad(loss))`` gives every graph exactly the gradient it would get alone, and Adam is elementwise, so
the stacked Adam update equals G separate Adam updates. The losses are the ones of
:func:`graphrelease.generators.deep_train.train_single_nonprivate` (``mode="nonprivate"``, featureless graph,
one-hot identity features, every edge a positive and as many uniform negatives per step, GAN terms on the whole
graph since it has <= 128 nodes) and :func:`graphrelease.generators.deep_train.train_paper` (``mode="paper"``: the
seed's Algorithm 1, per-node clipped and noised decoder gradients, unclipped encoder and discriminator on the raw
adjacency); ``tests/generators/test_gvae.py`` checks that a padded batched gradient equals the single-graph one.

Privacy: ``mode="paper"`` is NOT private (PRIVACY.md section 3; see ``deep_generator.PAPER_NOTE``). Every graph
runs the same public schedule (rate, steps, noise multiplier), so its nominal ledger entry is the same for every
graph and is computed once by the caller. The Gaussian noise of the decoder channel is drawn per graph in float64
from the caller's noise generator, as in :func:`~graphrelease.generators.deep_train.train_paper`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from graphrelease.generators import deep_models as dm
from graphrelease.generators.deep_train import Schedule
from graphrelease.graph import Graph

#: graphs per lockstep chunk (graphs are sorted by size first, so a chunk pads to nearly its own sizes)
DEFAULT_CHUNK = 256
MAX_NODES = 128  # the GAN terms of the single-graph code use the whole graph only up to 128 nodes


# ---------------------------------------------------------------------------------------------- per-graph losses
def _encode(p: dict[str, torch.Tensor], a_hat: torch.Tensor, mask: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor]:
    # one-hot identity features: X W_0 is W_0's first n rows (padded rows masked to 0, so they get no gradient)
    h1 = torch.relu(a_hat @ (p["enc.W0"] * mask.unsqueeze(-1)))
    return a_hat @ (h1 @ p["enc.Wmu"]), (a_hat @ (h1 @ p["enc.Wlv"])).clamp(-10, 10)


def _forward(p: dict[str, torch.Tensor], adj: torch.Tensor, mask: torch.Tensor, eps: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Encode one padded graph, sample the latents with the given ``eps`` and decode all pair logits."""
    mu, lv = _encode(p, dm.normalize_dense(adj, mask), mask)
    z = dm.reparameterize(mu, lv, eps)
    h = dm.decode(p, z)
    return mu, lv, z, h @ h.transpose(-1, -2) + p["dec.bias"][0]


def _discriminator(p: dict[str, torch.Tensor], a_hat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`deep_models.discriminator` with one-hot identity inputs (X W'_0 = W'_0 masked)."""
    h = torch.relu(a_hat @ (p["disc.W0"] * mask.unsqueeze(-1)))
    h = (a_hat @ (h @ p["disc.W1"])) * mask.unsqueeze(-1)
    pooled = h.sum(-2)
    return (torch.relu(pooled @ p["disc.F1"] + p["disc.c1"]) @ p["disc.F2"] + p["disc.c2"])[..., 0]


def _gan_terms(p: dict[str, torch.Tensor], z: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor,
               lambda2: float) -> torch.Tensor:
    """``deep_train._gan_subgraph_loss`` on the whole graph (its subgraph is the whole graph when n <= 128)."""
    off = mask.unsqueeze(-1) * mask.unsqueeze(-2) * (1 - torch.eye(adj.shape[-1]))
    pd = {k: v.detach() for k, v in dm.group(p, dm.DISC_PREFIX).items()}
    hz = dm.decode(p, z.detach())
    gen_adj = torch.sigmoid(hz @ hz.transpose(-1, -2) + p["dec.bias"][0]) * off
    d_fake_g = _discriminator(pd, dm.normalize_dense(gen_adj, mask), mask)
    d_real = _discriminator(p, dm.normalize_dense(adj, mask), mask)
    d_fake = _discriminator(p, dm.normalize_dense(gen_adj.detach(), mask), mask)
    return lambda2 * (F.softplus(-d_fake_g) + F.softplus(-d_real) + F.softplus(d_fake))


def nonprivate_loss(p: dict[str, torch.Tensor], adj: torch.Tensor, mask: torch.Tensor, eps: torch.Tensor,
                    neg_counts: torch.Tensor, *, gan: bool, lambda1: float, lambda2: float) -> torch.Tensor:
    """One graph's loss of ``train_single_nonprivate``: every edge is a positive (``batch_edges`` >= |E| here), the
    negatives are the uniform ordered pairs counted in ``neg_counts`` (as many as edges), KL weighted as there."""
    n = mask.sum()
    mu, lv, z, logits = _forward(p, adj, mask, eps)
    upper = torch.triu(adj, diagonal=1)
    m = upper.sum().clamp_min(1.0)
    pos = (F.softplus(-logits) * upper).sum() / m
    neg = (F.softplus(logits) * neg_counts).sum() / neg_counts.sum().clamp_min(1.0)
    loss = pos + neg + dm.kl_term(mu, lv, mask) * (lambda1 if gan else 1.0) / n * 10
    if gan:
        loss = loss + _gan_terms(p, z, adj, mask, lambda2)
    return loss


def paper_encoder_loss(p: dict[str, torch.Tensor], adj: torch.Tensor, mask: torch.Tensor, eps: torch.Tensor,
                       pos_weight: torch.Tensor, *, gan: bool, lambda1: float, lambda2: float
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """``train_paper``'s unclipped loss (encoder and discriminator gradients; the decoder's is discarded there);
    returns the loss and the latent sample z, which the per-node decoder examples read."""
    n = mask.sum()
    mu, lv, z, logits = _forward(p, adj, mask, eps)
    # the seed's BCE is a mean over all n x n entries (diagonal included, target 0)
    pair = mask.unsqueeze(-1) * mask.unsqueeze(-2)
    bce = F.binary_cross_entropy_with_logits(logits, adj, reduction="none", pos_weight=pos_weight)
    rec = (bce * pair).sum() / (n * n)
    kl = (-0.5 * (1 + lv - mu.pow(2) - lv.exp()).sum(-1) * mask).sum() / n
    loss = rec + (lambda1 if gan else 1.0) * kl
    if gan:
        loss = loss + _gan_terms(p, z, adj, mask, lambda2)
    return loss, z.detach()


def paper_node_loss(dec: dict[str, torch.Tensor], z_all: torch.Tensor, a_row: torch.Tensor, onehot: torch.Tensor,
                    pos_weight: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Node i's decoder example of ``train_paper``: mean BCE of its adjacency row (its KL term is a constant for the
    decoder and is left out: it adds nothing to the gradient)."""
    h = dm.decode(dec, z_all)
    logits = h @ (onehot @ h) + dec["dec.bias"][0]
    bce = F.binary_cross_entropy_with_logits(logits, a_row, reduction="none", pos_weight=pos_weight)
    return (bce * mask).sum() / mask.sum()


# --------------------------------------------------------------------------------------------------- stacking
def _pad_rows(t: torch.Tensor, rows: int) -> torch.Tensor:
    return F.pad(t, (0, 0, 0, rows - t.shape[0]))


def init_stack(graphs: Sequence[Graph], size: int, *, gan: bool, gen: torch.Generator
               ) -> dict[str, torch.Tensor]:
    """Each graph's own initialisation (``init_params(n_g)``, as a single fit draws it), padded to ``size`` rows."""
    per = []
    for g in graphs:
        p = dm.init_params(g.num_nodes, gan=gan, gen=gen, disc_in_dim=g.num_nodes)
        p["enc.W0"] = _pad_rows(p["enc.W0"], size)
        if gan:
            p["disc.W0"] = _pad_rows(p["disc.W0"], size)
        per.append(p)
    return {k: torch.stack([p[k] for p in per]) for k in per[0]}


def dense_stack(graphs: Sequence[Graph], size: int) -> tuple[torch.Tensor, torch.Tensor]:
    adj = torch.zeros(len(graphs), size, size)
    mask = torch.zeros(len(graphs), size)
    for b, g in enumerate(graphs):
        if g.num_edges:
            e = torch.as_tensor(np.array(g.edges), dtype=torch.long)
            adj[b, e[:, 0], e[:, 1]] = 1.0
            adj[b, e[:, 1], e[:, 0]] = 1.0
        mask[b, : g.num_nodes] = 1.0
    return adj, mask


class StackedAdam:
    """``torch.optim.Adam`` (defaults, no weight decay) on stacked parameters: elementwise, hence equal to one
    Adam per graph."""

    def __init__(self, params: dict[str, torch.Tensor], lr: float, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.m = {k: torch.zeros_like(v) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict[str, torch.Tensor], grads: dict[str, torch.Tensor]) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for k, g in grads.items():
            g = g.to(params[k].dtype)
            self.m[k].mul_(self.b1).add_(g, alpha=1 - self.b1)
            self.v[k].mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            denom = (self.v[k].sqrt() / c2 ** 0.5).add_(self.eps)
            params[k].addcdiv_(self.m[k], denom, value=-self.lr / c1)


def _uniform_pair_counts(n: np.ndarray, k: np.ndarray, size: int, rng: np.random.Generator) -> torch.Tensor:
    """Per graph b, ``k[b]`` uniform ordered pairs i != j of its ``n[b]`` nodes (``_uniform_pairs``), as counts."""
    out = np.zeros((len(n), size, size), dtype=np.float32)
    for b in range(len(n)):
        i = rng.integers(0, n[b], size=k[b])
        j = rng.integers(0, n[b] - 1, size=k[b])
        j = np.where(j >= i, j + 1, j)
        np.add.at(out[b], (i, j), 1.0)
    return torch.from_numpy(out)


# ------------------------------------------------------------------------------------------------------ training
def train_chunk(graphs: Sequence[Graph], *, mode: str, gan: bool, steps: int, lr: float, lambda1: float,
                lambda2: float, gen: torch.Generator, rng: np.random.Generator,
                schedule: Schedule | None = None, noise_gen: torch.Generator | None = None
                ) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, torch.Tensor] | None]:
    """Train one model per graph in lockstep; returns stacked parameters and (nonprivate) posterior latents."""
    if mode not in ("nonprivate", "paper"):
        raise ValueError(mode)
    n = np.array([g.num_nodes for g in graphs])
    if n.max() > MAX_NODES or n.min() < 2:
        raise ValueError(f"per-graph lockstep training handles 2..{MAX_NODES} nodes, got {n.min()}..{n.max()}")
    size = int(n.max())
    params = init_stack(graphs, size, gan=gan, gen=gen)
    adj, mask = dense_stack(graphs, size)
    opt = StackedAdam(params, lr)
    kw = dict(gan=gan, lambda1=lambda1, lambda2=lambda2)
    num_edges = np.array([g.num_edges for g in graphs])
    g_count = len(graphs)
    if mode == "nonprivate":
        step_grad = vmap(grad(lambda p, a, mk, e, c: nonprivate_loss(p, a, mk, e, c, **kw)))
        for _ in range(steps):
            eps = torch.randn(g_count, size, dm.LATENT, generator=gen)
            counts = _uniform_pair_counts(n, num_edges, size, rng)
            opt.step(params, step_grad(params, adj, mask, eps, counts))
        with torch.no_grad():
            mu, lv = vmap(lambda p, a, mk: _encode(p, dm.normalize_dense(a, mk), mk))(params, adj, mask)
        return params, (mu, lv)
    if schedule is None or noise_gen is None:
        raise ValueError("mode='paper' needs a schedule and a noise generator")
    nn_ = torch.as_tensor(n, dtype=torch.float32)
    m2 = 2 * torch.as_tensor(num_edges, dtype=torch.float32)
    pos_weight = ((nn_ * nn_ - m2) / m2.clamp_min(1.0)).clamp_min(1.0)
    enc_grad = vmap(grad(lambda p, a, mk, e, w: paper_encoder_loss(p, a, mk, e, w, **kw), has_aux=True))
    eye = torch.eye(size)
    # per (graph, node) decoder gradient: inner vmap over a graph's nodes, outer over graphs
    node_grad = vmap(vmap(grad(paper_node_loss), in_dims=(None, None, 0, 0, None, None)),
                     in_dims=(0, 0, 0, None, 0, 0))
    dec_keys = [k for k in params if k.startswith(dm.DEC_PREFIX)]
    denom = torch.as_tensor(np.maximum(1.0, schedule.sample_rate * n), dtype=torch.float64)
    for step in range(schedule.steps):
        clip = schedule.clip_at(step)
        eps = torch.randn(g_count, size, dm.LATENT, generator=gen)
        grads, z = enc_grad(params, adj, mask, eps, pos_weight)
        dec = {k: params[k] for k in dec_keys}
        per_node = node_grad(dec, z, adj, eye, pos_weight, mask)  # {k: (G, P, *shape)}
        norms = torch.sqrt(sum(g.reshape(g_count, size, -1).pow(2).sum(-1) for g in per_node.values()))
        # deep_train's FlatClipping factor min(1, C / (||g|| (1 + 1e-5) + 1e-6)), sums in float64
        factor = (clip / (norms.double() * (1.0 + 1e-5) + 1e-6)).clamp(max=1.0)
        picked = torch.as_tensor(rng.random((g_count, size)) < schedule.sample_rate) & (mask > 0)
        factor = factor * picked
        for k in dec_keys:
            g = per_node[k].double()
            summed = (g * factor.reshape(g_count, size, *([1] * (g.dim() - 2)))).sum(1)
            noise = torch.normal(0.0, schedule.noise_multiplier * clip, size=tuple(summed.shape),
                                 generator=noise_gen, dtype=torch.float64)
            grads[k] = (summed + noise) / denom.reshape(g_count, *([1] * (summed.dim() - 1)))
        opt.step(params, grads)
    return params, None


def fit_many(graphs: Sequence[Graph], *, mode: str, gan: bool, steps: int, lr: float = 1e-2, lambda1: float = 1.0,
             lambda2: float = 0.1, gen: torch.Generator, rng: np.random.Generator, schedule: Schedule | None = None,
             noise_gen: torch.Generator | None = None, chunk: int = DEFAULT_CHUNK) -> list[dict[str, Any]]:
    """One model per graph (in the input order): ``{"decoder": {...}, "latents": (mu, lv) or None}``."""
    order = np.argsort([g.num_nodes for g in graphs], kind="stable")
    out: list[dict[str, Any] | None] = [None] * len(graphs)
    for s in range(0, len(order), chunk):
        idx = order[s:s + chunk]
        part = [graphs[i] for i in idx]
        params, lat = train_chunk(part, mode=mode, gan=gan, steps=steps, lr=lr, lambda1=lambda1, lambda2=lambda2,
                                  gen=gen, rng=rng, schedule=schedule, noise_gen=noise_gen)
        for b, i in enumerate(idx):
            k = part[b].num_nodes
            out[i] = {"decoder": {key: v[b].detach().clone() for key, v in params.items()
                                  if key.startswith(dm.DEC_PREFIX)},
                      "latents": None if lat is None else (lat[0][b, :k].clone(), lat[1][b, :k].clone())}
    return out  # type: ignore[return-value]
