"""models/common.py: node-stable splits (review F2) and the node-level degree-cap projection that leaves a release
uncertified when it dropped edges (review F5)."""

from __future__ import annotations

import numpy as np

from graphrelease.io import load_default_graph
from graphrelease.models.common import DEGREE_CAP_UNSOUND, node_split


def test_removing_one_nodes_label_changes_only_its_own_slot():
    cora = load_default_graph()
    split = node_split(cora, seed=3)
    victim = int(split.train[17])
    labels = np.array(cora.labels)
    labels[victim] = -1  # node adjacency: the removed node leaves an empty, unlabelled slot
    other = node_split(cora.replace(labels=labels), seed=3)
    assert set(split.train) - set(other.train) == {victim}
    assert set(other.train) <= set(split.train)
    assert np.array_equal(split.val, other.val) and np.array_equal(split.test, other.test)
    assert split.train_slots == other.train_slots == round(0.5 * cora.num_nodes)


def test_node_level_gap_with_a_projection_that_dropped_edges_is_not_certified(tmp_path):
    from graphrelease.privacy.certificate import verify_release
    from graphrelease.train import train_model

    cora = load_default_graph()
    nodes = np.argsort(-cora.degrees())[:300]  # hubs: degrees above the cap
    sub = cora.induced_subgraph(np.sort(nodes))
    assert sub.degrees().max() > 5
    result = train_model(sub, tmp_path / "r", method="gap", adjacency="node", epsilon=8.0,
                         options={"degree_cap": 5, "epochs": 1, "encoder_epochs": 1, "hops": 1, "num_classes": 7},
                         allow_uncertified=True)
    certificate = result.certificate if hasattr(result, "certificate") else None
    import json

    certificate = certificate or json.loads((tmp_path / "r" / "certificate.json").read_text())
    assert certificate["guarantee"] == "none"
    assert DEGREE_CAP_UNSOUND in certificate["guarantee_reason"]
    assert verify_release(tmp_path / "r").ok  # the verifier recomputes the same verdict


def test_node_level_gap_certificate_states_the_validation_look_of_its_rules(tmp_path):
    """The residual classifier's rules were checked on Cora-ML's / Chameleon's validation labels (outside the
    ledger): a node-level GAP release says so in its DP-SGD checklist instead of 'not declared by the caller'."""
    import json

    from graphrelease.train import train_model

    cora = load_default_graph()
    sub = cora.induced_subgraph(np.arange(300))
    train_model(sub, tmp_path / "r", method="gap", adjacency="node", epsilon=8.0,
                options={"degree_cap": 5, "epochs": 1, "encoder_epochs": 1, "hops": 1, "num_classes": 7},
                allow_uncertified=True)
    checklist = json.loads((tmp_path / "r" / "certificate.json").read_text())["dp_sgd"]
    assert "Cora-ML" in checklist["hyperparameters_tuned_on_private_data"]
