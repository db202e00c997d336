r"""A DP community partition from the edges alone, independent of the node numbering (edge adjacency, issue 15).

Degree-ordered label sweeps. The nodes are ranked by their *released* degrees (descending, ties broken by public
randomness), so the order is post-processing of an earlier release and carries no information about the numbering.
Every node starts with a uniformly random label out of ``K``. Up to two sweeps follow:

* **down** (highest rank first): node :math:`i` re-chooses its label by report-noisy-max with exponential noise
  (equivalently permute-and-flip, McKenna & Sheldon 2020; Ding et al. 2021) on the utility

  .. math:: u_i(C) = k^{\uparrow}_{i,C} - \gamma\, \hat d_i\, \hat f_C,

  :math:`k^{\uparrow}_{i,C}` = neighbours of :math:`i` ranked *above* it whose label (already chosen in this sweep)
  is :math:`C`; :math:`\hat d_i` its released degree and :math:`\hat f_C` the share of released degree currently
  labelled :math:`C` (both functions of released values and of earlier outputs). Hubs choose first and the nodes
  below follow them: the order breaks the symmetry between labels that a random start alone cannot break at small
  epsilon.
* **up** (lowest rank first, optional; ``dp_bter`` gives it no epsilon): node :math:`i` reads the neighbours ranked
  *below* it, with a prior ``stickiness`` on its down-sweep label.

Why exponential noise rather than the exponential mechanism: at the same epsilon, for a gap :math:`g` between two
labels, the exponential mechanism picks the better one with probability :math:`\approx 1/2 + \varepsilon g/4` and
report-noisy-max with exponential noise with :math:`\approx 1/2 + \varepsilon g/2` — twice the signal per unit of
epsilon in the regime where the sweeps work (measured: Facebook partition NMI 0.166 -> 0.270 at partition epsilon
0.31; ``reports/structure_fidelity.md``).

Privacy (edge adjacency; proof in ``docs/privacy.md#dp-partition``). Fix an edge :math:`\{u, v\}` with :math:`u`
ranked above :math:`v` (the ranking is an earlier release). In the down sweep only :math:`v`'s selection reads it;
in the up sweep only :math:`u`'s. In that one selection it adds 1 to one coordinate of the utility and leaves the
others (the penalty reads only released values): the utility is *monotone* with sensitivity 1, and report-noisy-max
with noise :math:`\mathrm{Exp}(\text{scale } 1/\varepsilon)` is then :math:`\varepsilon`-DP (proof in the docs; it is
not :math:`\varepsilon`-bounded range, so the ledger entry is ``permute_and_flip``, analysed as generic pure DP).
Every other selection has the same conditional law under both graphs given the earlier outputs, so by adaptive
composition (Dwork & Roth 2014, Thm. 3.16) the down sweep costs :math:`\varepsilon_\downarrow` and the up sweep
:math:`\varepsilon_\uparrow`: one ledger entry each, count 1, sensitivity 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.privacy.ledger import LedgerEntry

#: Ledger mechanism of one sweep per ``selection``: report-noisy-max with exponential noise (= permute-and-flip, the
#: default) or the exponential mechanism by Gumbel-max (the earlier sweeps; epsilon-bounded range).
MECHANISMS = {"noisy_max": "permute_and_flip", "exponential": "exponential"}
#: Utility sensitivity of one sweep's selection (monotone: one edge adds 1 to one coordinate of one selection).
SWEEP_SENSITIVITY = 1.0
#: Labels per unit of ``epsilon * mean degree`` in :func:`label_count`. Measured on permuted Facebook and Chameleon at
#: partition epsilon 0.31 and 0.4 (down sweep only, exponential noise; 3-5 runs, ``reports/structure_fidelity.md``):
#: margins 1.5 / 2.1 / 3.0 gave Facebook NMI 0.256 (3 runs) / 0.292 / 0.269 (5 runs) at 0.31, Chameleon 0.159 /
#: 0.182 / 0.138.
#: Label propagation from random labels orders only when ``eps * d / K`` exceeds about 1, so the margin is > 1.
ORDERING_MARGIN = 2.1


def label_count(epsilon_down: float, mean_degree: float, max_labels: int = 32) -> int:
    """Number of labels ``K`` for the sweeps: the largest with ``epsilon_down * mean_degree / K >= ORDERING_MARGIN``,
    in [2, max_labels]. With ``K`` labels a node must out-weigh ``K - 1`` alternatives; linearising the sweep's choice
    around uniform labels gives a growth factor ``eps * d / K`` per step, so more labels than that never separate
    (the margin, measured, leaves room for the noise). ``mean_degree`` must be a released value."""
    k = int(np.floor(float(epsilon_down) * max(float(mean_degree), 0.0) / ORDERING_MARGIN))
    return int(np.clip(k, 2, max(int(max_labels), 2)))


def sweeps_can_separate(epsilon_down: float, mean_degree: float, min_labels: int = 3) -> bool:
    """Whether :func:`label_count` allows at least ``min_labels`` labels (two labels from a sweep at the ordering
    threshold carry almost no community signal: measured NMI <= 0.03 against Louvain on Cora and LastFM; with the
    margin 2.1 and the whole partition budget in the down sweep the threshold on the mean degree is where it was
    with margin 1.5 and 70% of it)."""
    return float(epsilon_down) * max(float(mean_degree), 0.0) / ORDERING_MARGIN >= min_labels


def sweep_epsilon_needed(mean_degree: float, min_labels: int = 3) -> float:
    """The smallest down-sweep epsilon at which :func:`sweeps_can_separate` holds for ``mean_degree`` (``inf`` for
    a graph without edges): the same rule, solved for epsilon, for telling a data owner what would let the sweeps
    run."""
    d = max(float(mean_degree), 0.0)
    return min_labels * ORDERING_MARGIN / d if d > 0 else float("inf")


def degree_rank(released_degrees: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rank 0 = largest released degree; ties broken by public randomness (post-processing)."""
    d = np.asarray(released_degrees, dtype=np.float64)
    order = np.lexsort((rng.random(d.size), -d))
    rank = np.empty(d.size, dtype=np.int64)
    rank[order] = np.arange(d.size)
    return rank


