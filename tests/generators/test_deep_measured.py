"""Deep mode ``measured`` for collections and the per-size densities of mode ``graphs`` (issue 16): sensitivity
probes of every pre-noise query, ledger and proofs, release round trip, and the "more epsilon is not worse"
regressions (seeded fits on real data)."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.audit import motifs
from graphrelease.generators.base import GENERATORS
from graphrelease.generators.deep_conditional import FittedMeasured
from graphrelease.generators.deep_measured import (
    COMPONENT_SENSITIVITY,
    DEGREE_HISTOGRAM_SENSITIVITY,
    EDGE_SENSITIVITY,
    MAX_DEGREE_SENSITIVITY,
    SCALED_TRIANGLE_SENSITIVITY,
    component_count,
    deconvolve_counts,
    degree_histograms,
    graph_degrees,
    max_degrees,
    quantile_degrees,
    scaled_triangles,
    size_classes,
    triangle_count,
    truncate,
    within_graph_variance,
)
from graphrelease.graph import Graph, GraphCollection
from graphrelease.io import read_graph
from graphrelease.privacy.accountants import compute_epsilon
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.proofs import missing_proofs
from graphrelease.testing.probes import assert_within, collection_edge_neighbours, probe_sensitivity


@pytest.fixture(scope="module")
def mutag(data_dir) -> GraphCollection:
    return read_graph(str(data_dir / "collections" / "MUTAG")).data


@pytest.fixture(scope="module")
def imdb_part(data_dir) -> GraphCollection:
    coll = read_graph(str(data_dir / "collections" / "IMDB-MULTI")).data
    return coll.subset(np.sort(np.random.default_rng(0).choice(len(coll), 300, replace=False)))


def test_known_answers():
    k4, _ = Graph.from_edges(5, np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]))
    assert triangle_count(k4) == 4.0 and component_count(k4) == 2  # K4 plus an isolated node
    assert scaled_triangles([k4]).tolist() == [4.0 / 3.0]
    assert truncate(k4, 3).num_edges == 3
    assert max_degrees([k4]).tolist() == [3.0]
    # classes: runs of sizes with >= min graphs, the short tail merged into its predecessor
    assert size_classes(np.array([3, 3, 4, 5, 5, 6]), min_graphs=2).tolist() == [0, 0, 1, 1, 1, 1]
    # quantile degrees of a histogram with all mass at degree 2 (exact bin)
    hist = np.zeros(26)
    hist[2] = 10.0
    assert np.allclose(quantile_degrees(hist, 5), 2.0)


def _histograms(coll: GraphCollection) -> np.ndarray:
    ns = np.array([g.num_nodes for g in coll])
    return degree_histograms(list(coll), size_classes(ns, min_graphs=30))


@pytest.mark.parametrize("query,declared", [
    (lambda c, _r: np.array([float(g.num_edges) for g in c]), EDGE_SENSITIVITY),
    (lambda c, _r: _histograms(c), DEGREE_HISTOGRAM_SENSITIVITY),
    (lambda c, _r: scaled_triangles(list(c)), SCALED_TRIANGLE_SENSITIVITY),
    (lambda c, _r: np.array([float(component_count(g)) for g in c]), COMPONENT_SENSITIVITY),
    (lambda c, _r: max_degrees(list(c)), MAX_DEGREE_SENSITIVITY),
], ids=["edges", "degree_histograms", "scaled_triangles", "components", "max_degrees"])
def test_probe_collection_statistics(mutag, imdb_part, query, declared):
    # MUTAG (sparse, small) and IMDB-MULTI (dense ego networks, where one edge closes up to n - 2 triangles)
    for coll in (mutag, imdb_part.subset(np.arange(120))):
        res = probe_sensitivity(query, coll, collection_edge_neighbours, declared, draws=150,
                                rng=np.random.default_rng(1), norm="l1")
        assert_within(res)


def test_scaled_triangle_bound_is_attained(imdb_part):
    # Edge between two nodes of a clique: removing it opens n - 2 triangles of a complete graph (the bound is tight)
    n = 7
    iu, ju = np.triu_indices(n, 1)
    full = Graph(n, np.stack([iu, ju], 1).astype(np.int64))
    minus = Graph(n, np.stack([iu[1:], ju[1:]], 1).astype(np.int64))
    assert abs(scaled_triangles([full])[0] - scaled_triangles([minus])[0]) == 1.0


def test_measured_fit_ledger_and_round_trip(mutag, tmp_path):
    gen = GENERATORS.get("dpgvae")(mode="measured", steps=60, seed=3)
    budget = Budget(epsilon=1.0, delta=1e-6, adjacency="edge")
    fitted = gen.fit(mutag, budget)
    entries = list(budget.ledger.entries)
    assert [e.mechanism for e in entries] == ["laplace"] * 5
    assert entries[-1].stage == "dpgvae.measured.max_degrees"
    assert missing_proofs(budget.ledger) == []
    assert compute_epsilon(entries, 1e-6, "rdp") == pytest.approx(1.0, rel=1e-6)
    sizes = {g.num_nodes for g in mutag}
    out = fitted.sample(5, rng=np.random.default_rng(0))
    assert all(g.num_nodes in sizes for g in out)
    assert fitted.sample(1, num_nodes=40, rng=np.random.default_rng(0))[0].num_nodes == 40
    fitted.save(tmp_path)
    again = FittedMeasured.load(tmp_path)
    a = fitted.sample_rows([0, 5, 9], rng=np.random.default_rng(7))
    b = again.sample_rows([0, 5, 9], rng=np.random.default_rng(7))
    assert [g.edges.tolist() for g in a] == [g.edges.tolist() for g in b]


def test_measured_refuses_graph_adjacency(mutag):
    from graphrelease.errors import OptionError
    from graphrelease.generators.deep_single import FittedMeasuredSingle

    with pytest.raises(OptionError):
        GENERATORS.get("dpgvae")(mode="measured").fit(mutag, Budget(epsilon=1.0, delta=1e-6, adjacency="graph"))
    with pytest.raises(OptionError):
        GENERATORS.get("dpgvae")(mode="measured").fit(mutag[0], Budget(epsilon=1.0, delta=1e-6, adjacency="graph"))
    # one graph under edge adjacency is the single-graph measured mode (tests/generators/test_deep_single.py)
    fitted = GENERATORS.get("dpgvae")(mode="measured", steps=2).fit(
        mutag[0], Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
    assert isinstance(fitted, FittedMeasuredSingle)


def _degree_cosine(coll: GraphCollection, method: str, mode: str, eps: float, **kw) -> float:
    gen = GENERATORS.get(method)(mode=mode, seed=11, **kw)
    fitted = gen.fit(coll, Budget(epsilon=eps, delta=1e-5, adjacency="edge", accountant="rdp"))
    rng = np.random.default_rng(5)
    idx = np.arange(len(coll))
    out = (fitted.sample_rows(idx, rng=rng) if hasattr(fitted, "sample_rows")
           else [fitted.sample(1, num_nodes=coll[int(i)].num_nodes, rng=rng)[0] for i in idx])
    return motifs.mean_pairwise_cosine([motifs.degree_vector(g) for g in coll],
                                       [motifs.degree_vector(g) for g in out])


@pytest.mark.slow
@pytest.mark.parametrize("mode,kw", [("graphs", {"epochs": 2}), ("measured", {"steps": 300})])
def test_more_epsilon_is_not_worse(imdb_part, mode, kw):
    # Issue 16 regression (seeded, fixed data): the Table 2 degree cosine at epsilon 10 is not below epsilon 1's by
    # more than the run-to-run spread. Measured on this subset, seeds 11-13: graphs 0.496-0.539 at epsilon 1 and
    # 0.509-0.536 at 10 (largest drop 0.010); measured 0.699-0.720 -> 0.788-0.797. Before the per-size densities,
    # mode=graphs went 0.250 -> 0.207 from epsilon 1 to 10 (IMDB-MULTI, 200 evaluated graphs, epochs 2).
    lo = _degree_cosine(imdb_part, "dpgvae", mode, 1.0, **kw)
    hi = _degree_cosine(imdb_part, "dpgvae", mode, 10.0, **kw)
    assert hi >= lo - 0.03, (lo, hi)


def test_probe_graphs_mode_edge_count_vector(mutag, imdb_part):
    """Mode ``graphs`` releases the per-graph edge counts (within the public truncation) with Gaussian noise at L2
    sensitivity 1: the probe reads the very function the fit uses."""
    from graphrelease.generators.deep_generator import truncated_edge_counts

    for coll, cap in ((mutag, 12), (imdb_part.subset(np.arange(120)), 30)):
        res = probe_sensitivity(lambda c, _r: truncated_edge_counts(c, cap), coll, collection_edge_neighbours, 1.0,
                                draws=100, rng=np.random.default_rng(2), norm="l2")
        assert_within(res)
        assert res.max_ratio > 0.99  # one edge inside the truncation moves its graph's count by exactly one


def test_within_graph_variance_is_the_law_of_total_variance(data_dir):
    """Noise-free inputs: the pooled degree variance of a real class minus the between-graph variance of the mean
    degrees is exactly the node-weighted mean of the graphs' own degree variances (IMDB-MULTI, 9-node class)."""
    coll = read_graph(str(data_dir / "collections" / "IMDB-MULTI")).data
    graphs = [g for g in coll if g.num_nodes == 9]
    degs = [g.degrees().astype(np.float64) for g in graphs]
    sizes = np.array([d.size for d in degs], dtype=np.float64)
    means = np.array([d.mean() for d in degs])
    pooled = float(np.concatenate(degs).var())
    within = within_graph_variance(pooled, means, sizes, np.zeros(sizes.size))
    assert np.average(within, weights=sizes) == pytest.approx(np.average([d.var() for d in degs], weights=sizes))
    assert pooled > 3 * np.average(within, weights=sizes)  # why pooled quantiles were too spread on IMDB-MULTI
    # a clique's share of the within variance is zero (binomial form), and degrees keep their sum and range
    assert within[means == 8.0].max(initial=0.0) == 0.0
    d = graph_degrees(np.bincount(np.concatenate(degs).astype(int), minlength=26).astype(float), 9, 30.0, 1.5)
    assert d.sum() == pytest.approx(60.0) and d.min() >= 0 and d.max() <= 8 and d.var() == pytest.approx(1.5, rel=0.2)


