r"""Rényi-DP curves (per invocation) of the ledger's mechanisms, and the conversion to (epsilon, delta).

All functions return a numpy array of RDP values, one per order in ``orders``; composition is addition.

Sources
-------
* Poisson-subsampled Gaussian, add/remove: Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled
  Gaussian Mechanism" (2019), Sec. 3.3, computed with opacus' ``accountants.analysis.rdp``.
* Sampling without replacement, replace-one: Wang, Balle, Kasiviswanathan, "Subsampled Rényi Differential Privacy
  and Analytical Moments Accountant" (AISTATS 2019), Theorem 27 (Gaussian-specific strengthening), computed with
  dp-accounting's implementation.
* Poisson-subsampled Gaussian, replace-one: exact Rényi divergence of the pair
  :math:`(1-q)\mathcal N(0,\sigma^2)+q\mathcal N(s,\sigma^2)` vs. :math:`(1-q)\mathcal N(0,\sigma^2)+q\mathcal N(-s,\sigma^2)`
  by quadrature (the pair dp-accounting uses for ``REPLACE_ONE``; see ``docs/privacy.md#subsampled-gaussian-replace-one``).
* Joint convexity bound (PRIVACY.md option B): derived in ``docs/privacy.md#joint-convexity-gaussian``.
* Laplace: Mironov, "Rényi Differential Privacy" (2017), Proposition 6 (exact).
* Pure epsilon-DP: :math:`\min(\varepsilon, \alpha\varepsilon^2/2)` (Bun & Steinke 2016, Prop. 1.4 & 3.3).
* Bounded range (exponential mechanism, Gumbel top-k): :math:`\min(\varepsilon, \alpha\varepsilon^2/8)`
  (Cesar & Rogers 2021, Lemma 3.2: epsilon-BR implies epsilon^2/8-zCDP).
* Conversion: Balle et al., "Hypothesis Testing Interpretations and Rényi Differential Privacy" (AISTATS 2020),
  Theorem 21 — opacus ``get_privacy_spent``.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np
from scipy.special import logsumexp

#: Default RDP orders: opacus' grid extended with large orders (needed for small epsilon / many steps).
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)]
    + [float(a) for a in range(12, 64)]
    + [64.0, 80.0, 96.0, 128.0, 160.0, 192.0, 256.0, 384.0, 512.0, 1024.0]
)


def _orders(orders: Sequence[float] | None) -> np.ndarray:
    arr = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or np.any(arr <= 1.0):
        raise ValueError(f"RDP orders must be a non-empty list of values > 1, got {orders!r}")
    return arr


def gaussian(noise_multiplier: float, orders: Sequence[float] | None = None) -> np.ndarray:
    r"""Gaussian mechanism with L2 sensitivity 1 and noise std ``noise_multiplier``:
    :math:`\mathrm{RDP}(\alpha) = \alpha / (2\sigma^2)` (Mironov 2017, Prop. 7)."""
    a = _orders(orders)
    if noise_multiplier <= 0:
        return np.full_like(a, np.inf)
    return a / (2.0 * noise_multiplier**2)


def poisson_gaussian_add_remove(
    sample_rate: float, noise_multiplier: float, orders: Sequence[float] | None = None
) -> np.ndarray:
    """Poisson-subsampled Gaussian, add/remove adjacency, sensitivity 1 (Mironov, Talwar, Zhang 2019)."""
    a = _orders(orders)
    if noise_multiplier <= 0:
        return np.full_like(a, np.inf)
    return np.asarray(_poisson_cached(float(sample_rate), float(noise_multiplier), tuple(a.tolist())))


@functools.lru_cache(maxsize=4096)
def _poisson_cached(q: float, sigma: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    from opacus.accountants.analysis import rdp as opacus_rdp

    return tuple(np.asarray(opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=list(orders)),
                            dtype=np.float64).tolist())


def wor_gaussian_replace_one(
    sample_rate: float, noise_multiplier: float, orders: Sequence[float] | None = None
) -> np.ndarray:
    """Gaussian on a uniformly random fixed-size batch (rate ``batch/n``), replace-one adjacency, per-example
    bound 1 (Wang, Balle, Kasiviswanathan 2019, Theorem 27; dp-accounting's implementation)."""
    a = _orders(orders)
    if noise_multiplier <= 0:
        return np.full_like(a, np.inf)
    if sample_rate >= 1.0:
        # The whole dataset each step: a replaced example moves the sum by up to 2.
        return gaussian(noise_multiplier / 2.0, a)
    return np.asarray(_wor_cached(float(sample_rate), float(noise_multiplier), tuple(a.tolist())))


@functools.lru_cache(maxsize=4096)
def _wor_cached(q: float, sigma: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

    return tuple(np.asarray(dpa_rdp._compute_rdp_sample_wor_gaussian(q, sigma, list(orders))).tolist())


@functools.lru_cache(maxsize=4096)
def _mixture_pair_cached(q: float, sigma: float, s: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(_mixture_pair_divergence(q, sigma, np.asarray(orders), s))


def mixture_pair_divergence(
    sample_rate: float, noise_multiplier: float, orders: Sequence[float] | None = None, *, shift: float = 1.0
) -> np.ndarray:
    r"""Rényi divergence of :math:`P=(1-q)N(0,\sigma^2)+qN(s,\sigma^2)` from :math:`Q=(1-q)N(0,\sigma^2)+qN(-s,\sigma^2)`.

    By the reflection :math:`x\mapsto -x` the pair is symmetric, so this is the RDP of the pair in both directions.
    Computed by log-space trapezoidal quadrature on a grid wide enough to hold the tilted mass (checked against the
    closed-form q=1 value and the joint-convexity upper bound in tests).
    """
    a = _orders(orders)
    return np.asarray(
        _mixture_pair_cached(float(sample_rate), float(noise_multiplier), float(shift), tuple(a.tolist()))
    )


def _mixture_pair_divergence(q: float, sigma: float, a: np.ndarray, s: float) -> np.ndarray:
    if sigma <= 0:
        return np.full_like(a, np.inf)
    if q <= 0:
        return np.zeros_like(a)
    out = np.empty_like(a)
    log1mq = math.log1p(-q) if q < 1 else -np.inf
    logq = math.log(q)
    for i, alpha in enumerate(a):
        # The integrand P^a Q^(1-a) ~ exp(-(x - (2a-1)s)^2 / (2 sigma^2)) at worst: centre the grid there.
        hi = (2 * alpha - 1) * s + 40.0 * sigma
        lo = -s - 40.0 * sigma
        # Trapezoid on a smooth, Gaussian-decaying integrand converges very fast: sigma/25 spacing is ample.
        npts = int(min(max(4001, (hi - lo) / (sigma / 25.0)), 2_000_001))
        x, dx = np.linspace(lo, hi, npts, retstep=True)
        base = -0.5 * (x / sigma) ** 2
        lp = np.logaddexp(log1mq + base, logq - 0.5 * ((x - s) / sigma) ** 2)
        lq = np.logaddexp(log1mq + base, logq - 0.5 * ((x + s) / sigma) ** 2)
        log_norm = -0.5 * math.log(2 * math.pi) - math.log(sigma)
        integrand = alpha * lp + (1 - alpha) * lq + log_norm
        log_int = logsumexp(integrand) + math.log(dx)
        out[i] = max(log_int, 0.0) / (alpha - 1)
    return out


def poisson_gaussian_replace_one(
    sample_rate: float, noise_multiplier: float, orders: Sequence[float] | None = None
) -> np.ndarray:
    """Poisson-subsampled Gaussian under replace-one with per-example bound 1 (the replaced example's two versions
    are at most 2 apart). See :func:`mixture_pair_divergence` and ``docs/privacy.md#subsampled-gaussian-replace-one``."""
    if sample_rate >= 1.0:
        return gaussian(noise_multiplier / 2.0, orders)
    return mixture_pair_divergence(sample_rate, noise_multiplier, orders, shift=1.0)


def joint_convexity_gaussian(
    pair_rate: float, noise_multiplier: float, orders: Sequence[float] | None = None, *, distance: float = 2.0
) -> np.ndarray:
    r"""PRIVACY.md option B: laws :math:`(1-p)R+pP_1` vs :math:`(1-p)R+pQ_1` with :math:`P_1, Q_1` Gaussians whose
    means are at most ``distance`` apart (in units of the noise scale base). By joint convexity of
    :math:`(P,Q)\mapsto E_Q[(P/Q)^\alpha]`,

    .. math:: \mathrm{RDP}(\alpha) \le \frac{1}{\alpha-1}\log\bigl(1 + p\,(e^{\alpha(\alpha-1)\Delta^2/(2\sigma^2)} - 1)\bigr)

    which for :math:`\Delta = 2` is PRIVACY.md's :math:`\exp(\alpha(\alpha-1)\cdot 2/\sigma^2)`.
    """
    a = _orders(orders)
    p, sigma = float(pair_rate), float(noise_multiplier)
    if sigma <= 0:
        return np.full_like(a, np.inf)
    if p <= 0:
        return np.zeros_like(a)
    expo = a * (a - 1) * distance**2 / (2.0 * sigma**2)
    # log(1 + p (e^x - 1)) computed stably: = log((1-p) + p e^x) = logaddexp(log(1-p), log p + x)
    log1mp = math.log1p(-p) if p < 1 else -np.inf
    val = np.logaddexp(log1mp, math.log(p) + expo)
    # Never looser than the unsubsampled Gaussian at that distance (p=1 case).
    return np.minimum(val / (a - 1), a * distance**2 / (2.0 * sigma**2))


def laplace(epsilon: float, orders: Sequence[float] | None = None) -> np.ndarray:
    r"""Laplace mechanism with ``epsilon`` = L1 sensitivity / scale (Mironov 2017, Prop. 6; exact):
    :math:`\varepsilon + \log\bigl(1 + \tfrac{\alpha-1}{2\alpha-1}(e^{-(2\alpha-1)\varepsilon}-1)\bigr)/(\alpha-1)`.

    Closed form in numpy (log1p/expm1 keep it accurate as alpha -> 1) instead of dp-accounting's private
    ``_laplace_rdp``: importing ``dp_accounting`` pulls in ``scipy.signal`` on the first charge of every run."""
    a = _orders(orders)
    eps = float(epsilon)
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"Laplace epsilon must be finite and >= 0, got {epsilon!r}")
    return eps + np.log1p((a - 1) * np.expm1(-(2 * a - 1) * eps) / (2 * a - 1)) / (a - 1)


def pure_dp(epsilon: float, orders: Sequence[float] | None = None) -> np.ndarray:
    r"""Any epsilon-DP mechanism: :math:`\min(\varepsilon, \alpha\varepsilon^2/2)` (Bun & Steinke 2016)."""
    a = _orders(orders)
    return np.minimum(float(epsilon), a * float(epsilon) ** 2 / 2.0)


def bounded_range(epsilon: float, orders: Sequence[float] | None = None) -> np.ndarray:
    r"""An epsilon-bounded-range mechanism (the exponential mechanism with utility sensitivity scaled so that it is
    epsilon-DP): epsilon^2/8-zCDP (Cesar & Rogers 2021), so :math:`\min(\varepsilon, \alpha\varepsilon^2/8)`."""
    a = _orders(orders)
    return np.minimum(float(epsilon), a * float(epsilon) ** 2 / 8.0)


def rdp_to_epsilon(rdp: np.ndarray, delta: float, orders: Sequence[float] | None = None) -> tuple[float, float]:
    r"""Balle et al. 2020, Theorem 21: :math:`\varepsilon = \min_\alpha\, r(\alpha) - (\log\delta + \log\alpha)/(\alpha-1)
    + \log((\alpha-1)/\alpha)`. Returns ``(epsilon, best_order)``.

    The same formula as opacus ``get_privacy_spent`` (pinned by a known-answer test against it), in numpy: importing
    ``opacus.accountants`` runs ``opacus/__init__`` (privacy engine, optimizers, ``torch.distributed.tensor``,
    ``scipy.stats``), 1.4-3.5 s on the first charge of every run."""
    a = _orders(orders)
    r = np.asarray(rdp, dtype=np.float64)
    if np.all(r == 0):
        return 0.0, float(a[0])
    if not np.any(np.isfinite(r)):
        return math.inf, float("nan")
    with np.errstate(invalid="ignore"):
        eps = r - (math.log(delta) + np.log(a)) / (a - 1) + np.log((a - 1) / a)
    if np.isnan(eps).all():
        return math.inf, float("nan")
    best = int(np.nanargmin(eps))
    return float(max(eps[best], 0.0)), float(a[best])


def rdp_to_delta(rdp: np.ndarray, epsilon: float, orders: Sequence[float] | None = None) -> float:
    """Smallest delta at which the RDP curve gives ``epsilon`` (Balle et al. 2020 Thm 21 solved for delta)."""
    a = _orders(orders)
    r = np.asarray(rdp, dtype=np.float64)
    # eps = r - (log d + log a)/(a-1) + log((a-1)/a)  =>  log d = (a-1)(r - eps + log((a-1)/a)) - log a
    with np.errstate(invalid="ignore", over="ignore"):
        logd = (a - 1) * (r - epsilon + np.log((a - 1) / a)) - np.log(a)
    logd = logd[np.isfinite(logd)]
    if logd.size == 0:
        return 1.0
    return float(min(1.0, math.exp(min(0.0, float(np.min(logd))))))
