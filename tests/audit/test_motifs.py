"""Graphlet and orbit counts against brute force (itertools.combinations + networkx isomorphism)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from graphrelease.audit import motifs as mo
from graphrelease.audit import motifs_five as mo5
from graphrelease.errors import OptionError
from graphrelease.graph import Graph

_REF = [nx.Graph(list(g.edges)) for g in mo.GRAPHLETS]


def _signature(h: nx.Graph) -> tuple:
    return h.number_of_nodes(), h.number_of_edges(), tuple(sorted(d for _, d in h.degree()))


_BY_SIGNATURE: dict[tuple, list[int]] = {}
for _i, _r in enumerate(_REF):
    _BY_SIGNATURE.setdefault(_signature(_r), []).append(_i)


def _graph(nxg: nx.Graph) -> Graph:
    return Graph.from_edges(nxg.number_of_nodes(), np.array(list(nxg.edges()), dtype=np.int64).reshape(-1, 2))[0]


def _brute_graphlets(nxg: nx.Graph) -> np.ndarray:
    out = np.zeros(29)
    for k in (3, 4, 5):
        for nodes in itertools.combinations(nxg.nodes(), k):
            sub = nxg.subgraph(nodes)
            if not nx.is_connected(sub):
                continue
            # the signature narrows the candidates; networkx isomorphism decides
            hits = [i for i in _BY_SIGNATURE.get(_signature(sub), []) if nx.is_isomorphic(_REF[i], sub)]
            assert len(hits) == 1  # every connected graph on k nodes is exactly one listed graphlet
            out[hits[0]] += 1
    return out


def _brute_orbits(nxg: nx.Graph) -> np.ndarray:
    n = nxg.number_of_nodes()
    out = np.zeros((n, 15), dtype=np.int64)
    for v in range(n):
        out[v, 0] = nxg.degree(v)
    for k in (3, 4):
        for nodes in itertools.combinations(range(n), k):
            sub = nxg.subgraph(nodes)
            if not nx.is_connected(sub):
                continue
            degs = tuple(sorted(d for _, d in sub.degree()))
            for v in nodes:
                if k == 3:
                    orbit = 3 if sub.number_of_edges() == 3 else (1 if sub.degree(v) == 1 else 2)
                else:
                    orbit = mo._ORBIT_OF[(degs, sub.degree(v))]
                out[v, orbit] += 1
    return out


def test_graphlet_list_is_the_29_connected_graphs() -> None:
    assert len(mo.GRAPHLETS) == 29
    assert [g.size for g in mo.GRAPHLETS] == [3] * 2 + [4] * 6 + [5] * 21
    for a, b in itertools.combinations(_REF, 2):
        assert not nx.is_isomorphic(a, b)
    atlas = [h for h in nx.graph_atlas_g() if 3 <= h.number_of_nodes() <= 5 and nx.is_connected(h)]
    assert len(atlas) == 29
    assert all(any(nx.is_isomorphic(h, r) for r in _REF) for h in atlas)


@pytest.mark.parametrize("n,p,seed", [(13, 0.3, 1), (13, 0.5, 2), (11, 0.75, 3), (16, 0.15, 4)])
def test_graphlet_counts_match_brute_force(n: int, p: float, seed: int) -> None:
    nxg = nx.gnp_random_graph(n, p, seed=seed)
    counts = mo.graphlet_counts(_graph(nxg))
    np.testing.assert_array_equal(counts.counts, _brute_graphlets(nxg))
    assert counts.exact.all()
    np.testing.assert_array_equal(counts.ci_low, counts.counts)


@pytest.mark.parametrize("n,p,seed", [(16, 0.35, 5), (14, 0.7, 6), (20, 0.12, 7)])
def test_orbit_counts_match_brute_force(n: int, p: float, seed: int) -> None:
    nxg = nx.gnp_random_graph(n, p, seed=seed)
    np.testing.assert_array_equal(mo.orbit_counts(_graph(nxg)), _brute_orbits(nxg))


def test_four_node_counts_on_cora_match_igraph_esu(data_dir) -> None:
    """Closed-form 4-node counts vs igraph's ESU enumeration (an independent algorithm) on a real graph."""
    import scipy.sparse as sp

    z = np.load(data_dir / "single" / "cora.npz", allow_pickle=False)
    g = Graph.from_csr(sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]),
                                     shape=tuple(z["adj_shape"])))[0]
    counts = mo.graphlet_counts(g, sizes=(3, 4))
    assert np.isnan(counts.counts[8:]).all()
    ig_graph = g.to_igraph()
    esu = {}
    for k in (3, 4):
        raw = ig_graph.motifs_randesu(size=k)
        for cls, c in enumerate(raw):
            if not np.isnan(c):
                import igraph as ig

                shape = ig.Graph.Isoclass(k, cls)
                idx = [i for i, r in enumerate(_REF) if r.number_of_nodes() == k
                       and nx.is_isomorphic(r, nx.Graph(shape.get_edgelist()))][0]
                esu[idx] = c
    for idx, c in esu.items():
        assert counts.counts[idx] == c, mo.GRAPHLET_NAMES[idx]


