"""Downstream utility on real data: training on the original reaches the ceiling, on noise it does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.audit.attacks import sample_non_edges
from graphrelease.audit.downstream import (
    graph_classification_utility,
    link_prediction_utility,
    node_classification_utility,
    spectral_embedding,
)
from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection


def _load_npz(path: Path) -> Graph:
    z = np.load(path, allow_pickle=False)
    a = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
    x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=tuple(z["attr_shape"]))
    return Graph.from_csr(a, features=x, labels=z["labels"], name=path.stem)[0]


def load_tu(directory: Path) -> GraphCollection:
    """Minimal TU Dortmund reader for the test (1-based node ids, both directions listed)."""
    name = directory.name
    edges = np.loadtxt(directory / f"{name}_A.txt", delimiter=",", dtype=np.int64) - 1
    indicator = np.loadtxt(directory / f"{name}_graph_indicator.txt", dtype=np.int64) - 1
    labels = np.loadtxt(directory / f"{name}_graph_labels.txt", dtype=np.int64)
    starts = np.searchsorted(indicator, np.arange(labels.size))
    counts = np.bincount(indicator, minlength=labels.size)
    graphs = []
    which = indicator[edges[:, 0]]
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(labels.size + 1))
    for g in range(labels.size):
        e = edges[order[bounds[g]:bounds[g + 1]]] - starts[g]
        graphs.append(Graph.from_edges(int(counts[g]), e, name=f"{name}_{g}")[0])
    return GraphCollection(tuple(graphs), labels, name=name)


def _random_like(g: Graph, rng: np.random.Generator) -> Graph:
    empty = Graph(g.num_nodes, np.zeros((0, 2), dtype=np.int64))
    m = min(g.num_edges, g.num_nodes * (g.num_nodes - 1) // 2)
    return Graph.from_edges(g.num_nodes, sample_non_edges(empty, m, rng))[0]


@pytest.fixture(scope="module")
def cora(data_dir) -> Graph:
    return _load_npz(data_dir / "single" / "cora.npz")


@pytest.mark.slow
def test_graph_classification_real_vs_noise(data_dir):
    full = load_tu(data_dir / "collections" / "IMDB-BINARY")
    assert len(full.graphs) == 1000
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(1000, size=500, replace=False))
    coll = GraphCollection(tuple(full.graphs[i] for i in keep), full.graph_labels[keep], name="imdb-500")
    # "Synthetic" = the real graphs (upper reference) and Erdos-Renyi graphs of the same sizes (no signal).
    same = graph_classification_utility(coll, list(coll.graphs), coll.graph_labels, epochs=10, seed=0)
    noise = graph_classification_utility(coll, [_random_like(g, rng) for g in coll.graphs], coll.graph_labels,
                                         epochs=10, seed=0)
    assert same["real_on_real_accuracy"] > same["majority_class_accuracy"] + 0.1
    assert same["synthetic_on_real_accuracy"] > noise["synthetic_on_real_accuracy"]
    assert noise["real_on_real_accuracy"] == same["real_on_real_accuracy"]
    skipped = graph_classification_utility(coll, list(coll.graphs[:5]), None, epochs=1)
    assert "graph_labels.csv" in skipped["synthetic_skipped"]
    with pytest.raises(OptionError):
        graph_classification_utility(coll, list(coll.graphs[:5]), np.array([0, 1, 0, 1, 7]), epochs=1)


def test_link_prediction_release_vs_random(cora):
    same = link_prediction_utility(cora, cora, seed=1)
    rand = link_prediction_utility(cora, _random_like(cora, np.random.default_rng(1)), seed=1)
    assert same["original_auc"] > 0.7
    assert same["release_auc"] >= same["original_auc"] - 0.02
    assert abs(rand["release_auc"] - 0.5) < 0.06
    small = Graph(10, np.zeros((0, 2), dtype=np.int64))
    assert "skipped" in link_prediction_utility(cora, small)


def test_spectral_embedding_shape(cora):
    emb = spectral_embedding(cora, 8)
    assert emb.shape == (cora.num_nodes, 8) and np.all(np.isfinite(emb))


def test_node_classification_release_vs_random(cora):
    same = node_classification_utility(cora, cora, epochs=40, seed=2)
    rand = node_classification_utility(cora, _random_like(cora, np.random.default_rng(2)), epochs=40, seed=2)
    assert same["release_gcn_accuracy"] == pytest.approx(same["original_gcn_accuracy"])
    assert same["original_gcn_accuracy"] > same["features_only_mlp_accuracy"] + 0.05
    assert rand["release_gcn_accuracy"] < same["original_gcn_accuracy"] - 0.1
    nofeat = Graph(cora.num_nodes, cora.edges)
    assert "skipped" in node_classification_utility(nofeat, cora)
