"""Small real graphs for the model tests: induced subgraphs of Cora (shared data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphrelease.graph import Graph


def cora(data_dir: Path) -> Graph:
    from graphrelease.io.npz import read_npz

    return read_npz(data_dir / "single" / "cora.npz")[0]


def small_cora(data_dir: Path, n: int = 200, seed: int = 0) -> Graph:
    """The first ``n`` nodes of a BFS-ish sample of Cora (connected pieces keep edges), features reduced to 64 dims."""
    g = cora(data_dir)
    rng = np.random.default_rng(seed)
    deg = g.degrees()
    start = int(np.argmax(deg))
    csr = g.to_csr()
    seen, frontier = [start], [start]
    mark = {start}
    while frontier and len(seen) < n:
        nxt = []
        for u in frontier:
            for v in csr.indices[csr.indptr[u]:csr.indptr[u + 1]]:
                if int(v) not in mark and len(seen) < n:
                    mark.add(int(v))
                    seen.append(int(v))
                    nxt.append(int(v))
        frontier = nxt
    if len(seen) < n:
        rest = rng.choice(np.setdiff1d(np.arange(g.num_nodes), seen), n - len(seen), replace=False)
        seen += [int(x) for x in rest]
    sub = g.induced_subgraph(np.sort(np.array(seen)))
    feats = sub.dense_features()[:, :64].astype(np.float32)
    return sub.replace(features=feats)
