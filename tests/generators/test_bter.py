"""dp_bter (issue 15): exact budget, no public node data, save/load, structure matched to the DP statistics, sparse
samplers, and the Slashdot scale limit (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphrelease.audit.compare import degree_histogram_kl
from graphrelease.audit.statistics import triangle_count
from graphrelease.errors import OptionError
from graphrelease.generators import GENERATORS
from graphrelease.generators.affinity import (
    keys_to_edges,
    affinity_groups,
    csr_from_keys,
    merge_components,
    sample_affinity_edges,
)
from graphrelease.generators.bter import (
    DEFAULT_FRACTIONS,
    DOWN_SHARE,
    DPBTER,
    EDGE_COUNT_RELATIVE_SCALE,
    EDGE_COUNT_SPARE,
    SPARE_FOR_CLUSTERING_SUM,
    SWEEP_SHIFT,
    SWEEP_SPARE_FOR_CLUSTERING_SUM,
    TRIANGLE_SPARE_FROM_PARTITION,
    FittedBTER,
    degree_classes,
    ONE_BLOCK_TRIANGLE_SHARE,
    edge_count_top_up,
    one_block_triangle_epsilon,
    order_blocks,
)
from graphrelease.generators.classical_common import pair_keys
from graphrelease.generators.dp_partition import ORDERING_MARGIN, sweep_epsilon_needed, sweeps_can_separate
from graphrelease.generators.dp_stats import capped_triangle_sensitivity
from graphrelease.graph import Graph
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import (
    check_budget_spent_exactly,
    degree_kl,
    load_npz_graph,
    small_subgraph,
    union_of_collection,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from proxies import proxy_graph  # noqa: E402


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def test_registered_and_validates_options():
    assert GENERATORS.get("dp_bter") is DPBTER
    with pytest.raises(OptionError):
        DPBTER(fractions={"sorted_degrees": 1.0})
    with pytest.raises(OptionError):
        DPBTER(density_power=5.0)


def test_fit_spends_exactly_and_reads_no_node_data(cora, tmp_path):
    # Cora's released mean degree (~4) is too low for the label sweeps at epsilon 1 (fewer than 3 labels could
    # order): their share goes to the triangle count and the release has one block.
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    fitted = DPBTER().fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    # The edge count comes first: the mean degree it gives decides the later shares.
    # The clustering sum comes before the triangle count: with one block it may take back part of the count's
    # share (a second release, when the first is too noisy for its size; Cora's sum is about 600, scale 60). Both
    # come before the partition (none here), whose surplus the count may take under the sweeps.
    stages = [e.stage for e in budget.ledger]
    second = ["dp_bter.clustering_sum_second"] if "dp_bter.clustering_sum_second" in stages else []
    assert stages == [
        "dp_bter.edge_count", "dp_bter.sorted_degrees", "dp_bter.node_degrees", "dp_bter.cumulative_degrees",
        "dp_bter.clustering_sum", *second, "dp_bter.triangles_scale", "dp_bter.triangles", "dp_bter.block_counts",
        "dp_bter.components"]
    # The opt-in per-degree triangle profile replaces the scale stage of the triangle count.
    profiled = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    with_profile = DPBTER(clustering_profile=True).fit(cora, profiled)
    check_budget_spent_exactly(profiled, 1.0)
    assert "dp_bter.triangles_profile" in [e.stage for e in profiled.ledger]
    assert with_profile.sample(1)[0].num_nodes == cora.num_nodes
    # At a high epsilon (seeded) at least two merged classes stand above their noise, so the per-class group
    # densities are used; the draw still matches the released triangle count.
    from graphrelease.generators.dp_stats import merge_profile_classes

    sharp = DPBTER(clustering_profile=True, seed=5).fit(cora, Budget(epsilon=16.0, delta=1e-6, adjacency="edge"))
    assert merge_profile_classes(sharp.arrays["profile"], sharp.config["profile_scale"]).max() >= 1
    (g16,) = sharp.sample(1, rng=np.random.default_rng(5))
    assert abs(triangle_count(g16) - float(sharp.arrays["triangles"])) <= 0.25 * float(sharp.arrays["triangles"])
    # Cora carries labels and features; this generator must not declare (or use) them, nor the node numbering.
    assert set(fitted.public_assumptions) == {"num_nodes"}
    assert fitted.config["partition"] == "single_block"
    rng_state = np.random.default_rng(11)
    (g,) = fitted.sample(1, rng=rng_state)
    assert g.num_nodes == cora.num_nodes
    fitted.save(tmp_path)
    again = FittedBTER.load(tmp_path)
    assert again.sample(1, rng=np.random.default_rng(11))[0].structurally_equal(g)


def _fit_checked(graph, epsilon: float, seed: int, partition: str):
    """A seeded default fit that spends exactly ``epsilon`` in verifiable entries, in the expected partition mode;
    returns it and its epsilon per ledger stage."""
    from graphrelease.privacy.sensitivities import entry_problems

    budget = Budget(epsilon=epsilon, delta=1e-6, adjacency="edge")
    fitted = DPBTER(seed=seed).fit(graph, budget)
    check_budget_spent_exactly(budget, epsilon)
    assert fitted.config["partition"] == partition
    assert all(entry_problems(e, "edge") == [] for e in budget.ledger)
    return fitted, {e.stage: e.params["epsilon"] for e in budget.ledger}


def _entry(budget, stage: str):
    """The ledger entry of ``stage`` (each stage is charged once)."""
    (entry,) = [e for e in budget.ledger if e.stage == stage]
    return entry


def test_under_the_sweeps_a_noisy_triangle_count_takes_part_of_the_partitions_surplus(data_dir):
    """Under the sweeps the count's share is 0.04-0.13 of epsilon, against 0.33-0.49 without them, so small counts
    came out noisier at epsilon 4 or 8 than at 2. Stage 2 may take up to TRIANGLE_SPARE_FROM_PARTITION of the
    partition's surplus (beyond what 3 labels need), as far as stage 1 says the count is too noisy for its size and
    the cap's residual bias does not already dominate: MUTAG's 188 molecules as one graph (3,371 nodes, mean degree
    2.2, no triangle, largest degree 4) at epsilon 16, where the sweeps run. Stage 1 cannot tell this count from 0,
    so its own scale sizes it, and the relative target at epsilon 16 (0.1 / 4, dp_bter's triangle_relative_scale) asks
    for more than the spare: every fit takes the whole spare (with 0.1 at every epsilon, before session 24, they took
    0.11-0.77 of epsilon, 0.06-0.40 of the spare). The partition pays exactly what the count took and every fit
    spends epsilon. A count whose noise already lies below its cap's residual bias takes nothing (Cora-ML at epsilon
    8: 5,308 triangles, scale about 6% of them, above the relative target of 0.1 / sqrt 8)."""
    g = union_of_collection(data_dir, "MUTAG")
    partition_share = 16.0 * (DEFAULT_FRACTIONS["partition"] + sum(SWEEP_SHIFT.values()))
    took = []
    for seed in range(4):
        fitted, by_stage = _fit_checked(g, 16.0, seed, "degree_ordered_sweeps")
        taken = partition_share - by_stage["dp_bter.partition_down"]
        surplus = partition_share - sweep_epsilon_needed(fitted.config["released_mean_degree"]) / DOWN_SHARE
        assert -1e-12 <= taken <= TRIANGLE_SPARE_FROM_PARTITION * surplus + 1e-12
        # the sweeps still order at least 3 labels
        assert by_stage["dp_bter.partition_down"] >= sweep_epsilon_needed(fitted.config["released_mean_degree"])
        stage2 = by_stage["dp_bter.triangles"]
        assert fitted.config["triangle_noise_scale"] == pytest.approx(
            capped_triangle_sensitivity(fitted.config["triangle_cap"]) / stage2)
        took.append(taken / (TRIANGLE_SPARE_FROM_PARTITION * surplus))
    # The rule ran in every fit, with dp_bter's falling target: the whole spare each time.
    assert took == pytest.approx([1.0] * 4)
    fitted, by_stage = _fit_checked(load_npz_graph(data_dir, "cora_ml"), 8.0, 0, "degree_ordered_sweeps")
    assert by_stage["dp_bter.partition_down"] == pytest.approx(8.0 * (DEFAULT_FRACTIONS["partition"]
                                                                      + sum(SWEEP_SHIFT.values())))


def test_one_block_triangle_epsilon_is_the_counts_epsilon_where_the_sweeps_start():
    """The floor dp_bter's triangle top-up aims at: the count's one-block share of epsilon up to the total E* at which
    the default partition share first lets the sweeps order 3 labels, flat above it (the released mean degree and
    the edge count's ``paid`` factor decide E*)."""
    for mean_degree, paid in ((7.3, 1.0), (18.5, 1.0), (43.7, 0.9)):
        start = sweep_epsilon_needed(mean_degree) / DOWN_SHARE / (DEFAULT_FRACTIONS["partition"] * paid)
        assert not sweeps_can_separate(DOWN_SHARE * DEFAULT_FRACTIONS["partition"] * paid * start * 0.999, mean_degree)
        assert sweeps_can_separate(DOWN_SHARE * DEFAULT_FRACTIONS["partition"] * paid * start * 1.001, mean_degree)
        for eps in (0.5 * start, start):
            assert one_block_triangle_epsilon(eps, mean_degree, paid) == pytest.approx(
                ONE_BLOCK_TRIANGLE_SHARE * paid * eps)
        assert one_block_triangle_epsilon(4.0 * start, mean_degree, paid) == pytest.approx(
            ONE_BLOCK_TRIANGLE_SHARE * paid * start)
    assert ONE_BLOCK_TRIANGLE_SHARE == pytest.approx(0.4867, abs=1e-4)  # the share docs/privacy.md states


def test_under_the_sweeps_the_triangle_count_is_topped_up_towards_its_one_block_precision(monkeypatch):
    """The held-out-like e-mail proxy at epsilon 1 (980 nodes, mean degree about 30): the sweeps run, so the count's
    base share is 0.08, where with one block it would have had about 0.33 of epsilon. The top-up takes more of the
    partition's surplus than without the floor (measured: 0.136 / 0.094 of epsilon for 0.051 / 0.032 without it),
    never more than the one-block count's stage 2 (or what the relative target alone asked), and the partition pays
    exactly what it took: the same seeded fits with the floor switched off for comparison. (Chameleon was this test's
    graph under the largest-degree weights; under the median ones its stage 1 is precise enough that nothing is
    topped up: structure log item 42.)"""
    import graphrelease.generators.bter as bter

    g = proxy_graph("email0")
    for seed in (0, 1):
        fitted, with_floor = _fit_checked(g, 1.0, seed, "degree_ordered_sweeps")
        floor = one_block_triangle_epsilon(1.0, fitted.config["released_mean_degree"])
        with monkeypatch.context() as patch:
            patch.setattr(bter, "one_block_triangle_epsilon", lambda *args, **kwargs: 0.0)
            _, without = _fit_checked(g, 1.0, seed, "degree_ordered_sweeps")
        assert with_floor["dp_bter.triangles_scale"] == without["dp_bter.triangles_scale"]  # same stage 1
        took = with_floor["dp_bter.triangles"] - without["dp_bter.triangles"]
        assert took > 0.05  # the floor binds on this graph
        assert with_floor["dp_bter.triangles"] <= max(0.8 * floor, without["dp_bter.triangles"]) + 1e-9
        assert with_floor["dp_bter.partition_down"] == pytest.approx(without["dp_bter.partition_down"] - took)


def test_with_one_block_the_clustering_sum_takes_back_what_its_size_needs(cora):
    """600 of Cora's nodes (mean degree 3.9: one block at epsilon 1). The capped clustering sum is about 170, so its
    own share (0.05, scale 60) leaves it about 35% off; a second release takes the epsilon that brings it to
    TOPPED_UP_RELATIVE_SCALE from the triangle count (at most SPARE_FOR_CLUSTERING_SUM of the partition's share), and
    every fit still spends exactly epsilon."""
    g = small_subgraph(cora, 600)
    one_block_triangles = (DEFAULT_FRACTIONS["triangles"] + DEFAULT_FRACTIONS["partition"]
                           + min(DEFAULT_FRACTIONS["clustering_sum"], DEFAULT_FRACTIONS["block_counts"] * 2 / 3))
    for seed in (0, 1, 2):
        fitted, by_stage = _fit_checked(g, 1.0, seed, "single_block")
        second = by_stage["dp_bter.clustering_sum_second"]
        # This graph's edge count (1,159) is released twice too; every later share paid for it in proportion.
        later = 1.0 - DEFAULT_FRACTIONS["edge_count"]
        paid = (later - by_stage.get("dp_bter.edge_count_second", 0.0)) / later
        assert 0 < second <= SPARE_FOR_CLUSTERING_SUM * DEFAULT_FRACTIONS["partition"] * paid + 1e-12
        assert by_stage["dp_bter.triangles_scale"] + by_stage["dp_bter.triangles"] + second == pytest.approx(
            one_block_triangles * paid)
        assert fitted.config["shares_spent"]["clustering_sum"] == pytest.approx(
            DEFAULT_FRACTIONS["clustering_sum"] * paid + second)
        assert fitted.config["clustering_sum_scale"] == pytest.approx(
            3.0 / np.hypot(DEFAULT_FRACTIONS["clustering_sum"] * paid, second))
        assert fitted.sample(1, rng=np.random.default_rng(seed))[0].num_edges > 0


def test_with_sweeps_the_clustering_sum_tops_up_from_the_triangle_count(data_dir):
    """A 1,000-node BFS piece of Slashdot at epsilon 4: the sweeps run, and the sum's share after their shift (0.03)
    leaves it noisy for a sum of a few hundred, so a second release takes up to SWEEP_SPARE_FOR_CLUSTERING_SUM of the
    triangle count's share (the partition's is spent by then); every fit still spends exactly epsilon."""
    from tests.generators.classical_helpers import bfs_ball, load_slashdot

    piece = bfs_ball(load_slashdot(data_dir), 0, 1000, name="slashdot_piece")
    triangle_share = 4.0 * (DEFAULT_FRACTIONS["triangles"] - SWEEP_SHIFT["triangles"])
    partition_share = 4.0 * (DEFAULT_FRACTIONS["partition"] + sum(SWEEP_SHIFT.values()))
    for seed in range(3):
        fitted, by_stage = _fit_checked(piece, 4.0, seed, "degree_ordered_sweeps")
        second = by_stage["dp_bter.clustering_sum_second"]
        assert 0 < second <= SWEEP_SPARE_FOR_CLUSTERING_SUM * triangle_share + 1e-12
        # What the count's stage 2 took from the partition (TRIANGLE_SPARE_FROM_PARTITION) is what the partition
        # lacks; the count and the sum together spend the count's share and that.
        taken = partition_share - by_stage["dp_bter.partition_down"]
        assert taken >= -1e-12
        assert by_stage["dp_bter.triangles_scale"] + by_stage["dp_bter.triangles"] + second == pytest.approx(
            triangle_share + taken)
        first = by_stage["dp_bter.clustering_sum"]
        assert fitted.config["clustering_sum_scale"] < 3.0 / first  # cap 1 at this size: sensitivity 3


def test_the_clustering_sum_takes_no_spare_in_candidates_mode(cora):
    """With one block the spare is the partition's share, which only the sweeps' single-block branch hands to the
    triangle count: the candidate selection spends it even when it picks one block, so there the sum is released once
    (a review found the first version taking it from a 0.13 triangle share: a negative epsilon). A share set given
    explicitly keeps the count's share positive (at least half the partition's)."""
    g = small_subgraph(cora, 600)
    for seed in range(4):
        budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
        DPBTER(partition="candidates", seed=seed).fit(g, budget)
        check_budget_spent_exactly(budget, 1.0)
        assert "dp_bter.clustering_sum_second" not in [e.stage for e in budget.ledger]
    given = {"sorted_degrees": 0.2, "rank_degrees": 0.05, "cumulative_degrees": 0.05, "partition": 0.5,
             "block_counts": 0.05, "edge_count": 0.05, "triangles": 0.02, "clustering_sum": 0.05, "components": 0.03}
    for seed in range(4):
        budget = Budget(epsilon=0.5, delta=1e-6, adjacency="edge")
        fitted = DPBTER(fractions=given, seed=seed).fit(g, budget)
        check_budget_spent_exactly(budget, 0.5)
        assert fitted.config["partition"] == "single_block"
        assert fitted.config["shares_spent"]["triangles"] >= 0.5 * given["partition"] - 1e-12


def test_a_small_graphs_edge_count_is_released_again_where_the_first_is_too_noisy(cora):
    """Issue 15 asks for the edge count within 2%. At 0.04 of epsilon 1 the count's Laplace scale is 25 edges, so on
    a graph of about a thousand edges nearly half the releases missed it. A second release tops the count up (at most
    EDGE_COUNT_SPARE of epsilon, taken from every later share in proportion); the fit still spends exactly epsilon,
    and a share set given explicitly is spent as given (the same seeds without the second release)."""
    from graphrelease.privacy.sensitivities import entry_problems

    g = small_subgraph(cora, 600)  # 1,159 edges: needs 1 / (0.005 x 1,159) = 0.17, held to the spare
    topped, plain = [], []
    for seed in range(16):
        budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
        fitted = DPBTER(seed=seed).fit(g, budget)
        check_budget_spent_exactly(budget, 1.0)
        assert all(entry_problems(e, "edge") == [] for e in budget.ledger)
        stages = [e.stage for e in budget.ledger]
        assert stages[:2] == ["dp_bter.edge_count", "dp_bter.edge_count_second"]
        extra = budget.ledger.entries[1].params["epsilon"]
        assert 0.0 < extra <= EDGE_COUNT_SPARE + 1e-12
        assert fitted.config["shares_spent"]["edge_count"] == pytest.approx(DEFAULT_FRACTIONS["edge_count"] + extra)
        topped.append(abs(fitted.arrays["block_counts"].sum() / g.num_edges - 1.0))
        given = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
        as_given = DPBTER(seed=seed, fractions=dict(DEFAULT_FRACTIONS)).fit(g, given)
        assert "dp_bter.edge_count_second" not in [e.stage for e in given.ledger]
        plain.append(abs(as_given.arrays["block_counts"].sum() / g.num_edges - 1.0))
    # Measured over 20 seeds of this comparison: mean |RE| 0.020 -> 0.008, share above 0.02 0.45 -> 0.05.
    assert np.mean(topped) < 0.6 * np.mean(plain), (np.mean(topped), np.mean(plain))
    assert np.mean(np.array(topped) > 0.02) <= 0.2
    # The later shares follow the first release in either partition mode, so the certificate is the pure-DP filter
    # bound (the full epsilon), never the composition of the branch taken.
    from graphrelease.privacy.accountants import ADAPTIVE_FILTER_NOTE, analyse

    # That holds on the branch without a second release too (all of Cora; review: its own composition read 0.991).
    for graph, second in ((g, True), (cora, False)):
        candidates = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
        DPBTER(seed=0, partition="candidates").fit(graph, candidates)
        assert ("dp_bter.edge_count_second" in [e.stage for e in candidates.ledger]) == second
        assert all(e.params.get("adaptive_share") for e in candidates.ledger.entries[1:])
        for accountant in ("pld", "rdp"):
            res = analyse(candidates.ledger, 1e-5, accountant)
            assert res.method == ADAPTIVE_FILTER_NOTE and res.epsilon == pytest.approx(1.0, rel=1e-9)
    # All of Cora (5,278 edges) needs 1 / (0.005 x 5,278) = 0.038 < 0.04: released once.
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    DPBTER(seed=0).fit(cora, budget)
    assert 1.0 / (EDGE_COUNT_RELATIVE_SCALE * cora.num_edges) < DEFAULT_FRACTIONS["edge_count"]
    assert "dp_bter.edge_count_second" not in [e.stage for e in budget.ledger]


def test_label_sweeps_run_when_the_released_degrees_allow_them(cora):
    budget = Budget(epsilon=8.0, delta=1e-6, adjacency="edge")
    fitted = DPBTER().fit(cora, budget)
    check_budget_spent_exactly(budget, 8.0)
    stages = [e.stage for e in budget.ledger]
    # One sweep (down) takes the whole partition share: the up sweep is not run (DOWN_SHARE = 1). It comes after
    # the triangle count, right before the block counts it labels.
    assert stages.index("dp_bter.partition_down") == stages.index("dp_bter.block_counts") - 1
    assert stages.index("dp_bter.triangles") < stages.index("dp_bter.partition_down")
    assert "dp_bter.partition_up" not in stages
    down = _entry(budget, "dp_bter.partition_down")
    assert down.mechanism == "permute_and_flip"
    # With the default shares the sweeps also take SWEEP_SHIFT from the block counts, triangles and clustering sum
    # (the degrees keep their shares). Cora's count (about 1,600 triangles) is mostly precise enough at the
    # triangles' 0.08 of epsilon 8; where its stage 1 says otherwise (2 of 16 seeded fits in a review, where the extra
    # mostly bought a larger cap) stage 2 takes part of the partition's surplus back (what the partition lacks), at
    # most half of it.
    moved = sum(SWEEP_SHIFT.values())
    spent = {}
    for e in budget.ledger:
        key = "triangles" if e.stage.startswith("dp_bter.triangles") else e.stage.removeprefix("dp_bter.")
        key = {"node_degrees": "rank_degrees"}.get(key, key)
        spent[key] = spent.get(key, 0.0) + e.params["epsilon"] * e.count
    taken = 8.0 * (DEFAULT_FRACTIONS["partition"] + moved) - down.params["epsilon"]
    surplus = 8.0 * (DEFAULT_FRACTIONS["partition"] + moved) - sweep_epsilon_needed(
        fitted.config["released_mean_degree"]) / DOWN_SHARE
    assert -1e-12 <= taken <= TRIANGLE_SPARE_FROM_PARTITION * surplus + 1e-12
    for key, share in SWEEP_SHIFT.items():
        extra = taken - spent.get("clustering_sum_second", 0.0) if key == "triangles" else 0.0
        assert spent[key] == pytest.approx(8.0 * (DEFAULT_FRACTIONS[key] - share) + extra), key
    assert spent["rank_degrees"] == pytest.approx(8.0 * DEFAULT_FRACTIONS["rank_degrees"])
    assert fitted.config["shares_spent"]["partition"] == pytest.approx(
        DEFAULT_FRACTIONS["partition"] + moved - taken / 8.0)
    # Where the sweeps order fewer than SHIFT_MIN_LABELS labels at the base share (Cora at epsilon 6: about
    # 6 * 0.31 * 3.9 / 2.1 = 3.5) nothing moves.
    few = Budget(epsilon=6.0, delta=1e-6, adjacency="edge")
    DPBTER().fit(cora, few)
    check_budget_spent_exactly(few, 6.0)
    # (the partition keeps its base share, less what the triangle count may take back from its surplus)
    assert _entry(few, "dp_bter.block_counts").params["epsilon"] == pytest.approx(
        6.0 * DEFAULT_FRACTIONS["block_counts"])
    assert _entry(few, "dp_bter.partition_down").params["epsilon"] <= 6.0 * DEFAULT_FRACTIONS["partition"] + 1e-12
    # A share set given explicitly is spent as given, even when it equals the default one.
    given = Budget(epsilon=8.0, delta=1e-6, adjacency="edge")
    DPBTER(fractions=dict(DEFAULT_FRACTIONS)).fit(cora, given)
    check_budget_spent_exactly(given, 8.0)
    # (no shift, and the triangle count takes nothing back from the partition)
    assert _entry(given, "dp_bter.partition_down").params["epsilon"] == pytest.approx(
        8.0 * DEFAULT_FRACTIONS["partition"])
    # The earlier selection stays available for comparison; it is charged as the exponential mechanism.
    budget2 = Budget(epsilon=8.0, delta=1e-6, adjacency="edge")
    DPBTER(partition_selection="exponential").fit(cora, budget2)
    check_budget_spent_exactly(budget2, 8.0)
    assert _entry(budget2, "dp_bter.partition_down").mechanism == "exponential"
    with pytest.raises(OptionError):
        DPBTER(partition_selection="gumbel")
    assert fitted.config["partition"] == "degree_ordered_sweeps"
    assert int(fitted.arrays["labels"].max()) + 1 >= 2


def test_candidate_mode_keeps_the_earlier_selection(cora):
    old_shares = {"sorted_degrees": 0.25, "rank_degrees": 0.15, "select": 0.05, "block_counts": 0.10,
                  "edge_count": 0.05, "triangles": 0.35, "components": 0.05}
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    fitted = DPBTER(fractions=old_shares, partition="candidates", use_node_order=True).fit(cora, budget)
    check_budget_spent_exactly(budget, 1.0)
    assert "dp_bter.partition_select" in [e.stage for e in budget.ledger]
    assert "dp_bter.cumulative_degrees" not in [e.stage for e in budget.ledger]  # not in the old share set
    assert set(fitted.public_assumptions) == {"num_nodes", "node_order"}
    assert fitted.config["partition"] in {"single_block", "degree_classes", "node_order:8", "node_order:16",
                                          "node_order:32"}
    with pytest.raises(OptionError):
        DPBTER(partition="louvain")


def test_sample_matches_released_statistics(cora):
    # Seeded so the check is deterministic: at epsilon 8 the released counts are close to the truth, and the sampler
    # must reproduce what was released (edges exactly up to the component joins' trades, triangles within 25%).
    budget = Budget(epsilon=8.0, delta=1e-6, adjacency="edge")
    fitted = DPBTER(seed=3).fit(cora, budget)
    assert fitted.reproducible_seed_used
    (g,) = fitted.sample(1, rng=np.random.default_rng(3))
    released_edges = int(fitted.arrays["block_counts"].sum())
    assert abs(g.num_edges - released_edges) <= 0.02 * released_edges
    target = float(fitted.arrays["triangles"])
    assert abs(triangle_count(g) - target) <= 0.25 * target
    # The release itself is within its own noise of the truth: 30% for the cap's truncation and the bias model, plus
    # four Laplace scales of the final stage (2 x cap / its epsilon; exceeded with probability e^-4 per draw).
    scale = fitted.config["triangle_noise_scale"]
    assert scale <= 2.0 * fitted.config["triangle_cap"] / (0.8 * fitted.config["triangle_epsilon"]) + 1e-9
    assert abs(target - triangle_count(cora)) <= 0.3 * triangle_count(cora) + 4.0 * scale


def test_candidate_partitions_are_public():
    d = np.array([0, 1, 1, 2, 3, 5, 8, 13, 40.0])
    classes = degree_classes(d)
    assert np.all(np.diff(classes[np.argsort(d, kind="stable")]) >= 0)
    blocks = order_blocks(10, 3)
    assert blocks.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_affinity_groups_have_bter_sizes_and_keep_every_node_in_its_block():
    rng = np.random.default_rng(0)
    n = 600
    degrees = rng.integers(0, 12, n).astype(float)
    blocks = rng.integers(0, 4, n)
    order, starts = affinity_groups(degrees, blocks, rng)
    assert np.all(degrees[order] >= 2) and np.unique(order).size == order.size
    assert order.size == np.sum(degrees >= 2)  # every node of degree >= 2 is in a group
    sizes = np.diff(starts)
    first = degrees[order[starts[:-1]]].astype(int)
    # Degrees are integers here, so randomised rounding is exact: a group is d_first + 1 nodes, except each block's
    # short last run (its top degrees, too few for a group of their degree), which is a group of its own.
    group_block = blocks[order[starts[:-1]]]
    for g in range(sizes.size):
        members = order[starts[g]:starts[g + 1]]
        assert np.all(blocks[members] == group_block[g])  # no group crosses blocks (they tied blocks together)
        assert sizes[g] == first[g] + 1 or (sizes[g] < first[g] + 1 and degrees[members].max() == max(
            degrees[(blocks == group_block[g]) & (degrees >= 2)]))
    assert np.sum(sizes < first + 1) <= 4  # one short run per block at most
    keys = sample_affinity_edges(n, order, starts, np.full(sizes.size, 1.0), rng)
    assert keys.size == int(np.sum(sizes * (sizes - 1) // 2))  # density 1: every group a clique


def test_a_short_top_run_is_a_group_of_its_own():
    rng = np.random.default_rng(3)
    degrees = np.concatenate([np.full(40, 3.0), [30.0, 31.0, 35.0]])
    order, starts = affinity_groups(degrees, np.zeros(degrees.size, dtype=np.int64), rng)
    sizes = np.diff(starts)
    assert sizes.tolist() == [4] * 10 + [3]  # the three hubs cannot fill a group of 31: they keep their own
    assert sorted(degrees[order[starts[-2]:]].tolist()) == [30.0, 31.0, 35.0]


def test_merge_components_keeps_edge_count():
    rng = np.random.default_rng(1)
    # A cycle of 50 nodes with chords (degrees >= 3 to trade), plus 10 separate edges and 5 isolated nodes.
    n = 75
    cyc = np.stack([np.arange(50), (np.arange(50) + 1) % 50], 1)
    chords = np.stack([np.arange(0, 50, 2), (np.arange(0, 50, 2) + 7) % 50], 1)
    pairs = np.stack([np.arange(50, 70, 2), np.arange(51, 71, 2)], 1)
    keys = np.unique(pair_keys(np.vstack([cyc, chords, pairs]), n))
    weights = np.ones(n)
    weights[70:] = 0.0  # isolated nodes that should stay isolated unless the target asks for fewer components
    out = merge_components(n, keys, 6.0, weights, rng)
    import scipy.sparse as sp

    ncomp = sp.csgraph.connected_components(csr_from_keys(n, out), directed=False)[0]
    assert out.size == keys.size
    assert ncomp == 6  # the largest component plus the five weight-0 isolated nodes
    out = merge_components(n, keys, 3.0, weights, rng)
    assert out.size == keys.size
    assert sp.csgraph.connected_components(csr_from_keys(n, out), directed=False)[0] == 3




def test_merge_components_never_isolates_a_node_it_takes_edges_from():
    """Many joins against a giant component of degree-2 nodes (a bare cycle of 60): each join deletes one giant edge,
    and choosing them all at once let a degree-2 node lose both (Slashdot at epsilon 1: 98 nodes isolated by ~12,000
    joins, 172 components left for a released 17). The walk keeps running degrees, so every node keeps an edge."""
    import scipy.sparse as sp

    n = 100
    cyc = np.stack([np.arange(60), (np.arange(60) + 1) % 60], 1)
    keys = np.unique(pair_keys(cyc, n))
    weights = np.ones(n)  # 40 isolated nodes of released degree 1 to join
    for seed in range(5):
        out = merge_components(n, keys, 1.0, weights, np.random.default_rng(seed))
        deg = np.bincount(keys_to_edges(out, n).ravel(), minlength=n)
        assert out.size == keys.size
        assert deg[:60].min() >= 1, seed  # no cycle node lost both of its edges
        assert sp.csgraph.connected_components(csr_from_keys(n, out), directed=False)[0] < 41

def test_merge_components_joins_the_largest_other_components_first():
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    # A 40-node cycle with chords, a 12-node path and six separate edges: one join allowed (target 7 of 8).
    n = 64
    cyc = np.stack([np.arange(40), (np.arange(40) + 1) % 40], 1)
    chords = np.stack([np.arange(0, 40, 2), (np.arange(0, 40, 2) + 5) % 40], 1)
    path = np.stack([np.arange(40, 51), np.arange(41, 52)], 1)
    pairs = np.stack([np.arange(52, 64, 2), np.arange(53, 64, 2)], 1)
    keys = np.unique(pair_keys(np.vstack([cyc, chords, path, pairs]), n))
    out = merge_components(n, keys, 7.0, np.ones(n), rng)
    _, comp = sp.csgraph.connected_components(csr_from_keys(n, out), directed=False)
    # The path joined the giant component (52 nodes); the six pairs stay apart, as a real graph's tiny components.
    assert np.bincount(comp).max() == 52 and out.size == keys.size



def test_merge_components_pays_with_edges_in_no_triangle_first():
    """A triangle-free 4-regular ring (circulant, offsets 1 and 7) with ten triangles of degree-3 nodes hung on it,
    plus 20 isolated nodes to join. The triangles' edges have the smallest degree product (9 against 15-16), so
    choosing by product alone deleted them first; the joins now pay with edges in no triangle, and every triangle the
    sampler was steered to stays (joined after the sampler's loop, the old choice cost 1,000-node pieces of Cora 8-13%
    of their triangles)."""
    from graphrelease.generators.local_clustering import measure_clustering

    ring_n, n = 60, 110
    i = np.arange(ring_n)
    ring = np.vstack([np.stack([i, (i + 1) % ring_n], 1), np.stack([i, (i + 7) % ring_n], 1)])
    corners = (ring_n + np.arange(30)).reshape(10, 3)
    hung = np.vstack([np.stack([corners[:, a], corners[:, b]], 1) for a, b in ((0, 1), (1, 2), (0, 2))]
                     + [np.stack([corners.ravel(), np.arange(0, 60, 2)], 1)])
    keys = np.unique(pair_keys(np.vstack([ring, hung]), n))
    before, _, _ = measure_clustering(n, keys)
    assert before == 10
    for seed in range(3):
        out = merge_components(n, keys, 1.0, np.ones(n), np.random.default_rng(seed))
        after, _, _ = measure_clustering(n, out)
        assert out.size == keys.size and after == before, (seed, before, after)


_SLASHDOT_CHILD = """
import json, resource, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from graphrelease.generators.bter import DPBTER
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import check_budget_spent_exactly, load_slashdot
graph = load_slashdot(Path(sys.argv[1]))
epsilon = float(sys.argv[2])
budget = Budget(epsilon=epsilon, delta=1e-6, adjacency="edge")
t0 = time.process_time()
(g,) = DPBTER().fit(graph, budget).sample(1)
cpu = time.process_time() - t0
check_budget_spent_exactly(budget, epsilon)
print(json.dumps({"cpu": cpu, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "edges": g.num_edges, "input_edges": graph.num_edges}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 4.0])  # at 4 the label sweeps run (Slashdot's mean degree 12.3)
def test_slashdot_under_30_cpu_seconds_and_2_gib(data_dir, epsilon):
    # In a fresh process: its resident peak (Linux reports ru_maxrss in KiB) then bounds what fit + sample used,
    # whatever ran before in the test process (the Tolokers test leaves a 3.3 GB peak there). CPU untraced:
    # tracemalloc slows the label sweeps' per-node loop several-fold.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", _SLASHDOT_CHILD, str(data_dir), str(epsilon)], env=env,
                         capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["cpu"] < 30.0, res
    assert res["peak"] < 2 * 2**30, res
    assert abs(res["edges"] - res["input_edges"]) <= 0.02 * res["input_edges"]


def test_block_margins_follow_the_excess_degrees():
    from graphrelease.generators.bter import fit_block_margins

    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(4), [50, 30, 15, 5])
    k = 4
    iu, ju = np.triu_indices(k)
    counts = rng.integers(5, 60, iu.size).astype(float)
    excess = rng.uniform(0, 10, labels.size)
    out = fit_block_margins(counts, labels, excess, 400)
    assert out.sum() == 400 and np.all(out >= 0)
    vol = np.zeros((k, k))
    vol[iu, ju] += out
    vol[ju, iu] += out
    want = np.bincount(labels, weights=excess) * (800 / excess.sum())
    # Integer rounding moves each cell by < 1; the margins are met up to that.
    np.testing.assert_allclose(vol.sum(axis=1), want, atol=k + 1)
    # Never more edges in a cell than node pairs.
    sizes = np.bincount(labels)
    cap = np.where(iu == ju, sizes[iu] * (sizes[iu] - 1) // 2, sizes[iu] * sizes[ju])
    assert np.all(out <= cap)


def test_plateau_interpolation_is_monotone_and_spreads_runs():
    from graphrelease.generators.degree_postprocess import interpolate_plateaus

    y = np.array([0.0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 7, 7])
    z = interpolate_plateaus(y)
    assert np.all(np.diff(z) >= 0)
    assert z[0] == 0.0 and z[-1] == 7.0
    assert np.unique(np.round(z, 6)).size > np.unique(y).size


@pytest.mark.slow
def test_utility_does_not_get_worse_from_epsilon_1_to_4(cora):
    """Seeded (24 fits per epsilon, the same seeds; ~6 s): on Cora the median relative errors of the triangle count,
    the global and the average clustering, and the degree KL at epsilon 4 are no worse than at epsilon 1 beyond a
    0.05 allowance for run-to-run spread. Measured at this commit (epsilon 1 -> 4): triangles 0.092 -> 0.123, global
    clustering 0.145 -> 0.112, average clustering 0.122 -> 0.131, degree KL 0.138 -> 0.124 (the generator's average
    clustering is ~0.7x Cora's once the triangle count is right: BTER's single group density; at epsilon 1 the
    count's noise scatters it on both sides: single fits 0.06-0.75). Five fits were too few for the 0.05 allowance:
    after the bootstrap-chosen degree dither the first five epsilon-1 fits' median average clustering error fell to
    0.21 while epsilon 4's was 0.29, with 12 fits 0.37 and 0.28 (before the dither: 0.35 and 0.24). Twelve were too
    few after the wedge correction (degree_postprocess.debias_wedges): its first 12 epsilon-1 fits' median triangle error fell
    to 0.083 (0.124 without it) while epsilon 4's was 0.160 (0.137); over 36 fits 0.096 and 0.102 (without it 0.130
    and 0.094)."""
    from graphrelease.audit.statistics import triangle_count as tc

    def stats(g):
        d = g.degrees().astype(np.float64)
        t = float(tc(g))
        return t, 3.0 * t / float((d * (d - 1) / 2).sum()), float(
            g.to_igraph().transitivity_avglocal_undirected(mode="zero")), g.degrees()

    truth = stats(cora)
    errors = {}
    for eps in (1.0, 4.0):
        rows = []
        for seed in range(24):
            fitted = DPBTER(seed=seed).fit(cora, Budget(epsilon=eps, delta=1e-6, adjacency="edge"))
            syn = stats(fitted.sample(1, rng=np.random.default_rng(seed))[0])
            rows.append([abs(syn[i] - truth[i]) / truth[i] for i in range(3)] + [degree_kl(truth[3], syn[3])])
        errors[eps] = np.median(np.array(rows), axis=0)
    assert np.all(errors[4.0] <= errors[1.0] + 0.05), errors


def test_hub_repair_keeps_the_edge_count_and_lifts_saturated_hubs():
    """A hub whose block could not give it its degree (here: a hub with 5 of its released 60 edges among 400 nodes
    of released degree 4 holding a random 4-regular-ish graph) gets its missing edges; the edge count and the
    protected edges are kept."""
    from graphrelease.generators.affinity import repair_hub_degrees

    rng = np.random.default_rng(0)
    n = 401
    pairs = rng.integers(1, n, size=(800, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    keys = np.unique(pair_keys(np.vstack([pairs, np.column_stack([np.zeros(5, int), np.arange(1, 6)])]), n))
    degrees = np.full(n, 4.0)
    degrees[0] = 60.0
    protected = keys[:50]
    out = repair_hub_degrees(n, keys, degrees, np.random.default_rng(1), protected=protected)
    assert out.size == keys.size
    assert np.isin(protected, out).all()
    hub_degree = int(np.sum(out // n == 0) + np.sum(out % n == 0))
    assert hub_degree >= 50  # 5 before; at most a few partners collide with existing edges


def test_a_fit_whose_shares_follow_released_degrees_is_certified_by_the_pure_sum(data_dir):
    """dp_bter decides from released degrees whether the sweeps run and where their share goes: its certificate
    states the pure-DP filter bound (the full epsilon), never the smaller composition of the branch taken."""
    from graphrelease.io import read_graph
    from graphrelease.privacy.accountants import ADAPTIVE_FILTER_NOTE, analyse
    from graphrelease.privacy.budget import Budget

    g = read_graph(data_dir / "single" / "cora.npz").data
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
    GENERATORS.get("dp_bter")().fit(g, b)
    res = analyse(b.ledger, 1e-5, "pld")
    assert res.method == ADAPTIVE_FILTER_NOTE and res.epsilon == pytest.approx(1.0, rel=1e-9)


@pytest.mark.slow
def test_cumulative_degree_counts_improve_the_released_degrees_of_a_sparse_graph(data_dir):
    """Seeded (8 fits per share set, the same seeds): on Cora (mean degree 3.9) at epsilon 1 the default shares,
    which release the cumulative degree counts, give released degrees (the sampler's targets) a lower histogram KL
    than the earlier share set without them: the low end of the degree sequence is where the nodes are. Measured
    0.073 vs 0.172 (every default fit below every old one: 0.060-0.114 vs 0.150-0.211). On the sampled graphs the
    gain is no longer measurable since the triangle cap rule (median degree KL 0.153 vs 0.151 over the same fits;
    0.145 vs 0.152 before): the sampler's own spread dominates there, so this test reads the release."""
    graph = load_npz_graph(data_dir, "cora")
    old = {"sorted_degrees": 0.22, "rank_degrees": 0.10, "partition": 0.35, "block_counts": 0.08,
           "edge_count": 0.04, "triangles": 0.18, "components": 0.03}

    medians = {}
    for name, shares in (("default", None), ("old", old)):
        kls = []
        for seed in range(8):
            fitted = DPBTER(fractions=shares, seed=1000 + seed).fit(graph, Budget(epsilon=1.0, delta=1e-6,
                                                                                  adjacency="edge"))
            released = np.rint(fitted.arrays["degrees"]).astype(np.int64)
            kls.append(degree_histogram_kl(graph.degrees(), released))
        medians[name] = float(np.median(kls))
    assert medians["default"] < 0.7 * medians["old"], medians


@pytest.mark.slow
def test_average_clustering_does_not_swing_with_where_the_sampler_stops(data_dir):
    """Seeded (6 fits x 2 samples on Chameleon at epsilon 4; ~15 s). Chameleon's triangle count is nearly flat in the
    affinity-group density while its average clustering goes as density^3; with a 5% triangle tolerance one fit's
    samples stopped early at average-clustering RE 0.12-0.24 while others reached 0.01-0.04. With the 2% tolerance and
    the closest of four measured draws: 0.03-0.13 (the report's permuted ids, as here). Since the single noisy-max
    sweep (more coherent blocks) and the clustering-sum steer, the fits' levels differ more (measured 0.22 / 0.13,
    0.12 / 0.09, 0.04 / 0.06: the first fit's released values sit high) while the two draws of a fit stay within
    0.09 of each other, so the swing (what this test is about) is checked apart from the fit's level.

    The swing is the sampler's, so the fits use the share set this test was calibrated on (partition 0.31, spent as
    given): with SWEEP_SHIFT (partition 0.42) these seeds give swings 0.026 / 0.133 / 0.100. Over seeds 900-905 both
    share sets exceed 0.1 somewhere: as given 0.090 / 0.032 / 0.022 / 0.041 / 0.103 / 0.322, shifted
    0.026 / 0.133 / 0.100 / 0.041 / 0.020 / 0.071 (largest RE 0.396 against 0.217), so the 0.1 bound is seed-fragile
    under either share set and the sampler's swing, not the shares, is what it guards.

    Since the edge count is released first (2026-11-24, session 7; the random stream of every seeded fit moved), the
    same share set over seeds 900-911 gives swings 0.090 / 0.314 / 0.049 / 0.072 / 0.012 / 0.006 / 0.130 / 0.094 /
    0.020 / 0.029 / 0.026 / 0.123 (3 of 12 above 0.1, as 2 of 6 before; errors 0.006-0.361). So the test now reads
    six fits (seeds 900-905) and bounds the MEDIAN swing by 0.1 and the median error by 0.25 (these seeds: 0.060 and
    0.123; the swings' median before the change, from the list above, 0.066), which guards the typical swing without resting on which seeds
    happen to avoid the sampler's occasional wide pair."""
    from graphrelease.graph import Graph

    raw = load_npz_graph(data_dir, "chameleon")
    # The report's permutation of the node ids (benchmarks/bench_structure.py: seed = sum of the name's characters).
    perm = np.random.default_rng(sum(map(ord, "chameleon"))).permutation(raw.num_nodes)
    chameleon, _ = Graph.from_edges(raw.num_nodes, perm[raw.edges])
    truth = float(chameleon.to_igraph().transitivity_avglocal_undirected(mode="zero"))
    errors, swings = [], []
    for seed in range(6):
        fitted = DPBTER(fractions=dict(DEFAULT_FRACTIONS), seed=900 + seed).fit(
            chameleon, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        fit_errors = []
        for draw in range(2):
            g = fitted.sample(1, rng=np.random.default_rng(draw))[0]
            fit_errors.append(abs(float(g.to_igraph().transitivity_avglocal_undirected(mode="zero")) - truth) / truth)
        errors += fit_errors
        swings.append(max(fit_errors) - min(fit_errors))
    assert np.median(swings) < 0.1 and np.median(errors) < 0.25, (errors, swings)


#: The default shares after SWEEP_SHIFT plus its measured-not-adopted degree step (partition 0.58: 0.13 of the
#: sorted degrees' share and 0.03 of the cumulative counts' too), spent as given.
DEGREE_STEP_SHARES = {"sorted_degrees": 0.09, "rank_degrees": 0.10, "cumulative_degrees": 0.02, "partition": 0.58,
                      "block_counts": 0.03, "edge_count": 0.04, "triangles": 0.08, "clustering_sum": 0.03,
                      "components": 0.03}


@pytest.mark.slow
def test_the_sweep_shift_raises_facebook_louvain_nmi(data_dir):
    """Seeded (3 fits x 1 draw per share set, the same seeds): on permuted Facebook at epsilon 1 the default
    shares, which move SWEEP_SHIFT (partition 0.42: block counts, triangles, clustering sum) to the partition when
    the sweeps run, give a higher median Louvain NMI between the input and the synthetic graph than the base shares
    spent as given (partition 0.31). Taking the degree step too (partition 0.58) raises it further; it is not the
    default because it costs degree KL (8 seeded fits: Facebook 0.110 -> 0.132, reports/structure_fidelity.md).
    The triangle count still matches within 10%. These seeds (measured 2026-11-28): 0.347 / 0.343 / 0.362 (degree
    step) against 0.295 / 0.297 / 0.304 (default) against 0.213 / 0.228 / 0.245; ~25 s. Triangles -0.035 / -0.073 /
    -0.017, -0.066 / -0.086 / -0.022 and -0.084 / -0.027 / -0.070: with each block's hubs in their block, every
    group sits at density 1 and the draws stay 5-6% short of the released count on some fits, where the pooled
    hubs' cross-block groups made up the rest (within 5% before; structure log item 22)."""
    from sklearn.metrics import normalized_mutual_info_score as nmi

    from graphrelease.audit.statistics import louvain_partition
    from graphrelease.graph import Graph
    from graphrelease.io import read_graph

    fb = read_graph(data_dir / "raw" / "facebook_combined.txt.gz").data
    perm = np.random.default_rng(11).permutation(fb.num_nodes)
    g, _ = Graph.from_edges(fb.num_nodes, perm[fb.edges])
    louvain = louvain_partition(g, seed=0)
    tri = triangle_count(g)
    scores = {}
    for name, shares in (("degree_step", DEGREE_STEP_SHARES), ("default", None),
                         ("as_given", dict(DEFAULT_FRACTIONS))):
        vals = []
        for seed in range(3):
            fitted = DPBTER(fractions=shares, seed=500 + seed).fit(g, Budget(epsilon=1.0, delta=1e-6,
                                                                              adjacency="edge"))
            (s,) = fitted.sample(1, rng=np.random.default_rng(seed))
            vals.append(nmi(louvain, louvain_partition(s, seed=0)))
            assert abs(triangle_count(s) - tri) <= 0.10 * tri
        scores[name] = vals
    assert np.median(scores["degree_step"]) > np.median(scores["default"]) + 0.03, scores
    assert np.median(scores["default"]) > np.median(scores["as_given"]) + 0.03, scores


def test_a_draw_over_the_released_clustering_sum_is_steered_down_to_it(data_dir):
    """Seeded, Facebook at epsilon 4, each fit's released clustering sum lowered by 15% (the sampler is
    post-processing: any released value is a valid input). Triangle-matched draws then come out over the sum; with
    the steer's old 10% tolerance and its wait for a draw within 2% of the triangle count they mostly stayed there
    (these fits: +5.1% / +9.0% / +13.1%; on the report's permutation, unmodified, average clustering RE 0.076 at
    epsilon 4 against 0.021 at 1). Now they are steered to it (measured -1.3% / +2.5% / +0.6%). ~15 s."""
    from graphrelease.generators.local_clustering import capped_clustering_sum
    from graphrelease.graph import Graph
    from graphrelease.io import read_graph

    fb = read_graph(data_dir / "raw" / "facebook_combined.txt.gz").data
    perm = np.random.default_rng(11).permutation(fb.num_nodes)
    g, _ = Graph.from_edges(fb.num_nodes, perm[fb.edges])
    off = []
    for seed in range(3):
        fitted = DPBTER(seed=900 + seed).fit(g, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        target = 0.85 * float(fitted.arrays["clustering_sum"])
        fitted.arrays["clustering_sum"] = np.array(target)
        (s,) = fitted.sample(1, rng=np.random.default_rng(31 + seed))
        off.append(capped_clustering_sum(s.num_nodes, s.edges, float(fitted.config["clustering_cap"])) / target - 1)
    assert np.mean(np.abs(off)) <= 0.04 and max(off) <= 0.06, off


@pytest.mark.slow
def test_squirrels_low_degree_nodes_get_their_clustering_not_the_cores(data_dir):
    """Seeded, Squirrel at epsilon 1 and 4 (one fit each, ~35 s each): the released clustering sum is within 1% of
    the input's, but the block edges of its dense core give the low-degree nodes around it far more clustering
    whatever the group density (draws 67% over the sum at four group densities), so the release's average clustering
    was 67-70% over at both epsilons (medians of 6 seeded fits on the report's permutation; these fits +0.65 / +0.61,
    triangles -0.06 / -0.14). The rewiring swaps bring it to the sum (these fits -0.06 / +0.04, triangles -0.07 /
    -0.14; the report's: 0.02 / 0.04)."""
    squirrel = load_npz_graph(data_dir, "squirrel")
    g0 = squirrel.to_igraph()
    avg0, tri0 = g0.transitivity_avglocal_undirected(mode="zero"), triangle_count(squirrel)
    for epsilon in (1.0, 4.0):
        fitted = DPBTER(seed=900).fit(squirrel, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
        (s,) = fitted.sample(1, rng=np.random.default_rng(31))
        assert abs(s.to_igraph().transitivity_avglocal_undirected(mode="zero") / avg0 - 1) < 0.15
        assert abs(triangle_count(s) / tri0 - 1) < 0.2


def test_sampled_wedges_follow_the_input_on_a_sparse_graph_with_hubs(data_dir, monkeypatch):
    """Seeded (16 fits each way, paired: the same noise up to the wedge correction; ~5 s). Cora-ML (permuted ids) at
    epsilon 1: its hubs (degree 70-246) are measured by one noisy entry each and the degree dither adds variance,
    so without :func:`~graphrelease.generators.degree_postprocess.debias_wedges` the sampled graph's wedge count sum C(d, 2)
    overstates the input's, and the global clustering 3T/W with it. Measured on these seeds: mean wedge ratio
    1.123 -> 1.022, degree KL 0.117 -> 0.123 (24 seeded fits of the A/B in reports/structure_fidelity.md: +0.006
    +- 0.004, inside the run-to-run spread: sd 0.017 over those fits)."""
    import functools

    import graphrelease.generators.bter as bter_module
    from graphrelease.generators.degree_postprocess import wedge_count
    from graphrelease.generators.dp_stats import release_degrees
    from graphrelease.graph import Graph

    g = load_npz_graph(data_dir, "cora_ml")
    perm = np.random.default_rng(7).permutation(g.num_nodes)
    g, _ = Graph.from_edges(g.num_nodes, perm[g.edges], name="cora_ml")
    w0 = wedge_count(g.degrees())
    out = {}
    for wedges in (False, True):
        monkeypatch.setattr(bter_module, "release_degrees", functools.partial(release_degrees, wedges=wedges))
        rows = []
        for seed in range(16):
            fitted = DPBTER(seed=seed).fit(g, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
            syn = fitted.sample(1, rng=np.random.default_rng(seed))[0]
            rows.append([wedge_count(syn.degrees()) / w0, degree_kl(g.degrees(), syn.degrees())])
        out[wedges] = np.mean(rows, axis=0)
    assert out[False][0] > 1.08, out
    assert abs(out[True][0] - 1.0) < 0.06 and out[True][0] < out[False][0] - 0.05, out
    assert out[True][1] <= out[False][1] + 0.02, out


def test_one_block_release_tells_the_owner_and_the_epsilon_it_names_runs_the_partition(cora):
    """Cora at epsilon 1 is too sparse for the sweeps: the fitted model says so in plain words, from released values,
    with the epsilon from which they run; fitted a little above that epsilon, the sweeps run and the note is gone."""
    import re

    fitted = DPBTER().fit(cora, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
    assert fitted.config["partition"] == "single_block"
    (note,) = fitted.release_notes()
    assert "not to the input's communities" in note
    needed = float(re.search(r"partition runs from epsilon ([0-9.]+)", note).group(1))
    mean_degree = 2.0 * cora.num_edges / cora.num_nodes
    assert needed == pytest.approx(3 * 2.1 / (0.31 * mean_degree), rel=0.05)  # 3 labels at the 0.31 share
    above = DPBTER().fit(cora, Budget(epsilon=1.05 * needed, delta=1e-6, adjacency="edge"))
    assert above.config["partition"] == "degree_ordered_sweeps" and above.release_notes() == []
    below = DPBTER().fit(cora, Budget(epsilon=0.9 * needed, delta=1e-6, adjacency="edge"))
    assert below.config["partition"] == "single_block"  # the note names no epsilon too high either


def test_the_epsilon_the_note_names_runs_the_partition_where_the_edge_count_is_released_twice():
    """A 200-node graph of about 1,600 edges (mean degree 16) has one block at epsilon 1, and at the epsilon from which the
    sweeps run its edge count still takes a second release, which every later share pays for: the note names the
    epsilon at which the paid-for partition share suffices (the rule without that payment named 1.3, where the
    sweeps ran in none of 20 fits; review)."""
    import re

    rng = np.random.default_rng(7)
    n = 200
    pairs = np.stack(np.triu_indices(n, 1), axis=1)
    g, _ = Graph.from_edges(n, pairs[rng.random(len(pairs)) < 1613 / len(pairs)], name="er200")
    fitted = DPBTER(seed=0).fit(g, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
    assert fitted.config["partition"] == "single_block"
    (note,) = fitted.release_notes()
    needed = float(re.search(r"partition runs from epsilon ([0-9.]+)", note).group(1))
    unpaid = 3 * ORDERING_MARGIN / (DEFAULT_FRACTIONS["partition"] * fitted.config["released_mean_degree"])
    assert needed > unpaid
    for seed in range(6):
        above = DPBTER(seed=seed).fit(g, Budget(epsilon=1.05 * needed, delta=1e-6, adjacency="edge"))
        assert above.config["partition"] == "degree_ordered_sweeps", seed
        below = DPBTER(seed=seed).fit(g, Budget(epsilon=0.9 * needed, delta=1e-6, adjacency="edge"))
        assert below.config["partition"] == "single_block", seed
    # Near 490 nodes the root sits where the second release falls to 0, and a fixed-point iteration cycled there and
    # named the unpaid epsilon (second review). At the named epsilon (rounded up to 0.1) the paid share reaches the
    # sweeps' threshold, and 0.1 lower it does not.
    for num_nodes, mean_degree in ((491, 4.0), (491, 3.987), (150, 6.0), (2000, 5.0)):
        config = {"partition": "single_block", "partition_mode": "sweeps", "released_mean_degree": mean_degree,
                  "fractions": dict(DEFAULT_FRACTIONS), "edge_count_top_up": True}
        (note,) = FittedBTER(num_nodes, {}, config).release_notes()
        named = float(re.search(r"partition runs from epsilon ([0-9.]+)", note).group(1))

        def paid_share(eps: float) -> float:
            first = DEFAULT_FRACTIONS["edge_count"]
            extra = edge_count_top_up(first * eps, mean_degree * num_nodes / 2.0, eps)
            return DEFAULT_FRACTIONS["partition"] * (eps * (1.0 - first) - extra) / (1.0 - first)

        assert sweeps_can_separate(paid_share(named), mean_degree), (num_nodes, named)
        assert not sweeps_can_separate(paid_share(named - 0.1), mean_degree), (num_nodes, named)


def test_closures_that_overshoot_the_triangles_flatten_the_groups_on_a_graph_of_cliques():
    """Co-authorship proxy (cliques of 2-6 authors) at epsilon 4: the released triangle count is within 1%, and the
    sampler used to meet the clustering sum with 13-15% too many triangles (closures there add triangles faster than
    clustering), so transitivity got worse from epsilon 1 to 4. Flattening the groups instead meets both."""
    g = proxy_graph("collab0")
    truth = triangle_count(g)
    ratios = []
    for seed in range(3):
        fitted = DPBTER(seed=seed).fit(g, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        assert abs(float(fitted.arrays["triangles"]) / truth - 1.0) < 0.03
        ratios.append(triangle_count(fitted.sample(1, rng=np.random.default_rng(seed))[0]) / truth)
    assert 0.92 < np.median(ratios) < 1.06, ratios  # 1.13-1.16 before


def test_a_secant_step_never_points_away_from_the_triangle_count():
    """E-mail proxy at epsilon 4 (980 nodes, blocks): two draws whose closures differ made the secant ask for 14.8
    times the released count (draws at 1.305 and 1.313 of the input's triangles for 0.99 and 0.66 of it wanted); the
    kept draws then missed the input's triangles by 0.17-0.31 on three of four seeded fits (0.00-0.05 with the
    guard)."""
    g = proxy_graph("email1")
    truth = triangle_count(g)
    errors = []
    for seed in (300, 301, 302, 303):
        fitted = DPBTER(seed=seed).fit(g, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        errors.append(abs(triangle_count(fitted.sample(1, rng=np.random.default_rng(1000 + seed))[0]) / truth - 1))
    assert np.median(errors) < 0.1, errors


def test_closures_chasing_a_noisy_clustering_sum_do_not_move_the_edges_to_the_hubs():
    """1,000-node e-mail proxy at epsilon 1: the released clustering sum's noise is about 27% of the sum, and on these
    seeded fits the draws closed 1-2 wedges per edge chasing it. A closure's ends are mostly hubs (the friendship
    paradox), so the hubs took the edges: wedge count 1.42-1.94x the input's, Louvain modularity RE 0.47-0.54. With at
    most MAX_CLOSURES_PER_EDGE per edge: 1.05-1.17x."""

    def wedges(graph):
        d = graph.degrees().astype(np.float64)
        return float(np.sum(d * (d - 1.0)) / 2.0)

    g = proxy_graph("em1000_0")
    ratios = []
    for seed in (500, 501, 503):
        fitted = DPBTER(seed=seed).fit(g, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
        assert fitted.config["partition"] == "single_block"
        ratios.append(wedges(fitted.sample(1, rng=np.random.default_rng(1000 + seed))[0]) / wedges(g))
    assert max(ratios) < 1.25, ratios  # 1.54 / 1.42 / 1.94 before


def test_one_block_note_without_an_epsilon_when_the_released_mean_degree_is_zero():
    """A graph of a few edges can release an edge count at or below 0 (the count's noise): the release still has
    one block and says so, but names no epsilon (the CLI test on 250 Cora nodes, 46 edges, failed on it)."""
    from graphrelease.generators.bter import FittedBTER

    config = {"partition": "single_block", "partition_mode": "sweeps", "released_mean_degree": 0.0,
              "fractions": dict(DEFAULT_FRACTIONS)}
    (note,) = FittedBTER(10, {"labels": np.zeros(10, dtype=np.int64)}, config).release_notes()
    assert note.startswith("one block:") and "epsilon" in note and "runs from epsilon" not in note
    config["released_mean_degree"] = 4.0
    (note,) = FittedBTER(10, {"labels": np.zeros(10, dtype=np.int64)}, config).release_notes()
    assert note.endswith(f"runs from epsilon {np.ceil(10 * 3 * 2.1 / (0.31 * 4.0)) / 10:.1f}")


def test_the_blocks_hubs_stay_in_their_block_and_the_inputs_communities_show(data_dir):
    """Seeded (3 fits x 1 draw, Chameleon at epsilon 4 on the report's permutation; ~10 s). Each block's top-degree
    nodes form a group inside their block instead of joining a pool of every block's hubs, whose dense groups tied
    the blocks together. The input's own Louvain partition then keeps more of its modularity on the release:
    relative error 0.422 / 0.466 / 0.389 (mean 0.426) with the pool, 0.374 / 0.370 / 0.362 (mean 0.369) without it
    (these seeds, structure log item 21), with the triangle count within 10% (-0.0% / -4.6% / -1.3%)."""
    from graphrelease.audit.statistics import louvain_partition, modularity
    from graphrelease.graph import Graph

    raw = load_npz_graph(data_dir, "chameleon")
    perm = np.random.default_rng(sum(map(ord, "chameleon"))).permutation(raw.num_nodes)
    chameleon, _ = Graph.from_edges(raw.num_nodes, perm[raw.edges])
    members = louvain_partition(chameleon, seed=0)
    truth = modularity(chameleon, members)
    tri = triangle_count(chameleon)
    errors = []
    for seed in range(3):
        fitted = DPBTER(seed=900 + seed).fit(chameleon, Budget(epsilon=4.0, delta=1e-6, adjacency="edge"))
        (s,) = fitted.sample(1, rng=np.random.default_rng(31 + seed))
        errors.append(abs(modularity(s, members) - truth) / truth)
        assert abs(triangle_count(s) - tri) <= 0.1 * tri
    assert np.mean(errors) < 0.4, errors
