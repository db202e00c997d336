r"""Randomized response on the adjacency matrix (edge adjacency), sparse.

Every upper-triangle cell is reported independently: an edge is kept with probability :math:`p`, a non-edge becomes
an edge with probability :math:`q`. One edge changes one cell, so the whole release is :math:`\varepsilon`-DP iff
one cell's report is (parallel composition over disjoint cells), i.e. iff

.. math:: p / q \le e^{\varepsilon_r} \quad\text{and}\quad (1-q)/(1-p) \le e^{\varepsilon_r}.

Modes:

* ``"edgerand"`` (default; density-preserving RR in the style of EdgeRand, Wu et al. 2022 "LinkTeller", and
  Mülle et al. 2015): spend :math:`\varepsilon_m` on :math:`\tilde m = m + \mathrm{Lap}(1/\varepsilon_m)`, then
  choose :math:`q = p e^{-a}` and :math:`p` so that the expected output size is :math:`\tilde m`,
  :math:`p(\tilde m + (N - \tilde m) e^{-a}) = \tilde m`, and the bounded range is exactly
  :math:`\varepsilon_r`: :math:`a + \ln((1-q)/(1-p)) = \varepsilon_r`. Total
  :math:`\varepsilon = \varepsilon_m + \varepsilon_r`.
* ``"symmetric"``: Warner's randomized response, :math:`p = 1 - q = e^{\varepsilon/2}/(1+e^{\varepsilon/2})`, all
  the budget on the cells. The output has about :math:`qN` edges (dense for sparse inputs); refused when that
  exceeds ``max_edges``.

Sparse: the :math:`m` edges are kept by coin flips; the number of flipped non-edges is
:math:`\mathrm{Bin}(N - m, q)` and, given it, the flipped set is a uniform subset of non-edges (same law as flipping
every cell). Accounting: one cell report is an exponential mechanism with bounded range
:math:`\ln(p/q) + \ln((1-q)/(1-p))` (Durfee & Rogers 2019), recorded as an ``exponential`` ledger entry with that
epsilon. The probabilities are chosen so that this range equals :math:`\varepsilon_r` exactly; for sparse
``edgerand`` it is :math:`\ln(p/q) + O(p)`, so nothing is lost, while ``symmetric`` RR uses log-ratios
:math:`\pm\varepsilon_r/2` (bounded-range accounting of a symmetric flip).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import GENERATORS, GeneratorFitContext, GraphGenerator
from graphrelease.generators.classical_common import (
    ReleasedParams,
    charge_laplace,
    graph_from_keys,
    pair_keys,
    sample_uniform_nonedges,
    split_fractions,
)
from graphrelease.graph import Graph
from graphrelease.privacy.ledger import LedgerEntry

PROOF = "docs/privacy.md#randomized-response"
#: A binary cell report with log-ratios ln(p/q) at output 1 and ln((1-p)/(1-q)) at output 0 is an
#: exponential mechanism (utility 1[o = A_ij], base measure (q, 1-q)) whose bounded range is
#: ln(p/q) + ln((1-q)/(1-p)); the accountants analyse "exponential" entries as epsilon-bounded-range.
CELL_MECHANISM = "exponential"


def bounded_range_epsilon(p: float, q: float) -> float:
    """Bounded range of one cell report: ln(p/q) + ln((1-q)/(1-p)) (log-ratio at output 1 minus at output 0)."""
    return math.log(p / q) + math.log1p(-q) - math.log1p(-p)


def rr_probabilities(mode: str, epsilon_cells: float, m_noisy: float | None, total_pairs: int) -> tuple[float, float]:
    """(p, q) whose cell report is exactly ``epsilon_cells``-bounded-range; post-processing of the released count.

    ``symmetric``: p = 1 - q, log-ratios +-epsilon/2. ``edgerand``: solve jointly
    p (m~ + (N - m~) e^{-a}) = m~ (expected output size m~) and a + ln((1-q)/(1-p)) = epsilon with q = p e^{-a}.
    """
    if mode == "symmetric":
        a = epsilon_cells / 2.0
        p = math.exp(a) / (1.0 + math.exp(a))
        return p, 1.0 - p
    m = float(np.clip(m_noisy if m_noisy is not None else 1.0, 1.0, total_pairs / 2.0))
    a = epsilon_cells
    p = q = 0.0
    for _ in range(200):
        p = m / (m + (total_pairs - m) * math.exp(-a))
        # keep p below the symmetric point so both log-ratios stay positive
        p = min(p, math.exp(a / 2) / (1 + math.exp(a / 2)))
        q = p * math.exp(-a)
        br = bounded_range_epsilon(p, q)
        a_new = a - (br - epsilon_cells)
        if abs(a_new - a) < 1e-13:
            break
        a = a_new
    # exact BR <= epsilon_cells by a final shrink of q if iteration left a rounding excess
    while bounded_range_epsilon(p, q) > epsilon_cells:
        q *= 1.0 + 1e-12
    return p, q


class FittedRandomizedResponse(ReleasedParams):
    kind: ClassVar[str] = "randomized_response"
    single_output: ClassVar[bool] = True

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        return Graph(self.num_nodes, self.arrays["edges"].reshape(-1, 2), name=f"{self.kind}_synthetic")


@GENERATORS.register("randomized_response")
class RandomizedResponse(GraphGenerator):
    """Randomized response on adjacency cells; ``mode="edgerand"`` (density preserving) or ``"symmetric"``.

    ``count_fraction``: share of epsilon for the noisy edge count (edgerand only). ``max_edges``: refuse a
    symmetric release larger than this. ``seed``: reproducibility tests only (``guarantee: none``).
    """

    def __init__(self, *, mode: str = "edgerand", count_fraction: float = 0.05, max_edges: int = 20_000_000,
                 seed: int | None = None) -> None:
        if mode not in ("edgerand", "symmetric"):
            raise OptionError(f"mode must be 'edgerand' or 'symmetric', got {mode!r}")
        if not (0.0 < count_fraction < 1.0):
            raise OptionError(f"count_fraction must be in (0, 1), got {count_fraction}")
        self.mode = mode
        self.count_fraction = float(count_fraction)
        self.max_edges = int(max_edges)
        self.seed = seed

    def _fit(self, data: Graph, budget: Any, ctx: GeneratorFitContext, *, progress: Any = None) -> FittedRandomizedResponse:
        graph, eps, rng, used_seed = data, ctx.epsilon, ctx.rng, ctx.used_seed
        n = graph.num_nodes
        total_pairs = n * (n - 1) // 2
        m_noisy = None
        if self.mode == "symmetric":
            eps_cells = eps
            p, q = rr_probabilities("symmetric", eps_cells, None, total_pairs)
            if q * total_pairs > self.max_edges:
                raise OptionError(
                    f"symmetric randomized response at epsilon={eps} would release about {int(q * total_pairs)} "
                    f"edges (> max_edges={self.max_edges}); use mode='edgerand'"
                )
        if self.mode == "edgerand":
            split = split_fractions({"count": self.count_fraction, "cells": 1.0 - self.count_fraction}, self.name)
            m_noisy = float(charge_laplace(budget, rng, float(graph.num_edges), epsilon=eps * split["count"],
                                           sensitivity=1.0, stage="randomized_response.edge_count", proof=PROOF))
            eps_cells = eps * split["cells"]
            p, q = rr_probabilities("edgerand", eps_cells, m_noisy, total_pairs)
        budget.charge(LedgerEntry(
            mechanism=CELL_MECHANISM, stage="randomized_response.cells",
            # the two probabilities let `certificate verify` recompute the bounded range
            params={"epsilon": float(eps_cells), "keep_probability": float(p), "flip_in_probability": float(q)},
            sensitivity=1.0, proof=PROOF,
            note=f"each adjacency cell reported with keep p={p:.6g}, flip-in q={q:.6g}: an exponential mechanism "
                 "with bounded range ln(p/q)+ln((1-q)/(1-p)) <= epsilon; one edge changes one cell",
        ))
        m = graph.num_edges
        kept = pair_keys(graph.edges[rng.random(m) < p], n)
        count0 = int(rng.binomial(total_pairs - m, q)) if total_pairs > m else 0
        added = sample_uniform_nonedges(n, count0, np.sort(pair_keys(graph.edges, n)), rng)
        out = graph_from_keys(n, np.concatenate([kept, added]), name="randomized_response_synthetic")
        return FittedRandomizedResponse(
            n, {"edges": out.edges}, {"mode": self.mode, "p": p, "q": q}, reproducible_seed_used=used_seed,
        )
