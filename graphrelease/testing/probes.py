"""Sensitivity probes: run a mechanism's pre-noise query on coupled neighbouring inputs and measure the change.

PRIVACY.md section 2 asks every mechanism for a test that runs the pre-noise query :math:`f` on a graph and on a
neighbour (one edge / node / graph changed), *with identical randomness* (same sampled batch, same random
projections), over many random draws, and asserts

.. math:: \\|f(G) - f(G')\\| \\le \\Delta \\cdot (1 + 10^{-6}).

A probe cannot prove a bound (it samples neighbours), but a probe that exceeds the declared bound proves a bug.

Usage
-----
``query(data, rng)`` computes the pre-noise output from a :class:`~graphrelease.graph.Graph` (or
:class:`~graphrelease.graph.GraphCollection`) and a ``numpy.random.Generator``; it must take ALL its randomness
from ``rng`` so that the two calls are coupled. A neighbour function ``neighbour_fn(data, rng) -> Neighbour``
returns the coupled pair (``base``, ``neighbour``) and a description of the change. Poisson sampling keyed by a
stable id (node id, edge ``(u, v)``) stays coupled when one item is added or removed: use
:func:`coupled_poisson_mask`.

>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g, _ = Graph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3]]))
>>> count = lambda graph, rng: np.array([float(graph.num_edges)])
>>> r = probe_sensitivity(count, g, edge_neighbours, declared=1.0, draws=20, rng=np.random.default_rng(0))
>>> r.max_ratio
1.0
>>> assert_within(r)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

GraphLike = Graph | GraphCollection


@dataclass(frozen=True)
class Neighbour:
    """A coupled pair of neighbouring inputs and what differs between them."""

    base: GraphLike
    neighbour: GraphLike
    change: str


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of a probe: ratios :math:`\\|f(G)-f(G')\\| / \\Delta` over the draws."""

    max_ratio: float
    mean_ratio: float
    worst_case: dict = field(default_factory=dict)
    draws: int = 0
    declared: float = 1.0
    norm: str = "l2"

    def __str__(self) -> str:
        return (
            f"max ratio {self.max_ratio:.6g}, mean {self.mean_ratio:.4g} over {self.draws} draws "
            f"(declared {self.norm} sensitivity {self.declared:g}; worst: {self.worst_case.get('change', '?')})"
        )


# ----------------------------------------------------------------------------------------------- flattening
def flatten_output(value: Any) -> np.ndarray:
    """Flatten a query output (scalar, numpy array, torch tensor, or nested dict/list/tuple of them) to float64.

    Dicts are flattened in sorted key order so both sides of a probe line up.
    """
    parts: list[np.ndarray] = []

    def visit(v: Any) -> None:
        if isinstance(v, dict):
            for k in sorted(v):
                visit(v[k])
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        elif hasattr(v, "detach"):  # torch tensor without importing torch
            parts.append(np.asarray(v.detach().cpu().double().numpy()).ravel())
        elif hasattr(v, "toarray"):  # scipy sparse
            parts.append(np.asarray(v.toarray(), dtype=np.float64).ravel())
        else:
            parts.append(np.asarray(v, dtype=np.float64).ravel())

    visit(value)
    return np.concatenate(parts) if parts else np.zeros(0)


def output_distance(a: Any, b: Any, norm: str = "l2") -> float:
    """L2 (Gaussian mechanisms) or L1 (Laplace) distance between two query outputs of the same structure."""
    fa, fb = flatten_output(a), flatten_output(b)
    if fa.shape != fb.shape:
        raise OptionError(
            f"query outputs differ in size ({fa.size} vs {fb.size}): the query's output shape must not depend on "
            "the private input (pad, or key outputs by public ids)"
        )
    diff = fa - fb
    if norm == "l2":
        return float(np.sqrt(np.sum(diff * diff)))
    if norm == "l1":
        return float(np.sum(np.abs(diff)))
    raise OptionError(f"norm must be 'l2' or 'l1', got {norm!r}")


