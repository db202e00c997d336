"""Lower bounds on epsilon from attack scores: Clopper-Pearson intervals with a Bonferroni correction (the
statistics of the empirical audit; see :mod:`graphrelease.audit.empirical` for the protocol)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from graphrelease.errors import OptionError

# ---------------------------------------------------------------------------------------------------- statistics
def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided Clopper–Pearson interval for a binomial proportion, ``alpha/2`` in each tail.

    Returns ``(lower, upper)``; ``lower`` alone is a one-sided ``1 - alpha/2`` lower bound.

    >>> lo, hi = clopper_pearson(0, 100, 0.05)
    >>> lo, round(hi, 4)
    (0.0, 0.0362)
    """
    from scipy.stats import beta

    if trials <= 0:
        raise OptionError(f"Clopper-Pearson interval needs trials > 0, got {trials}")
    if not 0 <= successes <= trials:
        raise OptionError(f"successes {successes} outside 0..{trials}")
    if not 0 < alpha < 1:
        raise OptionError(f"alpha must be in (0, 1), got {alpha}")
    lo = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return lo, hi


@dataclass(frozen=True)
class EpsilonLowerBound:
    """The best (largest) epsilon lower bound found over thresholds and events, with the numbers behind it."""

    epsilon: float
    threshold: float | None
    event: str
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    confidence: float
    tests: int
    delta: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _candidate_thresholds(scores: np.ndarray, max_thresholds: int) -> np.ndarray:
    uniq = np.unique(scores)
    if uniq.size <= max_thresholds:
        return uniq
    qs = np.linspace(0.0, 1.0, max_thresholds)
    return np.unique(np.quantile(uniq, qs, method="nearest"))


def epsilon_lower_bound(
    scores_in: Sequence[float],
    scores_out: Sequence[float],
    *,
    delta: float,
    confidence: float = 0.95,
    max_thresholds: int = 32,
) -> EpsilonLowerBound:
    """Lower bound on epsilon from attack scores of ``in`` runs (canary present) and ``out`` runs (absent).

    Every threshold ``t`` in a grid of at most ``max_thresholds`` score quantiles and four events are tried:
    ``in>=t`` (guess *in* when the score is at least ``t``), ``out<t`` (its complement read the other way round),
    and the same two with the roles of the neighbouring datasets swapped. Each event gives
    ``log((P_lo - delta) / Q_hi)``; intervals are Clopper–Pearson with a Bonferroni correction over all tests.

    >>> b = epsilon_lower_bound([1.0] * 500, [0.0] * 500, delta=1e-5)
    >>> 3.5 < b.epsilon < 4.5
    True
    """
    s_in = np.asarray(scores_in, dtype=np.float64).ravel()
    s_out = np.asarray(scores_out, dtype=np.float64).ravel()
    if s_in.size == 0 or s_out.size == 0:
        raise OptionError("the empirical audit needs at least one run with and one run without the canaries")
    if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
        raise OptionError("attack scores contain NaN or infinite values")
    if not 0 <= delta < 1:
        raise OptionError(f"delta must be in [0, 1), got {delta}")
    if not 0 < confidence < 1:
        raise OptionError(f"confidence must be in (0, 1), got {confidence}")
    thresholds = _candidate_thresholds(np.concatenate([s_in, s_out]), max_thresholds)
    n_tests = 4 * thresholds.size
    # Each test uses two one-sided intervals; clopper_pearson(alpha) puts alpha/2 in each tail.
    alpha_each = 2.0 * (1.0 - confidence) / (2 * n_tests)
    n_in, n_out = s_in.size, s_out.size
    best = EpsilonLowerBound(0.0, None, "none", 0.0, 0.0, 0.0, 1.0, confidence, n_tests, delta)
    for t in thresholds:
        k_in = int(np.sum(s_in >= t))
        k_out = int(np.sum(s_out >= t))
        # (numerator count, numerator trials, denominator count, denominator trials, event name)
        events = (
            (k_in, n_in, k_out, n_out, "in>=t"),                      # P[S>=t | in]  <= e^eps P[S>=t | out] + d
            (n_out - k_out, n_out, n_in - k_in, n_in, "out<t"),       # P[S<t | out]  <= e^eps P[S<t | in] + d
            (k_out, n_out, k_in, n_in, "out>=t"),                     # swapped neighbouring pair
            (n_in - k_in, n_in, n_out - k_out, n_out, "in<t"),
        )
        for kp, np_, kq, nq, name in events:
            p_lo = clopper_pearson(kp, np_, alpha_each)[0]
            q_hi = clopper_pearson(kq, nq, alpha_each)[1]
            if p_lo - delta <= 0 or q_hi <= 0:
                continue
            eps = math.log((p_lo - delta) / q_hi)
            if eps > best.epsilon:
                best = EpsilonLowerBound(
                    epsilon=eps, threshold=float(t), event=name, tpr=kp / np_, fpr=kq / nq,
                    tpr_lower=p_lo, fpr_upper=q_hi, confidence=confidence, tests=n_tests, delta=delta,
                )
    return best
