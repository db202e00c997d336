"""DPAR: column clipping, the node-adjacency sensitivity probe of the classifier's clipped gradient sum over a fixed
released APPR matrix, private fits under edge and node adjacency (ledger composition of both stages), save/load."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from graphrelease.dpsgd import FlatClipping, clipped_grad_sum
from graphrelease.errors import BudgetError, OptionError
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.models.common import MLP
from graphrelease.models.dpar import DPAR, column_clip, stage2_entry
from graphrelease.models.mlp import node_example_loss
from graphrelease.privacy.accountants import compute_epsilon
from graphrelease.privacy.budget import Budget
from graphrelease.testing.probes import assert_within, coupled_poisson_mask, node_neighbours, probe_sensitivity


@pytest.fixture(scope="module")
def cora_small(data_dir) -> Graph:
    g = read_graph(data_dir / "single" / "cora.npz").data
    nodes = np.sort(np.random.default_rng(0).choice(g.num_nodes, 600, replace=False))
    sub = g.induced_subgraph(nodes)
    return sub.replace(features=np.asarray(sub.dense_features())[:, :100].astype(np.float32))


def test_column_clip_caps_count_and_l1():
    rng = np.random.default_rng(0)
    pi = sp.random(50, 40, density=0.5, random_state=1, format="csr") * 3.0
    out = column_clip(pi, col_cap=4, col_l1=1.0)
    assert (np.diff(out.tocsc().indptr) <= 4).all()
    assert np.abs(out).sum(axis=0).max() <= 1.0 + 1e-12
    assert rng is not None


def test_classifier_probe_node_adjacency(cora_small):
    """Fixed released APPR (any sparse matrix with <= col_cap entries per column): removing node j moves the clipped
    gradient sum of the Poisson-sampled examples by at most (2 col_cap + 1) C."""
    g = cora_small
    col_cap, C = 3, 1.0
    src = np.flatnonzero(np.asarray(g.labels) >= 0)[:200]
    pi = column_clip(sp.random(src.size, g.num_nodes, density=0.02, random_state=3, format="csr"), col_cap=col_cap,
                     col_l1=1.0)

    def query(graph, rng):
        torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
        x = DPAR._features(graph)
        z = torch.cat([x[src], DPAR._aggregate(pi, x)], dim=1)
        y = torch.as_tensor(np.asarray(graph.labels)[src], dtype=torch.long)
        present = y >= 0  # a removed node is no longer an example
        mask = coupled_poisson_mask(src, 0.5, rng) & present.numpy()
        model = MLP(z.shape[1], 16, 7, layers=2)
        idx = torch.as_tensor(np.flatnonzero(mask))
        return clipped_grad_sum(model, node_example_loss, (z, y.clamp_min(0)), idx, FlatClipping(max_grad_norm=C))

    r = probe_sensitivity(query, g, node_neighbours, declared=(2 * col_cap + 1) * C, draws=12,
                          rng=np.random.default_rng(5))
    assert_within(r)
    assert r.max_ratio > 0.05


def test_stage2_entry_pair_rate():
    e = stage2_entry(noise_multiplier=2.0, sample_rate=0.1, col_cap=4, count=10)
    assert e.params["pair_rate"] == pytest.approx(1 - 0.9**5)
    assert e.sensitivity == 4.5


@pytest.mark.parametrize("mechanism", ["EM0", "GM"])
def test_fit_edge_charges_only_appr(cora_small, mechanism):
    budget = Budget(epsilon=4.0, delta=1e-5, adjacency="edge", accountant="rdp")
    model = DPAR(mechanism=mechanism, num_sources=60, epochs=5, hidden=16, seed=2).fit(cora_small, budget)
    mechs = [e.mechanism for e in budget.ledger.entries]
    assert mechs == (["gumbel_topk"] if mechanism == "EM0" else ["gaussian"])
    assert 3.9 < budget.spent_epsilon() <= 4.0
    assert model.used_seed
    # The accuracy train reports is the released model's own answer on the test nodes (pushed from them alone).
    test = np.asarray(model.split.test)
    labels = np.asarray(cora_small.labels)[test]
    assert model.test_accuracy == pytest.approx(float(np.mean(model.predict(cora_small, test) == labels)))
    with pytest.raises(OptionError):
        model.embed(cora_small)


def test_fit_node_composes_both_stages(cora_small, tmp_path):
    budget = Budget(epsilon=6.0, delta=1e-5, adjacency="node", accountant="rdp")
    model = DPAR(mechanism="EM1", num_sources=80, epochs=3, hidden=16, batch_size=32, col_cap=4, seed=3)
    model.fit(cora_small, budget)
    mechs = [e.mechanism for e in budget.ledger.entries]
    assert mechs == ["gumbel_topk", "laplace", "joint_convexity_gaussian"]
    appr_eps = compute_epsilon(budget.ledger.entries[:2], 1e-5, accountant="rdp")
    assert 2.9 < appr_eps <= 3.0  # appr_fraction 0.5
    assert budget.spent_epsilon() <= 6.0 * (1 + 1e-6)
    assert budget.spent_epsilon() > appr_eps  # the classifier's steps were composed on top
    files = model.save(tmp_path)
    import json

    again = DPAR.load(tmp_path, json.loads((tmp_path / "config.json").read_text()))
    np.testing.assert_array_equal(again.predict(cora_small), model.predict(cora_small))
    assert all(f.exists() for f in files)
    with pytest.raises(BudgetError):
        DPAR(mechanism="EM0", num_sources=80, epochs=3, seed=3).fit(
            cora_small, Budget(epsilon=1e-6, delta=1e-5, adjacency="node", accountant="rdp"))


def test_every_ledger_anchor_has_a_proof_section():
    from graphrelease.models import appr
    from graphrelease.models.relational import relational_entry
    from graphrelease.privacy.proofs import missing_proofs

    entries = []
    for mech in appr.MECHANISMS:
        entries += appr.ledger_entries(appr.DPAPPRParams(mech, 4, 0.3, 10, noise_multiplier=1.0, eps_select=0.1,
                                                         eps_value=0.1))
    entries.append(stage2_entry(noise_multiplier=1.0, sample_rate=0.1, col_cap=4, count=1))
    common = dict(noise_multiplier=1.0, sample_rate=0.01, num_negatives=4, degree_cap=5, num_nodes=100,
                  num_edges=200)
    entries.append(relational_entry(kind="node", clipping="standard", **common))
    entries.append(relational_entry(kind="edge", clipping="standard", **common))
    assert missing_proofs(entries) == []
    freq = relational_entry(kind="node", clipping="freq", **common)
    assert not freq.sound  # FREQ-CLIP with in-batch frequencies: reproduced, not proved
