r"""The capped local-clustering sum: a DP statistic of where triangles sit, and wedge closure that places them.

Average clustering weighs a triangle by the degree of the node that closes it: a degree-2 node whose two neighbours
are adjacent has local clustering 1, a hub in the same triangle gains :math:`1/\binom{d}{2}`. A triangle count does
not say which, and BTER's affinity groups close triangles among nodes of similar degree, so on graphs whose
low-degree nodes close triangles with hubs (Slashdot: average clustering 0.060, global 0.024) the synthetic graph
meets the triangle count and misses the average clustering by 65%.

* :func:`capped_clustering_sum` — :math:`S_C = \sum_{\{u,w\} \in E} \min\big(C, \sum_{x \in N(u) \cap N(w)}
  1/\binom{d_x}{2}\big)`: the sum of all local clusterings (``n`` times the average clustering, zeros for degree
  < 2), each triangle's share at its apex ``x`` booked on the opposite edge ``{u, w}``, and each edge's total capped
  at ``C``. Without the cap one added edge between two hubs with many common degree-2 neighbours would move the sum by
  up to ``n``; with it, by at most :math:`C + 2` (proof in ``docs/privacy.md#local-clustering-sum``).
* :func:`release_clustering_sum` — Laplace mechanism on :math:`S_C`, one ledger entry;
  :func:`release_clustering_sum_topped_up` adds a second release where the first is too noisy for its size.
* :func:`close_wedges` — TriCycLe-style triadic closure (Jorgensen, Yu & Cormode, SIGMOD 2016): a uniformly random
  node of degree >= 2 picks two random neighbours and connects them; as many edges in no triangle are deleted, so the
  edge count is kept. A uniform apex is mostly a low-degree node, and its neighbours are mostly hubs (the friendship
  paradox), so the new triangles give low-degree nodes clustering with hubs — what BTER's groups do not. The same
  paradox moves edges to the hubs, so :func:`raise_clustering` closes at most :data:`MAX_CLOSURES_PER_EDGE` per edge
  of the draw. With ``preserve_degrees`` a closure is a double edge swap instead (:func:`closing_swaps`): every
  degree is kept, for graphs whose degrees the sampler realises exactly.

Everything but the two releases reads a synthetic graph only (post-processing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphrelease.generators.affinity import csr_from_keys
from graphrelease.generators.classical_common import (
    average_releases,
    charge_laplace,
    degree_oriented,
    in_sorted,
    keys_to_edges,
    pair_keys,
)
from graphrelease.graph import sorted_unique

PROOF = "docs/privacy.md#local-clustering-sum"
#: Per-edge cap of the apex sums where :func:`clustering_cap` finds the release too noisy for more (and ``dp_bter``'s
#: cap before session 13). Measured on seven graphs (scratch):
#: C = 1 keeps 0.80 (Slashdot) to 0.99 (Facebook) of the uncapped sum (Cora 0.93, Chameleon 0.83), C = 2 keeps
#: 0.85-1.00 for 33% more noise.
CLUSTERING_CAP = 1.0
#: Caps :func:`clustering_cap` (``dp_bter``'s default ``clustering_cap="auto"``) chooses from. What a cap cuts off is a
#: bias, not noise: the sampler matches its draw's capped sum to the released one, and its draws rarely have an edge
#: whose apex sum exceeds 1, so where the input does, the release's average clustering stays short at every epsilon
#: (Slashdot 20% at epsilon 1 and 4, 1,000-node BFS balls of Cora 13-14% at 4). Kept share of the uncapped sum at
#: C = 1 / 2 / 3 / 5 (``benchmarks/bench_clustering_cap.py``): Slashdot 0.80 / 0.85 / 0.87 / 0.89, Chameleon
#: 0.83 / 0.88 / 0.90 / 0.93, Cora 0.93 / 0.98 / 0.99 / 1.00, 1,000-node BFS balls of Cora 0.84-0.85 / 0.94-0.95 /
#: 0.97 / 0.99-1.00 and of Chameleon 0.61 / 0.70 / 0.74 / 0.80; 0.96-1.00 at C = 1 on Facebook, LastFM, Squirrel,
#: Tolokers and the e-mail, collaboration and connectome proxies. Measured against C = 1:
#: ``reports/clustering_cap.md`` (structure log items 15 and 17 in reports/structure_fidelity.md).
CLUSTERING_CAPS = (1.0, 2.0, 3.0, 5.0)
#: Largest Laplace scale of the released sum, in units of the average clustering (``(C + 2) / (epsilon * n)``), at
#: which :func:`clustering_cap` still raises the cap: small graphs at small epsilon, where the added noise cost more
#: than the cut-off gave back (Cora at epsilon 1 with C = 3: average clustering RE 0.081 -> 0.114), keep C = 1.
CAP_NOISE_BOUND = 0.02
#: Most wedge closures one draw gets, per edge of the draw (each closure deletes an edge, so 1 rewires as many edges
#: as the draw has). A closure's two new endpoints are neighbours of a random apex, so mostly hubs: past about half the
#: edges the draw's degrees drift to the hubs. Measured on 1,000-node e-mail proxies at epsilon 1 (released clustering
#: sum noise about 27% of the sum), where three fits in six closed 1-2 per edge chasing a sum the noise had raised:
#: wedge count 1.42-1.94x the input's, degree KL 0.39-0.55, Louvain modularity RE 0.47-0.54; capped at 0.5, the same
#: fits and draws gave 1.04-1.17x, 0.21-0.37 and 0.29-0.34, and transitivity RE 0.28-0.40 -> 0.06-0.22 (the other
#: fits never reach the cap: identical graphs). The named graphs close at most 0.15 per edge, except Tolokers (mean
#: degree 88: a closure adds about 1/C(d, 2) to the sum), whose draws close up to 2 per edge; capped, its releases
#: moved within the spread (3 paired fits at epsilon 1 and 4: transitivity and average clustering RE within 0.005,
#: degree KL +0.01-0.03). Structure log item 12 in reports/structure_fidelity.md. A sum left short is the sampler's
#: to handle (its flattening step). The cost, measured there: 1,000-node pieces of Cora at epsilon 1 need more
#: closures than this for their (equally noisy) sum, and their average clustering RE goes 0.28 -> 0.36-0.42.
MAX_CLOSURES_PER_EDGE = 0.5
#: Relative noise scale whose epsilon a spare share tops the sum's first release up to
#: (:func:`release_clustering_sum_topped_up`). On a
#: graph of a few hundred or a thousand nodes the sum is a few hundred, and at epsilon 1 its share (0.05, scale 60)
#: left it 25-50% off, which the closures then chased (see MAX_CLOSURES_PER_EDGE). ``dp_bter`` takes the spare from
#: the triangle count when its sweeps do not run. Measured on 10 graphs of 300-2,995 nodes at epsilon 1 (24 paired
#: seeded fits each): 0.1 lowered the average clustering's RE by 0.06-0.08 on four (e-mail, connectome and Cora
#: proxies) and moved nothing else beyond the spread; 0.05 cost one e-mail proxy transitivity (+0.05) and modularity
#: (+0.04). Structure log item 14 in reports/structure_fidelity.md.
TOPPED_UP_RELATIVE_SCALE = 0.1
#: :func:`rewire_toward`'s effort: batches (a triangle listing each), candidate swaps per batch as a share of the
#: edges, partner draws per candidate. Measured (structure log item 19, 6 seeded fits per cell): on 1,000-node pieces
#: of Chameleon, 4 / 0.1 took transitivity RE 0.71-0.86 -> 0.41-0.47 and triangles 0.47-0.57 -> 0.18-0.25 at an
#: average clustering cost of 0.03-0.06; 8 / 0.25 reached 0.17-0.31 and 0.05-0.19 but cost 0.09-0.19 (the released
#: sum's cap of 1 keeps 0.61 of these pieces' sum: matched more closely, it is the bias). Squirrel's average
#: clustering RE 0.67-0.70 -> 0.02-0.04 with either (fit + sample 23-27 CPU-s). When it runs is dp_bter's
#: REWIRE_TOLERANCE.
REWIRE_BATCHES = 4
REWIRE_POOL = 0.1
REWIRE_ATTEMPTS = 3


def clustering_sensitivity(cap: float) -> float:
    """L1 sensitivity of :math:`S_C` under edge adjacency: ``C + 2`` (attained at ``C = 1``). The sum rises by at
    most ``C`` on the new edge plus ``2/(d+1) <= 1`` at each endpoint (its new triangles' shares), and falls by at
    most ``2/(d+1) <= 2/3`` at each endpoint (its old triangles' weights); a capped term never moves against its
    total, so rises and falls never add."""
    return float(cap) + 2.0


def clustering_cap(epsilon: float, num_nodes: int) -> float:
    """The per-edge cap :math:`C` of the sum released at ``epsilon`` on ``num_nodes`` nodes: the largest of
    :data:`CLUSTERING_CAPS` whose Laplace scale :math:`(C + 2)/\\varepsilon`, divided by ``num_nodes`` (so in units of
    the average clustering), is at most :data:`CAP_NOISE_BOUND`; :data:`CLUSTERING_CAP` below that. It reads only the
    public node count and the share's epsilon (a function of released values), so the cap is public and the
    sensitivity :math:`C + 2` that the ledger states follows from it (``docs/privacy.md#local-clustering-sum``). A
    larger epsilon never lowers the cap."""
    largest_sensitivity = float(epsilon) * max(int(num_nodes), 0) * CAP_NOISE_BOUND
    fitting = [c for c in CLUSTERING_CAPS if clustering_sensitivity(c) <= largest_sensitivity]
    return float(max(fitting)) if fitting else CLUSTERING_CAP


#: Bytes of the per-row marker that :func:`_two_path_hits` reuses across its chunks of rows (102 rows of Slashdot's
#: 82,168 nodes at a time). One listing of Slashdot, median of 5, four times: 4 / 8 / 16 / 64 MiB 0.25-0.37 /
#: 0.25-0.35 / 0.31-0.40 / 0.30-0.42 CPU-s, binary search 0.59-1.13; on LastFM 64 MiB was slower than 4-8 and than the
#: search (page faults; structure log item 35).
MARKER_BYTES = 1 << 23
#: Fewer rows per marker chunk than this (graphs of more than 524,288 nodes) and :func:`_two_path_hits` falls back to
#: the binary search: 16 rows per chunk still ran at 0.26-0.44 CPU-s on Slashdot, but the chunks' Python loop grows
#: with the node count and was not measured on larger graphs.
MIN_MARKER_ROWS = 16
#: Most 2-paths in one chunk of :func:`_two_path_hits` (each of its arrays then holds at most 16 MiB), unless one
#: row has more.
PATH_CHUNK = 1 << 21


def _two_path_hits(n: int, indptr: np.ndarray, idx: np.ndarray, a: np.ndarray, keys: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closed oriented 2-paths ``a -> b -> c`` (``a -> c`` an edge too) of the degree-oriented CSR
    ``(indptr, idx)`` with edge rows ``a`` and sorted keys ``keys``, in the order of their first edge and then of
    ``c``: that edge's position, the position of ``b -> c``, and ``c``.

    Written by hand for speed: a binary search of every 2-path in all ``m`` keys was more than a third of a Slashdot
    sample's CPU time (13.6M searches in a listing of the input graph, 12-13 listings per sample). The 2-paths are
    enumerated a chunk of rows at a time, and each is looked up in a boolean marker of its own row's ``n`` bytes,
    which stays in cache; the chunk's 2-path arrays never exist for the whole graph at once. The same answers, 2-3x
    faster on Slashdot (``reports/triangle_listing.md``)."""
    fan = np.diff(indptr)[idx]
    nrows = indptr.size - 1
    per = MARKER_BYTES // max(int(n), 1)
    marked = per >= max(MIN_MARKER_ROWS, 1)
    if not marked:
        per = max(nrows, 1)  # chunks of 2-paths only, searched in the keys
    marker = np.zeros(min(per, nrows) * n, dtype=bool) if marked else None
    # A chunk also ends where its 2-paths reach PATH_CHUNK, so that its arrays stay small on dense graphs.
    row_paths = np.concatenate([[0], np.cumsum(fan)])[indptr]
    out_edge, out_bc, out_c = [], [], []
    r0 = 0
    while r0 < nrows:
        fits = int(np.searchsorted(row_paths, row_paths[r0] + PATH_CHUNK, side="right")) - 1
        r1 = min(r0 + per, nrows, max(r0 + 1, fits))
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        f = fan[e0:e1]
        total = int(f.sum())
        if total == 0:
            r0 = r1
            continue
        # 2-path j of edge e runs over b's out-edges: position indptr[b] + j.
        ends = np.cumsum(f)
        pos = np.arange(total, dtype=np.int64) + np.repeat(indptr[idx[e0:e1]] - (ends - f), f)
        ec = idx[pos]
        local = a[e0:e1] - r0  # each edge's row within the chunk
        rows = np.repeat(local, f)
        if marked:
            cells = local * n + idx[e0:e1]
            marker[cells] = True
            hit = np.flatnonzero(marker[rows * n + ec])
            marker[cells] = False
        else:
            hit = np.flatnonzero(in_sorted((rows + r0) * n + ec, keys))
        out_edge.append(e0 + np.searchsorted(ends, hit, side="right"))
        out_bc.append(pos[hit])
        out_c.append(ec[hit])
        r0 = r1
    if not out_edge:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    return np.concatenate(out_edge), np.concatenate(out_bc), np.concatenate(out_c)


def _triangle_edges(n: int, edges: np.ndarray, positions: bool = True) -> tuple[np.ndarray, ...]:
    """:func:`list_triangles` plus, with ``positions``, per triangle the positions in the sorted oriented keys of its
    edges ``a -> b``, ``b -> c`` and ``a -> c``."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    d = np.bincount(edges.ravel(), minlength=n)
    low = degree_oriented(n, edges, d).tocsr()
    low.sort_indices()
    indptr, idx = low.indptr.astype(np.int64), low.indices.astype(np.int64)
    a = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keys = a * n + idx  # row-major with sorted columns: already sorted
    edge, bc, tc = _two_path_hits(n, indptr, idx, a, keys)
    ta, tb = a[edge], idx[edge]
    if not positions:
        return ta, tb, tc, d, keys
    return ta, tb, tc, d, keys, edge, bc, np.searchsorted(keys, ta * n + tc)


def list_triangles(n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every triangle once, as ``(a, b, c)`` with ``a -> b -> c`` and ``a -> c`` in the degree orientation, plus the
    degrees and the sorted oriented keys ``a * n + c`` of the edges. Work is the number of oriented 2-paths (at most
    :math:`O(m^{1.5})`); memory is linear in the edges, the triangles and one chunk's 2-paths (:data:`PATH_CHUNK`)."""
    return _triangle_edges(n, edges, positions=False)


def edge_apex_sums(n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    r"""Per edge (sorted oriented keys): :math:`\sum_x 1/\binom{d_x}{2}` over the apexes ``x`` of its triangles, the
    keys, and the triangle count. An edge is in a triangle iff its sum is positive (an apex has degree >= 2)."""
    a, b, c, d, keys, ab, bc, ac = _triangle_edges(n, edges)
    w = np.where(d >= 2, 2.0 / np.maximum(d * (d - 1), 1), 0.0)
    s = np.zeros(keys.size)
    for at, apex in ((ac, b), (ab, c), (bc, a)):
        np.add.at(s, at, w[apex])
    return s, keys, int(a.size)


def capped_clustering_sum(n: int, edges: np.ndarray, cap: float = CLUSTERING_CAP) -> float:
    """:math:`S_C` (module docstring); with ``cap = inf`` it is ``n`` times the average clustering."""
    if np.asarray(edges).size < 6:
        return 0.0
    s, _, _ = edge_apex_sums(n, edges)
    return float(np.minimum(s, float(cap)).sum())


def release_clustering_sum(graph: Any, budget: Any, rng: np.random.Generator, *, epsilon: float, stage: str,
                           cap: float = CLUSTERING_CAP) -> float:
    """Laplace release of :math:`S_C` (sensitivity :func:`clustering_sensitivity`), clipped to ``[0, n]``
    (post-processing)."""
    value, _, _ = release_clustering_sum_topped_up(graph, budget, rng, epsilon=epsilon, spare=0.0, stage=stage,
                                                   cap=cap)
    return value


def release_clustering_sum_topped_up(graph: Any, budget: Any, rng: np.random.Generator, *, epsilon: float,
                                     spare: float, stage: str, cap: float = CLUSTERING_CAP
                                     ) -> tuple[float, float, float]:
    """:func:`release_clustering_sum`, then, when the first release's noise scale is more than
    :data:`TOPPED_UP_RELATIVE_SCALE` of its value (clipped to ``[1, n]``), a second Laplace release of the same sum
    (stage ``<stage>.clustering_sum_second``) whose epsilon tops the first one up to the epsilon a single release at
    that scale would need (``epsilon_1 + epsilon_2 = (C + 2) / (share * value)``), at most ``spare``. The two are
    averaged with inverse-variance weights (``epsilon_i^2``), then clipped to ``[0, n]`` (post-processing); the
    average's scale, ``(C + 2) / sqrt(epsilon_1^2 + epsilon_2^2)``, lies between that target and the first
    release's. The second epsilon is a function of the first release only: adaptive composition, so the caller
    charges both inside ``Budget.shares_chosen_from_releases()`` and takes ``spare`` from a stage charged later
    (every branch then spends the same total).

    Returns the value, the second release's epsilon (0 when there is none) and the average's Laplace-equivalent scale.
    That scale is nominal: a first release the noise raised asks for less, so the average is biased upwards and its
    error somewhat larger (600 Cora nodes, sum 168, first share 0.05, spare 0.15, 2,000 seeds: bias +11, mean
    absolute error 31 against a mean nominal scale of 25)."""
    n = graph.num_nodes
    sensitivity = clustering_sensitivity(cap)
    value = capped_clustering_sum(n, graph.edges, cap)
    note = f"sum of local clustering, each edge's apex sum capped at {cap:g}: L1 sensitivity cap + 2"
    # The cap is stated so `certificate verify` can recompute the sensitivity (cap + 2) from it.
    first = float(charge_laplace(budget, rng, value, epsilon=epsilon, sensitivity=sensitivity,
                                 stage=f"{stage}.clustering_sum", proof=PROOF, note=note, cap=cap))
    size = float(np.clip(first, 1.0, max(n, 1)))
    second_epsilon = float(np.clip(sensitivity / (TOPPED_UP_RELATIVE_SCALE * size) - epsilon, 0.0, spare))
    if second_epsilon <= 0.0:
        return float(np.clip(first, 0.0, n)), 0.0, sensitivity / epsilon
    second = float(charge_laplace(budget, rng, value, epsilon=second_epsilon, sensitivity=sensitivity,
                                  stage=f"{stage}.clustering_sum_second", proof=PROOF,
                                  note=note + "; second release, its epsilon chosen from the first", cap=cap))
    combined, combined_epsilon = average_releases(first, epsilon, second, second_epsilon)
    return float(np.clip(combined, 0.0, n)), second_epsilon, sensitivity / combined_epsilon


def measure_clustering(n: int, keys: np.ndarray, cap: float = CLUSTERING_CAP) -> tuple[float, float, np.ndarray]:
    """One triangle listing of the sorted pair ``keys``: the triangle count, :math:`S_C`, and the sorted pair keys of
    the edges that lie in a triangle."""
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size < 3:
        return 0.0, 0.0, np.zeros(0, dtype=np.int64)
    s, okeys, triangles = edge_apex_sums(n, keys_to_edges(keys, n))
    in_tri = np.sort(pair_keys(keys_to_edges(okeys[s > 0], n), n))
    return float(triangles), float(np.minimum(s, float(cap)).sum()), in_tri


def close_wedges(n: int, keys: np.ndarray, count: int, degrees: np.ndarray, rng: np.random.Generator,
                 in_triangle: np.ndarray, labels: np.ndarray | None = None, preserve_degrees: bool = False
                 ) -> np.ndarray:
    """``count`` wedge closures (module docstring) on the sorted pair ``keys``; returns sorted keys, edge count kept.

    Deleted edges are in no triangle (``in_triangle``: sorted keys of those that are, from
    :func:`measure_clustering`) and join two nodes of degree >= 2 (no node is cut off); those whose endpoints both hold
    more than their released ``degrees`` go first (the closures raised them), then the rest, at random. With
    ``labels`` (released blocks) only wedges whose two ends share a block are closed: a closure across blocks would
    add an edge the block-pair counts did not release and blur the communities. With ``preserve_degrees`` the
    closures are :func:`closing_swaps` (every degree kept, ``degrees`` unused; fewer may succeed).
    """
    keys = np.asarray(keys, dtype=np.int64)
    e = keys_to_edges(keys, n)
    deg = np.bincount(e.ravel(), minlength=n)
    apexes = np.nonzero(deg >= 2)[0]
    if count <= 0 or apexes.size == 0:
        return keys
    # Adjacency lists from the keys (both directions), grouped by node.
    src = np.concatenate([e[:, 0], e[:, 1]])
    nbr = np.concatenate([e[:, 1], e[:, 0]])[np.argsort(src, kind="stable")]
    start = np.concatenate([[0], np.cumsum(deg)])[:-1]
    draws = int(count) if labels is None else 2 * int(count)  # about half the wedges of a few blocks match
    v = apexes[rng.integers(apexes.size, size=draws)]
    i = rng.integers(deg[v])
    j = rng.integers(deg[v] - 1)
    j = j + (j >= i)
    u, w = nbr[start[v] + i], nbr[start[v] + j]
    if labels is not None:
        same = labels[u] == labels[w]
        u, v, w = u[same][:int(count)], v[same][:int(count)], w[same][:int(count)]
    if preserve_degrees:
        return closing_swaps(n, keys, u, v, w, in_triangle, rng)
    added = sorted_unique(pair_keys(np.stack([u, w], axis=1), n))
    added = added[~in_sorted(added, keys)]
    if added.size == 0:
        return keys
    gained = np.bincount(keys_to_edges(added, n).ravel(), minlength=n)
    over = (deg + gained) > np.asarray(degrees, dtype=np.float64)
    free = ~in_sorted(keys, in_triangle) & (deg[e[:, 0]] >= 2) & (deg[e[:, 1]] >= 2)
    first = np.nonzero(free & over[e[:, 0]] & over[e[:, 1]])[0]
    rest = np.nonzero(free & ~(over[e[:, 0]] & over[e[:, 1]]))[0]
    take = rng.permutation(first)[:added.size]
    if take.size < added.size:
        take = np.concatenate([take, rng.permutation(rest)[:added.size - take.size]])
    added = rng.permutation(added)[:take.size]  # never add more than can be paid for
    keep = np.ones(keys.size, dtype=bool)
    keep[take] = False
    return sorted_unique(np.concatenate([keys[keep], added]))


def closing_swaps(n: int, keys: np.ndarray, u: np.ndarray, apex: np.ndarray, w: np.ndarray,
                  in_triangle: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Degree-preserving wedge closures on the sorted pair ``keys``: the wedge ``u - apex - w`` is closed by the
    double edge swap ``u-x, w-y -> u-w, x-y``, with ``u-x`` and ``w-y`` random edges in no triangle (``in_triangle``)
    other than the wedge edges of the batch. Every degree and the edge count are kept; the closure gains its wedge's
    triangles (and any ``x-y`` closes) and loses none. Wedges whose ends have no such edge (a degree-1 end), whose
    swap would repeat an edge, or that need an edge or pair an earlier swap of the batch took (random order) are
    skipped. With released blocks, ``x-y`` may join two blocks (as the edge :func:`close_wedges` deletes may).
    Returns sorted keys.

    Why: :func:`close_wedges` pays for a closure with an edge anywhere, so each closure raises two degrees and lowers
    two others; on a 40 x 40 grid or a small-world ring lattice, whose degrees the sampler realises exactly, that
    spread alone put the degree KL at 0.3-1.4 (``reports/regular_degrees.md``).
    """
    keys = np.asarray(keys, dtype=np.int64)
    e = keys_to_edges(keys, n)
    free = np.nonzero(~in_sorted(keys, in_triangle))[0]
    # Each free edge listed under both endpoints, grouped by node (random order inside a node: the pick below is
    # then a random free edge).
    end = np.concatenate([e[free, 0], e[free, 1]])
    other = np.concatenate([e[free, 1], e[free, 0]])
    edge_id = np.concatenate([free, free])
    order = np.lexsort((rng.random(end.size), end))
    other, edge_id = other[order], edge_id[order]
    count = np.bincount(end, minlength=n)
    start = np.concatenate([[0], np.cumsum(count)])[:-1]
    wanted = pair_keys(np.stack([u, w], axis=1), n)
    _, first = np.unique(wanted, return_index=True)
    first = rng.permutation(first[~in_sorted(wanted[first], keys)])
    u, apex, w, wanted = u[first], apex[first], w[first], wanted[first]
    able = (count[u] > 0) & (count[w] > 0)
    u, apex, w, wanted = u[able], apex[able], w[able], wanted[able]
    at_u = start[u] + rng.integers(np.maximum(count[u], 1))
    at_w = start[w] + rng.integers(np.maximum(count[w], 1))
    x, y, cut_u, cut_w = other[at_u], other[at_w], edge_id[at_u], edge_id[at_w]
    joined = pair_keys(np.stack([x, y], axis=1), n)
    ok = ((x != y) & (x != w) & (y != u) & (x != apex) & (y != apex) & (cut_u != cut_w)
          & ~in_sorted(joined, keys))
    # No swap may delete a wedge edge of another (its closure would then close nothing: on a grid about half the
    # batch's closures lost a wedge edge so).
    wedge_edges = np.concatenate([np.searchsorted(keys, pair_keys(np.stack([u, apex], axis=1), n)),
                                  np.searchsorted(keys, pair_keys(np.stack([w, apex], axis=1), n))])
    protected = wedge_edges[np.concatenate([ok, ok])]
    ok &= ~np.isin(cut_u, protected) & ~np.isin(cut_w, protected)
    wanted, joined, cut_u, cut_w = wanted[ok], joined[ok], cut_u[ok], cut_w[ok]
    kept = _first_claims([np.stack([cut_u, cut_w], axis=1), np.stack([wanted, joined], axis=1)])
    drop = np.zeros(keys.size, dtype=bool)
    drop[cut_u[kept]] = True
    drop[cut_w[kept]] = True
    return sorted_unique(np.concatenate([keys[~drop], wanted[kept], joined[kept]]))


def _first_claims(claims: list[np.ndarray], rounds: int = 16) -> np.ndarray:
    """Which rows (swaps, in priority order) the greedy pass keeps: a row is kept if none of its resources (each
    array in ``claims`` is one namespace, a row's entries its claims there, never repeated within a row) was taken
    by a kept row before it. Vectorised in rounds: every active row that is the lowest claimant of all its resources
    is kept, then rows claiming what was kept drop out; the lowest active row always wins, and the kept set is the
    sequential one (rows still active after ``rounds`` rounds are dropped)."""
    rows = claims[0].shape[0]
    active = np.ones(rows, dtype=bool)
    kept = np.zeros(rows, dtype=bool)
    for _ in range(rounds):
        if not active.any():
            break
        winner = active.copy()
        for table in claims:
            owner = np.repeat(np.arange(rows), table.shape[1])
            flat = table.ravel()
            live = active[owner]
            values, inverse = np.unique(flat[live], return_inverse=True)
            lowest = np.full(values.size, rows, dtype=np.int64)
            np.minimum.at(lowest, inverse, owner[live])
            lost = np.zeros(rows, dtype=bool)
            lost[owner[live][lowest[inverse] != owner[live]]] = True
            winner &= ~lost
        kept |= winner
        active &= ~winner
        for table in claims:
            taken = np.unique(table[winner].ravel())
            active &= ~np.isin(table, taken).any(axis=1)
    return kept


def raise_clustering(n: int, keys: np.ndarray, degrees: np.ndarray, target: float, rng: np.random.Generator, *,
                     gain: float = 0.0, batches: int = 3, tolerance: float = 0.03,
                     cap: float = CLUSTERING_CAP, labels: np.ndarray | None = None, measured: dict | None = None,
                     preserve_degrees: bool = False) -> tuple[np.ndarray, float, float, int]:
    r"""Wedge closures on ``keys`` until :math:`S_C` reaches ``target`` (a released value), at most ``batches``
    batches. Returns ``(keys, triangles, S_C, closures)``, measured on the returned graph.

    The first batch is the shortfall over ``gain`` (the sum's rise per closure that an earlier draw measured) or,
    without one, over the expected gain of a closure at a uniform apex (its own clustering rises by about
    :math:`1/\binom{d}{2}`); later batches divide the shortfall by the gain per closure measured so far; with
    ``gain`` given, one batch after it (every batch costs a triangle listing). All batches together close at most
    :data:`MAX_CLOSURES_PER_EDGE` times the edge count. ``measured``, when given, receives ``triangles_before`` (the
    count before any closure: the sampler asks whether the closures pushed it over the released one) and ``gain``
    (the sum's rise per closure here, 0 without closures). ``preserve_degrees`` closes by :func:`closing_swaps`.
    Post-processing.
    """
    keys = np.asarray(keys, dtype=np.int64)
    tri, s, in_tri = measure_clustering(n, keys, cap)
    if measured is not None:
        measured["triangles_before"] = tri
        measured["gain"] = 0.0
    done = 0
    s0 = s
    most = int(MAX_CLOSURES_PER_EDGE * keys.size)
    for _ in range(min(int(batches), 2) if gain > 0 else int(batches)):
        short = float(target) - s
        if short <= tolerance * float(target):
            break
        if done > 0 and s > s0:
            per = (s - s0) / done
        elif gain > 0:
            # The earlier draw's gain per closure scales with this draw's own shortfall; its closure count, carried
            # over as it was before, overshot when this draw started nearer the sum (Slashdot at epsilon 4: 17,786
            # closures that had taken one draw from 2,900 to 3,890 took the next to 5,924 for a released 3,928).
            per = float(gain)
        else:
            d = np.bincount(keys_to_edges(keys, n).ravel(), minlength=n).astype(np.float64)
            d = d[d >= 2]
            per = float(np.mean(2.0 / (d * (d - 1)))) if d.size else 0.0
        if per <= 0:
            break
        k = int(min(np.ceil(short / per), most))
        # The cap also keeps the request finite: a noisy target far above what the graph can hold, over a tiny gain,
        # would otherwise ask for billions (found by the black-box audit's 50-node ball at a small epsilon).
        k = min(k, most - done)
        if k <= 0:
            break
        keys = close_wedges(n, keys, k, degrees, rng, in_tri, labels, preserve_degrees)
        done += k
        tri, s, in_tri = measure_clustering(n, keys, cap)
    if measured is not None and done > 0:
        measured["gain"] = max(s - s0, 0.0) / done
    return keys, tri, s, done


def rewire_toward(n: int, keys: np.ndarray, triangles: float, clustering: float, rng: np.random.Generator, *,
                  cap: float = CLUSTERING_CAP, slack_triangles: float = 0.0, slack_clustering: float = np.inf,
                  labels: np.ndarray | None = None, batches: int = REWIRE_BATCHES, pool: float = REWIRE_POOL,
                  attempts: int = REWIRE_ATTEMPTS) -> tuple[np.ndarray, float, float, int]:
    r"""Degree-preserving swaps :math:`\{a, b\}, \{c, d\} \to \{a, d\}, \{c, b\}` that move the triangle count
    :math:`T` and the capped clustering sum :math:`S_C` towards ``triangles`` and ``clustering`` (released values).
    A deviation within its ``slack_*`` counts as met (``slack_clustering=inf``: the sum is not a target). Returns
    ``(keys, T, S_C, swaps)``, measured on the returned graph. Post-processing.

    Every node keeps its degree; with ``labels`` both edges of a swap are of one block pair, oriented so that ``a``
    and ``c`` share a block, so every block-pair count is kept too. Each batch draws ``pool`` x edges random edges,
    each with a random partner of its block pair (``attempts`` draws), and predicts each swap's changes from common
    neighbours on the graph before the batch: an edge in ``t`` triangles with apexes ``x`` carries
    :math:`t (w_a + w_b) + \sum_x w_x` of the (uncapped) sum, :math:`w = 1/\binom{d}{2}`, whether it goes or comes.
    Swaps that lower :math:`f = (T/T^* - 1)^2 + (S/S^* - 1)^2` to first order are made best first, up to the prefix
    whose predicted changes minimise :math:`f`, each edge and new pair once per batch; then the graph is measured
    again (one triangle listing per batch).

    The lever the affinity groups lack: where the block edges of a dense core of hubs close more triangles than the
    released count (1,000-node pieces of Chameleon: 36k-40k at zero group density against 25k), or give the
    low-degree nodes around them more clustering than the released sum (Squirrel: 67% over at every group density),
    the groups have nothing left to give back. Swaps between the core's edges and the periphery's do."""
    keys = np.asarray(keys, dtype=np.int64)
    lab = np.zeros(n, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
    k = int(lab.max(initial=0)) + 1
    t_star, s_star = max(float(triangles), 1.0), max(float(clustering), 1e-9)
    weigh_sum = 1.0 if np.isfinite(slack_clustering) else 0.0
    tri, s = measure_clustering(n, keys, cap)[:2]
    done = 0
    if keys.size < 2:  # a swap needs two edges
        return keys, float(tri), float(s), 0
    for _ in range(int(batches)):
        gap_t = tri - t_star if abs(tri - t_star) > slack_triangles else 0.0
        gap_s = s - s_star if weigh_sum and abs(s - s_star) > slack_clustering else 0.0
        if gap_t == 0.0 and gap_s == 0.0:
            break
        e = keys_to_edges(keys, n)
        deg = np.bincount(e.ravel(), minlength=n).astype(np.float64)
        w = np.where(deg >= 2, 2.0 / np.maximum(deg * (deg - 1.0), 1.0), 0.0)
        adj = csr_from_keys(n, keys)

        def carried(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            both = adj[u].multiply(adj[v])
            common = np.asarray(both.sum(axis=1)).ravel()
            return common, common * (w[u] + w[v]) + np.asarray(both @ w).ravel()

        size = max(int(pool * keys.size), 1)
        rows = rng.integers(keys.size, size=size)
        a, b = e[rows, 0], e[rows, 1]
        flip = (lab[a] > lab[b]) | ((lab[a] == lab[b]) & (rng.random(size) < 0.5))
        a, b = np.where(flip, b, a), np.where(flip, a, b)
        # Partners from the same block-pair cell, lower block first.
        lower_first = np.where((lab[e[:, 0]] > lab[e[:, 1]])[:, None], e[:, ::-1], e)
        cell_of = lab[lower_first[:, 0]] * k + lab[lower_first[:, 1]]
        by_cell = np.argsort(cell_of, kind="stable")
        sorted_cells = cell_of[by_cell]
        cell = lab[a] * k + lab[b]
        lo = np.searchsorted(sorted_cells, cell, side="left")
        width = np.searchsorted(sorted_cells, cell, side="right") - lo
        found = []
        for _ in range(int(attempts)):
            j = by_cell[np.minimum(lo + (rng.random(size) * np.maximum(width, 1)).astype(np.int64), keys.size - 1)]
            c, d = lower_first[j, 0], lower_first[j, 1]
            turn = (lab[c] == lab[d]) & (rng.random(size) < 0.5)  # inside one block either end may go with a
            c, d = np.where(turn, d, c), np.where(turn, c, d)
            new1 = pair_keys(np.stack([a, d], axis=1), n)
            new2 = pair_keys(np.stack([c, b], axis=1), n)
            ok = ((width > 0) & (rows != j) & (a != d) & (c != b) & (a != c) & (b != d) & (new1 != new2)
                  & ~in_sorted(new1, keys) & ~in_sorted(new2, keys))
            r = np.flatnonzero(ok)
            if r.size == 0:
                continue
            ar, br, cr, dr = a[r], b[r], c[r], d[r]
            t_ab, s_ab = carried(ar, br)
            t_cd, s_cd = carried(cr, dr)
            t_ad, s_ad = carried(ar, dr)
            t_cb, s_cb = carried(cr, br)
            d_t, d_s = t_ad + t_cb - t_ab - t_cd, s_ad + s_cb - s_ab - s_cd
            # Counted on the graph before the swap, {a, d} and {c, b} each take c (a) or b (d) as a common
            # neighbour when a ~ c (b ~ d), through the edges the swap deletes: two triangles that will not exist,
            # and their weights (exact for T and the uncapped sum; without it 20% of the predicted changes had the
            # wrong sign on a dense random graph, review of item 19).
            ac = in_sorted(pair_keys(np.stack([ar, cr], axis=1), n), keys)
            bd = in_sorted(pair_keys(np.stack([br, dr], axis=1), n), keys)
            d_t = d_t - 2.0 * (ac + bd)
            d_s = d_s - (ac * (2.0 * w[ar] + 2.0 * w[cr] + w[br] + w[dr])
                         + bd * (w[ar] + w[cr] + 2.0 * w[br] + 2.0 * w[dr]))
            gain = -(gap_t / t_star ** 2 * d_t + weigh_sum * gap_s / s_star ** 2 * d_s)
            found.append((d_t, d_s, gain, new1[r], new2[r], rows[r], j[r]))
        if not found:
            break
        d_t, d_s, gain, new1, new2, old1, old2 = (np.concatenate(x) for x in zip(*found))
        best = np.flatnonzero(gain > 0)
        best = best[np.argsort(-gain[best], kind="stable")]
        d_t, d_s, new1, new2, old1, old2 = (x[best] for x in (d_t, d_s, new1, new2, old1, old2))
        ok = _first_each(old1, old2) & _first_each(new1, new2)

        def f(t: float | np.ndarray, c: float | np.ndarray) -> float | np.ndarray:
            return (t / t_star - 1.0) ** 2 + weigh_sum * (c / s_star - 1.0) ** 2

        # Best first, up to the prefix whose predicted changes minimise f, and none if no prefix beats the graph as
        # it is (the next batch measures again).
        f_now = f(tri, s)
        predicted = f(tri + np.cumsum(np.where(ok, d_t, 0.0)), s + np.cumsum(np.where(ok, d_s, 0.0)))
        if predicted.size == 0 or predicted.min() >= f_now:
            break
        ok[int(np.argmin(predicted)) + 1:] = False
        gone = np.sort(np.concatenate([keys[old1[ok]], keys[old2[ok]]]))
        swapped = sorted_unique(np.concatenate([keys[~in_sorted(keys, gone)], new1[ok], new2[ok]]))
        tri_new, s_new = measure_clustering(n, swapped, cap)[:2]
        # Swaps of one batch can share nodes, so the prediction can miss: a batch that measures worse is undone.
        if f(tri_new, s_new) >= f_now:
            break
        keys, tri, s = swapped, tri_new, s_new
        done += int(ok.sum())
    return keys, float(tri), float(s), done


def _first_each(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per swap (``first[i]``, ``second[i]``: its two edges or its two new pairs, swaps in order of preference):
    true where neither value was taken by an earlier swap or by the swap's own other value -- after that, a swap
    would reuse an edge or make a pair twice. The halves are interleaved so that a better swap keeps its values."""
    values = np.stack([first, second], axis=1).ravel()
    _, where = np.unique(values, return_index=True)
    flags = np.zeros(values.size, dtype=bool)
    flags[where] = True
    return flags.reshape(-1, 2).all(axis=1)
