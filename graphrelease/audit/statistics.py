"""Graph statistics for the utility audit: the NetGAN suite, the PGB queries, degree and spectrum summaries.

Everything here is a *non-private* statistic of whatever graph it is given. It is for the internal audit report
(original vs release), never for a release bundle.

The main entry point is :func:`graph_statistics`, which returns a flat ``dict[str, float]`` with stable keys; every
key is defined in :data:`STATISTIC_LEGEND` (used for report legends). Heavy lifting is done by igraph (C) and
scipy.sparse; nothing loops over nodes in Python.

Correct quantities are reported under their correct names. NetGAN's reference code (Bojchevski et al., 2018) calls
the number of 4-cliques its "square count" and divides triangles by *claws* in its "clustering coefficient"; both are
available, labelled, as :func:`netgan_square_count` and :func:`netgan_clustering`, for reproductions only.

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph, seeded_igraph
>>> g, _ = Graph.from_edges(4, np.array([[0, 1], [1, 2], [0, 2], [2, 3]]))
>>> s = graph_statistics(g)
>>> s["triangle_count"], s["wedge_count"], round(s["global_clustering"], 4)
(1.0, 5.0, 0.6)
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from graphrelease.graph import Graph, seeded_igraph

#: Above this many nodes the characteristic path length and the diameter are estimated from sampled BFS sources.
EXACT_PATH_MAX_NODES = 10_000
#: Number of BFS sources used when the path statistics are sampled.
PATH_SAMPLE_SOURCES = 256
#: Number of top adjacency eigenvalues reported.
SPECTRUM_K = 5

STATISTIC_LEGEND: dict[str, str] = {
    "num_nodes": "n, number of nodes (isolated nodes included)",
    "num_edges": "m, number of undirected edges",
    "avg_degree": "mean degree 2m/n",
    "max_degree": "largest node degree",
    "min_degree": "smallest node degree (0 if there are isolated nodes)",
    "degree_variance": "population variance of the degrees, (1/n) sum_i (d_i - mean d)^2 (PGB)",
    "degree_median": "median degree",
    "degree_p99": "99th percentile of the degrees (linear interpolation)",
    "degree_entropy": "Shannon entropy (nats) of the degree histogram p_k = #{i: d_i = k}/n",
    "lcc_size": "LCC: number of nodes in the largest connected component",
    "num_components": "number of connected components (isolated nodes count as components)",
    "wedge_count": "wedges (2-paths, not necessarily induced): sum_i C(d_i, 2)",
    "claw_count": "claws (3-stars, not necessarily induced): sum_i C(d_i, 3)",
    "triangle_count": "TC: number of triangles, trace(A^3)/6",
    "square_count": "number of 4-cycles (not necessarily induced): (1/2) sum_{u<w} C(|N(u) & N(w)|, 2)",
    "power_law_exponent": (
        "power-law exponent alpha, continuous MLE of Clauset, Shalizi & Newman (2009, eq. 3.1): "
        "1 + k / sum_i ln(d_i / x_min) over the k degrees d_i >= x_min, with x_min = max(min degree, 1) "
        "fixed as in NetGAN (not the KS-optimal x_min)"
    ),
    "power_law_exponent_discrete": (
        "power-law exponent, discrete approximation of Clauset et al. (2009, eq. 3.7): "
        "1 + k / sum_i ln(d_i / (x_min - 1/2)), same x_min"
    ),
    "power_law_stderr": "standard error of the continuous MLE, (alpha - 1)/sqrt(k)",
    "power_law_xmin": "x_min used by the power-law fit: max(min degree, 1)",
    "gini": (
        "GINI of the degrees: 2 sum_i i d_(i) / (n sum_i d_i) - (n + 1)/n, degrees sorted ascending, i = 1..n"
    ),
    "rede": (
        "REDE, relative edge distribution entropy: (1/ln n) sum_i -(d_i/2m) ln(d_i/2m), with 0 ln 0 = 0 "
        "(NetGAN adds 1e-4 inside the log)"
    ),
    "assortativity": "degree assortativity: Pearson correlation of the degrees at the two ends of an edge",
    "global_clustering": "global clustering (transitivity): 3 * triangles / wedges",
    "avg_clustering": (
        "average local clustering: (1/n) sum_i t_i / C(d_i, 2), where t_i = triangles at i; nodes with d_i < 2 "
        "count as 0 (networkx convention)"
    ),
    "cpl": (
        "CPL, characteristic path length: mean shortest-path length over ordered pairs of distinct nodes "
        "connected by a path; exact BFS from every node up to EXACT_PATH_MAX_NODES nodes, else a ratio estimate "
        "from PATH_SAMPLE_SOURCES uniformly sampled BFS sources"
    ),
    "cpl_stderr": "standard error of the sampled CPL (delta method for the ratio estimator); 0 when exact",
    "cpl_exact": "1 if CPL (and the diameter) are exact, 0 if sampled",
    "diameter": (
        "longest shortest path over connected pairs; exact when cpl_exact = 1, else a lower bound: the largest "
        "eccentricity over the sampled sources plus a double sweep from the farthest node found"
    ),
    "modularity": (
        "Newman modularity Q of the Louvain partition (igraph community_multilevel, seeded; final level)"
    ),
    "num_communities": "number of communities in that Louvain partition",
    "eigenvector_centrality_max_over_mean": (
        "largest / mean eigenvector centrality (igraph, scaled so the maximum is 1)"
    ),
    "spectral_radius": "largest adjacency eigenvalue lambda_1(A)",
    **{f"adj_eig_{i}": f"{i}-th largest adjacency eigenvalue (scipy eigsh, algebraic order)" for i in
       range(1, SPECTRUM_K + 1)},
    "laplacian_max": "largest eigenvalue of the combinatorial Laplacian L = D - A",
    "normalized_laplacian_gap_lcc": (
        "spectral gap of the largest component: second-smallest eigenvalue of I - D^-1/2 A D^-1/2 on the LCC"
    ),
    "netgan_square_count": "NetGAN's 'square count', which is the number of 4-CLIQUES (labelled; reproduction only)",
    "netgan_clustering": "NetGAN's 'clustering coefficient' 3 * triangles / claws (labelled; reproduction only)",
}


# ---------------------------------------------------------------------------------------------------- kernels
def degree_order(graph: Graph) -> np.ndarray:
    """Rank of each node in the order (degree, id): orienting edges low -> high bounds out-degrees by sqrt(2m)."""
    d = graph.degrees()
    order = np.lexsort((np.arange(graph.num_nodes), d))
    rank = np.empty(graph.num_nodes, dtype=np.int64)
    rank[order] = np.arange(graph.num_nodes)
    return rank


def oriented_adjacency(graph: Graph) -> sp.csr_matrix:
    """CSR matrix ``L`` with ``L[u, v] = 1`` for each edge, oriented from lower to higher degree rank (int64)."""
    n = graph.num_nodes
    e = graph.edges
    rank = degree_order(graph)
    flip = rank[e[:, 0]] > rank[e[:, 1]]
    lo = np.where(flip, e[:, 1], e[:, 0])
    hi = np.where(flip, e[:, 0], e[:, 1])
    return sp.csr_matrix((np.ones(lo.size, dtype=np.int64), (lo, hi)), shape=(n, n))


def triangle_count(graph: Graph) -> int:
    """Exact number of triangles.

    Each triangle ``a < b < c`` (degree rank) is counted once as the oriented path ``a -> b -> c`` closed by the
    oriented edge ``a -> c``: ``T = sum((L @ L) * L)``.
    """
    if graph.num_edges < 3:
        return 0
    lo = oriented_adjacency(graph)
    return int((lo @ lo).multiply(lo).sum())


def four_cycle_count(graph: Graph) -> int:
    """Exact number of 4-cycles (as subgraphs, not necessarily induced).

    Each 4-cycle is counted once from its highest-ranked node ``v`` and the opposite node ``w``: the two middle nodes
    are common neighbours ``u`` of ``v`` and ``w`` with ``rank(u) < rank(v)``, and ``rank(w) < rank(v)``. With
    ``c_vw`` such middles, the count is ``sum C(c_vw, 2)`` (Chiba & Nishizeki, 1985, with degree ordering).
    """
    if graph.num_edges < 4:
        return 0
    n = graph.num_nodes
    rank = degree_order(graph)
    lower = oriented_adjacency(graph).T.tocsr()  # lower[v, u] = 1 iff u ~ v and rank(u) < rank(v)
    adj = graph.to_csr().astype(np.int64)
    total = 0
    # Row chunks bound the memory of the (v, w) path-count matrix: row v holds at most sum_{u lower} d_u entries.
    work = np.cumsum(lower @ graph.degrees())
    bounds = np.searchsorted(work, np.arange(0, int(work[-1]) + 1, 4_000_000)[1:])
    edges_ = np.unique(np.concatenate([[0], bounds + 1, [n]]))
    for start, stop in zip(edges_[:-1].tolist(), edges_[1:].tolist()):
        m = (lower[start:stop] @ adj).tocoo()
        v = m.row + start
        keep = rank[m.col] < rank[v]
        c = m.data[keep]
        total += int((c * (c - 1) // 2).sum())
    return total


def four_clique_count(graph: Graph) -> int:
    """Exact number of 4-cliques (``K4``); see :func:`four_cliques_per_node` for the method."""
    total, _ = _four_cliques(graph, per_node=False)
    return total


def four_cliques_per_node(graph: Graph, *, triangles: np.ndarray | None = None) -> np.ndarray:
    """Number of 4-cliques through each node (``triangles``: the rank-ordered triangle list, if already computed)."""
    return _four_cliques(graph, per_node=True, triangles=triangles)[1]


def _four_cliques(graph: Graph, *, per_node: bool, triangles: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """4-cliques counted once each as a rank-ordered triangle ``a < b < c`` plus a common higher neighbour ``d``.

    The candidates ``d`` are the out-neighbours of the triangle's highest node ``c`` (at most ``sqrt(2m)`` of them
    under degree ordering); adjacency of ``(a, d)`` and ``(b, d)`` is tested in a dense bit table for small graphs
    and by binary search in the sorted edge keys otherwise.
    """
    n = graph.num_nodes
    node_counts = np.zeros(n, dtype=np.int64)
    tri = oriented_triangles(graph) if triangles is None else triangles
    total = 0
    extend = _CliqueExtender(graph)
    # batches of triangles keep the 4-clique arrays small even when there are tens of millions of them
    for part in _chunks_by_work(tri, extend.out_deg[tri[:, 2]] + 1, 20_000_000):
        k4 = extend(part)
        total += k4.shape[0]
        if per_node:
            node_counts += np.bincount(k4.ravel(), minlength=n)
    return total, node_counts


def _chunks_by_work(rows: np.ndarray, work: np.ndarray, budget: int) -> Iterator[np.ndarray]:
    """Split ``rows`` into consecutive chunks whose summed ``work`` stays near ``budget``."""
    if rows.shape[0] == 0:
        return
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, np.arange(budget, int(cum[-1]) + budget, budget), side="right")
    bounds = np.unique(np.concatenate([[0], np.minimum(cuts, rows.shape[0]), [rows.shape[0]]]))
    for s0, s1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        yield rows[s0:s1]


def _has_keys(sorted_keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    pos = np.searchsorted(sorted_keys, queries)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return sorted_keys[pos] == queries


#: id(graph) -> its triangle list, for the graphs still alive. One audit asks for the triangles of the same graph
#: three times (node triangles, 3-node graphlets, 4-node orbits); on Facebook each pass costs about 0.5 CPU-s.
_TRIANGLES: dict[int, np.ndarray] = {}


def oriented_triangles(graph: Graph) -> np.ndarray:
    """All triangles as rows ``(a, b, c)`` with ``rank(a) < rank(b) < rank(c)`` (degree rank), each once.

    Oriented wedges ``a -> b -> c`` (at most ``m sqrt(2m)`` of them under degree ordering) are closed by testing the
    oriented edge ``a -> c``. Graphs are immutable, so the result is kept until the graph is garbage-collected.
    """
    if graph.num_edges < 3:
        return np.zeros((0, 3), dtype=np.int64)
    key = id(graph)
    if key not in _TRIANGLES:
        lo = oriented_adjacency(graph).tocoo()
        ab = np.stack([lo.row.astype(np.int64), lo.col.astype(np.int64)], axis=1)
        tri = _CliqueExtender(graph)(ab)
        tri.setflags(write=False)
        _TRIANGLES[key] = tri
        # drop the entry with the graph, so that a later graph reusing the id never sees it
        weakref.finalize(graph, _TRIANGLES.pop, key, None)
    return _TRIANGLES[key]


def _adjacency_test(graph: Graph):
    """A vectorised ``adjacent(x, y) -> bool array`` (dense bit table for small graphs, binary search otherwise)."""
    n = graph.num_nodes
    if n * n <= 64_000_000:
        dense = graph.to_csr().toarray().astype(bool).ravel()
        return lambda x, y: dense[x * n + y]
    e = graph.edges
    keys = np.sort(np.concatenate([e[:, 0] * np.int64(n) + e[:, 1], e[:, 1] * np.int64(n) + e[:, 0]]))
    return lambda x, y: _has_keys(keys, x * np.int64(n) + y)


class _CliqueExtender:
    """Extends rank-ordered ``k``-cliques to rank-ordered ``(k+1)``-cliques: candidates are the out-neighbours of the
    last (highest-ranked) node, kept when adjacent to all the others. Built once per graph, applied per chunk."""

    def __init__(self, graph: Graph) -> None:
        lo = oriented_adjacency(graph)
        self.indptr = lo.indptr.astype(np.int64)
        self.indices = lo.indices.astype(np.int64)
        self.out_deg = np.diff(self.indptr)
        self.adjacent = _adjacency_test(graph)

    def __call__(self, cliques: np.ndarray) -> np.ndarray:
        found = []
        for part in _chunks_by_work(cliques, self.out_deg[cliques[:, -1]], 4_000_000):
            counts = self.out_deg[part[:, -1]]
            rep = np.repeat(np.arange(part.shape[0]), counts)
            offs = np.arange(rep.size) - np.repeat(np.cumsum(counts) - counts, counts)
            new = self.indices[np.repeat(self.indptr[part[:, -1]], counts) + offs]
            keep = np.arange(rep.size)
            for col in range(part.shape[1] - 1):
                keep = keep[self.adjacent(part[rep[keep], col], new[keep])]
            found.append(np.concatenate([part[rep[keep]], new[keep, None]], axis=1))
        if not found:
            return np.zeros((0, cliques.shape[1] + 1), dtype=np.int64)
        return np.concatenate(found, axis=0)


def node_triangles(graph: Graph) -> np.ndarray:
    """Number of triangles through each node."""
    tri = oriented_triangles(graph)
    return np.bincount(tri.ravel(), minlength=graph.num_nodes).astype(np.int64)


# ---------------------------------------------------------------------------------------------------- statistics
def degree_histogram(graph: Graph) -> np.ndarray:
    """``hist[k]`` = number of nodes of degree ``k``, for ``k = 0..max degree``."""
    return np.bincount(graph.degrees(), minlength=1).astype(np.int64)


def power_law_fit(degrees: np.ndarray) -> dict[str, float]:
    """Power-law exponent by maximum likelihood (Clauset, Shalizi & Newman, SIAM Review 2009).

    ``x_min = max(min degree, 1)`` (the NetGAN convention; not the KS-optimal choice), ``k`` = number of degrees
    ``>= x_min``. Continuous MLE (eq. 3.1) :math:`\\hat\\alpha = 1 + k / \\sum \\ln(d_i/x_{min})` with standard error
    :math:`(\\hat\\alpha-1)/\\sqrt{k}`; discrete approximation (eq. 3.7) uses :math:`x_{min} - 1/2` in the log.
    NaN when all kept degrees equal ``x_min`` (the likelihood has no finite maximiser).
    """
    d = np.asarray(degrees, dtype=np.float64)
    xmin = max(float(d.min()) if d.size else 1.0, 1.0)
    x = d[d >= xmin]
    k = x.size
    s_cont = float(np.log(x / xmin).sum()) if k else 0.0
    s_disc = float(np.log(x / (xmin - 0.5)).sum()) if k else 0.0
    alpha = 1.0 + k / s_cont if s_cont > 0 else float("nan")
    alpha_d = 1.0 + k / s_disc if s_disc > 0 else float("nan")
    se = (alpha - 1.0) / math.sqrt(k) if k and s_cont > 0 else float("nan")
    return {"power_law_exponent": alpha, "power_law_exponent_discrete": alpha_d, "power_law_stderr": se,
            "power_law_xmin": xmin}


def gini(degrees: np.ndarray) -> float:
    """Gini coefficient of a non-negative vector (NetGAN's formula; 0 for all-equal, -> 1 for one hub)."""
    d = np.sort(np.asarray(degrees, dtype=np.float64))
    n = d.size
    total = d.sum()
    if n == 0 or total == 0:
        return 0.0
    i = np.arange(1, n + 1)
    return float(2.0 * np.dot(i, d) / (n * total) - (n + 1.0) / n)


def rede(degrees: np.ndarray) -> float:
    """Relative edge distribution entropy (NetGAN): entropy of d_i/2m normalised by ln n (1 = regular graph)."""
    d = np.asarray(degrees, dtype=np.float64)
    n = d.size
    two_m = d.sum()
    if n < 2 or two_m == 0:
        return 0.0
    p = d[d > 0] / two_m
    return float(-(p * np.log(p)).sum() / math.log(n))


def path_statistics(graph: Graph, *, seed: int = 0, exact_max_nodes: int = EXACT_PATH_MAX_NODES,
                    sources: int = PATH_SAMPLE_SOURCES) -> dict[str, float]:
    """CPL (mean shortest path over connected ordered pairs) and diameter, exact or sampled (see the legend).

    Sampled CPL is the ratio estimator :math:`\\sum_s S_s / \\sum_s R_s` over uniformly sampled sources ``s``, where
    ``S_s`` is the sum of distances from ``s`` to the ``R_s`` nodes it reaches; its standard error is the delta-method
    one, :math:`\\sqrt{\\mathrm{Var}(S - \\hat c R)/k} / \\bar R`.
    """
    g = graph.to_igraph()
    n = graph.num_nodes
    if graph.num_edges == 0:
        return {"cpl": float("nan"), "cpl_stderr": 0.0, "cpl_exact": 1.0, "diameter": 0.0}
    if n <= exact_max_nodes:
        # One all-pairs BFS for both numbers: the histogram of shortest-path lengths over connected unordered pairs
        # gives the mean (CPL; average_path_length(unconn=True) is the same mean) and the largest length
        # (diameter). Calling average_path_length and diameter ran the all-pairs BFS twice (4 CPU-s on Facebook).
        hist = g.path_length_hist(directed=False)
        lengths, counts = [], []
        for start, _end, count in hist.bins():
            if count:
                lengths.append(start)
                counts.append(count)
        if not counts:
            return {"cpl": float("nan"), "cpl_stderr": 0.0, "cpl_exact": 1.0, "diameter": 0.0}
        lengths_a, counts_a = np.asarray(lengths, dtype=np.float64), np.asarray(counts, dtype=np.float64)
        cpl = float((lengths_a * counts_a).sum() / counts_a.sum())
        return {"cpl": cpl, "cpl_stderr": 0.0, "cpl_exact": 1.0, "diameter": float(lengths_a.max())}
    rng = np.random.default_rng(seed)
    src = rng.choice(n, size=min(sources, n), replace=False)
    s_sum = np.empty(src.size)
    r_cnt = np.empty(src.size)
    ecc_max, far_node = 0.0, int(src[0])
    for j, s in enumerate(src.tolist()):
        dist = np.asarray(g.distances(source=s)[0], dtype=np.float64)
        fin = np.isfinite(dist)
        s_sum[j] = dist[fin].sum()
        r_cnt[j] = fin.sum() - 1
        ecc = dist[fin].max()
        if ecc > ecc_max:
            ecc_max, far_node = float(ecc), int(np.flatnonzero(fin & (dist == ecc))[0])
    # double sweep: the eccentricity of the farthest node found is also a lower bound on the diameter
    dist = np.asarray(g.distances(source=far_node)[0], dtype=np.float64)
    ecc_max = max(ecc_max, float(dist[np.isfinite(dist)].max()))
    mask = r_cnt > 0
    if not mask.any():
        return {"cpl": float("nan"), "cpl_stderr": float("nan"), "cpl_exact": 0.0, "diameter": ecc_max}
    s_sum, r_cnt = s_sum[mask], r_cnt[mask]
    cpl = float(s_sum.sum() / r_cnt.sum())
    k = s_sum.size
    resid = s_sum - cpl * r_cnt
    se = float(math.sqrt(resid.var(ddof=1) / k) / r_cnt.mean()) if k > 1 else float("nan")
    return {"cpl": cpl, "cpl_stderr": se, "cpl_exact": 0.0, "diameter": ecc_max}


def louvain_partition(graph: Graph, *, seed: int = 0) -> np.ndarray:
    """Louvain community label per node (igraph ``community_multilevel``, final level, seeded)."""
    g = graph.to_igraph()
    if graph.num_edges == 0:
        return np.arange(graph.num_nodes, dtype=np.int64)
    with seeded_igraph(seed):
        clustering = g.community_multilevel()
    return np.asarray(clustering.membership, dtype=np.int64)


def modularity(graph: Graph, membership: np.ndarray) -> float:
    """Newman modularity of a partition (0 for an edgeless graph)."""
    if graph.num_edges == 0:
        return 0.0
    return float(graph.to_igraph().modularity(list(np.asarray(membership).tolist())))


def eigenvector_centrality(graph: Graph) -> np.ndarray:
    """Eigenvector centrality per node (igraph, scaled so that the maximum is 1; zeros for an edgeless graph).

    On a disconnected graph the leading eigenvector lives on the component with the largest spectral radius and the
    other components get (near) zero; igraph's warning about that is silenced because released graphs are often
    disconnected and the comparison (top-1% overlap, MAE) is still well defined.
    """
    if graph.num_edges == 0:
        return np.zeros(graph.num_nodes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(graph.to_igraph().eigenvector_centrality(scale=True), dtype=np.float64)


def spectrum_summary(graph: Graph, *, k: int = SPECTRUM_K) -> dict[str, float]:
    """Top-``k`` adjacency eigenvalues, largest Laplacian eigenvalue and the normalised-Laplacian gap of the LCC."""
    out: dict[str, float] = {}
    n = graph.num_nodes
    a = graph.to_csr().astype(np.float64)
    top = _top_eigenvalues(a, k)
    out["spectral_radius"] = float(top[0]) if top.size else 0.0
    for i in range(k):
        out[f"adj_eig_{i + 1}"] = float(top[i]) if i < top.size else float("nan")
    lap = sp.diags(np.asarray(a.sum(axis=1)).ravel()) - a
    out["laplacian_max"] = float(_top_eigenvalues(lap.tocsr(), 1)[0]) if n > 1 else 0.0
    # spectral gap on the LCC: 1 - second largest eigenvalue of D^-1/2 A D^-1/2
    comps = np.asarray(graph.to_igraph().connected_components().membership)
    big = np.bincount(comps).argmax()
    nodes = np.flatnonzero(comps == big)
    if nodes.size < 2:
        out["normalized_laplacian_gap_lcc"] = float("nan")
    else:
        sub = a[nodes][:, nodes]
        dinv = 1.0 / np.sqrt(np.asarray(sub.sum(axis=1)).ravel())
        norm = sp.diags(dinv) @ sub @ sp.diags(dinv)
        ev = _top_eigenvalues(norm.tocsr(), 2)
        out["normalized_laplacian_gap_lcc"] = float(max(0.0, 1.0 - ev[1])) if ev.size > 1 else float("nan")
    return out


def _top_eigenvalues(mat: sp.csr_matrix, k: int) -> np.ndarray:
    """Largest ``k`` algebraic eigenvalues of a symmetric sparse matrix, descending (dense solver when tiny)."""
    n = mat.shape[0]
    if n <= max(64, k + 2):
        return np.sort(np.linalg.eigvalsh(mat.toarray()))[::-1][:k]
    if mat.count_nonzero() == 0:  # an empty release: ARPACK fails on a zero matrix, whose spectrum is all zeros
        return np.zeros(min(k, n))
    from scipy.sparse.linalg import eigsh

    v0 = np.random.default_rng(0).random(n)  # fixed start vector: deterministic results
    vals = eigsh(mat, k=min(k, n - 2), which="LA", return_eigenvectors=False, v0=v0, tol=1e-8)
    return np.sort(vals)[::-1]


def netgan_square_count(graph: Graph) -> int:
    """NetGAN's "square count": the number of **4-cliques** (its code counts ``cliques(4, 4)``). Reproduction only."""
    return four_clique_count(graph)


def netgan_clustering(graph: Graph) -> float:
    """NetGAN's "clustering coefficient" ``3 * triangles / claws`` (claws = sum C(d,3)). Reproduction only."""
    d = graph.degrees().astype(np.float64)
    claws = float((d * (d - 1) * (d - 2) / 6).sum())
    return 3.0 * triangle_count(graph) / claws if claws else 0.0


def graph_statistics(graph: Graph, *, seed: int = 0, spectrum: bool = True, netgan_variants: bool = False,
                     exact_path_max_nodes: int = EXACT_PATH_MAX_NODES) -> dict[str, float]:
    """All statistics of :data:`STATISTIC_LEGEND` as a flat ``{key: float}`` dict with stable keys.

    Parameters
    ----------
    graph:
        Any :class:`~graphrelease.graph.Graph` (isolated nodes allowed).
    seed:
        Seeds the Louvain partition and the sampled path sources, so repeated calls agree.
    spectrum:
        Include the eigenvalue summaries (``spectral_radius``, ``adj_eig_*``, ``laplacian_*``).
    netgan_variants:
        Also compute NetGAN's labelled variants (``netgan_square_count`` needs a 4-clique count).
    exact_path_max_nodes:
        CPL and diameter are exact up to this many nodes and sampled above.
    """
    d = graph.degrees()
    df = d.astype(np.float64)
    n, m = graph.num_nodes, graph.num_edges
    g = graph.to_igraph()
    out: dict[str, float] = {"num_nodes": float(n), "num_edges": float(m)}
    out["avg_degree"] = float(df.mean())
    out["max_degree"] = float(d.max())
    out["min_degree"] = float(d.min())
    out["degree_variance"] = float(df.var())
    out["degree_median"] = float(np.median(df))
    out["degree_p99"] = float(np.percentile(df, 99))
    p = degree_histogram(graph) / n
    p = p[p > 0]
    out["degree_entropy"] = float(-(p * np.log(p)).sum())
    sizes = np.asarray(g.connected_components().sizes())
    out["lcc_size"] = float(sizes.max())
    out["num_components"] = float(sizes.size)
    wedges = float((df * (df - 1) / 2).sum())
    out["wedge_count"] = wedges
    out["claw_count"] = float((df * (df - 1) * (df - 2) / 6).sum())
    tri = triangle_count(graph)
    out["triangle_count"] = float(tri)
    out["square_count"] = float(four_cycle_count(graph))
    out.update(power_law_fit(d))
    out["gini"] = gini(d)
    out["rede"] = rede(d)
    out["assortativity"] = float(g.assortativity_degree(directed=False)) if m > 0 else float("nan")
    out["global_clustering"] = 3.0 * tri / wedges if wedges else 0.0
    out["avg_clustering"] = float(g.transitivity_avglocal_undirected(mode="zero")) if m > 0 else 0.0
    out.update(path_statistics(graph, seed=seed, exact_max_nodes=exact_path_max_nodes))
    members = louvain_partition(graph, seed=seed)
    out["modularity"] = modularity(graph, members)
    out["num_communities"] = float(np.unique(members).size)
    ec = eigenvector_centrality(graph)
    out["eigenvector_centrality_max_over_mean"] = float(ec.max() / ec.mean()) if ec.mean() > 0 else float("nan")
    if spectrum:
        out.update(spectrum_summary(graph))
    if netgan_variants:
        out["netgan_square_count"] = float(netgan_square_count(graph))
        out["netgan_clustering"] = netgan_clustering(graph)
    return out
