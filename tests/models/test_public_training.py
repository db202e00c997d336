"""Noise-free stages (edge adjacency: public features and training labels) share one optimiser (models/common.py
PUBLIC_LR): DP-MLP's network, GAP's encoder and classifier, DPDGC's prior and classifier train at ``public_lr``; the
DP-SGD ``lr`` must not reach them, and under node adjacency DP-SGD keeps ``lr``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.models.common import PUBLIC_DROPOUT, PUBLIC_LR  # noqa: E402
from graphrelease.models.dpdgc import DPDGC  # noqa: E402
from graphrelease.models.gap import GAP  # noqa: E402
from graphrelease.models.mlp import DPMLP  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

SMALL = {
    DPMLP: {"epochs": 5},
    GAP: {"encoder_epochs": 3, "epochs": 3, "crossfit_folds": 2},
    DPDGC: {"epochs": 3, "crossfit_folds": 2},
}


def logits(cls, graph, adjacency: str, **options) -> np.ndarray:
    b = Budget(epsilon=4.0, delta=1e-5, adjacency=adjacency, accountant="rdp")
    model = cls(**SMALL[cls], seed=7, **options).fit(graph, b)  # seeded: a test, not a release
    return model.embed(graph)


@pytest.mark.parametrize("cls", [DPMLP, GAP, DPDGC])
def test_shared_defaults(cls):
    c = cls.config_class()
    assert (c.public_lr, c.public_dropout) == (PUBLIC_LR, PUBLIC_DROPOUT)
    assert c.public_lr != c.lr  # the DP-SGD rate is a different setting


@pytest.mark.parametrize("cls", [DPMLP, GAP, DPDGC])
def test_edge_training_reads_public_lr_only(data_dir, cls):
    g = small_cora(data_dir, n=150)
    base = logits(cls, g, "edge")
    np.testing.assert_array_equal(base, logits(cls, g, "edge", lr=0.5))  # lr (DP-SGD) unused without noise
    assert not np.allclose(base, logits(cls, g, "edge", public_lr=0.05))


def test_node_dpsgd_reads_lr_only(data_dir):
    g = small_cora(data_dir, n=150)
    base = logits(DPMLP, g, "node")
    np.testing.assert_array_equal(base, logits(DPMLP, g, "node", public_lr=0.5, public_dropout=0.9))
    assert not np.allclose(base, logits(DPMLP, g, "node", lr=0.05))
