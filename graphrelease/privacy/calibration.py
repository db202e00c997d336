"""Calibration: noise multiplier for a target (epsilon, delta), the number of steps a noise level allows, and the
epsilon of a schedule.

Every function builds the schedule's :class:`~graphrelease.privacy.ledger.LedgerEntry` (:func:`schedule_entry`) and
asks an accountant, so calibration and the run's accounting can never disagree. Results are *conservative*: the
returned noise multiplier always satisfies ``epsilon(sigma) <= target_epsilon`` (the upper end of the final
bisection bracket), and :func:`max_steps` returns a step count whose epsilon is within the target.

Example
-------
>>> sigma = calibrate_noise_multiplier(target_epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=1000,
...                                    accountant="rdp")
>>> round(sigma, 3)
1.513
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from graphrelease.errors import BudgetError, OptionError
from graphrelease.privacy.accountants import compute_epsilon
from graphrelease.privacy.ledger import LedgerEntry

_MAX_SIGMA = 1e4
_MIN_SIGMA = 1e-3


def schedule_entry(
    *,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    sampling: str = "poisson",
    neighboring: str = "add_remove",
    sensitivity: float = 1.0,
    dataset_size: int | None = None,
    group_size: int = 1,
    stage: str = "schedule",
) -> LedgerEntry:
    """The ledger entry of ``steps`` DP-SGD-style Gaussian steps.

    ``sampling``: ``poisson`` (rate ``sample_rate``), ``wor`` (fixed batch ``sample_rate * dataset_size`` without
    replacement; replace-one), or ``none`` (every example each step: plain Gaussian composition).
    """
    sampling = str(sampling).lower()
    if steps < 0 or int(steps) != steps:
        raise OptionError(f"steps must be a non-negative integer, got {steps!r}")
    if not (0.0 < float(sample_rate) <= 1.0):
        raise OptionError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    if sampling == "none" or (sampling == "poisson" and float(sample_rate) == 1.0 and group_size == 1
                              and neighboring == "add_remove"):
        return LedgerEntry(
            mechanism="gaussian",
            stage=stage,
            params={"noise_multiplier": float(noise_multiplier)},
            count=int(steps),
            sensitivity=float(sensitivity) * (2.0 if neighboring == "replace_one" else 1.0),
            group_size=group_size,
            proof="gaussian",
        )
    params: dict = {
        "noise_multiplier": float(noise_multiplier),
        "sample_rate": float(sample_rate),
        "sampling": sampling,
        "neighboring": neighboring,
    }
    if sampling == "wor":
        if dataset_size is None:
            raise OptionError("sampling='wor' needs dataset_size (the public number of examples)")
        params["dataset_size"] = int(dataset_size)
        proof = "subsampled-gaussian-wor"
    else:
        proof = "subsampled-gaussian-poisson" if neighboring == "add_remove" else "subsampled-gaussian-replace-one"
    return LedgerEntry(
        mechanism="subsampled_gaussian",
        stage=stage,
        params=params,
        count=int(steps),
        sensitivity=float(sensitivity),
        group_size=group_size,
        proof=proof,
    )


def schedule_epsilon(*, noise_multiplier: float, delta: float, sample_rate: float, steps: int,
                     accountant: str = "pld", prior: Iterable[LedgerEntry] = (), **kw) -> float:
    """Epsilon of ``prior`` entries followed by the schedule."""
    entry = schedule_entry(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps, **kw)
    return compute_epsilon([*prior, entry], delta, accountant)


def _check_target(target_epsilon: float, delta: float) -> None:
    if not (target_epsilon > 0) or math.isnan(target_epsilon):
        raise OptionError(f"target epsilon must be > 0, got {target_epsilon!r}")
    if not (0 < delta < 1):
        raise OptionError(f"delta must be in (0, 1), got {delta!r}")


def calibrate(
    make_entries: Callable[[float], Sequence[LedgerEntry]],
    *,
    target_epsilon: float,
    delta: float,
    accountant: str = "pld",
    prior: Iterable[LedgerEntry] = (),
    solve: str = "noise",
    lo: float = _MIN_SIGMA,
    hi: float = _MAX_SIGMA,
    rtol: float = 1e-3,
    what: str = "this schedule",
    start: float = 1.0,
) -> float:
    """The one calibration routine: every noise multiplier and step count of the project is solved here.

    ``make_entries(x)`` builds the ledger entries of a run with noise multiplier ``x`` (``solve="noise"``) or ``x``
    steps (``solve="steps"``); the accountant composes them after ``prior``. Epsilon falls as the noise grows and
    rises with the steps, so a bisection finds

    * ``solve="noise"``: the smallest ``x`` in ``[lo, hi]`` (to relative precision ``rtol``, geometric bisection)
      with ``epsilon <= target_epsilon``; the bracket's upper end is returned, so the bound holds exactly. If even
      ``hi`` does not fit, :class:`BudgetError` names the smallest feasible epsilon (the schedule's epsilon at ``hi``).
    * ``solve="steps"``: the largest integer ``x`` in ``[lo, hi]`` with ``epsilon <= target_epsilon`` (0 if even
      ``lo`` steps do not fit).

    The noise search brackets outwards from ``start`` (doubling or halving) before it bisects, so the accountant is
    never asked about noise levels far from the answer (a PLD grid at a tiny noise multiplier needs tens of GB).
    """
    _check_target(target_epsilon, delta)
    prior = tuple(prior)

    def fits(x: float) -> bool:
        return compute_epsilon([*prior, *make_entries(x)], delta, accountant) <= target_epsilon

    if solve == "steps":
        a, limit = max(1, int(lo)), int(hi)
        if not fits(a):
            return 0
        b = min(2 * a, limit)
        while fits(b):  # doubling from lo: the accountant never sees step counts far beyond the answer
            if b == limit:
                return limit
            a, b = b, min(2 * b, limit)
        while b - a > 1:  # invariant: fits(a), not fits(b)
            mid = (a + b) // 2
            if fits(mid):
                a = mid
            else:
                b = mid
        return a
    if solve != "noise":
        raise OptionError(f"calibrate: solve must be 'noise' or 'steps', got {solve!r}")
    # Bracket outwards from a moderate noise level: a PLD grid at a tiny noise multiplier needs tens of GB, so the
    # search only goes where the answer lies.
    x = min(max(start, lo), hi)
    if fits(x):
        up = x
        down = x / 2.0
        while down >= lo and fits(down):
            up, down = down, down / 2.0
        if down < lo:
            return up if not fits(lo) else lo
        a, b = down, up
    else:
        a, b = x, min(2.0 * x, hi)
        while not fits(b):
            if b >= hi:
                floor = compute_epsilon([*prior, *make_entries(hi)], delta, accountant)
                raise BudgetError(
                    f"epsilon={target_epsilon:g} cannot be met by {what} (delta={delta:g}): the smallest feasible "
                    f"epsilon is {floor:.4g} (noise multiplier capped at {hi:g}); raise --epsilon, or lower the "
                    "epochs / sample rate")
            a, b = b, min(2.0 * b, hi)
    while b / a > 1.0 + rtol:  # invariant: not fits(a), fits(b)
        mid = math.sqrt(a * b)
        if fits(mid):
            b = mid
        else:
            a = mid
    return b


def calibrate_noise_multiplier(
    *,
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    sampling: str = "poisson",
    neighboring: str = "add_remove",
    sensitivity: float = 1.0,
    accountant: str = "pld",
    dataset_size: int | None = None,
    group_size: int = 1,
    prior: Iterable[LedgerEntry] = (),
    rtol: float = 1e-4,
) -> float:
    """Smallest noise multiplier (to relative precision ``rtol``) whose schedule stays within ``target_epsilon``.

    ``prior`` entries (already spent) are composed before the schedule. Bisection on ``log(sigma)``; the returned
    value is the bracket's upper end, so ``epsilon(returned sigma) <= target_epsilon`` holds exactly.

    Raises
    ------
    BudgetError
        if even ``sigma = 1e4`` exceeds the target (e.g. a prior stage already spent it).
    """
    if steps == 0:
        return 0.0
    entry = dict(sample_rate=sample_rate, steps=steps, sampling=sampling, neighboring=neighboring,
                 sensitivity=sensitivity, dataset_size=dataset_size, group_size=group_size)
    return calibrate(lambda sigma: [schedule_entry(noise_multiplier=sigma, **entry)], target_epsilon=target_epsilon,
                     delta=delta, accountant=accountant, prior=prior, rtol=rtol,
                     what=f"{steps} steps at sample_rate={sample_rate}")


def max_steps(
    *,
    noise_multiplier: float,
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    sampling: str = "poisson",
    neighboring: str = "add_remove",
    sensitivity: float = 1.0,
    accountant: str = "pld",
    dataset_size: int | None = None,
    group_size: int = 1,
    prior: Iterable[LedgerEntry] = (),
    limit: int = 10_000_000,
) -> int:
    """Largest number of steps (up to ``limit``) whose epsilon stays within ``target_epsilon`` (0 if none)."""
    entry = dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate, sampling=sampling,
                 neighboring=neighboring, sensitivity=sensitivity, dataset_size=dataset_size, group_size=group_size)
    return int(calibrate(lambda t: [schedule_entry(steps=int(t), **entry)], target_epsilon=target_epsilon,
                         delta=delta, accountant=accountant, prior=prior, solve="steps", lo=1, hi=limit))


def smallest_epsilon(
    *,
    delta: float,
    sample_rate: float,
    steps: int,
    max_noise_multiplier: float,
    accountant: str = "pld",
    **kw,
) -> float:
    """Smallest epsilon reachable by the schedule when the noise multiplier may not exceed ``max_noise_multiplier``
    (epsilon decreases in sigma, so this is the schedule's epsilon at the cap)."""
    if not (max_noise_multiplier > 0):
        raise OptionError(f"max_noise_multiplier must be > 0, got {max_noise_multiplier!r}")
    return schedule_epsilon(noise_multiplier=max_noise_multiplier, delta=delta, sample_rate=sample_rate,
                            steps=steps, accountant=accountant, **kw)


def calibrate_stage_noise(
    *,
    target_epsilon: float,
    delta: float,
    stages: list[dict],
    accountant: str = "pld",
    prior: Iterable[LedgerEntry] = (),
    rtol: float = 1e-4,
) -> list[float]:
    """Split one (epsilon, delta) across several Gaussian stages by calibrating their noise jointly.

    Each stage is a dict of :func:`schedule_entry` keywords (``sample_rate``, ``steps``, ...) plus an optional
    ``noise_ratio`` r_i (default 1). The stages get ``sigma_i = c * r_i`` with the smallest common ``c`` for which
    the composition of all stages (after ``prior``) meets the target — tighter than splitting epsilon by basic
    composition, because the accountant composes the stages' privacy loss distributions together.
    Returns the list of noise multipliers.
    """
    _check_target(target_epsilon, delta)
    prior = tuple(prior)
    if not stages:
        raise OptionError("calibrate_stage_noise needs at least one stage")
    ratios = [float(s.get("noise_ratio", 1.0)) for s in stages]
    if any(r <= 0 for r in ratios):
        raise OptionError(f"noise_ratio must be > 0 for every stage, got {ratios}")
    specs = [{k: v for k, v in s.items() if k != "noise_ratio"} for s in stages]

    def entries(c: float) -> list[LedgerEntry]:
        return [schedule_entry(noise_multiplier=c * r, **{"stage": f"stage{i}", **spec})
                for i, (r, spec) in enumerate(zip(ratios, specs))]

    c = calibrate(entries, target_epsilon=target_epsilon, delta=delta, accountant=accountant, prior=prior,
                  rtol=rtol, what=f"{len(stages)} stages")
    return [c * r for r in ratios]
