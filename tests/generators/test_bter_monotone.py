"""dp_bter's released triangle count gets no worse from epsilon 1 to 4 (issue 15's monotonicity item).

Cora-ML sits where the release changes branch: at epsilon 1 its mean degree cannot pay for the label sweeps, so their
share goes to the triangle count (0.49 of epsilon), while at epsilon 4 the sweeps run and the count keeps its own
0.13 (0.52 in all). The count's noise is then about the same at both budgets, and three runs could show epsilon 4
worse (triangle RE 0.04 / 0.05 / 0.04 -> 0.18 / 0.18 / 0.00). Over many seeded fits the error must still not grow.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.audit.statistics import triangle_count
from graphrelease.generators.bter import DPBTER
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import load_npz_graph


def _released_triangle_errors(graph, epsilon: float, seeds: range) -> np.ndarray:
    truth = triangle_count(graph)
    out = []
    for seed in seeds:  # seeded fits: a test of the mechanism, not a release
        fitted = DPBTER(seed=seed).fit(graph, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
        out.append((float(fitted.arrays["triangles"]) - truth) / truth)
    return np.asarray(out)


@pytest.mark.slow
def test_cora_ml_triangle_release_no_worse_at_epsilon_4(data_dir):
    graph = load_npz_graph(data_dir, "cora_ml")
    seeds = range(1000, 1040)
    low = _released_triangle_errors(graph, 1.0, seeds)
    high = _released_triangle_errors(graph, 4.0, seeds)
    rmse_low, rmse_high = float(np.sqrt(np.mean(low ** 2))), float(np.sqrt(np.mean(high ** 2)))
    # Both branches spend about half an epsilon on the count; epsilon 4 must not be worse in RMSE over 40 seeds. The
    # cap rule brought both down (measured 0.129 / 0.086; with the cap set against the full modelled bias 0.196 /
    # 0.156, which fails the bounds below).
    assert rmse_high <= rmse_low
    assert rmse_low <= 0.16 and rmse_high <= 0.12
