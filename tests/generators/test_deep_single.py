"""DPGVAE / DPGGAN single-graph mode ``measured`` (issue 16): dp_bter's ledger only, the measured structure kept by
the sampler (no isolated core), degree-preserving residual swaps, save/load, and (slow) epsilon 4 not worse than 1
and the 500k-edge time limit."""

from __future__ import annotations

import time

import numpy as np
import pytest

from graphrelease.audit.statistics import triangle_count
from graphrelease.generators import GENERATORS
from graphrelease.generators.bter import DPBTER
from graphrelease.generators.deep_generator import DEFAULT_SINGLE_MODE
from graphrelease.generators.deep_single import FittedMeasuredSingle, residual_swaps, triangle_support
from graphrelease.graph import Graph
from graphrelease.privacy.budget import Budget
from tests.generators.classical_helpers import check_budget_spent_exactly, degree_kl, load_npz_graph, load_slashdot

BTER_STAGES = ["dp_bter.sorted_degrees", "dp_bter.node_degrees", "dp_bter.block_counts", "dp_bter.edge_count",
               "dp_bter.triangles_scale", "dp_bter.triangles", "dp_bter.components"]


@pytest.fixture(scope="module")
def cora(data_dir):
    return load_npz_graph(data_dir, "cora")


def test_default_single_graph_mode_is_measured():
    assert DEFAULT_SINGLE_MODE == "measured"


@pytest.mark.parametrize("method", ["dpgvae", "dpggan"])
def test_fit_spends_only_dp_bter_entries(cora, method):
    """The deep mode's ledger is exactly dp_bter's (measure once, one set of proofs), spent to the budget; the
    sample keeps the measured structure: the buckets sampler left 62% of Cora isolated, this one almost none."""
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    fitted = GENERATORS.get(method)(steps=20, seed=5).fit(cora, budget)  # mode auto = measured for one graph
    assert isinstance(fitted, FittedMeasuredSingle)
    check_budget_spent_exactly(budget, 1.0)
    assert set(fitted.public_assumptions) == {"num_nodes"}
    # the same seed gives dp_bter's own release and ledger: the deep mode reuses its code, not a copy
    twin = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    ref = DPBTER(seed=5).fit(cora, twin)
    assert [e.stage for e in budget.ledger] == [e.stage for e in twin.ledger]
    assert set(BTER_STAGES) <= {e.stage for e in budget.ledger}
    assert all(e.stage.startswith("dp_bter.") for e in budget.ledger)
    for key in ("degrees", "block_counts", "triangles", "components"):
        np.testing.assert_array_equal(fitted.skeleton.arrays[key], ref.arrays[key])
    (g,) = fitted.sample(1, rng=np.random.default_rng(3))
    assert g.num_nodes == cora.num_nodes
    assert np.mean(g.degrees() == 0) < 0.05
    assert abs(g.num_edges - cora.num_edges) < 0.1 * cora.num_edges
    truth = triangle_count(cora)
    assert 0.5 * truth < triangle_count(g) < 2.0 * truth  # buckets made 11x (18,040 for 1,630)


