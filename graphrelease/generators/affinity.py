"""Sparse post-processing samplers for structure: BTER affinity blocks inside blocks, and component repair.

Everything here reads released (DP) values and a synthetic graph only, never the input: it is post-processing and
costs no budget. Graphs are sorted integer pair keys ``u * n + v`` (``u < v``), as in
:mod:`graphrelease.generators.classical_common`; nothing builds an ``n x n`` matrix.

* :func:`affinity_groups` / :func:`sample_affinity_edges` — phase 1 of BTER (Seshadhri, Kolda & Pinar 2012, "Community
  structure and scale-free collections of Erdos-Renyi graphs", Phys. Rev. E 85, 056109, Sec. III): nodes of similar
  degree form small groups of ``d_min + 1`` nodes, each an Erdos-Renyi graph of density ``rho``; a node of degree
  ``d`` in such a group has local clustering about ``rho^3`` and expected internal degree ``rho * d_min``. Ours forms
  the groups *inside* each block of a DC-SBM (so they add to the block structure) and uses one density for all
  groups, solved so that the expected triangle count matches a released one. Phase 2 (the excess degrees) is the
  DC-SBM sampler of :mod:`graphrelease.generators.classical_common`.
* :func:`trim_to_degrees` — drops random affinity edges at nodes that drew more than their degree.
* :func:`merge_components` — connects the other components (largest first) to the largest one until the count reaches
  a target, each new edge paid for by deleting an edge between two nodes of degree >= 3 in the largest component
  (where that splits pieces off or runs out: an edge outside a spanning forest, in any component).
* :func:`pair_stranded_nodes` — isolated nodes released with an edge or more take over a leaf of a node of degree >= 3.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import scipy.sparse as sp

from graphrelease.generators.classical_common import degree_oriented, in_sorted, keys_to_edges, pair_keys
from graphrelease.graph import sorted_unique


def csr_from_keys(n: int, keys: np.ndarray) -> sp.csr_matrix:
    """Symmetric 0/1 CSR adjacency of the pair keys."""
    e = keys_to_edges(keys, n)
    rows = np.concatenate([e[:, 0], e[:, 1]])
    cols = np.concatenate([e[:, 1], e[:, 0]])
    return sp.csr_matrix((np.ones(rows.size, dtype=np.float64), (rows, cols)), shape=(n, n))


def triangle_count_keys(n: int, keys: np.ndarray) -> float:
    """Exact triangle count: edges oriented low -> high (degree, id) rank, ``T = sum((L @ L) * L)``."""
    if keys.size < 3:
        return 0.0
    e = keys_to_edges(keys, n)
    d = np.bincount(e.ravel(), minlength=n)
    low = degree_oriented(n, e, d)
    return float((low @ low).multiply(low).sum())


def _cut_runs(nodes: np.ndarray, d: np.ndarray, segments: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Greedy BTER cuts of each ``[lo, hi)`` segment of degree-sorted ``nodes``: full groups' starts, and the
    positions of the nodes of each segment's short last run (fewer nodes than ``d_first + 1``)."""
    starts: list[int] = []
    leftover: list[int] = []
    dn = d[nodes].tolist()
    for lo, hi in segments:
        i = lo
        while i < hi:
            if i + dn[i] + 1 <= hi:
                starts.append(i)
            else:
                leftover.extend(range(i, hi))
            i += dn[i] + 1
    return starts, leftover


