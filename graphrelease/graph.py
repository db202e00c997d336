"""The one canonical in-memory graph form.

A :class:`Graph` is undirected and simple: nodes are numbered ``0..num_nodes-1``, each undirected edge is stored once
as a row ``(u, v)`` with ``u < v``, rows sorted lexicographically, no duplicates, no self-loops. Readers normalise
once through :meth:`Graph.from_edges`, which reports what it dropped; nothing downstream re-validates.

Instances are immutable: every array is read-only and every "transform" returns a new object.

Example
-------
>>> import numpy as np
>>> g, report = Graph.from_edges(3, np.array([[1, 0], [0, 1], [2, 2]]))
>>> g.num_edges, report.reverse_edges_merged, report.self_loops
(1, 1, 1)
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import GraphValidationError

if TYPE_CHECKING:  # heavy imports stay off the CLI start-up path
    import igraph
    import networkx
    import torch
    import torch_geometric.data

Features = np.ndarray | sp.csr_matrix

#: ``Graph.node_set`` of a graph whose nodes were read off its edges (an edge list without a node declaration).
#: Under edge adjacency such a node set is a function of the private edges: one edge can add a node or renumber
#: the others, so nothing may call it public (docs/privacy.md, "Where every public value comes from").
NODE_SET_FROM_EDGES = "from-edges"
#: ``Graph.node_set`` when a caller built the graph in Python with an explicit ``num_nodes``.
NODE_SET_GIVEN = "given by the caller as num_nodes"


@dataclass(frozen=True)
class CleaningReport:
    """What normalisation changed in an input. Counts refer to the raw rows seen by the reader."""

    input_rows: int = 0
    self_loops: int = 0
    duplicate_edges: int = 0
    reverse_edges_merged: int = 0
    directed_input: bool = False
    isolated_nodes: int = 0
    notes: tuple[str, ...] = ()

    def dropped_summary(self) -> dict[str, int]:
        return {
            "self_loops": self.self_loops,
            "duplicate_edges": self.duplicate_edges,
            "reverse_edges_merged": self.reverse_edges_merged,
        }

    def merge(self, other: "CleaningReport") -> "CleaningReport":
        return CleaningReport(
            input_rows=self.input_rows + other.input_rows,
            self_loops=self.self_loops + other.self_loops,
            duplicate_edges=self.duplicate_edges + other.duplicate_edges,
            reverse_edges_merged=self.reverse_edges_merged + other.reverse_edges_merged,
            directed_input=self.directed_input or other.directed_input,
            isolated_nodes=self.isolated_nodes + other.isolated_nodes,
            notes=self.notes + other.notes,
        )


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values. numpy 2.4's ``np.unique`` takes a hash-based path that is ~50x slower than a sort
    on a million int64 keys, so sort and keep the first of each run. The generators' samplers use it for their
    sorted pair keys too."""
    ordered = np.sort(values)
    if ordered.size == 0:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def canonical_edges(num_nodes: int, raw_edges: np.ndarray) -> tuple[np.ndarray, CleaningReport]:
    """Turn arbitrary (possibly directed, duplicated, self-looped) integer pairs into canonical undirected edges.

    Returns the ``(m, 2)`` int64 array with ``u < v`` sorted lexicographically, and a report of what was dropped.
    """
    raw = np.asarray(raw_edges)
    if raw.size == 0:
        raw = raw.reshape(0, 2)
    if raw.ndim != 2 or raw.shape[1] != 2:
        raise GraphValidationError(f"edges must be an (m, 2) array of node indices, got shape {raw.shape}")
    if not np.issubdtype(raw.dtype, np.integer):
        raise GraphValidationError(f"edge endpoints must be integers, got dtype {raw.dtype}")
    raw = raw.astype(np.int64, copy=False)
    if raw.shape[0] and (raw.min() < 0 or raw.max() >= num_nodes):
        bad = raw[(raw < 0) | (raw >= num_nodes)][0]
        raise GraphValidationError(f"edge endpoint {int(bad)} is outside the node range 0..{num_nodes - 1}")
    loops = raw[:, 0] == raw[:, 1]
    n_loops = int(loops.sum())
    pairs = raw[~loops]
    lo = np.minimum(pairs[:, 0], pairs[:, 1])
    hi = np.maximum(pairs[:, 0], pairs[:, 1])
    # One int64 key per pair makes np.unique a single sort; num_nodes**2 fits in int64 up to ~3e9 nodes.
    keys = lo * np.int64(num_nodes) + hi
    unique_keys = sorted_unique(keys)
    n_repeat = int(keys.size - unique_keys.size)
    # Distinguish a reverse copy (v,u) of an existing (u,v) from an exact duplicate row.
    directed_keys = pairs[:, 0] * np.int64(num_nodes) + pairs[:, 1]
    n_distinct_directed = int(sorted_unique(directed_keys).size)
    exact_duplicates = int(keys.size - n_distinct_directed)
    reverse_merged = n_repeat - exact_duplicates
    edges = np.stack([unique_keys // num_nodes, unique_keys % num_nodes], axis=1) if unique_keys.size else np.zeros(
        (0, 2), dtype=np.int64
    )
    report = CleaningReport(
        input_rows=int(raw.shape[0]),
        self_loops=n_loops,
        duplicate_edges=exact_duplicates,
        reverse_edges_merged=reverse_merged,
    )
    return edges.astype(np.int64, copy=False), report


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected simple graph with optional node features and labels.

    Attributes
    ----------
    num_nodes:
        Number of nodes; nodes are ``0..num_nodes-1``.
    edges:
        ``(num_edges, 2)`` int64, each undirected edge once with ``u < v``, sorted, unique.
    features:
        ``(num_nodes, d)`` float array or scipy CSR matrix, or ``None``. Finite values only.
    labels:
        ``(num_nodes,)`` int64 with ``-1`` for unknown, or ``None``.
    node_ids:
        Original node identifiers (strings or integers) in node order, or ``None`` when they were ``0..n-1``.
        The mapping stays with the data owner: it is never written into a release.
    name:
        A human-readable name (usually the file stem).
    node_set:
        Where the node set came from: :data:`NODE_SET_FROM_EDGES` when a reader inferred it from the edges,
        otherwise who declared it (``"the edge list's header (nodes=N)"``, ``"--nodes nodes.csv"``, ...). The
        certificate quotes it; an inferred node set is never called public.
    """

    num_nodes: int
    edges: np.ndarray
    features: Features | None = None
    labels: np.ndarray | None = None
    node_ids: np.ndarray | None = None
    name: str = "graph"
    node_set: str = NODE_SET_GIVEN
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = self.num_nodes
        if not isinstance(n, (int, np.integer)) or n <= 0:
            raise GraphValidationError(f"graph '{self.name}' is empty: it has no nodes")
        object.__setattr__(self, "num_nodes", int(n))
        e = np.asarray(self.edges)
        if e.size == 0:
            e = np.zeros((0, 2), dtype=np.int64)
        if e.ndim != 2 or e.shape[1] != 2 or not np.issubdtype(e.dtype, np.integer):
            raise GraphValidationError(f"graph '{self.name}': edges must be an (m, 2) integer array, got {e.shape}")
        e = np.ascontiguousarray(e, dtype=np.int64)
        if e.shape[0]:
            if e.min() < 0 or e.max() >= n:
                raise GraphValidationError(f"graph '{self.name}': edge endpoint outside 0..{n - 1}")
            if not np.all(e[:, 0] < e[:, 1]):
                raise GraphValidationError(
                    f"graph '{self.name}': edges must have u < v (use Graph.from_edges to canonicalise)"
                )
            keys = e[:, 0] * np.int64(n) + e[:, 1]
            if np.any(np.diff(keys) <= 0):
                raise GraphValidationError(
                    f"graph '{self.name}': edges must be sorted and unique (use Graph.from_edges to canonicalise)"
                )
        object.__setattr__(self, "edges", _readonly(e))
        if self.features is not None:
            object.__setattr__(self, "features", self._validated_features(self.features))
        if self.labels is not None:
            lab = np.asarray(self.labels)
            if lab.shape != (n,):
                raise GraphValidationError(
                    f"graph '{self.name}': labels have shape {lab.shape}, expected ({n},) (one per node)"
                )
            if not np.issubdtype(lab.dtype, np.integer):
                raise GraphValidationError(f"graph '{self.name}': labels must be integers (-1 = unknown)")
            lab = lab.astype(np.int64)
            if lab.size and lab.min() < -1:
                raise GraphValidationError(f"graph '{self.name}': label {int(lab.min())} < -1 (-1 means unknown)")
            object.__setattr__(self, "labels", _readonly(lab))
        if self.node_ids is not None:
            ids = np.asarray(self.node_ids)
            if ids.shape != (n,):
                raise GraphValidationError(f"graph '{self.name}': node_ids must have one entry per node")
            object.__setattr__(self, "node_ids", _readonly(ids.copy()))

    def _validated_features(self, feats: Any) -> Features:
        n = self.num_nodes
        if sp.issparse(feats):
            x = sp.csr_matrix(feats, dtype=np.float32)
            x.sort_indices()
            values = x.data
        else:
            x = np.asarray(feats)
            if x.ndim == 1:
                x = x[:, None]
            if x.ndim != 2 or not np.issubdtype(x.dtype, np.number):
                raise GraphValidationError(f"graph '{self.name}': features must be a 2-D numeric array")
            x = np.ascontiguousarray(x, dtype=np.float32)
            values = x
        if x.shape[0] != n:
            raise GraphValidationError(
                f"graph '{self.name}': features have {x.shape[0]} rows but the graph has {n} nodes"
            )
        if not np.all(np.isfinite(values)):
            raise GraphValidationError(f"graph '{self.name}': features contain NaN or infinite values")
        if sp.issparse(x):
            x.data.setflags(write=False)
            x.indices.setflags(write=False)
            x.indptr.setflags(write=False)
        else:
            x.setflags(write=False)
        return x

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(
        cls,
        num_nodes: int,
        raw_edges: np.ndarray,
        *,
        features: Features | None = None,
        labels: np.ndarray | None = None,
        node_ids: np.ndarray | None = None,
        name: str = "graph",
        directed_input: bool | None = None,
        node_set: str = NODE_SET_GIVEN,
    ) -> tuple["Graph", CleaningReport]:
        """Build a graph from arbitrary integer pairs: symmetrise, drop self-loops and duplicates, report counts."""
        if num_nodes <= 0:
            raise GraphValidationError(f"graph '{name}' is empty: it has no nodes")
        edges, report = canonical_edges(num_nodes, raw_edges)
        if directed_input is not None:
            report = CleaningReport(**{**report.__dict__, "directed_input": directed_input})
        graph = cls(num_nodes, edges, features=features, labels=labels, node_ids=node_ids, name=name,
                    node_set=node_set)
        isolated = int((graph.degrees() == 0).sum())
        report = CleaningReport(**{**report.__dict__, "isolated_nodes": isolated})
        return graph, report

    @classmethod
    def from_csr(cls, adjacency: sp.spmatrix, **kwargs: Any) -> tuple["Graph", CleaningReport]:
        """Build a graph from a (possibly asymmetric) sparse adjacency matrix; non-zero entries are edges."""
        a = sp.coo_matrix(adjacency)
        if a.shape[0] != a.shape[1]:
            raise GraphValidationError(f"adjacency must be square, got shape {a.shape}")
        return cls.from_edges(a.shape[0], np.stack([a.row, a.col], axis=1).astype(np.int64), **kwargs)

    def replace(self, **changes: Any) -> "Graph":
        """A copy with some fields replaced (validated again)."""
        values = {
            "num_nodes": self.num_nodes,
            "edges": self.edges,
            "features": self.features,
            "labels": self.labels,
            "node_ids": self.node_ids,
            "name": self.name,
            "node_set": self.node_set,
        }
        values.update(changes)
        return Graph(**values)

    # ------------------------------------------------------------------ basic properties
    @property
    def node_set_inferred(self) -> bool:
        """True when the node set was read off the edges, not declared by the owner."""
        return self.node_set == NODE_SET_FROM_EDGES

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def density(self) -> float:
        n = self.num_nodes
        return 0.0 if n < 2 else 2.0 * self.num_edges / (n * (n - 1))

    @property
    def num_features(self) -> int:
        return 0 if self.features is None else int(self.features.shape[1])

    @property
    def has_features(self) -> bool:
        return self.features is not None

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    @property
    def num_classes(self) -> int:
        if self.labels is None or not np.any(self.labels >= 0):
            return 0
        return int(self.labels.max()) + 1

    def degrees(self) -> np.ndarray:
        if "degrees" not in self._cache:
            deg = np.bincount(self.edges.ravel(), minlength=self.num_nodes).astype(np.int64)
            self._cache["degrees"] = _readonly(deg)
        return self._cache["degrees"]

    def dense_features(self) -> np.ndarray | None:
        if self.features is None:
            return None
        return self.features.toarray() if sp.issparse(self.features) else np.asarray(self.features)

    # ------------------------------------------------------------------ conversions (cached: the graph is immutable)
    def to_csr(self) -> sp.csr_matrix:
        """Symmetric binary adjacency as scipy CSR (float32). Shared and read-only: copy before mutating."""
        if "csr" not in self._cache:
            n = self.num_nodes
            rows = np.concatenate([self.edges[:, 0], self.edges[:, 1]])
            cols = np.concatenate([self.edges[:, 1], self.edges[:, 0]])
            data = np.ones(rows.size, dtype=np.float32)
            a = sp.csr_matrix((data, (rows, cols)), shape=(n, n))
            a.sort_indices()
            for arr in (a.data, a.indices, a.indptr):
                arr.setflags(write=False)
            self._cache["csr"] = a
        return self._cache["csr"]

    def edge_index(self) -> "torch.Tensor":
        """Both directions as a ``(2, 2m)`` torch LongTensor (PyG convention)."""
        import torch

        e = torch.from_numpy(np.array(self.edges, dtype=np.int64))
        return torch.cat([e.t(), e.flip(1).t()], dim=1).contiguous()

    def to_pyg(self) -> "torch_geometric.data.Data":
        import torch
        from torch_geometric.data import Data

        data = Data(edge_index=self.edge_index(), num_nodes=self.num_nodes)
        dense = self.dense_features()
        if dense is not None:
            data.x = torch.from_numpy(np.array(dense, dtype=np.float32))
        if self.labels is not None:
            data.y = torch.from_numpy(np.array(self.labels, dtype=np.int64))
        return data

    def to_networkx(self) -> "networkx.Graph":
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(self.num_nodes))
        g.add_edges_from(self.edges.tolist())
        return g

    def to_igraph(self) -> "igraph.Graph":
        if "igraph" not in self._cache:
            import igraph as ig

            self._cache["igraph"] = ig.Graph(n=self.num_nodes, edges=self.edges, directed=False)
        return self._cache["igraph"].copy()

    def induced_subgraph(self, nodes: np.ndarray, *, name: str | None = None) -> "Graph":
        """Induced subgraph on ``nodes`` (renumbered in the given order); features and labels follow."""
        nodes = np.asarray(nodes, dtype=np.int64)
        remap = np.full(self.num_nodes, -1, dtype=np.int64)
        remap[nodes] = np.arange(nodes.size)
        keep = (remap[self.edges[:, 0]] >= 0) & (remap[self.edges[:, 1]] >= 0)
        sub_edges = remap[self.edges[keep]]
        feats = None if self.features is None else self.features[nodes]
        labels = None if self.labels is None else self.labels[nodes]
        ids = None if self.node_ids is None else self.node_ids[nodes]
        g, _ = Graph.from_edges(
            int(nodes.size), sub_edges, features=feats, labels=labels, node_ids=ids, name=name or self.name,
            node_set=self.node_set,
        )
        return g

    def without_private_metadata(self) -> "Graph":
        """The structure only, numbered 0..n-1: what a synthetic release may carry."""
        return Graph(self.num_nodes, self.edges, name=self.name)

    def structurally_equal(self, other: "Graph") -> bool:
        return self.num_nodes == other.num_nodes and np.array_equal(self.edges, other.edges)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        if not self.structurally_equal(other) or self.name != other.name:
            return False
        for a, b in ((self.labels, other.labels), (self.node_ids, other.node_ids)):
            if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
                return False
        fa, fb = self.dense_features(), other.dense_features()
        if (fa is None) != (fb is None):
            return False
        return fa is None or (fa.shape == fb.shape and np.allclose(fa, fb))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = []
        if self.features is not None:
            extra.append(f"features={self.num_features}")
        if self.labels is not None:
            extra.append(f"classes={self.num_classes}")
        tail = (", " + ", ".join(extra)) if extra else ""
        return f"Graph(name={self.name!r}, nodes={self.num_nodes}, edges={self.num_edges}{tail})"


@dataclass(frozen=True, eq=False)
class GraphCollection:
    """A collection of graphs (e.g. TU Dortmund datasets), with optional graph labels.

    Under ``graph`` adjacency one whole graph is one record; under ``edge`` adjacency one edge of one graph is.
    """

    graphs: tuple[Graph, ...]
    graph_labels: np.ndarray | None = None
    name: str = "collection"

    def __post_init__(self) -> None:
        graphs = tuple(self.graphs)
        if not graphs:
            raise GraphValidationError(f"collection '{self.name}' has no graphs")
        for i, g in enumerate(graphs):
            if not isinstance(g, Graph):
                raise GraphValidationError(f"collection '{self.name}': item {i} is not a Graph")
        object.__setattr__(self, "graphs", graphs)
        if self.graph_labels is not None:
            lab = np.asarray(self.graph_labels)
            if lab.shape != (len(graphs),):
                raise GraphValidationError(
                    f"collection '{self.name}': {lab.shape[0] if lab.ndim else 0} graph labels for {len(graphs)} graphs"
                )
            object.__setattr__(self, "graph_labels", _readonly(lab.astype(np.int64)))

    def __len__(self) -> int:
        return len(self.graphs)

    def __iter__(self) -> Iterator[Graph]:
        return iter(self.graphs)

    def __getitem__(self, index: int) -> Graph:
        return self.graphs[index]

    @property
    def num_nodes(self) -> int:
        return sum(g.num_nodes for g in self.graphs)

    @property
    def num_edges(self) -> int:
        return sum(g.num_edges for g in self.graphs)

    @property
    def node_set_inferred(self) -> bool:
        """True when any graph's node set was read off its edges (see :attr:`Graph.node_set`)."""
        return any(g.node_set_inferred for g in self.graphs)

    def subset(self, indices: Sequence[int]) -> "GraphCollection":
        labels = None if self.graph_labels is None else self.graph_labels[list(indices)]
        return GraphCollection(tuple(self.graphs[i] for i in indices), labels, self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GraphCollection):
            return NotImplemented
        if len(self) != len(other) or not all(a == b for a, b in zip(self.graphs, other.graphs)):
            return False
        a, b = self.graph_labels, other.graph_labels
        return (a is None) == (b is None) and (a is None or np.array_equal(a, b))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GraphCollection(name={self.name!r}, graphs={len(self)}, nodes={self.num_nodes}, edges={self.num_edges})"


GraphLike = Graph | GraphCollection


@contextmanager
def seeded_igraph(seed: int) -> Iterator[None]:
    """Run igraph's randomised routines (Louvain's vertex shuffle) from ``random.Random(seed)``, then restore its
    default generator: igraph draws from one process-global generator that no NumPy seed reaches."""
    import igraph as ig

    ig.set_random_number_generator(random.Random(seed))
    try:
        yield
    finally:
        ig.set_random_number_generator(random)
