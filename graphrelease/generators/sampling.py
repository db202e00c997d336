"""Scalable edge sampling from an inner-product decoder, without an n x n dense matrix.

Model: every unordered pair ``i < j`` is an edge independently with probability
:math:`\\sigma(h_i^\\top h_j + b + \\delta)`, where ``h`` are decoded node embeddings, ``b`` the decoder's logit offset and
``delta`` an extra offset calibrated to a target expected edge count (a DP-released edge count, or the count declared
public).

Exactness
---------
* :func:`sample_edges` draws **exactly** from the product of Bernoullis above. It visits the pairs in row blocks
  (memory ``block_rows * n`` floats), computes the logits with one matrix product per block, draws pairs whose logit
  exceeds a threshold ``T`` directly, and draws the remaining (low-probability) pairs by thinning: a uniformly
  random set of candidates in which every pair is included independently with probability ``sigma(T)`` (a
  geometric gaps between candidates), each candidate kept with probability
  ``sigma(logit) / sigma(T)``. Thinning of an independent Bernoulli(p_max) process gives independent
  Bernoulli(sigma(logit)) draws, so the result is exact; it only avoids drawing one uniform per pair.
  Time is O(n^2 d) for the matrix products (they dominate), memory O(block_rows * n).
* :func:`calibrate_offset` is **approximate**: it estimates the expected edge count from ``num_probe`` uniformly
  random pairs (all pairs when there are fewer) and solves for ``delta`` by bisection. The relative error of the
  expected edge count is about ``1/sqrt(hits)`` in the probe sample; exact when all pairs are probed.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from graphrelease.errors import OptionError

DEFAULT_BLOCK_ROWS = 256


def _sigmoid(x: np.ndarray | float) -> np.ndarray | float:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x)))


def _random_pairs(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``k`` uniformly random unordered pairs ``i != j`` (with replacement)."""
    i = rng.integers(0, n, size=k)
    j = rng.integers(0, n - 1, size=k)
    j = np.where(j >= i, j + 1, j)
    return i, j


def expected_edges(emb: np.ndarray, bias: float, offset: float = 0.0, *, num_probe: int = 1_000_000,
                   rng: np.random.Generator | None = None) -> float:
    """Expected number of edges of the model (estimated from ``num_probe`` random pairs when n is large)."""
    n = emb.shape[0]
    total_pairs = n * (n - 1) / 2
    if n < 2:
        return 0.0
    logits = _probe_logits(emb, bias, num_probe, rng)
    return float(total_pairs * _sigmoid(logits + offset).mean())


def _probe_logits(emb: np.ndarray, bias: float, num_probe: int, rng: np.random.Generator | None) -> np.ndarray:
    n = emb.shape[0]
    if n * (n - 1) // 2 <= num_probe:
        iu, ju = np.triu_indices(n, k=1)
    else:
        rng = rng if rng is not None else np.random.default_rng()
        iu, ju = _random_pairs(n, num_probe, rng)
    e = emb.astype(np.float64)
    return np.einsum("kd,kd->k", e[iu], e[ju]) + bias


