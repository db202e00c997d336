"""The noisy step: charged before it is applied, refused steps leave the model untouched, noise has the declared
scale, the mean uses the expected batch size."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import torch

import graphrelease.dpsgd as dpsgd
from graphrelease.dpsgd import (
    DPSGDTrainer,
    FixedSizeSampler,
    FlatClipping,
    PoissonSampler,
    calibrate_noise_multiplier_for,
)
from graphrelease.errors import BudgetError, OptionError
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.noise import secure_generator


def _ce(f, ex):
    x, y = ex
    return torch.nn.functional.cross_entropy(f(x.unsqueeze(0)), y.unsqueeze(0))


@pytest.fixture()
def cora_nodes(cora):
    rows = np.arange(300)
    x = torch.from_numpy(np.asarray(cora.features[rows].toarray(), dtype=np.float32))
    y = torch.from_numpy(cora.labels[rows].copy())
    return x, y


def _mlp(d, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.ReLU(), torch.nn.Linear(16, 7))


def _trainer(model, budget, *, sigma=1.0, q=0.1, n=300, seed=None, **kw):
    rng, tgen, _ = secure_generator(seed)
    return DPSGDTrainer(
        model, _ce, torch.optim.SGD(model.parameters(), lr=0.1),
        sampler=PoissonSampler(dataset_size=n, sample_rate=q, rng=rng),
        clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=sigma, budget=budget,
        stage="test.mlp", noise_generator=tgen, **kw,
    )


def test_module_docstring_example_runs():
    result = doctest.testmod(dpsgd, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_each_step_is_charged_with_the_sampling_parameters(cora_nodes):
    budget = Budget(epsilon=5.0, delta=1e-5, adjacency="node", accountant="rdp")
    t = _trainer(_mlp(cora_nodes[0].shape[1]), budget)
    res = t.train(cora_nodes, steps=4)
    assert res == dpsgd.TrainResult(4, False)
    (entry,) = budget.ledger.entries
    assert entry.mechanism == "subsampled_gaussian" and entry.count == 4 and entry.stage == "test.mlp"
    assert entry.params == {"noise_multiplier": 1.0, "sample_rate": 0.1, "sampling": "poisson",
                            "neighboring": "add_remove"}
    assert entry.sensitivity == 1.0 and entry.proof == "docs/privacy.md#dp-sgd-poisson"


def test_budget_refusal_stops_training_and_leaves_parameters_untouched(cora_nodes):
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="node", accountant="rdp")
    model = _mlp(cora_nodes[0].shape[1])
    t = _trainer(model, budget, sigma=2.0, q=0.05)
    fit = t.steps_for_budget()
    assert 1 <= fit < 200
    res = t.train(cora_nodes, steps=fit + 5)
    assert res.steps == fit and res.budget_exhausted
    assert budget.ledger.entries[0].count == fit
    assert budget.spent_epsilon() <= 1.0 * (1 + 1e-6)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with pytest.raises(BudgetError):
        t.step(cora_nodes)
    for n, p in model.named_parameters():
        assert torch.equal(before[n], p.detach())
    assert budget.ledger.entries[0].count == fit


def test_noise_has_the_declared_standard_deviation():
    # zero gradients: the update is exactly -lr * noise / (qN), noise std sigma * C
    model = torch.nn.Linear(100, 100, bias=False)
    torch.nn.init.zeros_(model.weight)
    zero_loss = lambda f, x: (f(x) * 0.0).sum()  # noqa: E731
    rng, tgen, _ = secure_generator()
    n, q, sigma, c = 50, 0.2, 1.3, 0.7
    t = DPSGDTrainer(model, zero_loss, torch.optim.SGD(model.parameters(), lr=1.0),
                     sampler=PoissonSampler(dataset_size=n, sample_rate=q, rng=rng),
                     clipping=FlatClipping(max_grad_norm=c), noise_multiplier=sigma,
                     budget=Budget(epsilon=50.0, delta=1e-5, adjacency="node", accountant="rdp"), stage="noise",
                     noise_generator=tgen)
    t.step(torch.randn(n, 100))
    update = -model.weight.detach().double().numpy().ravel()
    expected = sigma * c / (q * n)
    assert abs(update.mean()) < 5 * expected / 100
    assert update.std() == pytest.approx(expected, rel=0.05)


def test_mean_uses_the_expected_batch_size_not_the_realised_one():
    # non-private baseline, loss w.x: per-example gradient x (norm < C), so the step is -lr * sum(x_i) / (qN)
    model = torch.nn.Linear(3, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    x = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]) * 0.1
    rng, tgen, _ = secure_generator(7)
    t = DPSGDTrainer(model, lambda f, xi: f(xi).sum(), torch.optim.SGD(model.parameters(), lr=1.0),
                     sampler=PoissonSampler(dataset_size=4, sample_rate=0.5, rng=rng),
                     clipping=FlatClipping(max_grad_norm=10.0), noise_multiplier=0.0,
                     budget=Budget.unlimited("node"), stage="baseline", noise_generator=tgen)
    replay = np.random.Generator(np.random.PCG64(7))  # the sampler's stream, replayed
    mask = replay.random(4) < 0.5
    t.step(x)
    expected = -(x[torch.from_numpy(mask)].sum(0)) / 2.0
    torch.testing.assert_close(model.weight.detach()[0], expected)


def test_fixed_size_sampler_requires_replace_one(cora_nodes):
    rng, tgen, _ = secure_generator()
    model = _mlp(cora_nodes[0].shape[1])
    kwargs = dict(sampler=FixedSizeSampler(dataset_size=300, batch_size=30, rng=rng),
                  clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=4.0,
                  budget=Budget(epsilon=5.0, delta=1e-5, adjacency="node", accountant="rdp"), stage="wor",
                  noise_generator=tgen)
    with pytest.raises(OptionError, match="replace_one"):
        DPSGDTrainer(model, _ce, torch.optim.SGD(model.parameters(), lr=0.1), **kwargs)
    t = DPSGDTrainer(model, _ce, torch.optim.SGD(model.parameters(), lr=0.1), neighboring="replace_one", **kwargs)
    assert t.train(cora_nodes, steps=2) == dpsgd.TrainResult(2, False)
    (entry,) = kwargs["budget"].ledger.entries
    assert entry.params["sampling"] == "wor" and entry.params["dataset_size"] == 300
    assert entry.params["neighboring"] == "replace_one" and entry.sensitivity == 1.0
    assert entry.proof == "docs/privacy.md#dp-sgd-wor"


def test_zero_noise_needs_an_unlimited_budget(cora_nodes):
    with pytest.raises(OptionError, match="unlimited"):
        budget = Budget(epsilon=1.0, delta=1e-5, adjacency="node", accountant="rdp")
        _trainer(_mlp(cora_nodes[0].shape[1]), budget, sigma=0.0)


def test_seeded_runs_reproduce_and_unseeded_runs_differ(cora_nodes):
    def run(seed):
        model = _mlp(cora_nodes[0].shape[1])
        budget = Budget(epsilon=5.0, delta=1e-5, adjacency="node", accountant="rdp")
        _trainer(model, budget, seed=seed).train(cora_nodes, steps=2)
        return torch.cat([p.detach().ravel() for p in model.parameters()])

    assert torch.equal(run(3), run(3))
    assert not torch.equal(run(None), run(None))


def test_calibrated_sigma_fits_the_planned_steps():
    budget = Budget(epsilon=1.0, delta=1e-5, adjacency="node", accountant="rdp")
    rng, tgen, _ = secure_generator()
    sampler = PoissonSampler(dataset_size=2708, sample_rate=0.05, rng=rng)
    sigma = calibrate_noise_multiplier_for(budget=budget, sampler=sampler, steps=100)
    model = torch.nn.Linear(4, 2)
    t = DPSGDTrainer(model, lambda f, x: f(x).sum(), torch.optim.SGD(model.parameters(), lr=0.1), sampler=sampler,
                     clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=sigma, budget=budget, stage="cal",
                     noise_generator=tgen)
    assert t.steps_for_budget() >= 100
    t2 = DPSGDTrainer(model, lambda f, x: f(x).sum(), torch.optim.SGD(model.parameters(), lr=0.1), sampler=sampler,
                      clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=sigma * 0.9, budget=budget,
                      stage="cal", noise_generator=tgen)
    assert t2.steps_for_budget() < 100


def test_empty_poisson_batch_still_adds_noise_and_is_charged():
    model = torch.nn.Linear(5, 5, bias=False)
    torch.nn.init.zeros_(model.weight)
    budget = Budget(epsilon=10.0, delta=1e-5, adjacency="node", accountant="rdp")
    rng, tgen, _ = secure_generator()
    t = DPSGDTrainer(model, lambda f, x: f(x).sum(), torch.optim.SGD(model.parameters(), lr=1.0),
                     sampler=PoissonSampler(dataset_size=1, sample_rate=1e-9, rng=rng),
                     clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=2.0, budget=budget, stage="empty",
                     noise_generator=tgen)
    t.step(torch.ones(1, 5))
    assert budget.ledger.entries[0].count == 1
    assert float(model.weight.detach().abs().sum()) > 0


def test_whole_graph_examples_train_end_to_end(imdb_small):
    from graphrelease.dpsgd.examples import DenseGCN, graph_examples

    examples = graph_examples(list(imdb_small), imdb_small.graph_labels, features="degree", max_degree=20)
    torch.manual_seed(0)
    model = DenseGCN(21, 8, 3)

    def loss(f, ex):
        return torch.nn.functional.cross_entropy(f(ex["adj"], ex["x"], ex["mask"]).unsqueeze(0), ex["y"].unsqueeze(0))

    budget = Budget(epsilon=8.0, delta=1e-5, adjacency="graph", accountant="rdp")
    rng, tgen, _ = secure_generator()
    before = [p.detach().clone() for p in model.parameters()]
    t = DPSGDTrainer(model, loss, torch.optim.Adam(model.parameters(), lr=1e-2),
                     sampler=PoissonSampler(dataset_size=len(examples), sample_rate=0.2, rng=rng),
                     clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=2.0, budget=budget,
                     stage="test.graphs", noise_generator=tgen, chunk_size=8)
    assert t.train(examples, steps=3) == dpsgd.TrainResult(3, False)
    assert budget.ledger.entries[0].count == 3
    assert all(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))


def test_trainer_entries_compose_to_the_reference_epsilon():
    # q=0.01, sigma=1, T=1000, delta=1e-5: 2.1014 (opacus and dp-accounting RDP), 1.8282 (PLD) -- issue 3
    from graphrelease.privacy.accountants import compute_epsilon

    model = torch.nn.Linear(2, 2)
    rng, tgen, _ = secure_generator()
    t = DPSGDTrainer(model, lambda f, x: f(x).sum(), torch.optim.SGD(model.parameters(), lr=0.1),
                     sampler=PoissonSampler(dataset_size=10_000, sample_rate=0.01, rng=rng),
                     clipping=FlatClipping(max_grad_norm=3.0), noise_multiplier=1.0,
                     budget=Budget.unlimited("node"), stage="ref", noise_generator=tgen)
    entry = t.ledger_entry(1000)
    assert round(compute_epsilon([entry], 1e-5, accountant="rdp"), 4) == 2.1014


def test_default_proof_anchors_exist_in_the_docs():
    from graphrelease.dpsgd.engine import PROOFS
    from graphrelease.privacy.proofs import has_proof

    for anchor in PROOFS.values():
        assert has_proof(anchor), anchor


def test_batch_normalisation_is_refused():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    rng, tgen, _ = secure_generator()
    with pytest.raises(OptionError, match="batch normalisation"):
        DPSGDTrainer(model, lambda f, x: f(x.unsqueeze(0)).sum(), torch.optim.SGD(model.parameters(), lr=0.1),
                     sampler=PoissonSampler(dataset_size=10, sample_rate=0.5, rng=rng),
                     clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=1.0,
                     budget=Budget(epsilon=1.0, delta=1e-5, adjacency="node"), stage="bn", noise_generator=tgen)
