"""Samplers for DP-SGD batches. Each knows the ledger parameters its amplification theorem needs.

``PoissonSampler``  every example joins the batch independently with probability ``sample_rate`` (variable batch
                    size). Accounted as ``sampling="poisson"``; the add/remove analysis is the sampled Gaussian
                    mechanism (Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian
                    Mechanism"; PLD: Zhu, Dong, Wang 2022 / dp-accounting).
``FixedSizeSampler`` exactly ``batch_size`` distinct examples drawn uniformly without replacement. Accounted as
                    ``sampling="wor"`` with ``dataset_size``; the analysis is replace-one (Wang, Balle,
                    Kasiviswanathan 2019, "Subsampled Rényi Differential Privacy and Analytical Moments Accountant",
                    Thm. 9), since with a fixed batch size the dataset size is fixed and neighbours differ by
                    replacement.

Both draw from a ``numpy.random.Generator`` that the caller obtains from
:func:`graphrelease.privacy.noise.secure_generator` (OS entropy unless a reproducibility seed was asked for). The
realised batch size of a Poisson batch is private: it is never used to normalise the gradient (the noisy step
divides by the *expected* batch size) and never logged into a release.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from graphrelease.errors import OptionError


def _check_generator(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise OptionError(
            "samplers need a numpy.random.Generator from graphrelease.privacy.noise.secure_generator(), "
            f"got {type(rng).__name__}"
        )
    return rng


class PoissonSampler:
    """Poisson subsampling: each of ``dataset_size`` examples is included independently with ``sample_rate``.

    Example
    -------
    >>> import numpy as np
    >>> s = PoissonSampler(dataset_size=1000, sample_rate=0.01, rng=np.random.default_rng(0))
    >>> s.expected_batch_size
    10.0
    >>> idx = s.sample()   # sorted int64 tensor, size ~ Binomial(1000, 0.01)
    """

    sampling = "poisson"

    def __init__(self, *, dataset_size: int, sample_rate: float, rng: np.random.Generator) -> None:
        if int(dataset_size) < 1:
            raise OptionError(f"dataset_size must be >= 1, got {dataset_size}")
        q = float(sample_rate)
        if not (0.0 < q <= 1.0) or not math.isfinite(q):
            raise OptionError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
        self.dataset_size = int(dataset_size)
        self.sample_rate = q
        self.rng = _check_generator(rng)

    @property
    def expected_batch_size(self) -> float:
        """:math:`qN`: the denominator of the noisy mean gradient (public, unlike the realised size)."""
        return self.sample_rate * self.dataset_size

    def sample(self) -> torch.Tensor:
        mask = self.rng.random(self.dataset_size) < self.sample_rate
        return torch.from_numpy(np.flatnonzero(mask).astype(np.int64))

    def ledger_params(self) -> dict:
        return {"sample_rate": self.sample_rate, "sampling": "poisson"}

    def __repr__(self) -> str:
        return f"PoissonSampler(dataset_size={self.dataset_size}, sample_rate={self.sample_rate})"


class FixedSizeSampler:
    """Uniform sampling of exactly ``batch_size`` distinct examples (without replacement) per step."""

    sampling = "wor"

    def __init__(self, *, dataset_size: int, batch_size: int, rng: np.random.Generator) -> None:
        if int(dataset_size) < 1:
            raise OptionError(f"dataset_size must be >= 1, got {dataset_size}")
        if not (1 <= int(batch_size) <= int(dataset_size)):
            raise OptionError(f"batch_size must be in 1..dataset_size={dataset_size}, got {batch_size}")
        self.dataset_size = int(dataset_size)
        self.batch_size = int(batch_size)
        self.rng = _check_generator(rng)

    @property
    def sample_rate(self) -> float:
        return self.batch_size / self.dataset_size

    @property
    def expected_batch_size(self) -> float:
        return float(self.batch_size)

    def sample(self) -> torch.Tensor:
        idx = self.rng.choice(self.dataset_size, size=self.batch_size, replace=False)
        return torch.from_numpy(np.sort(idx).astype(np.int64))

    def ledger_params(self) -> dict:
        return {"sample_rate": self.sample_rate, "sampling": "wor", "dataset_size": self.dataset_size}

    def __repr__(self) -> str:
        return f"FixedSizeSampler(dataset_size={self.dataset_size}, batch_size={self.batch_size})"
