"""The audit verdict on real Cora releases: kept/lost wording from the audit's numbers, degenerate flags, privacy
figures beside the certified epsilon, privacy-utility curves; known answers for the pure pieces."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.audit.run import run_audit
from graphrelease.audit.verdict import (
    LOST_MIN, degenerate_flags, degree_kl, graph_shape, log2_binned, privacy_utility_curves, relative_error,
)
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from tests.audit.test_run import make_release_dir, perturbed


@pytest.fixture(scope="module")
def cora(data_dir) -> Graph:
    """The 600 highest-degree Cora nodes: a real citation graph, small enough for a few-second audit."""
    g = read_graph(data_dir / "single" / "cora.npz").data
    return g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:600]))


def _thinned(g: Graph, keep: float, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    return Graph.from_edges(g.num_nodes, g.edges[rng.random(g.num_edges) < keep], name=f"thin{keep}")[0]


def _star(n: int) -> Graph:
    return Graph.from_edges(n, np.array([[0, i] for i in range(1, n)]), name="star")[0]


def _shuffled(g: Graph, seed: int) -> Graph:
    """The same graph on randomly renamed nodes: every statistic of the audit is the input's, its communities are
    somewhere else."""
    perm = np.random.default_rng(seed).permutation(g.num_nodes)
    return Graph.from_edges(g.num_nodes, perm[g.edges], name="shuffled")[0]


def _within_communities(g: Graph) -> Graph:
    """Only the edges inside the input's Louvain communities: the input's communities are stronger on it."""
    from graphrelease.audit.statistics import louvain_partition

    members = louvain_partition(g, seed=0)
    return Graph.from_edges(g.num_nodes, g.edges[members[g.edges[:, 0]] == members[g.edges[:, 1]]],
                            name="sharpened")[0]


@pytest.fixture(scope="module")
def verdict(cora, tmp_path_factory):
    g = cora
    root = tmp_path_factory.mktemp("verdict")
    empty = Graph(g.num_nodes, np.zeros((0, 2), dtype=np.int64), name="empty")
    dirs = [
        make_release_dir(root / "close", [perturbed(g, 0.02, 1)], epsilon=8.0, method="fake"),
        make_release_dir(root / "thin", [_thinned(g, 0.2, 2)], epsilon=1.0, method="fake"),
        make_release_dir(root / "empty", [empty], epsilon=0.1, method="fake"),
        make_release_dir(root / "star", [_star(g.num_nodes)], epsilon=2.0, method="other", guarantee="none"),
        make_release_dir(root / "shuffled", [_shuffled(g, 3)], epsilon=4.0, method="renamed"),
        make_release_dir(root / "sharpened", [_within_communities(g)], epsilon=4.0, method="sharpened"),
    ]
    res = run_audit(g, dirs, tasks=("statistics",), attacks=("link_inference", "membership"))
    return res, {r["label"].split("(")[-1].rstrip(")"): r for r in res.verdict["releases"]}


def test_close_release_is_kept(verdict):
    _, v = verdict
    close = v["close"]
    assert close["flags"] == [] and close["headline"] in ("structure kept", "mostly kept")
    degree = next(i for i in close["items"] if i["what"] == "degree_kl")
    assert degree["status"] == "kept" and degree["release"] < 0.1
    edges = next(i for i in close["items"] if i["what"] == "num_edges")
    assert edges["status"] == "kept" and edges["text"] == "edges +0%"  # perturbation keeps the edge count


def test_thinned_release_loses_triangles_in_plain_words(verdict, cora):
    res, v = verdict
    thin = v["thin"]
    tri = next(i for i in thin["items"] if i["what"] == "triangle_count")
    # the audit's own numbers: relative error of the triangle count between release and original statistics
    orig_tc = res.statistics["original"]["triangle_count"]
    rel_tc = res.statistics[thin["label"]]["triangle_count"]
    assert tri["original"] == orig_tc and tri["release"] == rel_tc
    assert tri["status"] == "lost" and tri["relative_error"] >= LOST_MIN
    assert tri["text"] == f"triangles {(rel_tc - orig_tc) / orig_tc:+.0%}" and tri["text"].startswith("triangles -9")
    comps = next(i for i in thin["items"] if i["what"] == "num_components")
    assert comps["status"] == "lost"
    assert comps["text"] == (f"{res.statistics[thin['label']]['num_components']:,.0f} components instead of "
                             f"{res.statistics['original']['num_components']:,.0f}")
    assert tri["text"] in thin["lost"] and comps["text"] in thin["lost"]
    # lossy but not degenerate: 20% of the edges leave 46% of the nodes isolated, under the 50% of the flag
    assert thin["shape"]["num_edges"] == pytest.approx(0.2 * cora.num_edges, rel=0.15)
    assert thin["shape"]["isolated_fraction"] < 0.5 and thin["flags"] == []


def test_empty_and_star_releases_are_flagged_degenerate(verdict):
    _, v = verdict
    assert v["empty"]["headline"] == "degenerate" and v["empty"]["flags"] == ["empty graph: no edges at all"]
    assert v["star"]["headline"] == "degenerate"
    assert any(f.startswith("giant star: one node touches 100% of the edges") for f in v["star"]["flags"])
    # the close and thin releases keep the input's node set: no node-count flag
    assert not any("node count" in f for r in v.values() for f in r["flags"])


def test_privacy_figures_sit_beside_the_certified_epsilon(verdict):
    res, v = verdict
    for key, eps in (("close", 8.0), ("thin", 1.0), ("empty", 0.1)):
        p = v[key]["privacy"]
        assert p["epsilon"] == eps and p["guarantee"] == "proved"
        atk = res.attacks[v[key]["label"]]
        assert p["link_inference_auc"] == atk["link_inference"]["auc"]
        assert p["membership_advantage"] == pytest.approx(2 * atk["membership_adjacency"]["accuracy"] - 1)
    # a near copy leaks its edges, an empty graph nothing (all scores tie: the advantage is random tie-breaking
    # over 1,207 edges and as many non-edges, standard deviation ~0.02; 0.06 was seen)
    assert v["close"]["privacy"]["membership_advantage"] > 0.9
    assert abs(v["empty"]["privacy"]["membership_advantage"]) < 0.15
    assert v["star"]["privacy"]["guarantee"] == "none"
    # one method at three epsilons gives a curve; "other" (one epsilon, no guarantee) does not
    curves = res.verdict["curves"]
    assert list(curves) == ["fake/sound"] and [p[0] for p in curves["fake/sound"]] == [0.1, 1.0, 8.0]
    errs = [p[1] for p in curves["fake/sound"]]
    assert errs[0] > errs[1] > errs[2]
    assert "kept if" in res.verdict["legend"] and res.to_dict()["verdict"]["thresholds"]["lost_min"] == LOST_MIN


def test_mostly_isolated_flag_needs_a_connected_input():
    orig = {"num_graphs": 1, "num_nodes": 100.0, "num_edges": 300.0, "isolated_fraction": 0.05,
            "top_node_edge_share": 0.1}
    rel = dict(orig, isolated_fraction=0.7)
    assert degenerate_flags(orig, rel) == ["mostly isolated: 70% of the nodes have no edge (input: 5%)"]
    # an input that is itself mostly isolated is not "far fewer"
    assert degenerate_flags(dict(orig, isolated_fraction=0.6), rel) == []
    assert degenerate_flags(orig, dict(orig, num_edges=3000.0)) == ["densified: 10x the input's edges"]
    assert "another node count" in degenerate_flags(orig, dict(orig, num_nodes=90.0))[0]
    assert degenerate_flags(orig, dict(orig, num_nodes=90.0), single_graph=False) == []


def test_graph_shape_and_degree_kl_known_answers():
    star = _star(5)
    s = graph_shape([star, Graph(5, np.zeros((0, 2), dtype=np.int64))])
    assert s["num_edges"] == 2.0 and s["isolated_fraction"] == pytest.approx(0.5) and s["top_node_edge_share"] == 0.5
    # degrees 0,1,2,3,4,5,...: bins {0}, {1}, {2,3}, {4..7}
    assert log2_binned([0.1, 0.2, 0.3, 0.1, 0.2, 0.1]).tolist() == pytest.approx([0.1, 0.2, 0.4, 0.3])
    p = [0.0, 0.5, 0.5]
    assert degree_kl(p, p) == pytest.approx(0.0, abs=1e-9)
    assert degree_kl(p, [1.0]) > 5  # everything isolated vs no isolated node
    assert relative_error(3.0, 0.0, count=True) == 3.0 and relative_error(0.1, 0.2) == pytest.approx(0.5)


def test_curves_need_two_epsilons_of_one_method():
    rows = [{"release": "a", "method": "m", "mode": None, "epsilon": 1.0, "mean_relative_error": 0.5},
            {"release": "b", "method": "m", "mode": None, "epsilon": 1.0, "mean_relative_error": 0.3},
            {"release": "c", "method": "n", "mode": None, "epsilon": 2.0, "mean_relative_error": 0.2}]
    assert privacy_utility_curves(rows) == {}
    rows.append({"release": "d", "method": "m", "mode": None, "epsilon": 4.0, "mean_relative_error": 0.1})
    assert privacy_utility_curves(rows) == {"m": [[1.0, pytest.approx(0.4)], [4.0, 0.1]]}


def test_empirical_lower_bound_beside_the_certified_epsilon(cora, tmp_path):
    """A real `synth` release audited with canary runs: the verdict puts the audit's lower bound beside the
    certificate's epsilon, in the JSON and in the rendered line."""
    from graphrelease.report.render import privacy_line
    from graphrelease.synth import synthesize

    small = cora.induced_subgraph(np.arange(100))
    synthesize(small, method="randomized_response", epsilon=2.0, out=tmp_path / "rel", mode="symmetric",
               key_path=tmp_path / "rel.key", allow_uncertified=True)
    res = run_audit(small, [tmp_path / "rel"], tasks=(), attacks=(), canary_runs=20)
    (emp,) = res.empirical
    (v,) = res.verdict["releases"]
    p = v["privacy"]
    assert p["epsilon"] == pytest.approx(2.0, rel=1e-3)
    assert p["empirical_epsilon_lower"] == emp["epsilon_lower"] and p["empirical_runs"] == 20
    line = privacy_line(p)
    assert line.startswith("certified epsilon 2") and "empirical lower bound on epsilon" in line
    assert "(20 canary runs)" in line


