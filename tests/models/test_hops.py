"""GAP's hops=auto (graphrelease/models/hops.py): the edge-count release's probe and accounting, the rule, and a fit
whose ledger composes to its target."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.models.gap import GAP  # noqa: E402
from graphrelease.models.hops import COUNT_SHARE, STAGE, TWO_HOP_THRESHOLD, choose_hops, hops_for  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.privacy.sensitivities import declared_sensitivity  # noqa: E402
from graphrelease.testing.probes import assert_within, edge_neighbours, probe_sensitivity  # noqa: E402


def test_edge_count_probe_is_one(data_dir):
    """The pre-noise query |E| moves by exactly 1 between edge neighbours (the registered sensitivity)."""
    g = small_cora(data_dir)
    r = probe_sensitivity(lambda graph, rng: np.array([float(graph.num_edges)]), g, edge_neighbours,
                          declared=declared_sensitivity("edge", STAGE), draws=30, rng=np.random.default_rng(3),
                          norm="l1")
    assert_within(r)
    assert r.max_ratio == 1.0


def test_rule_threshold():
    assert hops_for(TWO_HOP_THRESHOLD / 4.0, 4.0) == 2
    assert hops_for(TWO_HOP_THRESHOLD / 4.0 - 0.01, 4.0) == 1
    assert hops_for(3.0, float("inf")) == 2 and hops_for(0.0, float("inf")) == 1


def test_choose_hops_charges_only_under_edge_adjacency(data_dir):
    g = small_cora(data_dir)
    rng = np.random.default_rng(0)
    node = Budget(epsilon=4.0, delta=1e-5, adjacency="node", accountant="rdp")
    assert choose_hops(g, node, rng, kind="node", private=True) == (1, None)
    assert list(node.ledger.entries) == []
    edge = Budget(epsilon=4.0, delta=1e-5, adjacency="edge", accountant="rdp")
    hops, noisy = choose_hops(g, edge, rng, kind="edge", private=True)
    (e,) = edge.ledger.entries
    assert e.stage == STAGE and e.mechanism == "laplace" and e.sensitivity == 1.0
    assert e.params["epsilon"] == pytest.approx(COUNT_SHARE * 4.0) and e.params["scale"] == pytest.approx(1 / 0.08)
    # Laplace(12.5): |noise| > 12.5 * ln(1e6) has probability 1e-6
    assert abs(noisy - g.num_edges) < 12.5 * np.log(1e6)
    assert hops == hops_for(2 * max(noisy, 0) / g.num_nodes, 4.0 - 0.08)


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_auto_hops_ledger_composes_to_target(data_dir, epsilon):
    """A fit with hops=auto: the count entry is charged first, the aggregation gets the rest, the composed ledger
    meets the target (RDP) and the resolved hop count is what the aggregation entry states."""
    from graphrelease.privacy.accountants import compute_epsilon

    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=epsilon, delta=1e-5, adjacency="edge", accountant="rdp")
    m = GAP(encoder_epochs=2, epochs=2).fit(g, b)
    stages = [e.stage for e in b.ledger.entries]
    assert stages == [STAGE, "gap.aggregation.sum"]
    assert isinstance(m.config.hops, int) and b.ledger.entries[1].count == m.config.hops
    spent = compute_epsilon(list(b.ledger.entries), 1e-5, accountant="rdp")
    assert 0.95 * epsilon <= spent <= epsilon
    # a small Cora piece (mean degree ~3) is one hop at these budgets
    assert m.config.hops == 1
