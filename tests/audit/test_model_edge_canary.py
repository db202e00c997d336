"""Edge canaries for private-model releases: an honest model passes, models that release the edge are flagged, and
the attack never reads the training graph's structure outside the release."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from graphrelease.audit.empirical import (
    choose_canary_edges,
    edge_canary_model_scores,
    insert_canary_edges,
    model_edge_train_and_score,
    run_canary_audit,
)
from graphrelease.graph import Graph
from graphrelease.models import MODELS
from graphrelease.privacy.budget import Budget

#: 60 runs: perfectly separated scores give a bound of about 1.55 (> the claimed 1), so the honest test can fail.
RUNS = 60
CLAIMED = 1.0
DELTA = 1e-5


@pytest.fixture(scope="module")
def cora80(data_dir) -> Graph:
    """The 80 highest-degree Cora nodes with bag-of-words features and class labels (as the node-canary tests)."""
    from graphrelease.io import read_graph

    g = read_graph(data_dir / "single" / "cora.npz").data
    small = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:80]))
    assert small.features is not None and small.labels is not None
    return small


class AdjacencyReleasingModel:
    """Test-only broken reference: GAP's first hop with the noise switched off and one-hot ``H_0`` — it releases the
    rows of ``A + I`` of the graph it was fitted on (kept, like GAP's aggregates, for that graph object)."""

    pair_score = None  # capabilities a model declares (graphrelease.models.base.PrivateModel)
    gives_logits = False

    def fit(self, graph: Graph, budget: Any) -> "AdjacencyReleasingModel":
        a = graph.to_csr().toarray().astype(np.float64)
        self._cache = (graph, a + np.eye(graph.num_nodes))
        return self

    def embed(self, graph: Graph) -> np.ndarray:
        assert self._cache[0] is graph, "the audit must read the released rows, not aggregate another graph"
        return self._cache[1]

    def holds_release_for(self, graph: Graph) -> bool:
        return self._cache[0] is graph


class InferenceReadsGraphModel:
    """Test-only model that learns nothing and whose ``embed`` aggregates the graph it is GIVEN (as a GCN's or DPAR's
    inference does): its fit is perfectly private, so any signal would come from the attack querying the training
    graph."""

    pair_score = None
    gives_logits = False

    def fit(self, graph: Graph, budget: Any) -> "InferenceReadsGraphModel":
        return self

    def embed(self, graph: Graph) -> np.ndarray:
        return graph.to_csr().toarray().astype(np.float64) + np.eye(graph.num_nodes)

    def holds_release_for(self, graph: Graph) -> bool:
        return False


def test_honest_dpdgc_under_edge_adjacency_stays_below_claim(cora80):
    """DPDGC trained at eps=1 under edge adjacency: the cosine of the canary endpoints' released Z~ rows."""

    def make():
        return MODELS.get("dpdgc")(encoder_epochs=3, epochs=3)

    res = run_canary_audit(cora80, model_edge_train_and_score(make, epsilon=CLAIMED, delta=DELTA), runs=RUNS,
                           delta=DELTA, claimed_epsilon=CLAIMED, rng=np.random.default_rng(21))
    assert res.kind == "edge" and res.attack == "embedding_cosine"
    assert res.runs_in == res.runs_out == RUNS // 2
    # fresh noise every run: the scores are not constant
    assert np.ptp(res.scores_in) > 0 and np.ptp(res.scores_out) > 0
    assert res.epsilon_lower <= CLAIMED and not res.violation


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"hop0": "labels", "hops": 1}], ids=["defaults", "one-sided-labels"])
def test_honest_gap_under_edge_adjacency_stays_below_claim(cora80, options):
    """GAP at eps=1 under edge adjacency with its issue #17 defaults (hops=auto with its edge-count release, Laplace
    aggregation of class-probability rows) and with one-sided label aggregation (sensitivity 1): the cosine of the
    canary endpoints' released rows stays below the claim."""

    def make():
        return MODELS.get("gap")(encoder_epochs=3, epochs=3, **options)

    res = run_canary_audit(cora80, model_edge_train_and_score(make, epsilon=CLAIMED, delta=DELTA), runs=RUNS,
                           delta=DELTA, claimed_epsilon=CLAIMED, rng=np.random.default_rng(27))
    assert res.kind == "edge" and res.attack == "embedding_cosine"
    assert np.ptp(res.scores_in) > 0 and np.ptp(res.scores_out) > 0
    assert res.epsilon_lower <= CLAIMED and not res.violation


