r"""PrivGraph (Yuan, Zhang, Chen, Wang, Li, Wang & Ren, "PrivGraph: Differentially Private Graph Data Publication by
Exploiting Community Information", USENIX Security 2023), sparse, edge adjacency.

Budget split in three (paper default 1/3 each), sequential composition :math:`\varepsilon = \varepsilon_1 +
\varepsilon_2 + \varepsilon_3`:

1. **Community initialisation** (:math:`\varepsilon_1`): random groups of ``group_size`` nodes (paper :math:`N=20`),
   noisy group-pair edge counts (Laplace, L1 sensitivity 1: every edge falls in exactly one upper-triangle cell,
   the diagonal counting intra-group edges once), norm-sub post-processing, Louvain (resolution ``resolution``) on the
   noisy super-graph.
2. **Community adjustment** (:math:`\varepsilon_2`): every node re-chooses its community by the exponential mechanism
   with a modularity-gain utility :math:`k_{i,C} - d_i \hat f_C` (sensitivity 1; :math:`\hat f_C` the community's
   share of the noisy super-graph volume). One edge affects the utilities of its two endpoints only, so the pass is
   two selections at :math:`\varepsilon_2/2` each (ledger: ``exponential``, epsilon :math:`\varepsilon_2/2`,
   count 2).
3. **Information extraction** (:math:`\varepsilon_3`): the vector (intra-community degrees / 2, inter-community edge
   counts) has L1 sensitivity 1 (an intra edge raises two intra degrees by one, i.e. 1/2 + 1/2; an inter edge raises
   one count by one; no edge does both), so :math:`\mathrm{Lap}(2/\varepsilon_3)` on each intra degree and
   :math:`\mathrm{Lap}(1/\varepsilon_3)` on each inter count is one :math:`\varepsilon_3`-DP Laplace mechanism.

Reconstruction (post-processing): inside every community, the paper's Chung-Lu on the noisy intra degrees: every pair
independently with probability :math:`\min(1, d_i d_j / S_C)`, :math:`S_C` the community's degree sum
(:func:`bernoulli_chung_lu`); for every community pair :math:`(a, b)` the noisy number of edges with one endpoint
drawn uniformly from community :math:`a` and the other from community :math:`b`. (An exact-count sampler, which
re-spreads the mass of saturated hub pairs over the rest, lost a third of the transitivity the paper's rule keeps:
issue 19, ``reports/peers.md``.) The public code draws the first endpoint from a stale loop variable (always the
last community of an earlier loop); here endpoints come from the pair's own communities (see the regression test).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import GENERATORS, GeneratorFitContext, GraphGenerator
from graphrelease.generators.classical_common import (
    ReleasedParams,
    graph_from_keys,
    laplace_entry,
    norm_sub,
    pair_keys,
    round_preserving_sum,
    sample_block_edges,
    split_fractions,
)
from graphrelease.generators.community_dp import (
    em_refine,
    em_refine_sequential,
    noisy_supergraph_partition,
    relabel,
)
from graphrelease.graph import Graph

PROOF = "docs/privacy.md#privgraph"


def intra_degrees_and_inter_counts(graph: Graph, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Phase-3 query: per-node intra-community degree, and inter-community counts (upper triangle, a < b)."""
    k = int(labels.max()) + 1
    la, lb = labels[graph.edges[:, 0]], labels[graph.edges[:, 1]]
    intra = la == lb
    deg_in = np.bincount(graph.edges[intra].ravel(), minlength=graph.num_nodes).astype(np.float64)
    lo, hi = np.minimum(la[~intra], lb[~intra]), np.maximum(la[~intra], lb[~intra])
    iu, ju = np.triu_indices(k, 1)
    row_start = lo * (k - 1) - lo * (lo - 1) // 2
    pos = row_start + (hi - lo - 1)
    inter = np.bincount(pos, minlength=iu.size).astype(np.float64)
    return deg_in, inter


