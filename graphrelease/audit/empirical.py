"""Empirical privacy audit: canaries, a threshold attack and a Clopper–Pearson lower bound on epsilon.

Protocol (multi-run canary audit, Jagielski et al. 2020 "Auditing Differentially Private Machine Learning: How
Private is Private SGD?", Nasr et al. 2021 "Adversary Instantiation"): a fixed canary record is either inserted
(``in`` runs) or not (``out`` runs). Each run trains/releases from scratch with fresh mechanism randomness and an
attack turns the release into one score. Runs are independent, so the counts of ``in``/``out`` runs above a
threshold ``t`` are binomial and Clopper–Pearson intervals apply. This module does *not* implement the one-run audit
of Steinke, Nasr & Jagielski (2023). One canary kind per adjacency of PRIVACY.md §1:

* ``edge`` (:func:`run_canary_audit`): ``k`` node pairs that are not edges of the base graph; the caller's
  ``train_and_score(graph, canaries, seed)`` returns one score per pair, the run's score is their mean (generators:
  :func:`generator_train_and_score`; private models: :func:`model_edge_train_and_score`).
* ``node`` (:func:`run_node_canary_audit`): one extra node slot holding a crafted node (features, a label, edges to
  existing nodes) in ``in`` runs and an empty slot (isolated, no features, label -1) in ``out`` runs — the project's
  node adjacency keeps the number of slots public.
* ``graph`` (:func:`run_graph_canary_audit`): one crafted graph appended to a collection in ``in`` runs only.

An attack may return several named scores per run (e.g. a decoder score and a released count); every attack gets
its own bound at a Bonferroni-corrected level ``1 - (1 - confidence) / A`` and the largest is reported, so the
reported bound still holds with probability at least ``confidence``.

For an (epsilon, delta)-DP mechanism every test ``S >= t`` satisfies (Kairouz et al. 2015, hypothesis-testing
view of DP), for both orderings of the neighbouring pair and both tails:

.. math::

    \\mathrm{TPR} \\le e^{\\varepsilon}\\,\\mathrm{FPR} + \\delta, \\qquad
    1-\\mathrm{FPR} \\le e^{\\varepsilon}\\,(1-\\mathrm{TPR}) + \\delta,

so with ``TPR_lo`` a lower and ``FPR_hi`` an upper confidence bound,
``epsilon >= log((TPR_lo - delta) / FPR_hi)``. The maximum over candidate thresholds and the four (tail, ordering)
events is taken with a Bonferroni correction: every one of the ``2 * 4 * K`` one-sided intervals is computed at level
``alpha / (8K)``, so the reported bound holds with probability at least ``1 - alpha`` over the audit's randomness.

With ``k > 1`` canaries inserted together the audit bounds the privacy loss of a *group* of ``k`` records; it is
compared with the group guarantee ``(k*eps, k*exp((k-1)*eps)*delta)`` implied by the certificate (group privacy,
Dwork & Roth 2014, Thm 2.2 extended to approximate DP).

Layout: the bounds are in :mod:`graphrelease.audit.bounds`, the canaries in :mod:`graphrelease.audit.canaries`, the
attacks on real releases in :mod:`graphrelease.audit.canary_attacks` (all re-exported here), and the reference
mechanisms that test the audit itself (exactly-DP randomized response, noisy class sums and size histograms, with
their noise switchable off) in :mod:`graphrelease.testing.reference_mechanisms`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

from graphrelease.audit.bounds import EpsilonLowerBound, clopper_pearson, epsilon_lower_bound  # noqa: F401
from graphrelease.audit.canaries import (  # noqa: F401  (one namespace for the audit's callers)
    CANARY_KINDS,
    GraphTrainAndScore,
    NodeCanary,
    NodeTrainAndScore,
    Scores,
    TrainAndScore,
    choose_canary_edges,
    choose_canary_graph,
    choose_canary_node,
    insert_canary_edges,
    node_canary_graphs,
    public_training_slot,
    with_canary_graph,
)
from graphrelease.audit.canary_attacks import (  # noqa: F401
    canary_scores_from_fitted,
    collection_generator_train_and_score,
    edge_canary_attacks,
    edge_canary_model_scores,
    generator_train_and_score,
    graph_canary_attacks,
    model_canary_slot,
    model_edge_train_and_score,
    model_train_and_score,
    node_canary_model_scores,
)

# ---------------------------------------------------------------------------------------------------- the audit
@dataclass
class EmpiricalAuditResult:
    """Outcome of a canary audit. ``epsilon_lower`` is comparable with ``claimed_epsilon``."""

    protocol: str
    runs: int
    runs_in: int
    runs_out: int
    canaries_per_run: int
    confidence: float
    delta: float
    claimed_epsilon: float | None
    claimed_group_epsilon: float | None
    claimed_group_delta: float | None
    bound: EpsilonLowerBound
    scores_in: list[float] = field(repr=False)
    scores_out: list[float] = field(repr=False)
    label: str = ""
    #: ``edge``, ``node`` or ``graph``: the adjacency whose canaries were inserted.
    kind: str = "edge"
    #: Per attack: its bound (at the Bonferroni-corrected level) and its scores; ``attack`` names the best one.
    attacks: dict[str, Any] = field(default_factory=dict, repr=False)
    attack: str = "score"
    canary: dict[str, Any] = field(default_factory=dict)

    @property
    def epsilon_lower(self) -> float:
        return self.bound.epsilon

    @property
    def violation(self) -> bool:
        """True when the lower bound exceeds the (group) claim: the mechanism cannot be as private as certified."""
        if self.claimed_group_epsilon is None:
            return False
        return self.bound.epsilon > self.claimed_group_epsilon

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bound"] = self.bound.to_dict()
        d["epsilon_lower"] = self.epsilon_lower
        d["violation"] = self.violation
        return d


def group_guarantee(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(epsilon, delta) for a group of ``k`` records from an (epsilon, delta) guarantee by group privacy."""
    if k == 1:
        return epsilon, delta
    return k * epsilon, k * math.exp((k - 1) * epsilon) * delta


