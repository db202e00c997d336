"""5-node graphlet counts for the audit: exact ESU enumeration (igraph's motif census with cut probability 0) when
a pilot predicts it fits the time limit, otherwise a lifting estimator (independent 5-node samples with exact
sampling probabilities, Horvitz-Thompson) with confidence intervals. Split from :mod:`graphrelease.audit.motifs`,
which calls :func:`five_node_counts` from :func:`~graphrelease.audit.motifs.graphlet_counts`."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from graphrelease.audit.motifs import GRAPHLETS
from graphrelease.audit.statistics import degree_order, seeded_igraph
from graphrelease.graph import Graph

def _isoclass_to_graphlet() -> dict[int, int]:
    """igraph's 5-node isoclass id -> index in GRAPHLETS (matched by isomorphism, once)."""
    import igraph as ig

    mapping = {}
    for gl in GRAPHLETS[8:]:
        h = ig.Graph(n=5, edges=list(gl.edges))
        mapping[h.isoclass()] = gl.index
    return mapping


_ISO5: dict[int, int] | None = None


def _esu_graph(graph: Graph):
    """igraph copy with nodes renumbered by ascending degree: ESU finds each subgraph from its smallest id, so every
    subgraph is then owned by its lowest-degree node and hubs own few, which evens out the work per start node
    (on a 400-node power-law-cluster graph the per-batch relative s.d. at keep 0.1 fell from 1.39 to 0.26)."""
    import igraph as ig

    rank = degree_order(graph)
    return ig.Graph(n=graph.num_nodes, edges=rank[graph.edges], directed=False)


def _esu(g, keep: float, seed: int, deadline: float | None = None) -> tuple[np.ndarray | None, float]:
    """One (RAND-)ESU pass; returns the 21 counts scaled by ``1/keep`` (``None`` if the deadline stopped it) and the
    seconds taken.

    Sampling cuts the search tree at the root only: each start node is kept with probability ``keep``, and each
    5-node subgraph is found from exactly one start node (its smallest id), so it is counted with probability
    ``keep`` and the scaled count is unbiased (Wernicke 2006). igraph's cuts at deeper levels were measured to be
    biased for undirected 5-node motifs here (mean 0.02-0.35 of the exact count on Cora), so they are not used.
    With a ``deadline`` the subgraphs are counted in a Python callback that stops the search at the deadline.
    """
    global _ISO5
    if _ISO5 is None:
        _ISO5 = _isoclass_to_graphlet()
    cut = None if keep >= 1.0 else [1.0 - keep, 0.0, 0.0, 0.0, 0.0]
    t0 = time.perf_counter()
    out = np.zeros(21)
    with seeded_igraph(seed):
        if deadline is None:
            raw = g.motifs_randesu(size=5, cut_prob=cut)
            for cls, c in enumerate(raw):
                if cls in _ISO5 and not (isinstance(c, float) and math.isnan(c)):
                    out[_ISO5[cls] - 8] = c
            return out / keep, time.perf_counter() - t0
        per_class = np.zeros(34)
        stopped = [False]
        clock = time.perf_counter

        def count(_graph, _vids, cls) -> bool:
            per_class[cls] += 1
            if clock() > deadline:
                stopped[0] = True
                return True
            return False

        g.motifs_randesu(size=5, cut_prob=cut, callback=count)
    took = time.perf_counter() - t0
    if stopped[0]:
        return None, took
    for cls, idx in _ISO5.items():
        out[idx - 8] = per_class[cls]
    return out / keep, took


# ---------------------------------------------------------------------------------------------------- lifting sampler
_PERMS5 = np.array(list(itertools.permutations(range(5))), dtype=np.int64)  # (120, 5)
_PAIRS5 = [(i, j) for i in range(5) for j in range(i + 1, 5)]  # bit b of a 5-node code = pair _PAIRS5[b]
_CODE5: np.ndarray | None = None


def _code_to_graphlet5() -> np.ndarray:
    """10-bit adjacency code of 5 labelled nodes (bit ``b`` = pair ``_PAIRS5[b]``) -> index in GRAPHLETS (8..28),
    or -1 when the 5 nodes are not connected."""
    global _CODE5
    if _CODE5 is not None:
        return _CODE5
    bit = {p: b for b, p in enumerate(_PAIRS5)}
    table = np.full(1024, -1, dtype=np.int64)
    for gl in GRAPHLETS[8:]:
        for perm in _PERMS5:
            table[sum(1 << bit[(min(perm[u], perm[v]), max(perm[u], perm[v]))] for u, v in gl.edges)] = gl.index
    _CODE5 = table
    return table