def postprocess_intra_degrees(noisy: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per community: norm-sub (non-negative, sum kept), clip to community size - 1."""
    out = np.zeros(noisy.size, dtype=np.int64)
    for c in range(int(labels.max()) + 1):
        idx = np.nonzero(labels == c)[0]
        d = norm_sub(noisy[idx])
        out[idx] = np.minimum(d, max(idx.size - 1, 0))
    return out


# For a pair probability lam < 1/2, -ln(1 - lam) <= 2 ln 2 * lam (the ratio grows in lam): the Poisson proposal
# intensity 2 ln 2 * lam dominates the one needed, so thinning can reach it.
_PROPOSAL = 2.0 * np.log(2.0)


def bernoulli_chung_lu(n: int, members: np.ndarray, weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Pair keys of a Chung-Lu graph on ``members``: each pair independently with probability
    ``min(1, w_i w_j / S)``, ``S = sum(w)`` (PrivGraph's intra-community rule), in O(S + heavy pairs) time.

    Pairs with ``lam = w_i w_j / S >= 1/2`` ("heavy"; fewer than ``2 S`` of them, since the lam of all pairs sum
    to at most ``S/2``) are enumerated and drawn directly. The others: a Poisson number (mean ``2 ln 2 * S/2``) of
    ordered endpoint pairs drawn proportional to ``w`` gives every unordered pair a Poisson(``2 ln 2 * lam``) count;
    keeping each draw with probability ``-ln(1 - lam) / (2 ln 2 * lam)`` leaves Poisson(``-ln(1 - lam)``) kept draws,
    so the pair is present (at least one kept draw) with probability exactly ``lam``.
    """
    members = np.asarray(members, dtype=np.int64)
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    total = float(w.sum())
    if members.size < 2 or total <= 0:
        return np.zeros(0, dtype=np.int64)
    # Heavy pairs, in descending-weight order: for position i, partners j > i with w_j >= total / (2 w_i).
    desc = np.argsort(-w, kind="stable")
    ws = w[desc]
    with np.errstate(divide="ignore"):
        need = np.where(ws > 0, total / (2.0 * ws), np.inf)
    last = np.searchsorted(-ws, -need, side="right")  # ws[:last] >= need
    cnt = np.maximum(last - np.arange(ws.size) - 1, 0)
    hi_i = np.repeat(np.arange(ws.size), cnt)
    hi_j = hi_i + 1 + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    lam_h = np.minimum(ws[hi_i] * ws[hi_j] / total, 1.0)
    pick = rng.random(lam_h.size) < lam_h
    heavy = np.stack([members[desc[hi_i[pick]]], members[desc[hi_j[pick]]]], axis=1)
    # Light pairs: Poisson proposals proportional to w, thinned.
    m = rng.poisson(_PROPOSAL * total / 2.0)
    p = w / total
    a = rng.choice(w.size, size=m, p=p)
    b = rng.choice(w.size, size=m, p=p)
    lam = w[a] * w[b] / total
    light = (a != b) & (lam < 0.5)
    a, b, lam = a[light], b[light], lam[light]
    keep = rng.random(lam.size) * (_PROPOSAL * lam) < -np.log1p(-lam)
    pairs = np.concatenate([heavy, np.stack([members[a[keep]], members[b[keep]]], axis=1)])
    return np.unique(pair_keys(pairs, n))


class FittedPrivGraph(ReleasedParams):
    kind: ClassVar[str] = "privgraph"

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        n = self.num_nodes
        labels = self.arrays["labels"].astype(np.int64)
        k = int(labels.max()) + 1
        deg_in = self.arrays["intra_degrees"].astype(np.float64)
        inter = self.arrays["inter_counts"].astype(np.int64)
        # Intra: the paper's independent-pair Chung-Lu inside each community.
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(k + 1))
        keys_in = np.concatenate([np.zeros(0, dtype=np.int64)] + [
            bernoulli_chung_lu(n, order[bounds[c]:bounds[c + 1]], deg_in[order[bounds[c]:bounds[c + 1]]], rng)
            for c in range(k)])
        # Inter: uniform endpoints from the pair's OWN two communities.
        iu, ju = np.triu_indices(k, 1)
        keys_out = sample_block_edges(n, labels, np.ones(n), iu, ju, inter, rng)
        return graph_from_keys(n, np.concatenate([keys_in, keys_out]), name=f"{self.kind}_synthetic")


