r"""TmF, the top-m filter (Nguyen, Imine & Rusinowitch 2015, "Differentially private publication of social graphs
at linear cost", ASONAM), sparse and exact in distribution.

Mechanism (edge adjacency; the upper triangle of :math:`A` is a vector of :math:`N = n(n-1)/2` cells and one edge
changes one cell by 1, L1 sensitivity 1):

1. :math:`\tilde m = m + \mathrm{Lap}(1/\varepsilon_t)`;
2. every cell gets :math:`\tilde A_{ij} = A_{ij} + \mathrm{Lap}(1/\varepsilon_2)`, :math:`\varepsilon_2 =
   \varepsilon - \varepsilon_t`, and the released graph is :math:`\{ij : \tilde A_{ij} > \theta\}` with the threshold
   :math:`\theta` chosen (from :math:`\tilde m` only) so that the expected number of released cells is
   :math:`\tilde m`: for :math:`\theta \ge 1`,
   :math:`\tfrac12 e^{-\varepsilon_2\theta}(\tilde m e^{\varepsilon_2} + N - \tilde m) = \tilde m`.

Linear cost: the :math:`m` one-cells are tested one by one; the zero-cells pass independently with probability
:math:`p_0 = P(\mathrm{Lap}(1/\varepsilon_2) > \theta)`, so the number of passing zero-cells is
:math:`\mathrm{Bin}(N - m, p_0)` and, given that number, the passing set is a uniform subset of the zero-cells. We
draw exactly that (binomial count, uniform placement by rejection) — the same output law as thresholding all
:math:`N` cells, so the privacy proof of step 2 (Laplace mechanism + post-processing) applies verbatim.
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
    laplace_entry,
    pair_keys,
    sample_uniform_nonedges,
    split_fractions,
)
from graphrelease.graph import Graph

PROOF = "docs/privacy.md#tmf"


def laplace_tail(x: np.ndarray | float, scale: float) -> np.ndarray:
    """P(Lap(0, scale) > x)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= 0, 0.5 * np.exp(-x / scale), 1.0 - 0.5 * np.exp(x / scale))


def tmf_threshold(m_noisy: float, total_pairs: int, epsilon: float) -> float:
    """Threshold theta with m~ P(1+L > theta) + (N - m~) P(L > theta) = m~ (L ~ Lap(1/epsilon)); post-processing."""
    m = float(np.clip(m_noisy, 1.0, total_pairs / 2.0))
    n0 = total_pairs - m
    closed = math.log((m * math.exp(epsilon) + n0) / (2.0 * m)) / epsilon
    if closed >= 1.0:
        return closed
    lo, hi = -50.0 / epsilon, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        expected = m * laplace_tail(mid - 1.0, 1.0 / epsilon) + n0 * laplace_tail(mid, 1.0 / epsilon)
        lo, hi = (mid, hi) if expected > m else (lo, mid)
    return 0.5 * (lo + hi)


class FittedTmF(ReleasedParams):
    """The released graph itself (TmF's output is the perturbed adjacency)."""

    kind: ClassVar[str] = "tmf"
    single_output: ClassVar[bool] = True

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        return Graph(self.num_nodes, self.arrays["edges"].reshape(-1, 2), name=f"{self.kind}_synthetic")


def threshold_filter(graph: Graph, budget: Any, rng: np.random.Generator, *, epsilon: float, theta: float,
                     stage: str, proof: str, note: str = "") -> np.ndarray:
    r"""Release :math:`\{ij: A_{ij} + \mathrm{Lap}(1/\varepsilon) > \theta\}` over all node pairs, sparsely.

    Charges one Laplace entry (L1 sensitivity 1 over the upper-triangle cell vector) before sampling.
    Returns sorted pair keys of the released cells.
    """
    n = graph.num_nodes
    total_pairs = n * (n - 1) // 2
    budget.charge(laplace_entry(stage, epsilon, 1.0, proof, note))
    scale = 1.0 / epsilon
    m = graph.num_edges
    # One-cells: each passes iff 1 + Lap > theta.
    passed = (1.0 + rng.laplace(0.0, scale, size=m)) > theta
    kept = pair_keys(graph.edges[passed], n)
    # Zero-cells: Bin(N - m, p0) of them pass, a uniform subset of the zero-cells.
    p0 = float(laplace_tail(theta, scale))
    count0 = int(rng.binomial(total_pairs - m, p0)) if total_pairs - m > 0 else 0
    if count0 > 50_000_000:
        raise OptionError(
            f"{stage}: the threshold would release about {count0} random edges; raise epsilon or the count budget"
        )
    existing = np.sort(pair_keys(graph.edges, n))
    added = sample_uniform_nonedges(n, count0, existing, rng)
    return np.unique(np.concatenate([kept, added]))


@GENERATORS.register("tmf")
class TmF(GraphGenerator):
    """TmF (top-m filter). ``count_fraction`` is the share of epsilon spent on the edge count (paper's
    :math:`\\varepsilon_t`); ``seed`` only for reproducibility tests (certificate then says ``guarantee: none``)."""

    def __init__(self, *, count_fraction: float = 0.05, seed: int | None = None) -> None:
        if not (0.0 < count_fraction < 1.0):
            raise OptionError(f"count_fraction must be in (0, 1), got {count_fraction}")
        self.count_fraction = float(count_fraction)
        self.seed = seed

    def _fit(self, data: Graph, budget: Any, ctx: GeneratorFitContext, *, progress: Any = None) -> FittedTmF:
        graph, eps, rng, used_seed = data, ctx.epsilon, ctx.rng, ctx.used_seed
        split = split_fractions({"count": self.count_fraction, "cells": 1.0 - self.count_fraction}, self.name)
        n = graph.num_nodes
        total_pairs = n * (n - 1) // 2
        m_noisy = float(charge_laplace(budget, rng, float(graph.num_edges), epsilon=eps * split["count"],
                                       sensitivity=1.0, stage="tmf.edge_count", proof=PROOF))
        eps2 = eps * split["cells"]
        theta = tmf_threshold(m_noisy, total_pairs, eps2)
        keys = threshold_filter(graph, budget, rng, epsilon=eps2, theta=theta, stage="tmf.cells", proof=PROOF,
                                note="Laplace on every adjacency cell, threshold from the noisy edge count")
        out = graph_from_keys(n, keys, name="tmf_synthetic")
        return FittedTmF(n, {"edges": out.edges}, {"count_fraction": self.count_fraction, "theta": theta},
                         reproducible_seed_used=used_seed)