def test_a_release_that_keeps_every_statistic_but_not_the_communities_says_so(verdict):
    """Renamed nodes keep edges, degrees, triangles, clustering, components and paths exactly; the input's Louvain
    communities score about 0 on them, and the verdict must not call that release kept."""
    res, v = verdict
    shuffled, close = v["shuffled"], v["close"]
    by = {i["what"]: i for i in shuffled["items"]}
    for what in ("num_edges", "triangle_count", "avg_clustering", "degree_kl"):
        assert by[what]["status"] == "kept", by[what]
    community = by["input_communities_modularity"]
    orig = res.statistics["original"]["input_communities_modularity"]
    assert orig == pytest.approx(res.statistics["original"]["modularity"])  # the same seeded partition
    assert community["original"] == orig > 0.3 and abs(community["release"]) < 0.05
    assert community["status"] == "lost" and community["text"] in shuffled["lost"]
    assert shuffled["headline"] == "partly kept"
    assert res.statistics[shuffled["label"]]["input_communities_nmi"] < 0.2
    assert abs(res.statistics[shuffled["label"]]["input_communities_ami"]) < 0.05
    assert res.statistics["original"]["input_communities_ami"] == 1.0
    # 2% of the edges moved: the communities stay
    kept = next(i for i in close["items"] if i["what"] == "input_communities_modularity")
    assert kept["status"] == "kept" and res.statistics[close["label"]]["input_communities_nmi"] > 0.6
    assert res.statistics[close["label"]]["input_communities_ami"] > 0.5


def test_stronger_input_communities_are_never_called_lost(verdict):
    res, v = verdict
    item = next(i for i in v["sharpened"]["items"] if i["what"] == "input_communities_modularity")
    assert item["release"] > item["original"] and item["relative_error"] > 0.1
    assert item["status"] == "changed" and item["text"] not in v["sharpened"]["lost"]