def _as_attacks(raw: Scores, k: int) -> dict[str, float]:
    """One run's attack output -> {attack name: mean score over its ``k`` canaries}."""
    items = raw.items() if isinstance(raw, Mapping) else [("score", raw)]
    out = {}
    for name, val in items:
        s = np.asarray(val, dtype=float).ravel()
        if s.shape != (k,):
            raise OptionError(f"attack '{name}' returned {s.shape} scores for {k} canaries")
        out[str(name)] = float(s.mean())
    if not out:
        raise OptionError("the attack returned no scores")
    return out


def _multi_run(score_run: Callable[[bool, int], Scores], *, runs: int, k: int, delta: float,
               claimed_epsilon: float | None, confidence: float, rng: np.random.Generator, label: str, kind: str,
               canary: dict[str, Any], progress: Callable[[int, int], None] | None) -> EmpiricalAuditResult:
    """The protocol shared by every canary kind: alternate in/out runs, collect scores, bound each attack."""
    if runs < 2:
        raise OptionError(f"the empirical audit needs at least 2 runs, got {runs}")
    per_in: dict[str, list[float]] = {}
    per_out: dict[str, list[float]] = {}
    seeds = rng.integers(0, 2**63 - 1, size=runs)
    for r in range(runs):
        include = r % 2 == 0
        scores = _as_attacks(score_run(include, int(seeds[r])), k)
        if per_in and set(scores) != set(per_in):
            raise OptionError(f"attacks changed between runs: {sorted(per_in)} vs {sorted(scores)}")
        for name, v in scores.items():
            per_in.setdefault(name, [])
            per_out.setdefault(name, [])
            (per_in if include else per_out)[name].append(v)
        if progress is not None:
            progress(r + 1, runs)
    n_attacks = len(per_in)
    level = 1.0 - (1.0 - confidence) / n_attacks
    g_eps, g_delta = (None, None) if claimed_epsilon is None else group_guarantee(claimed_epsilon, delta, k)
    # A group of k canaries is compared with the group claim, so its bound must use the group's delta: a smaller
    # (per-record) delta inflates the bound and could flag an honest mechanism.
    bound_delta = delta if g_delta is None else min(g_delta, 1.0 - 1e-12)  # a group delta >= 1 claims nothing
    attacks: dict[str, Any] = {}
    best_name, best = None, None
    for name in per_in:
        b = epsilon_lower_bound(per_in[name], per_out[name], delta=bound_delta, confidence=level)
        attacks[name] = {"bound": b.to_dict(), "scores_in": per_in[name], "scores_out": per_out[name]}
        if best is None or b.epsilon > best.epsilon:
            best_name, best = name, b
    assert best is not None and best_name is not None
    extra = f", Bonferroni over {n_attacks} attacks" if n_attacks > 1 else ""
    return EmpiricalAuditResult(
        protocol=f"multi-run canary audit (Jagielski et al. 2020), {kind} canaries, Clopper-Pearson + "
                 f"Bonferroni{extra}",
        runs=runs, runs_in=len(per_in[best_name]), runs_out=len(per_out[best_name]), canaries_per_run=k,
        confidence=confidence, delta=delta, claimed_epsilon=claimed_epsilon, claimed_group_epsilon=g_eps,
        claimed_group_delta=g_delta, bound=best, scores_in=per_in[best_name], scores_out=per_out[best_name],
        label=label, kind=kind, attacks=attacks, attack=best_name, canary=canary,
    )


