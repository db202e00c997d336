"""Every selection mechanism's ledger entry states the noise scale the code draws, and `certificate verify`
recomputes its epsilon from it (a stated epsilon edited without the scale is refused); randomised response states
its two cell probabilities and their bounded range is recomputed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from graphrelease.generators.base import GENERATORS
from graphrelease.generators.community_dp import em_refine, em_refine_sequential
from graphrelease.generators.dp_partition import degree_ordered_partition
from graphrelease.generators.dpdk import dp_degree_quantile
from graphrelease.io import load_default_graph
from graphrelease.models.appr import DPAPPRParams, ledger_entries
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.noise import exponential_mechanism_scale
from graphrelease.privacy.sensitivities import entry_problems


@pytest.fixture(scope="module")
def cora():
    return load_default_graph()


def _selection_entries(graph) -> list:
    budget = Budget(epsilon=10.0, delta=1e-6, adjacency="edge")
    rng = np.random.default_rng(0)
    dp_degree_quantile(graph, budget, rng, epsilon=0.3, quantile=0.99, max_cap=200, stage="t.cap")
    labels = rng.integers(4, size=graph.num_nodes)
    share = np.full(4, 0.25)
    em_refine(graph, labels, budget, rng, epsilon=0.2, volume_share=share, stage="t.em", proof="privgraph")
    em_refine_sequential(graph, labels, budget, rng, epsilon=0.2, stage="t.seq", proof="privgraph")
    degree_ordered_partition(graph, graph.degrees().astype(float), budget, rng, epsilon_down=0.4, epsilon_up=0.0,
                             stage="dp_bter.partition", proof="dp-partition", num_labels=3, selection="exponential")
    bter_budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    GENERATORS.get("dp_bter")(partition="candidates").fit(graph, bter_budget)
    picked = [e for e in bter_budget.ledger if e.stage == "dp_bter.partition_select"]
    appr = ledger_entries(DPAPPRParams(mechanism="EM1", k=8, clip=0.1, num_sources=50, eps_select=0.5, eps_value=0.5))
    return list(budget.ledger) + picked + [e for e in appr if e.mechanism == "gumbel_topk"]


def test_exponential_mechanism_scale():
    assert exponential_mechanism_scale(0.5, 2.0) == pytest.approx(8.0)
    assert exponential_mechanism_scale(0.5, 2.0, monotone=True) == pytest.approx(4.0)


def test_selection_entries_state_their_scale_and_an_edited_epsilon_is_refused(cora):
    entries = _selection_entries(cora)
    kinds = {e.mechanism for e in entries}
    assert {"exponential", "gumbel_topk"} <= kinds
    assert {e.stage for e in entries} >= {"t.cap", "t.em", "t.seq", "dp_bter.partition_down", "dp_bter.partition_select",
                                          "dpar.appr.select"}
    for entry in entries:
        assert "scale" in entry.params, entry.stage
        assert entry_problems(entry, "edge") == [], entry.stage
        edited = dataclasses.replace(entry, params={**entry.params, "epsilon": entry.params["epsilon"] / 2})
        assert any("exponential-mechanism epsilon" in p for p in entry_problems(edited, "edge")), entry.stage
        # a scale halved without the epsilon (twice the stated privacy for the noise drawn) is refused too
        halved = dataclasses.replace(entry, params={**entry.params, "scale": entry.params["scale"] / 2})
        assert entry_problems(halved, "edge"), entry.stage


def test_a_monotone_flag_is_only_accepted_on_a_stage_proved_monotone(cora):
    """`monotone` halves the epsilon the verifier recomputes from a scale, so an entry cannot claim it for itself."""
    (select,) = [e for e in _selection_entries(cora) if e.stage == "dp_bter.partition_select"]
    forged = dataclasses.replace(select, params={**select.params, "epsilon": select.params["epsilon"] / 2,
                                                 "monotone": True})
    assert any("monotone" in p for p in entry_problems(forged, "edge"))


def test_gumbel_at_the_stated_scale_samples_the_exponential_mechanism():
    """argmax(u + Gumbel(2 Delta / eps)) has law exp(eps u / (2 Delta)) / Z: seeded frequencies on three options."""
    eps, sens = 0.8, 2.0
    u = np.array([0.0, 1.0, 3.0])
    scale = exponential_mechanism_scale(eps, sens)
    rng = np.random.default_rng(3)
    picks = np.argmax(u[None, :] + rng.gumbel(0.0, scale, size=(200_000, 3)), axis=1)
    freq = np.bincount(picks, minlength=3) / picks.size
    law = np.exp(eps * u / (2 * sens))
    # 200k draws: binomial sd <= 0.0012, so 0.006 is a 5-sd bound
    np.testing.assert_allclose(freq, law / law.sum(), atol=0.006)


def test_randomized_response_states_its_cell_probabilities(cora):
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    GENERATORS.get("randomized_response")().fit(cora, budget)
    (cells,) = [e for e in budget.ledger if e.stage == "randomized_response.cells"]
    assert {"keep_probability", "flip_in_probability"} <= set(cells.params)
    assert entry_problems(cells, "edge") == []
    wider = dataclasses.replace(cells, params={**cells.params, "flip_in_probability":
                                               cells.params["flip_in_probability"] / 3})
    assert any("bounded range" in p for p in entry_problems(wider, "edge"))
    # swapped probabilities (keep < flip-in) leak as much as the originals: the range is taken in absolute value
    swapped = dataclasses.replace(cells, params={**cells.params, "keep_probability": 0.1, "flip_in_probability": 0.9,
                                                 "epsilon": 0.01})
    assert any("bounded range" in p for p in entry_problems(swapped, "edge"))
