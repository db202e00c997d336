"""Shared helpers of the classical edge-DP generator tests (real data from ../shared/data)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from graphrelease.graph import Graph
from graphrelease.privacy.accountants import compute_epsilon
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.proofs import missing_proofs

_CACHE: dict[str, Graph] = {}


def load_npz_graph(data_dir: Path, name: str) -> Graph:
    """A gnn-benchmark npz graph with its labels and features (read directly, pickle-free)."""
    if name not in _CACHE:
        with np.load(data_dir / "single" / f"{name}.npz", allow_pickle=False) as z:
            adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
            kw = {}
            if "labels" in z.files:
                kw["labels"] = z["labels"]
            if "attr_data" in z.files:
                kw["features"] = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]),
                                               shape=tuple(z["attr_shape"]))
        _CACHE[name], _ = Graph.from_csr(adj, name=name, **kw)
    return _CACHE[name]


def configuration_pairing(degrees: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sorted pair keys of a random pairing of the nodes' stubs, loops and repeats dropped (a graph on about these
    degrees with almost no triangles)."""
    n = int(np.asarray(degrees).size)
    stubs = rng.permutation(np.repeat(np.arange(n), degrees))
    pairs = stubs[: stubs.size // 2 * 2].reshape(-1, 2)
    keys = np.unique(np.minimum(pairs[:, 0], pairs[:, 1]) * n + np.maximum(pairs[:, 0], pairs[:, 1]))
    return keys[keys // n != keys % n]


def bfs_ball(graph: Graph, start: int, size: int, *, sort: bool = False, name: str | None = None) -> Graph:
    """The first ``size`` nodes of a breadth-first search from ``start`` (induced subgraph, numbered in BFS order or,
    with ``sort``, in the input's order): a piece of a larger network, as an owner's sample of it would be."""
    order = sp.csgraph.breadth_first_order(graph.to_csr(), int(start), directed=False,
                                           return_predecessors=False)[:size]
    return graph.induced_subgraph(np.sort(order) if sort else order, name=name)


def small_subgraph(graph: Graph, num_nodes: int, seed: int = 0) -> Graph:
    """Induced subgraph on ``num_nodes`` high-degree nodes of a random pool (small enough for dense cell probes)."""
    pool = np.random.default_rng(seed).permutation(graph.num_nodes)[: 4 * num_nodes]
    nodes = np.sort(pool[np.argsort(-graph.degrees()[pool], kind="stable")[:num_nodes]])
    return graph.induced_subgraph(nodes)


def basic_composition(budget: Budget) -> float:
    """Independent accountant: basic sequential composition of pure-DP entries (sum of epsilon x count)."""
    total = 0.0
    for e in budget.ledger:
        assert e.mechanism in ("laplace", "exponential", "permute_and_flip"), e.mechanism
        total += float(e.params["epsilon"]) * e.count * e.group_size
    return total


def check_budget_spent_exactly(budget: Budget, epsilon: float) -> None:
    """The ledger spends exactly ``epsilon`` by basic composition, and the project's accountants agree (<=)."""
    assert math.isclose(basic_composition(budget), epsilon, rel_tol=1e-9), budget.ledger.to_json()
    pld = compute_epsilon(budget.ledger, budget.delta, accountant="pld")
    assert pld <= epsilon * (1 + 1e-6)
    # PLD of pure-DP mechanisms at delta > 0 is below basic composition but not far below (same mechanisms).
    assert pld >= 0.5 * epsilon
    assert budget.ledger.sound
    # Every entry points at a proof sketch in docs/privacy.md (a certificate can then say "proved").
    assert missing_proofs(budget.ledger) == []


def triu_cells(graph: Graph) -> np.ndarray:
    """Dense upper-triangle adjacency vector of a small graph (the cell vector RR/TmF perturb)."""
    n = graph.num_nodes
    iu, ju = np.triu_indices(n, 1)
    a = graph.to_csr().toarray()
    return a[iu, ju].astype(np.float64)


def load_slashdot(data_dir: Path) -> Graph:
    """soc-Slashdot0902 symmetrised, self-loops dropped (82,168 nodes, 504,230 undirected edges)."""
    if "slashdot" not in _CACHE:
        pairs = np.loadtxt(data_dir / "raw" / "soc-Slashdot0902.txt.gz", dtype=np.int64, comments="#")
        ids, inv = np.unique(pairs.ravel(), return_inverse=True)
        _CACHE["slashdot"], _ = Graph.from_edges(int(ids.size), inv.reshape(-1, 2), name="slashdot")
    return _CACHE["slashdot"]


def degree_kl(orig_deg: np.ndarray, syn_deg: np.ndarray) -> float:
    """KL(P_orig || P_syn) of the exact degree histograms, 1e-10 floor on P_syn's zeros: the metric of
    reports/structure_fidelity.md (benchmarks/bench_edge_dp.py), written again here so tests do not import benchmarks."""
    size = int(max(orig_deg.max(), syn_deg.max())) + 1
    p = np.bincount(orig_deg, minlength=size) / orig_deg.size
    q = np.bincount(syn_deg, minlength=size) / syn_deg.size
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / np.maximum(q[m], 1e-10))))


def union_of_collection(data_dir: Path, name: str) -> Graph:
    """Every graph of a TU collection side by side, as one graph (disjoint union)."""
    from graphrelease.io import read_graph

    graphs = read_graph(data_dir / "collections" / name).data.graphs
    offsets = np.cumsum([0] + [g.num_nodes for g in graphs])
    edges = np.concatenate([g.edges + offsets[i] for i, g in enumerate(graphs)])
    return Graph.from_edges(int(offsets[-1]), edges, name=f"{name}_union")[0]
