"""Real-data fixtures for the engine tests: Cora (gnn-benchmark npz) and the first graphs of IMDB-MULTI (TU format).

Loaded directly with numpy so these tests do not depend on the IO readers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.graph import Graph, GraphCollection


def load_npz_graph(path: Path) -> Graph:
    d = np.load(path, allow_pickle=False)
    adj = sp.csr_matrix((d["adj_data"], d["adj_indices"], d["adj_indptr"]), shape=tuple(d["adj_shape"]))
    feats = None
    if "attr_data" in d:
        feats = sp.csr_matrix((d["attr_data"], d["attr_indices"], d["attr_indptr"]), shape=tuple(d["attr_shape"]))
    labels = d["labels"].astype(np.int64) if "labels" in d else None
    g, _ = Graph.from_csr(adj, features=feats, labels=labels, name=path.stem)
    return g


def load_tu_collection(folder: Path, limit: int | None = None) -> GraphCollection:
    name = folder.name
    pairs = np.loadtxt(folder / f"{name}_A.txt", delimiter=",", dtype=np.int64) - 1
    indicator = np.loadtxt(folder / f"{name}_graph_indicator.txt", dtype=np.int64) - 1
    labels = np.loadtxt(folder / f"{name}_graph_labels.txt", dtype=np.int64)
    labels = labels - labels.min()
    count = int(indicator.max()) + 1 if limit is None else min(limit, int(indicator.max()) + 1)
    starts = np.searchsorted(indicator, np.arange(count + 1))
    edge_graph = indicator[pairs[:, 0]]
    graphs = []
    for i in range(count):
        e = pairs[edge_graph == i] - starts[i]
        g, _ = Graph.from_edges(int(starts[i + 1] - starts[i]), e, name=f"{name}_{i}")
        graphs.append(g)
    return GraphCollection(tuple(graphs), labels[:count], name)


@pytest.fixture(scope="session")
def cora(data_dir: Path) -> Graph:
    return load_npz_graph(data_dir / "single" / "cora.npz")


@pytest.fixture(scope="session")
def cora_small(cora: Graph) -> Graph:
    """A connected-ish 240-node piece of Cora (BFS from the highest-degree node), features projected to 32 dims
    by a fixed public random projection (keeps the probes fast; the projection is identical on both sides)."""
    csr = cora.to_csr()
    start = int(np.argmax(cora.degrees()))
    seen, frontier = [start], [start]
    mark = {start}
    while frontier and len(seen) < 240:
        nxt = []
        for u in frontier:
            for v in csr.indices[csr.indptr[u]:csr.indptr[u + 1]]:
                if int(v) not in mark and len(seen) < 240:
                    mark.add(int(v))
                    seen.append(int(v))
                    nxt.append(int(v))
        frontier = nxt
    sub = cora.induced_subgraph(np.array(seen))
    proj = np.random.default_rng(12345).standard_normal((cora.num_features, 32)) / np.sqrt(32)
    x = np.asarray(sub.dense_features(), dtype=np.float64) @ proj
    return sub.replace(features=x.astype(np.float32))


@pytest.fixture(scope="session")
def imdb_small(data_dir: Path) -> GraphCollection:
    return load_tu_collection(data_dir / "collections" / "IMDB-MULTI", limit=60)
