"""Training procedures of the GVAE/GGAN generators: non-private, the seed's Algorithm 1 (``paper``) and the sound
constructions of PRIVACY.md §3 (collections, option A edge tuples, option B bucketed subgraphs).

Per-example gradients, clipping and noise come from :mod:`graphrelease.dpsgd` (``clipped_grad_sum``,
``FlatClipping``, ``gaussian_noise_like``, ``PoissonSampler``). We do not use ``DPSGDTrainer.step`` because these
procedures need (a) examples rebuilt at every step (option B buckets), (b) an extra gradient that is
post-processing (option A's fixed negatives, KL and GAN terms over DP-released inputs), (c) the seed's clipping
bound decayed by 0.99 per epoch. Every step is still charged to the budget before it runs: we charge the planned
steps in chunks (``charge_every``) before each chunk, so the budget refuses before anything private is computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graphrelease.dpsgd.clipping import FlatClipping
from graphrelease.dpsgd.engine import clipped_grad_sum, gaussian_noise_like
from graphrelease.generators import deep_models as dm
from graphrelease.privacy.ledger import LedgerEntry

Progress = Callable[[int, int], None] | None


class DeepNet(nn.Module):
    """Holds the functional parameters as ``nn.Parameter`` (names ``enc_W0`` ...) so the DP-SGD engine can
    ``functional_call`` it. ``forward(kind, *args)`` returns one example's scalar loss."""

    def __init__(self, params: dict[str, torch.Tensor], *, gan: bool, lambda1: float, lambda2: float) -> None:
        super().__init__()
        self._names = []
        for key, value in params.items():
            name = key.replace(".", "_", 1)
            self.register_parameter(name, nn.Parameter(value.clone().float()))
            self._names.append((key, name))
        self.gan, self.lambda1, self.lambda2 = gan, float(lambda1), float(lambda2)

    def p(self) -> dict[str, torch.Tensor]:
        return {key: getattr(self, name) for key, name in self._names}

    def set_trainable(self, prefixes: tuple[str, ...]) -> None:
        for key, name in self._names:
            getattr(self, name).requires_grad_(key.startswith(prefixes))

    def detached(self) -> dict[str, torch.Tensor]:
        return {key: getattr(self, name).detach().clone() for key, name in self._names}

    def forward(self, kind: str, *args: Any) -> torch.Tensor:  # noqa: D401 - dispatch to the per-example losses
        p = self.p()
        if kind == "dense":
            x, adj, mask, eps = args
            return dm.dense_example_loss(p, x, adj, mask, eps, gan=self.gan, lambda1=self.lambda1,
                                         lambda2=self.lambda2)
        if kind == "edge":  # option A: the positive-edge term of one edge example
            xu, xv, eu, ev = args
            mu, lv = dm.mlp_encode(p, torch.stack([xu, xv]))
            h = dm.decode(p, dm.reparameterize(mu, lv, torch.stack([eu, ev])))
            return F.softplus(-dm.pair_logits(p, h[0], h[1]))
        if kind == "paper_node":  # Alg. 1: node i's reconstruction row + KL, decoder parameters only
            z_all, a_row, onehot_i, pos_weight, kl_i = args
            h = dm.decode(p, z_all)
            logits = h @ (onehot_i @ h) + p["dec.bias"][0]  # one-hot selection (vmap cannot index by a tensor)
            bce = F.binary_cross_entropy_with_logits(logits, a_row, reduction="none", pos_weight=pos_weight)
            return bce.mean() + kl_i
        raise ValueError(kind)


@dataclass
class Schedule:
    """A DP-SGD schedule (all public): Poisson rate, steps, noise multiplier, clipping bound and its decay."""

    sample_rate: float
    steps: int
    noise_multiplier: float
    max_grad_norm: float = 5.0
    clip_decay: float = 0.99  # per epoch (1/sample_rate steps), as in the seed
    lr: float = 1e-2

    def clip_at(self, step: int) -> float:
        epoch = int(step * self.sample_rate)
        return self.max_grad_norm * self.clip_decay ** epoch


