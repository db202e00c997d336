"""The model base class: fit is one template (checks, split, randomness) for every model, and it never changes the
caller's torch random state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphrelease.io import load_default_graph
from graphrelease.errors import OptionError
from graphrelease.models import MODELS, PrivateModel
from graphrelease.privacy.budget import Budget


def test_fit_leaves_the_callers_torch_random_state_alone():
    cora = load_default_graph()
    core = cora.induced_subgraph(np.arange(200))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    MODELS.get("dp-mlp")(epochs=1).fit(core, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    assert torch.equal(torch.rand(3), expected)  # the model seeded torch for itself, inside its own fork


def test_a_model_implements_the_hook_not_fit():
    with pytest.raises(TypeError, match="_fit hook"):
        class Bypass(PrivateModel):  # noqa: F841 - defining the class is the test
            def fit(self, graph, budget, *, progress=None):
                return self


def _missing_adjacencies(name: str) -> list[str]:
    return sorted({"edge", "node", "k-neighbor"} - set(MODELS.get(name).adjacencies))


@pytest.mark.parametrize("name", [n for n in sorted(MODELS.names()) if _missing_adjacencies(n)])
def test_every_model_refuses_an_adjacency_it_has_no_analysis_for_before_reading_the_graph(name):
    cls, missing = MODELS.get(name), _missing_adjacencies(name)
    adjacency = "k-neighbor:2" if missing[0] == "k-neighbor" else missing[0]
    with pytest.raises(OptionError, match=f"supports adjacency .* not '{missing[0]}'"):
        cls().fit(None, Budget(epsilon=1.0, delta=1e-5, adjacency=adjacency, accountant="rdp"))


def test_a_generator_implements_the_hook_not_fit():
    from graphrelease.generators.base import GraphGenerator

    with pytest.raises(TypeError, match="_fit hook"):
        class Bypass(GraphGenerator):  # noqa: F841 - defining the class is the test
            def fit(self, data, budget, *, progress=None):
                return None
