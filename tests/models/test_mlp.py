"""DP-MLP: probes of the clipped per-node gradient sum, accounting cross-check with autodp, small fits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.dpsgd.clipping import FlatClipping  # noqa: E402
from graphrelease.dpsgd.engine import clipped_grad_sum  # noqa: E402
from graphrelease.models.common import MLP, feature_matrix  # noqa: E402
from graphrelease.models.mlp import DPMLP, node_example_loss  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.testing.probes import (  # noqa: E402
    assert_within,
    k_neighbour_neighbours,
    node_neighbours,
    probe_sensitivity,
)


@pytest.mark.parametrize("adjacency,declared", [("node", 1.0), ("k-neighbor:3", 2.0)])
def test_clipped_sum_probe(data_dir, adjacency, declared):
    g = small_cora(data_dir, n=150)
    C = 0.1
    neighbours = node_neighbours if adjacency == "node" else k_neighbour_neighbours(3)

    def query(graph, rng):
        # float64: the two sums are accumulated over different chunkings, float32 rounding would show up at 1e-6
        model = MLP(graph.num_features, 16, 7, layers=2).double()
        torch.manual_seed(int(rng.integers(2**31)))
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.3)
        x = feature_matrix(graph).double()
        y = torch.as_tensor(np.asarray(graph.labels)).clamp_min(0)
        present = torch.as_tensor(np.flatnonzero(np.asarray(graph.labels) >= 0))  # removed slots are no examples
        total = clipped_grad_sum(model, node_example_loss, (x, y), present, FlatClipping(max_grad_norm=C))
        return {n: t.numpy() for n, t in total.items()}

    r = probe_sensitivity(query, g, neighbours, declared=declared * C, draws=25, rng=np.random.default_rng(7))
    assert_within(r)
    assert r.max_ratio > 0.3


def test_accounting_cross_check_autodp():
    """Poisson-subsampled Gaussian, add/remove: project RDP accountant vs autodp's RDP route."""
    from autodp.mechanism_zoo import GaussianMechanism
    from autodp.transformer_zoo import AmplificationBySampling, Composition

    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.ledger import LedgerEntry

    q, sigma, steps, delta = 0.02, 1.2, 300, 1e-5
    e = LedgerEntry(mechanism="subsampled_gaussian", stage="dp_mlp", count=steps,
                    params={"noise_multiplier": sigma, "sample_rate": q, "sampling": "poisson",
                            "neighboring": "add_remove"})
    ours = compute_epsilon([e], delta, accountant="rdp")
    # improved_bound_flag: autodp's tight bound for mechanisms like the Gaussian (its generic bound is looser)
    sub = AmplificationBySampling(PoissonSampling=True)(GaussianMechanism(sigma=sigma), q, improved_bound_flag=True)
    theirs = Composition()([sub], [steps]).get_approxDP(delta)
    assert ours == pytest.approx(theirs, rel=0.01)


def test_edge_adjacency_charges_nothing(data_dir):
    g = small_cora(data_dir, n=200)
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = DPMLP(epochs=20).fit(g, b)
    assert len(b.ledger) == 0 and b.spent_epsilon() == 0.0
    assert m.test_accuracy > 0.3


@pytest.mark.slow
def test_node_fit_within_budget(data_dir):
    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=4.0, delta=1e-5, adjacency="node", accountant="rdp")
    m = DPMLP(epochs=2, batch_size=64).fit(g, b)
    (entry,) = b.ledger.entries
    assert entry.stage == "dp_mlp.dpsgd" and entry.proof == "dp-mlp"
    assert entry.count == 2 * int(np.ceil(m.split.train.size / 64))  # epochs * ceil(N/B), never floored
    assert 3.8 <= b.spent_epsilon() <= 4.0
