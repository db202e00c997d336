r"""DP DC-SBM with BTER affinity groups ("dp_bter"), edge adjacency, no public node data (issue 15).

``dp_dcsbm`` keeps edges and degrees but loses triangles, clustering and connectivity: a degree-corrected block
model closes almost no wedges, and Chung-Lu endpoints leave about :math:`e^{-1}` of the degree-one nodes isolated.
This generator measures what it needs with the DP statistics of :mod:`graphrelease.generators.dp_stats` and builds a
graph that matches them. Releases (basic sequential composition; default shares of epsilon in brackets):

1. Degrees [0.25 sorted + 0.15 per-node rank]: Hay et al.'s sorted sequence for the values, per-node noisy degrees
   for which node gets which value (:func:`~graphrelease.generators.dp_stats.release_degrees`).
2. Blocks [0.05]: one exponential mechanism on modularity in edge units (utility sensitivity 4,
   :func:`graphrelease.generators.dcsbm.modularity_utility`) chooses among candidate partitions that are public or
   already released: log-binned released degrees (degree classes), contiguous runs of the public node numbering
   (8, 16, 32 blocks; the numbering is public under edge adjacency and crawl orders often carry locality), and a
   single block. No labels or features are read.
3. Block-pair edge counts [0.15]: Laplace, L1 sensitivity 1, norm-sub; their sum is the edge count.
4. Triangles [0.35]: the smoothly capped count :math:`T_D`, two stages
   (:func:`~graphrelease.generators.dp_stats.release_triangles`, sensitivity :math:`2D`).
5. Components [0.05]: the number of connected components, sensitivity 1.

Sampling (post-processing; Seshadhri, Kolda & Pinar 2012, BTER, with the Chung-Lu phase replaced by the DC-SBM):
(a) inside every block, nodes of similar released degree form affinity groups of ``d_min + 1`` nodes, each an
Erdos-Renyi graph of one density :math:`\rho` solved so that the expected triangle count :math:`\rho^3 \sum_g
\binom{s_g}{3}` plus the triangles of the rest matches the released count (one pilot draw corrects for the latter);
(b) the remaining edges of every block pair (released count minus the affinity edges) are drawn DC-SBM style with
endpoints proportional to each node's excess degree (released degree minus expected affinity degree);
(c) small components are joined to the largest until the released component count is reached.
Time and memory are linear in the edges.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import GENERATORS, GraphGenerator
from graphrelease.generators.classical_common import (
    NODE_COUNT_PUBLIC,
    ReleasedParams,
    round_preserving_sum,
    charge_laplace,
    graph_from_keys,
    make_rng,
    norm_sub,
    require_single_graph,
    sample_block_edges,
    split_fractions,
    total_epsilon,
)
from graphrelease.generators.affinity import (
    affinity_groups,
    group_densities,
    internal_degrees,
    merge_components,
    sample_affinity_edges,
    triangle_count_keys,
)
from graphrelease.generators.community_dp import group_pair_counts, relabel
from graphrelease.generators.dcsbm import MODULARITY_UTILITY_SENSITIVITY, modularity_utility
from graphrelease.generators.dp_stats import (
    release_component_count,
    release_degrees,
    release_triangles,
)
from graphrelease.graph import Graph, GraphCollection
from graphrelease.privacy.ledger import LedgerEntry

PROOF = "docs/privacy.md#dp-bter"

#: Default budget shares (sum 1).
DEFAULT_FRACTIONS = {"sorted_degrees": 0.25, "rank_degrees": 0.15, "select": 0.05, "block_counts": 0.15,
                     "triangles": 0.35, "components": 0.05}
#: Candidate block counts for contiguous runs of the public node numbering.
ORDER_BLOCKS = (8, 16, 32)


def degree_classes(degrees: np.ndarray) -> np.ndarray:
    """Log-binned (released) degrees: bins 0, 1, 2, 3, then ratio 1.5 (public edges; post-processing)."""
    d = np.clip(np.asarray(degrees, dtype=np.float64), 0.0, None)
    edges = [0.5, 1.5, 2.5, 3.5]
    top = float(d.max(initial=1.0))
    while edges[-1] < top:
        edges.append(edges[-1] * 1.5)
    return relabel(np.searchsorted(np.asarray(edges), d))


def order_blocks(n: int, k: int) -> np.ndarray:
    """``k`` contiguous runs of the public node numbering 0..n-1 (as equal as possible)."""
    return relabel((np.arange(n, dtype=np.int64) * int(k)) // max(n, 1))


class FittedBTER(ReleasedParams):
    kind: ClassVar[str] = "dp_bter"

    def _draw(self, rng: np.random.Generator, order: np.ndarray, starts: np.ndarray, rho: np.ndarray) -> np.ndarray:
        n = self.num_nodes
        labels = self.arrays["labels"].astype(np.int64)
        k = int(labels.max()) + 1
        degrees = self.arrays["degrees"].astype(np.float64)
        counts = self.arrays["block_counts"].astype(np.int64)
        inner = sample_affinity_edges(n, order, starts, rho, rng)
        # Affinity edges lie inside one block: take them off that block's diagonal count, then spread the remaining
        # edge total over the block pairs in proportion to what is left (edge count kept).
        iu, ju = np.triu_indices(k)
        diag_pos = np.flatnonzero(iu == ju)
        per_block = np.bincount(labels[inner // n], minlength=k)
        rest = counts.astype(np.float64).copy()
        rest[diag_pos] = np.maximum(rest[diag_pos] - per_block, 0.0)
        total = max(int(counts.sum()) - inner.size, 0)
        rest = round_preserving_sum(rest * (total / rest.sum()) if rest.sum() > 0 else rest, total)
        excess = np.maximum(degrees - internal_degrees(n, order, starts, rho), 0.0)
        outer = sample_block_edges(n, labels, excess, iu, ju, rest, rng, exclude_sorted_keys=inner)
        return np.union1d(inner, outer)

    def _sample_one(self, rng: np.random.Generator) -> Graph:
        n = self.num_nodes
        labels = self.arrays["labels"].astype(np.int64)
        degrees = self.arrays["degrees"].astype(np.float64)
        target = float(self.arrays["triangles"])
        share = float(self.arrays["capped_share"])
        cap = float(self.config.get("triangle_scale_cap", 2.0))
        # Affinity edges may use most of the edge budget (at most 0.9 m); the rest joins the groups.
        max_edges = 0.9 * float(self.arrays["block_counts"].sum())
        power = self.config.get("density_power")
        order, starts = affinity_groups(degrees, labels, rng)
        rho = group_densities(order, starts, degrees, target, share, cap, max_edges, power)
        keys = self._draw(rng, order, starts, rho)
        got = triangle_count_keys(n, keys)
        sizes = np.diff(starts).astype(np.float64)
        inside = float(np.sum(rho ** 3 * sizes * (sizes - 1) * (sizes - 2) / 6))
        if inside > 0 and abs(got - target) > 0.05 * target:
            # One pilot correction: the triangles not made inside groups (phase 2, mixed) are about got - inside.
            other = max(got - inside, 0.0)
            rho = group_densities(order, starts, degrees, max(target - other, 0.0), share, cap, max_edges,
                                  power)
            keys = self._draw(rng, order, starts, rho)
        keys = merge_components(n, keys, float(self.arrays["components"]), degrees, rng)
        return graph_from_keys(n, keys, name=f"{self.kind}_synthetic")


@GENERATORS.register("dp_bter")
class DPBTER(GraphGenerator):
    """DP DC-SBM with BTER affinity groups matched to a DP triangle count (see module docstring).

    Keyword-only: ``fractions`` (budget shares, keys of :data:`DEFAULT_FRACTIONS`, summing to 1), ``use_node_order`` (offer contiguous runs of the public node numbering as candidate blocks), ``seed``
    (reproducibility tests only: the certificate then says ``guarantee: none``).
    """

    def __init__(self, *, fractions: dict[str, float] | None = None, use_node_order: bool = True,
                 density_power: float | None = 0.0, seed: int | None = None) -> None:
        given = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
        if set(given) != set(DEFAULT_FRACTIONS):
            raise OptionError(f"fractions must have the keys {sorted(DEFAULT_FRACTIONS)}, got {sorted(given)}")
        self.fractions = split_fractions({k: float(v) for k, v in given.items()}, "dp_bter")
        self.use_node_order = bool(use_node_order)
        if density_power is not None and not (-1.0 <= float(density_power) <= 2.0):
            raise OptionError(f"density_power must be in [-1, 2] or None (fit), got {density_power}")
        self.density_power = None if density_power is None else float(density_power)
        self.seed = seed

    def _candidates(self, n: int, degrees: np.ndarray) -> list[tuple[str, np.ndarray]]:
        out = [("single_block", np.zeros(n, dtype=np.int64)), ("degree_classes", degree_classes(degrees))]
        if self.use_node_order:
            out += [(f"node_order:{k}", order_blocks(n, k)) for k in ORDER_BLOCKS if k < n]
        return out

    def fit(self, data: Graph | GraphCollection, budget: Any, *, progress: Any = None) -> FittedBTER:
        graph = require_single_graph(data, self.name)
        eps = total_epsilon(budget, self.name)
        rng, used_seed = make_rng(self.seed)
        f = {k: eps * v for k, v in self.fractions.items()}
        n = graph.num_nodes
        public = dict(NODE_COUNT_PUBLIC)
        deg = release_degrees(graph, budget, rng, epsilon_sorted=f["sorted_degrees"], epsilon_rank=f["rank_degrees"],
                              stage="dp_bter")
        candidates = self._candidates(n, deg.values)
        budget.charge(LedgerEntry(
            mechanism="exponential", stage="dp_bter.partition_select", params={"epsilon": float(f["select"])},
            sensitivity=MODULARITY_UTILITY_SENSITIVITY, proof=PROOF,
            note="choose the blocks among public/released candidate partitions by modularity in edge units",
        ))
        utility = np.array([modularity_utility(graph, lab) for _, lab in candidates])
        pick = int(np.argmax(f["select"] * utility / (2.0 * MODULARITY_UTILITY_SENSITIVITY)
                             + rng.gumbel(size=utility.size)))
        mode, labels = candidates[pick]
        if self.use_node_order:
            public["node_order"] = ("the node numbering is public under edge adjacency; contiguous runs of it are "
                                    "candidate blocks")
        labels = relabel(labels)
        k = int(labels.max()) + 1
        noisy_counts = charge_laplace(budget, rng, group_pair_counts(graph, labels, k), epsilon=f["block_counts"],
                                      sensitivity=1.0, stage="dp_bter.block_counts", proof=PROOF,
                                      note=f"{k}x{k} block-pair edge counts (upper triangle with diagonal)")
        block_counts = norm_sub(noisy_counts)
        tri = release_triangles(graph, budget, rng, epsilon=f["triangles"], degrees=deg.values, stage="dp_bter")
        comps = release_component_count(graph, budget, rng, epsilon=f["components"], stage="dp_bter")
        return FittedBTER(
            n,
            {"labels": labels, "block_counts": block_counts, "degrees": deg.values,
             "triangles": np.array(tri.triangles), "components": np.array(comps),
             # Share of the triangles whose top degree is below the first-stage cap (both numbers released).
             "capped_share": np.array(float(np.clip(tri.raw_scale / max(tri.triangles, 1.0), 0.0, 1.0)))},
            {"partition": mode, "fractions": self.fractions, "use_node_order": self.use_node_order,
             "density_power": self.density_power,
             "triangle_cap": tri.cap, "triangle_scale_cap": tri.cap_scale},
            public_assumptions=public, reproducible_seed_used=used_seed,
        )