# ----------------------------------------------------------------------------------------------- probe
def probe_sensitivity(
    query: Callable[[GraphLike, np.random.Generator], Any],
    graph: GraphLike,
    neighbour_fn: Callable[[GraphLike, np.random.Generator], "Neighbour | GraphLike"],
    declared: float,
    *,
    draws: int = 200,
    rng: np.random.Generator,
    norm: str = "l2",
) -> ProbeResult:
    """Largest and mean ratio :math:`\\|f(G)-f(G')\\|/\\Delta` over ``draws`` coupled neighbour pairs.

    For each draw a fresh neighbour pair is generated from ``rng`` and one coupling seed is drawn; ``query`` runs
    on both sides with ``np.random.default_rng(seed)`` — the same sampled batch, projections and noise-free
    randomness. ``neighbour_fn`` may return a :class:`Neighbour` or just the neighbouring graph (then the base is
    ``graph``).
    """
    if not (float(declared) > 0):
        raise OptionError(f"declared sensitivity must be > 0, got {declared!r}")
    if int(draws) < 1:
        raise OptionError(f"draws must be >= 1, got {draws}")
    ratios = []
    worst: dict = {}
    for i in range(int(draws)):
        pair = neighbour_fn(graph, rng)
        if not isinstance(pair, Neighbour):
            pair = Neighbour(graph, pair, "neighbour")
        seed = int(rng.integers(0, 2**63 - 1))
        out_a = query(pair.base, np.random.default_rng(seed))
        out_b = query(pair.neighbour, np.random.default_rng(seed))
        ratio = output_distance(out_a, out_b, norm) / float(declared)
        ratios.append(ratio)
        if not worst or ratio > worst["ratio"]:
            worst = {"ratio": ratio, "draw": i, "change": pair.change, "seed": seed}
    arr = np.asarray(ratios)
    return ProbeResult(float(arr.max()), float(arr.mean()), worst, len(ratios), float(declared), norm)


def assert_within(result: ProbeResult, tolerance: float = 1e-6) -> None:
    """Raise ``AssertionError`` when the probe measured a change above ``declared * (1 + tolerance)``."""
    if not (result.max_ratio <= 1.0 + tolerance):
        raise AssertionError(f"sensitivity probe exceeded the declared bound: {result}")


# ----------------------------------------------------------------------------------------------- coupling helpers
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        return z ^ (z >> np.uint64(31))