def test_noiseless_gap_link_is_flagged(cora80):
    """GAP-link with an unlimited budget (no aggregation noise) and the untrained ``dot`` scorer, claiming eps=1: its
    pair score <Z_u, Z_v> moves by a fixed amount when the canary is a message edge. ``encoder_dim`` = the feature
    width keeps ``H_0`` the exact centred features (a narrower one is a randomised SVD that varies between runs)."""
    from graphrelease.models.gap_link import message_supervision_split

    rng = np.random.default_rng(22)
    canary = choose_canary_edges(cora80, 1, np.random.default_rng(23))
    # precondition: the public pair coin puts the canary in the message edges (supervision edges never enter Z)
    _, sup = message_supervision_split(insert_canary_edges(cora80, canary), sup_frac=0.3, seed=0)
    assert not (sup == canary[0]).all(axis=1).any()

    def make():
        return MODELS.get("gap-link")(scorer="dot", encoder_dim=cora80.features.shape[1])

    res = run_canary_audit(cora80, model_edge_train_and_score(make, epsilon=math.inf, delta=DELTA), runs=RUNS,
                           delta=DELTA, claimed_epsilon=CLAIMED, rng=rng, canaries=canary)
    assert res.attack == "pair_score"
    assert min(res.scores_in) > max(res.scores_out) or max(res.scores_in) < min(res.scores_out)
    assert res.epsilon_lower > CLAIMED and res.violation


def test_model_releasing_the_adjacency_is_flagged(cora80):
    """The embedding path: a model whose released rows are A + I, claiming eps=1, is caught by the cosine."""
    res = run_canary_audit(cora80, model_edge_train_and_score(AdjacencyReleasingModel, epsilon=CLAIMED, delta=DELTA),
                           runs=RUNS, delta=DELTA, claimed_epsilon=CLAIMED, rng=np.random.default_rng(24))
    assert res.attack == "embedding_cosine"
    assert min(res.scores_in) > max(res.scores_out)
    assert res.epsilon_lower > CLAIMED and res.violation


def test_attack_queries_models_without_a_cached_release_on_the_graph_without_the_canary(cora80):
    """A model whose inference reads the graph it is given is queried with the training graph minus the canary: the
    in and out scores are then identical and nothing is flagged (querying the training graph would flag it)."""
    res = run_canary_audit(cora80, model_edge_train_and_score(InferenceReadsGraphModel, epsilon=CLAIMED, delta=DELTA),
                           runs=RUNS, delta=DELTA, claimed_epsilon=CLAIMED, rng=np.random.default_rng(25))
    assert len(set(res.scores_in) | set(res.scores_out)) == 1
    assert res.epsilon_lower == 0.0 and not res.violation
    # the statistic it avoided: the same model queried on the training graph separates in from out
    pairs = np.array(res.canary["pairs"])
    with_c = insert_canary_edges(cora80, pairs)
    leak = InferenceReadsGraphModel().embed(with_c)
    base = InferenceReadsGraphModel().embed(cora80)
    assert not np.allclose(leak[pairs[0]], base[pairs[0]])


def test_dpar_without_embeddings_falls_back_to_class_agreement(cora80):
    """DPAR refuses ``embed``: the score is the agreement of the endpoints' released class probabilities."""
    pairs = choose_canary_edges(cora80, 3, np.random.default_rng(26))
    model = MODELS.get("dpar")(epochs=3).fit(cora80, Budget.unlimited("edge", delta=DELTA))
    scores = edge_canary_model_scores(model, cora80, pairs)
    assert list(scores) == ["class_agreement"]
    assert scores["class_agreement"].shape == (3,) and np.all((scores["class_agreement"] >= 0)
                                                              & (scores["class_agreement"] <= 1 + 1e-9))


def test_edge_canary_for_an_edge_adjacency_model_release(tmp_path, cora80):
    """run_audit on a DPDGC release trained under edge adjacency: an edge canary, no skip. Two runs: pins the wiring."""
    from graphrelease.audit.run import run_audit
    from graphrelease.train import train_model

    rel = tmp_path / "dpdgc"
    train_model(cora80, rel, method="dpdgc", adjacency="edge", epsilon=1.0,
                options={"encoder_epochs": 1, "epochs": 1})
    res = run_audit(cora80, [rel], tasks=(), attacks=(), canary_runs=2, canary_max_nodes=80)
    (e,) = res.empirical
    assert e["kind"] == "edge" and e["attack"] == "embedding_cosine" and e["runs"] == 2
    assert "dpdgc" in e["label"] and 0.9 < e["claimed_epsilon"] <= 1.0
    assert not any("canary audit skipped" in n for n in res.notes)