class _Lifting5:
    """i.i.d. samples of connected 5-node sets by *lifting* (Paramonov, Shemetov & Sharpnack, "Estimating graphlet
    statistics via lifting", KDD 2019), with each set's exact sampling probability, for Horvitz-Thompson estimates.

    One sample: a uniformly random start node ``v1``; then four times, a uniformly random edge leaving the current
    set ``S_k`` (drawn by picking ``u in S_k`` with probability ``deg(u) / sum deg(S_k)``, a uniform neighbour ``w``
    of ``u``, and rejecting ``w in S_k``), whose outside end joins the set. A walk that finds no leaving edge (its
    component has fewer than 5 nodes) yields nothing. The probability of ending with the set ``T`` sums over
    the orderings ``sigma`` of ``T`` whose prefixes are connected:

    .. math::

        \\pi(T) = \\frac{1}{n} \\sum_{\\sigma} \\prod_{k=1}^{4}
            \\frac{e(\\{\\sigma_1..\\sigma_k\\}, \\sigma_{k+1})}{\\mathrm{cut}(\\{\\sigma_1..\\sigma_k\\})},
        \\qquad \\mathrm{cut}(S) = \\sum_{u \\in S} \\deg u - 2\\,e(S),

    which needs only the degrees of ``T`` and its induced edges. ``1[T is graphlet H] / pi(T)`` is then an unbiased
    estimate of the count of ``H``; averages over i.i.d. samples get normal confidence intervals.
    """

    def __init__(self, graph: Graph) -> None:
        n = graph.num_nodes
        csr = graph.to_csr()
        self.n = n
        self.indptr = csr.indptr.astype(np.int64)
        self.indices = csr.indices.astype(np.int64)
        self.deg = np.diff(self.indptr)
        row = np.repeat(np.arange(n, dtype=np.int64), self.deg)
        self.keys = row * n + self.indices  # sorted: CSR rows in order, sorted columns within a row
        self.table = _code_to_graphlet5()

    def adjacent(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        q = a * self.n + b
        pos = np.minimum(np.searchsorted(self.keys, q), self.keys.size - 1)
        return self.keys[pos] == q

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``size`` walks -> (graphlet index per walk, -1 when it failed; 1/pi per walk, 0 when it failed)."""
        n, deg = self.n, self.deg
        nodes = np.zeros((size, 5), dtype=np.int64)  # rows of failed walks stay valid indices
        nodes[:, 0] = rng.integers(0, n, size=size)
        alive = deg[nodes[:, 0]] > 0
        internal = np.zeros(size, dtype=np.int64)
        for k in range(1, 5):
            cut = deg[nodes[:, :k]].sum(axis=1) - 2 * internal
            alive &= cut > 0
            todo = np.flatnonzero(alive)
            while todo.size:
                cur = nodes[todo, :k]
                cum = np.cumsum(deg[cur], axis=1)
                r = rng.random(todo.size) * cum[:, -1]
                which = np.minimum((cum <= r[:, None]).sum(axis=1), k - 1)
                u = cur[np.arange(todo.size), which]
                w = self.indices[self.indptr[u] + (rng.random(todo.size) * deg[u]).astype(np.int64)]
                ok = ~(cur == w[:, None]).any(axis=1)
                nodes[todo[ok], k] = w[ok]
                todo = todo[~ok]
            idx = np.flatnonzero(alive)
            links = np.zeros(size, dtype=np.int64)
            for j in range(k):
                links[idx] += self.adjacent(nodes[idx, j], nodes[idx, k])
            internal += links
        kind = np.full(size, -1, dtype=np.int64)
        weight = np.zeros(size)
        idx = np.flatnonzero(alive)
        if idx.size:
            kind[idx], weight[idx] = self._classify(nodes[idx])
        return kind, weight

    def _classify(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Graphlet index and ``1 / pi(T)`` of each sampled 5-set (rows of ``nodes``).

        The sum over orderings is computed by dynamic programming over the 31 subsets of ``T`` instead of the 120
        orderings: ``f(S) = sum_{v in S} f(S - v) * e(S - v, v) / cut(S - v)`` with ``f({v}) = 1/n`` is the
        probability that the walk's first ``|S|`` nodes are ``S``, and ``pi(T) = f(T)``.
        """
        m = nodes.shape[0]
        adj = np.zeros((5, 5, m))
        code = np.zeros(m, dtype=np.int64)
        for b, (i, j) in enumerate(_PAIRS5):
            e = self.adjacent(nodes[:, i], nodes[:, j])
            adj[i, j] = adj[j, i] = e
            code |= e.astype(np.int64) << b
        deg = self.deg[nodes].astype(np.float64).T  # (5, m)
        f: dict[int, np.ndarray] = {1 << v: np.full(m, 1.0 / self.n) for v in range(5)}
        cut: dict[int, np.ndarray] = {}
        for size in range(2, 6):
            for members in itertools.combinations(range(5), size):
                mask = sum(1 << v for v in members)
                total = np.zeros(m)
                for v in members:
                    rest = mask & ~(1 << v)
                    prev = [u for u in members if u != v]
                    if rest not in cut:
                        inner = sum((adj[a, b] for a, b in itertools.combinations(prev, 2)), np.zeros(m))
                        cut[rest] = deg[prev].sum(axis=0) - 2.0 * inner
                    links = adj[prev, v].sum(axis=0)
                    total += f[rest] * np.where(links > 0, links / np.maximum(cut[rest], 1.0), 0.0)
                f[mask] = total
        return self.table[code], 1.0 / f[31]


#: Hits a graphlet needs before its normal interval is reported (below it the variance estimate is meaningless).
MIN_LIFTING_HITS = 10


def lifting_counts5(graph: Graph, *, time_limit: float, confidence: float, seed: int, batch: int = 5_000,
                    max_samples: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Horvitz-Thompson estimates of the 21 five-node graphlet counts from lifting samples (:class:`_Lifting5`),
    drawn in batches until ``time_limit`` seconds (or ``max_samples``) are used; normal ``confidence`` intervals.

    Returns ``(counts, low, high, samples)``. The samples are i.i.d., so the standard error of each count is the
    sample standard deviation of its per-sample terms over ``sqrt(samples)``; the interval is clipped at 0. A
    graphlet hit by fewer than ``MIN_LIFTING_HITS`` samples gets no normal interval: with zero or a handful of
    hits the sample variance says nothing about a rare graphlet (a single 5-clique on a long path came out as
    ``[0, 0]`` in 9 of 20 runs), so its interval is ``[min(hits, 1), inf)`` — it exists if it was seen, and no
    upper bound is claimed.
    """
    from statistics import NormalDist  # not scipy.stats: its import alone can take seconds of the time limit

    sampler = _Lifting5(graph)
    rng = np.random.default_rng(seed)
    total = np.zeros(21)
    total_sq = np.zeros(21)
    hits = np.zeros(21, dtype=np.int64)
    drawn = 0
    start = time.perf_counter()
    per_batch = None
    while True:
        size = batch if max_samples is None else min(batch, max_samples - drawn)
        if size <= 0:
            break
        t0 = time.perf_counter()
        kind, weight = sampler.sample(size, rng)
        ok = kind >= 0
        terms = np.zeros((size, 21))
        terms[np.flatnonzero(ok), kind[ok] - 8] = weight[ok]
        total += terms.sum(axis=0)
        total_sq += (terms ** 2).sum(axis=0)
        hits += np.bincount(kind[ok] - 8, minlength=21)
        drawn += size
        per_batch = time.perf_counter() - t0
        # stop before a batch would overrun the limit (the first batch always runs); 1.5 batches of headroom absorb
        # the jitter of batch times on a shared machine
        if max_samples is None and time.perf_counter() - start + 1.5 * per_batch > time_limit:
            break
    mean = total / drawn
    var = np.maximum(total_sq / drawn - mean ** 2, 0.0) * drawn / max(drawn - 1, 1)
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * np.sqrt(var / drawn)
    low, high = np.maximum(mean - half, 0.0), mean + half
    rare = hits < MIN_LIFTING_HITS
    low[rare] = np.minimum(hits[rare], 1)
    high[rare] = np.inf
    return mean, low, high, drawn


def five_node_counts(graph: Graph, *, time_limit: float, confidence: float, seed: int,
                      force: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Exact ESU if a pilot predicts it fits in ``time_limit``, else the lifting estimator for the rest of the limit.

    The pilot runs ESU from a random ``min(1, 32/n)`` of the start nodes for at most a quarter of the limit; its
    time over its keep probability predicts the exact run. Sampling (:func:`lifting_counts5`) draws i.i.d. 5-node
    sets with known probabilities, so its normal intervals hold for any graph shape, dense ones included (RAND-ESU
    start-node sampling, used before, could not finish one batch on Facebook in 60 s). Caveat in the method string:
    rare graphlets whose sets have tiny sampling probabilities give heavy-tailed terms, so their intervals are
    approximate until many samples hit them.
    """
    if graph.num_nodes < 5:
        zero = np.zeros(21)
        return zero, zero, zero, "exact (fewer than 5 nodes)"
    eg = _esu_graph(graph)
    if force == "exact" or (graph.num_nodes <= 60 and force != "sample"):
        c, _ = _esu(eg, 1.0, seed)
        return c, c, c, "exact (ESU)"
    start = time.perf_counter()
    deadline = start + time_limit
    predicted_note = ""
    if force != "sample":
        q0 = min(1.0, 32.0 / graph.num_nodes)
        pilot, took = _esu(eg, q0, seed, deadline=start + time_limit / 4)
        predicted = took / q0
        # an aborted pilot still bounds the exact time from below
        predicted_note = f"; exact ESU predicted {'' if pilot is not None else '>'}{predicted:.0f} s"
        if pilot is not None and predicted <= deadline - time.perf_counter():
            c, _ = _esu(eg, 1.0, seed)
            return c, c, c, f"exact (ESU; pilot predicted {predicted:.1f} s)"
    remaining = max(deadline - time.perf_counter(), 0.0)
    mean, lo, hi, drawn = lifting_counts5(graph, time_limit=remaining, confidence=confidence, seed=seed)
    how = (f"sampled (lifting, {drawn:,} i.i.d. 5-node samples, Horvitz-Thompson, {confidence:.0%} normal interval"
           f"{predicted_note})")
    return mean, lo, hi, how
