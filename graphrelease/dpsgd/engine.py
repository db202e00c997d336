"""The noisy DP-SGD step and a trainer that charges every step to a :class:`~graphrelease.privacy.budget.Budget`.

One step (Abadi et al. 2016, Alg. 1, with the expected batch size of Poisson sampling as denominator):

.. math::

    \\tilde g = \\frac{1}{qN}\\Big(\\sum_{i \\in B} \\mathrm{clip}(\\nabla_\\theta \\ell(\\theta; x_i))
                + \\mathcal N(0, \\sigma^2 \\Delta^2 I)\\Big),
    \\qquad \\theta \\leftarrow \\mathrm{optimizer}(\\theta, \\tilde g)

where :math:`\\Delta` is the clipping policy's per-example bound (``clipping.bound``; :math:`C` for flat clipping)
and :math:`\\sigma` the ``noise_multiplier``. The pre-noise query is the clipped sum. The ledger's ``sensitivity``
bounds ONE example's contribution in units of :math:`\\Delta` (1 whenever every example is clipped by the policy),
as the accountants expect: adding/removing that example moves the sum by at most :math:`\\Delta`, and
``neighboring="replace_one"`` makes the accountant analyse a substitution (the two versions up to
:math:`2\\Delta` apart) — do NOT also double ``sensitivity`` for replace-one. One privacy unit touching several
examples is ``group_size``. The probes in ``tests/dpsgd`` check these bounds.
Noise is drawn in float64 from a ``torch.Generator``
seeded by :func:`graphrelease.privacy.noise.secure_generator`; the denominator is the public expected batch size
``sampler.expected_batch_size``, never the realised one.

Before anything is sampled, the step charges ``LedgerEntry(mechanism="subsampled_gaussian", ...)`` to the budget.
If the budget refuses (``BudgetError``) nothing is computed and the parameters are unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch
from torch import nn

from graphrelease.dpsgd.clipping import ClippingPolicy
from graphrelease.dpsgd.per_example import LossFn, iter_per_example_grads, num_examples, select, trainable_parameters
from graphrelease.errors import BudgetError, OptionError
from graphrelease.privacy.ledger import LedgerEntry

_NEIGHBORING = ("add_remove", "replace_one")

#: default proof anchors, by (sampling, neighboring)
PROOFS = {
    ("poisson", "add_remove"): "docs/privacy.md#dp-sgd-poisson",
    ("poisson", "replace_one"): "docs/privacy.md#dp-sgd-replace-one",
    ("wor", "replace_one"): "docs/privacy.md#dp-sgd-wor",
}


def clipped_grad_sum(
    model: nn.Module,
    loss_fn: LossFn,
    examples: Any,
    indices: torch.Tensor,
    clipping: ClippingPolicy,
    *,
    chunk_size: int = 256,
) -> dict[str, torch.Tensor]:
    """The pre-noise query of one DP-SGD step: :math:`\\sum_{i \\in \\text{indices}} \\mathrm{clip}(g_i)`, float64.

    ``indices`` select the batch from ``examples`` (either layout of :mod:`graphrelease.dpsgd.per_example`). An
    empty batch gives zeros (the step still adds noise and is still charged).
    """
    params = trainable_parameters(model)
    total = {n: torch.zeros(p.shape, dtype=torch.float64) for n, p in params.items()}
    indices = torch.as_tensor(indices, dtype=torch.long)
    if indices.numel() == 0:
        return total
    clipping.begin_step(indices)
    batch = select(examples, indices)
    start = 0
    for grads in iter_per_example_grads(model, loss_fn, batch, chunk_size=chunk_size):
        b = next(iter(grads.values())).shape[0]
        positions = torch.arange(start, start + b)
        part = clipping.clip_and_sum(grads, indices=indices[positions], positions=positions)
        for n in total:
            total[n] += part[n]
        start += b
    return total


def gaussian_noise_like(
    tensors: Mapping[str, torch.Tensor], std: float, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """Independent :math:`\\mathcal N(0, \\mathrm{std}^2)` noise for every tensor, drawn in float64 by
    :func:`graphrelease.privacy.noise.gaussian_noise` from ``generator`` (a ``torch.Generator`` from
    ``secure_generator``)."""
    from graphrelease.privacy.noise import gaussian_noise

    return {n: gaussian_noise(tuple(t.shape), std, generator) for n, t in tensors.items()}


@dataclass(frozen=True)
class TrainResult:
    """What a training loop did: steps applied and whether it stopped because the budget refused a step."""

    steps: int
    budget_exhausted: bool


class DPSGDTrainer:
    """DP-SGD over independent examples, every step charged to a budget before it is applied.

    Parameters
    ----------
    model, loss_fn:
        The module and ``loss_fn(model_fn, example) -> scalar`` (see :mod:`graphrelease.dpsgd.per_example`).
    optimizer:
        Any ``torch.optim`` optimizer over ``model``'s trainable parameters (Adam, SGD, ...).
    sampler:
        :class:`~graphrelease.dpsgd.samplers.PoissonSampler` or :class:`~graphrelease.dpsgd.samplers.FixedSizeSampler`.
    clipping:
        A :class:`~graphrelease.dpsgd.clipping.ClippingPolicy`.
    noise_multiplier:
        :math:`\\sigma`: noise std in units of ``clipping.bound``. ``0`` only with an unlimited budget (a
        non-private baseline; nothing is charged).
    budget:
        The run's :class:`~graphrelease.privacy.budget.Budget`.
    stage:
        Ledger stage name, e.g. ``"dp_mlp.dpsgd"``.
    sensitivity:
        Bound on ONE example's clipped contribution in units of ``clipping.bound`` (1 for every policy here). The
        factor 2 of a substitution comes from ``neighboring="replace_one"`` in the accountant, not from here.
    neighboring:
        ``"add_remove"`` (the privacy unit adds/removes one example) or ``"replace_one"`` (it changes one
        example's content: whole-graph examples under edge adjacency); the fixed-size sampler requires
        ``"replace_one"``.
    noise_generator:
        ``torch.Generator`` for the noise; default: a fresh one from ``secure_generator()`` (OS entropy).
    chunk_size:
        Examples per ``vmap`` call (memory bound).
    clipped_sum:
        Optional ``clipped_sum(examples, indices, clipping) -> {name: float64 tensor}``: a specialised computation
        of the same pre-noise query as :func:`clipped_grad_sum` for a model where the generic path is wasteful
        (DPDGC's DP-Emb: each example reads a few rows of an n-row weight, so the generic per-example gradient
        is a dense n-row tensor of zeros). It must return the same value; its model's tests compare the two.
    batch_loss:
        Optional ``batch_loss(model, batch) -> (B,)`` per-example losses of a whole batch. With flat clipping and a
        model whose trainable parameters are all linear layers, the step then uses ghost clipping with
        book-keeping (:mod:`graphrelease.dpsgd.ghost`: same clipped sum, no per-example gradients); otherwise,
        or without it, the exact ``vmap(grad)`` path.
    proof, group_size, sound, note:
        Copied into the ledger entry. ``proof`` is the proof sketch's anchor; by default the engine's own section
        of ``docs/privacy.md`` for the sampler and neighbouring relation in use (:data:`PROOFS`).
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: LossFn,
        optimizer: torch.optim.Optimizer,
        *,
        sampler,
        clipping: ClippingPolicy,
        noise_multiplier: float,
        budget,
        stage: str,
        sensitivity: float = 1.0,
        neighboring: str = "add_remove",
        noise_generator: torch.Generator | None = None,
        chunk_size: int = 256,
        proof: str | None = None,
        group_size: int = 1,
        sound: bool = True,
        note: str = "",
        clipped_sum: Callable[[Any, torch.Tensor, ClippingPolicy], dict[str, torch.Tensor]] | None = None,
        batch_loss: Callable[[nn.Module, Any], torch.Tensor] | None = None,
        ledger_params: dict[str, Any] | None = None,
    ) -> None:
        sigma = float(noise_multiplier)
        if not (sigma >= 0 and math.isfinite(sigma)):
            raise OptionError(f"noise_multiplier must be a finite number >= 0, got {noise_multiplier!r}")
        if neighboring not in _NEIGHBORING:
            raise OptionError(f"neighboring must be one of {_NEIGHBORING}, got {neighboring!r}")
        if sampler.sampling == "wor" and neighboring != "replace_one":
            raise OptionError(
                "a fixed-size (without replacement) sampler is analysed under replace-one neighbouring: "
                "pass neighboring='replace_one'"
            )
        if not (float(sensitivity) > 0):
            raise OptionError(f"sensitivity must be > 0, got {sensitivity!r}")
        if not isinstance(clipping, ClippingPolicy):
            raise OptionError(f"clipping must be a ClippingPolicy, got {type(clipping).__name__}")
        _check_independent_layers(model)
        if sigma == 0 and not _unlimited(budget):
            raise OptionError(
                "noise_multiplier=0 is a non-private baseline: use Budget.unlimited(adjacency), or give sigma > 0"
            )
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.sampler = sampler
        self.clipping = clipping
        self.noise_multiplier = sigma
        self.budget = budget
        self.stage = stage
        self.sensitivity = float(sensitivity)
        self.neighboring = neighboring
        self.chunk_size = int(chunk_size)
        self.proof = proof if proof is not None else PROOFS[(sampler.sampling, neighboring)]
        self.group_size = int(group_size)
        self.sound = bool(sound)
        self.note = note
        #: public values the stage's proof depends on (e.g. a degree cap), stated in every entry for the verifier
        self.ledger_params = dict(ledger_params or {})
        self.clipped_sum = clipped_sum
        from graphrelease.dpsgd.ghost import ghost_supported

        self.batch_loss = batch_loss
        #: True when steps use ghost clipping (decided once: the model's layer structure does not change)
        self.ghost = batch_loss is not None and clipped_sum is None and ghost_supported(model, clipping)
        if noise_generator is None:
            from graphrelease.privacy.noise import secure_generator

            _, noise_generator, _ = secure_generator()
        self.noise_generator = noise_generator
        self.steps_taken = 0

    # ------------------------------------------------------------------ accounting
    def ledger_entry(self, count: int = 1) -> LedgerEntry:
        """The entry one step (or ``count`` steps) charges."""
        params = {"noise_multiplier": self.noise_multiplier, "neighboring": self.neighboring}
        params.update(self.sampler.ledger_params())
        params.update(self.ledger_params)
        note = self.note or f"DP-SGD, {self.clipping.describe()}"
        return LedgerEntry(
            mechanism="subsampled_gaussian",
            stage=self.stage,
            params=params,
            count=count,
            sensitivity=self.sensitivity,
            group_size=self.group_size,
            proof=self.proof,
            sound=self.sound,
            note=note,
        )

    def steps_for_budget(self) -> int:
        """How many further steps the budget (and its parents) accept with the current settings.

        Uses the budget's own accountant (``Budget.max_count``); unlimited for a non-private baseline.
        """
        if self.noise_multiplier == 0:
            return 2**62
        return int(self.budget.max_count(self.ledger_entry(1)))

    # ------------------------------------------------------------------ the step
    def step(self, examples: Any) -> None:
        """One noisy step on a fresh sample of ``examples``. Raises ``BudgetError`` (parameters untouched) when
        the budget refuses it."""
        n = num_examples(examples)
        if n != self.sampler.dataset_size:
            raise OptionError(f"the sampler was built for {self.sampler.dataset_size} examples, got {n}")
        if self.noise_multiplier > 0:
            self.budget.charge(self.ledger_entry(1))  # raises before anything private is computed
        indices = self.sampler.sample()
        if self.clipped_sum is not None:
            summed = self.clipped_sum(examples, indices, self.clipping)
        elif self.ghost:
            from graphrelease.dpsgd.ghost import ghost_clipped_sum

            summed = ghost_clipped_sum(self.model, self.batch_loss, examples, indices, self.clipping)
        else:
            summed = clipped_grad_sum(
                self.model, self.loss_fn, examples, indices, self.clipping, chunk_size=self.chunk_size
            )
        std = self.noise_multiplier * self.clipping.bound
        noise = gaussian_noise_like(summed, std, self.noise_generator) if std > 0 else None
        denom = self.sampler.expected_batch_size
        named = dict(self.model.named_parameters())
        self.optimizer.zero_grad(set_to_none=True)
        for name, total in summed.items():
            g = total if noise is None else total + noise[name]
            p = named[name]
            p.grad = (g / denom).to(p.dtype)
        self.optimizer.step()
        self.steps_taken += 1

    def train(self, examples: Any, steps: int, *, callback: Callable[[int], None] | None = None) -> TrainResult:
        """Run up to ``steps`` steps; stop cleanly (``budget_exhausted=True``) when the budget refuses one."""
        done = 0
        for _ in range(int(steps)):
            try:
                self.step(examples)
            except BudgetError:
                return TrainResult(done, True)
            done += 1
            if callback is not None:
                callback(done)
        return TrainResult(done, False)