def test_rand_esu_start_node_sampling_is_unbiased() -> None:
    """Averaged over seeded batches, the scaled RAND-ESU counts approach the exact ESU counts (fixed seeds, so the
    check is deterministic; the tolerance is about 3 standard errors of the 24-batch mean)."""
    g = _graph(nx.powerlaw_cluster_graph(150, 3, 0.3, seed=11))
    eg = mo5._esu_graph(g)
    exact, _ = mo5._esu(eg, 1.0, 0)
    runs = np.array([mo5._esu(eg, 0.25, seed)[0] for seed in range(24)])
    assert abs(runs.sum(axis=1).mean() - exact.sum()) / exact.sum() < 0.12
    big = exact > 0.05 * exact.sum()
    np.testing.assert_allclose(runs.mean(axis=0)[big], exact[big], rtol=0.3)


def test_time_limited_sampling_reports_itself() -> None:
    g = _graph(nx.powerlaw_cluster_graph(250, 3, 0.3, seed=11))
    sampled = mo.graphlet_counts(g, sizes=(5,), force="sample", time_limit=2.0, seed=3)
    assert not sampled.exact[8:].any() and sampled.exact[:8].sum() == 0
    assert sampled.method[5].startswith(("sampled", "not computed"))
    ok = np.isfinite(sampled.ci_low[8:])
    assert np.all(sampled.ci_low[8:][ok] <= sampled.counts[8:][ok])
    assert np.all(sampled.counts[8:][ok] <= sampled.ci_high[8:][ok])


def test_vectors_and_cosine() -> None:
    star = _graph(nx.star_graph(60))
    v = mo.degree_vector(star)
    assert v.shape == (50,) and v[1] == 60 and v[49] == 1 and v.sum() == 61
    seed_v = mo.seed_degree_vector(star)
    assert seed_v[1] == 60 and seed_v.sum() == 60  # the seed's code drops the hub
    assert mo.cosine_similarity(v, v) == pytest.approx(1.0)
    assert mo.cosine_similarity(v, 3 * v) == pytest.approx(1.0)
    assert mo.cosine_similarity([1, 0], [0, 1]) == 0.0
    assert mo.mean_pairwise_cosine([v, v], [v, 2 * v]) == pytest.approx(1.0)
    with pytest.raises(OptionError):
        mo.mean_pairwise_cosine([v], [])
    with pytest.raises(OptionError):
        mo.graphlet_counts(star, sizes=(6,))


# ---------------------------------------------------------------------------------------------------- lifting sampler
def _top_degree(g: Graph, k: int) -> Graph:
    return g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:k]))


