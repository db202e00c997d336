r"""DP degree-sequence Chung-Lu generator (edge adjacency).

Two Laplace releases, then post-processing only:

1. the edge count :math:`\tilde m = m + \mathrm{Lap}(1/\varepsilon_m)` (one edge changes :math:`m` by 1);
2. the degree sequence with L1 sensitivity 2 (one edge changes two degrees by one each):

   * ``degree_query="sorted"`` (default): the *sorted* degree sequence :math:`S(G)` of Hay et al. (2009, "Accurate
     estimation of the degree distribution of private networks", ICDM), :math:`\|S(G)-S(G')\|_1 \le 2`, noised with
     :math:`\mathrm{Lap}(2/\varepsilon_d)` and post-processed by isotonic regression (their constrained inference);
     the sampler assigns the released degrees to nodes by a uniformly random permutation.
   * ``degree_query="per_node"``: degrees in node order, :math:`\mathrm{Lap}(2/\varepsilon_d)`, clipped at 0.

The graph is then drawn from the Chung-Lu model with a fixed edge count: :math:`\tilde m` distinct edges whose
endpoints are drawn proportionally to the released degrees (Chung & Lu 2002), sparse.
Privacy: basic sequential composition, :math:`\varepsilon = \varepsilon_m + \varepsilon_d`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import GENERATORS, GeneratorFitContext, GraphGenerator
from graphrelease.generators.classical_common import (
    ReleasedParams,
    charge_laplace,
    isotonic_increasing,
    sample_block_edges,
    split_fractions,
    graph_from_keys,
)
from graphrelease.graph import Graph

PROOF = "docs/privacy.md#dp-chung-lu"


class FittedChungLu(ReleasedParams):
    kind: ClassVar[str] = "chung_lu"

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        n = self.num_nodes
        degrees = np.asarray(self.arrays["degrees"], dtype=np.float64)
        if self.config.get("degree_query") == "sorted":
            degrees = degrees[rng.permutation(n)]
        m = int(self.arrays["num_edges"])
        m = min(m, n * (n - 1) // 2)
        keys = sample_block_edges(n, np.zeros(n, dtype=np.int64), degrees, np.array([0]), np.array([0]),
                                  np.array([m]), rng)
        return graph_from_keys(n, keys, name=f"{self.kind}_synthetic")


@GENERATORS.register("chung_lu")
class DPChungLu(GraphGenerator):
    """DP degree-sequence Chung-Lu. Keyword-only hyper-parameters:

    count_fraction:
        Share of epsilon spent on the edge count (rest on the degree sequence).
    degree_query:
        ``"sorted"`` (Hay et al. sorted sequence + isotonic regression) or ``"per_node"``.
    seed:
        Noise seed for reproducibility tests only (the certificate then says ``guarantee: none``).
    """

    def __init__(self, *, count_fraction: float = 0.05, degree_query: str = "sorted", seed: int | None = None
                 ) -> None:
        if not (0.0 < count_fraction < 1.0):
            raise OptionError(f"count_fraction must be in (0, 1), got {count_fraction}")
        if degree_query not in ("sorted", "per_node"):
            raise OptionError(f"degree_query must be 'sorted' or 'per_node', got {degree_query!r}")
        self.count_fraction = float(count_fraction)
        self.degree_query = degree_query
        self.seed = seed

    def _fit(self, data: Graph, budget: Any, ctx: GeneratorFitContext, *, progress: Any = None) -> FittedChungLu:
        graph, eps, rng, used_seed = data, ctx.epsilon, ctx.rng, ctx.used_seed
        split = split_fractions({"count": self.count_fraction, "degrees": 1.0 - self.count_fraction}, self.name)
        n = graph.num_nodes
        m_noisy = charge_laplace(budget, rng, float(graph.num_edges), epsilon=eps * split["count"], sensitivity=1.0,
                                 stage="chung_lu.edge_count", proof=PROOF)
        deg = graph.degrees().astype(np.float64)
        if self.degree_query == "sorted":
            noisy = charge_laplace(budget, rng, np.sort(deg), epsilon=eps * split["degrees"], sensitivity=2.0,
                                   stage="chung_lu.sorted_degrees", proof=PROOF,
                                   note="Hay et al. 2009 sorted degree sequence, L1 sensitivity 2")
            degrees = isotonic_increasing(noisy)
        else:
            noisy = charge_laplace(budget, rng, deg, epsilon=eps * split["degrees"], sensitivity=2.0,
                                   stage="chung_lu.degrees", proof=PROOF, note="per-node degrees, L1 sensitivity 2")
            degrees = noisy
        degrees = np.clip(degrees, 0.0, n - 1)
        m = int(np.clip(np.rint(m_noisy), 0, n * (n - 1) // 2))
        return FittedChungLu(
            n, {"degrees": degrees, "num_edges": np.array(m, dtype=np.int64)},
            {"degree_query": self.degree_query, "count_fraction": self.count_fraction},
            reproducible_seed_used=used_seed,
        )
