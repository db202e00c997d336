"""Original-vs-release comparisons: hand-checked values and independent computations."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.audit import compare as cmp
from graphrelease.audit import statistics as st
from graphrelease.errors import OptionError
from graphrelease.graph import Graph


def _g(nxg: nx.Graph, n: int | None = None) -> Graph:
    n = n or nxg.number_of_nodes()
    return Graph.from_edges(n, np.array(list(nxg.edges()), dtype=np.int64).reshape(-1, 2))[0]


def _cora(data_dir) -> Graph:
    z = np.load(data_dir / "single" / "cora.npz", allow_pickle=False)
    return Graph.from_csr(sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]),
                                        shape=tuple(z["adj_shape"])))[0]


def test_relative_error_edge_cases() -> None:
    assert cmp.relative_error(4.0, 5.0) == 0.25
    assert cmp.relative_error(-2.0, -1.0) == 0.5
    assert cmp.relative_error(0.0, 0.0) == 0.0
    assert cmp.relative_error(0.0, 1.0) == math.inf
    assert math.isnan(cmp.relative_error(float("nan"), 1.0))


def test_identical_graphs_compare_perfectly(data_dir) -> None:
    g = _cora(data_dir)
    stats = st.graph_statistics(g, spectrum=False)
    out = cmp.compare_graphs(g, g, original_stats=stats, released_stats=stats)
    assert set(out) == set(cmp.COMPARISON_LEGEND)
    for key, value in out.items():
        if key.startswith(("rel_err_", "table1_abs_diff_", "degree_")) or key == "eigenvector_mae":
            assert value == pytest.approx(0.0, abs=1e-12), key
    assert out["community_nmi"] == pytest.approx(1.0)
    assert out["community_ami"] == pytest.approx(1.0)
    assert out["eigenvector_top1pct_overlap"] == 1.0


def test_the_adjusted_score_sees_through_fragmentation_that_nmi_rewards(data_dir) -> None:
    # An edgeless release (every node its own Louvain community) and a random relabelling into 300 parts share no
    # community with Cora; NMI still scores them far above 0, the AMI does not.
    g = _cora(data_dir)
    members = st.louvain_partition(g, seed=0)
    empty = cmp.community_agreement(g, Graph(g.num_nodes, np.zeros((0, 2), dtype=np.int64)))
    assert empty["community_nmi"] > 0.5 and abs(empty["community_ami"]) < 1e-6
    random_parts = np.random.default_rng(0).integers(0, 300, g.num_nodes)
    scores = cmp.partition_agreement(members, random_parts)
    assert scores["community_nmi"] > 0.2 and abs(scores["community_ami"]) < 0.02
    # The input's own partition with a tenth of its nodes moved at random keeps most of both.
    moved = members.copy()
    pick = np.random.default_rng(1).random(moved.size) < 0.1
    moved[pick] = np.random.default_rng(2).integers(0, members.max() + 1, pick.sum())
    scores = cmp.partition_agreement(members, moved)
    assert scores["community_ami"] > 0.7 and scores["community_nmi"] > 0.7


def test_perturbed_release_against_independent_values(data_dir) -> None:
    g = _cora(data_dir)
    rng = np.random.default_rng(0)
    keep = rng.random(g.num_edges) > 0.2  # drop ~20% of the edges
    rel = Graph(g.num_nodes, g.edges[keep])
    out = cmp.compare_graphs(g, rel)
    assert out["rel_err_num_edges"] == pytest.approx(abs(keep.sum() - g.num_edges) / g.num_edges)
    t0 = sum(nx.triangles(g.to_networkx()).values()) / 3
    t1 = sum(nx.triangles(rel.to_networkx()).values()) / 3
    assert out["rel_err_triangle_count"] == pytest.approx(abs(t1 - t0) / t0)
    from scipy.stats import ks_2samp, wasserstein_distance

    assert out["degree_wasserstein"] == pytest.approx(wasserstein_distance(g.degrees(), rel.degrees()))
    assert out["degree_ks"] == pytest.approx(ks_2samp(g.degrees(), rel.degrees()).statistic)
    assert out["degree_kl"] > 0
    assert 0.2 < out["community_nmi"] < 1.0
    assert 0.2 < out["community_ami"] < out["community_nmi"]
    assert 0 <= out["eigenvector_top1pct_overlap"] <= 1 and out["eigenvector_mae"] > 0


def test_degree_kl_by_hand() -> None:
    a = _g(nx.path_graph(3))  # degrees 1, 2, 1
    b = _g(nx.complete_graph(3))  # degrees 2, 2, 2
    eps = cmp.DEGREE_KL_EPSILON
    p = np.array([0, 2 / 3, 1 / 3]) + eps
    q = np.array([0, 0, 1.0]) + eps
    p, q = p / p.sum(), q / q.sum()
    out = cmp.degree_distribution_distances(a, b)
    assert out["degree_kl"] == pytest.approx(float(np.sum(p * np.log(p / q))))
    assert out["degree_wasserstein"] == pytest.approx(2 / 3)
    assert out["degree_ks"] == pytest.approx(2 / 3)


def test_table1_removes_isolated_nodes_like_the_seed() -> None:
    tri_plus_isolated = _g(nx.complete_graph(3), n=6)
    t = cmp.table1_statistics(tri_plus_isolated)
    assert t == pytest.approx({"lcc_size": 3, "triangle_count": 1, "cpl": 1.0, "gini": 0.0, "rede": 1.0})
    # whereas the whole-graph statistics count the isolated nodes
    assert st.gini(tri_plus_isolated.degrees()) > 0.4


def test_graph_sets(data_dir) -> None:
    ers = [_g(nx.gnp_random_graph(30, 0.15, seed=s)) for s in range(3)]
    bas = [_g(nx.barabasi_albert_graph(30, 2, seed=s)) for s in range(3)]
    same = cmp.compare_graph_sets(ers, ers)
    assert same["degree_mmd"] == 0.0 and same["table1_mad_triangle_count"] == 0.0
    assert same["degree_cosine"] == pytest.approx(1.0) and same["motif_cosine"] == pytest.approx(1.0)
    diff = cmp.compare_graph_sets(ers, bas)
    t_er = [cmp.table1_statistics(g)["triangle_count"] for g in ers]
    t_ba = [cmp.table1_statistics(g)["triangle_count"] for g in bas]
    assert diff["table1_mad_triangle_count"] == pytest.approx(np.mean(np.abs(np.subtract(t_er, t_ba))))
    assert diff["degree_mmd"] > 0 and diff["motif_cosine"] < 1.0
    assert set(diff) == set(cmp.SET_COMPARISON_LEGEND)
    with pytest.raises(OptionError):
        cmp.compare_graph_sets(ers, bas[:2])
