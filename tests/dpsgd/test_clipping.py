"""Clipping policies bound every example's gradient norm by their declared threshold."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphrelease.dpsgd import FlatClipping, FreqClipping, PerGroupClipping, per_example_grads
from graphrelease.errors import OptionError


def _grads(seed=0, n=40, scale=3.0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    x = torch.randn(n, 6, dtype=torch.float64) * scale
    y = torch.randint(0, 3, (n,))
    loss = lambda f, ex: torch.nn.functional.cross_entropy(f(ex[0].unsqueeze(0)), ex[1].unsqueeze(0))
    return per_example_grads(model, loss, (x, y))


def _norms(grads, names=None):
    names = list(grads) if names is None else names
    return torch.sqrt(sum(grads[n].reshape(grads[n].shape[0], -1).pow(2).sum(1) for n in names))


def test_flat_clipping_bounds_norms_and_keeps_small_gradients():
    g = _grads()
    raw = _norms(g)
    c = float(raw.median())
    clipped = FlatClipping(max_grad_norm=c).clip(g)
    after = _norms(clipped)
    assert torch.all(after <= c)
    small = raw < c * 0.999
    assert small.any() and (~small).any()
    torch.testing.assert_close(after[small], raw[small], rtol=1e-5, atol=0)
    torch.testing.assert_close(after[~small], torch.full_like(after[~small], c), rtol=3e-5, atol=0)


def test_clip_and_sum_equals_sum_of_clipped():
    g = _grads(1)
    pol = FlatClipping(max_grad_norm=0.5)
    summed = pol.clip_and_sum(g)
    clipped = pol.clip(g)
    for n in g:
        assert summed[n].dtype == torch.float64
        torch.testing.assert_close(summed[n], clipped[n].sum(0), rtol=1e-12, atol=1e-12)


def test_per_group_clipping_bounds_each_group():
    g = _grads(2)
    pol = PerGroupClipping(groups={"first": ["0."], "second": ["2."]}, thresholds={"first": 0.3, "second": 0.4})
    assert math.isclose(pol.bound, 0.5)
    clipped = pol.clip(g)
    assert torch.all(_norms(clipped, ["0.weight", "0.bias"]) <= 0.3)
    assert torch.all(_norms(clipped, ["2.weight", "2.bias"]) <= 0.4)
    assert torch.all(_norms(clipped) <= pol.bound)


def test_per_group_clipping_rejects_unassigned_parameters():
    g = _grads(3)
    pol = PerGroupClipping(groups={"first": ["0."]}, thresholds={"first": 1.0})
    with pytest.raises(OptionError, match="2.weight"):
        pol.clip(g)


def test_freq_clipping_scales_threshold_by_frequency_and_bounds_entity_total():
    g = _grads(4, n=12)
    freq = np.array([1, 2, 3, 4] * 3, dtype=float)
    pol = FreqClipping(max_grad_norm=0.6, frequencies=freq)
    idx = torch.arange(12)
    after = _norms(pol.clip(g, indices=idx))
    assert torch.all(after <= 0.6 / torch.from_numpy(freq))
    # an entity occurring in f tuples, each clipped to C/f, contributes at most C in total
    entity_tuples = torch.tensor([3, 7, 11, 2])  # frequencies 4,4,4,3 -> factor 4 = max frequency in those tuples
    pol2 = FreqClipping(max_grad_norm=0.6, frequencies=np.full(12, 4.0))
    assert float(_norms(pol2.clip(g, indices=idx))[entity_tuples].sum()) <= 0.6


def test_freq_clipping_with_batch_function():
    g = _grads(5, n=6)
    pol = FreqClipping(max_grad_norm=1.0, frequencies=lambda batch: np.arange(1, len(batch) + 1, dtype=float))
    pol.begin_step(torch.arange(6))
    after = _norms(pol.clip(g, positions=torch.arange(6)))
    assert torch.all(after <= 1.0 / torch.arange(1, 7, dtype=torch.float64))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_invalid_thresholds_are_rejected(bad):
    with pytest.raises(OptionError, match="max_grad_norm"):
        FlatClipping(max_grad_norm=bad)


def test_frequencies_below_one_are_rejected():
    with pytest.raises(OptionError, match=">= 1"):
        FreqClipping(max_grad_norm=1.0, frequencies=np.array([1.0, 0.5]))