def _adam(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam([q for q in model.parameters() if q.requires_grad], lr=lr)


def _apply(model: DeepNet, opt: torch.optim.Optimizer, grads: dict[str, torch.Tensor]) -> None:
    named = dict(model.named_parameters())
    opt.zero_grad(set_to_none=True)
    for name, g in grads.items():
        named[name].grad = g.to(torch.float32)
    opt.step()


class _Charger:
    """Charges ``entry`` for the next chunk of steps before they run (BudgetError propagates, nothing computed)."""

    def __init__(self, budget, entry: LedgerEntry | None, total: int, every: int) -> None:
        self.budget, self.entry, self.total = budget, entry, total
        self.every = max(1, int(every))
        self.paid = 0

    def before(self, step: int) -> None:
        if self.entry is None or step < self.paid:
            return
        count = min(self.every, self.total - self.paid)
        self.budget.charge(self.entry.with_count(count))
        self.paid += count


# ---------------------------------------------------------------------------------------------------------- inputs
def identity_features(num_nodes: int, dim: int) -> torch.Tensor:
    """One-hot identity features (the seed's choice for graphs without features), padded/truncated to ``dim``."""
    x = torch.zeros(num_nodes, dim)
    k = min(num_nodes, dim)
    x[torch.arange(k), torch.arange(k)] = 1.0
    return x


def dense_example(num_nodes: int, edges: np.ndarray, size: int, feat: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Pad one small graph to ``size`` nodes (extra nodes masked; nodes beyond ``size`` dropped)."""
    adj = torch.zeros(size, size)
    k = min(num_nodes, size)
    if len(edges):
        e = torch.as_tensor(np.array(edges), dtype=torch.long)  # a copy: Graph arrays are read-only
        e = e[(e[:, 0] < size) & (e[:, 1] < size)]
        adj[e[:, 0], e[:, 1]] = 1.0
        adj[e[:, 1], e[:, 0]] = 1.0
    mask = torch.zeros(size)
    mask[:k] = 1.0
    x = torch.zeros(size, feat.shape[1])
    x[:k] = feat[:k]
    return x, adj, mask


def stack_examples(examples: list[tuple[torch.Tensor, ...]], size: int, gen: torch.Generator
                   ) -> tuple[torch.Tensor, ...]:
    xs, adjs, masks = [], [], []
    for x, adj, mask in examples:
        p = adj.shape[0]
        if p < size:
            pad = size - p
            x = F.pad(x, (0, 0, 0, pad))
            adj = F.pad(adj, (0, pad, 0, pad))
            mask = F.pad(mask, (0, pad))
        else:
            x, adj, mask = x[:size], adj[:size, :size], mask[:size]
        xs.append(x), adjs.append(adj), masks.append(mask)
    eps = torch.randn(len(examples), size, dm.LATENT, generator=gen)
    return torch.stack(xs), torch.stack(adjs), torch.stack(masks), eps


def _dense_loss_fn(model_fn, ex):
    x, adj, mask, eps = ex
    return model_fn("dense", x, adj, mask, eps)


# ------------------------------------------------------------------------------------------- non-private training
def train_dense_nonprivate(model: DeepNet, examples: list[tuple[torch.Tensor, ...]], *, steps: int, batch: int,
                           lr: float, gen: torch.Generator, rng: np.random.Generator,
                           progress: Progress = None) -> None:
    """Plain minibatch training over small graphs (a collection, or one graph as a single example)."""
    opt = _adam(model, lr)
    for step in range(steps):
        idx = rng.choice(len(examples), size=min(batch, len(examples)), replace=False)
        chosen = [examples[i] for i in idx]
        size = max(int(e[2].sum().item()) for e in chosen)
        x, adj, mask, eps = stack_examples(chosen, max(size, 2), gen)
        loss = torch.stack([model("dense", x[b], adj[b], mask[b], eps[b]) for b in range(len(chosen))]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if progress:
            progress(step + 1, steps)


def _pair_bce(p, h, pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
    lp = dm.pair_logits(p, h[pos[:, 0]], h[pos[:, 1]])
    ln = dm.pair_logits(p, h[neg[:, 0]], h[neg[:, 1]])
    return F.softplus(-lp).mean() + F.softplus(ln).mean()


def train_single_nonprivate(model: DeepNet, n: int, edges: np.ndarray, x: torch.Tensor | None, *, steps: int,
                            lr: float, gen: torch.Generator, rng: np.random.Generator, batch_edges: int = 4096,
                            progress: Progress = None) -> None:
    """Full-graph GCN encoder, reconstruction on sampled positive edges and as many uniform negative pairs.

    ``x=None`` means one-hot identity features (then ``X W_0 = W_0``). GAN terms use a random node subset's
    induced subgraph (real) against the decoder's probabilities on the same nodes (generated).
    """
    a_hat = dm.normalize_sparse(n, torch.as_tensor(edges, dtype=torch.long))
    e_t = torch.as_tensor(edges, dtype=torch.long)
    opt = _adam(model, lr)
    sub = min(n, 128)
    for step in range(steps):
        p = model.p()
        xw = p["enc.W0"] if x is None else x @ p["enc.W0"]
        h1 = torch.relu(torch.sparse.mm(a_hat, xw))
        mu = torch.sparse.mm(a_hat, h1 @ p["enc.Wmu"])
        lv = torch.sparse.mm(a_hat, h1 @ p["enc.Wlv"]).clamp(-10, 10)
        z = dm.reparameterize(mu, lv, torch.randn(mu.shape, generator=gen))
        h = dm.decode(p, z)
        k = min(batch_edges, len(edges))
        pos = e_t[torch.as_tensor(rng.choice(len(edges), size=k, replace=False))]
        neg = torch.as_tensor(np.stack(_uniform_pairs(n, k, rng), axis=1))
        loss = _pair_bce(p, h, pos, neg) + dm.kl_term(mu, lv) * (model.lambda1 if model.gan else 1.0) / max(n, 1) * 10
        if model.gan:
            loss = loss + _gan_subgraph_loss(model, p, z, h, n, edges, x, sub, rng)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if progress:
            progress(step + 1, steps)


def _uniform_pairs(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    i = rng.integers(0, n, size=k)
    j = rng.integers(0, n - 1, size=k)
    return i, np.where(j >= i, j + 1, j)


def _gan_subgraph_loss(model: DeepNet, p, z, h, n, edges, x, sub, rng) -> torch.Tensor:
    nodes = np.sort(rng.choice(n, size=sub, replace=False))
    pos = np.full(n, -1)
    pos[nodes] = np.arange(sub)
    keep = (pos[edges[:, 0]] >= 0) & (pos[edges[:, 1]] >= 0) if len(edges) else np.zeros(0, bool)
    local = pos[edges[keep]] if len(edges) else np.zeros((0, 2), int)
    xs = identity_features(sub, p["disc.W0"].shape[0]) if x is None else x[torch.as_tensor(nodes)]
    xs_full, adj, mask = dense_example(sub, local, sub, xs)
    pd = {k: v.detach() for k, v in dm.group(p, dm.DISC_PREFIX).items()}
    hz = dm.decode(p, z.detach()[torch.as_tensor(nodes)])
    gen_adj = torch.sigmoid(hz @ hz.T + p["dec.bias"][0]) * (1 - torch.eye(sub))
    d_fake_g = dm.discriminator(pd, xs_full, dm.normalize_dense(gen_adj, mask), mask)
    d_real = dm.discriminator(p, xs_full, dm.normalize_dense(adj, mask), mask)
    d_fake = dm.discriminator(p, xs_full, dm.normalize_dense(gen_adj.detach(), mask), mask)
    return model.lambda2 * (F.softplus(-d_fake_g) + F.softplus(-d_real) + F.softplus(d_fake))


# ------------------------------------------------------------------ sound: one example = one small graph / bucket
def train_dense_dp(model: DeepNet, build_batch: Callable[[np.random.Generator], list[tuple[torch.Tensor, ...]]],
                   *, schedule: Schedule, expected_batch: float, entry: LedgerEntry | None, budget,
                   noise_gen: torch.Generator, gen: torch.Generator, rng: np.random.Generator,
                   charge_every: int = 10**9, progress: Progress = None) -> int:
    """DP-SGD where each example is one small graph (a collection member or an option-B bucket subgraph).

    ``build_batch(rng)`` returns this step's examples (Poisson-sampled graphs, or the non-empty buckets); the whole
    per-example gradient (encoder, decoder and discriminator) is clipped to ``C_t`` and Gaussian noise
    ``N(0, (sigma C_t)^2)`` is added to the sum, which is divided by the public ``expected_batch``.
    """
    opt = _adam(model, schedule.lr)
    charger = _Charger(budget, entry, schedule.steps, charge_every)
    params = {n: q for n, q in model.named_parameters() if q.requires_grad}
    for step in range(schedule.steps):
        charger.before(step)
        clip = FlatClipping(max_grad_norm=schedule.clip_at(step))
        chosen = build_batch(rng)
        if chosen:
            size = max(2, max(int(e[2].sum().item()) for e in chosen))
            batch = stack_examples(chosen, size, gen)
            summed = clipped_grad_sum(model, _dense_loss_fn, batch, torch.arange(len(chosen)), clip, chunk_size=64)
        else:
            summed = {n: torch.zeros(q.shape, dtype=torch.float64) for n, q in params.items()}
        noise = gaussian_noise_like(summed, schedule.noise_multiplier * clip.bound, noise_gen)
        _apply(model, opt, {n: (summed[n] + noise[n]) / expected_batch for n in summed})
        if progress:
            progress(step + 1, schedule.steps)
    return schedule.steps


# --------------------------------------------------------------------------- sound option A: edge-tuple examples
def _edge_loss_fn(model_fn, ex):
    xu, xv, eu, ev = ex
    return model_fn("edge", xu, xv, eu, ev)


def train_edges_dp(model: DeepNet, node_x: torch.Tensor, edges: np.ndarray, *, schedule: Schedule,
                   expected_batch: float, num_negatives: int, entry: LedgerEntry | None, budget,
                   noise_gen: torch.Generator, gen: torch.Generator, rng: np.random.Generator,
                   sketch_disc: dict[str, Any] | None = None, charge_every: int = 10**9,
                   progress: Progress = None) -> int:
    """Option A (PRIVACY.md §3): examples are positive edges, Poisson-sampled with rate ``schedule.sample_rate``.

    ``node_x`` depends on E only through DP-released quantities (the sketch). The positive term of each sampled
    edge is clipped and noised; the fixed ``num_negatives`` uniform pairs, the KL term and (GGAN) the sketch
    discriminator terms read only ``node_x``, public randomness and the parameters, so their gradient is
    post-processing and is added without noise.
    """
    n = node_x.shape[0]
    e_t = torch.as_tensor(edges, dtype=torch.long)
    opt = _adam(model, schedule.lr)
    charger = _Charger(budget, entry, schedule.steps, charge_every)
    named = dict(model.named_parameters())
    for step in range(schedule.steps):
        charger.before(step)
        clip = FlatClipping(max_grad_norm=schedule.clip_at(step))
        # Poisson sampling of positive edges (each edge independently with rate q)
        picked = np.flatnonzero(rng.random(len(edges)) < schedule.sample_rate)
        if picked.size:
            pe = e_t[torch.as_tensor(picked)]
            ex = (node_x[pe[:, 0]], node_x[pe[:, 1]],
                  torch.randn(len(pe), dm.LATENT, generator=gen), torch.randn(len(pe), dm.LATENT, generator=gen))
            summed = clipped_grad_sum(model, _edge_loss_fn, ex, torch.arange(len(pe)), clip, chunk_size=256)
        else:
            summed = {k: torch.zeros(q.shape, dtype=torch.float64) for k, q in named.items() if q.requires_grad}
        noise = gaussian_noise_like(summed, schedule.noise_multiplier * clip.bound, noise_gen)
        private = {k: (summed[k] + noise[k]) / expected_batch for k in summed}
        # post-processing part: fixed number of uniform negatives (chosen without looking at E), KL, GAN
        p = model.p()
        i, j = _uniform_pairs(n, num_negatives, rng)
        nodes = torch.as_tensor(np.concatenate([i, j]))
        mu, lv = dm.mlp_encode(p, node_x[nodes])
        h = dm.decode(p, dm.reparameterize(mu, lv, torch.randn(mu.shape, generator=gen)))
        neg = dm.pair_logits(p, h[:num_negatives], h[num_negatives:])
        public_loss = F.softplus(neg).mean() + (model.lambda1 if model.gan else 1.0) * dm.kl_term(mu, lv) * 0.01
        if model.gan and sketch_disc is not None:
            public_loss = public_loss + _sketch_gan_loss(model, p, node_x, sketch_disc, gen, rng)
        opt.zero_grad(set_to_none=True)
        public_loss.backward()
        for k, g in private.items():
            q = named[k]
            q.grad = g.to(torch.float32) if q.grad is None else q.grad + g.to(torch.float32)
        opt.step()
        if progress:
            progress(step + 1, schedule.steps)
    return schedule.steps


def _sketch_gan_loss(model: DeepNet, p, node_x, sd: dict[str, Any], gen, rng) -> torch.Tensor:
    """The discriminator compares real sketch rows S_B (released) with generated ones P_B R + N' (same noise law)."""
    sketch, proj, noise_std = sd["sketch"], sd["projection"], sd["noise_std"]
    n = sketch.shape[0]
    b = min(128, n)
    rows = torch.as_tensor(np.sort(rng.choice(n, size=b, replace=False)))
    mu, lv = dm.mlp_encode(p, node_x)
    z = dm.reparameterize(mu, lv, torch.randn(mu.shape, generator=gen))
    h = dm.decode(p, z)
    logits = h[rows] @ h.T + p["dec.bias"][0]
    probs = torch.sigmoid(logits)
    probs = probs * (torch.arange(n).unsqueeze(0) != rows.unsqueeze(1))
    fake = probs @ proj + noise_std * torch.randn(b, proj.shape[1], generator=gen)
    real = sketch[rows]
    pd = {k: v.detach() for k, v in dm.group(p, dm.DISC_PREFIX).items()}
    d_fake_g = dm.sketch_discriminator(pd, fake)
    d_real = dm.sketch_discriminator(p, real)
    d_fake = dm.sketch_discriminator(p, fake.detach())
    return model.lambda2 * (F.softplus(-d_fake_g) + F.softplus(-d_real) + F.softplus(d_fake))


# ------------------------------------------------------------------------------------ paper mode (Alg. 1, unsound)
def _paper_loss_fn(model_fn, ex):
    z_all, a_row, i, pos_weight, kl_i = ex
    return model_fn("paper_node", z_all, a_row, i, pos_weight, kl_i)


def train_paper(model: DeepNet, n: int, edges: np.ndarray, x: torch.Tensor | None, *, schedule: Schedule,
                entry: LedgerEntry | None, budget, noise_gen: torch.Generator, gen: torch.Generator,
                rng: np.random.Generator, charge_every: int = 10**9, progress: Progress = None) -> int:
    """The seed's Algorithm 1 as published: per-node clipping of the decoder gradients only; the GCN encoder and
    the discriminator read the raw adjacency and are updated without clipping or noise. NOT differentially private
    (PRIVACY.md §3): one edge changes every node's encoder output in its receptive field, so the per-node bound C
    does not bound one edge's influence (``tests/generators/test_gvae.py`` shows the probe exceeding C)."""
    dense = torch.zeros(n, n)
    if len(edges):
        e = torch.as_tensor(edges, dtype=torch.long)
        dense[e[:, 0], e[:, 1]] = 1.0
        dense[e[:, 1], e[:, 0]] = 1.0
    a_hat = dm.normalize_dense(dense)
    pos_weight = torch.tensor(float(max(1.0, (n * n - 2 * len(edges)) / max(1, 2 * len(edges)))))
    feats = identity_features(n, n) if x is None else x
    opt = _adam(model, schedule.lr)
    charger = _Charger(budget, entry, schedule.steps, charge_every)
    named = dict(model.named_parameters())
    dec_names = [k for k in named if k.startswith("dec_")]
    for step in range(schedule.steps):
        charger.before(step)
        clip = FlatClipping(max_grad_norm=schedule.clip_at(step))
        p = model.p()
        mu, lv = dm.gcn_encode(p, feats, a_hat)
        z = dm.reparameterize(mu, lv, torch.randn(mu.shape, generator=gen))
        # encoder (+ discriminator): plain gradients on the raw adjacency, as in the seed
        h = dm.decode(p, z)
        logits = h @ h.T + p["dec.bias"][0]
        rec = F.binary_cross_entropy_with_logits(logits, dense, pos_weight=pos_weight)
        lam1 = model.lambda1 if model.gan else 1.0
        kl_nodes = -0.5 * (1 + lv - mu.pow(2) - lv.exp()).sum(-1) / n
        enc_loss = rec + lam1 * kl_nodes.sum()
        if model.gan:
            sub = np.arange(n) if n <= 128 else rng.choice(n, size=128, replace=False)
            enc_loss = enc_loss + _gan_subgraph_loss(model, p, z, h, n, edges, x, len(sub), rng)
        opt.zero_grad(set_to_none=True)
        enc_loss.backward()
        for k in dec_names:  # the decoder's update comes only from the clipped, noised per-node sum below
            named[k].grad = None
        # decoder: per-node clipped gradients (Poisson-sampled nodes), Gaussian noise
        picked = np.flatnonzero(rng.random(n) < schedule.sample_rate)
        model.set_trainable(("dec.",))
        if picked.size:
            idx = torch.as_tensor(picked)
            zd = z.detach()
            ex = (zd.unsqueeze(0).expand(len(idx), -1, -1), dense[idx], torch.eye(n)[idx],
                  pos_weight.expand(len(idx)), kl_nodes.detach()[idx] * n)
            summed = clipped_grad_sum(model, _paper_loss_fn, ex, torch.arange(len(idx)), clip, chunk_size=64)
        else:
            summed = {k: torch.zeros(named[k].shape, dtype=torch.float64) for k in dec_names}
        model.set_trainable(("enc.", "dec.", "disc."))
        noise = gaussian_noise_like(summed, schedule.noise_multiplier * clip.bound, noise_gen)
        denom = max(1.0, schedule.sample_rate * n)
        for k in summed:
            named[k].grad = ((summed[k] + noise[k]) / denom).to(torch.float32)
        opt.step()
        if progress:
            progress(step + 1, schedule.steps)
    return schedule.steps


def posterior_latents_gcn(model: DeepNet, n: int, edges: np.ndarray, x: torch.Tensor | None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Encoder posterior on the real graph (non-private mode only: it reads the raw adjacency)."""
    with torch.no_grad():
        p = model.p()
        a_hat = dm.normalize_sparse(n, torch.as_tensor(edges, dtype=torch.long))
        xw = p["enc.W0"] if x is None else x @ p["enc.W0"]
        h1 = torch.relu(torch.sparse.mm(a_hat, xw))
        return torch.sparse.mm(a_hat, h1 @ p["enc.Wmu"]), torch.sparse.mm(a_hat, h1 @ p["enc.Wlv"]).clamp(-10, 10)


def posterior_latents_mlp(model: DeepNet, node_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        return dm.mlp_encode(model.p(), node_x)


def epochs_to_steps(epochs: float, sample_rate: float) -> int:
    return max(1, int(math.ceil(epochs / sample_rate)))
