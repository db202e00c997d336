"""DPGGAN: the discriminator in the sound modes sees only DP-released structure (edge-tuples) or is clipped with
the example it reads (graphs, buckets); short fits on real data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphrelease.generators import deep_train as dt
from graphrelease.generators.base import GENERATORS
from graphrelease.io import read_graph
from graphrelease.privacy.budget import Budget


@pytest.fixture(scope="module")
def cora_small(data_dir):
    return read_graph(data_dir / "single" / "cora.npz").data.induced_subgraph(np.arange(300))


@pytest.fixture(scope="module")
def imdb_small(data_dir):
    return read_graph(data_dir / "collections" / "IMDB-MULTI").data.subset(list(range(10)))


def test_edge_tuples_discriminator_reads_only_the_sketch(cora_small, monkeypatch):
    """The GAN terms of option A get the released sketch, its projection and noise law, never the edges."""
    seen = {}
    original = dt._sketch_gan_loss

    def spy(model, p, node_x, sd, gen, rng):
        seen.update(keys=sorted(sd), shape=tuple(sd["sketch"].shape))
        return original(model, p, node_x, sd, gen, rng)

    monkeypatch.setattr(dt, "_sketch_gan_loss", spy)
    budget = Budget(epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")
    fitted = GENERATORS.get("dpggan")(mode="edge-tuples", steps=4, sketch_dim=8).fit(cora_small, budget)
    assert seen["keys"] == ["noise_std", "projection", "sketch"]
    assert seen["shape"] == (cora_small.num_nodes, 8)
    assert [e.stage for e in budget.ledger] == ["dpggan.edge_count", "dpggan.sketch", "dpggan.edge_tuples.dpsgd"]
    # the discriminator is trained (post-processing) but never released
    assert not any(k.startswith("disc.") for k in fitted.decoder)


def test_graphs_mode_clips_discriminator_with_the_example(imdb_small):
    budget = Budget(epsilon=2.0, delta=1e-5, adjacency="graph", accountant="rdp")
    gen = GENERATORS.get("dpggan")(steps=3, batch_size=5)
    fitted = gen.fit(imdb_small, budget)
    entry = budget.ledger.entries[-1]
    assert entry.mechanism == "subsampled_gaussian" and entry.params["neighboring"] == "add_remove"
    assert "discriminator" in entry.note
    assert budget.spent_epsilon() <= 2.0 * (1 + 1e-6)
    graphs = fitted.sample(2, rng=np.random.default_rng(0))
    assert all(g.num_nodes >= 1 for g in graphs)


def test_dense_loss_gradient_reaches_every_network():
    """One example's gradient covers encoder, decoder and discriminator (all clipped together)."""
    from graphrelease.generators import deep_models as dm

    params = dm.init_params(6, gan=True, gen=torch.Generator().manual_seed(0))
    net = dt.DeepNet(params, gan=True, lambda1=0.1, lambda2=0.1)
    x, adj, mask = dt.dense_example(6, np.array([[0, 1], [1, 2], [2, 3], [3, 4]]), 6, dt.identity_features(6, 6))
    loss = net("dense", x, adj, mask, torch.zeros(6, dm.LATENT))
    loss.backward()
    for prefix in ("enc_", "dec_", "disc_"):
        grads = [p.grad for n, p in net.named_parameters() if n.startswith(prefix)]
        assert any(g is not None and float(g.abs().sum()) > 0 for g in grads), prefix


def test_nonprivate_ggan_on_collection(imdb_small):
    fitted = GENERATORS.get("ggan")(steps=5, seed=1).fit(imdb_small, Budget.unlimited("edge"))
    graphs = fitted.sample(2, rng=np.random.default_rng(0))
    assert len(graphs) == 2
    assert "everything" in fitted.public_assumptions