def affinity_groups(degrees: np.ndarray, block_of: np.ndarray, rng: np.random.Generator, *, min_degree: int = 2,
                    mixed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """BTER groups inside blocks. Returns ``(order, starts)``: group ``g`` holds the nodes
    ``order[starts[g]:starts[g+1]]``; nodes of degree below ``min_degree`` are in no group.

    Within each block, nodes are sorted by degree (ties in random order) and cut greedily into runs of
    ``round(d_first) + 1`` nodes, ``d_first`` the run's smallest degree (BTER phase 1). A block's last run is usually
    short: its highest-degree nodes, too few for a group of their degree. They form a group of their own inside their
    block. (They were pooled across blocks and cut again by degree, which gave hubs groups of their size, but those
    dense groups tied the blocks together: the input's own partition scored 0.10 / 0.06 worse on Facebook at epsilon
    4 / 1, and Squirrel's 0.15 worse at 1; structure log item 21. The Tolokers fits that lost a quarter or more of
    their average clustering with these groups did so in the sampler, not here: a density steer that started one
    draw too late, and secant steps too short to climb back from a deep first cut; both are fixed there, log item
    22.)

    With ``mixed`` (released degrees near-uniform: the sampler's exact-degree path), a block's nodes are cut in random
    order into groups of one size, the block's median released degree + 1. Sorted, the groups join nodes whose
    released degrees differ by less than their noise, so every group's edges join equal degrees: on near-uniform
    inputs that made up a degree assortativity of +0.6 where the input has about 0 (a Watts-Strogatz ring, a relaxed
    caveman graph; 8 seeded fits, ``reports/regular_degrees.md``, structure log item 34). Shuffled but sized by the
    first member's degree, a group's size still set its members' realised degrees (caveman: +0.11 left, and triangles
    RE 0.008 -> 0.076 at epsilon 1); one size per block (``max(round(median), min_degree) + 1`` over the block's nodes
    of degree >= ``min_degree``) takes it to +0.06 at a triangle RE of 0.025. The stubs of the exact-degree path then
    give every member its own degree whatever its group's size. The costs: a graph whose near-uniform degrees are
    really assorted loses that (a triangular lattice, +0.41 from its border: error 0.04-0.13 -> 0.39-0.40), and a ring
    of cliques' triangle RE went 0.136 -> 0.185 at epsilon 1.
    """
    # Randomised rounding: the released degrees are reals, and rounding them all the same way would pile nodes on
    # the same integer and give every group of one size the same internal degree (spikes in the histogram).
    x = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
    d = np.floor(x + rng.random(x.size)).astype(np.int64)
    block_of = np.asarray(block_of, dtype=np.int64)
    nodes = np.nonzero(d >= int(min_degree))[0]
    # Mixed groups ignore the degree order (the same random draws, so the sorted path's stream is unchanged).
    nodes = nodes[np.lexsort((rng.random(nodes.size), np.zeros(nodes.size) if mixed else d[nodes], block_of[nodes]))]
    if mixed and nodes.size:
        d = d.copy()
        blocks = block_of[nodes]
        for block in np.unique(blocks).tolist():
            members = nodes[blocks == block]
            d[members] = max(int(np.rint(np.median(x[members]))), int(min_degree))
    bounds = np.flatnonzero(np.diff(block_of[nodes])) + 1
    segments = list(zip(np.concatenate([[0], bounds]).tolist(), np.concatenate([bounds, [nodes.size]]).tolist()))
    starts, leftover = _cut_runs(nodes, d, segments)
    # A full group is the d_first + 1 nodes from its start.
    grouped = [nodes[a:a + int(d[nodes[a]]) + 1] for a in starts]
    short = nodes[np.asarray(leftover, dtype=np.int64)] if leftover else np.zeros(0, dtype=np.int64)
    short = short[np.lexsort((rng.random(short.size), d[short]))]
    grouped += [short[block_of[short] == block] for block in np.unique(block_of[short]).tolist()]
    order = np.concatenate(grouped) if grouped else np.zeros(0, dtype=np.int64)
    sizes = np.array([g.size for g in grouped], dtype=np.int64)
    return order.astype(np.int64), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def group_sums(starts: np.ndarray) -> tuple[float, float]:
    """``(sum C(s, 2), sum C(s, 3))`` over the groups: expected edges and triangles are ``rho`` and ``rho^3`` times
    these."""
    s = np.diff(starts).astype(np.float64)
    return float(np.sum(s * (s - 1) / 2)), float(np.sum(s * (s - 1) * (s - 2) / 6))


def group_densities(starts: np.ndarray, max_edges: float, triangles: float, power: float = 0.0,
                    shape: np.ndarray | None = None) -> np.ndarray:
    r"""Per-group densities :math:`\rho_g = \min(1, \rho_0 \sigma_g (s_g/\bar s)^{\beta})`.

    :math:`\rho_0` (bisection) makes the expected affinity triangles :math:`\sum_g \rho_g^3 \binom{s_g}{3}` equal
    ``triangles``, with the expected affinity edges :math:`\sum_g \rho_g \binom{s_g}{2}` at most ``max_edges``.
    ``power`` :math:`\beta = 0` and no ``shape`` (:math:`\sigma_g = 1`) is BTER with one clustering level for every
    degree (:math:`\rho^3`); ``shape`` gives each group its relative density (e.g. from a per-degree profile).
    """
    sizes = np.diff(starts).astype(np.float64)
    if sizes.size == 0 or triangles <= 0:
        return np.zeros(sizes.size)
    c2, c3 = sizes * (sizes - 1) / 2, sizes * (sizes - 1) * (sizes - 2) / 6
    ref = float(np.average(sizes, weights=np.maximum(c3, 1e-12))) if c3.sum() > 0 else 1.0
    shape = (sizes / ref) ** float(power) * (1.0 if shape is None else np.maximum(np.asarray(shape, float), 1e-6))
    lo, hi = 0.0, 1.0 / max(float(shape.min()), 1e-12)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        rho = np.minimum(1.0, mid * shape)
        if np.sum(rho ** 3 * c3) > triangles or np.sum(rho * c2) > max_edges:
            hi = mid
        else:
            lo = mid
    return np.minimum(1.0, lo * shape)


def internal_degrees(n: int, order: np.ndarray, starts: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Expected degree of every node inside its group, ``rho_g * (s_g - 1)`` (0 outside groups)."""
    out = np.zeros(n)
    sizes = np.diff(starts)
    out[order] = np.repeat(np.asarray(rho, dtype=np.float64) * (sizes - 1), sizes)
    return out


def sample_affinity_edges(n: int, order: np.ndarray, starts: np.ndarray, rho: np.ndarray, rng: np.random.Generator
                          ) -> np.ndarray:
    """Group ``g`` an Erdos-Renyi graph G(s_g, rho_g), independently; sorted pair keys. Work is ``sum C(s, 2)``."""
    sizes = np.diff(starts)
    out = [np.zeros(0, dtype=np.int64)]
    rho = np.clip(np.asarray(rho, dtype=np.float64), 0.0, 1.0)
    for s in np.unique(sizes[sizes >= 2]).tolist():
        sel = sizes == s
        gs, gr = starts[:-1][sel], rho[sel]
        iu, ju = np.triu_indices(s, 1)
        # Bound the mask's memory: groups of one size in chunks of about 4M pairs.
        step = max(1, 4_000_000 // iu.size)
        for c0 in range(0, gs.size, step):
            g = gs[c0:c0 + step]
            keep = rng.random((g.size, iu.size)) < gr[c0:c0 + step, None]
            gi, pi = np.nonzero(keep)
            a = order[g[gi] + iu[pi]]
            b = order[g[gi] + ju[pi]]
            out.append(pair_keys(np.stack([a, b], axis=1), n))
    return np.sort(np.concatenate(out))

def trim_to_degrees(n: int, keys: np.ndarray, caps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Drop random edges at nodes holding more than ``caps`` of them (an Erdos-Renyi group can give a node more
    edges than its released degree). An edge is kept when it is among the first ``cap`` edges of both endpoints in
    one random order. Returns sorted keys."""
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size == 0:
        return keys
    caps = np.asarray(caps, dtype=np.int64)
    e = keys_to_edges(keys, n)
    perm = rng.permutation(keys.size)
    keep = np.ones(keys.size, dtype=bool)
    for col in (0, 1):
        node = e[perm, col]
        srt = np.argsort(node, kind="stable")
        sorted_nodes = node[srt]
        rank = np.arange(srt.size) - np.searchsorted(sorted_nodes, sorted_nodes, side="left")
        ok = np.empty(srt.size, dtype=bool)
        ok[srt] = rank < caps[sorted_nodes]
        keep[perm[~ok]] = False
    return np.sort(keys[keep])


#: Least soft threshold of the released component count, in noise scales (:func:`component_target`).
COMPONENT_SHRINK = 1.0
#: The threshold grows on small graphs until pieces kept apart by noise alone number more than
#: ``COMPONENT_TAIL_NODES`` of the nodes with probability at most ``COMPONENT_TAIL_PROBABILITY``
#: (:func:`component_shrink`).
COMPONENT_TAIL_NODES = 0.02
COMPONENT_TAIL_PROBABILITY = 0.005


def component_shrink(scale: float, num_nodes: int | None) -> float:
    """The soft threshold in noise scales: at least ``COMPONENT_SHRINK``, and large enough that the Laplace noise
    alone, :math:`P(\mathrm{Lap}(b) > k b + E) = \tfrac12 e^{-k - E/b}`, leaves more than
    :math:`E = ` ``COMPONENT_TAIL_NODES`` :math:`\cdot n` spurious pieces with probability at most
    ``COMPONENT_TAIL_PROBABILITY``: :math:`k = \ln(1 / 2\delta) - E / b`.

    Why: each spurious piece costs the largest component at least one node (pairs, mostly), and a bound on the
    largest component's share is a bound in nodes, so one noise scale (33 at epsilon 1) is a tenth of a 300-node
    graph and nothing on LastFM. With one scale, 48 seeded fits each at epsilon 0.5 / 1 / 2 / 4 left the largest
    component more than 5 points below the input's in 12 / 16 / 12 / 7 releases of three small one-component
    graphs (connectome proxies of 300 and 500 nodes, Les Miserables' 77; structure log item 32). ``num_nodes``
    is public (the declared node set); ``None`` or a zero scale keeps ``COMPONENT_SHRINK``. Post-processing.
    """
    if num_nodes is None or scale <= 0:
        return COMPONENT_SHRINK
    tail = math.log(0.5 / COMPONENT_TAIL_PROBABILITY) - COMPONENT_TAIL_NODES * float(num_nodes) / float(scale)
    return max(COMPONENT_SHRINK, tail)


def component_target(released: float, scale: float, floor: float = 1.0, num_nodes: int | None = None) -> float:
    """How many components the draw keeps: the released count soft-thresholded towards ``floor`` by
    :func:`component_shrink` noise scales (``scale`` = the count's Laplace scale; 0 for releases that did not state
    it; ``num_nodes`` the public node count, which raises the threshold on small graphs).

    Why: at epsilon 1 the count's scale is 33 (share 0.03), as large as the whole count of many inputs. Read as it
    stood, a one-component input released as 40 kept 39 pieces, and on small graphs their nodes cost the largest
    component its share. One fit, paired draws with and without the threshold, 8 fits per graph at epsilon 1, on 7
    one-component graphs of 300-1,000 nodes (grid, connected caveman, path, Barabasi-Albert, random tree, two
    300-node geometric graphs): the largest component lost more than 5 points in 16 of 56 releases without it, 6
    with it (4 at two noise scales). The price is paid by inputs with many small components: Cora at epsilon 1
    (78 components) keeps 30 instead of 62 at one scale (6 fits; at epsilon 4, 68 instead of 77), and 1 at the
    threshold its 2,708 nodes give at epsilon 1 (3.0 scales; 43 at epsilon 2, 1.4 scales; one scale at 4; medians of
    12 seeded fits). Leaving pieces that the count cannot tell from noise is the costlier error on small graphs:
    soft thresholding keeps only what stands out of the noise. ``floor``: a lower bound read off released values
    (default 1).
    Post-processing.
    """
    shrink = component_shrink(float(scale), num_nodes)
    return float(floor + max(float(released) - float(floor) - shrink * float(scale), 0.0))


def merge_components(n: int, keys: np.ndarray, target_components: float, weights: np.ndarray,
                     rng: np.random.Generator, *, protected: np.ndarray | None = None, pay: bool = True
                     ) -> np.ndarray:
    """Join components to the largest one until at most ``target_components`` remain; edge count kept (with
    ``pay=False`` the joining edges are added and nothing is deleted, at most :data:`UNPAID_JOINS` of the edges and
    at least :data:`UNPAID_JOINS_MIN`).

    Candidates, in order: the largest non-largest components first, isolated nodes with the largest ``weights``
    (released degrees) before other isolated nodes; nodes whose weight rounds to 0 come last. Each join adds an
    edge from the component's highest-weight node to a node of the largest component drawn proportionally to
    ``weights``, and deletes one edge of the largest component between two nodes of degree >= 3, preferring edges
    not in ``protected`` (sorted keys, e.g. the affinity edges that hold the triangles) and, among those, edges in
    the fewest triangles. Where those deletions split pieces off (some were bridges: tree-like graphs) or cannot pay
    for every join, they are chosen again among the edges outside a spanning forest, in any component (kept if that
    leaves fewer components).
    """
    keys = np.sort(np.asarray(keys, dtype=np.int64))
    if keys.size == 0:
        return keys
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    adjacency = csr_from_keys(n, keys)
    ncomp, comp = sp.csgraph.connected_components(adjacency, directed=False)
    excess = int(ncomp - max(1, int(round(target_components))))
    if excess <= 0:
        return keys
    sizes = np.bincount(comp, minlength=ncomp)
    giant = int(np.argmax(sizes))
    # Representative of each component: its highest-weight node.
    order = np.lexsort((-w, comp))
    first = np.searchsorted(comp[order], np.arange(ncomp))
    rep = order[first]
    cand = np.array([k for k in range(ncomp) if k != giant], dtype=np.int64)
    # Components holding a node that should have edges go first, the largest first (then by weight): the
    # components a real graph leaves outside its giant one are mostly tiny, so for a given count joining the large
    # ones keeps the giant component's share right (smallest-first left a 2-5% tail of mid-size components on Cora
    # once the low degrees were released accurately). Isolated nodes whose released degree rounds to 0 go last:
    # the released component count decides whether they stay alone.
    empty = (sizes[cand] == 1) & (np.rint(w[rep[cand]]) < 1)
    cand = cand[np.lexsort((-w[rep[cand]], -sizes[cand], empty))][:excess]
    if cand.size == 0:
        return keys
    in_giant = np.nonzero(comp == giant)[0]
    pw = w[in_giant] + 1e-12
    targets = in_giant[rng.choice(in_giant.size, size=cand.size, p=pw / pw.sum())]
    added = pair_keys(np.stack([rep[cand], targets], axis=1), n)
    added = added[np.sort(np.unique(added, return_index=True)[1])]  # distinct, in the candidates' priority order
    if not pay:
        # Unpaid joins add edges: at most UNPAID_JOINS of them, so a draw with nothing to pay with (a forest of stars,
        # whose edges all end at a leaf) keeps its edge count instead of being joined up (structure log item 32).
        limit = max(UNPAID_JOINS_MIN, int(UNPAID_JOINS * keys.size))
        return sorted_unique(np.concatenate([keys, added[:limit]]))
    e = keys_to_edges(keys, n)
    deg = np.bincount(e.ravel(), minlength=n)
    in_giant_edge = comp[e[:, 0]] == giant
    spare = in_sorted(keys, np.sort(np.asarray(protected, dtype=np.int64))) if protected is not None else \
        np.zeros(keys.size, dtype=bool)
    # Deletion candidates in order of preference: unprotected edges between nodes of degree >= 3 (rarely in a
    # triangle, rarely a bridge), then unprotected edges at degree >= 2, then protected ones of degree >= 3.
    both3 = (deg[e[:, 0]] >= 3) & (deg[e[:, 1]] >= 3)
    both2 = (deg[e[:, 0]] >= 2) & (deg[e[:, 1]] >= 2)
    tiers = [in_giant_edge & ~spare & both3, in_giant_edge & ~spare & both2, in_giant_edge & both3]
    # Within a tier, edges with the smallest degree product go first (random tie-break): in a degree-corrected
    # graph an edge closes about d_u d_v / 2m wedges' worth of triangles, so this spares the hubs' triangles.
    product = deg[e[:, 0]].astype(np.float64) * deg[e[:, 1]] * (1.0 + rng.random(keys.size))
    dead_idx, taken = _deletion_walk(n, keys, e, deg, tiers, product, added.size, adjacency)
    joined = sorted_unique(np.concatenate([keys[~taken], added[:len(dead_idx)]]))
    left, label = (sp.csgraph.connected_components(csr_from_keys(n, joined), directed=False) if dead_idx
                   else (ncomp, comp))
    if left > ncomp - len(dead_idx) or len(dead_idx) < added.size:
        # Some deletions were bridges, or the giant component could not pay for every join: in a tree-like graph
        # most edges are bridges (a random tree's releases kept 11-58 pieces for a released count of 1, their largest
        # component 0.83-0.98 of the nodes; the unpaid pass joins only UNPAID_JOINS). The deletions that split
        # nothing stay; the rest are chosen again among the edges outside a spanning forest of what is left, in any
        # component (a piece's cycle pays as well as the giant one's): any set of them can go without splitting
        # anything, and there are m - n + components of them. Only the bridges are replaced, since a cycle edge is
        # likelier to close a triangle (all of them: Cora's releases at epsilon 4 lost 3-6% of their triangles).
        # The forest holds the edges the walk would delete last (protected ones, hubs'): it is the minimum spanning
        # forest under weights 1 + [tier 1] + [tier 2] + 1 / degree product.
        kept = np.zeros(keys.size, dtype=bool)
        kept[[i for i in dead_idx if label[e[i, 0]] == label[e[i, 1]]]] = True
        anywhere = [~spare & both3, ~spare & both2]
        weight = (1.0 + anywhere[0] + anywhere[1] + 1.0 / product)[~kept]
        forest = sp.csgraph.minimum_spanning_tree(
            sp.csr_matrix((weight, (e[~kept, 0], e[~kept, 1])), shape=(n, n))).tocoo()
        cotree = ~kept & ~in_sorted(keys, np.sort(pair_keys(np.stack([forest.row, forest.col], axis=1), n)))
        anywhere = [tier & cotree for tier in anywhere] + [cotree & both2]
        running = deg - np.bincount(e[kept].ravel(), minlength=n)
        again, taken_again = _deletion_walk(n, keys, e, deg, anywhere, product, added.size - int(kept.sum()),
                                            adjacency, (3, 2, 2), running=running, taken=kept)
        paid = int(kept.sum()) + len(again)
        other = sorted_unique(np.concatenate([keys[~taken_again], added[:paid]]))
        if sp.csgraph.connected_components(csr_from_keys(n, other), directed=False)[0] < left:
            joined = other
    # Fewer deletable edges than joins (a giant component of degree-2 nodes): join only as many components as can be
    # paid for, the first in priority order; isolating a node to join another would not lower the count anyway.
    return joined


def _deletion_walk(n: int, keys: np.ndarray, e: np.ndarray, deg: np.ndarray, tiers: list[np.ndarray],
                   product: np.ndarray, wanted: int, adjacency: sp.csr_matrix, floors: tuple[int, ...] = (3, 2, 3),
                   *, running: np.ndarray | None = None, taken: np.ndarray | None = None
                   ) -> tuple[list[int], np.ndarray]:
    """The edges :func:`merge_components` deletes to pay for ``wanted`` joins: indices into ``keys`` in the order
    taken, and the mask of every deleted edge (``taken`` on entry: edges already deleted, whose endpoints' degrees
    ``running`` has lowered)."""
    # The tiers' degree floors hold for the degrees *as edges go*: chosen all at once, a degree-2 node could lose both
    # of its edges (measured on Slashdot at epsilon 1: ~12,000 joins isolated 98 nodes and split off pairs, 172
    # components left for a released 17), so the walk keeps running degrees and skips an edge that would take an
    # endpoint below its tier's floor minus one. A Python walk: it stops after ``wanted`` deletions.
    running = deg.copy() if running is None else running.copy()
    taken = np.zeros(keys.size, dtype=bool) if taken is None else taken.copy()
    dead_idx: list[int] = []
    for tier, floor in zip(tiers, floors):
        if len(dead_idx) >= wanted:
            break
        idx = np.nonzero(tier & ~taken)[0]
        idx = idx[np.argsort(product[idx], kind="stable")]
        # Edges in fewer triangles go first, among a pool of the lowest degree products (the support costs a sparse
        # product per edge, so not for all of Slashdot's). A join that deletes a triangle's edge undoes what the
        # closures and groups were steered to: on 1,000-node pieces of Cora at epsilon 4 the joins took 8-13% of
        # the draw's clustering sum and triangles after the sampler had met the released values.
        head = idx[:REPAIR_POOL * (wanted - len(dead_idx)) + JOIN_POOL_EXTRA]
        support = edge_support(n, keys, head, adjacency=adjacency)
        idx = np.concatenate([head[np.argsort(support, kind="stable")], idx[head.size:]])
        for i in idx:
            u, v = e[i]
            if running[u] < floor or running[v] < floor:
                continue
            running[u] -= 1
            running[v] -= 1
            taken[i] = True
            dead_idx.append(int(i))
            if len(dead_idx) >= wanted:
                break
    return dead_idx, taken


#: Most joins :func:`merge_components` makes without paying for them: this share of the edges, at least
#: ``UNPAID_JOINS_MIN``. The unpaid pass is for the pieces that later deletions split off (LastFM: 15-25 for 27,806
#: edges); on a forest of 300 stars (1,851 nodes) at epsilon 1 it added 7-17% to the edge count when the component
#: target fell.
UNPAID_JOINS = 0.005
UNPAID_JOINS_MIN = 8
#: Edges beyond ``REPAIR_POOL`` per join whose triangle support :func:`merge_components` reads before choosing its
#: deletions (the walk skips edges whose endpoints would fall below a tier's degree floor).
JOIN_POOL_EXTRA = 64
#: Rounds of :func:`repair_hub_degrees`: a round's Chung-Lu partners that are already neighbours are dropped, so one
#: round left Facebook's top hubs 25% of their wedges short; later rounds re-draw for what is still missing.
REPAIR_ROUNDS = 4
#: Deletion candidates examined per edge a round must pay for (a random pool, ranked by triangle support): bounds the
#: support computation to a few times the repair's size instead of a triangle listing of the whole graph.
REPAIR_POOL = 4
#: A node is short when its released degree exceeds its sampled one by more than this many Poisson standard
#: deviations. Lower thresholds (1 and 0.5) lifted Chameleon's hubs from 0.94 to 0.96 of their released degrees but
#: moved neither its degree KL nor its clustering errors beyond the spread of 4 seeded fits.
REPAIR_SD = 2.0
#: A short node whose released degree is at least this share of the node count draws its repair partners among the
#: non-neighbours the draw left below their released degree (not short themselves), in proportion to what they lack,
#: and only then in proportion to degree, instead of by the Chung-Lu draw over all nodes. Such a hub is adjacent to
#: most of the heavy nodes already, so Chung-Lu partners mostly collide (and are dropped) or land on heavy nodes over
#: their degree, closing triangles among the hub's neighbours; the edges it lost to distinct-pair sampling were lost
#: by light nodes, which the draw left short. On 1,000-node BFS pieces of
#: Chameleon (hubs of 54-73% of the nodes) the hubs kept 0.84-0.88 of their released wedges, and transitivity was
#: 0.38-0.45 over. The rule for every short node (measured, not adopted: structure log item 24) fixed those pieces
#: but cost Squirrel and Tolokers (mean degree 76 / 88, hubs of 36% / 18% of the nodes) 0.02-0.1 in triangles or
#: clustering. None of the structure report's graphs has a hub at half of its nodes, so their draws are unchanged.
SATURATED_HUB_SHARE = 0.5


def pair_stranded_nodes(n: int, keys: np.ndarray, degrees: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Isolated nodes whose released degree is at least 1 each take over a leaf: the leaf's edge to a node of degree
    >= 3 is replaced by an edge from the leaf to the isolated node. Edge and component counts are kept (the pair is
    the component the isolated node was), the leaf keeps degree 1, no triangle is lost (a leaf edge is in none).

    Why: the component count is met by leaving the draw's misses apart, and those are degree-1 nodes that drew no
    edge, so a graph without isolated nodes came out with 1.5-3.3% of them (Cora at epsilon 1 and 4: 40-89, all
    released at degree 1), where its small components are pairs and small trees. Neighbours that are furthest over
    their released degree give their leaves first.
    """
    keys = np.sort(np.asarray(keys, dtype=np.int64))
    if keys.size == 0:
        return keys
    e = keys_to_edges(keys, n)
    deg = np.bincount(e.ravel(), minlength=n)
    released = np.asarray(degrees, dtype=np.float64)
    stranded = np.flatnonzero((deg == 0) & (np.rint(released) >= 1))
    if stranded.size == 0:
        return keys
    leaf_first = deg[e[:, 0]] == 1
    leaf_edge = (leaf_first & (deg[e[:, 1]] >= 3)) | ((deg[e[:, 1]] == 1) & (deg[e[:, 0]] >= 3))
    rows = np.flatnonzero(leaf_edge)
    if rows.size == 0:
        return keys
    leaf = np.where(leaf_first[rows], e[rows, 0], e[rows, 1])
    hub = np.where(leaf_first[rows], e[rows, 1], e[rows, 0])
    leaves_of: dict[int, list[int]] = {}
    for r in rng.permutation(rows.size).tolist():
        leaves_of.setdefault(int(hub[r]), []).append(r)
    # The hub furthest over its released degree, as the hand-overs go, gives the next leaf; a hub keeps degree >= 2
    # (so it stays in its component).
    running = deg.astype(np.int64)  # a copy: deg still says who was a leaf
    ties = rng.random(n)
    heap = [(released[h] - running[h], ties[h], h) for h in leaves_of]
    heapq.heapify(heap)
    drop: list[int] = []
    added: list[tuple[int, int]] = []
    for node in rng.permutation(stranded).tolist():
        if not heap:
            break
        _, _, h = heapq.heappop(heap)
        r = leaves_of[h].pop()
        running[h] -= 1
        drop.append(int(rows[r]))
        added.append((int(leaf[r]), int(node)))
        if running[h] >= 3 and leaves_of[h]:
            heapq.heappush(heap, (released[h] - running[h], ties[h], h))
    if not drop:
        return keys
    kept = np.delete(keys, np.asarray(drop, dtype=np.int64))
    return sorted_unique(np.concatenate([kept, pair_keys(np.asarray(added, dtype=np.int64), n)]))


def edge_support(n: int, keys: np.ndarray, rows: np.ndarray, *, adjacency: sp.csr_matrix | None = None
                 ) -> np.ndarray:
    """Number of triangles on each edge ``keys[rows]`` (common neighbours of its endpoints); cost linear in their
    endpoints' degrees. ``adjacency``: :func:`csr_from_keys` of ``keys``, when the caller has it already."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    a = csr_from_keys(n, keys) if adjacency is None else adjacency
    u, v = keys[rows] // n, keys[rows] % n
    return np.asarray(a[u].multiply(a[v]).sum(axis=1)).ravel().astype(np.int64)


def repair_hub_degrees(n: int, keys: np.ndarray, degrees: np.ndarray, rng: np.random.Generator, *,
                       protected: np.ndarray | None = None, min_degree: float = 10.0,
                       rounds: int | None = None, sides: np.ndarray | None = None) -> np.ndarray:
    """Give nodes that distinct-pair sampling left well short of their released degree the edges they lack; the
    edge count is kept by deleting as many unprotected edges between nodes not short of their degree.

    A hub inside a block smaller than its degree (or whose block partners are few and light) cannot reach its degree
    from its block pairs alone: it saturates, and the wedges (hence the global clustering) fall with it. "Short" is
    a shortfall beyond Poisson noise (2 standard deviations) at a released degree of at least ``min_degree``. Partners
    are drawn in proportion to the released degrees over the whole graph (Chung-Lu), existing edges excluded, except
    for hubs of at least :data:`SATURATED_HUB_SHARE` of the nodes (:func:`_repair_partners`); up to ``rounds``
    rounds (default :data:`REPAIR_ROUNDS`), each re-drawing what the last one still left missing (partners that were
    already neighbours).
    The deleted edges are the ones closing the fewest triangles among a random pool of unprotected edges between
    non-short nodes, at equal support preferring edges whose endpoints both went over their released degree.
    With ``sides`` (0 / 1 per node, the sampler's side repulsion) a hub's partners are on the other side.
    Post-processing of released values and of the synthetic graph.
    """
    keys = np.sort(np.asarray(keys, dtype=np.int64))
    prot = np.sort(np.asarray(protected, dtype=np.int64)) if protected is not None else None
    for _ in range(max(int(REPAIR_ROUNDS if rounds is None else rounds), 1)):
        new = _repair_round(n, keys, degrees, rng, prot, float(min_degree), sides)
        if new is keys:
            break
        keys = new
    return keys


def _repair_round(n: int, keys: np.ndarray, degrees: np.ndarray, rng: np.random.Generator,
                  protected: np.ndarray | None, min_degree: float, sides: np.ndarray | None = None) -> np.ndarray:
    """One round of :func:`repair_hub_degrees`; returns ``keys`` itself when nothing changed."""
    d = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
    e = keys_to_edges(keys, n)
    got = np.bincount(e.ravel(), minlength=n).astype(np.float64)
    gap = d - got
    short = (gap > REPAIR_SD * np.sqrt(d + 1.0)) & (d >= min_degree)
    if not short.any():
        return keys
    # Hubs of at least half the graph (SATURATED_HUB_SHARE) take their partners among the nodes below their released
    # degree; the others Chung-Lu, as before (drawn first, so graphs without such hubs draw exactly what they did).
    saturated = short & (d >= SATURATED_HUB_SHARE * n)
    chung_lu = short & ~saturated
    hubs = np.repeat(np.nonzero(chung_lu)[0], np.rint(gap[chung_lu]).astype(np.int64))
    w = d * ~short + 1e-12
    if sides is None:
        partners = rng.choice(n, size=hubs.size, p=w / w.sum())
    else:
        partners = np.empty(hubs.size, dtype=np.int64)
        for side in (0, 1):
            mine = sides[hubs] == side
            other = w * (sides != side)
            partners[mine] = (rng.choice(n, size=int(mine.sum()), p=other / other.sum()) if other.sum() > 0
                              else hubs[mine])
    adjacency = csr_from_keys(n, keys) if saturated.any() else None  # reused by edge_support below
    if adjacency is not None:
        more_hubs, more_partners = _repair_partners(adjacency, np.nonzero(saturated)[0],
                                                    np.rint(gap[saturated]).astype(np.int64),
                                                    np.maximum(gap, 0.0) * ~short, d * ~short, rng, sides)
        hubs, partners = np.concatenate([hubs, more_hubs]), np.concatenate([partners, more_partners])
    ok = partners != hubs
    added = sorted_unique(pair_keys(np.stack([hubs[ok], partners[ok]], axis=1), n))
    added = added[~in_sorted(added, keys)]
    if added.size == 0:
        return keys
    spare = in_sorted(keys, protected) if protected is not None else np.zeros(keys.size, dtype=bool)
    payable = ~short[e[:, 0]] & ~short[e[:, 1]]
    free = np.nonzero(~spare & payable)[0]
    gained = np.bincount(keys_to_edges(added, n).ravel(), minlength=n)
    over = (got + gained) > d
    # Deleting an edge in triangles removes them (and with them the clustering the affinity groups and closures
    # built); on a dense graph nearly every edge is in one, so the rule is "fewest triangles first", never "none":
    # forbidding them starved the repair on Chameleon (hubs 0.82-0.89 of their released degree instead of 0.92-0.94).
    pool = rng.permutation(free)[:REPAIR_POOL * added.size]
    if pool.size < added.size:
        # Too few unprotected edges to pay with (all of them are taken): the affinity edges pay for the rest, those
        # between two nodes the repair takes over their degree first. A draw whose low degrees were all held by groups
        # left a wheel's hub at 157-211 of its released 383-399 (2 of 10 seeded fits at epsilon 1), and the draw kept
        # had its triangles in the groups, none at the hub (structure log item 32).
        fallback = rng.permutation(np.nonzero(spare & payable)[0])[:REPAIR_POOL * (added.size - pool.size)]
        support = edge_support(n, keys, fallback, adjacency=adjacency)
        both_over = over[e[fallback, 0]] & over[e[fallback, 1]]
        take = np.concatenate([pool, fallback[np.lexsort((support, ~both_over))]])[:added.size]
    else:
        support = edge_support(n, keys, pool, adjacency=adjacency)
        both_over = over[e[pool, 0]] & over[e[pool, 1]]
        take = pool[np.lexsort((rng.random(pool.size), ~both_over, support))][:added.size]
    if take.size == 0:
        return keys
    added = added[rng.permutation(added.size)[:take.size]]  # never add more than can be paid for
    keep = np.ones(keys.size, dtype=bool)
    keep[take] = False
    return sorted_unique(np.concatenate([keys[keep], added]))


def _repair_partners(adjacency: sp.csr_matrix, hubs: np.ndarray, need: np.ndarray, lacking: np.ndarray,
                     degrees: np.ndarray, rng: np.random.Generator, sides: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``need[i]`` distinct new partners of each hub ``hubs[i]``, never a present neighbour or the hub itself: first
    among the nodes the draw left below their released degree, in proportion to what they lack (``lacking``), then,
    for what those cannot give, in proportion to ``degrees`` (Chung-Lu). Returns the pairs' two ends. One hub at a
    time, O(n) each (:func:`_repair_round` calls it for the few hubs of :data:`SATURATED_HUB_SHARE`)."""
    hub_ends, partner_ends = [], []
    for hub, count in zip(hubs.tolist(), need.tolist()):
        taken = adjacency.indices[adjacency.indptr[hub]:adjacency.indptr[hub + 1]]
        chosen: list[np.ndarray] = []
        for weights in (lacking, degrees):
            w = weights.copy()
            w[taken] = 0.0
            w[hub] = 0.0
            if sides is not None:
                w[sides == sides[hub]] = 0.0
            if chosen:
                w[np.concatenate(chosen)] = 0.0
            pool = np.flatnonzero(w > 0)
            k = min(count - sum(c.size for c in chosen), pool.size)
            if k > 0:
                chosen.append(rng.choice(pool, size=k, replace=False, p=w[pool] / w[pool].sum()))
        if chosen:
            picked = np.concatenate(chosen).astype(np.int64)
            hub_ends.append(np.full(picked.size, hub, dtype=np.int64))
            partner_ends.append(picked)
    if not hub_ends:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(hub_ends), np.concatenate(partner_ends)


def group_clustering_sum(starts: np.ndarray, rho: np.ndarray) -> float:
    """Expected sum of local clustering the groups give their members, :math:`\\sum_g s_g \\rho_g^3` (a member of
    degree about ``s_g - 1`` closes a share :math:`\\rho_g^3` of its wedges inside its group)."""
    sizes = np.diff(starts).astype(np.float64)
    return float(np.sum(np.where(sizes >= 3, sizes, 0.0) * np.asarray(rho, dtype=np.float64) ** 3))


def power_shape(starts: np.ndarray, power: float) -> np.ndarray:
    r"""Relative group densities :math:`(s_g / \bar s)^{\beta}`; :math:`\bar s` the triangle-weighted mean size, as in
    :func:`group_densities`."""
    sizes = np.diff(starts).astype(np.float64)
    c3 = sizes * (sizes - 1) * (sizes - 2) / 6
    ref = float(np.average(sizes, weights=np.maximum(c3, 1e-12))) if c3.sum() > 0 else 1.0
    return (np.maximum(sizes, 1.0) / ref) ** float(power)


def power_for_clustering(starts: np.ndarray, max_edges: float, triangles: float, power: float, ratio: float,
                         top: float = 2.0) -> float:
    r"""The density power :math:`\beta \in [power, top]` (:func:`power_shape`) whose groups,
    holding the same expected ``triangles``, give their members ``ratio`` (< 1) times the clustering sum they give at
    ``power``.

    Raising :math:`\beta` moves triangles from small groups (low-degree nodes, which average clustering weighs
    most) to large ones: the lever for graphs whose BTER draw is more clustered than the released clustering sum
    says. Bisection on the expected sums (post-processing of released values).
    """
    def clustering_at(beta: float) -> float:
        return group_clustering_sum(starts, group_densities(starts, max_edges, triangles, 0.0,
                                                            power_shape(starts, beta)))

    base = clustering_at(float(power))
    if base <= 0 or ratio >= 1.0:
        return float(power)
    lo, hi = float(power), float(top)
    if clustering_at(hi) > ratio * base:
        return hi
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if clustering_at(mid) > ratio * base:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
