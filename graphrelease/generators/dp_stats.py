r"""DP structural statistics of one graph under edge adjacency: degrees, triangles, wedges, components (issue 15).

"Measure, then generate" (ARCHITECTURE.md): every private statistic a structure-aware generator needs is computed,
noised and charged here, with its sensitivity stated and probed (``tests/generators/test_dp_stats.py``); generating
from the released values is post-processing. Proofs: ``docs/privacy.md#dp-structural-statistics``.

Mechanisms (all pure :math:`\varepsilon`-DP Laplace, Dwork, McSherry, Nissim & Smith 2006, Prop. 1; edge adjacency:
neighbouring graphs differ in one undirected edge, the node set is public):

* :func:`release_degrees` — the sorted degree sequence (Hay, Li, Miklau & Jensen 2009, L1 sensitivity 2) for the
  degree *values*, and the per-node degree vector (L1 sensitivity 2) only to *rank* the nodes: the sorted values are
  handed out in the order of the noisy per-node degrees, so node identity survives while the distribution keeps
  Hay et al.'s accuracy.
* :func:`capped_triangle_count` / :func:`release_triangles` — the smoothly capped triangle count

  .. math:: T_D(G) = \sum_{t \in \triangle(G)} \min\bigl(1, D / \max_{x \in t} d_x\bigr),

  whose edge sensitivity is below :math:`2D` for every real :math:`D > 0` (proof in :func:`capped_triangle_count`).
  A hard truncation (drop the edges of nodes above :math:`D`, or keep the first :math:`D` edges of every node in some
  edge order) is *not* stable: one edge can push a node over the cap and remove all its :math:`\binom{D}{2}`
  triangles, or shift which edges survive everywhere down the order. The smooth weight changes by at most
  :math:`D/(M(M+1))` per triangle when its largest degree :math:`M` moves by one, which is what keeps the sum bounded.
  ``D`` is chosen by post-processing: a first small release at a low cap fixes the scale, then ``D`` minimises a
  modelled bias^2 + noise variance (two-stage, sequential composition). ``weight="median"`` reads the triangle's
  median degree instead of its largest, with the same bound (structure log item 41); ``dp_bter``'s default since
  session 32 except under its per-degree profile (log item 42).
* :func:`release_component_count` — the number of connected components (L1 sensitivity 1: one edge joins at most
  two components or splits one into at most two).

Wedges :math:`W = \sum_v \binom{d_v}{2}` come from the released degrees (post-processing in
:mod:`~graphrelease.generators.degree_postprocess`, no extra charge), so the
global clustering coefficient :math:`3T/W` is a function of released values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import OptionError
from graphrelease.generators.classical_common import charge_laplace, degree_oriented, isotonic_increasing
from graphrelease.generators.degree_postprocess import (
    debias_wedges,
    dither_plateaus,
    dither_scale,
    interpolate_plateaus,
    splice_low_degrees,
)
from graphrelease.graph import Graph

PROOF = "docs/privacy.md#dp-structural-statistics"

#: Sensitivity of the per-node and of the sorted degree vector (one edge raises two degrees by one).
DEGREE_SENSITIVITY = 2.0
#: Sensitivity of the number of connected components.
COMPONENT_SENSITIVITY = 1.0


def capped_triangle_sensitivity(cap: float) -> float:
    """Declared L1 edge sensitivity of :func:`capped_triangle_count` at cap ``D``: ``2 D``."""
    return 2.0 * float(cap)


# ----------------------------------------------------------------------------------------------- pre-noise queries
def _oriented(graph: Graph) -> sp.csr_matrix:
    """Edges oriented from lower to higher (degree, id) rank: the top vertex of a triangle has its largest degree."""
    n = graph.num_nodes
    d = graph.degrees()
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), d))] = np.arange(n)
    e = graph.edges
    flip = rank[e[:, 0]] > rank[e[:, 1]]
    lo = np.where(flip, e[:, 1], e[:, 0])
    hi = np.where(flip, e[:, 0], e[:, 1])
    return sp.csr_matrix((np.ones(lo.size, dtype=np.float64), (lo, hi)), shape=(n, n))


def triangle_incidences(n: int, edges: np.ndarray, cap: float) -> tuple[np.ndarray, float]:
    r"""Per node ``a``: :math:`\sum_{t \ni a} \min(1, D/M_t)` (the capped weights of its triangles), and the
    uncapped triangle count. ``edges`` is an ``(m, 2)`` array of distinct undirected pairs.

    With ``L`` oriented low -> high (degree, id) rank, every triangle is ``a -> b -> c`` plus ``a -> c`` with ``c`` its
    top vertex (largest degree, so :math:`M_t = d_c`). ``P = (L L) * L`` counts the middles per (lowest, top) pair and
    ``Q = (L^T L) * L`` the lowests per (middle, top) pair; weighting column ``c`` by :math:`\min(1, D/d_c)` gives
    the lowest vertices' share (rows of ``P``), the middles' (rows of ``Q``) and the tops' (columns of ``P``).
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edges.shape[0] < 3:
        return np.zeros(n), 0.0
    d = np.bincount(edges.ravel(), minlength=n).astype(np.float64)
    low = degree_oriented(n, edges, d)
    w = np.minimum(1.0, float(cap) / np.maximum(d, 1.0))
    p = (low @ low).multiply(low).tocsr()
    q = (low.T @ low).multiply(low).tocsr()
    tops = np.asarray(p.sum(axis=0), dtype=np.float64).ravel()
    per_node = p @ w + q @ w + w * tops
    return np.asarray(per_node, dtype=np.float64).ravel(), float(tops.sum())


