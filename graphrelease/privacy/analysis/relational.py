r"""Theorem 3 of "Differentially Private Relational Learning with Entity-level Privacy Guarantees" (coupled
sampling), evaluated numerically as a per-step RDP curve.

Setting (node-level privacy unit, one node with at most ``K`` incident edges — a public degree cap):

* positives: every edge of :math:`E` enters the batch independently with probability :math:`\gamma` (Poisson), so
  the batch size :math:`m \sim \mathrm{Bin}(|E|, \gamma)`;
* negatives: for each of the ``m`` positives, ``k_neg`` negative nodes are drawn without replacement from the
  ``n`` nodes — the number of negatives depends on the sampled positives, which is why they sit inside the analysis;
* clipping: ``freq`` (FREQ-CLIP / adaptive: each example of a node is clipped to ``C / frequency`` so the node's
  total contribution is at most ``C``; constant sensitivity) or ``standard`` (each example clipped to ``C``: a node in
  ``i`` positive examples and chosen as a negative moves the sum by up to ``i + 2`` units — a replaced negative pair
  moves it by ``2``).

Conditioned on the batch size ``m``, the privacy unit takes part through any of its at most ``K`` positive edges
(probability :math:`1-(1-\gamma)^K`) or as a negative (probability at most ``m k_neg / n``). The theorem bounds the
step's Rényi divergence by the mixture over ``m``:

.. math::

    e^{(\alpha-1)\varepsilon(\alpha)} \le \sum_m \mathrm{Bin}(m; |E|, \gamma)\, e^{(\alpha-1)\,\varepsilon_m(\alpha)}

with, for ``freq`` clipping, :math:`\varepsilon_m` the sampled-Gaussian RDP at the effective rate
:math:`\Gamma_m = 1-(1-\gamma)^K(1-m\,k_{neg}/n)` and sensitivity 1; for ``standard`` clipping,
:math:`\varepsilon_m` the Rényi divergence between the mixture
:math:`\sum_{i,j}\mathrm{Bin}(i;K,\gamma)\,\mathrm{Bern}(j; m k_{neg}/n)\,\mathcal N(i+2j,\sigma^2)` and
:math:`\mathcal N(0,\sigma^2)` (tight group amplification for Poisson subsampling, Schuchardt et al. 2024, Thm 3.8,
extended by the negative term), computed here by log-space quadrature in BOTH directions (the reference code only
evaluates one) on a grid sized to the tilted mass.

Evaluation (soundness details added here, not in the reference code): every term depends on ``m`` only through
the negative-sampling probability :math:`p_m = \min(1, m k_{neg}/n)`. Both :math:`E_Q[(P/Q)^\alpha]` and
:math:`E_P[(Q/P)^\alpha]` are convex in that mixture weight (joint convexity of :math:`(P,Q)\mapsto\int P^\alpha
Q^{1-\alpha}`), so on any interval of ``p`` the term is at most the larger of its values at the interval's ends.
The terms are computed on a geometric grid of ``p`` (ratio :data:`P_GRID_RATIO`, plus 0 and 1) and every block of
batch sizes — single ``m`` near the mean, geometric blocks in both binomial tails up to ``|E|`` — is charged its exact
binomial mass (``logsf``/``logcdf``) times the largest grid term covering its ``p`` range. Every value is therefore an
upper bound of the theorem's sum, with no truncated tail. Orders above :data:`MAX_ORDER` and off the coarse order set
are reported as ``+inf`` (valid, unused).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

from graphrelease.errors import OptionError

#: Largest RDP order evaluated (higher orders are reported as +inf).
MAX_ORDER = 64.0

_PARAMS = ("noise_multiplier", "sample_rate", "num_negatives", "degree_cap", "num_nodes", "num_edges", "clipping")


def params_from_entry(entry) -> dict[str, Any]:
    """Validated parameters of a ``relational_coupled`` ledger entry."""
    p = dict(entry.params)
    missing = [k for k in _PARAMS if k not in p]
    if missing:
        raise OptionError(
            f"ledger entry '{entry.stage}' (relational_coupled) lacks {', '.join(missing)}; it needs "
            + ", ".join(_PARAMS)
        )
    out = {
        "noise_multiplier": float(p["noise_multiplier"]) / float(entry.sensitivity),
        "sample_rate": float(p["sample_rate"]),
        "num_negatives": int(p["num_negatives"]),
        "degree_cap": int(p["degree_cap"]),
        "num_nodes": int(p["num_nodes"]),
        "num_edges": int(p["num_edges"]),
        "clipping": str(p["clipping"]).lower(),
    }
    if out["clipping"] not in ("freq", "standard"):
        raise OptionError(f"ledger entry '{entry.stage}': clipping must be 'freq' or 'standard', got {p['clipping']!r}")
    if not (0 < out["sample_rate"] <= 1):
        raise OptionError(f"ledger entry '{entry.stage}': sample_rate must be in (0, 1], got {out['sample_rate']}")
    if out["degree_cap"] < 1 or out["num_nodes"] < 1 or out["num_edges"] < 1 or out["num_negatives"] < 0:
        raise OptionError(f"ledger entry '{entry.stage}': degree_cap, num_nodes, num_edges must be >= 1, "
                          f"num_negatives >= 0 (got {out})")
    if int(entry.group_size) != 1:
        raise OptionError(f"ledger entry '{entry.stage}': relational_coupled already bounds a whole node; "
                          "group_size must be 1")
    return out


def _log_mass(a: int, b: int, num_edges: int, rate: float) -> float:
    """log P(a <= m <= b) for m ~ Bin(num_edges, rate), accurate in the far tails."""
    mean = num_edges * rate
    if a > mean:
        # Chernoff: P(m >= a) <= exp(-E * KL(a/E || rate)); used when logsf underflows (never drop mass).
        chern = _log_chernoff(a, num_edges, rate)
        sf = float(binom.logsf(a - 1, num_edges, rate))
        if not np.isfinite(sf) or b >= num_edges:
            return sf if np.isfinite(sf) else chern
    if a <= 0:
        return float(binom.logcdf(b, num_edges, rate))
    if a > mean:  # upper tail: sf(a-1) - sf(b)
        x, y = binom.logsf(a - 1, num_edges, rate), binom.logsf(b, num_edges, rate)
    else:  # lower tail / centre: cdf(b) - cdf(a-1)
        x, y = binom.logcdf(b, num_edges, rate), binom.logcdf(a - 1, num_edges, rate)
    if not np.isfinite(x):
        return -np.inf
    if not np.isfinite(y) or y < x - 700:
        return float(x)
    return float(x + math.log1p(-math.exp(min(y - x, 0.0))) if y < x else -np.inf)


def _log_chernoff(a: int, num_edges: int, rate: float) -> float:
    x = a / num_edges
    if x >= 1.0:
        return num_edges * math.log(rate)
    kl = x * math.log(x / rate) + (1 - x) * math.log((1 - x) / (1 - rate))
    return -num_edges * kl


def _blocks(num_edges: int, rate: float) -> list[tuple[int, int, float]]:
    """Blocks (a, b, log mass) covering 0..num_edges: single m within 12 sd of the mean, geometric blocks outside."""
    mean = num_edges * rate
    sd = math.sqrt(max(mean * (1 - rate), 1e-12))
    lo = max(0, int(mean - 12 * sd) - 5)
    hi = min(num_edges, int(mean + 12 * sd) + 5)
    out = []
    if lo > 0:
        b = lo - 1
        while b >= 0:
            a = max(0, b - max(1, (b + 1) // 2))
            a = 0 if a < 2 else a
            out.append((a, b, _log_mass(a, b, num_edges, rate)))
            b = a - 1
    pmf = binom.logpmf(np.arange(lo, hi + 1), num_edges, rate)
    out += [(m, m, float(lp)) for m, lp in zip(range(lo, hi + 1), pmf)]
    a = hi + 1
    while a <= num_edges:
        b = min(num_edges, 2 * a)
        out.append((a, b, _log_mass(a, b, num_edges, rate)))
        a = b + 1
    return [blk for blk in out if np.isfinite(blk[2])]


#: Geometric ratio of the negative-probability grid on which terms are evaluated.
P_GRID_RATIO = 1.1

#: Orders at which the bound is evaluated (others: +inf).
EVAL_ORDERS = tuple([1.25, 1.5, 1.75] + [x / 2 for x in range(4, 21)] + [float(x) for x in range(11, 33)]
                    + [36.0, 40.0, 48.0, 56.0, 64.0])


def rdp_per_step(params: Mapping[str, Any], orders: Sequence[float]) -> np.ndarray:
    """Per-step RDP curve of Theorem 3 at ``orders`` (see module docstring). Cached on the parameters."""
    key = tuple(sorted((k, params[k]) for k in _PARAMS))
    return np.asarray(_rdp_cached(key, tuple(float(o) for o in orders)))


@functools.lru_cache(maxsize=64)
def _rdp_cached(key: tuple, orders: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(_rdp_per_step(dict(key), orders).tolist())


def _rdp_per_step(params: Mapping[str, Any], orders: Sequence[float]) -> np.ndarray:
    sigma = float(params["noise_multiplier"])
    gamma = float(params["sample_rate"])
    k_neg = int(params["num_negatives"])
    K = int(params["degree_cap"])
    n = int(params["num_nodes"])
    E = int(params["num_edges"])
    all_orders = np.asarray(orders, dtype=np.float64)
    result = np.full_like(all_orders, np.inf)
    keep = all_orders <= MAX_ORDER
    if params["clipping"] == "standard":  # quadrature per order: a coarser order set
        keep &= np.isin(all_orders, np.asarray(EVAL_ORDERS))
    a = all_orders[keep]
    if sigma <= 0 or a.size == 0:
        return result
    blocks = _blocks(E, gamma)
    p_of = lambda m: min(1.0, m * k_neg / n)  # noqa: E731
    # Grid up to the largest p among single-m blocks; beyond it only 1.0 (tail blocks use the bracket [.., 1]).
    p_max = max([p_of(b) for a_, b, _ in blocks if a_ == b] or [0.0])
    grid = [0.0, 1.0] if k_neg > 0 else [0.0]
    if p_max > 0:
        p_min = min([p_of(x) for blk in blocks for x in blk[:2] if p_of(x) > 0] or [p_max])
        k_lo = math.floor(math.log(p_min) / math.log(P_GRID_RATIO))
        k_hi = math.ceil(math.log(p_max) / math.log(P_GRID_RATIO))
        grid += [min(1.0, P_GRID_RATIO**k) for k in range(k_lo, k_hi + 1)]
    grid = np.unique(np.asarray(grid))
    if params["clipping"] == "freq":
        vals = _freq_terms(gamma, K, grid, sigma, a)
    else:
        vals = np.stack([_standard_term(gamma, K, float(g), sigma, a) for g in grid])
    # The block masses sum to 1 up to rounding; scale them up when they fall short (conservative).
    log_total = float(logsumexp([blk[2] for blk in blocks]))
    shift = -log_total if log_total < 0 else 0.0
    logs = []
    for m_a, m_b, log_mass in blocks:
        log_mass += shift
        i = max(0, int(np.searchsorted(grid, p_of(m_a), side="right")) - 1)  # grid[i] <= p(m_a)
        j = min(len(grid) - 1, int(np.searchsorted(grid, p_of(m_b), side="left")))  # grid[j] >= p(m_b)
        logs.append(log_mass + vals[i:j + 1].max(axis=0))
    log_sum = logsumexp(np.stack(logs), axis=0)
    result[keep] = np.maximum(log_sum, 0.0) / (a - 1)
    return result


def _freq_terms(gamma: float, K: int, neg_prob: np.ndarray, sigma: float, a: np.ndarray) -> np.ndarray:
    """(alpha-1) * sampled-Gaussian RDP at the effective rate 1-(1-gamma)^K (1-p), for each p in the grid."""
    from graphrelease.privacy.analysis import rdp as rdp_analysis

    base = (1.0 - gamma) ** K
    return np.stack([
        rdp_analysis.poisson_gaussian_add_remove(min(1.0, 1.0 - base * (1.0 - float(p))), sigma, a) * (a - 1)
        for p in neg_prob
    ])


def _standard_term(gamma: float, K: int, neg_prob: float, sigma: float, a: np.ndarray) -> np.ndarray:
    """(alpha-1) * max(D_alpha(P||Q), D_alpha(Q||P)) for P = sum_{i,j} Bin(i;K,g) Bern(j;p) N(i+2j), Q = N(0)."""
    shifts, weights = [], []
    for i in range(K + 1):
        wi = binom.pmf(i, K, gamma)
        for j, wj in ((0, 1.0 - neg_prob), (1, neg_prob)):
            if wi * wj > 0:
                shifts.append(i + 2 * j)
                weights.append(wi * wj)
    shifts = np.asarray(shifts, dtype=np.float64)
    log_w = np.log(np.asarray(weights))
    out = np.empty_like(a)
    smax = float(shifts.max())
    for t, alpha in enumerate(a):
        # forward: integrand P^a Q^(1-a) concentrates near alpha * smax; reverse: Q^a P^(1-a) near the origin side
        lo = -(alpha + 1) * smax - 40 * sigma
        hi = (alpha + 1) * smax + 40 * sigma
        npts = int(min(max(2001, (hi - lo) / (sigma / 10.0)), 2_000_001))
        x, dx = np.linspace(lo, hi, npts, retstep=True)
        lq = -0.5 * (x / sigma) ** 2
        lp = logsumexp(log_w[:, None] - 0.5 * ((x[None, :] - shifts[:, None]) / sigma) ** 2, axis=0)
        norm = -0.5 * math.log(2 * math.pi) - math.log(sigma) + math.log(dx)
        fwd = logsumexp(alpha * lp + (1 - alpha) * lq) + norm
        rev = logsumexp(alpha * lq + (1 - alpha) * lp) + norm
        out[t] = max(fwd, rev, 0.0)
    return out