def _check_independent_layers(model: nn.Module) -> None:
    """Refuse layers that mix examples of a batch (batch normalisation): they break per-example sensitivity."""
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            raise OptionError(
                f"layer '{name or type(module).__name__}' is batch normalisation, which mixes the examples of a batch "
                "(one example then influences every other example's gradient); use LayerNorm or GroupNorm"
            )


def _unlimited(budget) -> bool:
    return bool(getattr(budget, "is_unlimited", False))


def calibrate_noise_multiplier_for(
    *, budget, sampler, steps: int, sensitivity: float = 1.0, neighboring: str = "add_remove", group_size: int = 1
) -> float:
    """The noise multiplier that spends ``budget``'s (epsilon, delta) in ``steps`` steps of ``sampler``.

    Thin wrapper over :func:`graphrelease.privacy.calibration.calibrate_noise_multiplier` with the sampler's
    parameters filled in; calibrates against the budget's total epsilon, so call it on a fresh (stage) budget.
    """
    from graphrelease.privacy.calibration import calibrate_noise_multiplier

    return calibrate_noise_multiplier(
        target_epsilon=float(budget.epsilon),
        delta=float(budget.delta),
        sample_rate=sampler.sample_rate,
        steps=int(steps),
        sampling=sampler.sampling,
        neighboring=neighboring,
        sensitivity=float(sensitivity),
        accountant=getattr(budget, "accountant", "pld"),
        dataset_size=getattr(sampler, "dataset_size", None),
        group_size=int(group_size),
    )