def calibrate_offset(emb: np.ndarray, bias: float, target_edges: float, *, num_probe: int = 1_000_000,
                     rng: np.random.Generator | None = None) -> float:
    """The offset ``delta`` for which the (estimated) expected edge count equals ``target_edges``."""
    n = emb.shape[0]
    total_pairs = n * (n - 1) / 2
    if n < 2:
        return 0.0
    target = float(np.clip(target_edges, 0.5, total_pairs - 0.5))
    logits = _probe_logits(emb, bias, num_probe, rng)
    lo, hi = -60.0 - float(logits.max()), 60.0 - float(logits.min())
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if total_pairs * float(_sigmoid(logits + mid).mean()) > target:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def sample_edges(emb: np.ndarray, bias: float, offset: float = 0.0, *, rng: np.random.Generator,
                 block_rows: int = DEFAULT_BLOCK_ROWS, threshold_prob: float | None = None) -> np.ndarray:
    """Exact independent Bernoulli edges ``(m, 2)`` (``u < v``) with ``P = sigmoid(h_u . h_v + bias + offset)``.

    ``threshold_prob`` (``sigma(T)``) trades thinning candidates against direct draws; by default it is a few times
    the average pair probability (cheap for sparse graphs).
    """
    n = int(emb.shape[0])
    if emb.ndim != 2:
        raise OptionError(f"embeddings must be 2-D, got shape {emb.shape}")
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    h = torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32))
    c = float(bias + offset)
    if threshold_prob is None:
        mean_p = float(_sigmoid(_probe_logits(emb, c, 200_000, rng)).mean())
        threshold_prob = float(np.clip(4.0 * mean_p, 1e-9, 0.25))
    t_logit = math.log(threshold_prob) - math.log1p(-threshold_prob)
    out: list[np.ndarray] = []
    for r0 in range(0, n - 1, block_rows):
        r1 = min(r0 + block_rows, n - 1)
        # columns c >= r0 + 1; pairs with col <= row (only in the block's first square part) are dropped below
        logits = h[r0:r1] @ h[r0 + 1:].T  # (rows, n - r0 - 1), without the offset c (compared against T - c)
        # (1) direct Bernoulli draws for the high-probability pairs
        hi_r, hi_c = torch.nonzero(logits > (t_logit - c), as_tuple=True)
        if hi_r.numel():
            hr, hc = hi_r.numpy(), hi_c.numpy()
            upper = (hc + r0 + 1) > (hr + r0)
            hr, hc = hr[upper], hc[upper]
            p = _sigmoid(logits[torch.from_numpy(hr), torch.from_numpy(hc)].double().numpy() + c)
            keep = rng.random(p.size) < p
            out.append(np.stack([hr[keep] + r0, hc[keep] + r0 + 1], axis=1))
        # (2) thinning for all other pairs: iid Bernoulli(threshold_prob) candidates over the whole block
        width = logits.shape[1]
        cells = (r1 - r0) * width
        flat = _bernoulli_positions(cells, threshold_prob, rng)
        k = flat.size
        if k:
            cr, cc = flat // width, flat % width
            lg32 = logits[torch.from_numpy(cr), torch.from_numpy(cc)]
            # the same float32 comparison as the direct set, so the two sets partition the pairs exactly
            ok = ((cc + r0 + 1) > (cr + r0)) & ~(lg32 > (t_logit - c)).numpy()
            lg = lg32.double().numpy() + c
            accept = rng.random(k) < _sigmoid(lg) / threshold_prob
            sel = ok & accept
            out.append(np.stack([cr[sel] + r0, cc[sel] + r0 + 1], axis=1))
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    edges = np.concatenate(out).astype(np.int64)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    return edges[order]


def _bernoulli_positions(cells: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Positions of an iid Bernoulli(p) process on ``0..cells-1``, exactly, via geometric gaps (no per-cell draw)."""
    mean = cells * p
    out: list[np.ndarray] = []
    last = -1
    while True:
        k = int(mean + 6 * math.sqrt(mean + 1) + 16)
        pos = last + np.cumsum(rng.geometric(p, size=k))
        if pos[-1] >= cells:
            out.append(pos[pos < cells])
            break
        out.append(pos)
        last = int(pos[-1])
    return np.concatenate(out).astype(np.int64)


def sample_edges_dense(emb: np.ndarray, bias: float, offset: float = 0.0, *, rng: np.random.Generator
                       ) -> np.ndarray:
    """Reference implementation with an n x n matrix (small graphs and tests only)."""
    n = emb.shape[0]
    e = emb.astype(np.float64)
    p = _sigmoid(e @ e.T + bias + offset)
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.random(iu.size) < p[iu, ju]
    return np.stack([iu[keep], ju[keep]], axis=1).astype(np.int64)