def run_canary_audit(
    graph: Graph,
    train_and_score: TrainAndScore,
    *,
    runs: int,
    canaries_per_run: int = 1,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    canaries: np.ndarray | None = None,
    label: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> EmpiricalAuditResult:
    """Run the multi-run canary audit under edge adjacency.

    Parameters
    ----------
    graph:
        The base graph the canaries are added to.
    train_and_score:
        ``train_and_score(graph, canaries, seed) -> scores`` trains/releases from ``graph`` with fresh randomness
        derived from ``seed`` and returns one membership score per canary pair (higher = "the edge was in"), or a
        mapping ``{attack name: scores}`` for several attacks on the same release.
    runs:
        Total runs; half with the canaries (alternating), half without.
    canaries_per_run:
        ``k`` canary edges inserted together; ``k > 1`` audits group privacy (see module docstring).
    delta, claimed_epsilon:
        The certified guarantee being audited (``claimed_epsilon=None``: report the bound only).
    """
    rng = rng if rng is not None else np.random.default_rng()
    if canaries is None:
        canaries = choose_canary_edges(graph, canaries_per_run, rng)
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    k = canaries.shape[0]
    with_canaries = insert_canary_edges(graph, canaries)
    if with_canaries.num_edges != graph.num_edges + k:
        raise OptionError("canary pairs must be distinct non-edges of the base graph")
    return _multi_run(
        lambda include, seed: train_and_score(with_canaries if include else graph, canaries, seed),
        runs=runs, k=k, delta=delta, claimed_epsilon=claimed_epsilon, confidence=confidence, rng=rng, label=label,
        kind="edge", canary={"kind": "edge", "pairs": canaries.tolist()}, progress=progress)




def run_node_canary_audit(
    graph: Graph,
    train_and_score: NodeTrainAndScore,
    *,
    runs: int,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    canary: NodeCanary | None = None,
    label: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> EmpiricalAuditResult:
    """Multi-run canary audit under node adjacency: one crafted node present (``in``) or its slot empty (``out``).

    ``train_and_score(graph, canary, seed)`` trains on ``graph`` (``n + 1`` slots) with fresh randomness and scores
    the canary (higher = "the node was in"), e.g. the released model's log-probability of the canary's label at its
    slot (:func:`model_train_and_score`). The attacker knows the canary, so scoring may read its features and edges
    in both kinds of run.
    """
    rng = rng if rng is not None else np.random.default_rng()
    canary = canary if canary is not None else choose_canary_node(graph, rng)
    with_c, without = node_canary_graphs(graph, canary)
    return _multi_run(
        lambda include, seed: train_and_score(with_c if include else without, canary, seed),
        runs=runs, k=1, delta=delta, claimed_epsilon=claimed_epsilon, confidence=confidence, rng=rng, label=label,
        kind="node", canary=canary.describe(), progress=progress)


def run_graph_canary_audit(
    collection: GraphCollection,
    train_and_score: GraphTrainAndScore,
    *,
    runs: int,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    canary: Graph | None = None,
    label: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> EmpiricalAuditResult:
    """Multi-run canary audit under graph adjacency: one crafted graph added to the collection or not.

    ``train_and_score(collection, canary, seed)`` releases from ``collection`` with fresh randomness and scores the
    canary graph (higher = "the graph was in"), e.g. :func:`collection_generator_train_and_score`.
    """
    rng = rng if rng is not None else np.random.default_rng()
    canary = canary if canary is not None else choose_canary_graph(collection, rng)
    with_c = with_canary_graph(collection, canary)
    return _multi_run(
        lambda include, seed: train_and_score(with_c if include else collection, canary, seed),
        runs=runs, k=1, delta=delta, claimed_epsilon=claimed_epsilon, confidence=confidence, rng=rng, label=label,
        kind="graph", canary={"kind": "graph", "num_nodes": canary.num_nodes, "num_edges": canary.num_edges},
        progress=progress)
