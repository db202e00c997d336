"""Functional GVAE / GGAN networks of the seed 'Secure Deep Graph Generation with Link Differential Privacy'.

Everything here is a pure function of a parameter dict (``dict[str, torch.Tensor]``) so that per-example gradients
can be taken with ``torch.func.vmap(grad(...))`` over truly independent examples (PRIVACY.md §3).

Architecture (seed §4, sizes as published):

.. math::

    g(X, A) = \\hat A\\, \\mathrm{ReLU}(\\hat A X W_0) W_{1}, \\quad \\hat A = D^{-1/2}(A + I) D^{-1/2}

with hidden size 32 and latent size 16; :math:`g_\\mu` and :math:`g_\\sigma` share :math:`W_0`.
Latent :math:`z_i \\sim N(\\mu_i, \\mathrm{diag}\\,\\sigma_i^2)`; FNN decoder :math:`f` (16 -> 32 -> 32, ReLU) and
:math:`A'_{ij} = \\mathrm{sigmoid}(f(z_i)^\\top f(z_j) + b)`. The scalar ``b`` (a learned logit offset) is our addition:
it lets collections be sampled with exact Bernoulli draws without a separately released edge count.
We add self-loops in :math:`\\hat A` (standard GCN; the seed writes :math:`D^{-1/2} A D^{-1/2}`).

Discriminator (GGAN): :math:`D(A) = f'(\\sum_i g'(X, A)_i)` with a GCN :math:`g'` of the same sizes, sum pooling and an
FNN :math:`f'` 16 -> 32 -> 1 (sigmoid output).

The "edge-tuple" encoder (PRIVACY.md option A) is an MLP over per-node inputs (public features and a DP sketch row),
so that the forward pass of one example reads only its own nodes' inputs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

HIDDEN = 32
LATENT = 16
DECODER_OUT = 32

ENC_PREFIX = "enc."
DEC_PREFIX = "dec."
DISC_PREFIX = "disc."


def _glorot(shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    bound = math.sqrt(6.0 / (shape[0] + shape[1]))
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1) * bound


def init_params(in_dim: int, *, gan: bool, gen: torch.Generator, disc_in_dim: int | None = None,
                encoder: str = "gcn") -> dict[str, torch.Tensor]:
    """Fresh parameters: ``enc.*`` (encoder), ``dec.*`` (decoder, the only released part), ``disc.*`` (GAN only)."""
    p: dict[str, torch.Tensor] = {
        "enc.W0": _glorot((in_dim, HIDDEN), gen),
        "enc.Wmu": _glorot((HIDDEN, LATENT), gen),
        "enc.Wlv": _glorot((HIDDEN, LATENT), gen) * 0.1,
        "dec.W1": _glorot((LATENT, HIDDEN), gen),
        "dec.b1": torch.zeros(HIDDEN),
        "dec.W2": _glorot((HIDDEN, DECODER_OUT), gen),
        "dec.b2": torch.zeros(DECODER_OUT),
        "dec.bias": torch.zeros(1),
    }
    if encoder == "mlp":
        p["enc.b0"] = torch.zeros(HIDDEN)
    if gan:
        d_in = in_dim if disc_in_dim is None else disc_in_dim
        p.update({
            "disc.W0": _glorot((d_in, HIDDEN), gen),
            "disc.W1": _glorot((HIDDEN, LATENT), gen),
            "disc.F1": _glorot((LATENT, HIDDEN), gen),
            "disc.c1": torch.zeros(HIDDEN),
            "disc.F2": _glorot((HIDDEN, 1), gen),
            "disc.c2": torch.zeros(1),
        })
    return p


def group(params: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k: v for k, v in params.items() if k.startswith(prefix)}


def normalize_dense(adj: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """:math:`D^{-1/2}(A+I)D^{-1/2}` for a dense (P, P) adjacency, padded rows (mask 0) kept at zero."""
    eye = torch.eye(adj.shape[-1], dtype=adj.dtype)
    if mask is not None:
        eye = eye * mask.unsqueeze(-1)
    a = adj + eye
    deg = a.sum(-1)
    inv = torch.where(deg > 0, deg.clamp_min(1e-12).rsqrt(), torch.zeros_like(deg))
    return inv.unsqueeze(-1) * a * inv.unsqueeze(-2)


def normalize_sparse(num_nodes: int, edges: torch.Tensor) -> torch.Tensor:
    """Sparse :math:`D^{-1/2}(A+I)D^{-1/2}` from canonical (m, 2) undirected edges."""
    loops = torch.arange(num_nodes)
    rows = torch.cat([edges[:, 0], edges[:, 1], loops])
    cols = torch.cat([edges[:, 1], edges[:, 0], loops])
    deg = torch.bincount(rows, minlength=num_nodes).float()
    vals = deg[rows].rsqrt() * deg[cols].rsqrt()
    return torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (num_nodes, num_nodes)).coalesce()


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sparse.mm(a, b) if a.is_sparse else a @ b


def gcn_encode(p: dict[str, torch.Tensor], x: torch.Tensor, a_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.relu(_mm(a_hat, x @ p["enc.W0"]))
    return _mm(a_hat, h @ p["enc.Wmu"]), _mm(a_hat, h @ p["enc.Wlv"]).clamp(-10, 10)


def mlp_encode(p: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.relu(x @ p["enc.W0"] + p["enc.b0"])
    return h @ p["enc.Wmu"], (h @ p["enc.Wlv"]).clamp(-10, 10)


def reparameterize(mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    return mu + torch.exp(0.5 * logvar) * eps


def decode(p: dict[str, torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    """FNN decoder f: latent (.., 16) -> node embedding (.., 32); logits are inner products plus ``dec.bias``."""
    return torch.relu(z @ p["dec.W1"] + p["dec.b1"]) @ p["dec.W2"] + p["dec.b2"]


def pair_logits(p: dict[str, torch.Tensor], hu: torch.Tensor, hv: torch.Tensor) -> torch.Tensor:
    return (hu * hv).sum(-1) + p["dec.bias"][0]


def kl_term(mu: torch.Tensor, logvar: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over (valid) nodes of KL(N(mu, sigma^2) || N(0, I))."""
    per_node = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1)
    if mask is None:
        return per_node.mean()
    return (per_node * mask).sum() / mask.sum().clamp_min(1.0)


