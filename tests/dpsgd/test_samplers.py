"""Samplers: Poisson batch sizes follow Binomial(N, q); the fixed-size sampler draws distinct examples."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.dpsgd import FixedSizeSampler, PoissonSampler
from graphrelease.errors import OptionError


def test_poisson_batch_sizes_follow_the_binomial():
    n, q, steps = 2708, 0.02, 400
    s = PoissonSampler(dataset_size=n, sample_rate=q, rng=np.random.default_rng(0))
    sizes = []
    for _ in range(steps):
        idx = s.sample().numpy()
        assert np.all(np.diff(idx) > 0) and (idx.size == 0 or (idx[0] >= 0 and idx[-1] < n))
        sizes.append(idx.size)
    sizes = np.asarray(sizes)
    mean_sd = np.sqrt(n * q * (1 - q) / steps)
    assert abs(sizes.mean() - n * q) < 5 * mean_sd
    assert sizes.std() > 0  # the batch size varies
    assert s.expected_batch_size == pytest.approx(n * q)
    assert s.ledger_params() == {"sample_rate": q, "sampling": "poisson"}


def test_poisson_inclusion_is_uniform_over_examples():
    s = PoissonSampler(dataset_size=50, sample_rate=0.3, rng=np.random.default_rng(1))
    counts = np.zeros(50)
    for _ in range(2000):
        counts[s.sample().numpy()] += 1
    sd = np.sqrt(2000 * 0.3 * 0.7)
    assert np.all(np.abs(counts - 600) < 5 * sd)


def test_fixed_size_sampler_draws_distinct_examples():
    s = FixedSizeSampler(dataset_size=100, batch_size=10, rng=np.random.default_rng(2))
    for _ in range(50):
        idx = s.sample().numpy()
        assert idx.size == 10 and np.unique(idx).size == 10
    assert s.sample_rate == 0.1 and s.expected_batch_size == 10.0
    assert s.ledger_params() == {"sample_rate": 0.1, "sampling": "wor", "dataset_size": 100}


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5, float("nan")])
def test_poisson_rejects_bad_rates(q):
    with pytest.raises(OptionError, match="sample_rate"):
        PoissonSampler(dataset_size=10, sample_rate=q, rng=np.random.default_rng(0))


def test_samplers_require_a_numpy_generator():
    with pytest.raises(OptionError, match="secure_generator"):
        PoissonSampler(dataset_size=10, sample_rate=0.5, rng=np.random.RandomState(0))
    with pytest.raises(OptionError, match="batch_size"):
        FixedSizeSampler(dataset_size=10, batch_size=11, rng=np.random.default_rng(0))
