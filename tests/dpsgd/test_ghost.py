"""Ghost clipping with book-keeping (graphrelease/dpsgd/ghost.py): the same clipped sum as the exact vmap(grad)
path on the linear models that use it, the add/remove sensitivity probe, the engine's choice of path, and refusals
where the norm would not be separable."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from graphrelease.dpsgd import FlatClipping, PerGroupClipping, clipped_grad_sum
from graphrelease.dpsgd.ghost import ghost_clipped_sum, ghost_supported
from graphrelease.errors import OptionError
from graphrelease.models.common import MLP
from graphrelease.models.dpdgc import DecoupledClassifier
from graphrelease.models.residual import ResidualGraphHead, xz_batch_loss, xz_example_loss
from graphrelease.models.gap import HopClassifier
from graphrelease.models.mlp import node_batch_loss, node_example_loss
from graphrelease.testing import assert_within, coupled_poisson_mask, node_neighbours, probe_sensitivity


def _median_norm_clip(model, loss, examples, idx) -> float:
    """A threshold at the median per-example norm: half of the examples are clipped, half are not."""
    from graphrelease.dpsgd.per_example import iter_per_example_grads, select

    norms = []
    for g in iter_per_example_grads(model, loss, select(examples, idx), chunk_size=64):
        norms.append(torch.stack([t.reshape(t.shape[0], -1).double().pow(2).sum(1) for t in g.values()]).sum(0).sqrt())
    return float(torch.cat(norms).median())


def _compare(model, example_loss, batch_loss, examples, n):
    idx = torch.arange(n)
    C = _median_norm_clip(model, example_loss, examples, idx)
    exact = clipped_grad_sum(model, example_loss, examples, idx, FlatClipping(max_grad_norm=C))
    ghost = ghost_clipped_sum(model, batch_loss, examples, idx, FlatClipping(max_grad_norm=C))
    assert set(exact) == set(ghost)
    for name in exact:
        scale = float(exact[name].abs().max()) + 1e-12
        assert float((exact[name] - ghost[name]).abs().max()) <= 1e-5 * scale, name


def test_ghost_equals_exact_on_dp_mlp():
    torch.manual_seed(0)
    x, y = torch.randn(96, 40), torch.randint(0, 5, (96,))
    _compare(MLP(40, 16, 5, layers=3), node_example_loss, node_batch_loss, (x, y), 96)


def test_ghost_equals_exact_on_gap_hop_classifier():
    torch.manual_seed(1)
    hs, y = torch.randn(64, 3, 7), torch.randint(0, 7, (64,))
    _compare(HopClassifier(7, 3, 16, 7), node_example_loss, node_batch_loss, (hs, y), 64)


def test_ghost_equals_exact_on_dpdgc_classifier():
    torch.manual_seed(2)
    x, z, y = torch.randn(64, 30), torch.randn(64, 7), torch.randint(0, 4, (64,))
    _compare(DecoupledClassifier(30, 7, 16, 4), xz_example_loss, xz_batch_loss, (x, z, y), 64)


def test_ghost_equals_exact_on_residual_head():
    """GAP's / DPDGC's node-adjacency classifier (models/residual.py); the head is made non-zero so every layer
    carries a gradient that the clip factor scales."""
    torch.manual_seed(3)
    model = ResidualGraphHead(MLP(30, 16, 4, layers=2), 7, 4)
    torch.nn.init.normal_(model.graph.weight)
    x, z, y = torch.randn(64, 30), torch.randn(64, 7), torch.randint(0, 4, (64,))
    _compare(model, xz_example_loss, xz_batch_loss, (x, z, y), 64)


def test_ghost_node_probe_sensitivity_C(data_dir):
    """Add/remove one node: the ghost clipped sums of coupled batches differ by <= C, and reach C."""
    from graphrelease.io.npz import read_npz

    g = read_npz(data_dir / "single" / "cora.npz")[0].induced_subgraph(np.arange(200))
    torch.manual_seed(3)
    model = MLP(g.num_features, 16, 7).double()
    C = 1e-3  # below every per-example norm: the bound is attained when the removed node is sampled

    def query(graph, rng):
        present = np.asarray(graph.labels) >= 0
        chosen = coupled_poisson_mask(np.arange(graph.num_nodes), 0.5, rng) & present
        x = torch.from_numpy(np.asarray(graph.dense_features(), dtype=np.float64))
        y = torch.from_numpy(np.where(present, graph.labels, 0))
        out = ghost_clipped_sum(model, node_batch_loss, (x, y), torch.from_numpy(np.flatnonzero(chosen)),
                                FlatClipping(max_grad_norm=C))
        return torch.cat([v.flatten() for v in out.values()]).numpy()

    r = probe_sensitivity(query, g, node_neighbours, C, draws=30, rng=np.random.default_rng(0))
    assert_within(r)
    assert r.max_ratio > 0.999


def test_engine_uses_ghost_only_where_it_applies():
    from graphrelease.dpsgd import DPSGDTrainer, PoissonSampler
    from graphrelease.privacy.budget import Budget

    def trainer(model, clipping, batch_loss):
        return DPSGDTrainer(model, node_example_loss, torch.optim.SGD(model.parameters(), lr=0.1),
                            sampler=PoissonSampler(dataset_size=10, sample_rate=0.5, rng=np.random.default_rng(0)),
                            clipping=clipping, noise_multiplier=1.0, stage="t",
                            budget=Budget(epsilon=10.0, delta=1e-5, adjacency="node", accountant="rdp"),
                            batch_loss=batch_loss)

    flat = FlatClipping(max_grad_norm=1.0)
    assert trainer(MLP(4, 8, 2), flat, node_batch_loss).ghost
    assert not trainer(MLP(4, 8, 2), flat, None).ghost
    per_group = PerGroupClipping(groups={"a": ["lins"]}, thresholds={"a": 1.0})
    assert not trainer(MLP(4, 8, 2), per_group, node_batch_loss).ghost
    emb = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 2))
    assert not ghost_supported(emb, flat)


def test_shared_layer_is_refused():
    lin = nn.Linear(4, 4)
    model = nn.Sequential(lin, nn.Tanh(), lin)  # the same weights twice: per-example norm is not separable
    x, y = torch.randn(8, 4), torch.randint(0, 4, (8,))
    with pytest.raises(OptionError, match="called twice"):
        ghost_clipped_sum(model, node_batch_loss, (x, y), torch.arange(8), FlatClipping(max_grad_norm=1.0))
