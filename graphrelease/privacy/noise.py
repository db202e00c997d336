"""Noise sources for mechanisms.

Noise is drawn from generators seeded from the operating system's CSPRNG (:mod:`secrets`) unless the caller passes a
seed for a reproducibility test; then ``used_seed`` is ``True`` and the certificate must say
``reproducible_seed_used: true`` with ``guarantee: none`` (a known seed makes the noise known). The seed itself is
never written anywhere.

Gaussian noise is sampled in float64 (PRIVACY.md: where it meets released values), then the caller may cast.

Example
-------
>>> rng, torch_gen, used_seed = secure_generator()
>>> used_seed
False
>>> gaussian_noise((3,), 2.0, rng).dtype
dtype('float64')
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from graphrelease.errors import OptionError


def secure_generator(seed: int | None = None) -> tuple[np.random.Generator, Any, bool]:
    """Return ``(numpy Generator, torch.Generator, used_seed)``.

    Without ``seed`` both generators are seeded from :func:`secrets.randbits` (128 bits for numpy's PCG64, 63 bits
    for torch's Philox/MT state, independent draws). With ``seed`` both are seeded from it and ``used_seed`` is True.
    """
    import torch

    if seed is None:
        np_seed = secrets.randbits(128)
        torch_seed = secrets.randbits(63)
        used = False
    else:
        try:
            seed = int(seed)
        except (TypeError, ValueError) as err:
            raise OptionError(f"--seed must be an integer, got {seed!r}") from err
        if seed < 0:
            raise OptionError(f"--seed must be >= 0, got {seed}")
        np_seed = seed
        # a different stream for torch, still a deterministic function of the seed
        torch_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1, dtype=np.uint64)[0]) & (2**63 - 1)
        used = True
    rng = np.random.Generator(np.random.PCG64(np_seed))
    tgen = torch.Generator(device="cpu")
    tgen.manual_seed(torch_seed)
    return rng, tgen, used


def gaussian_noise(shape, std: float, generator) -> Any:
    """Float64 Gaussian noise with standard deviation ``std``.

    ``generator`` is a :class:`numpy.random.Generator` (returns an ndarray) or a :class:`torch.Generator` (returns a
    float64 CPU tensor).
    """
    std = float(std)
    if not (std >= 0) or np.isnan(std):
        raise OptionError(f"noise standard deviation must be >= 0, got {std!r}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if isinstance(generator, np.random.Generator):
        return generator.normal(0.0, std, size=shape).astype(np.float64, copy=False) if std > 0 else np.zeros(shape)
    import torch

    if isinstance(generator, torch.Generator):
        out = torch.randn(shape, generator=generator, dtype=torch.float64, device="cpu")
        return out.mul_(std)
    raise OptionError(f"gaussian_noise needs a numpy or torch Generator, got {type(generator).__name__}")


def laplace_noise(shape, scale: float, generator: np.random.Generator) -> np.ndarray:
    """Float64 Laplace noise with scale ``scale`` (``b``; the mechanism is ``L1 sensitivity / b``-DP)."""
    scale = float(scale)
    if not (scale >= 0):
        raise OptionError(f"Laplace scale must be >= 0, got {scale!r}")
    if isinstance(shape, int):
        shape = (shape,)
    return generator.laplace(0.0, scale, size=tuple(shape)).astype(np.float64, copy=False)


def gumbel_noise(shape, scale: float, generator: np.random.Generator) -> np.ndarray:
    """Float64 Gumbel noise with scale ``scale`` (Gumbel-max trick for the exponential mechanism / top-k)."""
    scale = float(scale)
    if not (scale >= 0):
        raise OptionError(f"Gumbel scale must be >= 0, got {scale!r}")
    if isinstance(shape, int):
        shape = (shape,)
    return generator.gumbel(0.0, scale, size=tuple(shape)).astype(np.float64, copy=False)


def exponential_mechanism_scale(epsilon: float, sensitivity: float, *, monotone: bool = False) -> float:
    """Gumbel scale, in utility units, at which ``argmax(utility + Gumbel)`` is the ``epsilon``-DP exponential
    mechanism: ``2 sensitivity / epsilon``, or ``sensitivity / epsilon`` for a monotone utility (McSherry & Talwar
    2007). Ledger entries state it as ``scale`` so that ``certificate verify`` recomputes epsilon from the noise the
    code draws rather than trusting the stated epsilon."""
    epsilon = float(epsilon)
    if not (epsilon > 0):
        raise OptionError(f"exponential mechanism epsilon must be > 0, got {epsilon!r}")
    return (1.0 if monotone else 2.0) * float(sensitivity) / epsilon
