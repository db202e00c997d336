r"""DP-dK with the dK-2 series (Wang & Wu 2013, "Preserving differential privacy in degree-correlation based graph
generation", Trans. Data Privacy 6(2)), sparse, edge adjacency.

The dK-2 series (joint degree distribution) counts edges by the unordered pair of their endpoint degrees. Adding or
removing edge :math:`\{u,v\}` moves every other edge of :math:`u` and of :math:`v` to a neighbouring bin and adds or
removes one edge, so the L1 sensitivity is :math:`2(d_u + d_v) + 1 \le 4 d_{\max} + 1` — unbounded unless degrees
are capped. We cap degrees at :math:`D`: bins use :math:`\min(d, D)`, and an edge of :math:`u` changes bin only when
:math:`d_u < D`, i.e. for at most :math:`D - 1` edges of :math:`u`:

.. math:: \|\mathrm{dK2}_D(G) - \mathrm{dK2}_D(G')\|_1 \le 2(D-1) + 2(D-1) + 1 = 4D - 3.

Releases (basic composition, :math:`\varepsilon = \varepsilon_D + \varepsilon_m + \varepsilon_J`):

1. the cap :math:`D` unless given as public (``degree_cap=``): a DP quantile by the exponential mechanism over
   a public grid of candidates (1..10, then geometric with ratio 1.15 up to 2000) with utility :math:`-|\#\{i: d_i \le D\} - \lceil q n \rceil|`, sensitivity 2
   (one edge changes two degrees), :math:`\varepsilon_D`;
2. the edge count :math:`\tilde m = m + \mathrm{Lap}(1/\varepsilon_m)` (``count_fraction``), used as the total of the
   series in post-processing (the noisy series' own sum has standard deviation :math:`(4D-3)\sqrt{D(D+1)}/
   \varepsilon_J`, often larger than :math:`m`);
3. the capped dK-2 counts for all :math:`D(D+1)/2` bins plus Laplace :math:`((4D-3)/\varepsilon_J)`, projected
   (norm-sub) onto non-negative counts summing to :math:`\tilde m`.

Construction (post-processing, the "2K" generator): the number of nodes per degree class is derived from the noisy
series (stubs / degree), scaled to at most :math:`n` (the rest are isolated), classes are assigned to nodes at
random, and every bin :math:`(k, l)` gets its noisy number of distinct edges between uniform nodes of classes
:math:`k` and :math:`l`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import GENERATORS, GeneratorFitContext, GraphGenerator
from graphrelease.generators.classical_common import (
    NODE_COUNT_PUBLIC,
    ReleasedParams,
    charge_laplace,
    graph_from_keys,
    norm_sub,
    round_preserving_sum,
    sample_block_edges,
)
from graphrelease.graph import Graph
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.privacy.noise import exponential_mechanism_scale

PROOF = "docs/privacy.md#dp-dk"
#: Largest candidate cap (the bins are D(D+1)/2 dense cells).
MAX_CAP = 2000


def dk2_sensitivity(cap: int) -> float:
    return float(max(1, 4 * int(cap) - 3))


def capped_dk2(graph: Graph, cap: int) -> np.ndarray:
    """Pre-noise query: capped dK-2 counts over bins 1 <= k <= l <= cap, flattened in triu order (0-based)."""
    d = np.minimum(graph.degrees(), cap)
    a, b = d[graph.edges[:, 0]] - 1, d[graph.edges[:, 1]] - 1
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pos = lo * cap - lo * (lo - 1) // 2 + (hi - lo)
    return np.bincount(pos, minlength=cap * (cap + 1) // 2).astype(np.float64)


def cap_candidates(max_cap: int) -> np.ndarray:
    """Public candidate caps: 1..10, then a geometric grid (ratio 1.15) up to ``max_cap``.

    A short grid keeps the exponential mechanism's flat tail (caps far above the quantile, all with the same utility)
    from collecting most of the probability mass, which happens with all of 1..n-1 as candidates.
    """
    grid = [float(c) for c in range(1, 11)]
    while grid[-1] < max_cap:
        grid.append(grid[-1] * 1.15)
    return np.unique(np.minimum(np.rint(grid), max_cap).astype(np.int64))


def dp_degree_quantile(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon: float, quantile: float,
                       max_cap: int, stage: str) -> int:
    """Exponential-mechanism quantile of the degree sequence (utility sensitivity 2)."""
    scale = exponential_mechanism_scale(epsilon, 2.0)
    budget.charge(LedgerEntry(
        mechanism="exponential", stage=stage, params={"epsilon": float(epsilon), "scale": scale}, sensitivity=2.0,
        proof=PROOF,
        note=f"degree cap = DP {quantile:g}-quantile of the degrees, utility -|#{{d_i <= D}} - q n|",
    ))
    deg = np.sort(graph.degrees())
    cands = cap_candidates(max_cap)
    below = np.searchsorted(deg, cands, side="right")
    utility = -np.abs(below - math.ceil(quantile * graph.num_nodes)).astype(np.float64)
    # Gumbel-max: argmax(u + Gumbel(2 Delta / eps)) samples exp(eps u / (2 Delta)) with Delta = 2.
    return int(cands[np.argmax(utility + rng.gumbel(0.0, scale, size=cands.size))])


class FittedDPdK(ReleasedParams):
    kind: ClassVar[str] = "dpdk"

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        n = self.num_nodes
        cap = int(self.config["degree_cap"])
        counts = self.arrays["dk2"].astype(np.int64)
        iu, ju = np.triu_indices(cap)
        # Stubs per degree class k (index k-1): off-diagonal bins give one stub, diagonal bins two.
        stubs = np.bincount(iu, weights=counts, minlength=cap) + np.bincount(ju, weights=counts, minlength=cap)
        want = stubs / np.arange(1, cap + 1)
        total = want.sum()
        sizes = round_preserving_sum(want * min(1.0, n / total) if total > 0 else want, int(min(round(total), n)))
        sizes = np.maximum(sizes, 0)
        # Classes 0..cap-1 for degrees 1..cap, class cap for isolated nodes.
        classes = np.repeat(np.arange(cap + 1), np.append(sizes, n - sizes.sum()))
        block_of = classes[rng.permutation(n)]
        keys = sample_block_edges(n, block_of, np.ones(n), iu, ju, counts, rng)
        return graph_from_keys(n, keys, name=f"{self.kind}_synthetic")


@GENERATORS.register("dpdk")
class DPdK(GraphGenerator):
    """DP-dK (dK-2). ``degree_cap``: a public cap (then all epsilon goes to the series); otherwise
    ``cap_fraction`` of epsilon selects a DP ``cap_quantile`` of the degrees. ``seed``: tests only."""

    def __init__(self, *, degree_cap: int | None = None, cap_fraction: float = 0.2, count_fraction: float = 0.05,
                 cap_quantile: float = 0.9, seed: int | None = None) -> None:
        if degree_cap is not None and not (1 <= int(degree_cap) <= MAX_CAP):
            raise OptionError(f"degree_cap must be in 1..{MAX_CAP}, got {degree_cap}")
        if not (0.0 < cap_fraction < 1.0):
            raise OptionError(f"cap_fraction must be in (0, 1), got {cap_fraction}")
        if not (0.0 < cap_quantile <= 1.0):
            raise OptionError(f"cap_quantile must be in (0, 1], got {cap_quantile}")
        self.degree_cap = None if degree_cap is None else int(degree_cap)
        self.cap_fraction = float(cap_fraction)
        if not (0.0 < count_fraction < 1.0) or cap_fraction + count_fraction >= 1.0:
            raise OptionError(f"count_fraction must be in (0, 1 - cap_fraction), got {count_fraction}")
        self.count_fraction = float(count_fraction)
        self.cap_quantile = float(cap_quantile)
        self.seed = seed

    def _fit(self, data: Graph, budget: Any, ctx: GeneratorFitContext, *, progress: Any = None) -> FittedDPdK:
        graph, eps, rng, used_seed = data, ctx.epsilon, ctx.rng, ctx.used_seed
        n = graph.num_nodes
        public = dict(NODE_COUNT_PUBLIC)
        if self.degree_cap is not None:
            cap = min(self.degree_cap, n - 1)
            e_series = eps * (1.0 - self.count_fraction)
            public["degree_cap"] = f"degree cap D={cap} is public (given by the data owner)"
        else:
            e_cap = eps * self.cap_fraction
            cap = dp_degree_quantile(graph, budget, rng, epsilon=e_cap, quantile=self.cap_quantile,
                                     max_cap=max(1, min(MAX_CAP, n - 1)), stage="dpdk.degree_cap")
            e_series = eps * (1.0 - self.cap_fraction - self.count_fraction)
        m_noisy = float(charge_laplace(budget, rng, float(graph.num_edges), epsilon=eps * self.count_fraction,
                                       sensitivity=1.0, stage="dpdk.edge_count", proof=PROOF))
        noisy = charge_laplace(budget, rng, capped_dk2(graph, cap), epsilon=e_series, sensitivity=dk2_sensitivity(cap),
                               stage="dpdk.dk2_series", proof=PROOF,
                               note=f"dK-2 series with degrees capped at D={cap}: L1 sensitivity 4D-3")
        series = norm_sub(noisy, total=max(0.0, min(m_noisy, n * (n - 1) / 2)))
        return FittedDPdK(n, {"dk2": series}, {"degree_cap": cap}, public_assumptions=public,
                          reproducible_seed_used=used_seed)