def test_deconvolved_edge_counts_beat_raw_counts(data_dir):
    """Seeded: on IMDB-MULTI's real edge counts under Laplace noise of epsilon 0.35 (the measured mode's former edge
    share at epsilon 1; now 0.5), the per-class empirical-Bayes counts have a smaller mean absolute error than the
    clipped raw counts, and the count of every graph stays within [0, C(n, 2)]."""
    coll = read_graph(str(data_dir / "collections" / "IMDB-MULTI")).data
    ns = np.array([g.num_nodes for g in coll], dtype=np.float64)
    m = np.array([g.num_edges for g in coll], dtype=np.float64)
    pairs = ns * (ns - 1) / 2
    noisy = m + np.random.default_rng(7).laplace(0.0, 1 / 0.35, m.size)
    post, var = deconvolve_counts(noisy, pairs, 1 / 0.35, size_classes(ns.astype(np.int64)))
    raw_err = np.abs(np.clip(noisy, 0, pairs) - m).mean()
    assert np.abs(post - m).mean() < 0.8 * raw_err
    assert (post >= 0).all() and (post <= pairs + 1e-9).all() and (var >= 0).all()


def test_sampled_edge_count_is_the_released_one(mutag):
    """Seeded: the sampler draws the released (rounded) edge count, not a Bernoulli number of edges."""
    fitted = GENERATORS.get("dpgvae")(mode="measured", steps=60, seed=3).fit(
        mutag, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    rows = np.arange(20)
    out = fitted.sample_rows(rows, rng=np.random.default_rng(1))
    ns = fitted.stats.num_nodes[rows]
    want = np.clip(np.rint(fitted.stats.edges[rows]), 0, ns * (ns - 1) / 2)
    # exact before the component join, which may add one linking edge per merged component (MUTAG is connected)
    extra = np.array([g.num_edges for g in out]) - want
    assert (extra >= 0).all() and (extra <= fitted.stats.num_nodes[rows] - 1).all() and np.mean(extra == 0) >= 0.5
