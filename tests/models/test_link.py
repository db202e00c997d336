"""Link prediction (GAP aggregates + DP-SGD edge-tuple scorer): the pair-coin splits move one edge, sensitivity
probes of the message-edge aggregation and of the scorer's clipped tuple sum, the accounting cross-checked against
opacus, and a small private fit on real data with its held-out AUC."""

from __future__ import annotations

import math

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _small import cora, small_cora  # noqa: E402

from graphrelease.models.common import adjacency_matrix, row_normalize  # noqa: E402
from graphrelease.models.gap import aggregate_once  # noqa: E402
from graphrelease.models.gap_link import (  # noqa: E402
    GAPLink,
    PairScorer,
    clipped_tuple_sum,
    gap_link_entries,
    message_supervision_split,
)
from graphrelease.models.link import auc, held_out_auc, holdout_split, pair_coins, sample_non_edges  # noqa: E402
from graphrelease.privacy.accountants import compute_epsilon  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.testing.probes import (  # noqa: E402
    assert_within,
    coupled_poisson_mask,
    edge_neighbours,
    keyed_uniform,
    output_distance,
    probe_sensitivity,
)

C = 1.0


def _edge_set(edges: np.ndarray) -> set[tuple[int, int]]:
    return {(int(u), int(v)) for u, v in np.asarray(edges).reshape(-1, 2)}


def test_pair_coin_splits_move_one_edge(data_dir):
    """Adding or removing one input edge changes exactly one part (test / message / supervision) by that edge."""
    g = small_cora(data_dir, n=400)
    rng = np.random.default_rng(0)
    for _ in range(40):
        pair = edge_neighbours(g, rng)
        parts = []
        for graph in (pair.base, pair.neighbour):
            train, test = holdout_split(graph, test_frac=0.2, seed=5)
            msg, sup = message_supervision_split(train, sup_frac=0.4, seed=5)
            parts.append([_edge_set(test), _edge_set(msg.edges), _edge_set(sup)])
        diffs = [len(a ^ b) for a, b in zip(*parts)]
        assert sorted(diffs) == [0, 0, 1], (pair.description, diffs)


def test_pair_coins_are_uniform_and_symmetric():
    pairs = np.random.default_rng(1).integers(0, 10_000, size=(20_000, 2))
    c = pair_coins(pairs, seed=3, salt=1)
    assert np.array_equal(c, pair_coins(pairs[:, ::-1], seed=3, salt=1))
    assert abs(c.mean() - 0.5) < 0.01 and 0.0 <= c.min() and c.max() < 1.0
    assert not np.array_equal(c, pair_coins(pairs, seed=4, salt=1))


def test_message_aggregation_probe_sqrt2(data_dir):
    """The aggregation reads only the message edges of the split; one input edge moves it by <= sqrt(2)."""
    g = small_cora(data_dir, n=300)

    def query(graph, rng):
        train, _ = holdout_split(graph, test_frac=0.1, seed=0)
        msg, _ = message_supervision_split(train, sup_frac=0.3, seed=0)
        h = row_normalize(torch.as_tensor(rng.standard_normal((graph.num_nodes, 8))))
        return aggregate_once(adjacency_matrix(msg), h).numpy()

    r = probe_sensitivity(query, g, edge_neighbours, declared=float(np.sqrt(2)), draws=60,
                          rng=np.random.default_rng(2))
    assert_within(r)
    assert r.max_ratio > 0.5  # some coupled pairs did move the aggregation


@pytest.mark.parametrize("kind", ["blocks", "mlp"])
def test_scorer_tuple_sum_edge_probe(data_dir, kind):
    """One supervision edge added/removed: the clipped tuple sum moves by <= C. Coupling: Poisson mask keyed by the
    edge; each tuple's orientation and negatives keyed by the edge, so shared tuples are identical on both sides."""
    g = small_cora(data_dir, n=300)
    dim, blocks = 8, 3
    clip = 1e-3  # small enough that every tuple's gradient is clipped: a removed sampled tuple moves the sum by ~C
    ratios = []
    rng = np.random.default_rng(4)
    for _ in range(25):
        pair = edge_neighbours(g, rng)
        seed = int(rng.integers(0, 2**62))
        torch.manual_seed(seed % 2**31)
        scorer = PairScorer(kind, dim, blocks, 16)
        z = row_normalize(torch.as_tensor(np.random.default_rng(seed).standard_normal((g.num_nodes, dim * blocks))))
        outs = []
        for graph in (pair.base, pair.neighbour):
            train, _ = holdout_split(graph, test_frac=0.1, seed=0)
            _, sup = message_supervision_split(train, sup_frac=0.5, seed=0)
            pos = sup[coupled_poisson_mask(sup, 0.5, np.random.default_rng(seed))]
            u = keyed_uniform(pos, np.random.default_rng(seed + 1))
            pos = np.where((u < 0.5)[:, None], pos[:, ::-1], pos)
            negs = np.stack([np.floor(keyed_uniform(np.sort(pos, axis=1), np.random.default_rng(seed + 2 + j))
                                      * g.num_nodes).astype(np.int64) for j in range(3)], axis=1).reshape(-1, 3)
            outs.append(clipped_tuple_sum(scorer, z.float(), pos, negs, max_grad_norm=clip))
        ratios.append(output_distance(outs[0], outs[1]) / clip)
    assert max(ratios) <= 1 + 1e-6
    assert max(ratios) > 0.5


