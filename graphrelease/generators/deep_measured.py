r"""DP per-graph statistics of a graph collection under edge adjacency (issue 16, "measure, then generate").

The sound deep mode ``measured`` (:mod:`graphrelease.generators.deep_conditional`) spends its whole budget here and
trains its network on the released values only, so training and sampling are post-processing. Proofs:
``docs/privacy.md#deep-measured-statistics``; sensitivities probed in ``tests/generators/test_deep_measured.py``.

Edge adjacency inside a collection: neighbouring collections differ in one edge of one graph; every graph's node
count is public (declared by the owner: the TU format's graph indicator, or a declared node set). Graphs larger than
the public cap keep their first ``cap`` nodes (a fixed, data-independent rule; an edge outside the kept nodes changes
nothing). Per graph ``g`` with ``n_g`` nodes (all pure Laplace, Dwork et al. 2006):

* edge counts :math:`m_g`: the vector over graphs has L1 sensitivity 1 (one edge, one graph, one unit);
* per-size-class degree histograms (bins :data:`DEGREE_EDGES`: single degrees up to 16, then wider), concatenated
  over the classes (classes: runs of the public node counts, see :func:`size_classes`): one edge moves two nodes of
  one graph by at most one bin each, L1 sensitivity 4;
* scaled triangle counts :math:`T_g / (n_g - 2)` for :math:`n_g \ge 3`: one edge ``(u, v)`` closes or opens exactly
  its :math:`|N(u) \cap N(v)| \le n_g - 2` triangles, so the vector has L1 sensitivity 1;
* connected-component counts (isolated nodes included): one edge merges two components or splits one, L1
  sensitivity 1 over the collection;
* maximum degrees :math:`\max_v d_v` per graph: one edge raises or lowers two degrees of one graph by one, so that
  graph's maximum moves by at most one, L1 sensitivity 1 over the collection (pooled per class, the hub indicator
  of :func:`sampler_plan`).

Post-processing: each class histogram, without bins above the class's largest ``n - 1`` or wide bins under the
noise floor, is projected onto non-negative counts summing to the class's (public) number of nodes (norm-sub);
edge counts are per-class empirical-Bayes posterior means (:func:`deconvolve_counts`); each graph's degree sequence
has its class's quantile shape, its own mean degree and the within-graph variance (:func:`within_graph_variance`),
then is shrunk towards its mean so that the spread of the *realised* degrees (expected-degree variance plus the
Bernoulli variance of independent edges) matches it (the unshrunk sequence is kept as the sampler's degree targets);
triangles clipped to ``[0, min(C(n, 3), sum_v C(d_v, 2) / 3)]``; a per-class sampling plan (:func:`sampler_plan`:
degree caps for sub-binomial classes, decoder structure only where the released triangles show an excess over
G(n, m) beyond their noise).
Why pooled degrees: a per-graph sorted sequence of a 13-node graph under Laplace noise of scale 10 (epsilon 0.2)
is mostly noise, and its isotonic fit is too spread (noise order statistics); the pooled histogram of a class of
hundreds of graphs is accurate at any epsilon, while the per-graph edge and triangle counts carry what differs
between graphs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.classical_common import charge_laplace, norm_sub
from graphrelease.generators.dp_stats import COMPONENT_SENSITIVITY, component_count, top_vertex_triangles
from graphrelease.graph import Graph, GraphCollection

PROOF = "docs/privacy.md#deep-measured-statistics"
#: Default shares of epsilon (sum 1): edge counts, degree histograms, scaled triangle counts, component counts,
#: maximum degrees.
DEFAULT_SHARES = {"edges": 0.4, "degrees": 0.15, "triangles": 0.3, "components": 0.05, "max_degree": 0.1}
EDGE_SENSITIVITY = 1.0
MAX_DEGREE_SENSITIVITY = 1.0
SCALED_TRIANGLE_SENSITIVITY = 1.0
DEGREE_HISTOGRAM_SENSITIVITY = 4.0
#: Degree bin edges: exact degrees 0..16, then wider bins up to the largest capped degree.
DEGREE_EDGES = np.array(list(range(17)) + [20, 24, 32, 40, 48, 64, 80, 96, 128, 1 << 30], dtype=np.float64)
DEGREE_BINS = DEGREE_EDGES.size - 1
#: A size class holds at least this many graphs (fewer if the collection is smaller).
MIN_CLASS_GRAPHS = 150


def truncate(graph: Graph, cap: int) -> Graph:
    """The public truncation rule: graphs above ``cap`` nodes keep their first ``cap`` nodes."""
    return graph.induced_subgraph(np.arange(cap)) if graph.num_nodes > cap else graph


def triangle_count(graph: Graph) -> float:
    return float(np.sum(top_vertex_triangles(graph))) if graph.num_edges else 0.0


def max_degrees(graphs: list[Graph]) -> np.ndarray:
    """Pre-noise query: each graph's largest degree (0 for a graph without edges)."""
    return np.array([float(g.degrees().max()) if g.num_nodes else 0.0 for g in graphs], dtype=np.float64)


