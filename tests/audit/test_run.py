"""run_audit on real data: release directories, plain graphs, collections, several releases in one table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphrelease.audit.attacks import sample_non_edges
from graphrelease.audit.run import load_release, run_audit
from graphrelease.errors import InputFormatError, OptionError
from graphrelease.graph import Graph, GraphCollection
from graphrelease.io import read_graph, write_graph


def make_release_dir(root: Path, graphs: list[Graph], *, epsilon: float | None, method: str, mode: str = "sound",
                     guarantee: str = "proved", graph_labels: list[int] | None = None) -> Path:
    """A release bundle written by the project's ReleaseWriter (certificate.json, manifest.json, graphs/)."""
    from graphrelease.release import ReleaseWriter

    with ReleaseWriter(root) as w:
        for i, g in enumerate(graphs):
            w.write_graph(f"graphs/graph_{i:03d}.csv", g.without_private_metadata())
        if graph_labels is not None:
            rows = ["graph,label"] + [f"{i},{lab}" for i, lab in enumerate(graph_labels)]
            w.path("graphs/graph_labels.csv").write_text("\n".join(rows) + "\n")
        w.finalize(lambda artifacts: {
            "method": method, "mode": mode, "adjacency": "edge", "epsilon": epsilon, "delta": 1e-6,
            "artifacts": artifacts,
            "guarantee": {"status": guarantee, "reason": "" if guarantee == "proved" else "paper mode"}})
    return root