def keyed_uniform(keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniforms in [0, 1) that depend only on each key and on one draw from ``rng``.

    Items present on both sides of a probe (same key) get the same uniform whatever else was added or removed.
    Keys: int64 array of shape (k,) or (k, 2) (edges ``(u, v)`` are combined into one key).
    """
    keys = np.asarray(keys, dtype=np.int64)
    if keys.ndim == 2:  # (u, v) -> one 64-bit key without collisions from small ids
        keys = (_splitmix64(keys[:, 0].astype(np.uint64)) ^ keys[:, 1].astype(np.uint64)).astype(np.int64)
    salt = np.uint64(int(rng.integers(0, 2**63 - 1)))
    h = _splitmix64(_splitmix64(keys.astype(np.uint64)) ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def coupled_poisson_mask(keys: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson inclusion mask (each key independently with probability ``rate``) coupled across neighbours."""
    return keyed_uniform(keys, rng) < float(rate)


# ----------------------------------------------------------------------------------------------- neighbours
def _edge_set_replace(graph: Graph, edges: np.ndarray) -> Graph:
    g, _ = Graph.from_edges(graph.num_nodes, edges, features=graph.features, labels=graph.labels,
                            node_ids=graph.node_ids, name=graph.name)
    return g


def _random_non_edge(graph: Graph, rng: np.random.Generator, *, touching: int | None = None) -> tuple[int, int] | None:
    n = graph.num_nodes
    if n < 2:
        return None
    existing = set(map(tuple, graph.edges.tolist()))
    for _ in range(200):
        u = int(rng.integers(n)) if touching is None else touching
        v = int(rng.integers(n))
        a, b = min(u, v), max(u, v)
        if a != b and (a, b) not in existing:
            return a, b
    return None


def edge_neighbours(graph: Graph, rng: np.random.Generator, *, add_probability: float = 0.5) -> Neighbour:
    """Edge adjacency: remove a uniformly chosen existing edge, or add a uniformly chosen non-edge.

    Node set, features and labels stay identical (they are public under edge adjacency).
    """
    _require_graph(graph, "edge_neighbours")
    add = graph.num_edges == 0 or rng.random() < add_probability
    if add:
        pair = _random_non_edge(graph, rng)
        if pair is not None:
            new = np.vstack([graph.edges, np.array([pair], dtype=np.int64)])
            return Neighbour(graph, _edge_set_replace(graph, new), f"add edge {pair}")
    if graph.num_edges == 0:
        raise OptionError("edge_neighbours: the graph is complete and empty at once (fewer than 2 nodes)")
    k = int(rng.integers(graph.num_edges))
    u, v = graph.edges[k]
    new = np.delete(graph.edges, k, axis=0)
    return Neighbour(graph, _edge_set_replace(graph, new), f"remove edge ({int(u)}, {int(v)})")


def node_neighbours(graph: Graph, rng: np.random.Generator) -> Neighbour:
    """Node adjacency: remove one node with all its edges, features and label.

    Coupling: node ids stay aligned, so the removed node is kept as an isolated placeholder with zero features and
    label ``-1``. Queries MUST treat a node with label ``-1`` (unknown) as absent — not a training example, not
    counted — which is how a real removal looks to them. Nodes are chosen with probability proportional to
    degree + 1, so hubs (the worst case) are probed often.
    """
    _require_graph(graph, "node_neighbours")
    deg = graph.degrees().astype(np.float64) + 1.0
    v = int(rng.choice(graph.num_nodes, p=deg / deg.sum()))
    keep = (graph.edges[:, 0] != v) & (graph.edges[:, 1] != v)
    feats = graph.features
    if feats is not None:
        feats = _set_row(feats, v, None)
    labels = None
    if graph.labels is not None:
        labels = graph.labels.copy()
        labels[v] = -1
    g = Graph(graph.num_nodes, graph.edges[keep], features=feats, labels=labels, node_ids=graph.node_ids,
              name=graph.name)
    return Neighbour(graph, g, f"remove node {v} (degree {int(deg[v] - 1)})")


def k_neighbour_neighbours(k: int) -> Callable[[Graph, np.random.Generator], Neighbour]:
    """k-neighbour adjacency (DPDGC Def. 4.1): replace one node's features and label and flip up to ``k`` entries
    of its adjacency row/column (each flip adds or removes an edge incident to that node)."""
    if int(k) < 1:
        raise OptionError(f"k must be >= 1, got {k}")
    k = int(k)

    def fn(graph: Graph, rng: np.random.Generator) -> Neighbour:
        _require_graph(graph, "k_neighbour_neighbours")
        n = graph.num_nodes
        v = int(rng.integers(n))
        flips = int(rng.integers(1, k + 1))
        others = rng.choice(np.delete(np.arange(n), v), size=min(flips, n - 1), replace=False)
        edges = {tuple(e) for e in graph.edges.tolist()}
        for w in others.tolist():
            e = (min(v, w), max(v, w))
            edges.symmetric_difference_update({e})
        new_edges = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
        feats = graph.features
        if feats is not None:
            donor = int(rng.integers(n))
            feats = _set_row(feats, v, donor)
        labels = None
        if graph.labels is not None:
            labels = graph.labels.copy()
            classes = max(int(labels.max()) + 1, 1)
            labels[v] = int(rng.integers(classes))
        g, _ = Graph.from_edges(n, new_edges, features=feats, labels=labels, node_ids=graph.node_ids, name=graph.name)
        return Neighbour(graph, g, f"node {v}: features/label replaced, {len(others)} adjacency entries flipped")

    return fn


def graph_neighbours(collection: GraphCollection, rng: np.random.Generator) -> Neighbour:
    """Graph adjacency: remove one whole graph of a collection.

    Coupling: the chosen graph is moved to the END of the base collection and dropped from the neighbour, so
    positions ``0..N-2`` hold the same graphs on both sides; a query that draws per-position randomness
    sequentially (``rng.random(N)``) sees the same draws for the shared graphs.
    """
    if not isinstance(collection, GraphCollection):
        raise OptionError(f"graph_neighbours needs a GraphCollection, got {type(collection).__name__}")
    if len(collection) < 2:
        raise OptionError("graph_neighbours needs at least two graphs (a collection cannot be empty)")
    i = int(rng.integers(len(collection)))
    order = [j for j in range(len(collection)) if j != i] + [i]
    base = collection.subset(order)
    neigh = collection.subset(order[:-1])
    return Neighbour(base, neigh, f"remove graph {i} ({collection[i].num_nodes} nodes)")


def collection_edge_neighbours(collection: GraphCollection, rng: np.random.Generator) -> Neighbour:
    """Edge adjacency inside a collection: one edge added to or removed from one graph (chosen uniformly).

    Positions are unchanged, so per-position sampling stays coupled. Under whole-graph examples this is a
    replace-one change of one example (sensitivity 2C of the clipped sum).
    """
    if not isinstance(collection, GraphCollection):
        raise OptionError(f"collection_edge_neighbours needs a GraphCollection, got {type(collection).__name__}")
    i = int(rng.integers(len(collection)))
    inner = edge_neighbours(collection[i], rng)
    graphs = list(collection.graphs)
    graphs[i] = inner.neighbour
    neigh = GraphCollection(tuple(graphs), collection.graph_labels, collection.name)
    return Neighbour(collection, neigh, f"graph {i}: {inner.change}")


def _require_graph(graph: Any, who: str) -> None:
    if not isinstance(graph, Graph):
        raise OptionError(f"{who} needs a Graph, got {type(graph).__name__}")


def _set_row(features, row: int, donor: int | None):
    """Copy of ``features`` with ``row`` zeroed (donor None) or replaced by row ``donor``."""
    import scipy.sparse as sp

    if sp.issparse(features):
        x = sp.lil_matrix(features)
        x[row] = 0 if donor is None else features[donor]
        return sp.csr_matrix(x)
    x = np.array(features, copy=True)
    x[row] = 0.0 if donor is None else features[donor]
    return x
