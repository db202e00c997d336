"""The measured mode's collection sampler (issue 16): degree caps, triangle-closing swaps and the per-class plan
decided from released values. Real data, seeded; the plan is checked on noise-free inputs (what the released values
estimate) and on one seeded fit per kind of collection."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.audit import motifs
from graphrelease.audit.mmd import clustering_mmd
from graphrelease.generators.base import GENERATORS
from graphrelease.generators.deep_conditional import (
    capped_draw,
    clique_sizes,
    close_triangles,
    ego_draw,
    integer_targets,
)
from graphrelease.generators.deep_measured import (
    degree_histograms,
    gnm_triangles,
    histogram_variance,
    laplace_sum_threshold,
    max_degrees,
    release_collection_stats,
    sampler_plan,
    size_classes,
    triangle_count,
    triangles_present,
)
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.privacy.budget import Budget


def _coll(data_dir, name):
    return read_graph(str(data_dir / "collections" / name)).data


def test_capped_draw_realises_the_degree_targets(data_dir):
    """On ENZYMES's own degree sequences, the capped draw has exactly the requested edge count, every degree within
    its cap, and a within-graph degree variance near the true one, far below what independent edges realise."""
    rng = np.random.default_rng(0)
    graphs = [g for g in _coll(data_dir, "ENZYMES")][:80]
    real_var, capped_var, gnm_var = [], [], []
    for g in graphs:
        n, d = g.num_nodes, np.sort(g.degrees()).astype(np.float64)
        iu = np.stack(np.triu_indices(n, 1))
        caps = integer_targets(d, 2 * g.num_edges, rng)
        assert caps.sum() == 2 * g.num_edges and np.all(np.abs(caps - d) < 1.0 + 1e-9)
        keep = capped_draw(iu, np.full(iu.shape[1], 0.1), caps, g.num_edges, rng)
        assert keep.sum() == g.num_edges
        deg = np.bincount(iu[:, keep].ravel(), minlength=n)
        real_var.append(d.var())
        capped_var.append(deg.var())
        gnm = np.bincount(iu[:, rng.choice(iu.shape[1], g.num_edges, replace=False)].ravel(), minlength=n)
        gnm_var.append(gnm.var())
    # ENZYMES: true mean within-graph variance ~0.95, G(n, m) ~3; the caps keep it (a shortfall only adds a little)
    assert np.mean(capped_var) < np.mean(real_var) + 0.5 < np.mean(gnm_var)


def test_close_triangles_keeps_degrees_and_reaches_the_target():
    rng = np.random.default_rng(3)
    n = 40
    # a random 4-regular-ish graph from the capped draw (few triangles), then close up to 30 triangles
    iu = np.stack(np.triu_indices(n, 1))
    keep = capped_draw(iu, np.ones(iu.shape[1]), np.full(n, 4), 80, rng)
    edges = [(int(a), int(b)) for a, b in iu[:, keep].T]
    before, _ = Graph.from_edges(n, np.array(edges, dtype=np.int64))
    after_edges = close_triangles(n, edges, 30.0, rng)
    after, _ = Graph.from_edges(n, np.array(after_edges, dtype=np.int64))
    assert after.num_edges == before.num_edges
    assert np.array_equal(np.sort(after.degrees()), np.sort(before.degrees()))
    assert triangle_count(before) < 10 <= 30 <= triangle_count(after) <= 32  # one swap adds at most a few


@pytest.mark.parametrize("name,capped,structured,ego", [
    ("ENZYMES", True, True, False),         # valence-bounded proteins with many triangles
    ("MUTAG", True, False, False),          # molecules without triangles (rings of 5 and 6)
    ("IMDB-MULTI", False, False, True),     # ego networks: a hub in every graph, casts as cliques
    ("IMDB-BINARY", False, False, True),
])
def test_sampler_plan_on_noise_free_statistics(data_dir, name, capped, structured, ego):
    graphs = list(_coll(data_dir, name))
    ns = np.array([g.num_nodes for g in graphs])
    classes = size_classes(ns)
    hist = degree_histograms(graphs, classes).reshape(int(classes.max()) + 1, -1)
    pooled = np.array([histogram_variance(h, int(ns[classes == c].max())) for c, h in enumerate(hist)])
    m = np.array([g.num_edges for g in graphs], dtype=np.float64)
    tri = np.array([triangle_count(g) for g in graphs])
    cap, struct, hub = sampler_plan(classes, ns, m, pooled, tri, float(tri.sum()), max_degrees(graphs), 0.0)
    assert cap.all() == capped and (not cap.any()) == (not capped)
    assert struct.all() == structured and (not struct.any()) == (not structured)
    assert hub.all() == ego and (not hub.any()) == (not ego)
    assert np.all(gnm_triangles(ns, m) <= ns * (ns - 1) * (ns - 2) / 6.0 + 1e-9)
    # without the maxima (older callers) no class is drawn as ego networks
    assert not sampler_plan(classes, ns, m, pooled, tri, float(tri.sum()))[2].any()


def test_ego_draw_exact_count_hub_and_triangles(data_dir):
    """Seeded, true counts of 80 IMDB-BINARY graphs: every ego draw has exactly the requested edge count, a node
    linked to all others, one component, and a triangle count far nearer the true one than G(n, m)'s expectation
    (measured with these seeds: mean absolute triangle error 8-12 against 80 for G(n, m) with the true m)."""
    rng = np.random.default_rng(4)
    graphs = list(_coll(data_dir, "IMDB-BINARY"))[:80]
    ours, gnm = [], []
    for g in graphs:
        n, m, t = g.num_nodes, g.num_edges, triangle_count(g)
        keep = ego_draw(n, m, t, rng, np.sort(g.degrees()).astype(np.float64))
        iu = np.stack(np.triu_indices(n, 1))
        out = Graph(n, iu[:, keep].T.astype(np.int64))
        assert out.num_edges == m and out.degrees().max() == n - 1
        ours.append(abs(triangle_count(out) - t))
        gnm.append(abs(float(gnm_triangles(np.array([n]), np.array([m]))[0]) - t))
    assert np.mean(ours) < 0.25 * np.mean(gnm)
    assert ego_draw(10, 8, 0.0, rng) is None  # fewer edges than a hub needs
    # cliques: sizes cover the nodes, respect the smallest size, and match an attainable (edges, triangles) pair
    c = clique_sizes(11, 6 + 21, 4 + 35, np.random.default_rng(0), smallest=3)  # casts of 4 and 7
    assert c.sum() == 11 and c.min() >= 3 and sorted(c.tolist()) == [4, 7]


def _ours_and_gnm_dp(coll, fitted):
    """100 seeded evaluation graphs, their measured counterparts, and G(n, m) with a DP per-graph edge count
    (Laplace 1 / epsilon at epsilon 1) for each."""
    idx = np.sort(np.random.default_rng(0).choice(len(coll), 100, replace=False))
    orig = [coll[int(i)] for i in idx]
    rng = np.random.default_rng(2)
    ours = fitted.sample_rows(idx, rng=rng)
    gnm = []
    for g in orig:
        iu = np.stack(np.triu_indices(g.num_nodes, 1))
        m = int(np.clip(round(g.num_edges + rng.laplace(0.0, 1.0)), 0, iu.shape[1]))
        gnm.append(Graph(g.num_nodes, iu[:, np.sort(rng.choice(iu.shape[1], m, replace=False))].T.astype(np.int64)))
    return orig, ours, gnm


@pytest.mark.slow
def test_measured_beats_gnm_dp_on_enzymes_degree_and_clustering(data_dir):
    """Seeded fit at epsilon 1 (the issue's fix): on 100 ENZYMES graphs the measured counterparts have a higher
    degree cosine and a lower clustering MMD than G(n, m) with a DP per-graph edge count (Laplace 1 / epsilon).
    Measured before the caps and closing (same protocol, 3 runs): degree cosine 0.773 vs 0.794, clustering MMD 0.588
    vs 0.609; after, seeded fits 0-2 on all 600 graphs: 0.898-0.901 vs 0.793-0.798 and 0.12-0.21 vs 0.58-0.59."""
    coll = _coll(data_dir, "ENZYMES")
    fitted = GENERATORS.get("dpgvae")(mode="measured", seed=1).fit(
        coll, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    orig, ours, gnm = _ours_and_gnm_dp(coll, fitted)

    def cos(out):
        return motifs.mean_pairwise_cosine([motifs.degree_vector(g) for g in orig],
                                           [motifs.degree_vector(g) for g in out])

    assert cos(ours) > cos(gnm) + 0.05
    assert clustering_mmd(orig, ours) < clustering_mmd(orig, gnm) - 0.1


@pytest.mark.slow
def test_measured_beats_gnm_dp_on_imdb_structure(data_dir):
    """Seeded fit at epsilon 1 on IMDB-MULTI (ego classes drawn as a hub plus cliques): on 100 graphs the measured
    counterparts beat G(n, m) with a DP per-graph edge count (Laplace 1 / epsilon) on the triangle error, the motif
    cosine and the clustering and orbit MMDs. Before the ego draw (G(n, m)-like classes) these tied: 50.5 vs 53.1,
    0.689 vs 0.680, 0.281 vs 0.295, 0.052 vs 0.054 (3 runs); after, this seeded fit: 18.0 vs 53.4, 0.947 vs 0.669,
    0.021 vs 0.319, 0.0032 vs 0.0575 (its degree cosine, not asserted, was lower: 0.679 vs 0.775). With the
    minimum-Bayes-risk clique sizes: 16.9 vs 54.0, 0.937 vs 0.676, 0.049 vs 0.285, 0.0048 vs 0.0517, degree cosine
    0.800 vs 0.789 (its seeded gain is asserted over 6 releases in
    ``test_ego_clique_sizes_beat_gnm_dp_on_imdb_degree_columns``)."""
    from graphrelease.audit.compare import table1_statistics
    from graphrelease.audit.mmd import orbit_mmd

    coll = _coll(data_dir, "IMDB-MULTI")
    fitted = GENERATORS.get("dpgvae")(mode="measured", seed=1).fit(
        coll, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    assert fitted.stats.ego.all()
    orig, ours, gnm = _ours_and_gnm_dp(coll, fitted)

    def tc(out):
        return np.mean([abs(table1_statistics(a)["triangle_count"] - table1_statistics(b)["triangle_count"])
                        for a, b in zip(orig, out)])

    def motif(out):
        return motifs.mean_pairwise_cosine([motifs.motif_vector(g, time_limit=2.0) for g in orig],
                                           [motifs.motif_vector(g, time_limit=2.0) for g in out])

    assert tc(ours) < 0.6 * tc(gnm)
    assert motif(ours) > motif(gnm) + 0.1
    assert clustering_mmd(orig, ours) < 0.5 * clustering_mmd(orig, gnm)
    assert orbit_mmd(orig, ours) < 0.5 * orbit_mmd(orig, gnm)


def test_laplace_sum_threshold_bounds_the_tail(data_dir):
    """The Chernoff threshold of the triangle-presence test, checked by simulation (seeded, 100,000 sums of Laplace
    noise with MUTAG's weights at epsilon 1's triangle scale): the empirical exceedance rate is below the level, and
    the threshold is not vacuous (below 4 noise standard deviations, a normal tail of 3e-5)."""
    ns = np.array([g.num_nodes for g in _coll(data_dir, "MUTAG")])
    w = ns[ns >= 3] - 2.0
    scale = 1.0 / 0.3
    rng = np.random.default_rng(5)
    for a in (np.ones_like(w), w):
        t = laplace_sum_threshold(a, scale, 0.01)
        sd = np.sqrt(2.0 * np.sum(a ** 2)) * scale
        sums = np.concatenate([rng.laplace(0.0, scale, size=(10_000, a.size)) @ a for _ in range(10)])
        assert np.mean(sums >= t) <= 0.01 and 2.33 * sd < t < 4.0 * sd


def _structured_rate(coll, seeds):
    """Share of seeded releases at epsilon 1 in which some size class is drawn with triangle structure."""
    hits = 0
    for s in seeds:
        b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp")
        st = release_collection_stats(coll, b, np.random.default_rng(s), epsilon=1.0, cap=512, stage="t")
        hits += bool(st.structured.any())
    return hits / len(seeds)


def test_triangle_test_has_no_false_positives_on_mutag(data_dir):
    """Seeded releases at epsilon 1: MUTAG (no triangles) never gets triangle structure (the old one-sd rule: 5 of
    the same 40 seeds, 12.5%; the new test's proved rate is at most 1%)."""
    assert _structured_rate(_coll(data_dir, "MUTAG"), range(40)) == 0.0
    # noise-free input: a triangle-free collection never passes, whatever its size
    ns = np.array([g.num_nodes for g in _coll(data_dir, "MUTAG")])
    assert not triangles_present(np.zeros(int(np.sum(ns >= 3))), ns, 1.0 / 0.3)


@pytest.mark.slow
def test_triangle_test_still_fires_on_enzymes(data_dir):
    """ENZYMES (2.7 times G(n, m)'s triangles) still gets triangle structure in at least 18 of 20 seeded releases at
    epsilon 1 (measured 39 of 40 over seeds 0-39, as with the old rule)."""
    assert _structured_rate(_coll(data_dir, "ENZYMES"), range(20)) >= 0.9


@pytest.mark.slow
def test_ego_clique_sizes_beat_gnm_dp_on_imdb_degree_columns(data_dir):
    """Seeded releases at epsilon 1 (seeds 0-5), the benchmark's 100 evaluated IMDB-MULTI graphs, one ego draw per
    released row: the minimum-Bayes-risk clique sizes beat the old best-fit sizes by far on the degree cosine and
    beat G(n, m) with a DP per-graph edge count (Laplace 1 / epsilon) on the degree cosine and the GINI error, both
    averaged over the seeds. Measured with these seeds: degree cosine 0.806 (old 0.716, G(n, m)-DP 0.788), GINI error
    0.021 (old 0.032, G(n, m)-DP 0.026)."""
    from graphrelease.audit.compare import table1_statistics

    coll = _coll(data_dir, "IMDB-MULTI")
    idx = np.sort(np.random.default_rng(0).choice(len(coll), 100, replace=False))
    orig = [coll[int(i)] for i in idx]
    vec0 = [motifs.degree_vector(g) for g in orig]
    gini0 = [table1_statistics(g)["gini"] for g in orig]

    def scores(graphs):
        return (motifs.mean_pairwise_cosine(vec0, [motifs.degree_vector(g) for g in graphs]),
                float(np.mean([abs(a - table1_statistics(g)["gini"]) for a, g in zip(gini0, graphs)])))

    new, old, gnm = [], [], []
    for seed in range(6):
        st = release_collection_stats(coll, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"),
                                      np.random.default_rng(seed), epsilon=1.0, cap=512, stage="t")
        assert st.ego[idx].all()
        rng = np.random.default_rng(100 + seed)
        for out, inputs in ((new, True), (old, False)):
            drawn = []
            for i in idx:
                n = int(st.num_nodes[i])
                keep = ego_draw(n, st.edges[i], st.triangles[i], rng, st.degree_targets(i),
                                st.ego_inputs(i) if inputs else None)
                drawn.append(Graph(n, np.stack(np.triu_indices(n, 1))[:, keep].T.astype(np.int64)))
            out.append(scores(drawn))
        baseline = []
        for g in orig:
            iu = np.stack(np.triu_indices(g.num_nodes, 1))
            m = int(np.clip(round(g.num_edges + rng.laplace(0.0, 1.0)), 0, iu.shape[1]))
            baseline.append(Graph(g.num_nodes, iu[:, np.sort(rng.choice(iu.shape[1], m, replace=False))].T
                                  .astype(np.int64)))
        gnm.append(scores(baseline))
    new, old, gnm = (np.mean(x, axis=0) for x in (new, old, gnm))
    assert new[0] > old[0] + 0.05 and new[0] > gnm[0] and new[1] < gnm[1] < old[1]


def _geometric_collection(rng: np.random.Generator, count: int):
    """Random geometric graphs (points in the unit square, linked within radius r; mean degree about 5): triangle
    rich, near-binomial degrees, no hub. Not one of the shared collections, whose structured classes are all capped
    (ENZYMES) or ego (IMDB)."""
    from graphrelease.graph import GraphCollection

    graphs = []
    for _ in range(count):
        n = int(rng.integers(20, 45))
        x = rng.random((n, 2))
        d = np.linalg.norm(x[:, None] - x[None], axis=2)
        iu, ju = np.triu_indices(n, 1)
        near = d[iu, ju] < np.sqrt(5.0 / (np.pi * n))
        graphs.append(Graph(n, np.stack([iu[near], ju[near]], 1).astype(np.int64)))
    return GraphCollection(tuple(graphs), name="geometric")


@pytest.mark.slow
def test_structured_classes_without_degree_caps_get_their_triangles_closed():
    """A structured class whose degrees are not sub-binomial used to be drawn from the decoder's probabilities
    alone, which make G(n, m)-like triangle counts (held-out geometric collection at epsilon 1, 300 graphs: per-graph
    triangle error 67.7 against G(n, m)-DP's 69.5, average clustering error 0.47 / 0.48); it now gets the same
    triangle-closing swaps as capped classes (33.5 and 0.12; the shared collections have no such class). Seeded."""
    coll = _geometric_collection(np.random.default_rng(5), 150)
    fitted = GENERATORS.get("dpgvae")(mode="measured", seed=2).fit(
        coll, Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp"))
    assert fitted.stats.structured.any() and not fitted.stats.capped.any()
    out = fitted.sample_rows(np.arange(len(coll)), rng=np.random.default_rng(3))

    def triangles(g: Graph) -> int:
        adj = [set() for _ in range(g.num_nodes)]
        for u, v in g.edges.tolist():
            adj[u].add(v)
            adj[v].add(u)
        return sum(len(adj[u] & adj[v]) for u, v in g.edges.tolist()) // 3

    true, ours = np.array([triangles(g) for g in coll]), np.array([triangles(g) for g in out])
    # G(n, m) at these densities makes about 15% of the true total; the closed draws reach most of it
    assert ours.sum() > 0.6 * true.sum()
