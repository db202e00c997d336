"""The block sampler draws exactly from independent Bernoulli(sigmoid(h_u . h_v + c)) edges, without n x n memory."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.generators.sampling import (
    _sigmoid,
    calibrate_offset,
    expected_edges,
    sample_edges,
    sample_edges_dense,
)


def _emb(n: int, d: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def test_edges_are_canonical():
    e = sample_edges(_emb(300), -3.0, rng=np.random.default_rng(1), block_rows=64)
    assert e.ndim == 2 and e.shape[1] == 2
    assert np.all(e[:, 0] < e[:, 1])
    assert len(np.unique(e[:, 0] * 300 + e[:, 1])) == len(e)


def test_pair_frequencies_match_probabilities():
    """Per-pair inclusion frequency over many draws matches sigmoid(logit) (both direct and thinned pairs)."""
    n, draws = 30, 600
    emb = _emb(n, 4, seed=2)
    p = _sigmoid(emb.astype(np.float64) @ emb.T.astype(np.float64) - 2.0)
    iu, ju = np.triu_indices(n, 1)
    counts = np.zeros((n, n))
    rng = np.random.default_rng(3)
    for _ in range(draws):
        e = sample_edges(emb, -2.0, rng=rng, block_rows=7, threshold_prob=0.1)
        counts[e[:, 0], e[:, 1]] += 1
    freq = counts[iu, ju] / draws
    expected = p[iu, ju]
    z = (freq - expected) / np.sqrt(expected * (1 - expected) / draws + 1e-12)
    assert np.abs(z).max() < 5.5  # 435 pairs; |z| > 5.5 has probability ~1e-6 under exactness
    # the total matches the dense reference sampler's expectation
    assert counts.sum() / draws == pytest.approx(expected.sum(), rel=0.03)


def test_calibrated_offset_hits_target():
    emb = _emb(2000, 16, seed=4)
    off = calibrate_offset(emb, 0.0, 5000.0, rng=np.random.default_rng(5))
    assert expected_edges(emb, 0.0, off, num_probe=3_000_000, rng=np.random.default_rng(6)) == pytest.approx(
        5000, rel=0.05)
    e = sample_edges(emb, 0.0, off, rng=np.random.default_rng(7))
    assert 4500 < len(e) < 5500


def test_dense_reference_agrees_in_mean():
    emb = _emb(200, 8, seed=8)
    a = np.mean([len(sample_edges(emb, -4.0, rng=np.random.default_rng(i))) for i in range(20)])
    b = np.mean([len(sample_edges_dense(emb, -4.0, rng=np.random.default_rng(100 + i))) for i in range(20)])
    assert a == pytest.approx(b, rel=0.05)


def test_tiny_graphs():
    assert sample_edges(_emb(1), 0.0, rng=np.random.default_rng(0)).shape == (0, 2)
    assert calibrate_offset(_emb(1), 0.0, 3.0) == 0.0
