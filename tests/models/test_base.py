"""The model base class: a fit never changes the caller's torch random state."""

from __future__ import annotations

import numpy as np
import torch

from graphrelease.io import load_default_graph
from graphrelease.models import MODELS
from graphrelease.privacy.budget import Budget


def test_fit_leaves_the_callers_torch_random_state_alone():
    cora = load_default_graph()
    core = cora.induced_subgraph(np.arange(200))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    MODELS.get("dp-mlp")(epochs=1).fit(core, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    assert torch.equal(torch.rand(3), expected)  # the model seeded torch for itself, inside its own fork
