"""Graphlet (motif) counts, per-node orbit counts, and the seed paper's degree / motif vectors.

Counts are of **induced** connected subgraphs: a 5-node set whose induced subgraph is a 5-cycle counts for the
5-cycle only, not for the 5-path it contains.

* Sizes 3 and 4 are always exact and fast: per-node orbit counts (Przulj's orbits 0-14, ORCA numbering) come from
  closed-form non-induced counts (degrees, triangles per node and per edge, 4-cycles and 4-cliques per node) turned
  into induced counts by solving the small triangular system that relates them (the approach of ORCA, Hocevar &
  Demsar, Bioinformatics 2014). Graph-level counts are orbit totals divided by orbit multiplicities.
* Size 5 uses igraph's ESU enumeration (Wernicke, IEEE/ACM TCBB 2006), exact when a pilot run predicts that it
  finishes within ``time_limit``; otherwise the lifting sampler (Paramonov et al., KDD 2019): i.i.d. connected
  5-node sets with exactly computed sampling probabilities, Horvitz-Thompson counts and normal confidence intervals
  (:func:`lifting_counts5`).

The 29 graphlets are listed in :data:`GRAPHLETS` in the order of the seed paper's code ("Secure Deep Graph
Generation with Link Differential Privacy", Yang et al., IJCAI 2021: ``hard_code_motif``), so :func:`motif_vector`
is its 29-dim motif vector.

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g, _ = Graph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3], [0, 3]]))
>>> c = graphlet_counts(g, sizes=(3, 4))
>>> c.as_dict()["4-cycle"], c.as_dict()["3-path"]
(1.0, 4.0)
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from graphrelease.audit.statistics import (
    oriented_triangles,
    degree_order,
    four_cliques_per_node,
    oriented_adjacency,
)
from graphrelease.errors import OptionError
from graphrelease.graph import Graph


@dataclass(frozen=True)
class Graphlet:
    """A connected graphlet: position in the 29-vector, a name, its size and edges on nodes ``0..size-1``."""

    index: int
    name: str
    size: int
    edges: tuple[tuple[int, int], ...]


def _g(index: int, name: str, edges: str) -> Graphlet:
    pairs = tuple((int(a) - 1, int(b) - 1) for a, b in (e.split("-") for e in edges.split()))
    size = max(max(p) for p in pairs) + 1
    return Graphlet(index, name, size, pairs)


#: The 29 connected graphlets on 3-5 nodes, in the seed paper's order.
GRAPHLETS: tuple[Graphlet, ...] = (
    _g(0, "3-path", "1-2 1-3"),
    _g(1, "triangle", "1-2 1-3 2-3"),
    _g(2, "4-path", "1-2 2-3 3-4"),
    _g(3, "3-star", "1-2 2-3 2-4"),
    _g(4, "4-cycle", "1-2 2-3 3-4 4-1"),
    _g(5, "paw (tailed triangle)", "1-2 2-3 3-1 4-3"),
    _g(6, "diamond", "1-2 2-3 3-4 4-1 1-3"),
    _g(7, "4-clique", "1-2 2-3 3-1 1-4 2-4 3-4"),
    _g(8, "5-path", "1-2 2-3 3-4 4-5"),
    _g(9, "chair (fork)", "1-2 2-3 3-4 3-5"),
    _g(10, "4-star", "1-2 2-3 2-4 2-5"),
    _g(11, "bull", "1-2 2-3 3-1 2-4 3-5"),
    _g(12, "triangle with 2-path tail", "1-2 2-3 3-1 3-4 4-5"),
    _g(13, "cricket", "1-2 2-3 3-1 3-4 3-5"),
    _g(14, "5-cycle", "1-2 2-3 3-4 4-5 1-5"),
    _g(15, "banner (4-cycle + pendant)", "1-2 2-3 3-4 4-1 4-5"),
    _g(16, "diamond + pendant at degree-3 node", "1-2 2-3 3-4 4-1 1-3 3-5"),
    _g(17, "bowtie", "1-2 2-3 3-1 3-4 4-5 3-5"),
    _g(18, "diamond + pendant at degree-2 node", "1-2 2-3 3-1 2-4 3-4 4-5"),
    _g(19, "K2,3", "1-2 1-3 1-4 2-5 3-5 4-5"),
    _g(20, "house", "1-2 2-3 3-1 2-4 3-5 4-5"),
    _g(21, "book K1,1,3", "1-2 2-3 3-4 4-1 1-3 1-5 3-5"),
    _g(22, "4-clique + pendant", "1-2 2-3 3-1 1-4 2-4 3-4 1-5"),
    _g(23, "gem minus an edge (house + chord)", "1-2 2-3 3-4 4-1 1-3 1-5 2-5"),
    _g(24, "K2,3 + edge", "1-2 1-3 1-4 2-5 3-5 4-5 2-3"),
    _g(25, "W4 wheel", "1-2 2-3 3-4 4-1 1-3 1-5 3-5 2-5"),
    _g(26, "gem (fan)", "1-2 1-3 1-4 2-5 3-5 4-5 2-3 3-4"),
    _g(27, "5-clique minus an edge", "1-2 2-3 3-4 4-1 1-3 1-5 3-5 2-5 4-5"),
    # the seed's code lists "1-2 1-3 2-3 2-4 3-4 2-4 1-5 2-5 3-5 4-5" here: edge 2-4 twice and no 1-4, which is
    # the 5-clique minus an edge again (a duplicate of index 27), so the seed never counts 5-cliques. This is K5.
    _g(28, "5-clique", "1-2 1-3 1-4 2-3 2-4 3-4 1-5 2-5 3-5 4-5"),
)
GRAPHLET_NAMES: tuple[str, ...] = tuple(g.name for g in GRAPHLETS)
_SIZE_SLICES = {3: slice(0, 2), 4: slice(2, 8), 5: slice(8, 29)}

#: Per-node orbits of the 2-4-node graphlets in ORCA / Przulj numbering: (graphlet, node degree in it).
ORBIT_LEGEND: tuple[str, ...] = (
    "0: edge endpoint (degree)",
    "1: end of 3-path", "2: middle of 3-path", "3: triangle node",
    "4: end of 4-path", "5: inner node of 4-path", "6: leaf of 3-star", "7: centre of 3-star",
    "8: 4-cycle node", "9: paw tail end", "10: paw triangle node of degree 2", "11: paw node of degree 3",
    "12: diamond node of degree 2", "13: diamond node of degree 3", "14: 4-clique node",
)
# (sorted degree sequence of the 4-node graphlet, degree of the node) -> orbit
_ORBIT_OF = {
    ((1, 1, 2, 2), 1): 4, ((1, 1, 2, 2), 2): 5, ((1, 1, 1, 3), 1): 6, ((1, 1, 1, 3), 3): 7,
    ((2, 2, 2, 2), 2): 8, ((1, 2, 2, 3), 1): 9, ((1, 2, 2, 3), 2): 10, ((1, 2, 2, 3), 3): 11,
    ((2, 2, 3, 3), 2): 12, ((2, 2, 3, 3), 3): 13, ((3, 3, 3, 3), 3): 14,
}
# orbits per 4-node graphlet: (graphlet index in GRAPHLETS, orbit, multiplicity of the orbit in the graphlet)
_ORBIT_TOTALS = {2: (4, 2), 3: (7, 1), 4: (8, 4), 5: (11, 1), 6: (13, 2), 7: (14, 4)}


def _orbit_of_4(edges: list[tuple[int, int]], node: int) -> int | None:
    deg = [0, 0, 0, 0]
    for a, b in edges:
        deg[a] += 1
        deg[b] += 1
    return _ORBIT_OF.get((tuple(sorted(deg)), deg[node]))


def _is_connected_4(edges: list[tuple[int, int]]) -> bool:
    seen, stack = {0}, [0]
    while stack:
        x = stack.pop()
        for a, b in edges:
            for p, q in ((a, b), (b, a)):
                if p == x and q not in seen:
                    seen.add(q)
                    stack.append(q)
    return len(seen) == 4


def _noninduced_matrix() -> np.ndarray:
    """``M[x, y]``: in a graphlet where node v has orbit y, the number of connected spanning subgraphs (same 4 nodes,
    a subset of the edges) in which v has orbit x. Per node, non-induced orbit counts are ``M @ induced`` (orbits
    4-14); ``M`` is unit upper-triangular in edge order, so the system is always solvable."""
    m = np.zeros((11, 11), dtype=np.int64)
    for gl in GRAPHLETS[2:8]:
        edges = list(gl.edges)
        seen: set[int] = set()
        for v in range(4):
            y = _orbit_of_4(edges, v)
            if y in seen:  # one representative node per orbit
                continue
            seen.add(y)
            for r in range(3, len(edges) + 1):
                for sub in itertools.combinations(edges, r):
                    if _is_connected_4(list(sub)):
                        m[_orbit_of_4(list(sub), v) - 4, y - 4] += 1
    return m


_NONINDUCED = _noninduced_matrix()


# ---------------------------------------------------------------------------------------------------- per-node counts
def _edge_index(graph: Graph, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row of each (unordered) pair in ``graph.edges`` (pairs must be edges)."""
    n = np.int64(graph.num_nodes)
    keys = graph.edges[:, 0] * n + graph.edges[:, 1]
    q = np.minimum(u, v) * n + np.maximum(u, v)
    return np.searchsorted(keys, q)