def test_lifting_probabilities_sum_to_one_on_real_molecules(data_dir) -> None:
    """pi(T) summed over every connected 5-node set is 1 on a connected graph (every walk ends in one such set): an
    exhaustive check of the ordering-sum formula, independent of the sampler."""
    from graphrelease.io import read_graph

    mutag = read_graph(data_dir / "collections" / "MUTAG").data
    for g in (mutag[0], mutag[7], mutag[100]):
        nxg = g.to_networkx()
        assert nx.is_connected(nxg)
        sets = np.array([c for c in itertools.combinations(range(g.num_nodes), 5)
                         if nx.is_connected(nxg.subgraph(c))])
        kind, inv = mo5._Lifting5(g)._classify(sets)
        assert (1.0 / inv).sum() == pytest.approx(1.0, abs=1e-9)
        # the graphlet type from the 10-bit code agrees with networkx isomorphism
        for row, k in zip(sets[:40], kind[:40]):
            assert nx.is_isomorphic(nxg.subgraph(row), _REF[k])


def test_lifting_intervals_cover_exact_counts_on_real_graphs(data_dir) -> None:
    """Against exact ESU counts on two real graphs: every 99.9 % interval covers its exact count, and the total is
    within 5 % (fixed seeds; 120,000 samples each)."""
    from graphrelease.io import read_graph

    cora = _top_degree(read_graph(data_dir / "single" / "cora.npz").data, 400)
    lastfm = _top_degree(read_graph(data_dir / "raw" / "lastfm_asia_edges.csv").data, 250)
    for g in (cora, lastfm):
        exact = mo.graphlet_counts(g, sizes=(5,), force="exact").counts[8:]
        mean, lo, hi, drawn = mo5.lifting_counts5(g, time_limit=60.0, confidence=0.999, seed=5, max_samples=120_000)
        assert drawn == 120_000
        assert np.all((lo <= exact) & (exact <= hi)), [mo.GRAPHLET_NAMES[8 + i] for i in
                                                       np.flatnonzero((lo > exact) | (exact > hi))]
        assert abs(mean.sum() - exact.sum()) / exact.sum() < 0.05


@pytest.mark.slow
def test_five_node_estimate_on_facebook_within_the_time_limit(data_dir) -> None:
    import time

    from graphrelease.io import read_graph

    fb = read_graph(data_dir / "raw" / "facebook_combined.txt.gz").data
    t0 = time.perf_counter()
    c = mo.graphlet_counts(fb, sizes=(5,), time_limit=30.0, seed=0)
    assert time.perf_counter() - t0 < 30.0 * 1.1
    assert c.method[5].startswith("sampled (lifting")
    assert np.all(np.isfinite(c.counts[8:])) and np.all(c.counts[8:] > 0)
    assert np.all(c.ci_low[8:] <= c.counts[8:]) and np.all(c.counts[8:] <= c.ci_high[8:])
    # 5-cliques: the most frequent dense graphlet of this ego-network union is estimated to a few per cent
    assert (c.ci_high[28] - c.ci_low[28]) / c.counts[28] < 0.2


def test_lifting_rare_graphlet_claims_no_upper_bound() -> None:
    """One 5-clique hanging off a long path: the lifting sampler rarely hits it, and a normal interval built from
    zero or a few hits would be [0, 0] around a true count of 1. Rare graphlets must claim no upper bound."""
    n = 20_000
    edges = [(i, i + 1) for i in range(n - 1)] + [(n + a, n + b) for a, b in itertools.combinations(range(5), 2)]
    edges.append((0, n))
    g, _ = Graph.from_edges(n + 5, np.array(edges))
    k5 = 20  # index of the 5-clique among the 21 five-node graphlets
    for seed in range(6):
        _, lo, hi, drawn = mo5.lifting_counts5(g, time_limit=60, confidence=0.95, seed=seed, max_samples=5_000)
        assert drawn == 5_000
        assert lo[k5] <= 1.0 <= hi[k5], (seed, lo[k5], hi[k5])
    # the path's graphlet (index 0, a 5-path) is hit in nearly every sample: it keeps a finite interval
    assert np.isfinite(hi[0]) and lo[0] > 0
