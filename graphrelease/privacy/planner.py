"""Budget planning: epsilon of a DP-SGD schedule, or the noise multiplier for a target epsilon (``graphrelease
budget``). The CLI only renders what :func:`plan_budget` and :func:`plan_grid` return.

Schedule: the sampling rate is ``sample_rate`` or ``batch_size / dataset_size``; the steps are ``steps`` or
``epochs * ceil(dataset_size / batch_size)`` (what a loader actually runs per epoch; ``ceil(1 / sample_rate)`` when
only the rate is known).

Example
-------
>>> p = plan_budget(sample_rate=0.01, steps=1000, noise_multiplier=1.0, delta=1e-5)
>>> round(p.epsilons["pld"], 4), round(p.epsilons["rdp"], 4)
(1.8282, 2.1014)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from graphrelease.errors import OptionError
from graphrelease.privacy.calibration import calibrate_noise_multiplier, schedule_epsilon


@dataclass(frozen=True)
class BudgetPlan:
    sample_rate: float
    steps: int
    delta: float
    sampling: str
    neighboring: str
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    epsilons: dict[str, float] = field(default_factory=dict)  # accountant -> epsilon (mode "epsilon")
    noise_multipliers: dict[str, float] = field(default_factory=dict)  # accountant -> sigma (mode "sigma")

    @property
    def mode(self) -> str:
        return "sigma" if self.target_epsilon is not None else "epsilon"


def resolve_schedule(*, dataset_size: int | None = None, batch_size: int | None = None,
                     sample_rate: float | None = None, epochs: float | None = None,
                     steps: int | None = None) -> tuple[float, int]:
    """``(sample_rate, steps)`` from the planner's options (see module docstring)."""
    if sample_rate is None:
        if dataset_size is None or batch_size is None:
            raise OptionError("give --sample-rate, or --dataset-size and --batch-size")
        if dataset_size < 1 or batch_size < 1 or batch_size > dataset_size:
            raise OptionError(f"--batch-size must be in [1, --dataset-size]; got {batch_size} of {dataset_size}")
        sample_rate = batch_size / dataset_size
    if not (0 < sample_rate <= 1):
        raise OptionError(f"--sample-rate must be in (0, 1], got {sample_rate}")
    if steps is None:
        if epochs is None:
            raise OptionError("give --steps or --epochs")
        if epochs <= 0:
            raise OptionError(f"--epochs must be > 0, got {epochs}")
        per_epoch = (math.ceil(dataset_size / batch_size) if dataset_size and batch_size
                     else math.ceil(1.0 / sample_rate))
        steps = int(math.ceil(epochs * per_epoch))
    if steps < 1:
        raise OptionError(f"--steps must be >= 1, got {steps}")
    return float(sample_rate), int(steps)


def neighboring_for(sampling: str, neighboring: str | None) -> str:
    """The neighbouring relation a schedule is analysed under: fixed-size batches without replacement are analysed
    under replace-one only (a removed example changes the batch size otherwise), so ``wor`` defaults to it and
    refuses add/remove; Poisson sampling defaults to add/remove."""
    if neighboring is None:
        return "replace_one" if sampling == "wor" else "add_remove"
    if sampling == "wor" and neighboring == "add_remove":
        raise OptionError("--sampling wor is analysed under --neighboring replace_one only (fixed-size batches); "
                          "drop --neighboring or pass replace_one")
    return neighboring


def plan_budget(*, delta: float, dataset_size: int | None = None, batch_size: int | None = None,
                sample_rate: float | None = None, epochs: float | None = None, steps: int | None = None,
                noise_multiplier: float | None = None, epsilon: float | None = None, sampling: str = "poisson",
                neighboring: str | None = None, accountants: tuple[str, ...] = ("pld", "rdp")) -> BudgetPlan:
    """Epsilon under each accountant for ``noise_multiplier``, or (with ``epsilon``) the noise multiplier that each
    accountant needs. ``neighboring=None``: see :func:`neighboring_for`."""
    neighboring = neighboring_for(sampling, neighboring)
    q, t = resolve_schedule(dataset_size=dataset_size, batch_size=batch_size, sample_rate=sample_rate,
                            epochs=epochs, steps=steps)
    kw = dict(delta=delta, sample_rate=q, steps=t, sampling=sampling, neighboring=neighboring,
              dataset_size=dataset_size)
    if (epsilon is None) == (noise_multiplier is None):
        raise OptionError("give exactly one of --noise-multiplier (to get epsilon) or --epsilon (to get sigma)")
    if epsilon is not None:
        sig = {a: calibrate_noise_multiplier(target_epsilon=epsilon, accountant=a, rtol=1e-3, **kw)
               for a in accountants}
        return BudgetPlan(q, t, delta, sampling, neighboring, target_epsilon=epsilon, noise_multipliers=sig)
    if noise_multiplier <= 0:
        raise OptionError(f"--noise-multiplier must be > 0, got {noise_multiplier}")
    eps = {a: schedule_epsilon(noise_multiplier=noise_multiplier, accountant=a, **kw) for a in accountants}
    return BudgetPlan(q, t, delta, sampling, neighboring, noise_multiplier=noise_multiplier, epsilons=eps)


def plan_grid(*, delta: float, sigmas: list[float], epochs: list[float], dataset_size: int | None = None,
              batch_size: int | None = None, sample_rate: float | None = None, sampling: str = "poisson",
              neighboring: str | None = None, accountant: str = "pld") -> list[dict]:
    """Epsilon over a grid of noise multipliers x epochs: rows ``{"noise_multiplier", "epochs", "steps",
    "epsilon"}``."""
    neighboring = neighboring_for(sampling, neighboring)
    rows = []
    for s in sigmas:
        for e in epochs:
            q, t = resolve_schedule(dataset_size=dataset_size, batch_size=batch_size, sample_rate=sample_rate,
                                    epochs=e)
            eps = schedule_epsilon(noise_multiplier=s, delta=delta, sample_rate=q, steps=t, sampling=sampling,
                                   neighboring=neighboring, dataset_size=dataset_size, accountant=accountant)
            rows.append({"noise_multiplier": s, "epochs": e, "steps": t, "epsilon": eps})
    return rows