@GENERATORS.register("privgraph")
class PrivGraph(GraphGenerator):
    """PrivGraph with the paper's defaults: ``fractions=(1/3, 1/3, 1/3)``, ``group_size=20``, ``resolution=1``."""

    def __init__(self, *, fractions: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3), group_size: int = 20,
                 adjustment: str = "sequential",
                 resolution: float = 1.0, seed: int | None = None) -> None:
        if len(fractions) != 3:
            raise OptionError(f"PrivGraph takes three budget fractions, got {fractions}")
        if int(group_size) < 1:
            raise OptionError(f"group_size must be >= 1, got {group_size}")
        if not (resolution > 0):
            raise OptionError(f"resolution must be > 0, got {resolution}")
        self.fractions = split_fractions(dict(zip(("partition", "adjust", "extract"), map(float, fractions))),
                                         "privgraph")
        if adjustment not in ("sequential", "one-shot"):
            raise OptionError(f"adjustment must be 'sequential' (the paper) or 'one-shot', got {adjustment!r}")
        self.adjustment = adjustment
        self.group_size = int(group_size)
        self.resolution = float(resolution)
        self.seed = seed

    def _fit(self, data: Graph, budget: Any, ctx: GeneratorFitContext, *, progress: Any = None) -> FittedPrivGraph:
        graph, eps, rng, used_seed = data, ctx.epsilon, ctx.rng, ctx.used_seed
        e1, e2, e3 = (eps * self.fractions[k] for k in ("partition", "adjust", "extract"))
        labels, share = noisy_supergraph_partition(
            graph, budget, rng, epsilon=e1, group_size=self.group_size, resolution=self.resolution,
            stage="privgraph.community_init", proof=PROOF)
        if self.adjustment == "sequential":
            labels = em_refine_sequential(graph, labels, budget, rng, epsilon=e2 / 2.0,
                                          stage="privgraph.community_adjust", proof=PROOF)
        else:
            labels = em_refine(graph, labels, budget, rng, epsilon=e2 / 2.0, volume_share=share,
                               stage="privgraph.community_adjust", proof=PROOF)
        labels = relabel(labels)
        deg_in, inter = intra_degrees_and_inter_counts(graph, labels)
        budget.charge(laplace_entry("privgraph.extract", e3, 1.0, PROOF,
                                    note="(intra degrees / 2, inter-community counts): L1 sensitivity 1"))
        noisy_deg = deg_in + rng.laplace(0.0, 2.0 / e3, size=deg_in.size)
        noisy_inter = inter + rng.laplace(0.0, 1.0 / e3, size=inter.size)
        intra_degrees = postprocess_intra_degrees(noisy_deg, labels)
        inter_counts = norm_sub(noisy_inter) if inter.size else np.zeros(0, dtype=np.int64)
        return FittedPrivGraph(
            graph.num_nodes,
            {"labels": labels, "intra_degrees": intra_degrees, "inter_counts": inter_counts},
            {"fractions": list(self.fractions.values()), "group_size": self.group_size,
             "resolution": self.resolution, "adjustment": self.adjustment},
            reproducible_seed_used=used_seed,
        )


__all__ = ["PrivGraph", "FittedPrivGraph", "bernoulli_chung_lu", "intra_degrees_and_inter_counts",
           "round_preserving_sum"]
