"""Non-private baselines: they use the graph (GCN beats the feature-only MLP on Cora) and refuse a finite budget."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _small import cora, small_cora  # noqa: E402

from graphrelease.errors import OptionError  # noqa: E402
from graphrelease.train import fit_model  # noqa: E402


@pytest.mark.slow
def test_gcn_beats_mlp_on_cora(data_dir):
    g = cora(data_dir)
    mlp = fit_model(g, "mlp", adjacency="edge", epsilon=float("inf"), options={"epochs": 60})
    gcn = fit_model(g, "gcn", adjacency="edge", epsilon=float("inf"), options={"epochs": 60})
    assert len(gcn.budget.ledger) == 0
    assert gcn.test_accuracy > 0.78
    assert gcn.test_accuracy > mlp.test_accuracy + 0.05


def test_sage_runs_and_predicts(data_dir):
    g = small_cora(data_dir, n=400)
    run = fit_model(g, "sage", adjacency="edge", epsilon=float("inf"), options={"epochs": 30})
    pred = run.model.predict(g)
    assert pred.shape == (g.num_nodes,) and run.test_accuracy > 0.4


def test_baseline_refuses_finite_epsilon(data_dir):
    with pytest.raises(OptionError, match="non-private"):
        fit_model(cora(data_dir), "gcn", adjacency="edge", epsilon=1.0)