def four_cycles_per_node(graph: Graph) -> np.ndarray:
    """Number of 4-cycles (not necessarily induced) through each node.

    Every 4-cycle is enumerated once as ``v - u - w`` paths from its highest-ranked node ``v`` (degree order) to the
    opposite node ``w`` through middles ``u`` with ``rank(u), rank(w) < rank(v)``: a pair ``(v, w)`` with ``c`` such
    middles closes ``C(c, 2)`` cycles, each of which contains ``v`` and ``w``, and each middle lies on ``c - 1`` of them.
    """
    n = graph.num_nodes
    out = np.zeros(n, dtype=np.int64)
    if graph.num_edges < 4:
        return out
    rank = degree_order(graph)
    lower = oriented_adjacency(graph).T.tocsr()  # lower[v, u] = 1 iff u ~ v, rank(u) < rank(v)
    adj = graph.to_csr()
    a_ptr, a_idx = adj.indptr.astype(np.int64), adj.indices.astype(np.int64)
    lc = lower.tocoo()
    vu = np.stack([lc.row.astype(np.int64), lc.col.astype(np.int64)], axis=1)
    vu = vu[np.argsort(vu[:, 0], kind="stable")]
    deg = np.diff(a_ptr)
    # chunks end at boundaries between different v, so that each (v, w) pair is complete in one chunk
    for part in _chunks_whole_rows(vu, deg[vu[:, 1]], 4_000_000):
        v, u = part[:, 0], part[:, 1]
        counts = deg[u]
        rep = np.repeat(np.arange(part.shape[0]), counts)
        offs = np.arange(rep.size) - np.repeat(np.cumsum(counts) - counts, counts)
        w = a_idx[np.repeat(a_ptr[u], counts) + offs]
        vv = v[rep]
        keep = rank[w] < rank[vv]
        vv, uu, w = vv[keep], u[rep][keep], w[keep]
        key = vv * np.int64(n) + w
        uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        pairs = cnt * (cnt - 1) // 2
        out += np.bincount(uniq // n, weights=pairs, minlength=n).astype(np.int64)
        out += np.bincount(uniq % n, weights=pairs, minlength=n).astype(np.int64)
        out += np.bincount(uu, weights=cnt[inv] - 1, minlength=n).astype(np.int64)
    return out


def _chunks_whole_rows(vu: np.ndarray, work: np.ndarray, budget: int):
    """Chunks of the (v, u) rows (sorted by v) that never split one v across two chunks."""
    cum = np.cumsum(work)
    start = 0
    total = vu.shape[0]
    while start < total:
        target = (cum[start - 1] if start else 0) + budget
        stop = int(np.searchsorted(cum, target, side="right"))
        stop = max(stop, start + 1)
        if stop < total:
            # extend to the end of the current v
            stop = int(np.searchsorted(vu[:, 0], vu[stop - 1, 0], side="right"))
        yield vu[start:stop]
        start = stop


def orbit_counts(graph: Graph) -> np.ndarray:
    """Per-node counts of the 15 orbits of the 2-4-node graphlets, ``(num_nodes, 15)`` int64, ORCA column order.

    Column ``k`` of row ``v`` is the number of induced connected subgraphs on 2-4 nodes in which ``v`` occupies orbit
    ``k`` (see :data:`ORBIT_LEGEND`). This is what ORCA computes and what GraphRNN's orbit MMD uses.
    """
    n = graph.num_nodes
    d = graph.degrees().astype(np.int64)
    out = np.zeros((n, 15), dtype=np.int64)
    out[:, 0] = d
    if graph.num_edges == 0:
        return out
    adj = graph.to_csr().astype(np.int64)
    tri = oriented_triangles(graph)
    t = np.bincount(tri.ravel(), minlength=n).astype(np.int64)
    # triangles per edge
    s = np.zeros(graph.num_edges, dtype=np.int64)
    if tri.shape[0]:
        for i, j in ((0, 1), (0, 2), (1, 2)):
            s += np.bincount(_edge_index(graph, tri[:, i], tri[:, j]), minlength=graph.num_edges)
    e0, e1 = graph.edges[:, 0], graph.edges[:, 1]

    def per_node_over_edges(val_for_0: np.ndarray, val_for_1: np.ndarray) -> np.ndarray:
        return (np.bincount(e0, weights=val_for_0, minlength=n) + np.bincount(e1, weights=val_for_1, minlength=n)
                ).round().astype(np.int64)

    s1 = adj @ (d - 1)  # sum of (d_u - 1) over neighbours
    out[:, 1] = s1 - 2 * t
    out[:, 2] = d * (d - 1) // 2 - t
    out[:, 3] = t
    non = np.zeros((n, 11), dtype=np.int64)
    non[:, 0] = adj @ s1 - d * (d - 1) - 2 * t  # orbit 4
    non[:, 1] = (d - 1) * s1 - 2 * t  # orbit 5
    non[:, 2] = adj @ ((d - 1) * (d - 2) // 2)  # orbit 6
    non[:, 3] = d * (d - 1) * (d - 2) // 6  # orbit 7
    non[:, 4] = four_cycles_per_node(graph)  # orbit 8
    non[:, 5] = per_node_over_edges(t[e1] - s, t[e0] - s)  # orbit 9
    non[:, 7] = t * (d - 2)  # orbit 11
    non[:, 9] = per_node_over_edges(s * (s - 1) / 2, s * (s - 1) / 2)  # orbit 13
    if tri.shape[0]:
        a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
        dsum = d[a] + d[b] + d[c]
        for x in (a, b, c):  # orbit 10: the other two triangle nodes each carry (d - 2) tails
            non[:, 6] += np.bincount(x, weights=dsum - d[x] - 4, minlength=n).round().astype(np.int64)
        s_ab = s[_edge_index(graph, a, b)]
        s_ac = s[_edge_index(graph, a, c)]
        s_bc = s[_edge_index(graph, b, c)]
        for x, opp in ((a, s_bc), (b, s_ac), (c, s_ab)):  # orbit 12: the opposite edge's other triangles
            non[:, 8] += np.bincount(x, weights=opp - 1, minlength=n).round().astype(np.int64)
        non[:, 10] = four_cliques_per_node(graph, triangles=tri)  # orbit 14
    induced = np.linalg.solve(_NONINDUCED.astype(np.float64), non.T.astype(np.float64)).T
    out[:, 4:] = np.rint(induced).astype(np.int64)
    return out


# ---------------------------------------------------------------------------------------------------- graph level
@dataclass(frozen=True)
class GraphletCounts:
    """Induced counts of the 29 graphlets with confidence intervals (equal to the count where exact).

    Sizes not requested are NaN. ``method`` says per size how it was computed; ``seconds`` per size too.
    """

    counts: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    exact: np.ndarray
    method: dict[int, str] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)
    confidence: float = 0.95

    def as_dict(self) -> dict[str, float]:
        return {name: float(c) for name, c in zip(GRAPHLET_NAMES, self.counts)}


def graphlet_counts(graph: Graph, *, sizes: tuple[int, ...] = (3, 4, 5), time_limit: float = 60.0,
                    confidence: float = 0.95, seed: int = 0, force: str | None = None) -> GraphletCounts:
    """Induced counts of the connected 3-, 4- and 5-node graphlets (see the module docstring for the methods).

    Parameters
    ----------
    sizes:
        Which graphlet sizes to count (others are NaN).
    time_limit:
        Seconds allowed for the 5-node count. Exact ESU runs when a pilot predicts it fits; otherwise RAND-ESU
        sampling uses the time (the pilot included) and reports a ``confidence`` interval.
    seed:
        Seeds the sampling (igraph's generator is restored afterwards).
    force:
        ``"exact"`` or ``"sample"`` to override the choice for size 5.
    """
    for k in sizes:
        if k not in _SIZE_SLICES:
            raise OptionError(f"graphlet size {k} is not supported: choose from 3, 4, 5")
    if force not in (None, "exact", "sample"):
        raise OptionError(f"force={force!r}: use 'exact', 'sample' or None")
    counts = np.full(29, np.nan)
    low, high = counts.copy(), counts.copy()
    exact = np.zeros(29, dtype=bool)
    method: dict[int, str] = {}
    seconds: dict[int, float] = {}
    if 3 in sizes or 4 in sizes:
        t0 = time.perf_counter()
        orb = orbit_counts(graph) if 4 in sizes else None
        d = graph.degrees().astype(np.int64)
        if 3 in sizes:
            tri = int(oriented_triangles(graph).shape[0])
            counts[0] = float((d * (d - 1) // 2).sum() - 3 * tri)
            counts[1] = float(tri)
            exact[0:2] = True
            method[3], seconds[3] = "exact (closed form)", time.perf_counter() - t0
        if orb is not None:
            t1 = time.perf_counter()
            totals = orb.sum(axis=0)
            for gi, (orbit, mult) in _ORBIT_TOTALS.items():
                counts[gi] = float(totals[orbit] // mult)
            exact[2:8] = True
            method[4], seconds[4] = "exact (orbit equations)", time.perf_counter() - t1
    if 5 in sizes:
        t0 = time.perf_counter()
        from graphrelease.audit.motifs_five import five_node_counts

        c5, lo5, hi5, how = five_node_counts(graph, time_limit=time_limit, confidence=confidence, seed=seed,
                                              force=force)
        counts[8:], low[8:], high[8:] = c5, lo5, hi5
        exact[8:] = how.startswith("exact")
        method[5], seconds[5] = how, time.perf_counter() - t0
    low = np.where(exact, counts, low)
    high = np.where(exact, counts, high)
    return GraphletCounts(counts, low, high, exact, method, seconds, confidence)


# ---------------------------------------------------------------------------------------------------- seed vectors
def degree_vector(graph: Graph, *, bins: int = 50) -> np.ndarray:
    """The seed's 50-bin degree vector, corrected: ``v[k]`` = nodes of degree ``k`` for ``k < bins - 1``, the last bin
    counts degrees ``>= bins - 1``. (The seed's code drops degrees ``>= max(clipped degree)``; see
    :func:`seed_degree_vector`.)"""
    d = np.minimum(graph.degrees(), bins - 1)
    return np.bincount(d, minlength=bins).astype(np.float64)


def seed_degree_vector(graph: Graph, *, bins: int = 50) -> np.ndarray:
    """The seed code's degree vector exactly as it computes it, for reproduction only: degrees clipped at ``bins``,
    then only degrees ``0 .. max - 1`` are counted, so nodes of the maximal (clipped) degree are dropped."""
    d = np.minimum(graph.degrees(), bins)
    top = int(d.max())
    v = np.zeros(bins)
    counts = np.bincount(d, minlength=bins + 1)
    v[:top] = counts[:top]
    return v


def motif_vector(graph: Graph, *, time_limit: float = 60.0, seed: int = 0) -> np.ndarray:
    """The seed's 29-dim vector of induced graphlet counts (order of :data:`GRAPHLETS`)."""
    return graphlet_counts(graph, time_limit=time_limit, seed=seed).counts


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """``<a, b> / (|a| |b|)``; 1.0 when both are zero vectors, 0.0 when exactly one is."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def mean_pairwise_cosine(originals: list[np.ndarray], released: list[np.ndarray]) -> float:
    """The seed's score: mean cosine similarity between the i-th original and the i-th released vector."""
    if len(originals) != len(released) or not originals:
        raise OptionError(
            f"need equally many original and released vectors (got {len(originals)} and {len(released)})"
        )
    return float(np.mean([cosine_similarity(a, b) for a, b in zip(originals, released)]))


__all__ = [
    "GRAPHLETS", "GRAPHLET_NAMES", "ORBIT_LEGEND", "Graphlet", "GraphletCounts", "graphlet_counts",
    "orbit_counts", "four_cycles_per_node", "degree_vector", "seed_degree_vector", "motif_vector",
    "cosine_similarity", "mean_pairwise_cosine",
]
