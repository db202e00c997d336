"""Clipping policies: bound each example's gradient so the clipped sum has a known L2 sensitivity.

Every policy maps per-example gradients ``{name: (b, *shape)}`` to per-example scale factors and exposes
``bound``: the largest L2 norm one example's clipped gradient can have. The noisy step adds Gaussian noise of
standard deviation ``noise_multiplier * bound``, so ``noise_multiplier`` keeps its usual meaning (noise std in units
of the clipping bound) whatever the policy.

``FlatClipping``      standard per-example clipping (Abadi et al. 2016, Alg. 1) over all trainable parameters as one
                      flat vector: :math:`\\bar g_i = g_i \\min(1, C / \\|g_i\\|_2)`; bound :math:`C`.
``PerGroupClipping``  per-layer / per-group clipping (McMahan et al. 2018, "Learning differentially private recurrent
                      language models", sec. 3): group :math:`k` clipped to :math:`C_k`; bound
                      :math:`\\sqrt{\\sum_k C_k^2}`.
``FreqClipping``      FREQ-CLIP, the adaptive clipping of the relational-learning seed (Huang, Yin, Chien, Wei, Li,
                      "Differentially Private Relational Learning with Entity-level Privacy Guarantees", 2025):
                      example :math:`i` is clipped to :math:`C / f_i` where :math:`f_i \\ge 1` is the occurrence
                      frequency factor of the entities it involves. With :math:`f_i` = the largest (capped) number of
                      sampled tuples any entity of tuple :math:`i` occurs in, the tuples that contain one entity
                      :math:`v` add up to at most :math:`f_v \\cdot C / f_v = C` -- but frequencies computed from the
                      private data also change for OTHER tuples when :math:`v` is removed (their thresholds rise), so
                      that is not the entity-level sensitivity; see ``docs/privacy.md#dp-sgd-freq-clip``. The
                      frequencies are supplied by the caller (the relational model owns the entity structure, the
                      sensitivity and the Theorem-3 accounting); this class applies them exactly. ``bound`` stays
                      :math:`C` (one example, frequency 1).

The factor is :math:`\\min(1, C / (\\|g\\|(1 + 10^{-5}) + 10^{-6}))` (the margin covers float32 norm and rounding
error) and clipped sums accumulate in float64: every clipped norm stays strictly below its threshold in floating
point, so the declared bound holds at the probes' tolerance of :math:`10^{-6}` even for float32 models.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Mapping, Sequence

import numpy as np
import torch

from graphrelease.errors import OptionError

Grads = Mapping[str, torch.Tensor]
_EPS = 1e-6
# Relative safety margin: the norm is computed, and the factor applied, in the gradients' dtype (float32 norms of
# ~1e5 entries are within ~1e-6 relative; rounding of the product ~1e-7). With the margin every clipped example is
# below its threshold in floating point, which the probes check at tolerance 1e-6.
_MARGIN = 1e-5


def _clip_factor(threshold, norms: torch.Tensor) -> torch.Tensor:
    """``min(1, threshold / (norm * (1 + 1e-5) + 1e-6))`` in float64."""
    return (threshold / (norms * (1.0 + _MARGIN) + _EPS)).clamp(max=1.0)


def _per_example_norms(grads: Grads, names: Sequence[str] | None = None) -> torch.Tensor:
    names = list(grads) if names is None else list(names)
    # Norms in the gradients' dtype (a float32 norm is within ~1e-6 relative, covered by _MARGIN), widened to float64;
    # vector_norm reduces without materialising a squared copy of every per-example gradient.
    sq = [
        torch.linalg.vector_norm(grads[n].reshape(grads[n].shape[0], -1), dim=1).to(torch.float64).pow(2)
        for n in names
    ]
    return torch.stack(sq, dim=0).sum(dim=0).sqrt()


def _check_norm(value: float, what: str) -> float:
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{what} must be a positive finite number, got {value!r}")
    return value


class ClippingPolicy(ABC):
    """Base class: scale each example's gradient so its L2 norm is at most ``bound``."""

    #: largest L2 norm one example's clipped gradient can have (the noise scale unit)
    bound: float
    #: name written into the ledger note
    name: str = "clipping"

    def begin_step(self, batch_indices: torch.Tensor) -> None:
        """Called once per step with the whole sampled batch before any chunk is clipped (default: nothing)."""

    @abstractmethod
    def factors(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        """Per-parameter per-example factors ``{name: (b,)}`` by which each example's gradient is multiplied.

        ``indices`` are the examples' dataset indices, ``positions`` their positions in the step's batch.
        """

    def clip(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        """The clipped per-example gradients ``{name: (b, *shape)}`` in the gradients' dtype."""
        fac = self.factors(grads, indices, positions)
        return {n: g * fac[n].to(g.dtype).view(-1, *([1] * (g.dim() - 1))) for n, g in grads.items()}

    def clip_and_sum(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        """Sum over examples of the clipped gradients, accumulated in float64 (the noise is added in float64).

        Accumulating in float32 would make the two sides of a neighbouring pair round differently by about
        ``eps_32 * batch * C``, which can exceed the declared bound; float64 keeps that below 1e-12 relative.
        """
        fac = self.factors(grads, indices, positions)
        out = {}
        for n, g in grads.items():
            f = fac[n].to(torch.float64)
            total = torch.zeros(g.shape[1:], dtype=torch.float64)
            # widen 16 examples at a time: float64 accumulation without a float64 copy of the whole chunk
            for s in range(0, g.shape[0], 16):
                total += torch.tensordot(f[s : s + 16], g[s : s + 16].to(torch.float64), dims=([0], [0]))
            out[n] = total
        return out

    def describe(self) -> str:
        return f"{self.name} (bound {self.bound:g})"


class FlatClipping(ClippingPolicy):
    """Standard per-example L2 clipping of the whole gradient (all trainable parameters) to ``max_grad_norm``.

    .. math:: \\bar g_i = g_i \\cdot \\min\\left(1, \\frac{C}{\\|g_i\\|_2 (1 + 10^{-5}) + 10^{-6}}\\right)

    Adding or removing one example changes the clipped sum by at most :math:`C` in L2; replacing one by
    at most :math:`2C`.
    """

    name = "flat per-example L2 clipping"

    def __init__(self, *, max_grad_norm: float) -> None:
        self.max_grad_norm = _check_norm(max_grad_norm, "max_grad_norm")
        self.bound = self.max_grad_norm

    def factors(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        norms = _per_example_norms(grads)
        f = _clip_factor(self.max_grad_norm, norms)
        return {n: f for n in grads}


class PerGroupClipping(ClippingPolicy):
    """Clip each parameter group separately: group ``k`` (parameters whose name starts with one of its prefixes)
    to ``thresholds[k]``. One example's clipped gradient has norm at most :math:`\\sqrt{\\sum_k C_k^2}`.

    Parameters
    ----------
    groups:
        ``{group: [name prefixes]}``; every trainable parameter must fall in exactly one group.
    thresholds:
        ``{group: C_k}``.
    """

    name = "per-group L2 clipping"

    def __init__(self, *, groups: Mapping[str, Sequence[str]], thresholds: Mapping[str, float]) -> None:
        if set(groups) != set(thresholds):
            raise OptionError(
                f"per-group clipping: groups {sorted(groups)} and thresholds {sorted(thresholds)} "
                "must name the same groups"
            )
        if not groups:
            raise OptionError("per-group clipping needs at least one group")
        self.groups = {k: tuple(v) for k, v in groups.items()}
        self.thresholds = {k: _check_norm(v, f"threshold of group '{k}'") for k, v in thresholds.items()}
        self.bound = math.sqrt(sum(c * c for c in self.thresholds.values()))

    def assignment(self, names: Sequence[str]) -> dict[str, str]:
        """``{parameter name: group}``; raises when a parameter matches no group or several."""
        out = {}
        for n in names:
            hits = [k for k, prefixes in self.groups.items() if any(n.startswith(p) for p in prefixes)]
            if len(hits) != 1:
                raise OptionError(
                    f"per-group clipping: parameter '{n}' matches {len(hits)} groups ({hits}); "
                    "it must match exactly one"
                )
            out[n] = hits[0]
        return out

    def factors(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        assign = self.assignment(list(grads))
        out = {}
        for group, c in self.thresholds.items():
            members = [n for n, g in assign.items() if g == group]
            if not members:
                continue
            f = _clip_factor(c, _per_example_norms(grads, members))
            out.update({n: f for n in members})
        return out


class FreqClipping(ClippingPolicy):
    """FREQ-CLIP (relational-learning seed): example ``i`` clipped to ``max_grad_norm / f_i``.

    Parameters
    ----------
    max_grad_norm:
        :math:`C`.
    frequencies:
        Either an ``(N,)`` array of frequency factors :math:`f_i \\ge 1`, one per example of the dataset (indexed by
        the sampler's indices), or a callable ``frequencies(batch_indices) -> (b,)`` evaluated once per step on the
        whole sampled batch, for factors that depend on the batch (occurrences among the sampled tuples).
    """

    name = "FREQ-CLIP"

    def __init__(self, *, max_grad_norm: float, frequencies) -> None:
        self.max_grad_norm = _check_norm(max_grad_norm, "max_grad_norm")
        self.bound = self.max_grad_norm
        if callable(frequencies):
            self._fn, self._frequencies = frequencies, None
        else:
            self._fn, self._frequencies = None, self._validated(frequencies)
        self._batch: torch.Tensor | None = None

    @staticmethod
    def _validated(freq) -> torch.Tensor:
        f = torch.as_tensor(np.asarray(freq, dtype=np.float64))
        if f.dim() != 1:
            raise OptionError(f"FREQ-CLIP frequencies must be one number per example, got shape {tuple(f.shape)}")
        if f.numel() and not bool(torch.all(f >= 1.0)):
            raise OptionError(f"FREQ-CLIP frequencies must be >= 1, got min {float(f.min())}")
        return f

    def begin_step(self, batch_indices: torch.Tensor) -> None:
        if self._fn is not None:
            f = self._validated(self._fn(batch_indices))
            if f.shape[0] != len(batch_indices):
                raise OptionError(f"FREQ-CLIP: {f.shape[0]} frequencies for a batch of {len(batch_indices)} examples")
            self._batch = f

    def thresholds(self, indices: torch.Tensor | None, positions: torch.Tensor | None, b: int) -> torch.Tensor:
        if self._fn is not None:
            if self._batch is None or positions is None:
                raise OptionError("FREQ-CLIP with a frequency function: call begin_step(batch_indices) first")
            f = self._batch[torch.as_tensor(positions, dtype=torch.long)]
        else:
            if indices is None:
                raise OptionError("FREQ-CLIP needs the dataset indices of the examples being clipped")
            f = self._frequencies[torch.as_tensor(indices, dtype=torch.long)]
        if f.shape[0] != b:
            raise OptionError(f"FREQ-CLIP: {f.shape[0]} frequencies for {b} examples")
        return self.max_grad_norm / f

    def factors(self, grads: Grads, indices=None, positions=None) -> dict[str, torch.Tensor]:
        norms = _per_example_norms(grads)
        c = self.thresholds(indices, positions, norms.shape[0]).to(norms.dtype)
        f = _clip_factor(c, norms)
        return {n: f for n in grads}
