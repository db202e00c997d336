"""Canary records for the empirical audit, one kind per adjacency of PRIVACY.md section 1: absent node pairs (edge),
a crafted node in an extra slot (node), a crafted graph (graph); and the callable types an attack implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

#: Scores of one run: one per canary (a sequence), or several named attacks, each one score per canary.
Scores = Sequence[float] | Mapping[str, Sequence[float]]
TrainAndScore = Callable[[Graph, np.ndarray, int], Scores]
CANARY_KINDS = ("edge", "node", "graph")


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """One int64 key per node pair ``(u, v)`` (``u < v``), for set membership between edge lists of n-node graphs."""
    return pairs[:, 0] * np.int64(n) + pairs[:, 1]


# ---------------------------------------------------------------------------------------------------- canaries
def choose_canary_edges(graph: Graph, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct node pairs ``(u < v)`` that are not edges of ``graph``, uniformly at random."""
    n = graph.num_nodes
    max_pairs = n * (n - 1) // 2
    if count < 1:
        raise OptionError(f"need at least one canary, got {count}")
    if count > max_pairs - graph.num_edges:
        raise OptionError(f"graph '{graph.name}' has fewer than {count} non-edges to use as canaries")
    existing = set(pair_keys(graph.edges, n).tolist())
    chosen: list[int] = []
    seen: set[int] = set()
    while len(chosen) < count:
        u, v = rng.integers(0, n, size=2)
        if u == v:
            continue
        a, b = (int(u), int(v)) if u < v else (int(v), int(u))
        key = a * n + b
        if key in existing or key in seen:
            continue
        seen.add(key)
        chosen.append(key)
    keys = np.array(sorted(chosen), dtype=np.int64)
    return np.stack([keys // n, keys % n], axis=1)


def insert_canary_edges(graph: Graph, canaries: np.ndarray) -> Graph:
    """The graph with the canary edges added (features and labels kept)."""
    edges = np.concatenate([graph.edges, np.asarray(canaries, dtype=np.int64).reshape(-1, 2)])
    g, _ = Graph.from_edges(
        graph.num_nodes, edges, features=graph.features, labels=graph.labels, node_ids=graph.node_ids,
        name=graph.name,
    )
    return g


@dataclass(frozen=True)
class NodeCanary:
    """A crafted node for the node-adjacency audit: it occupies slot ``slot`` of a graph with one more slot.

    ``features`` is one row (``None`` for a featureless graph), ``label`` its class (``-1``: the graph has no
    labels), ``neighbours`` the existing nodes it links to (numbered as in the base graph).
    """

    slot: int
    features: np.ndarray | None
    label: int
    neighbours: np.ndarray

    def describe(self) -> dict[str, Any]:
        nnz = None if self.features is None else int(np.count_nonzero(self.features))
        return {"kind": "node", "slot": self.slot, "label": self.label, "degree": int(self.neighbours.size),
                "feature_nonzeros": nnz}


def choose_canary_node(graph: Graph, rng: np.random.Generator, *, slot: int | None = None,
                       degree: int | None = None, feature_nonzeros: int | None = None) -> NodeCanary:
    """A distinctive node: worst-case-style canaries make the audit powerful (Jagielski et al. 2020, §4).

    Features: as many non-zero entries as the median row, at random columns, each set to the largest feature value
    (a bag-of-words pattern no real node has). Label: the rarest class among labelled nodes, so a model that did
    not see the canary rarely predicts it. Edges: ``degree`` random existing nodes (default: the median degree,
    at least 1). ``slot``: where the canary sits among ``n + 1`` slots (default: uniformly random); models
    that split node slots publicly need it in a training slot (see :func:`public_training_slot`).
    ``feature_nonzeros`` overrides the number of non-zero features (1 concentrates a clipped row's whole norm in
    one coordinate, the worst case for per-coordinate noise).
    """
    n = graph.num_nodes
    slot = int(rng.integers(0, n + 1)) if slot is None else int(slot)
    if not 0 <= slot <= n:
        raise OptionError(f"canary slot {slot} outside 0..{n}")
    feats = None
    if graph.features is not None:
        x = graph.features
        nnz_rows = np.diff(x.indptr) if sp.issparse(x) else np.count_nonzero(x, axis=1)
        width = x.shape[1]
        k = int(min(width, max(1, np.median(nnz_rows) if feature_nonzeros is None else feature_nonzeros)))
        top = float(x.max()) if (x.max() if sp.issparse(x) else np.max(x)) > 0 else 1.0
        feats = np.zeros(width, dtype=np.float32)
        feats[rng.choice(width, size=k, replace=False)] = top
    label = -1
    if graph.labels is not None:
        lab = np.asarray(graph.labels)
        known = lab[lab >= 0]
        if known.size:
            counts = np.bincount(known)
            present = np.flatnonzero(counts > 0)
            label = int(present[np.argmin(counts[present])])
    deg = int(max(1, np.median(graph.degrees()))) if degree is None else int(degree)
    deg = min(deg, n)
    neighbours = np.sort(rng.choice(n, size=deg, replace=False)).astype(np.int64)
    return NodeCanary(slot, feats, label, neighbours)


def node_canary_graphs(graph: Graph, canary: NodeCanary) -> tuple[Graph, Graph]:
    """``(with, without)``: ``n + 1`` slots; existing node ``i`` moves to ``i + (i >= slot)``.

    ``with`` holds the canary's features, label and edges at its slot; ``without`` leaves the slot empty (isolated,
    zero features, label -1): the node-adjacent neighbour under the project's public-slot convention.
    """
    n, s = graph.num_nodes, canary.slot
    old_to_new = np.arange(n, dtype=np.int64)
    old_to_new[old_to_new >= s] += 1
    edges = old_to_new[graph.edges]
    extra = np.stack([np.full(canary.neighbours.size, s, dtype=np.int64), old_to_new[canary.neighbours]], axis=1)
    order = np.argsort(np.concatenate([old_to_new, [s]]))  # new slot -> row of (old rows..., canary row)

    def stack_features(row: np.ndarray | None) -> Any:
        x = graph.features
        if x is None:
            return None
        fill = np.zeros((1, x.shape[1]), dtype=np.float32) if row is None else row.reshape(1, -1)
        if sp.issparse(x):
            return sp.vstack([x, sp.csr_matrix(fill)], format="csr")[order]
        return np.vstack([x, fill])[order]

    def labels(value: int) -> np.ndarray | None:
        if graph.labels is None:
            return None
        return np.concatenate([np.asarray(graph.labels), [value]])[order]

    common = dict(name=f"{graph.name}+node-canary")
    without, _ = Graph.from_edges(n + 1, edges, features=stack_features(None), labels=labels(-1), **common)
    with_c, _ = Graph.from_edges(n + 1, np.concatenate([edges, extra]), features=stack_features(canary.features),
                                 labels=labels(canary.label), **common)
    return with_c, without


def public_training_slot(num_slots: int, *, train_frac: float, val_frac: float, split_seed: int) -> int:
    """A slot that the project's public node split (:func:`graphrelease.models.common.node_split`) puts in training.

    The split permutes node *slots* by a public seed, so which slots train is public; a canary outside them would
    never be trained on and the audit would measure nothing.
    """
    from graphrelease.models.common import node_split

    dummy = Graph(num_slots, np.zeros((0, 2), dtype=np.int64), labels=np.zeros(num_slots, dtype=np.int64))
    split = node_split(dummy, train=train_frac, val=val_frac, seed=split_seed)
    return int(split.train_slot_ids[0])


def choose_canary_graph(collection: GraphCollection, rng: np.random.Generator, *, num_nodes: int | None = None
                        ) -> Graph:
    """A crafted graph for the graph-adjacency audit: a clique on the least frequent node count of the collection.

    A clique is as far from typical (sparse) collection graphs as a graph of that size can be, and a rare node count
    makes count-based releases (node-count histograms) informative: both maximise the audit's power. ``num_nodes``
    overrides the size.
    """
    if num_nodes is None:
        sizes = np.array([g.num_nodes for g in collection])
        lo, hi = int(max(3, sizes.min())), int(max(3, sizes.max()))
        counts = np.bincount(sizes, minlength=hi + 1)[lo:hi + 1]
        rare = np.flatnonzero(counts == counts.min()) + lo
        num_nodes = int(rng.choice(rare))
    if num_nodes < 2:
        raise OptionError(f"a canary graph needs at least 2 nodes, got {num_nodes}")
    iu, ju = np.triu_indices(num_nodes, k=1)
    return Graph(num_nodes, np.stack([iu, ju], axis=1).astype(np.int64), name="canary-graph")


def with_canary_graph(collection: GraphCollection, canary: Graph, label: int | None = None) -> GraphCollection:
    """The collection with ``canary`` appended (graph label: ``label``, default the most frequent one)."""
    labels = collection.graph_labels
    if labels is not None:
        if label is None:
            label = int(np.bincount(np.asarray(labels) - np.min(labels)).argmax() + np.min(labels))
        labels = np.concatenate([np.asarray(labels), [label]])
    return GraphCollection(tuple(collection.graphs) + (canary,), labels, collection.name)


NodeTrainAndScore = Callable[[Graph, "NodeCanary", int], Scores]
GraphTrainAndScore = Callable[[GraphCollection, Graph, int], Scores]