def scaled_triangles(graphs: list[Graph]) -> np.ndarray:
    """Pre-noise query: ``T_g / (n_g - 2)`` per graph with at least 3 nodes (others carry no triangle)."""
    return np.array([triangle_count(g) / (g.num_nodes - 2) for g in graphs if g.num_nodes >= 3], dtype=np.float64)


def size_classes(num_nodes: np.ndarray, min_graphs: int = MIN_CLASS_GRAPHS) -> np.ndarray:
    """Class index per graph from the public node counts alone: ascending runs of sizes holding >= ``min_graphs``
    graphs (the last run merged into its predecessor when short)."""
    ns = np.asarray(num_nodes)
    sizes, counts = np.unique(ns, return_counts=True)
    cls_of_size, cls, acc = np.zeros(sizes.size, dtype=np.int64), 0, 0
    for k, c in enumerate(counts):
        cls_of_size[k] = cls
        acc += c
        if acc >= min(min_graphs, ns.size) and k < sizes.size - 1:
            cls, acc = cls + 1, 0
    if acc < min(min_graphs, ns.size) and cls > 0:
        cls_of_size[cls_of_size == cls] = cls - 1
    return cls_of_size[np.searchsorted(sizes, ns)]


def degree_bin(degrees: np.ndarray) -> np.ndarray:
    return np.searchsorted(DEGREE_EDGES, np.asarray(degrees, dtype=np.float64), side="right") - 1


def degree_histograms(graphs: list[Graph], classes: np.ndarray) -> np.ndarray:
    """Pre-noise query: per class, the histogram of normalised degrees over all its graphs' nodes, flattened."""
    out = np.zeros((int(classes.max()) + 1, DEGREE_BINS))
    for g, c in zip(graphs, classes):
        np.add.at(out[c], degree_bin(g.degrees()), 1.0)
    return out.ravel()


def quantile_degrees(hist: np.ndarray, n: int) -> np.ndarray:
    """Ascending degrees of ``n`` nodes read off a degree histogram (mid-rank quantiles; exact bins give their
    degree, wide bins spread uniformly), capped at ``n - 1``."""
    h = np.clip(hist, 0.0, None)
    if h.sum() <= 0:
        h = np.ones_like(h)
    q = (np.arange(n) + 0.5) / n
    cdf = np.cumsum(h) / h.sum()
    b = np.minimum(np.searchsorted(cdf, q, side="left"), h.size - 1)
    lo = DEGREE_EDGES[b]
    width = np.minimum(DEGREE_EDGES[b + 1], float(n)) - lo
    prev = np.where(b > 0, cdf[np.maximum(b - 1, 0)], 0.0)
    frac = np.clip((q - prev) / np.maximum(cdf[b] - prev, 1e-12), 0.0, 1.0)
    d = np.where(width > 1.0, lo + frac * np.maximum(width - 1.0, 0.0), lo)
    return np.clip(d, 0.0, max(n - 1, 0))


def shrink_by_class(noisy: np.ndarray, classes: np.ndarray, noise_var: float) -> np.ndarray:
    """Empirical-Bayes shrinkage of noisy per-graph values towards their class mean (post-processing): weight
    ``tau^2 / (tau^2 + noise_var)`` with the between-graph variance ``tau^2`` estimated by moments. Small graphs with
    few triangles (ENZYMES) get their class's level instead of Laplace noise of scale (n - 2) / epsilon."""
    out = np.asarray(noisy, dtype=np.float64).copy()
    for c in np.unique(classes):
        sel = classes == c
        mu = float(out[sel].mean())
        tau2 = max(0.0, float(out[sel].var()) - noise_var)
        out[sel] = mu + (out[sel] - mu) * (tau2 / (tau2 + noise_var))
    return out


def shrink_for_bernoulli(d: np.ndarray, n: int) -> np.ndarray:
    """Expected degrees whose realised spread (plus independent-edge Bernoulli variance) matches ``d``'s spread."""
    mean = float(d.mean())
    var = float(d.var())
    noise = mean * max(0.0, 1.0 - mean / max(n - 1, 1))
    if var <= 0:
        return d
    return mean + (d - mean) * math.sqrt(max(0.0, var - noise) / var)


