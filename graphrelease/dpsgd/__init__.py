"""DP-SGD engine: per-example gradients with ``torch.func``, clipping policies, samplers and the noisy step.

The engine trains any ``nn.Module`` on *independent examples* — one node for an MLP on node features, one edge
tuple whose forward pass reads only its endpoints' public (or already-released) inputs, one whole graph of a
collection, one bucket subgraph — such that one privacy unit adds, removes or replaces a known number of examples.
It is never a per-node clipping of a message-passing network on one graph: one edge changes every node in the
receptive field, so per-node clipping does not bound an edge's influence (PRIVACY.md section 3;
``tests/dpsgd/test_gcn_per_node_probe.py`` measures by how much).

API
---
:func:`per_example_grads`, :func:`iter_per_example_grads`
    ``vmap(grad(loss))`` over a batched pytree of examples, ``chunk_size`` at a time; a Python ``list`` of
    examples of different shapes is differentiated one example at a time (see :mod:`.per_example` for the two
    layouts and :mod:`.examples` for padding whole graphs with masks).
:class:`FlatClipping`, :class:`PerGroupClipping`, :class:`FreqClipping`
    Clipping policies; each exposes ``bound``, the largest L2 norm of one clipped example gradient.
:class:`PoissonSampler`, :class:`FixedSizeSampler`
    Poisson subsampling (add/remove accounting) and fixed-size sampling without replacement (replace-one).
:func:`clipped_grad_sum`, :func:`gaussian_noise_like`
    The pre-noise query of a step and float64 Gaussian noise, for custom loops (e.g. two models in a GAN).
:class:`DPSGDTrainer`
    Sample, clip, sum, add :math:`\\mathcal N(0, (\\sigma\\,\\mathrm{bound})^2)`, divide by the expected batch size,
    apply any torch optimizer. Every step first charges ``LedgerEntry(mechanism="subsampled_gaussian", ...)`` to
    the budget; a refused step raises ``BudgetError`` with the parameters untouched (``train`` stops cleanly).
    ``steps_for_budget()`` says how many steps still fit; :func:`calibrate_noise_multiplier_for` finds sigma for a
    planned number of steps.

The loss function
-----------------
``loss_fn(model_fn, example) -> scalar``: ``model_fn`` calls the module with the parameters being differentiated;
``example`` is ONE example (a pytree of tensors without the leading example dimension). Anything else the loss
reads (public features, a released DP sketch, a fixed number of negatives drawn without looking at the private
data) is closed over. Whatever is read must not depend on other examples' private data, or the per-example
sensitivity argument fails.

Example
-------
>>> import numpy as np, torch
>>> from graphrelease.dpsgd import DPSGDTrainer, FlatClipping, PoissonSampler
>>> from graphrelease.privacy.budget import Budget
>>> from graphrelease.privacy.noise import secure_generator
>>> torch.manual_seed(0) and None
>>> x, y = torch.randn(200, 8), torch.randint(0, 3, (200,))
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
>>> def loss_fn(f, ex):
...     xi, yi = ex
...     return torch.nn.functional.cross_entropy(f(xi.unsqueeze(0)), yi.unsqueeze(0))
>>> budget = Budget(epsilon=2.0, delta=1e-5, adjacency="node", accountant="rdp")
>>> np_rng, torch_rng, _ = secure_generator()
>>> trainer = DPSGDTrainer(
...     model, loss_fn, torch.optim.Adam(model.parameters(), lr=1e-2),
...     sampler=PoissonSampler(dataset_size=200, sample_rate=0.1, rng=np_rng),
...     clipping=FlatClipping(max_grad_norm=1.0), noise_multiplier=2.0,
...     budget=budget, stage="doc.mlp", noise_generator=torch_rng)
>>> result = trainer.train((x, y), steps=5)
>>> result.steps, budget.ledger.entries[0].count
(5, 5)
"""

from graphrelease.dpsgd.clipping import ClippingPolicy, FlatClipping, FreqClipping, PerGroupClipping
from graphrelease.dpsgd.engine import (
    DPSGDTrainer,
    TrainResult,
    calibrate_noise_multiplier_for,
    clipped_grad_sum,
    gaussian_noise_like,
)
from graphrelease.dpsgd.per_example import (
    is_batched,
    iter_per_example_grads,
    num_examples,
    per_example_grads,
    select,
    trainable_parameters,
)
from graphrelease.dpsgd.samplers import FixedSizeSampler, PoissonSampler

__all__ = [
    "ClippingPolicy",
    "DPSGDTrainer",
    "FixedSizeSampler",
    "FlatClipping",
    "FreqClipping",
    "PerGroupClipping",
    "PoissonSampler",
    "TrainResult",
    "calibrate_noise_multiplier_for",
    "clipped_grad_sum",
    "gaussian_noise_like",
    "is_batched",
    "iter_per_example_grads",
    "num_examples",
    "per_example_grads",
    "select",
    "trainable_parameters",
]
