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
  sensitivity 1 over the collection.

Post-processing: each class histogram is projected onto non-negative counts summing to the class's (public) number
of nodes (norm-sub); each graph's degree sequence is its class's histogram quantile function read at the graph's
ranks, rescaled to twice its DP edge count, then shrunk towards its mean so that the spread of the *realised*
degrees (expected-degree variance plus the Bernoulli variance of independent edges) matches the histogram's; triangles clipped to ``[0, min(C(n, 3), sum_v C(d_v, 2) / 3)]``.
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
#: Default shares of epsilon (sum 1): edge counts, degree histograms, scaled triangle counts, component counts.
DEFAULT_SHARES = {"edges": 0.35, "degrees": 0.3, "triangles": 0.3, "components": 0.05}
EDGE_SENSITIVITY = 1.0
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


@dataclass(frozen=True)
class CollectionStats:
    """Released (post-processed) statistics, one entry per graph in collection order."""

    num_nodes: np.ndarray          # public
    edges: np.ndarray              # combined DP edge counts
    degrees: list[np.ndarray]      # ascending DP degree sequences, summing to 2 * edges
    triangles: np.ndarray          # DP triangle counts
    components: np.ndarray         # DP component counts, rounded to [1, n]

    def to_dict(self) -> dict[str, Any]:
        return {"num_nodes": self.num_nodes.tolist(), "edges": self.edges.tolist(),
                "degrees": [d.tolist() for d in self.degrees], "triangles": self.triangles.tolist(),
                "components": self.components.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CollectionStats":
        return cls(np.asarray(d["num_nodes"], dtype=np.int64), np.asarray(d["edges"], dtype=np.float64),
                   [np.asarray(x, dtype=np.float64) for x in d["degrees"]],
                   np.asarray(d["triangles"], dtype=np.float64), np.asarray(d["components"], dtype=np.int64))


def release_collection_stats(coll: GraphCollection, budget: Any, rng: np.random.Generator, *, epsilon: float,
                             cap: int, stage: str, shares: dict[str, float] | None = None) -> CollectionStats:
    """Charge and release the three per-graph statistics (sequential composition, ``epsilon`` in total)."""
    shares = dict(DEFAULT_SHARES if shares is None else shares)
    if set(shares) != set(DEFAULT_SHARES) or abs(sum(shares.values()) - 1.0) > 1e-9 or min(shares.values()) <= 0:
        raise OptionError(f"shares must be positive, have the keys {sorted(DEFAULT_SHARES)} and sum to 1")
    graphs = [truncate(g, cap) for g in coll]
    ns = np.array([g.num_nodes for g in graphs], dtype=np.int64)
    e_m, e_d, e_t, e_c = (epsilon * shares[k] for k in ("edges", "degrees", "triangles", "components"))
    noisy_m = charge_laplace(budget, rng, np.array([g.num_edges for g in graphs], dtype=np.float64), epsilon=e_m,
                             sensitivity=EDGE_SENSITIVITY, stage=f"{stage}.edge_counts", proof=PROOF,
                             note="per-graph edge counts, L1 sensitivity 1 over the collection")
    classes = size_classes(ns)
    noisy_h = charge_laplace(budget, rng, degree_histograms(graphs, classes), epsilon=e_d,
                             sensitivity=DEGREE_HISTOGRAM_SENSITIVITY, stage=f"{stage}.degree_histograms", proof=PROOF,
                             note=f"per-size-class degree histograms, {DEGREE_BINS} bins; L1 sensitivity 4"
                             ).reshape(-1, DEGREE_BINS)
    class_nodes = np.bincount(classes, weights=ns, minlength=noisy_h.shape[0])
    noisy_h = np.stack([norm_sub(h, total=float(t)) for h, t in zip(noisy_h, class_nodes)]).astype(np.float64)
    noisy_t = charge_laplace(budget, rng, scaled_triangles(graphs), epsilon=e_t,
                             sensitivity=SCALED_TRIANGLE_SENSITIVITY, stage=f"{stage}.scaled_triangles", proof=PROOF,
                             note="per-graph triangle count / (n - 2), L1 sensitivity 1 over the collection")
    noisy_c = charge_laplace(budget, rng, np.array([component_count(g) for g in graphs], dtype=np.float64),
                             epsilon=e_c, sensitivity=COMPONENT_SENSITIVITY, stage=f"{stage}.components", proof=PROOF,
                             note="per-graph connected-component counts, L1 sensitivity 1 over the collection")
    comps = np.clip(np.rint(noisy_c), 1, np.maximum(ns, 1)).astype(np.int64)
    # ---- post-processing (reads released values and public node counts only)
    scaled = shrink_by_class(noisy_t, classes[ns >= 3], 2.0 * (SCALED_TRIANGLE_SENSITIVITY / e_t) ** 2)
    edges, degrees, tri = np.zeros(len(ns)), [], np.zeros(len(ns))
    tpos = 0
    for i, n in enumerate(ns):
        pairs = n * (n - 1) / 2.0
        m = float(np.clip(noisy_m[i], 0.0, pairs))
        d = quantile_degrees(noisy_h[classes[i]], int(n))
        d = np.clip(d * (2.0 * m / d.sum()), 0.0, max(n - 1, 0)) if d.sum() > 0 else np.full(n, 2.0 * m / max(n, 1))
        d = shrink_for_bernoulli(d, int(n))
        edges[i] = m
        degrees.append(d)
        if n >= 3:
            t_max = min(n * (n - 1) * (n - 2) / 6.0, float(np.sum(d * np.maximum(d - 1.0, 0.0) / 2.0)) / 3.0)
            tri[i] = float(np.clip(scaled[tpos] * (n - 2), 0.0, t_max))
            tpos += 1
    return CollectionStats(ns, edges, degrees, tri, comps)