def oriented_neighbours(graph: Graph, rank: np.ndarray, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of each node's neighbours ranked above it (``"down"``) or below it (``"up"``)."""
    csr = graph.to_csr()
    rows = np.repeat(np.arange(graph.num_nodes), np.diff(csr.indptr))
    cols = csr.indices
    keep = rank[cols] < rank[rows] if direction == "down" else rank[cols] > rank[rows]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=graph.num_nodes))])
    return indptr.astype(np.int64), cols[keep].astype(np.int64)


def oriented_counts(oriented: tuple[np.ndarray, np.ndarray], labels: np.ndarray, node: int, num_labels: int
                    ) -> np.ndarray:
    """``k_{node, C}`` over the neighbours in ``oriented`` (:func:`oriented_neighbours`): the only data a sweep's
    selection reads (the privacy proof's query; probed in ``tests/generators/test_dp_partition.py``)."""
    indptr, indices = oriented
    return np.bincount(labels[indices[indptr[node]:indptr[node + 1]]], minlength=num_labels).astype(np.float64)


def _sweep(graph: Graph, labels: np.ndarray, rank: np.ndarray, weights: np.ndarray, rng: np.random.Generator, *,
           scale: float, direction: str, num_labels: int, volume_weight: float, stickiness: float,
           selection: str) -> None:
    oriented = oriented_neighbours(graph, rank, direction)
    order = np.argsort(rank)
    if direction == "up":
        order = order[::-1]
    vol = np.bincount(labels, weights=weights, minlength=num_labels).astype(np.float64)
    penalty = float(volume_weight) * weights / max(float(weights.sum()), 1e-12)
    # Report-noisy-max: argmax of u + Exp(scale); the exponential mechanism on a monotone utility: argmax of
    # u + Gumbel(scale) (Gumbel-max). ``scale`` is the one the ledger entry states (sensitivity / epsilon), so the
    # verifier's recomputed epsilon is that of the noise drawn here. Drawn up front (one vectorised call, the same
    # law). The stickiness prior is a data-independent bias on the current label's score, in units of the noise
    # scale.
    size = (labels.size, num_labels)
    noise = rng.exponential(scale, size=size) if selection == "noisy_max" else rng.gumbel(0.0, scale, size=size)
    # Sequential on purpose: each choice reads the labels chosen before it in this sweep.
    for step, i in enumerate(order.tolist()):
        vol[labels[i]] -= weights[i]
        score = oriented_counts(oriented, labels, i, num_labels) - penalty[i] * vol + noise[step]
        if stickiness:
            score[labels[i]] += stickiness * scale
        labels[i] = int(score.argmax())  # ties have probability 0 (continuous noise)
        vol[labels[i]] += weights[i]