def discriminator(p: dict[str, torch.Tensor], x: torch.Tensor, a_hat: torch.Tensor,
                  mask: torch.Tensor | None = None) -> torch.Tensor:
    """GCN + sum pooling + FNN 16 -> 32 -> 1; returns the logit of D (real)."""
    h = torch.relu(_mm(a_hat, x @ p["disc.W0"]))
    h = _mm(a_hat, h @ p["disc.W1"])
    if mask is not None:
        h = h * mask.unsqueeze(-1)
    pooled = h.sum(-2)
    return (torch.relu(pooled @ p["disc.F1"] + p["disc.c1"]) @ p["disc.F2"] + p["disc.c2"])[..., 0]


def sketch_discriminator(p: dict[str, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    """Discriminator over DP-sketch rows (option A): per-row layer, sum pooling, FNN 16 -> 32 -> 1."""
    h = torch.relu(rows @ p["disc.W0"]) @ p["disc.W1"]
    pooled = h.sum(-2) / math.sqrt(max(rows.shape[-2], 1))
    return (torch.relu(pooled @ p["disc.F1"] + p["disc.c1"]) @ p["disc.F2"] + p["disc.c2"])[..., 0]


def dense_example_loss(p: dict[str, torch.Tensor], x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor,
                       eps: torch.Tensor, *, gan: bool, lambda1: float, lambda2: float) -> torch.Tensor:
    """Loss of one small (padded) graph example, with GAN terms split so one gradient serves every network.

    Encoder parameters get d(L_rec + lambda1 L_prior), decoder parameters d(L_rec + lambda2 L_G), discriminator
    parameters d(lambda2 L_D): the terms that must not reach a network see that network's parameters detached.
    ``lambda1`` is 1 for plain GVAE. We use the standard sign convention (D ascends log D(A) + log(1 - D(A')),
    G uses the non-saturating -log D(A')).
    """
    a_hat = normalize_dense(adj, mask)
    mu, logvar = gcn_encode(p, x, a_hat)
    z = reparameterize(mu, logvar, eps)
    h = decode(p, z)
    logits = h @ h.transpose(-1, -2) + p["dec.bias"][0]
    pair_mask = mask.unsqueeze(-1) * mask.unsqueeze(-2) * (1 - torch.eye(adj.shape[-1]))
    n_pairs = pair_mask.sum().clamp_min(1.0)
    n_pos = (adj * pair_mask).sum()
    # Class re-weighting as in GAE (pos_weight = negatives / positives), computed from this example only.
    pos_weight = ((n_pairs - n_pos) / n_pos.clamp_min(1.0)).clamp(1.0, 100.0)
    bce = F.binary_cross_entropy_with_logits(logits, adj, reduction="none", pos_weight=pos_weight)
    rec = (bce * pair_mask).sum() / n_pairs
    loss = rec + lambda1 * kl_term(mu, logvar, mask)
    if gan:
        pd = {k: v.detach() for k, v in group(p, DISC_PREFIX).items()}
        gen_adj = torch.sigmoid(logits) * pair_mask
        # generator term: decoder sees a frozen discriminator and a frozen latent (encoder gets no GAN gradient)
        hz = decode(p, z.detach())
        gen_adj_dec = torch.sigmoid(hz @ hz.transpose(-1, -2) + p["dec.bias"][0]) * pair_mask
        d_fake_for_g = discriminator(pd, x, normalize_dense(gen_adj_dec, mask), mask)
        loss = loss + lambda2 * F.softplus(-d_fake_for_g)
        # discriminator term: real graph vs detached generated graph
        d_real = discriminator(p, x, a_hat, mask)
        d_fake = discriminator(p, x, normalize_dense(gen_adj.detach(), mask), mask)
        loss = loss + lambda2 * (F.softplus(-d_real) + F.softplus(d_fake))
    return loss