def test_residual_swaps_keep_degrees_and_triangle_edges(data_dir):
    g = load_npz_graph(data_dir, "cora").induced_subgraph(np.arange(800))
    n = g.num_nodes
    e = g.edges
    keys = np.unique(np.minimum(e[:, 0], e[:, 1]) * n + np.maximum(e[:, 0], e[:, 1]))
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, 8))
    out = residual_swaps(n, keys, emb, 1.0, rng)
    assert out.size == keys.size and np.unique(out).size == out.size
    assert np.all(out // n < out % n)  # no self-loops, u < v
    deg = lambda k: np.bincount(np.concatenate([k // n, k % n]), minlength=n)  # noqa: E731
    np.testing.assert_array_equal(deg(out), deg(keys))
    moved = np.setdiff1d(keys, out)
    assert moved.size > 0.05 * keys.size  # swaps happen
    on_triangles = keys[triangle_support(n, keys, np.arange(keys.size)) > 0]
    assert np.isin(on_triangles, out).all()  # edges on triangles are never moved
    # swaps follow the decoder: the moved edges' mean score is below the new edges'
    new = np.setdiff1d(out, keys)
    score = lambda k: np.einsum("ij,ij->i", emb[k // n], emb[k % n]).mean()  # noqa: E731
    assert score(new) > score(moved)


def test_save_load_roundtrip(cora, tmp_path):
    g = cora.induced_subgraph(np.arange(600))
    fitted = GENERATORS.get("dpgvae")(mode="measured", steps=5, residual=0.5).fit(
        g, Budget(epsilon=2.0, delta=1e-6, adjacency="edge"))
    fitted.save(tmp_path)
    again = FittedMeasuredSingle.load(tmp_path)
    a = fitted.sample(1, rng=np.random.default_rng(7))[0]
    b = again.sample(1, rng=np.random.default_rng(7))[0]
    assert a.structurally_equal(b)
    assert again.has_node_latents and again.embeddings(g.num_nodes, np.random.default_rng(0)).shape[0] == 600


def test_old_modes_stay_available(cora):
    g = cora.induced_subgraph(np.arange(300))
    budget = Budget(epsilon=4.0, delta=1e-5, adjacency="edge", accountant="rdp")
    fitted = GENERATORS.get("dpgvae")(mode="buckets", steps=2, bucket_size=100).fit(g, budget)
    assert fitted.config["mode"] == "buckets"
    assert isinstance(fitted.sample(1, rng=np.random.default_rng(0))[0], Graph)


def _median_errors_at_1_and_4(graph, score, *, fits=4, steps=20):
    """Per epsilon in (1, 4): the median over ``fits`` seeded default deep fits (seeds 0, 1, ..., one seeded sample
    each) of ``score(sample)``, a list of errors."""
    errors = {}
    for eps in (1.0, 4.0):
        rows = []
        for seed in range(fits):
            fitted = GENERATORS.get("dpgvae")(steps=steps, seed=seed).fit(
                graph, Budget(epsilon=eps, delta=1e-6, adjacency="edge"))
            rows.append(score(fitted.sample(1, rng=np.random.default_rng(seed))[0]))
        errors[eps] = np.median(np.array(rows), axis=0)
    return errors


@pytest.mark.slow
def test_more_epsilon_is_not_worse(cora):
    """Seeded (4 fits per epsilon, same seeds; ~40 s): the default deep mode's median relative errors of triangles
    and global clustering and its degree KL at epsilon 4 are no worse than at epsilon 1 beyond a 0.05 allowance for
    run-to-run spread."""
    def stats(h):
        d = h.degrees().astype(np.float64)
        t = float(triangle_count(h))
        return t, 3.0 * t / float((d * (d - 1) / 2).sum()), h.degrees()

    truth = stats(cora)

    def score(sample):
        syn = stats(sample)
        return [abs(syn[i] - truth[i]) / truth[i] for i in range(2)] + [degree_kl(truth[2], syn[2])]

    errors = _median_errors_at_1_and_4(cora, score)
    assert np.all(errors[4.0] <= errors[1.0] + 0.05), errors


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dpgvae", "dpggan"])
def test_slashdot_fit_under_2_cpu_minutes(data_dir, method):
    graph = load_slashdot(data_dir)  # 504k edges
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    t0 = time.process_time()
    (g,) = GENERATORS.get(method)().fit(graph, budget).sample(1)
    cpu = time.process_time() - t0
    check_budget_spent_exactly(budget, 1.0)
    assert cpu < 120.0, cpu
    assert abs(g.num_edges - graph.num_edges) <= 0.02 * graph.num_edges


@pytest.mark.slow
def test_more_epsilon_is_not_worse_on_facebook(data_dir):
    """Seeded (8 fits per epsilon, same seeds; ~2 min), Facebook with shuffled ids. Guards the medians of the
    triangle, global and average clustering relative errors and the degree KL: at epsilon 4 no worse than at 1
    beyond 0.02 (0.03 for the average clustering, whose runs spread 0.005-0.15 at both budgets), and the global
    clustering error no worse at all. Before the repeated, triangle-sparing hub repair
    (``affinity.repair_hub_degrees``) the sampled wedges fell 4-6% short of the released ones at the top hubs and
    the global clustering error rose from 0.018 to 0.034 (these 8 seeds; 0.015 -> 0.039 on seeds 0-3, then a strict
    xfail here); measured after: 0.015 -> 0.010. The samples are dp_bter's skeletons (residual 0, checked equal to
    ``DPBTER`` with the same seeds), so 2 training steps give the same scores as 20 and 8 fits fit the time.
    On seeds 0-3 alone the average clustering medians were 0.017 -> 0.067 (10 seeds: 0.022 -> 0.033): spread."""
    import igraph as ig

    from graphrelease.audit.compare import degree_histogram_kl
    from graphrelease.io import read_graph

    fb = read_graph(data_dir / "raw" / "facebook_combined.txt.gz").data
    perm = np.random.default_rng(11).permutation(fb.num_nodes)
    fb, _ = Graph.from_edges(fb.num_nodes, perm[fb.edges], name="facebook")

    def stats(h):
        # audit.compare's definitions (its PGB queries and degree_kl) without its path and community statistics
        d = h.degrees().astype(np.float64)
        t = float(triangle_count(h))
        avg = ig.Graph(n=h.num_nodes, edges=h.edges.tolist()).transitivity_avglocal_undirected(mode="zero")
        return t, 3.0 * t / float((d * (d - 1) / 2).sum()), float(avg)

    truth = stats(fb)

    def score(sample):
        syn = stats(sample)
        return [abs(syn[i] - truth[i]) / truth[i] for i in range(3)] + [degree_histogram_kl(fb.degrees(),
                                                                                            sample.degrees())]

    errors = _median_errors_at_1_and_4(fb, score, fits=8, steps=2)
    assert np.all(errors[4.0] <= errors[1.0] + np.array([0.02, 0.02, 0.03, 0.02])), errors
    assert errors[4.0][1] <= errors[1.0][1], errors
