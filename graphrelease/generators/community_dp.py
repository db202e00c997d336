r"""DP community partitions shared by PrivGraph and the DP degree-corrected SBM (edge adjacency).

* :func:`noisy_supergraph_partition` — PrivGraph phase 1 (Yuan et al., USENIX Security 2023, Sec. 4.2): nodes are
  split uniformly at random into groups of ``group_size``; the group-pair edge counts (upper triangle *with* the
  diagonal, each edge counted once in exactly one cell, L1 sensitivity 1) get :math:`\mathrm{Lap}(1/\varepsilon)`;
  the noisy counts are post-processed (norm-sub) and Louvain runs on the noisy super-graph.
* :func:`em_refine` — node adjustment by the exponential mechanism: every node picks a community with probability
  :math:`\propto \exp(\varepsilon\, u_i(C) / 2)`, utility :math:`u_i(C) = k_{i,C} - d_i \hat f_C` (a modularity gain;
  :math:`k_{i,C}` = neighbours of :math:`i` in :math:`C`, :math:`\hat f_C \in [0,1]` a public community volume share).
  One edge :math:`\{i,j\}` changes :math:`u_i` by at most 1 per coordinate and :math:`u_j` likewise, and no other
  node's utility, so a synchronous pass (all utilities from the previous, already released partition) is two
  :math:`\varepsilon`-DP (and :math:`\varepsilon`-bounded-range) selections per neighbouring pair.
* :func:`noisy_count_refine` — node adjustment by noisy neighbour counts: release
  :math:`K = A Z + \mathrm{Lap}(2/\varepsilon)` (:math:`Z` the one-hot previous partition; one edge changes two
  entries by one, L1 sensitivity 2) and move each node to its best community by a post-processing score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from graphrelease.generators.classical_common import charge_laplace, norm_sub
from graphrelease.graph import Graph, seeded_igraph
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.privacy.noise import exponential_mechanism_scale

#: Dense super-graphs above this many cells are refused (the group size is then raised automatically).
MAX_SUPERGRAPH_CELLS = 12_000_000


def relabel(labels: np.ndarray) -> np.ndarray:
    """Contiguous labels 0..K-1 (empty communities dropped)."""
    _, inv = np.unique(np.asarray(labels), return_inverse=True)
    return inv.astype(np.int64)


def louvain_weighted(num_vertices: int, src: np.ndarray, dst: np.ndarray, weights: np.ndarray,
                     resolution: float, rng: np.random.Generator) -> np.ndarray:
    """Louvain (igraph multilevel) on a weighted graph given as edge arrays (loops allowed); vertex order random.

    igraph shuffles vertices with its own global generator, so it is seeded from ``rng``: a seeded fit is then
    the same fit in every process.
    """
    import igraph as ig

    perm = rng.permutation(num_vertices)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(num_vertices)
    g = ig.Graph(n=num_vertices, edges=np.stack([inv[src], inv[dst]], axis=1).tolist(), directed=False)
    with seeded_igraph(int(rng.integers(2**63 - 1))):
        membership = np.asarray(
            g.community_multilevel(weights=list(map(float, weights)) if len(weights) else None,
                                   resolution=resolution).membership
        )
    return relabel(membership[inv])


def group_pair_counts(graph: Graph, group_of: np.ndarray, num_groups: int) -> np.ndarray:
    """Upper-triangle (with diagonal) group-pair edge counts, flattened in ``np.triu_indices`` order."""
    ga, gb = group_of[graph.edges[:, 0]], group_of[graph.edges[:, 1]]
    lo, hi = np.minimum(ga, gb), np.maximum(ga, gb)
    iu, ju = np.triu_indices(num_groups)
    # Position of cell (lo, hi) in triu order: row offset + column.
    row_start = lo * num_groups - lo * (lo - 1) // 2
    pos = row_start + (hi - lo)
    return np.bincount(pos, minlength=iu.size).astype(np.float64)


def noisy_supergraph_partition(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon: float,
                               group_size: int, resolution: float, stage: str, proof: str
                               ) -> tuple[np.ndarray, np.ndarray]:
    """PrivGraph community initialisation. Returns node labels and each community's share of the noisy volume
    (both DP releases: post-processing of the noisy super-graph)."""
    n = graph.num_nodes
    group_size = max(1, int(group_size))
    num_groups = int(np.ceil(n / group_size))
    while num_groups * (num_groups + 1) // 2 > MAX_SUPERGRAPH_CELLS:
        group_size *= 2
        num_groups = int(np.ceil(n / group_size))
    # Random grouping: public randomness, independent of the graph.
    group_of = (np.arange(n) // group_size)[rng.permutation(n)]
    counts = group_pair_counts(graph, group_of, num_groups)
    noisy = charge_laplace(budget, rng, counts, epsilon=epsilon, sensitivity=1.0, stage=stage, proof=proof,
                           note=f"group-pair edge counts, {num_groups} random groups of {group_size} nodes")
    weights = norm_sub(noisy).astype(np.float64)
    iu, ju = np.triu_indices(num_groups)
    keep = weights > 0
    sup = louvain_weighted(num_groups, iu[keep], ju[keep], weights[keep], resolution, rng)
    k = int(sup.max()) + 1
    vol = np.bincount(sup[iu[keep]], weights=weights[keep], minlength=k) + np.bincount(
        sup[ju[keep]], weights=weights[keep], minlength=k)
    share = vol / max(vol.sum(), 1.0)
    return relabel(sup[group_of]), share


def neighbour_counts(graph: Graph, labels: np.ndarray, num_comms: int) -> sp.csr_matrix:
    """Sparse n x K matrix of neighbour counts k_{i,C}."""
    n = graph.num_nodes
    z = sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, num_comms))
    return (graph.to_csr().astype(np.float64) @ z).tocsr()


def em_refine(graph: Graph, labels: np.ndarray, budget: Any, rng: np.random.Generator, *, epsilon: float,
              volume_share: np.ndarray, stage: str, proof: str, chunk: int = 4096) -> np.ndarray:
    """One synchronous pass of exponential-mechanism node moves (see module docstring).

    ``volume_share[C]`` is a public (already released) estimate of vol(C)/2m, clipped to [0, 1].
    """
    n = graph.num_nodes
    labels = relabel(labels)
    deg = graph.degrees().astype(np.float64)
    k = int(labels.max()) + 1
    share = np.clip(np.asarray(volume_share, dtype=np.float64), 0.0, 1.0)
    if share.size != k:
        share = np.full(k, 1.0 / k)
    # Two selections (the two endpoints) see one changed edge: count=2.
    scale = exponential_mechanism_scale(epsilon, 1.0)
    budget.charge(LedgerEntry(
        mechanism="exponential", stage=stage, params={"epsilon": float(epsilon), "scale": scale}, count=2,
        sensitivity=1.0,
        proof=proof, note="per-node community choice, utility k_iC - d_i f_C (sensitivity 1); one edge changes "
                          "the utilities of its two endpoints only",
    ))
    counts = neighbour_counts(graph, labels, k)
    new = np.empty(n, dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        u = counts[start:stop].toarray() - deg[start:stop, None] * share[None, :]
        # Gumbel-max: argmax(u + Gumbel(2 / eps)) ~ exp(eps * u / 2) / Z (the exponential mechanism).
        score = u + rng.gumbel(0.0, scale, size=u.shape)
        new[start:stop] = np.argmax(score, axis=1)
    return relabel(new)


def em_refine_sequential(graph: Graph, labels: np.ndarray, budget: Any, rng: np.random.Generator, *,
                         epsilon: float, stage: str, proof: str) -> np.ndarray:
    r"""PrivGraph's community adjustment as published: nodes, in a public random order, re-choose their community one
    at a time against the CURRENT partition, by the exponential mechanism with utility :math:`k_{i,C}` (the node's
    neighbours currently in C), :math:`\Pr[C] \propto \exp(\varepsilon k_{i,C} / 2)`.

    Privacy (edge adjacency, adaptive composition, Dwork & Roth 2014 Thm 3.16 in its adaptive form): node ``w``'s
    choice reads only ``w``'s incident edges and the labels already chosen (outputs of earlier selections). An edge
    (u, v) therefore enters exactly two selections, u's and v's, each :math:`\varepsilon`-DP (utility sensitivity 1:
    the edge moves one :math:`k_{u,C}` by one); every other selection has the same law under both graphs given the
    earlier outputs. Total :math:`2\varepsilon` per pass: the same ledger entry as :func:`em_refine`. No volume
    penalty: community volumes are sums of private degrees and would let one edge move every node's utility.
    """
    n = graph.num_nodes
    labels = relabel(labels).copy()
    scale = exponential_mechanism_scale(epsilon, 1.0)
    budget.charge(LedgerEntry(
        mechanism="exponential", stage=stage, params={"epsilon": float(epsilon), "scale": scale}, count=2,
        sensitivity=1.0, proof=proof,
        note="sequential per-node community choice against the current partition, utility k_iC (sensitivity 1); one "
             "edge changes the utilities of its two endpoints' selections only",
    ))
    csr = graph.to_csr()
    indptr, indices = csr.indptr, csr.indices
    k = int(labels.max()) + 1
    # Sequential on purpose (each choice sees the previous ones); the per-node work is one bincount over neighbours.
    for i in rng.permutation(n):
        nb = indices[indptr[i]:indptr[i + 1]]
        counts = np.bincount(labels[nb], minlength=k).astype(np.float64)
        score = counts + rng.gumbel(0.0, scale, size=k)  # Gumbel-max = the exponential mechanism's law
        labels[i] = int(np.argmax(score))
    return relabel(labels)


def noisy_count_refine(graph: Graph, labels: np.ndarray, budget: Any, rng: np.random.Generator, *,
                       epsilon: float, rounds: int, stage: str, proof: str, min_size: int = 1,
                       chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Rounds of noisy neighbour-count vectors (Laplace, L1 sensitivity 2) and greedy moves.

    Each round releases ``K = A Z + Lap(2/epsilon)`` and moves every node to the community maximising the
    (post-processed) degree-corrected log-likelihood score ``K_iC / max(vol_C, 1)`` with ``vol_C`` the noisy column
    sums. Returns ``(labels, last_noisy_counts_row_sums)``.
    """
    n = graph.num_nodes
    labels = relabel(labels)
    last = np.zeros(n)
    for _ in range(int(rounds)):
        k = int(labels.max()) + 1
        exact = neighbour_counts(graph, labels, k)
        # Dense noisy n x K matrix in chunks; charged once for the whole release (one Laplace mechanism).
        budget.charge(LedgerEntry(
            mechanism="laplace", stage=stage, params={"epsilon": float(epsilon), "scale": 2.0 / float(epsilon)},
            sensitivity=2.0, proof=proof,
            note="node-to-community neighbour counts A Z, L1 sensitivity 2",
        ))
        scale = 2.0 / epsilon
        vol = np.zeros(k)
        noisy_rows = []
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            block = exact[start:stop].toarray() + rng.laplace(0.0, scale, size=(stop - start, k))
            noisy_rows.append(block)
            vol += np.bincount(labels[start:stop], weights=block.sum(axis=1), minlength=k)
        vol = np.maximum(vol, 1.0)
        new = np.empty(n, dtype=np.int64)
        for i, start in enumerate(range(0, n, chunk)):
            block = noisy_rows[i]
            new[start:start + block.shape[0]] = np.argmax(block / np.sqrt(vol)[None, :], axis=1)
            last[start:start + block.shape[0]] = block.sum(axis=1)
        sizes = np.bincount(new, minlength=k)
        if min_size > 1 and (sizes < min_size).any():
            small = sizes < min_size
            # Nodes of tiny communities go to their best large community (post-processing).
            for i, start in enumerate(range(0, n, chunk)):
                block = noisy_rows[i] / np.sqrt(vol)[None, :]
                block[:, small] = -np.inf
                idx = np.arange(start, start + block.shape[0])
                move = small[new[idx]]
                new[idx[move]] = np.argmax(block[move], axis=1)
        labels = relabel(new)
    return labels, last