def profile_classes(degrees: np.ndarray) -> np.ndarray:
    """Log2 class of a degree: ``[2, 4) -> 0``, ``[4, 8) -> 1``, ...; ``-1`` below 2 (no wedge)."""
    d = np.asarray(degrees, dtype=np.float64)
    out = np.full(d.size, -1, dtype=np.int64)
    ok = d >= 2.0
    out[ok] = np.floor(np.log2(d[ok])).astype(np.int64) - 1
    return out


def profile_memberships(degrees: np.ndarray, num_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Soft log2 classes: anchors :math:`a_j = 2^{j+1}` (``j < num_classes``); a degree between two anchors belongs
    to both, linearly (``phi_j + phi_{j+1} = 1``); below the first / above the last anchor to that one alone.
    Returns ``(lower class, upper class, weight of the lower)``. One step of the degree moves at most
    :math:`2/a_j < 4/d` of a node's membership (``d`` in :math:`[a_j, a_{j+1})`): the Lipschitz property the
    sensitivity proof of :func:`triangle_profile` uses."""
    k = max(int(num_classes), 1)
    d = np.clip(np.asarray(degrees, dtype=np.float64), 2.0, 2.0 ** k)
    lo = np.minimum(np.floor(np.log2(d)).astype(np.int64) - 1, k - 1)
    a = 2.0 ** (lo + 1)
    w = np.where(lo < k - 1, 1.0 - (d - a) / a, 1.0)
    return lo, np.minimum(lo + 1, k - 1), w


def soft_profile(per_node: np.ndarray, degrees: np.ndarray, num_classes: int) -> np.ndarray:
    """``per_node`` values summed into the soft classes of ``degrees`` (:func:`profile_memberships`)."""
    lo, hi, w = profile_memberships(degrees, num_classes)
    x = np.asarray(per_node, dtype=np.float64)
    k = max(int(num_classes), 1)
    return np.bincount(lo, weights=x * w, minlength=k) + np.bincount(hi, weights=x * (1.0 - w), minlength=k)


def profile_class_count(released_degrees: np.ndarray) -> int:
    """Number of profile classes: enough anchors to reach the largest released degree (post-processing)."""
    top = float(np.max(np.asarray(released_degrees, dtype=np.float64), initial=2.0))
    return int(profile_classes(np.array([max(top, 2.0)]))[0]) + 1


def triangle_profile(graph: Graph, cap: float, num_classes: int) -> np.ndarray:
    r"""Pre-noise query: :math:`q_k = \sum_a \phi_k(d_a)\,\tau_a`, :math:`\tau_a = \sum_{t \ni a} \min(1, D/M_t)`
    (each triangle's capped weight counted at each of its nodes, split over the soft degree classes
    :math:`\phi_k` of :func:`profile_memberships`; ``num_classes`` comes from released degrees).

    Edge sensitivity (L1) below :math:`10D` (:func:`triangle_profile_sensitivity`). For :math:`G' = G + \{u,v\}`:
    :math:`q_k(G') - q_k(G) = \sum_a \phi_k(d'_a)(\tau'_a - \tau_a) + \sum_{a \in \{u,v\}} (\phi_k(d_a+1) -
    \phi_k(d_a))\tau_a`. The first part has L1 norm at most :math:`\sum_a |\tau'_a - \tau_a| \le 3\sum_t
    |w_t(G') - w_t(G)| < 6D` (:func:`capped_triangle_count`'s proof bounds the sum by :math:`2D`; a triangle absent
    from a graph has weight 0). In the second, :math:`\sum_k |\Delta\phi_k| < 4/d_u` and :math:`\tau_u \le
    \binom{d_u}{2}\min(1, D/d_u) \le D(d_u-1)/2` (every triangle at ``u`` has :math:`M_t \ge d_u`), so each
    endpoint adds less than :math:`2D`. Total :math:`< 10D`.
    """
    per_node, _ = triangle_incidences(graph.num_nodes, graph.edges, cap)
    return soft_profile(per_node, graph.degrees(), num_classes)


def triangle_profile_sensitivity(cap: float) -> float:
    """Declared L1 edge sensitivity of :func:`triangle_profile` at cap ``D``: ``10 D``."""
    return 10.0 * float(cap)


def merge_profile_classes(noisy: np.ndarray, scale: float, min_snr: float = 3.0) -> np.ndarray:
    """Post-processing: adjacent classes merged, from the lowest, until each merged class's noisy sum is at least
    ``min_snr`` standard deviations of its Laplace noise (``sqrt(2 m) * scale`` over ``m`` classes); a short tail
    joins the class below it. Returns the merged class of every class (``-1``: none passed, no profile)."""
    noisy = np.asarray(noisy, dtype=np.float64)
    out = np.full(noisy.size, -1, dtype=np.int64)
    group, start, acc = 0, 0, 0.0
    for i, x in enumerate(noisy.tolist()):
        acc += x
        if acc >= min_snr * np.sqrt(2.0 * (i - start + 1)) * scale:
            out[start:i + 1] = group
            group, start, acc = group + 1, i + 1, 0.0
    if group and start < noisy.size:
        out[start:] = group - 1
    return out


def top_vertex_triangles(graph: Graph) -> np.ndarray:
    """Per node ``c``: the triangles whose highest-ranked vertex (largest degree, ties by id) is ``c``.

    With ``L`` oriented low -> high rank, entry ``(a, c)`` of ``(L @ L) * L`` counts the ``b`` with ``a -> b -> c``
    and ``a -> c``, i.e. the triangles ``a < b < c``; its column sums give the count per top vertex. Sums to ``T``.
    """
    if graph.num_edges < 3:
        return np.zeros(graph.num_nodes)
    low = _oriented(graph)
    return np.asarray((low @ low).multiply(low).sum(axis=0), dtype=np.float64).ravel()


def median_vertex_triangles(graph: Graph) -> np.ndarray:
    """Per node ``b``: the triangles whose middle-ranked vertex (median degree, ties by id) is ``b``.

    With ``L`` oriented low -> high rank, entry ``(b, c)`` of ``(L^T @ L) * L`` counts the ``a`` with ``a -> b``,
    ``a -> c`` and ``b -> c``, i.e. the triangles ``a < b < c``; its row sums give the count per middle vertex. Sums
    to ``T``.
    """
    if graph.num_edges < 3:
        return np.zeros(graph.num_nodes)
    low = _oriented(graph)
    return np.asarray((low.T @ low).multiply(low).sum(axis=1), dtype=np.float64).ravel()


#: What a triangle's weight :math:`\min(1, D/M_t)` under the cap reads: its largest degree (the count before session
#: 32, and the profile's) or its median degree (structure log item 41: the same sensitivity bound,
#: :func:`capped_triangle_count`; far less of the count cut where hubs close triangles with low-degree nodes;
#: ``dp_bter``'s default since log item 42).
TRIANGLE_WEIGHTS = ("largest", "median")


def vertex_triangles(graph: Graph, weight: str = "largest") -> np.ndarray:
    """The triangles per node that :func:`capped_triangle_count` weights by that node's degree: topped by it
    (``"largest"``) or with it in the middle (``"median"``)."""
    if weight not in TRIANGLE_WEIGHTS:
        raise OptionError(f"triangle weight must be one of {TRIANGLE_WEIGHTS}, got {weight!r}")
    return top_vertex_triangles(graph) if weight == "largest" else median_vertex_triangles(graph)


def capped_triangle_count(graph: Graph, cap: float, weight: str = "largest") -> float:
    r"""Pre-noise query :math:`T_D(G) = \sum_t \min(1, D/M_t)`, :math:`M_t` the largest degree in triangle ``t``
    (with ``weight="median"``, its median degree).

    Edge sensitivity (edge adjacency; Lipschitz weights in the spirit of Kasiviswanathan, Nissim, Raskhodnikova &
    Smith 2013, "Analyzing graphs with node differential privacy", Sec. 4, here for edges): let :math:`G' = G +
    \{u, v\}` and :math:`k = |N(u) \cap N(v)|`.

    * New triangles :math:`\{u, v, w\}`: :math:`k` of them, each with :math:`M' \ge d'_u \ge k + 1`, so they add at
      most :math:`k \min(1, D/(k+1)) < D`.
    * Old triangles change weight only through :math:`d_u` or :math:`d_v` (no old triangle holds both: ``u`` and ``v``
      were not adjacent). At ``u``: at most :math:`\binom{d_u}{2}` triangles, and :math:`|\min(1, D/M) - \min(1,
      D/(M+1))| \le D/(M(M+1))` with :math:`M = d_u` when it changes, so the total is at most
      :math:`\tfrac{d_u(d_u-1)}{2} \cdot \tfrac{D}{d_u(d_u+1)} < D/2`; the same at ``v``.

    Total :math:`< 2D` (:func:`capped_triangle_sensitivity`). The weight is a function of the triangle's top-ranked
    vertex only (ranked by degree), so the sum is :math:`\sum_c \min(1, D/d_c)\, t^{\mathrm{top}}_c`.

    ``weight="median"``: :math:`M_t` is the triangle's median degree instead, with the same bound. The new triangles
    each hold ``u`` and ``v``, both of degree at least :math:`k + 1` in :math:`G'`, so their median is too: below
    :math:`D` in all. A +1 on :math:`d_u` moves the median of an old triangle at ``u`` only where :math:`d_u` is that
    median (raising a value below or above the middle one leaves it), so again by at most :math:`D/(d_u(d_u+1))` on
    at most :math:`\binom{d_u}{2}` triangles: below :math:`D/2` at ``u``, the same at ``v``. The median is at most
    the largest degree, so every triangle weighs at least as much as under ``"largest"``.
    """
    if not (float(cap) > 0):
        raise OptionError(f"triangle cap D must be > 0, got {cap}")
    top = vertex_triangles(graph, weight)
    d = graph.degrees().astype(np.float64)
    return float(np.sum(top * np.minimum(1.0, float(cap) / np.maximum(d, 1.0))))


def component_count(graph: Graph) -> int:
    """Number of connected components, isolated nodes included."""
    return int(sp.csgraph.connected_components(graph.to_csr(), directed=False)[0])


# ----------------------------------------------------------------------------------------------- releases
@dataclass(frozen=True)
class DegreeRelease:
    """Released degrees: ``values[i]`` is node ``i``'s degree (sorted values handed out by noisy rank)."""

    values: np.ndarray
    noisy_per_node: np.ndarray
    #: The values before :func:`debias_wedges` (same order; equal to ``values`` without it). The label sweeps read
    #: these: their settings were measured on them, and the correction moves only the top values, not their order.
    plain: np.ndarray


def release_degrees(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon_sorted: float,
                    epsilon_rank: float, stage: str, epsilon_cumulative: float = 0.0,
                    dither: bool = True, dither_multiple: float | None = None, wedges: bool = True
                    ) -> DegreeRelease:
    r"""Sorted degree sequence (Hay et al. 2009, Thm. 1: L1 sensitivity 2; isotonic regression is their constrained
    inference) plus per-node degrees (L1 sensitivity 2) used only for the order of the nodes.

    .. math:: \tilde S = \mathrm{sort}(d) + \mathrm{Lap}(2/\varepsilon_s)^{\otimes n},\quad
              \tilde d = d + \mathrm{Lap}(2/\varepsilon_r)^{\otimes n}

    Node ``i`` receives the isotonic :math:`\tilde S` value of its rank in :math:`\tilde d` (post-processing). With
    ``dither`` (default) the values above the low end spliced from the cumulative counts are first spread by a
    multiple of their plateaus' standard errors (:func:`dither_plateaus`); the multiple is ``dither_multiple`` if
    given, else chosen by :func:`dither_scale`'s parametric bootstrap on the released values; with ``wedges``
    (default, needs ``dither``) :func:`debias_wedges` then takes the noise's excess out of the wedge count. All of it
    is post-processing with public randomness.
    """
    n = graph.num_nodes
    deg = graph.degrees().astype(np.float64)
    noisy_sorted = charge_laplace(budget, rng, np.sort(deg), epsilon=epsilon_sorted, sensitivity=DEGREE_SENSITIVITY,
                                  stage=f"{stage}.sorted_degrees", proof=PROOF,
                                  note="Hay et al. 2009 sorted degree sequence, L1 sensitivity 2")
    noisy_node = charge_laplace(budget, rng, deg, epsilon=epsilon_rank, sensitivity=DEGREE_SENSITIVITY,
                                stage=f"{stage}.node_degrees", proof=PROOF,
                                note="per-node degrees (only their order is used), L1 sensitivity 2")
    fit = isotonic_increasing(noisy_sorted)
    noise_sd = np.sqrt(2.0) * DEGREE_SENSITIVITY / epsilon_sorted  # Laplace(2/eps): sd 2 sqrt(2)/eps per entry
    sorted_vals = np.clip(interpolate_plateaus(fit, noise_sd), 0.0, n - 1)
    spliced = np.zeros(n, dtype=bool)
    if epsilon_cumulative > 0:
        noisy_cum = charge_laplace(budget, rng, cumulative_degree_counts(deg), epsilon=epsilon_cumulative,
                                   sensitivity=CUMULATIVE_SENSITIVITY, stage=f"{stage}.cumulative_degrees",
                                   proof=PROOF, note=f"#{{v: d_v <= j}} for j < {CUMULATIVE_DEGREES}, L1 sensitivity 2")
        before = sorted_vals
        sorted_vals = np.clip(splice_low_degrees(sorted_vals, noisy_cum, CUMULATIVE_SENSITIVITY / epsilon_cumulative,
                                                 sorted_sd=noise_sd), 0.0, n - 1)
        # The splice rewrites a prefix (and raises values up to its last degree): everything up to its last change
        # is fixed by the counts, not by the sorted sequence.
        changed = np.flatnonzero(sorted_vals != before)
        if changed.size:
            spliced[: int(changed[-1]) + 1] = True
    if dither:
        # A plateau of L entries averages L of them (noise_sd each).
        # Why: isotonic plateaus and their interpolation leave a lumpy histogram (spikes of 150-240 nodes next to
        # degrees with 1-3, Facebook at epsilon 1, where the input has 80-100 at each); spreading every value by its
        # own standard error turns the point estimate into a draw of the degrees the release cannot tell apart.
        # How far to spread is chosen on the release's own values (parametric bootstrap, post-processing); its
        # randomness comes from a spawned generator so the draws after it are those of a fixed-scale dither.
        scale = dither_scale(sorted_vals, fit, ~spliced, noise_sd, rng.spawn(1)[0]) if dither_multiple is None \
            else float(dither_multiple)
        sorted_vals = dither_plateaus(sorted_vals, fit, ~spliced, scale * noise_sd, rng)
    plain = sorted_vals
    if dither and wedges:
        # After the dither, whose variance it takes out of W too; spawned generator as for the scale above.
        sorted_vals = debias_wedges(sorted_vals, ~spliced, noise_sd, scale, rng.spawn(1)[0])
    # Ties in the noisy ranking broken by random (public) order, so equal noisy degrees do not favour low ids.
    order = np.lexsort((rng.random(n), noisy_node))
    values, before = np.empty(n), np.empty(n)
    values[order], before[order] = sorted_vals, plain
    return DegreeRelease(values=values, noisy_per_node=noisy_node, plain=before)


#: Number of released cumulative-degree counts ``#{v : d_v <= j}``, ``j = 0 .. CUMULATIVE_DEGREES - 1``.
CUMULATIVE_DEGREES = 64
#: L1 sensitivity of the cumulative counts: one edge moves each endpoint up one degree, which lowers exactly one
#: count (``j = d``, if ``d`` is below the last one) by 1.
CUMULATIVE_SENSITIVITY = 2.0


def cumulative_degree_counts(degrees: np.ndarray, length: int = CUMULATIVE_DEGREES) -> np.ndarray:
    """Pre-noise query ``F(j) = #{v : d_v <= j}`` for ``j < length`` (L1 edge sensitivity 2)."""
    d = np.asarray(degrees, dtype=np.int64)
    return np.cumsum(np.bincount(np.minimum(d, length), minlength=length + 1)[:length]).astype(np.float64)




#: Share of the modelled capping bias left in the triangle estimate after its half correction (see
#: :func:`release_triangles`): the bias term of the cap's mean-squared-error rule.
RESIDUAL_BIAS = 0.5
#: The half correction is added only where stage 2's count stands this many Laplace scales above 0. It multiplies the
#: count by 1 + (hubs' uncapped wedges / capped wedges) / 2, noise included: a customer-merchant graph without a
#: triangle came out at 25,218 for 0 from a stage 2 of 5,074 (3.2 scales; merchants of degree up to 3,322 hold most
#: wedges), and a wheel's (399 triangles, all at the hub) at 13-18 times its stage 2 where that was 0.5-0.9 scales at
#: epsilon 1 (about 6 times at 4). A count at noise level says nothing of how clustered the hubs are. A count of 0
#: passes 3 scales in 2.5% of fits. The counts of the structure report's graphs, CiteSeer, Cora-ML, Squirrel, Tolokers
#: and five proxies stood 4.7 or more scales out at epsilon 0.5-4 (2-4 seeded fits each), so their estimates are as
#: before.
CORRECTION_NOISE = 3.0


def triangle_attribution(degrees: np.ndarray, weight: str = "largest") -> np.ndarray:
    """The modelled triangles at each node per unit of :math:`\kappa` (post-processing of released degrees): its
    wedges :math:`\binom{d}{2}` under ``"largest"`` (a node tops the triangles of its wedges whose ends rank lower);
    under ``"median"`` its wedges with one end ranked above and one below, :math:`d(d-1)q(1-q)`, ``q`` the share of
    the other nodes' degree volume ranked above it (equal degrees count half). A lone hub is the median of no
    triangle (a wheel's, a windmill's); the largest-degree model gave the wheel's hub all of its triangles."""
    d = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
    if weight == "largest":
        return d * np.maximum(d - 1.0, 0.0) / 2.0
    if weight != "median":
        raise OptionError(f"triangle weight must be one of {TRIANGLE_WEIGHTS}, got {weight!r}")
    order = np.argsort(d, kind="stable")
    sd = d[order]
    total = float(sd.sum())
    cum = np.concatenate([[0.0], np.cumsum(sd)])
    upto = cum[np.searchsorted(sd, sd, side="right")]  # volume of the degrees at most each node's
    equal = upto - cum[np.searchsorted(sd, sd, side="left")]  # ... of its equal-degree run, itself included
    q_sorted = (total - upto + 0.5 * (equal - sd)) / np.maximum(total - sd, 1e-12)
    q = np.empty_like(d)
    q[order] = np.clip(q_sorted, 0.0, 1.0)
    return d * np.maximum(d - 1.0, 0.0) * q * (1.0 - q)


def _modelled_bias(degrees: np.ndarray, caps: np.ndarray, kappa: float,
                   attribution: np.ndarray | None = None) -> np.ndarray:
    """Modelled :math:`T - T_D` when the triangles topped by a node of degree ``d`` number ``kappa * C(d, 2)``, but
    at most ``m - d`` (``m`` = half the degree sum): the edges among a node's neighbours leave each neighbour's edge to
    it out. Without that bound a hub joined to most of the graph was modelled with triangles the whole graph cannot
    hold (a 5,010-node hub-and-spoke graph of 8,942 edges and 1,474 triangles, hub degree 4,789: kappa * C(d, 2) =
    57,000 at kappa 0.005), the cap rule then chose D = 1,900-2,400 (noise scale 12,000) and the estimate came out
    0-33,000."""
    d = np.maximum(np.asarray(degrees, dtype=np.float64), 1.0)
    modelled = kappa * d * (d - 1.0) / 2.0 if attribution is None else kappa * np.asarray(attribution, dtype=np.float64)
    w = np.minimum(modelled, np.maximum(0.5 * float(d.sum()) - d, 0.0))
    return np.array([float(np.sum(w * (1.0 - np.minimum(1.0, c / d)))) for c in caps])


@dataclass(frozen=True)
class TriangleRelease:
    """Released triangle estimate (post-processed), the caps of the two stages and both raw noisy counts."""

    triangles: float
    cap_scale: float
    cap: float
    raw: float
    raw_scale: float
    #: Epsilon stage 2 took from ``spare`` (0 when stage 1 said the base share was precise enough).
    extra_epsilon: float = 0.0
    #: Laplace scale of stage 2's count.
    noise_scale: float = 0.0
    #: Stage 1's estimate plus its whole modelled capping bias, which sized ``extra_epsilon``, at least stage 1's own
    #: scale (0 without a spare).
    size_estimate: float = 0.0
    #: The stage-2 Laplace scale the spare was spent towards (0 without a spare): ``noise_scale`` equals it unless
    #: the spare ran out or the base share already did better.
    target_scale: float = 0.0
    #: Stage 1's noisy per-degree-class profile (:func:`triangle_profile` at cap ``cap_scale``) and its Laplace
    #: scale.
    profile: np.ndarray = field(default_factory=lambda: np.zeros(0))
    profile_scale: float = 0.0


#: Share of the triangle count's epsilon that its first stage (the scale) spends.
TRIANGLE_SCALE_FRACTION = 0.2
#: Laplace scale, relative to stage 1's estimate, that a spare share tops :func:`release_triangles`' stage 2 up to
#: at epsilon 1 (the clustering sum's top-up uses the same 0.1); above epsilon 1 it falls as
#: :data:`TRIANGLE_RELATIVE_SCALE_POWER` says (:func:`triangle_relative_scale`). Measured before the bias stop and the
#: size floor: 0.05 took more from ``dp_bter``'s partition (12 seeded fits on a 1,000-node LFR graph, mixing 0.3, at
#: epsilon 4: release NMI 0.33 -> 0.27 for triangle RE 0.23 -> 0.19); at 0.1 the NMI stayed (0.32) and at epsilon 2
#: the triangle RE still fell 0.26 -> 0.21. That graph's NMI at epsilon 1 is 0.05, so since item 31 the rule makes
#: the trade at epsilon 4 (0.05 there) to keep the count improving with epsilon.
TRIANGLE_RELATIVE_SCALE = 0.1
#: The top-up's relative scale is ``TRIANGLE_RELATIVE_SCALE / max(epsilon, 1) ** TRIANGLE_RELATIVE_SCALE_POWER``
#: (``epsilon`` the release's total). Why: with one target at every epsilon the count under the sweeps stayed as
#: noisy at epsilon 4 as at 1 (its scale 6-10% of a 300-node connectome proxy's 2,017 triangles at both), and the
#: cap rule's bias made it worse at 4 (8 paired seeded fits, drawn triangle RE 0.028 at epsilon 1, 0.079 at 4).
#: Measured at epsilon 4 (medians of 6-8 paired seeded fits; power 0 / 0.5 / 1): that proxy's triangle RE 0.079 /
#: 0.045 / 0.032 and NMI 0.306 / 0.302 / 0.209; an LFR graph (mixing 0.3) 0.236 / 0.178 / 0.132 for NMI 0.311 /
#: 0.271 / 0.226; a 4-out random graph 1.02 / 0.38 / 0.38; graphs whose count is large for its noise (Facebook,
#: LastFM, Slashdot, the e-mail proxies) take nothing or little at 0.5. Structure log item 31.
TRIANGLE_RELATIVE_SCALE_POWER = 0.5


#: Relative Laplace scale of the triangle count (of stage 1's size estimate) below which :func:`release_triangles`'
#: ``floor_epsilon`` asks for no more precision: there the draws' own error (1-5% of the released count) is as large
#: as the noise. At 0.02 (32 seeded fits each at epsilon 4) the 2,000-node e-mail proxy's triangle RE fell further
#: (0.040 -> 0.024) but Slashdot, whose size estimate reads 0.6 of its count, took 0.2-0.25 of epsilon from its
#: partition for nothing, and the planted partition's and the 500-node connectome proxy's NMI fell 0.05 instead of
#: 0.03 (structure log item 33).
TRIANGLE_NOISE_FLOOR = 0.025


def triangle_relative_scale(epsilon: float) -> float:
    """Relative Laplace scale that :func:`release_triangles`' top-up aims for when the release's total epsilon is
    ``epsilon`` (a public setting): :data:`TRIANGLE_RELATIVE_SCALE` up to epsilon 1, falling as
    ``epsilon ** -TRIANGLE_RELATIVE_SCALE_POWER`` above it, so the count gets more precise as epsilon grows."""
    return TRIANGLE_RELATIVE_SCALE / max(float(epsilon), 1.0) ** TRIANGLE_RELATIVE_SCALE_POWER


def triangle_noise_scale(cap: float, epsilon: float) -> float:
    """Laplace scale of :func:`release_triangles`' second stage at cap ``cap`` and total ``epsilon`` (default
    split; 0 without epsilon): what the count's own noise is, for a sampler deciding how close is close enough."""
    second = (1.0 - TRIANGLE_SCALE_FRACTION) * float(epsilon)
    return capped_triangle_sensitivity(float(cap)) / second if second > 0 else 0.0


def release_triangles(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon: float,
                      degrees: np.ndarray, stage: str, scale_fraction: float = TRIANGLE_SCALE_FRACTION,
                      scale_quantile: float = 0.9, profile: bool = False, spare: float = 0.0,
                      relative_scale: float = TRIANGLE_RELATIVE_SCALE, floor_epsilon: float = 0.0,
                      weight: str = "largest") -> TriangleRelease:
    r"""Two-stage release of the capped triangle count (sequential composition, :math:`\varepsilon` in total).

    1. Scale: :math:`D_1` = the ``scale_quantile`` quantile of the released ``degrees`` (post-processing, at least 2);
       :math:`\hat T_1 = T_{D_1}(G) + \mathrm{Lap}(2D_1/\varepsilon_1)`, :math:`\varepsilon_1` = ``scale_fraction``
       of ``epsilon``.
    2. Cap: with :math:`\kappa_1 = \hat T_1 / \sum_c \binom{\hat d_c}{2}\min(1, D_1/\hat d_c)` (triangles topped
       by a node taken proportional to its wedges), :math:`D_2` on a geometric grid from :math:`D_1` to
       :math:`\max \hat d` minimises (half the modelled bias)^2 + :math:`2(2D/\varepsilon_2)^2`;
       :math:`\hat T_2 = T_{D_2}(G) + \mathrm{Lap}(2D_2/\varepsilon_2)`. The choice reads released values only, so
       adaptivity is free.

    With ``spare`` > 0, stage 2 may spend up to ``spare`` more than its share of ``epsilon``: as much as brings its
    Laplace scale :math:`2D_2/\varepsilon_2` down to :math:`\max(r S, B(D_2)/\sqrt 2)`, where :math:`r` =
    ``relative_scale`` (``dp_bter`` passes :func:`triangle_relative_scale` of its epsilon), :math:`S` is stage 1's
    estimate plus its whole modelled capping bias, but at least stage 1's own Laplace scale (a smaller count stage 1
    cannot tell from 0) and 1, and
    :math:`B(D_2)` the residual (half) modelled bias at the cap: noise below it buys little. With ``floor_epsilon``
    > 0 the target is also at most the scale a count of ``floor_epsilon`` in all would have (its stage 2 at the cap),
    but never below :data:`TRIANGLE_NOISE_FLOOR` of :math:`S`: ``dp_bter`` passes what the count would get at a lower
    epsilon, so that the count is not noisier at a higher one. :math:`D_2` moves with
    :math:`\varepsilon_2`, so the rule alternates between the two (four rounds, ending on the epsilon for the cap
    kept). The extra epsilon is a function of stage 1's release and the released degrees, so the caller charges both
    stages inside ``Budget.shares_chosen_from_releases()`` and takes ``spare`` from a stage charged later
    (:attr:`TriangleRelease.extra_epsilon` says how much was spent).

    The estimate adds half the modelled bias at :math:`D_2` (the model treats hubs as clustered as everyone else;
    real clustering falls with degree, so the full correction overshoots), with :math:`\kappa_2 = \hat T_2 /
    \sum_c \binom{\hat d_c}{2}\min(1, D_2/\hat d_c)` read off stage 2 (at least four times stage 1's epsilon),
    where :math:`\hat T_2` stands :data:`CORRECTION_NOISE` Laplace scales above 0 (nowhere else), and is clipped
    at 0.
    """
    if not (0.0 < scale_fraction < 1.0):
        raise OptionError(f"scale_fraction must be in (0, 1), got {scale_fraction}")
    if not relative_scale > 0.0:
        raise OptionError(f"relative_scale must be positive, got {relative_scale}")
    if weight not in TRIANGLE_WEIGHTS:
        raise OptionError(f"triangle weight must be one of {TRIANGLE_WEIGHTS}, got {weight!r}")
    if profile and weight != "largest":
        raise OptionError("release_triangles: the per-degree profile weights triangles by their largest degree only")
    if profile and spare > 0.0:
        # The size floor is stage 1's Laplace scale; the profile's stage 1 is a vector whose third-of-sum has another.
        raise OptionError("release_triangles: a spare is not supported with profile=True")
    deg_hat = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
    weighted = "" if weight == "largest" else " (median-degree weights)"
    eps1 = float(epsilon) * scale_fraction
    eps2 = float(epsilon) - eps1
    cap1 = max(2.0, float(np.quantile(deg_hat, scale_quantile))) if deg_hat.size else 2.0
    # The query runs once per stage; the top-vertex counts are computed once and reused (same pre-noise values).
    top = vertex_triangles(graph, weight)
    d = np.maximum(graph.degrees().astype(np.float64), 1.0)

    def capped(cap: float) -> float:
        return float(np.sum(top * np.minimum(1.0, cap / d)))

    if profile:
        # Stage 1 is the per-degree-class profile (the generator matches it); its sum over classes is 3 T_{D1}, so
        # a third of its noisy sum is the scale estimate for choosing D2.
        sens1 = triangle_profile_sensitivity(cap1)
        noisy_profile = np.asarray(charge_laplace(
            budget, rng, triangle_profile(graph, cap1, profile_class_count(deg_hat)), epsilon=eps1,
            sensitivity=sens1, stage=f"{stage}.triangles_profile", proof=PROOF, cap=cap1,
            note=f"capped triangle incidences per soft log2 degree class, cap {cap1:.4g}, L1 sensitivity 10 x cap"),
            dtype=np.float64).reshape(-1)
        t1 = float(noisy_profile.sum()) / 3.0
    else:
        sens1 = capped_triangle_sensitivity(cap1)
        noisy_profile = np.zeros(0)
        t1 = float(charge_laplace(budget, rng, capped(cap1), epsilon=eps1, sensitivity=sens1,
                                  stage=f"{stage}.triangles_scale", proof=PROOF, cap=cap1,
                                  note=f"smoothly capped triangle count{weighted}, cap {cap1:.4g}, "
                                       "L1 sensitivity 2 x cap"))
    dd = np.maximum(deg_hat, 1.0)
    attribution = triangle_attribution(dd, weight)
    # The default's modelled bias keeps its own expression (bit for bit the estimates it gave before the option).
    modelled = None if weight == "largest" else attribution

    def capped_wedges(cap: float) -> float:
        return max(float(np.sum(attribution * np.minimum(1.0, cap / dd))), 1.0)

    kappa = max(t1, 0.0) / capped_wedges(cap1)
    top_cap = max(cap1, float(deg_hat.max(initial=cap1)))
    grid = np.unique(np.minimum(cap1 * 1.25 ** np.arange(64), top_cap))
    # The estimate adds half the modelled bias, so its bias lies within +-half of it whether the hubs' triangles
    # are as many as the model says or none: that residual, not the full modelled bias, is what a cap trades against
    # noise. (With the full one the cap sat far above the bias it removed: Cora at 0.49 of epsilon chose D = 65,
    # noise sd 0.29 of T, where D = 33 has noise 0.15 and a measured bias of +8%; reports/structure_fidelity.md.)
    bias = RESIDUAL_BIAS * _modelled_bias(deg_hat, grid, kappa, modelled)

    def best_cap(eps: float) -> int:
        """Index into ``grid`` of the cap that minimises the residual bias^2 + noise variance at ``eps``."""
        return int(np.argmin(bias ** 2 + 2.0 * (capped_triangle_sensitivity(1.0) * grid / eps) ** 2))

    i2 = best_cap(eps2)
    extra, size, target = 0.0, 0.0, 0.0
    if spare > 0.0:
        # Stage 1's estimate (plus its modelled capping bias) says how large the count is;
        # stage 2 gets what a Laplace scale of ``relative_scale`` of it needs at the cap that epsilon chooses (the
        # cap moves with the epsilon: a few rounds, ending on the epsilon for the cap kept), at most ``spare``.
        # A stage-1 estimate at or below its own noise scale says only "small": taken as the count's size, a
        # release at 0 asked for a scale of 0.1 triangles and always took the whole spare (the 4-out graph at
        # epsilon 4 in 7 of 16 fits, a triangle-free molecule collection in every fit; review). With dp_bter's target
        # falling with epsilon the floor is scaled too, so such counts take the whole spare at high epsilon again
        # (MUTAG at 16, the 4-out graph at 4): kept, structure log item 31.
        # The whole modelled bias sizes it (the estimate itself adds half): stage 1 at the 0.9 quantile holds 0.08-0.92
        # of the count on 13 graphs, and with half the bias the size read 0.33-0.96 of it (Slashdot 0.33, LastFM
        # 0.54), so hub-rich graphs asked for up to three times the precision they needed; with the whole one it reads
        # 0.59-1.38 (Cora the top; noise-free stage 1, true degrees for the released ones).
        size = max(t1 + float(_modelled_bias(deg_hat, np.array([cap1]), kappa, modelled)[0]), sens1 / eps1, 1.0)
        # Noise below the cap's own residual (modelled) bias, ``bias`` on the grid, buys little, so the Laplace sd
        # (sqrt(2) scales) stops there: on 1,000-node BFS pieces of Chameleon and Cora (hubs, caps far above the 0.9
        # quantile) the scale rule alone took 0.7-0.9 of epsilon from the partition (release NMI 0.19 -> 0.13, 0.20
        # -> 0.13) and the triangles moved by less than their run-to-run spread (8 paired fits each).
        targets = np.maximum(relative_scale * size, bias / np.sqrt(2.0))
        # The caller's floor: a scale no larger than a count of floor_epsilon would have (what a lower total epsilon
        # gives it), down to TRIANGLE_NOISE_FLOOR of the size, below which the draws' own error dominates (structure
        # log item 33: at a floor of 0.03 the 2,000-node e-mail proxy and the planted partition kept their epsilon-4
        # triangle inversion).
        if floor_epsilon > 0.0:
            lower = capped_triangle_sensitivity(1.0) * grid / ((1.0 - scale_fraction) * float(floor_epsilon))
            least = np.maximum(TRIANGLE_NOISE_FLOOR * size, bias / np.sqrt(2.0))
            targets = np.maximum(np.minimum(targets, lower), least)

        def wanted(i: int) -> float:
            return float(np.clip(capped_triangle_sensitivity(grid[i]) / targets[i] - eps2, 0.0, spare))

        extra = wanted(i2)
        for _ in range(3):
            i2 = best_cap(eps2 + extra)
            extra = wanted(i2)
        target = float(targets[i2])
        eps2 += extra
    cap2 = float(grid[i2])
    t2 = float(charge_laplace(budget, rng, capped(cap2), epsilon=eps2, sensitivity=capped_triangle_sensitivity(cap2),
                              stage=f"{stage}.triangles", proof=PROOF, cap=cap2,
                              note=f"smoothly capped triangle count{weighted}, cap {cap2:.4g}, L1 sensitivity 2 x cap"))
    # The correction's kappa comes from stage 2, measured with four times the epsilon at the cap it corrects. With
    # stage 1's, a kappa read low put the cap low and then corrected its bias by too little as well (1,000-node BFS
    # pieces of Cora at epsilon 1: caps of 13-18 and counts 24-28% low in the median). Structure log item 23.
    kappa2 = max(t2, 0.0) / capped_wedges(cap2)
    scale2 = capped_triangle_sensitivity(cap2) / eps2
    corrected = t2 > CORRECTION_NOISE * scale2
    correction = 0.5 * float(_modelled_bias(deg_hat, np.array([cap2]), kappa2, modelled)[0]) if corrected else 0.0
    estimate = max(0.0, t2 + correction)
    return TriangleRelease(triangles=estimate, cap_scale=cap1, cap=cap2, raw=t2, raw_scale=t1,
                           profile=noisy_profile, profile_scale=sens1 / eps1 if profile else 0.0,
                           extra_epsilon=extra,
                           noise_scale=scale2, size_estimate=size,
                           target_scale=target)


def release_component_count(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon: float,
                            stage: str) -> float:
    """Number of connected components + :math:`\\mathrm{Lap}(1/\\varepsilon)`, clipped to ``[1, n]`` (one edge
    merges two components or splits one in two: L1 sensitivity 1)."""
    noisy = charge_laplace(budget, rng, float(component_count(graph)), epsilon=epsilon,
                           sensitivity=COMPONENT_SENSITIVITY, stage=f"{stage}.components", proof=PROOF,
                           note="number of connected components, L1 sensitivity 1")
    return float(np.clip(noisy, 1.0, graph.num_nodes))
