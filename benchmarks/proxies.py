"""Synthetic stand-ins for the kinds of graph issue 15 holds out (an e-mail network, a collaboration network, a
connectome) and BFS balls of the real datasets, for measuring releases beyond the named graphs.

They are built here, seeded, with node ids permuted, and scored with igraph, not with the generators' own code. They
are not the held-out graphs: they have the features that made the held-out graphs hard (many small communities,
clustering from co-authorship cliques, a few hundred nodes with near-uniform degrees). Names for
:func:`proxy_graph`:

* ``email<seed>``: 980 nodes, 40 planted departments, heavy-tailed Chung-Lu weights, 75% of the edges within a
  department (about 14,500 edges, transitivity 0.19, Louvain modularity 0.51).
* ``collab<seed>``: 5,000 authors in 600 groups of Pareto sizes; every author has a paper with its group, and 4,000
  more papers of 2-6 authors (15% with one outsider) become cliques (about 18,000 edges, transitivity 0.41,
  average clustering 0.55, 100+ components).
* ``conn<seed>`` / ``cn<n>_<seed>``: a connectome-like spatial graph, nodes uniform in the unit cube, an edge with
  probability ``exp(-(r / s)^4)`` with ``s`` set for mean degree 9.5 (300 nodes: transitivity 0.40, degree variance
  15-18).
* ``em<n>_<seed>``: the e-mail construction with ``n`` nodes, ``n / 25`` departments and mean degree about 11.
* ``ball_<dataset>_<size>_<seed>``: the first ``size`` nodes of a breadth-first search from a random node of a real
  dataset (induced subgraph).
* ``trans<seed>``: a customer-merchant transaction graph, 200 merchants of Zipf(1.2) popularity and 5,000 customers
  who each buy from Poisson(4) (at least 1) distinct merchants drawn by popularity (about 20,000 edges, no triangle,
  degree assortativity about -0.29); ``trans<merchants>_<customers>_<seed>`` sets the sizes.
* ``core<seed>``: a dense core and a periphery that links to the core only: 100 core nodes at density 0.3 and 3,000
  periphery nodes each linked to 1-3 distinct core nodes drawn uniformly (about 7,500 edges and 5,000-5,800 triangles,
  transitivity 0.04, degree assortativity about -0.66).
* ``cave<caves>_<size>``: networkx's connected caveman graph (``caves`` cliques of ``size`` nodes, one edge of each
  rewired to the next clique); ``ring<cliques>_<size>``: networkx's ring of cliques; ``windmill<copies>_<size>``:
  ``copies`` cliques of ``size`` nodes sharing one node (``windmill200_4``: 800 triangles, 600 of them at the hub of
  degree 600). Node ids permuted (seed 7).
* ``cover_<dataset>``: the bipartite double cover of a real dataset (nodes ``(v, 0)`` and ``(v, 1)``, an edge
  ``(u, 0)-(v, 1)`` for each direction of every edge): triangle-free, with the dataset's degrees twice over and its
  degree assortativity.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrelease.graph import Graph  # noqa: E402


def _graph(n: int, pairs: np.ndarray, permutation_seed: int, name: str) -> Graph:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    keys = np.unique(np.minimum(pairs[:, 0], pairs[:, 1]) * n + np.maximum(pairs[:, 0], pairs[:, 1]))
    perm = np.random.default_rng(permutation_seed).permutation(n)
    g, _ = Graph.from_edges(n, perm[np.stack([keys // n, keys % n], axis=1)], name=name)
    return g


def email(seed: int = 0, n: int = 980, departments: int = 40, edges: int = 26000, within: float = 0.75) -> Graph:
    rng = np.random.default_rng(seed)
    dept = rng.integers(departments, size=n)
    w = rng.pareto(2.0, size=n) + 1.0
    out = []
    inside = int(edges * within * 1.1)
    for d in range(departments):
        members = np.flatnonzero(dept == d)
        if members.size < 2:
            continue
        p = w[members] / w[members].sum()
        k = int(inside * w[members].sum() / w.sum())
        out.append(np.stack([rng.choice(members, size=k, p=p), rng.choice(members, size=k, p=p)], axis=1))
    p = w / w.sum()
    k = int(edges * (1 - within) * 1.1)
    out.append(np.stack([rng.choice(n, size=k, p=p), rng.choice(n, size=k, p=p)], axis=1))
    return _graph(n, np.concatenate(out), seed + 999, f"email{seed}")


def collaboration(seed: int = 0, n: int = 5000, groups: int = 600, papers: int = 4000) -> Graph:
    rng = np.random.default_rng(seed)
    sizes = np.maximum(2, (rng.pareto(1.5, size=groups) * 4 + 2).astype(int))
    group = rng.choice(groups, size=n, p=sizes / sizes.sum())
    members = [np.flatnonzero(group == g) for g in range(groups)]
    activity = rng.pareto(1.8, size=n) + 1.0
    out = []

    def clique(authors: np.ndarray) -> None:
        i, j = np.triu_indices(authors.size, 1)
        out.append(np.stack([authors[i], authors[j]], axis=1))

    for v in range(n):  # every author has a paper with its group
        m = members[group[v]]
        if m.size < 2:
            out.append(np.array([[v, rng.integers(n)]]))
            continue
        clique(np.unique(np.append(rng.choice(m, size=min(m.size, 1 + rng.poisson(1.2))), v)))
    for _ in range(papers):
        m = members[rng.integers(groups)]
        if m.size < 2:
            continue
        k = min(m.size, 2 + rng.poisson(1.2))
        authors = rng.choice(m, size=k, replace=False, p=activity[m] / activity[m].sum())
        if rng.random() < 0.15:
            authors = np.append(authors, rng.integers(n))
        clique(authors)
    return _graph(n, np.concatenate(out), seed + 999, f"collab{seed}")


def connectome(seed: int = 0, n: int = 300, mean_degree: float = 9.5) -> Graph:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    iu = np.triu_indices(n, 1)
    dist = np.linalg.norm(x[iu[0]] - x[iu[1]], axis=1)
    lo, hi = 0.01, 1.0
    for _ in range(40):  # bisection on the length scale for the mean degree
        s = (lo + hi) / 2
        lo, hi = (lo, s) if 2 * np.exp(-(dist / s) ** 4).sum() / n > mean_degree else (s, hi)
    keep = rng.random(dist.size) < np.exp(-(dist / s) ** 4)
    return _graph(n, np.stack([iu[0][keep], iu[1][keep]], axis=1), seed + 999, f"conn{seed}")


def ball(dataset: str, size: int, seed: int) -> Graph:
    import scipy.sparse.csgraph as csgraph
    from bench_structure import load_dataset

    g = load_dataset(dataset)
    start = int(np.random.default_rng(seed).integers(g.num_nodes))
    order = csgraph.breadth_first_order(g.to_csr(), start, directed=False, return_predecessors=False)[:size]
    index = np.full(g.num_nodes, -1, dtype=np.int64)
    index[order] = np.arange(order.size)
    e = index[g.edges]
    return _graph(order.size, e[(e >= 0).all(axis=1)], seed + 999, f"ball_{dataset}")


def from_networkx(graph: Any, permutation_seed: int = 7, name: str = "") -> Graph:
    """A networkx graph as a :class:`Graph` with node ids permuted (seeded), like the proxies above."""
    import networkx as nx

    g = nx.convert_node_labels_to_integers(graph)
    return _graph(g.number_of_nodes(), np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2),
                  permutation_seed, name)


def transactions(seed: int = 0, merchants: int = 200, customers: int = 5000, zipf: float = 1.2,
                 purchases: float = 4.0) -> Graph:
    """``trans<seed>`` of the module docstring: merchants 0..M-1, customers M..M+C-1."""
    rng = np.random.default_rng(3000 + seed)
    popularity = 1.0 / np.arange(1, merchants + 1) ** zipf
    popularity /= popularity.sum()
    pairs = []
    for customer in range(customers):
        count = min(max(int(rng.poisson(purchases)), 1), merchants)
        shops = rng.choice(merchants, size=count, replace=False, p=popularity)
        pairs.append(np.stack([shops, np.full(count, merchants + customer)], axis=1))
    return _graph(merchants + customers, np.concatenate(pairs).astype(np.int64), seed, f"trans{seed}")


def core_periphery(seed: int = 0, core: int = 100, density: float = 0.3, periphery: int = 3000,
                   links: tuple[int, int] = (1, 3)) -> Graph:
    """``core<seed>`` of the module docstring: core nodes 0..core-1."""
    rng = np.random.default_rng(4000 + seed)
    iu, ju = np.triu_indices(core, 1)
    inside = rng.random(iu.size) < density
    pairs = [np.stack([iu[inside], ju[inside]], axis=1)]
    for node in range(core, core + periphery):
        count = int(rng.integers(links[0], links[1] + 1))
        pairs.append(np.stack([rng.choice(core, size=count, replace=False), np.full(count, node)], axis=1))
    return _graph(core + periphery, np.concatenate(pairs).astype(np.int64), seed, f"core{seed}")


def double_cover(dataset: str) -> Graph:
    """``cover_<dataset>`` of the module docstring."""
    from bench_structure import load_dataset

    graph = load_dataset(dataset)
    n, e = graph.num_nodes, graph.edges
    pairs = np.concatenate([np.stack([e[:, 0], e[:, 1] + n], axis=1), np.stack([e[:, 1], e[:, 0] + n], axis=1)])
    return _graph(2 * n, pairs, 7, f"cover_{dataset}")


def is_proxy(name: str) -> bool:
    return (name.rstrip("0123456789") in ("email", "collab", "conn", "trans")
            or name.startswith(("cn", "em", "ball_", "cover_", "trans", "core", "cave", "ring", "windmill")))


def proxy_graph(name: str) -> Graph:
    """The proxy called ``name`` (module docstring)."""
    if name.startswith("cover_"):
        return double_cover(name[len("cover_"):])
    if name.startswith("trans") and "_" in name:
        merchants, customers, seed = (int(x) for x in name[len("trans"):].split("_"))
        return transactions(seed, merchants=merchants, customers=customers)
    if name.startswith(("cave", "ring", "windmill")):
        import networkx as nx

        kind = name.rstrip("0123456789_").rstrip("0123456789")
        first, second = (int(x) for x in name[len(kind):].split("_"))
        build = {"cave": nx.connected_caveman_graph, "ring": nx.ring_of_cliques, "windmill": nx.windmill_graph}[kind]
        return from_networkx(build(first, second), name=name)
    if name.startswith("ball_"):
        dataset, size, seed = name[len("ball_"):].rsplit("_", 2)  # dataset names may hold underscores (cora_ml)
        return ball(dataset, int(size), int(seed))
    if name.startswith(("cn", "em")) and "_" in name:
        size, seed = (int(x) for x in name[2:].split("_"))
        if name.startswith("cn"):
            return connectome(seed, n=size)
        return email(seed, n=size, departments=max(size // 25, 2), edges=size * 7)
    kind = name.rstrip("0123456789")
    seed = int(name[len(kind):] or 0)
    return {"email": email, "collab": collaboration, "conn": connectome, "trans": transactions,
            "core": core_periphery}[kind](seed)