def random_like(g: Graph, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    empty = Graph(g.num_nodes, np.zeros((0, 2), dtype=np.int64))
    m = min(g.num_edges, g.num_nodes * (g.num_nodes - 1) // 2)
    return Graph.from_edges(g.num_nodes, sample_non_edges(empty, m, rng), name=f"random{seed}")[0]


def perturbed(g: Graph, fraction: float, seed: int) -> Graph:
    """Replace a fraction of the edges by random pairs: utility between a copy and a random graph."""
    rng = np.random.default_rng(seed)
    keep = g.edges[rng.random(g.num_edges) >= fraction]
    extra = sample_non_edges(g, g.num_edges - keep.shape[0], rng)
    return Graph.from_edges(g.num_nodes, np.concatenate([keep, extra]), name=f"perturbed{fraction}")[0]


@pytest.fixture(scope="module")
def citeseer_lcc(data_dir) -> Graph:
    """A mid-sized real graph with features and labels: the 600 highest-degree CiteSeer nodes."""
    g = read_graph(data_dir / "single" / "citeseer.npz").data
    top = np.sort(np.argsort(-g.degrees(), kind="stable")[:600])
    return g.induced_subgraph(top)


def test_several_release_dirs_one_table(tmp_path, citeseer_lcc):
    g = citeseer_lcc
    dirs = [
        make_release_dir(tmp_path / "copy", [g], epsilon=8.0, method="fake"),
        make_release_dir(tmp_path / "half", [perturbed(g, 0.5, 1)], epsilon=1.0, method="fake"),
        make_release_dir(tmp_path / "rand", [random_like(g, 2)], epsilon=0.1, method="fake"),
        make_release_dir(tmp_path / "paper", [perturbed(g, 0.2, 3)], epsilon=2.0, method="paperish", mode="paper",
                         guarantee="none"),
    ]
    res = run_audit(g, dirs, tasks=("statistics", "motifs"), attacks=("link_inference", "membership"))
    assert [r["release"] for r in res.table1] == [load_release(d).label for d in dirs]
    copy, half, rand, paper = res.table1
    assert all(copy[k] == 0.0 for k in ("lcc", "tc", "cpl", "gini", "rede"))
    assert copy["epsilon"] == 8.0 and copy["guarantee"] == "proved"
    # Utility degrades monotonically with the share of randomised edges (triangles are the most fragile).
    assert copy["tc"] < half["tc"] < rand["tc"]
    assert copy["mean_relative_error"] < half["mean_relative_error"] < rand["mean_relative_error"]
    assert paper["guarantee"] == "none" and any("paper" in n for n in res.notes)
    # Motifs: induced 3/4-node graphlets; the copy matches exactly, the random graph has no triangles' share.
    m = res.motifs
    assert m["names"][:2] == ["3-path", "triangle"] and len(m["names"]) == 8
    assert m["releases"][copy["release"]]["motif_cosine"] == pytest.approx(1.0)
    assert m["releases"][copy["release"]]["vector"] == m["original"]
    assert m["releases"][rand["release"]]["motif_cosine"] < m["releases"][half["release"]]["motif_cosine"]
    # Attacks: a verbatim copy leaks everything, a random graph nothing.
    a_copy = res.attacks[copy["release"]]
    a_rand = res.attacks[rand["release"]]
    assert a_copy["membership_adjacency"]["auc"] == 1.0
    assert a_copy["link_inference"]["auc"] == pytest.approx(a_copy["link_inference_reference"]["auc"])
    assert abs(a_rand["membership_adjacency"]["auc"] - 0.5) < 0.05
    assert abs(a_rand["link_inference"]["auc"] - 0.5) < 0.1
    assert not any("manifest" in n for n in res.notes)
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    assert "stat:lcc_size" in d["legend"] and d["degree_histograms"]["original"]


@pytest.mark.slow
def test_downstream_on_single_graph(citeseer_lcc):
    g = citeseer_lcc
    res = run_audit(g, [g.without_private_metadata(), random_like(g, 5)], tasks=("downstream",), attacks=(),
                    fast=True)
    copy, rand = res.downstream.values()
    nc_copy = next(t for t in copy if t["task"] == "node_classification")
    nc_rand = next(t for t in rand if t["task"] == "node_classification")
    assert nc_copy["release_gcn_accuracy"] == pytest.approx(nc_copy["original_gcn_accuracy"])
    assert nc_rand["release_gcn_accuracy"] < nc_copy["release_gcn_accuracy"]
    lp_rand = next(t for t in rand if t["task"] == "link_prediction")
    assert abs(lp_rand["release_auc"] - 0.5) < 0.15


def test_collection_release_with_inherited_labels(tmp_path, data_dir):
    full = read_graph(data_dir / "collections" / "MUTAG").data
    assert isinstance(full, GraphCollection) and full.graph_labels is not None
    # 90 of the 188 graphs keep the GraphRNN MMDs (quadratic in the number of graphs) cheap.
    keep = np.random.default_rng(0).permutation(len(full.graphs))[:90]
    coll = GraphCollection(tuple(full.graphs[i] for i in keep), full.graph_labels[keep], name="MUTAG-90")
    pick = np.arange(0, len(coll.graphs), 2)
    rel = make_release_dir(tmp_path / "syn", [coll.graphs[i] for i in pick], epsilon=1.0, method="fake",
                           graph_labels=[int(coll.graph_labels[i]) for i in pick])
    res = run_audit(coll, [rel], tasks=("statistics", "mmd", "downstream"), attacks=("link_inference",), fast=True)
    (row,) = res.table1
    assert row["lcc"] is not None and row["mean_relative_error"] < 0.2
    (gc,) = res.downstream[row["release"]]
    assert gc["task"] == "graph_classification" and gc["synthetic_graphs"] == pick.size
    assert 0.0 <= gc["synthetic_on_real_accuracy"] <= 1.0
    assert any("structure attacks skipped" in n for n in res.notes)
    # The release is half of the real graphs: every GraphRNN MMD is small but not zero.
    mmds = res.mmd[row["release"]]
    assert set(mmds) == {"degree_mmd", "clustering_mmd", "orbit_mmd"}
    assert all(0.0 <= v < 0.05 for v in mmds.values())
    unlabeled = load_release(make_release_dir(tmp_path / "nolab", [coll.graphs[0]], epsilon=1.0, method="fake"))
    assert unlabeled.graph_labels is None


def test_tampered_release_is_noted(tmp_path, citeseer_lcc):
    rel = make_release_dir(tmp_path / "t", [citeseer_lcc], epsilon=1.0, method="fake")
    with open(rel / "graphs" / "graph_000.csv", "a") as fh:
        fh.write("0,599\n")
    res = run_audit(citeseer_lcc, [rel], tasks=("statistics",), attacks=())
    assert any("does not match its manifest" in n for n in res.notes)


def test_errors(tmp_path, citeseer_lcc):
    with pytest.raises(OptionError):
        run_audit(citeseer_lcc, [citeseer_lcc], tasks=("nonsense",))
    with pytest.raises(OptionError):
        run_audit(citeseer_lcc, [])
    with pytest.raises(InputFormatError):
        load_release(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFormatError, match="graphs/"):
        load_release(tmp_path / "empty")
    bad = make_release_dir(tmp_path / "badlab", [citeseer_lcc], epsilon=1.0, method="x", graph_labels=[0, 1])
    with pytest.raises(InputFormatError, match="graph labels"):
        load_release(bad)


def test_canary_audit_refits_the_release_method(tmp_path, citeseer_lcc):
    """--canary-runs: the method named by the certificate is re-fitted with and without a canary edge."""
    g = citeseer_lcc
    rel = make_release_dir(tmp_path / "rr", [random_like(g, 9)], epsilon=2.0, method="randomized_response",
                           mode="symmetric")
    unknown = make_release_dir(tmp_path / "unk", [random_like(g, 8)], epsilon=1.0, method="no_such_method")
    res = run_audit(g, [rel, unknown], tasks=(), attacks=("link_inference",), canary_runs=200, canary_max_nodes=60,
                    refit_attack=True)
    (e,) = res.empirical
    assert e["runs"] == 200 and e["claimed_epsilon"] == 2.0 and e["guarantee"] == "proved"
    assert e["epsilon_lower"] <= 2.0 and not e["violation"]
    assert "randomized_response/symmetric" in e["label"]
    assert any("canary audit skipped" in n for n in res.notes)
    assert any("60 highest-degree" in n for n in res.notes)
    # The seed's hidden-link protocol on the re-fitted randomized response (eps=2 leaks each cell with likelihood
    # ratio e): weaker than the same attack on the training graph itself, which is well above chance.
    hidden = res.attacks[load_release(rel).label]["link_inference_hidden"]
    assert hidden["hidden_edges"] == round(0.2 * g.num_edges) and hidden["alignment"] == "degree"
    assert 0.4 < hidden["release"]["auc"] < hidden["reference"]["auc"]
    assert hidden["reference"]["auc"] > 0.65
    assert any("hidden-link attack skipped" in n for n in res.notes)


@pytest.mark.slow
def test_node_canary_for_a_node_adjacency_model_release(tmp_path, data_dir):
    """A model release under node adjacency gets a node canary and skips the structure stages. Two runs: this pins
    the wiring, not a bound. Slow: every DP-MLP fit calibrates its noise (about 5 CPU-s)."""
    from graphrelease.train import train_model

    cora = read_graph(data_dir / "single" / "cora.npz").data
    small = cora.induced_subgraph(np.sort(np.argsort(-cora.degrees(), kind="stable")[:60]))
    model_rel = tmp_path / "mlp"
    train_model(small, model_rel, method="dp-mlp", adjacency="node", epsilon=1.0, options={"epochs": 1, "num_classes": 7})
    res = run_audit(small, [model_rel], tasks=("statistics",), attacks=(), canary_runs=2, canary_max_nodes=60)
    (e,) = res.empirical
    assert e["kind"] == "node" and e["attack"] == "log_prob" and e["runs"] == 2
    assert 0.9 < e["claimed_epsilon"] <= 1.0
    assert e["canary"]["label"] >= 0 and "dp-mlp" in e["label"]
    assert res.table1 == [] and any("model release" in n for n in res.notes)


def test_graph_canary_for_a_graph_adjacency_collection_release(tmp_path, data_dir):
    """A collection release under graph adjacency gets a whole-graph canary. Two runs: pins the wiring."""
    from graphrelease.release import ReleaseWriter

    mutag = read_graph(data_dir / "collections" / "MUTAG").data.subset(range(20))
    coll_rel = tmp_path / "gvae"
    with ReleaseWriter(coll_rel) as w:
        for i, g in enumerate(mutag.graphs[:3]):
            w.write_graph(f"graphs/graph_{i:03d}.csv", g.without_private_metadata())
        w.finalize(lambda artifacts: {
            "method": "dpgvae", "mode": "graphs", "privacy_unit": {"adjacency": "graph"}, "epsilon": 1.0,
            "delta": 1e-5, "artifacts": artifacts, "guarantee": {"status": "proved"}})
    res = run_audit(mutag, [coll_rel], tasks=(), attacks=(), canary_runs=2, canary_max_graphs=10)
    (e,) = res.empirical
    assert e["kind"] == "graph" and e["runs"] == 2 and e["claimed_epsilon"] == 1.0
    assert set(e["attacks"]) == {"node_count_probability", "decoder_log_likelihood"}
    assert any("10 of the 20 original graphs" in n for n in res.notes)


def test_a_complete_graph_is_audited_with_the_attacks_skipped_and_said_so():
    # A complete graph has no non-edge: the attacks, the link-prediction task and the edge canaries rank or plant
    # edges against non-edges, so they are skipped with a note and the statistics are still reported.
    n = 30
    g, _ = Graph.from_edges(n, np.stack(np.triu_indices(n, 1), axis=1), name="complete30")
    res = run_audit(g, [g.without_private_metadata()], tasks=("statistics", "downstream"),
                    attacks=("link_inference", "membership"))
    assert any("attacks skipped" in note and "0 non-edges" in note for note in res.notes)
    assert res.table1[0]["tc"] == 0.0
    tasks = {row["task"]: row for row in next(iter(res.downstream.values()))}
    assert "non-edges" in tasks["link_prediction"]["skipped"]


def test_a_triangle_free_input_keeps_the_mean_relative_error_finite():
    # A 12 x 12 grid has no triangle; three diagonals close six, counted as 6 / 1, not 6 / 1e-12 (it was 6e12).
    import networkx as nx

    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(12, 12))
    edges = np.array(list(grid.edges()), dtype=np.int64)
    g, _ = Graph.from_edges(144, edges, name="grid")
    closed, _ = Graph.from_edges(144, np.concatenate([edges, [[0, 13], [1, 14], [2, 15]]]), name="closed")
    res = run_audit(g, [closed], tasks=("statistics",), attacks=())
    (row,) = res.table1
    assert row["tc"] == 6.0 and row["mean_relative_error"] < 2.0
