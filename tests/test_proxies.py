"""The held-out-kind proxies of ``benchmarks/proxies.py`` have the features their docstring promises (issue 15's
held-out measurements depend on them), and the same name always gives the same graph."""

from __future__ import annotations

import sys
from pathlib import Path

import igraph as ig
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from proxies import is_proxy, proxy_graph  # noqa: E402

from graphrelease.audit import statistics as st  # noqa: E402


def _ig(g):
    return ig.Graph(n=g.num_nodes, edges=np.asarray(g.edges).tolist())


@pytest.mark.parametrize("name, nodes, edges, transitivity", [
    ("conn0", 300, (1300, 1600), (0.35, 0.45)),
    ("email0", 980, (13000, 16000), (0.15, 0.25)),
    ("collab0", 5000, (16000, 20000), (0.35, 0.5)),
])
def test_proxy_shape(name, nodes, edges, transitivity):
    g = proxy_graph(name)
    assert is_proxy(name) and g.num_nodes == nodes and edges[0] <= g.num_edges <= edges[1]
    G = _ig(g)
    assert transitivity[0] <= G.transitivity_undirected() <= transitivity[1]
    assert st.modularity(g, st.louvain_partition(g, seed=0)) > 0.45  # communities for the partition measurements
    assert np.array_equal(proxy_graph(name).edges, g.edges)


def test_sized_proxies_and_balls(data_dir):
    small, large = proxy_graph("cn600_1"), proxy_graph("cn1200_1")
    assert (small.num_nodes, large.num_nodes) == (600, 1200)
    assert abs(2 * small.num_edges / 600 - 2 * large.num_edges / 1200) < 1.5  # one mean degree at every size
    b = proxy_graph("ball_cora_400_2")
    assert b.num_nodes == 400 and len(_ig(b).connected_components()) == 1  # a BFS ball is connected
    assert proxy_graph("ball_cora_ml_300_1").num_nodes == 300  # dataset names with underscores
    assert not is_proxy("cora")