def degree_ordered_partition(graph: Graph, released_degrees: np.ndarray, budget: Any, rng: np.random.Generator, *,
                             epsilon_down: float, epsilon_up: float, stage: str, proof: str,
                             num_labels: int | None = None, volume_weight: float = 1.0, stickiness: float = 6.0,
                             selection: str = "noisy_max") -> np.ndarray:
    """Labels 0..K-1 from the sweeps of the module docstring; charges one ``permute_and_flip`` entry per sweep run.

    ``released_degrees`` must already be released (they rank the nodes, weight the volume penalty and, with
    ``num_labels=None``, set ``K`` by :func:`label_count`). ``epsilon_up=0`` skips the up sweep. ``selection``:
    ``"noisy_max"`` (exponential noise, ledger ``permute_and_flip``) or ``"exponential"`` (the earlier exponential
    mechanism, kept for comparison: half the signal per unit of epsilon).
    """
    if selection not in MECHANISMS:
        raise OptionError(f"selection must be one of {sorted(MECHANISMS)}, got {selection!r}")
    n = graph.num_nodes
    d = np.clip(np.asarray(released_degrees, dtype=np.float64), 0.0, None)
    k = int(num_labels) if num_labels is not None else label_count(epsilon_down, float(d.mean()) if n else 0.0)
    rank = degree_rank(d, rng)
    labels = rng.integers(k, size=n).astype(np.int64)
    for direction, eps in (("down", float(epsilon_down)), ("up", float(epsilon_up))):
        if eps <= 0:
            continue
        scale = SWEEP_SENSITIVITY / eps  # monotone utility: sensitivity / epsilon for either noise
        budget.charge(LedgerEntry(
            mechanism=MECHANISMS[selection], stage=f"{stage}_{direction}",
            # both selections state their noise scale (sensitivity / epsilon: the utility is monotone) so
            # `certificate verify` recomputes epsilon
            params={"epsilon": eps, "scale": scale,
                    **({"monotone": True} if selection == "exponential" else {})},
            count=1,
            sensitivity=SWEEP_SENSITIVITY, proof=proof,
            note=f"{direction} sweep of degree-ordered labels ({k} labels): each node picks a label by "
                 + ("argmax(u + Exp(1/eps))" if selection == "noisy_max" else "exp(eps * u)")
                 + ", u = its neighbours ranked " + ("above" if direction == "down" else "below")
                 + " per label minus a released-volume penalty; monotone, sensitivity 1, one selection per edge",
        ))
        _sweep(graph, labels, rank, d, rng, scale=scale, direction=direction, num_labels=k,
               volume_weight=float(volume_weight), stickiness=float(stickiness) if direction == "up" else 0.0,
               selection=selection)
    return labels