def test_gap_link_accounting_matches_opacus():
    """K Gaussian hops (sensitivity sqrt 2) + T Poisson-subsampled steps: the project's RDP accountant vs opacus'
    RDP analysis (q = 1 gives the plain Gaussian), composed on the same coarse order grid."""
    from opacus.accountants.analysis import rdp as opacus_rdp

    s, K, q, T, delta = 3.0, 2, 0.1, 100, 1e-5
    ours = compute_epsilon(gap_link_entries(scale=s, hops=K, sample_rate=q, steps=T), delta, accountant="rdp")
    orders = [1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0]
    rdp = (opacus_rdp.compute_rdp(q=1.0, noise_multiplier=s, steps=K, orders=orders)
           + opacus_rdp.compute_rdp(q=q, noise_multiplier=s, steps=T, orders=orders))
    theirs = opacus_rdp.get_privacy_spent(orders=orders, rdp=rdp, delta=delta)[0]
    assert ours == pytest.approx(theirs, rel=0.01), (ours, theirs)  # measured: 2.6050 vs 2.6063
    # scorer 'dot' trains nothing: only the aggregation is charged
    (only,) = gap_link_entries(scale=s, hops=K, sample_rate=q, steps=0)
    assert only.mechanism == "gaussian" and only.count == K


def test_auc_known_answers():
    assert auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auc(np.array([1.0]), np.array([1.0])) == 0.5
    assert auc(np.array([1.0, 4.0]), np.array([2.0, 3.0])) == 0.5


def test_fit_spends_at_most_epsilon_and_beats_chance(data_dir):
    g = cora(data_dir)
    g = g.replace(features=np.asarray(g.dense_features())[:, :400].astype(np.float32))
    train, test = holdout_split(g, test_frac=0.1, seed=0)
    b = Budget(epsilon=4.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = GAPLink(steps=40, seed=0).fit(train, b)  # seeded: the AUC bound below is then a fixed regression check
    assert [e.stage for e in b.ledger.entries][:2] == ["gap_link.aggregation", "gap_link.scorer.dpsgd"]
    assert 3.9 <= b.spent_epsilon() <= 4.0
    score = held_out_auc(m.score_pairs, train, test, g, seed=0)
    assert score > 0.6  # measured ~0.75 on full Cora at eps 4 (reports/private_models.md); chance is 0.5
    neg = sample_non_edges(g, 50, np.random.default_rng(0))
    assert not (_edge_set(neg) & _edge_set(g.edges))


def test_node_adjacency_refused(data_dir):
    from graphrelease.errors import OptionError

    with pytest.raises(OptionError, match="edge only"):
        GAPLink().fit(small_cora(data_dir, n=100), Budget(epsilon=4.0, delta=1e-5, adjacency="node",
                                                          accountant="rdp"))


def test_dot_scorer_charges_only_the_aggregation(data_dir):
    g = small_cora(data_dir, n=300)
    train, test = holdout_split(g, test_frac=0.2, seed=1)
    b = Budget(epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = GAPLink(scorer="dot").fit(train, b)
    assert [e.stage for e in b.ledger.entries] == ["gap_link.aggregation"] and m.steps == 0
    assert 1.9 <= b.spent_epsilon() <= 2.0
    # the AUC reads the released embeddings only: recomputing it gives the same number, and a seeded refit
    # reproduces it exactly (tests may seed; releases may not)
    auc = held_out_auc(m.score_pairs, train, test, g, seed=1)
    assert auc == held_out_auc(m.score_pairs, train, test, g, seed=1)
    seeded = [held_out_auc(GAPLink(scorer="dot", seed=7).fit(train, Budget(
        epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")).score_pairs, train, test, g, seed=1)
        for _ in range(2)]
    assert seeded[0] == seeded[1]


def test_fit_link_model_relational_holds_out_edges(data_dir):
    """The relational encoder through the link task: trained on the graph minus the held-out edges only."""
    from graphrelease.train import fit_link_model

    g = small_cora(data_dir, n=300)
    run, train = fit_link_model(g, "relational", epsilon=4.0, options={"steps": 5, "hidden": 16, "out_dim": 8,
                                                                       "test_frac": 0.2, "split_seed": 2})
    held = _edge_set(g.edges) - _edge_set(train.edges)
    assert held and _edge_set(holdout_split(g, test_frac=0.2, seed=2)[1]) == held
    assert [e.stage for e in run.budget.ledger.entries] == ["relational.dpsgd"]
    assert math.isfinite(run.test_auc) and run.epsilon_spent <= 4.0