def deconvolve_counts(noisy: np.ndarray, pairs: np.ndarray, scale: float, classes: np.ndarray, *, grid: int = 100,
                      iters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Empirical-Bayes edge counts (post-processing): per size class, the density prior is the nonparametric
    maximum-likelihood mixing distribution on a grid of ``grid + 1`` densities (EM, Laplace likelihood of the
    released counts); each graph gets its posterior mean and variance of ``m``. Why: at epsilon 1 the released count
    has Laplace scale ~3, which on a 7-node near-clique is 3 of its 21 edges; when a class's graphs share a density
    (IMDB-MULTI: most 7-node ego networks are cliques) the prior pulls each count back to it, and clipping at
    ``C(n, 2)`` no longer biases the counts of full graphs downwards."""
    theta = np.linspace(0.0, 1.0, grid + 1)
    post_mean, post_var = np.zeros(noisy.size), np.zeros(noisy.size)
    for c in np.unique(classes):
        sel = np.flatnonzero(classes == c)
        vals = theta[None, :] * pairs[sel, None]                      # candidate true counts per graph
        loglik = -np.abs(noisy[sel, None] - vals) / scale
        lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))      # per-row scaling cancels in the posterior
        w = np.full(theta.size, 1.0 / theta.size)
        for _ in range(iters):
            post = lik * w
            post /= post.sum(axis=1, keepdims=True)
            w = post.mean(axis=0)
        post = lik * w
        post /= post.sum(axis=1, keepdims=True)
        post_mean[sel] = np.sum(post * vals, axis=1)
        post_var[sel] = np.sum(post * vals ** 2, axis=1) - post_mean[sel] ** 2
    return post_mean, np.clip(post_var, 0.0, None)


def histogram_variance(hist: np.ndarray, n_max: int) -> float:
    """Variance of the degree distribution a (projected) class histogram describes: exact bins at their degree, wide
    bins at their midpoint (capped by the class's largest ``n - 1``) plus their uniform within-bin variance."""
    h = np.clip(hist, 0.0, None)
    if h.sum() <= 0:
        return 0.0
    lo = DEGREE_EDGES[:-1]
    hi = np.maximum(np.minimum(DEGREE_EDGES[1:], float(n_max)), lo + 1.0) - 1.0  # last degree inside the bin
    mid, spread = (lo + hi) / 2.0, (hi - lo) ** 2 / 12.0
    w = h / h.sum()
    mu = float(np.sum(w * mid))
    return float(np.sum(w * ((mid - mu) ** 2 + spread)))


def within_graph_variance(pooled_var: float, means: np.ndarray, sizes: np.ndarray, mean_noise_var: np.ndarray,
                          *, split_means: np.ndarray | None = None) -> np.ndarray:
    """Per-graph degree variance inside one size class (post-processing of released values).

    Why: a class histogram pools nodes of graphs with different densities, so its variance is the within-graph
    variance *plus* the spread of the graphs' mean degrees (law of total variance; on IMDB-MULTI the between part is
    ~75% of the pooled one). Reading one graph's degrees off the pooled quantiles therefore gives it the whole
    class's spread. The between part is estimated from the DP mean degrees ``2 m / n`` (their node-weighted
    variance minus the known Laplace variance), the rest is split over graphs in proportion to the binomial form
    ``mu (1 - mu / (n - 1))`` of ``split_means`` (default ``means``; the fit passes the denoised means there and the
    raw noisy ones, with their noise variance, for the between part), so a near-clique (ego networks) gets
    near-equal degrees and a sparse graph keeps its share."""
    w = sizes / sizes.sum()
    mu = float(np.sum(w * means))
    between = max(0.0, float(np.sum(w * (means - mu) ** 2)) - float(np.sum(w * mean_noise_var)))
    within = max(0.0, pooled_var - between)
    sm = means if split_means is None else split_means
    form = np.clip(sm, 0.0, None) * np.clip(1.0 - sm / np.maximum(sizes - 1.0, 1.0), 0.0, None)
    avg = float(np.sum(w * form))
    return np.full(means.shape, within) if avg <= 0 else within * form / avg


def graph_degrees(hist: np.ndarray, n: int, m: float, var: float) -> np.ndarray:
    """Ascending expected degrees of one graph: the class histogram's quantile *shape* (standardised), centred on
    the graph's mean degree ``2 m / n`` with variance ``var``, kept in ``[0, n - 1]`` with the sum ``2 m``."""
    q = quantile_degrees(hist, n)
    mean = 2.0 * m / max(n, 1)
    sd = float(q.std())
    z = (q - q.mean()) / sd if sd > 0 else np.zeros(n)
    d = mean + math.sqrt(max(var, 0.0)) * z
    for _ in range(20):  # clipping moves the sum; shift back (a few rounds converge: the clip set only grows)
        d = np.clip(d, 0.0, max(n - 1, 0))
        gap = (2.0 * m - d.sum()) / n
        if abs(gap) < 1e-9:
            break
        d = d + gap
    return np.sort(np.clip(d, 0.0, max(n - 1, 0)))


#: A class is sampled with degree caps when its released pooled degree variance is below this fraction of the
#: binomial variance independent edges realise at its densities
SUB_BINOMIAL = 0.75
#: and with the decoder's pair order when its released triangles exceed G(n, m)'s expectation by this factor
EXCESS_TRIANGLES = 1.5


def gnm_triangles(n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Expected triangle count of G(n, m): ``C(n, 3) (m)_3 / (P)_3`` with ``P = C(n, 2)`` (falling factorials)."""
    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    pairs = n * (n - 1) / 2.0
    out = n * (n - 1) * (n - 2) / 6.0
    for k in range(3):
        out = out * np.clip((m - k) / np.maximum(pairs - k, 1.0), 0.0, 1.0)
    return out


#: z of the lower confidence bound on the collection's triangle count (triangle_lower_bound)
TRIANGLE_Z = 1.0


def triangle_lower_bound(noisy_scaled: np.ndarray, ns: np.ndarray, scale: float) -> float:
    """Lower confidence bound of the collection's total triangle count (post-processing): the released
    ``T_g / (n_g - 2)`` (graphs with ``n >= 3``, Laplace ``scale``) times ``n_g - 2`` sum to an unbiased total with
    standard deviation ``sqrt(2) scale sqrt(sum (n - 2)^2)``; the bound is the total minus ``TRIANGLE_Z`` of those.
    Why: at epsilon 1 a class's mean triangle count is uncertain by ~5 per graph on MUTAG (true count 0) and ~5-19
    on ENZYMES (true 10-40); closing noise triangles into triangle-free molecules cost MUTAG's LCC and clustering
    MMD more than G(n, m) (one seeded fit: LCC error 6.5 against 2.1), so structure needs evidence beyond the noise,
    pooled over the whole collection for power."""
    w = ns[ns >= 3].astype(np.float64) - 2.0
    sd = math.sqrt(2.0) * scale * math.sqrt(float(np.sum(w ** 2)))
    return float(np.sum(np.asarray(noisy_scaled, dtype=np.float64) * w)) - TRIANGLE_Z * sd


#: Level of the triangle-presence test (:func:`triangles_present`): its false-positive rate on a collection without
#: triangles, proved by a Chernoff bound at the released Laplace scale
TRIANGLE_FP = 0.01
#: Grid of ``lambda * scale * max(a)`` over which the Chernoff threshold is minimised (any point gives a valid bound)
CHERNOFF_GRID = np.linspace(0.001, 0.999, 999)


def laplace_sum_threshold(weights: np.ndarray, scale: float, beta: float) -> float:
    r"""A ``t`` with :math:`P(\sum_g a_g L_g \ge t) \le \beta` for independent :math:`L_g \sim
    \mathrm{Lap}(b)` (``scale`` b, ``weights`` a, public). Chernoff: :math:`E e^{\lambda a L} = 1 / (1 - \lambda^2
    a^2 b^2)` for :math:`\lambda < 1 / (b \max a)`, so for every such :math:`\lambda`
    :math:`t(\lambda) = (\ln(1/\beta) - \sum_g \ln(1 - \lambda^2 a_g^2 b^2)) / \lambda` is a valid threshold;
    the smallest over a fixed grid is returned (it depends on public values only). Why not a Gaussian z: the sum of
    a few hundred Laplace variables has heavier tails than its normal approximation; the bound holds for any
    collection size (on MUTAG's 188 graphs, weights ``n - 2``, it is 3.06 noise standard deviations at 1%)."""
    ab = np.abs(np.asarray(weights, dtype=np.float64)) * float(scale)
    if ab.size == 0 or ab.max() <= 0:
        return 0.0
    lam = CHERNOFF_GRID[:, None] / ab.max()
    t = (math.log(1.0 / beta) - np.sum(np.log1p(-(lam * ab[None, :]) ** 2), axis=1)) / lam[:, 0]
    return float(t.min())


def triangles_present(noisy_scaled: np.ndarray, ns: np.ndarray, scale: float, beta: float = TRIANGLE_FP) -> bool:
    """Post-processing test "the collection has triangles": the released ``T_g / (n_g - 2)`` (graphs with
    ``n >= 3``, Laplace ``scale``), summed with weights 1 or with weights ``n_g - 2`` (the triangle total), exceed
    their :func:`laplace_sum_threshold` at ``beta / 2`` each. On a collection without triangles each sum is pure
    noise, so (union bound) the test fires with probability at most ``beta``, whatever the collection. Why two
    weightings: equal weights suit sparse graphs whose triangles grow like ``n`` (ENZYMES: 1.6 thresholds of signal
    at epsilon 1 against 1.3 for the total), the total suits dense ones whose triangles grow faster.
    Why: the previous one-standard-deviation rule passed on noise in 12.5% of 40 seeded MUTAG releases (triangle-free
    molecules) at epsilon 1 and closed triangles into them."""
    w = ns[ns >= 3].astype(np.float64) - 2.0
    x = np.asarray(noisy_scaled, dtype=np.float64)
    if w.size == 0:
        return False
    return bool(float(np.sum(x)) > laplace_sum_threshold(np.ones_like(w), scale, beta / 2.0)
                or float(np.sum(x * w)) > laplace_sum_threshold(w, scale, beta / 2.0))


#: A class is drawn as ego networks when its released maxima cover at least this share of ``n - 1``, two noise
#: standard deviations included (hub_share)
HUB_SHARE = 0.5


def hub_share(max_deg: np.ndarray, ns: np.ndarray, scale: float) -> tuple[float, float]:
    """Released ``sum_g max_degree_g / sum_g (n_g - 1)`` of a set of graphs and the standard deviation of its Laplace
    noise (``scale`` per graph). 1 when every graph has a node linked to all others (an ego network's ego), ~0.15 on
    ENZYMES, ~0.2 on MUTAG."""
    den = max(float(np.sum(np.maximum(ns - 1, 0))), 1.0)
    return float(np.sum(max_deg)) / den, math.sqrt(2.0 * max_deg.size) * scale / den


def sampler_plan(classes: np.ndarray, ns: np.ndarray, edges: np.ndarray, pooled_var: np.ndarray, tri: np.ndarray,
                 tri_lower: float = math.inf, max_deg: np.ndarray | None = None, max_scale: float = 0.0,
                 present: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per graph, from released values and public node counts only (post-processing), decided per size class:

    * ``ego``: the class's released maximum degrees (``max_deg``, Laplace ``max_scale`` each) cover at least
      ``HUB_SHARE`` of ``n - 1`` beyond two noise standard deviations (:func:`hub_share`: a node linked to all others
      in most graphs), and the class's released triangles reach the number a hub implies (every edge not at the hub
      closes one triangle with it: ``sum (m - (n - 1))``). Such graphs are ego networks (IMDB: an actor and the
      casts of the actor's films) and are drawn as a hub plus a union of cliques fitted to the released edge and
      triangle counts (:func:`graphrelease.generators.deep_conditional.ego_draw`); the two flags below are off there.
      True shares: 1.0 on IMDB-MULTI and IMDB-BINARY, 0.15 / 0.2 on ENZYMES / MUTAG;

    * ``capped``: the class's released *pooled* degree variance (``pooled_var[c]``, read off its histogram; an upper
      bound on the within-graph variance, and robust where the between-graph part is badly estimated) is below
      ``SUB_BINOMIAL`` times the node-weighted binomial ``mu (1 - mu / (n - 1))``. Independent edges cannot realise
      less than the binomial; measured true ratios are 0.31-0.43 on ENZYMES and 0.29 on MUTAG (valence-bounded
      molecules and proteins) and 3.1-22 on IMDB-MULTI and IMDB-BINARY (ego networks), so three quarters separates
      the kinds with room for noise (with the within-graph estimate instead, IMDB-MULTI's widest class, whose
      between part is badly estimated, was capped and lost degree cosine 0.77 -> 0.75);
    * ``structured``: the class's released triangles exceed ``EXCESS_TRIANGLES`` times G(n, m)'s expectation at the
      released edge counts, and the collection's lower bound ``tri_lower`` (:func:`triangle_lower_bound`) exceeds
      the collection's expectation (evidence of excess beyond the noise), and ``present``
      (:func:`triangles_present`: false positives on a triangle-free collection at most ``TRIANGLE_FP``). Elsewhere
      the graphs are drawn G(n, m)-like (uniform pair order): measured true ratios
      are 1.00-1.31 on IMDB-MULTI, whose degree columns the decoder's extra degree spread made worse than G(n, m)'s,
      and 1.8-3.1 on ENZYMES, 1.15-1.52 on IMDB-BINARY, 0 on MUTAG."""
    nf = ns.astype(np.float64)
    mu = 2.0 * edges / np.maximum(nf, 1.0)
    binom = mu * np.clip(1.0 - mu / np.maximum(nf - 1.0, 1.0), 0.0, None)
    expected = gnm_triangles(ns, edges)
    capped, structured = np.zeros(ns.size, dtype=bool), np.zeros(ns.size, dtype=bool)
    for c in np.unique(classes):
        sel = classes == c
        b = float(np.sum(nf[sel] * binom[sel])) / max(float(np.sum(nf[sel])), 1.0)
        capped[sel] = b > 0 and float(pooled_var[c]) < SUB_BINOMIAL * b
        structured[sel] = float(np.sum(tri[sel])) > EXCESS_TRIANGLES * float(np.sum(expected[sel]))
    structured &= tri_lower > float(np.sum(expected)) and present
    ego = np.zeros(ns.size, dtype=bool)
    if max_deg is not None:
        for c in np.unique(classes):
            sel = classes == c
            share, sd = hub_share(max_deg[sel], ns[sel], max_scale)
            implied = float(np.sum(np.clip(edges[sel] - (nf[sel] - 1.0), 0.0, None)))
            ego[sel] = share - 2.0 * sd >= HUB_SHARE and float(np.sum(tri[sel])) >= implied
    return capped & ~ego, structured & ~ego, ego


def part_size_prior(hist: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """Node-level density over degrees ``0 .. max(ns) - 1`` of one ego class's non-hub nodes (post-processing of its
    projected histogram ``hist`` and the public node counts ``ns`` of its graphs): the hubs (one node of degree
    ``n - 1`` per graph) are taken out of their bins, wide bins are spread evenly over their degrees. In a hub plus
    disjoint cliques a non-hub node of a ``c``-clique has degree ``c``, so this is the class's distribution of the
    clique size a node sits in (:func:`graphrelease.generators.deep_conditional.ego_clique_sizes`)."""
    top = int(ns.max())
    h = np.clip(np.asarray(hist, dtype=np.float64), 0.0, None).copy()
    np.subtract.at(h, degree_bin(ns - 1), 1.0)  # the hubs
    h = np.clip(h, 0.0, None)
    out = np.zeros(top)
    for b in range(h.size):
        lo, hi = int(DEGREE_EDGES[b]), int(min(DEGREE_EDGES[b + 1], top))
        if hi > lo:
            out[lo:hi] += h[b] / (hi - lo)
    return out


@dataclass(frozen=True)
class CollectionStats:
    """Released (post-processed) statistics, one entry per graph in collection order."""

    num_nodes: np.ndarray          # public
    edges: np.ndarray              # combined DP edge counts
    degrees: list[np.ndarray]      # ascending DP degree sequences, summing to 2 * edges
    triangles: np.ndarray          # DP triangle counts
    components: np.ndarray         # DP component counts, rounded to [1, n]
    #: ascending *realised* degree targets (the within-graph variance itself, before the Bernoulli shrink that
    #: turns them into the expected degrees above); the sampler caps node degrees at their rounding
    targets: list[np.ndarray] | None = None
    #: the sampler's per-graph plan, decided per size class from released values (:func:`sampler_plan`): cap node
    #: degrees at the targets (sub-binomial class) / order pairs by the decoder (class with excess triangles)
    capped: np.ndarray | None = None
    structured: np.ndarray | None = None
    #: ego-network class (hub plus cliques, :func:`sampler_plan`)
    ego: np.ndarray | None = None
    #: for the ego draw's clique sizes: the released (Laplace) edge counts, the Laplace scales of an edge count and
    #: of a scaled triangle count, each graph's size class and the classes' :func:`part_size_prior` (rows padded)
    raw_edges: np.ndarray | None = None
    scales: np.ndarray | None = None
    classes: np.ndarray | None = None
    part_prior: np.ndarray | None = None

    def ego_inputs(self, i: int) -> tuple[np.ndarray, float, float, float] | None:
        """(clique-size prior, released edge count, its Laplace scale, Laplace scale of the triangle count) of row
        ``i``; ``None`` for tables without them (older saves draw cliques as before)."""
        if self.part_prior is None or self.raw_edges is None or self.scales is None or self.classes is None:
            return None
        n = int(self.num_nodes[i])
        return (self.part_prior[int(self.classes[i])][:n], float(self.raw_edges[i]), float(self.scales[0]),
                float(self.scales[1]) * max(n - 2, 1))

    def degree_targets(self, i: int) -> np.ndarray:
        return self.degrees[i] if self.targets is None else self.targets[i]

    def plan(self, i: int) -> tuple[bool, bool, bool]:
        """(capped, structured, ego) of row ``i``; a table without a plan (older saves) samples as before."""
        return (bool(self.capped[i]) if self.capped is not None else False,
                bool(self.structured[i]) if self.structured is not None else True,
                bool(self.ego[i]) if self.ego is not None else False)

    def to_dict(self) -> dict[str, Any]:
        out = {"num_nodes": self.num_nodes.tolist(), "edges": self.edges.tolist(),
               "degrees": [d.tolist() for d in self.degrees], "triangles": self.triangles.tolist(),
               "components": self.components.tolist()}
        if self.targets is not None:
            out["targets"] = [d.tolist() for d in self.targets]
        for key in ("capped", "structured", "ego"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key).astype(bool).tolist()
        for key in ("raw_edges", "scales", "classes", "part_prior"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key).tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CollectionStats":
        targets = [np.asarray(x, dtype=np.float64) for x in d["targets"]] if "targets" in d else None
        return cls(np.asarray(d["num_nodes"], dtype=np.int64), np.asarray(d["edges"], dtype=np.float64),
                   [np.asarray(x, dtype=np.float64) for x in d["degrees"]],
                   np.asarray(d["triangles"], dtype=np.float64), np.asarray(d["components"], dtype=np.int64),
                   targets, *(np.asarray(d[k], dtype=bool) if k in d else None
                              for k in ("capped", "structured", "ego")),
                   *(np.asarray(d[k], dtype=np.int64 if k == "classes" else np.float64) if k in d else None
                     for k in ("raw_edges", "scales", "classes", "part_prior")))


def release_collection_stats(coll: GraphCollection, budget: Any, rng: np.random.Generator, *, epsilon: float,
                             cap: int, stage: str, shares: dict[str, float] | None = None) -> CollectionStats:
    """Charge and release the five per-graph statistics (sequential composition, ``epsilon`` in total)."""
    shares = dict(DEFAULT_SHARES if shares is None else shares)
    if set(shares) != set(DEFAULT_SHARES) or abs(sum(shares.values()) - 1.0) > 1e-9 or min(shares.values()) <= 0:
        raise OptionError(f"shares must be positive, have the keys {sorted(DEFAULT_SHARES)} and sum to 1")
    graphs = [truncate(g, cap) for g in coll]
    ns = np.array([g.num_nodes for g in graphs], dtype=np.int64)
    e_m, e_d, e_t, e_c, e_x = (epsilon * shares[k] for k in ("edges", "degrees", "triangles", "components",
                                                             "max_degree"))
    noisy_m = charge_laplace(budget, rng, np.array([g.num_edges for g in graphs], dtype=np.float64), epsilon=e_m,
                             sensitivity=EDGE_SENSITIVITY, stage=f"{stage}.edge_counts", proof=PROOF,
                             note="per-graph edge counts, L1 sensitivity 1 over the collection")
    classes = size_classes(ns)
    noisy_h = charge_laplace(budget, rng, degree_histograms(graphs, classes), epsilon=e_d,
                             sensitivity=DEGREE_HISTOGRAM_SENSITIVITY, stage=f"{stage}.degree_histograms", proof=PROOF,
                             note=f"per-size-class degree histograms, {DEGREE_BINS} bins; L1 sensitivity 4"
                             ).reshape(-1, DEGREE_BINS)
    class_nodes = np.bincount(classes, weights=ns, minlength=noisy_h.shape[0])
    # bins above the class's largest possible degree (public n - 1) hold only noise: drop them before projecting
    possible = DEGREE_EDGES[None, :-1] <= (np.array([ns[classes == c].max() for c in range(noisy_h.shape[0])])
                                           - 1)[:, None]
    # and wide bins whose noisy count is within the Laplace noise's reach (a bin's noise exceeds
    # scale * ln(bins / 2beta) with probability beta / bins; beta 1e-2) are indistinguishable from empty: the
    # variance read off the histogram below is not robust to noise mass far out in the wide high-degree bins
    floor = DEGREE_HISTOGRAM_SENSITIVITY / e_d * math.log(DEGREE_BINS / 2e-2)
    projected = np.zeros_like(noisy_h)
    for c, (h, t, ok) in enumerate(zip(noisy_h, class_nodes, possible)):
        exact = np.diff(DEGREE_EDGES) == 1
        top = np.arange(h.size) == np.argmax(np.where(ok, h, -np.inf))
        # the tail beyond the last bin above the floor is cut too: noise in far exact bins (MUTAG: degree 16 of
        # molecules of degree <= 4) inflated the variance read below 2-3x
        last = int(np.flatnonzero(ok & ((h >= floor) | top)).max())
        ok = ok & ((h >= floor) | exact | top) & (np.arange(h.size) <= last)
        projected[c, ok] = norm_sub(h[ok], total=float(t))
    noisy_h = projected
    noisy_t = charge_laplace(budget, rng, scaled_triangles(graphs), epsilon=e_t,
                             sensitivity=SCALED_TRIANGLE_SENSITIVITY, stage=f"{stage}.scaled_triangles", proof=PROOF,
                             note="per-graph triangle count / (n - 2), L1 sensitivity 1 over the collection")
    noisy_c = charge_laplace(budget, rng, np.array([component_count(g) for g in graphs], dtype=np.float64),
                             epsilon=e_c, sensitivity=COMPONENT_SENSITIVITY, stage=f"{stage}.components", proof=PROOF,
                             note="per-graph connected-component counts, L1 sensitivity 1 over the collection")
    noisy_x = charge_laplace(budget, rng, max_degrees(graphs), epsilon=e_x, sensitivity=MAX_DEGREE_SENSITIVITY,
                             stage=f"{stage}.max_degrees", proof=PROOF,
                             note="per-graph maximum degrees, L1 sensitivity 1 over the collection")
    # ---- post-processing (reads released values and public node counts only)
    # component counts at share 0.05 carry Laplace scale 20 at epsilon 1: alone they are noise, shrunk to their
    # class's level they say "connected" where the class is (ego networks)
    comps = np.clip(np.rint(shrink_by_class(noisy_c, classes, 2.0 * (COMPONENT_SENSITIVITY / e_c) ** 2)), 1,
                    np.maximum(ns, 1)).astype(np.int64)
    scaled = shrink_by_class(noisy_t, classes[ns >= 3], 2.0 * (SCALED_TRIANGLE_SENSITIVITY / e_t) ** 2)
    edges, edge_var = deconvolve_counts(noisy_m, ns * (ns - 1) / 2.0, EDGE_SENSITIVITY / e_m, classes)
    means = 2.0 * edges / np.maximum(ns, 1)
    nf_all = np.maximum(ns, 1).astype(np.float64)
    # the between-graph variance from the *raw* released counts: their Laplace noise is independent with known
    # variance, so the moment estimate is unbiased. (The empirical-Bayes posterior means plus posterior variances
    # were not: the density prior is misspecified for sparse classes of mixed sizes, whose mean degree, not density,
    # is what stays put; on ENZYMES at epsilon 1 that put the between part above the pooled variance and zeroed the
    # within-graph variance, true ~0.95.)
    raw_means = 2.0 * np.clip(noisy_m, 0.0, ns * (ns - 1) / 2.0) / nf_all
    raw_noise = 4.0 * 2.0 * (EDGE_SENSITIVITY / e_m) ** 2 / nf_all ** 2
    var_g, pooled = np.zeros(len(ns)), np.zeros(noisy_h.shape[0])
    for c in range(noisy_h.shape[0]):
        sel = classes == c
        pooled[c] = histogram_variance(noisy_h[c], int(ns[sel].max()))
        var_g[sel] = within_graph_variance(pooled[c], raw_means[sel], nf_all[sel], raw_noise[sel],
                                           split_means=means[sel])
    degrees, targets, tri = [], [], np.zeros(len(ns))
    tpos = 0
    for i, n in enumerate(ns):
        target = graph_degrees(noisy_h[classes[i]], int(n), float(edges[i]), var_g[i])
        targets.append(target)
        d = shrink_for_bernoulli(target, int(n))
        degrees.append(d)
        if n >= 3:
            t_max = min(n * (n - 1) * (n - 2) / 6.0, float(np.sum(d * np.maximum(d - 1.0, 0.0) / 2.0)) / 3.0)
            tri[i] = float(np.clip(scaled[tpos] * (n - 2), 0.0, t_max))
            tpos += 1
    capped, structured, ego = sampler_plan(classes, ns, edges, pooled, tri,
                                           triangle_lower_bound(noisy_t, ns, SCALED_TRIANGLE_SENSITIVITY / e_t),
                                           noisy_x, MAX_DEGREE_SENSITIVITY / e_x,
                                           triangles_present(noisy_t, ns, SCALED_TRIANGLE_SENSITIVITY / e_t))
    # an ego class's hub means at least n - 1 edges in each graph (an EB count below it left graphs disconnected)
    edges = np.where(ego, np.maximum(edges, ns - 1.0), edges)
    prior = np.zeros((noisy_h.shape[0], int(ns.max())))
    for c in range(noisy_h.shape[0]):
        prior[c, :int(ns[classes == c].max())] = part_size_prior(noisy_h[c], ns[classes == c])
    scales = np.array([EDGE_SENSITIVITY / e_m, SCALED_TRIANGLE_SENSITIVITY / e_t])
    return CollectionStats(ns, edges, degrees, tri, comps, targets, capped, structured, ego, noisy_m, scales, classes,
                           prior)
