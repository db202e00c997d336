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

The module also holds two *reference* mechanisms for testing the audit itself (never released):
:func:`randomized_response_edges` (edge-level randomized response over all node pairs, exactly
``epsilon``-edge-DP, Warner 1965) and the same with the noise switched off.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

#: Scores of one run: one per canary (a sequence), or several named attacks, each one score per canary.
Scores = Sequence[float] | Mapping[str, Sequence[float]]
TrainAndScore = Callable[[Graph, np.ndarray, int], Scores]
CANARY_KINDS = ("edge", "node", "graph")


# ---------------------------------------------------------------------------------------------------- statistics
def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided Clopper–Pearson interval for a binomial proportion, ``alpha/2`` in each tail.

    Returns ``(lower, upper)``; ``lower`` alone is a one-sided ``1 - alpha/2`` lower bound.

    >>> lo, hi = clopper_pearson(0, 100, 0.05)
    >>> lo, round(hi, 4)
    (0.0, 0.0362)
    """
    from scipy.stats import beta

    if trials <= 0:
        raise OptionError(f"Clopper-Pearson interval needs trials > 0, got {trials}")
    if not 0 <= successes <= trials:
        raise OptionError(f"successes {successes} outside 0..{trials}")
    if not 0 < alpha < 1:
        raise OptionError(f"alpha must be in (0, 1), got {alpha}")
    lo = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return lo, hi


@dataclass(frozen=True)
class EpsilonLowerBound:
    """The best (largest) epsilon lower bound found over thresholds and events, with the numbers behind it."""

    epsilon: float
    threshold: float | None
    event: str
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    confidence: float
    tests: int
    delta: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _candidate_thresholds(scores: np.ndarray, max_thresholds: int) -> np.ndarray:
    uniq = np.unique(scores)
    if uniq.size <= max_thresholds:
        return uniq
    qs = np.linspace(0.0, 1.0, max_thresholds)
    return np.unique(np.quantile(uniq, qs, method="nearest"))


def epsilon_lower_bound(
    scores_in: Sequence[float],
    scores_out: Sequence[float],
    *,
    delta: float,
    confidence: float = 0.95,
    max_thresholds: int = 32,
) -> EpsilonLowerBound:
    """Lower bound on epsilon from attack scores of ``in`` runs (canary present) and ``out`` runs (absent).

    Every threshold ``t`` in a grid of at most ``max_thresholds`` score quantiles and four events are tried:
    ``in>=t`` (guess *in* when the score is at least ``t``), ``out<t`` (its complement read the other way round),
    and the same two with the roles of the neighbouring datasets swapped. Each event gives
    ``log((P_lo - delta) / Q_hi)``; intervals are Clopper–Pearson with a Bonferroni correction over all tests.

    >>> b = epsilon_lower_bound([1.0] * 500, [0.0] * 500, delta=1e-5)
    >>> 3.5 < b.epsilon < 4.5
    True
    """
    s_in = np.asarray(scores_in, dtype=np.float64).ravel()
    s_out = np.asarray(scores_out, dtype=np.float64).ravel()
    if s_in.size == 0 or s_out.size == 0:
        raise OptionError("the empirical audit needs at least one run with and one run without the canaries")
    if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
        raise OptionError("attack scores contain NaN or infinite values")
    if not 0 <= delta < 1:
        raise OptionError(f"delta must be in [0, 1), got {delta}")
    if not 0 < confidence < 1:
        raise OptionError(f"confidence must be in (0, 1), got {confidence}")
    thresholds = _candidate_thresholds(np.concatenate([s_in, s_out]), max_thresholds)
    n_tests = 4 * thresholds.size
    # Each test uses two one-sided intervals; clopper_pearson(alpha) puts alpha/2 in each tail.
    alpha_each = 2.0 * (1.0 - confidence) / (2 * n_tests)
    n_in, n_out = s_in.size, s_out.size
    best = EpsilonLowerBound(0.0, None, "none", 0.0, 0.0, 0.0, 1.0, confidence, n_tests, delta)
    for t in thresholds:
        k_in = int(np.sum(s_in >= t))
        k_out = int(np.sum(s_out >= t))
        # (numerator count, numerator trials, denominator count, denominator trials, event name)
        events = (
            (k_in, n_in, k_out, n_out, "in>=t"),                      # P[S>=t | in]  <= e^eps P[S>=t | out] + d
            (n_out - k_out, n_out, n_in - k_in, n_in, "out<t"),       # P[S<t | out]  <= e^eps P[S<t | in] + d
            (k_out, n_out, k_in, n_in, "out>=t"),                     # swapped neighbouring pair
            (n_in - k_in, n_in, n_out - k_out, n_out, "in<t"),
        )
        for kp, np_, kq, nq, name in events:
            p_lo = clopper_pearson(kp, np_, alpha_each)[0]
            q_hi = clopper_pearson(kq, nq, alpha_each)[1]
            if p_lo - delta <= 0 or q_hi <= 0:
                continue
            eps = math.log((p_lo - delta) / q_hi)
            if eps > best.epsilon:
                best = EpsilonLowerBound(
                    epsilon=eps, threshold=float(t), event=name, tpr=kp / np_, fpr=kq / nq,
                    tpr_lower=p_lo, fpr_upper=q_hi, confidence=confidence, tests=n_tests, delta=delta,
                )
    return best


# ---------------------------------------------------------------------------------------------------- canaries
def choose_canary_edges(graph: Graph, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct node pairs ``(u < v)`` that are not edges of ``graph``, uniformly at random."""
    n = graph.num_nodes
    max_pairs = n * (n - 1) // 2
    if count < 1:
        raise OptionError(f"need at least one canary, got {count}")
    if count > max_pairs - graph.num_edges:
        raise OptionError(f"graph '{graph.name}' has fewer than {count} non-edges to use as canaries")
    existing = set(_pair_keys(graph.edges, n).tolist())
    chosen: list[int] = []
    seen: set[int] = set()
    while len(chosen) < count:
        u, v = rng.integers(0, n, size=2)
        if u == v:
            continue
        a, b = (int(u), int(v)) if u < v else (int(v), int(u))
        key = a * n + b
        if key in existing or key in seen:
            continue
        seen.add(key)
        chosen.append(key)
    keys = np.array(sorted(chosen), dtype=np.int64)
    return np.stack([keys // n, keys % n], axis=1)


def insert_canary_edges(graph: Graph, canaries: np.ndarray) -> Graph:
    """The graph with the canary edges added (features and labels kept)."""
    edges = np.concatenate([graph.edges, np.asarray(canaries, dtype=np.int64).reshape(-1, 2)])
    g, _ = Graph.from_edges(
        graph.num_nodes, edges, features=graph.features, labels=graph.labels, node_ids=graph.node_ids,
        name=graph.name,
    )
    return g


@dataclass(frozen=True)
class NodeCanary:
    """A crafted node for the node-adjacency audit: it occupies slot ``slot`` of a graph with one more slot.

    ``features`` is one row (``None`` for a featureless graph), ``label`` its class (``-1``: the graph has no
    labels), ``neighbours`` the existing nodes it links to (numbered as in the base graph).
    """

    slot: int
    features: np.ndarray | None
    label: int
    neighbours: np.ndarray

    def describe(self) -> dict[str, Any]:
        nnz = None if self.features is None else int(np.count_nonzero(self.features))
        return {"kind": "node", "slot": self.slot, "label": self.label, "degree": int(self.neighbours.size),
                "feature_nonzeros": nnz}


def choose_canary_node(graph: Graph, rng: np.random.Generator, *, slot: int | None = None,
                       degree: int | None = None, feature_nonzeros: int | None = None) -> NodeCanary:
    """A distinctive node: worst-case-style canaries make the audit powerful (Jagielski et al. 2020, §4).

    Features: as many non-zero entries as the median row, at random columns, each set to the largest feature value
    (a bag-of-words pattern no real node has). Label: the rarest class among labelled nodes, so a model that did
    not see the canary rarely predicts it. Edges: ``degree`` random existing nodes (default: the median degree,
    at least 1). ``slot``: where the canary sits among ``n + 1`` slots (default: uniformly random); models
    that split node slots publicly need it in a training slot (see :func:`public_training_slot`).
    ``feature_nonzeros`` overrides the number of non-zero features (1 concentrates a clipped row's whole norm in
    one coordinate, the worst case for per-coordinate noise).
    """
    n = graph.num_nodes
    slot = int(rng.integers(0, n + 1)) if slot is None else int(slot)
    if not 0 <= slot <= n:
        raise OptionError(f"canary slot {slot} outside 0..{n}")
    feats = None
    if graph.features is not None:
        x = graph.features
        nnz_rows = np.diff(x.indptr) if sp.issparse(x) else np.count_nonzero(x, axis=1)
        width = x.shape[1]
        k = int(min(width, max(1, np.median(nnz_rows) if feature_nonzeros is None else feature_nonzeros)))
        top = float(x.max()) if (x.max() if sp.issparse(x) else np.max(x)) > 0 else 1.0
        feats = np.zeros(width, dtype=np.float32)
        feats[rng.choice(width, size=k, replace=False)] = top
    label = -1
    if graph.labels is not None:
        lab = np.asarray(graph.labels)
        known = lab[lab >= 0]
        if known.size:
            counts = np.bincount(known)
            present = np.flatnonzero(counts > 0)
            label = int(present[np.argmin(counts[present])])
    deg = int(max(1, np.median(graph.degrees()))) if degree is None else int(degree)
    deg = min(deg, n)
    neighbours = np.sort(rng.choice(n, size=deg, replace=False)).astype(np.int64)
    return NodeCanary(slot, feats, label, neighbours)


def node_canary_graphs(graph: Graph, canary: NodeCanary) -> tuple[Graph, Graph]:
    """``(with, without)``: ``n + 1`` slots; existing node ``i`` moves to ``i + (i >= slot)``.

    ``with`` holds the canary's features, label and edges at its slot; ``without`` leaves the slot empty (isolated,
    zero features, label -1): the node-adjacent neighbour under the project's public-slot convention.
    """
    n, s = graph.num_nodes, canary.slot
    old_to_new = np.arange(n, dtype=np.int64)
    old_to_new[old_to_new >= s] += 1
    edges = old_to_new[graph.edges]
    extra = np.stack([np.full(canary.neighbours.size, s, dtype=np.int64), old_to_new[canary.neighbours]], axis=1)
    order = np.argsort(np.concatenate([old_to_new, [s]]))  # new slot -> row of (old rows..., canary row)

    def stack_features(row: np.ndarray | None) -> Any:
        x = graph.features
        if x is None:
            return None
        fill = np.zeros((1, x.shape[1]), dtype=np.float32) if row is None else row.reshape(1, -1)
        if sp.issparse(x):
            return sp.vstack([x, sp.csr_matrix(fill)], format="csr")[order]
        return np.vstack([x, fill])[order]

    def labels(value: int) -> np.ndarray | None:
        if graph.labels is None:
            return None
        return np.concatenate([np.asarray(graph.labels), [value]])[order]

    common = dict(name=f"{graph.name}+node-canary")
    without, _ = Graph.from_edges(n + 1, edges, features=stack_features(None), labels=labels(-1), **common)
    with_c, _ = Graph.from_edges(n + 1, np.concatenate([edges, extra]), features=stack_features(canary.features),
                                 labels=labels(canary.label), **common)
    return with_c, without


def public_training_slot(num_slots: int, *, train_frac: float, val_frac: float, split_seed: int) -> int:
    """A slot that the project's public node split (:func:`graphrelease.models.common.node_split`) puts in training.

    The split permutes node *slots* by a public seed, so which slots train is public; a canary outside them would
    never be trained on and the audit would measure nothing.
    """
    from graphrelease.models.common import node_split

    dummy = Graph(num_slots, np.zeros((0, 2), dtype=np.int64), labels=np.zeros(num_slots, dtype=np.int64))
    split = node_split(dummy, train=train_frac, val=val_frac, seed=split_seed)
    return int(split.train_slot_ids[0])


def choose_canary_graph(collection: GraphCollection, rng: np.random.Generator, *, num_nodes: int | None = None
                        ) -> Graph:
    """A crafted graph for the graph-adjacency audit: a clique on the least frequent node count of the collection.

    A clique is as far from typical (sparse) collection graphs as a graph of that size can be, and a rare node count
    makes count-based releases (node-count histograms) informative: both maximise the audit's power. ``num_nodes``
    overrides the size.
    """
    if num_nodes is None:
        sizes = np.array([g.num_nodes for g in collection])
        lo, hi = int(max(3, sizes.min())), int(max(3, sizes.max()))
        counts = np.bincount(sizes, minlength=hi + 1)[lo:hi + 1]
        rare = np.flatnonzero(counts == counts.min()) + lo
        num_nodes = int(rng.choice(rare))
    if num_nodes < 2:
        raise OptionError(f"a canary graph needs at least 2 nodes, got {num_nodes}")
    iu, ju = np.triu_indices(num_nodes, k=1)
    return Graph(num_nodes, np.stack([iu, ju], axis=1).astype(np.int64), name="canary-graph")


def with_canary_graph(collection: GraphCollection, canary: Graph, label: int | None = None) -> GraphCollection:
    """The collection with ``canary`` appended (graph label: ``label``, default the most frequent one)."""
    labels = collection.graph_labels
    if labels is not None:
        if label is None:
            label = int(np.bincount(np.asarray(labels) - np.min(labels)).argmax() + np.min(labels))
        labels = np.concatenate([np.asarray(labels), [label]])
    return GraphCollection(tuple(collection.graphs) + (canary,), labels, collection.name)


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


NodeTrainAndScore = Callable[[Graph, NodeCanary, int], Scores]
GraphTrainAndScore = Callable[[GraphCollection, Graph, int], Scores]


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


# ------------------------------------------------------------------------------------------------- reference mechanisms
def randomized_response_edges(graph: Graph, epsilon: float, rng: np.random.Generator, *, noise: bool = True
                              ) -> Graph:
    """Edge randomized response over all ``n(n-1)/2`` pairs: keep each bit with prob ``e^eps / (1 + e^eps)``.

    Exactly ``epsilon``-DP under edge adjacency (one pair's bit changes; the likelihood ratio of any output is at
    most ``e^eps``). ``noise=False`` is a deliberately broken mechanism (the input structure released as is, while
    still *claiming* ``epsilon``) used to test the audit. Reference mechanism only: never used for a release.
    Memory is ``O(n^2)``; meant for small graphs.
    """
    if not epsilon > 0:
        raise OptionError(f"epsilon must be > 0, got {epsilon}")
    n = graph.num_nodes
    iu, ju = np.triu_indices(n, k=1)
    bits = np.zeros(iu.size, dtype=bool)
    # Index of pair (u, v), u < v, in row-major upper-triangle order.
    u, v = graph.edges[:, 0], graph.edges[:, 1]
    idx = u * (2 * n - u - 1) // 2 + (v - u - 1)
    bits[idx] = True
    if noise:
        keep = 1.0 / (1.0 + math.exp(-epsilon))
        flips = rng.random(iu.size) >= keep
        bits ^= flips
    out = np.stack([iu[bits], ju[bits]], axis=1).astype(np.int64)
    return Graph(n, out, name=f"{graph.name}-rr")


def randomized_response_train_and_score(epsilon: float, *, noise: bool = True) -> TrainAndScore:
    """A ``train_and_score`` for :func:`run_canary_audit`: release by edge RR, score = canary present in release."""

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> np.ndarray:
        released = randomized_response_edges(g, epsilon, np.random.default_rng(seed), noise=noise)
        n = released.num_nodes
        keys = set(_pair_keys(released.edges, n).tolist())
        return np.array([1.0 if int(a) * n + int(b) in keys else 0.0 for a, b in canaries])

    return train_and_score


def _clip_l1(x: np.ndarray) -> np.ndarray:
    norm = np.abs(x).sum()
    return x / norm if norm > 1.0 else x


def noisy_class_sums(graph: Graph, epsilon: float, rng: np.random.Generator, *, noise: bool = True) -> np.ndarray:
    """Per-class sums of L1-clipped feature rows plus Laplace noise: an ``epsilon``-node-DP reference mechanism.

    .. math::

        R_c = \\sum_{i:\\,y_i = c} \\mathrm{clip}_1(x_i) + \\mathrm{Lap}(1/\\varepsilon)^{d}

    Node adjacency (an empty slot has no label and contributes nothing): one node changes one row by at most 1 in
    L1, so the Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006) is ``epsilon``-DP. ``noise=False`` is the
    deliberately broken version (still *claiming* ``epsilon``) used to test the audit. Never used for a release.
    """
    if not epsilon > 0:
        raise OptionError(f"epsilon must be > 0, got {epsilon}")
    x = graph.dense_features()
    if x is None or graph.labels is None:
        raise OptionError(f"graph '{graph.name}' needs node features and labels for the class-sum mechanism")
    lab = np.asarray(graph.labels)
    x = np.asarray(x, dtype=np.float64)
    norms = np.abs(x).sum(axis=1, keepdims=True)
    x = x / np.maximum(norms, 1.0)
    k = int(max(lab.max(), 0)) + 1
    out = np.zeros((k, x.shape[1]))
    known = lab >= 0
    np.add.at(out, lab[known], x[known])
    if noise:
        out += rng.laplace(0.0, 1.0 / epsilon, size=out.shape)
    return out


def class_sums_train_and_score(epsilon: float, *, noise: bool = True) -> NodeTrainAndScore:
    """``train_and_score`` for :func:`run_node_canary_audit` on :func:`noisy_class_sums`.

    The score is the log-likelihood ratio of "canary in" vs "out" for the released row of the canary's class,
    ``eps * (||R_y||_1 - ||R_y - x_c||_1)`` with ``x_c`` the canary's clipped features: by Neyman-Pearson the most
    powerful test against the Laplace mechanism, so an honest run's bound approaches ``epsilon``.
    """

    def train_and_score(g: Graph, canary: NodeCanary, seed: int) -> dict[str, list[float]]:
        released = noisy_class_sums(g, epsilon, np.random.default_rng(seed), noise=noise)
        if canary.features is None or canary.label < 0:
            raise OptionError("the class-sum audit needs a canary with features and a label")
        xc = _clip_l1(np.asarray(canary.features, dtype=np.float64))
        row = released[canary.label] if canary.label < released.shape[0] else np.zeros_like(xc)
        return {"likelihood_ratio": [epsilon * (np.abs(row).sum() - np.abs(row - xc).sum())]}

    return train_and_score


def noisy_size_histogram(collection: GraphCollection, epsilon: float, rng: np.random.Generator, *,
                         max_nodes: int, noise: bool = True) -> np.ndarray:
    """Histogram of graph node counts ``1..max_nodes`` (larger graphs in the last bin) plus Laplace noise.

    Graph adjacency: adding or removing one graph changes one bin by 1 (L1 sensitivity 1), so Laplace(1/eps)
    noise per bin is ``epsilon``-DP. ``noise=False``: the deliberately broken version. Reference only.
    """
    if not epsilon > 0:
        raise OptionError(f"epsilon must be > 0, got {epsilon}")
    sizes = np.minimum([g.num_nodes for g in collection], max_nodes)
    hist = np.bincount(sizes, minlength=max_nodes + 1)[1:].astype(np.float64)
    if noise:
        hist += rng.laplace(0.0, 1.0 / epsilon, size=hist.shape)
    return hist


def size_histogram_train_and_score(epsilon: float, *, max_nodes: int = 128, noise: bool = True
                                   ) -> GraphTrainAndScore:
    """``train_and_score`` for :func:`run_graph_canary_audit` on :func:`noisy_size_histogram`: the score is the
    released count at the canary's node count (the most powerful test for a unit shift under Laplace noise)."""

    def train_and_score(coll: GraphCollection, canary: Graph, seed: int) -> dict[str, list[float]]:
        hist = noisy_size_histogram(coll, epsilon, np.random.default_rng(seed), max_nodes=max_nodes, noise=noise)
        return {"released_count": [float(hist[min(canary.num_nodes, max_nodes) - 1])]}

    return train_and_score


# ---------------------------------------------------------------------------------------------------- real generators
def canary_scores_from_fitted(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                              samples: int = 1) -> np.ndarray:
    """Membership scores of canary pairs from a fitted generator, strongest signal first.

    1. ``fitted.edge_probabilities(pairs)`` when the generator offers it;
    2. the decoder's inner product ``f(z_u) . f(z_v)`` when it releases per-node embeddings
       (``fitted.embeddings(n, rng)``, node order kept), averaged over ``samples`` draws;
    3. otherwise the share of ``samples`` sampled graphs (with ``graph.num_nodes`` nodes, owner's node order) that
       contain the pair.
    Everything here reads only the fitted (released) object: it is what an attacker holding the release can do.
    """
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    if hasattr(fitted, "edge_probabilities"):
        return np.asarray(fitted.edge_probabilities(canaries), dtype=np.float64).ravel()
    if hasattr(fitted, "embeddings") and not _anonymous_nodes(fitted):
        acc = np.zeros(canaries.shape[0])
        for _ in range(samples):
            emb = np.asarray(fitted.embeddings(graph.num_nodes, rng), dtype=np.float64)
            acc += np.einsum("ij,ij->i", emb[canaries[:, 0]], emb[canaries[:, 1]])
        return acc / samples
    return _sampled_pair_share(fitted, graph, canaries, rng, samples=samples, align=None)


def _anonymous_nodes(fitted: Any) -> bool:
    """True for a decoder released without per-node latents: its sampled nodes are exchangeable draws from the
    prior, so node ``i`` of a sample is not the owner's node ``i`` (DPGVAE modes paper, buckets, graphs)."""
    return hasattr(fitted, "latents") and getattr(fitted, "latents") is None


def _degree_alignment(base_degrees: np.ndarray, sampled: Graph) -> np.ndarray:
    """owner node -> sampled node with the same degree rank (the seed's alignment for anonymous releases)."""
    own = np.argsort(-base_degrees, kind="stable")
    theirs = np.argsort(-sampled.degrees(), kind="stable")
    out = np.empty_like(own)
    out[own] = theirs
    return out


def _pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """One int64 key per node pair ``(u, v)`` (``u < v``), for set membership between edge lists of n-node graphs."""
    return pairs[:, 0] * np.int64(n) + pairs[:, 1]


def _sampled_pair_share(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                        samples: int, align: np.ndarray | None) -> np.ndarray:
    """Share of ``samples`` sampled graphs holding each canary pair; with ``align`` (the owner's degrees without
    the canaries) nodes are matched by degree rank, else by identity."""
    n = graph.num_nodes
    hits = np.zeros(canaries.shape[0])
    for g in fitted.sample(samples, num_nodes=n, rng=rng):
        if g.num_nodes != n:
            raise OptionError(f"generator sampled {g.num_nodes} nodes, the audit needs the owner's {n} nodes")
        pairs = canaries if align is None else np.sort(_degree_alignment(align, g)[canaries], axis=1)
        hits += np.isin(_pair_keys(pairs, n), _pair_keys(g.edges, n))
    return hits / samples


def _degrees_without(graph: Graph, canaries: np.ndarray) -> np.ndarray:
    """Degrees of ``graph`` minus the canary pairs it holds: the same attacker knowledge in ``in`` and ``out`` runs."""
    n = graph.num_nodes
    deg = graph.degrees().astype(np.int64).copy()
    present = np.isin(_pair_keys(canaries, n), _pair_keys(graph.edges, n))
    for u, v in canaries[present]:
        deg[u] -= 1
        deg[v] -= 1
    return deg


def edge_canary_attacks(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                        samples: int = 1) -> dict[str, np.ndarray]:
    """Every edge-canary attack that applies to ``fitted`` (only released objects are read), by name.

    * ``edge_probability`` / ``decoder_inner_product`` / ``sampled_graphs``: :func:`canary_scores_from_fitted`;
    * ``sampled_graphs_degree_aligned``: for decoders without per-node latents, the share of sampled graphs holding
      the canary pair after matching nodes by degree rank to the owner's graph without the canaries (an attacker
      knows every edge but the canary, the strong adversary of the DP definition);
    * ``released_edge_count``: the released expected edge count ``target_density * n(n-1)/2`` when the release
      carries one. It is DP in the sound modes and the exact ``|E|`` in ``mode=paper`` (its certificate declares
      the edge count as read without noise): one canary edge moves it by exactly 1.
    """
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    out: dict[str, np.ndarray] = {}
    if _anonymous_nodes(fitted) and not hasattr(fitted, "edge_probabilities"):
        out["sampled_graphs_degree_aligned"] = _sampled_pair_share(
            fitted, graph, canaries, rng, samples=samples, align=_degrees_without(graph, canaries))
    else:
        name = ("edge_probability" if hasattr(fitted, "edge_probabilities") else
                "decoder_inner_product" if hasattr(fitted, "embeddings") else "sampled_graphs")
        out[name] = canary_scores_from_fitted(fitted, graph, canaries, rng, samples=samples)
    density = (getattr(fitted, "config", None) or {}).get("target_density")
    if density is not None:
        n = graph.num_nodes
        out["released_edge_count"] = np.full(canaries.shape[0], float(density) * n * (n - 1) / 2)
    return out


def generator_train_and_score(make_generator: Callable[[], Any], *, epsilon: float, delta: float,
                              samples: int = 1, allow_uncertified: bool = True) -> TrainAndScore:
    """A ``train_and_score`` that fits a real generator under a fresh edge-adjacency ``Budget(epsilon, delta)`` and
    runs :func:`edge_canary_attacks` on the fitted (released) generator.

    The generator draws its own noise (``secure_generator``); ``seed`` only drives the audit's sampling of
    released graphs. ``allow_uncertified`` is needed to audit reproduction modes (``mode=paper``) whose
    certificate says ``guarantee: none`` — which is exactly what the audit is for.
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> dict[str, np.ndarray]:
        budget = Budget(epsilon=epsilon, delta=delta, adjacency="edge")
        fitted = make_generator().fit(g, budget)
        return edge_canary_attacks(fitted, g, canaries, np.random.default_rng(seed), samples=samples)

    return train_and_score


# ---------------------------------------------------------------------------------------------------- private models
def node_canary_model_scores(model: Any, graph: Graph, canary: NodeCanary) -> dict[str, list[float]]:
    """The released model's evidence for the canary node: its log-probability of the canary's label at the canary's
    slot (``log_prob``; a lower loss on a trained-on example is the classic membership signal, Yeom et al. 2018),
    or, for models that expose only class predictions, whether it predicts that label (``predicted_label``).

    ``graph`` is the graph WITH the canary (the attacker knows it): in ``out`` runs the model never saw it.
    """
    import torch

    if canary.label < 0:
        raise OptionError("a node canary for a classifier needs a label (the graph has no node labels)")
    if hasattr(model, "logits"):
        with torch.no_grad():
            logits = torch.as_tensor(model.logits(graph), dtype=torch.float64)
        logp = torch.log_softmax(logits, dim=1)[canary.slot]
        value = float(logp[canary.label]) if canary.label < logp.numel() else -math.inf
        return {"log_prob": [max(value, -1e6)]}
    pred = np.asarray(model.predict(graph))
    return {"predicted_label": [1.0 if int(pred[canary.slot]) == canary.label else 0.0]}


def model_train_and_score(make_model: Callable[[], Any], *, epsilon: float, delta: float,
                          adjacency: str = "node") -> NodeTrainAndScore:
    """A ``train_and_score`` for :func:`run_node_canary_audit` that trains a real private model (``MODELS``).

    ``epsilon`` is the TRAINING budget; ``math.inf`` trains without noise (the deliberately broken mechanism when
    the audit is told a finite ``claimed_epsilon``).
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canary: NodeCanary, seed: int) -> dict[str, list[float]]:
        budget = (Budget.unlimited(adjacency, delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency=adjacency))
        model = make_model()
        model.fit(g, budget)
        attacked = g
        if g.labels is None or int(g.labels[canary.slot]) != canary.label:
            # an out run: the attacker scores the canary as it knows it (features, label, edges) at its slot
            base = g.induced_subgraph(np.delete(np.arange(g.num_nodes), canary.slot))
            attacked, _ = node_canary_graphs(base, canary)
        return node_canary_model_scores(model, attacked, canary)

    return train_and_score


def model_canary_slot(make_model: Callable[[], Any], num_base_nodes: int) -> int:
    """A public training slot of ``num_base_nodes + 1`` slots for the model's public split settings."""
    cfg = getattr(make_model(), "config", None)
    return public_training_slot(num_base_nodes + 1, train_frac=float(getattr(cfg, "train_frac", 0.5)),
                                val_frac=float(getattr(cfg, "val_frac", 0.25)),
                                split_seed=int(getattr(cfg, "split_seed", 0)))


def _without_pairs(graph: Graph, pairs: np.ndarray) -> Graph:
    """``graph`` minus the edges in ``pairs`` (``u < v``): the attacker's view, the same in ``in`` and ``out`` runs."""
    n = graph.num_nodes
    keep = ~np.isin(_pair_keys(graph.edges, n), _pair_keys(pairs, n))
    return graph.replace(edges=graph.edges[keep])


def _released_view(model: Any, trained_on: Graph, known: Graph) -> Graph:
    """The graph to query a fitted model with so that the answer is a function of the release only.

    GAP (``H_1..H_K``), DPDGC (``Z~``) and GAP-link (``Z``) keep their noisy, already-charged aggregates keyed by
    the very graph object they were fitted on and return them when queried with it: that is the release. Any other
    query runs the released weights on the graph it is given (new aggregates, DPAR's power iteration, a GCN's
    message passing), which on the training graph would read its private edges outside the mechanism; those models
    are queried with ``known``, the training graph without the canaries.
    """
    cache = getattr(model, "_cache", None)
    if isinstance(cache, tuple) and cache and cache[0] is trained_on:
        return trained_on
    return known


def _row_cosine(rows: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Cosine similarity of rows ``pairs[:, 0]`` and ``pairs[:, 1]`` (0 when a row is zero)."""
    a, b = rows[pairs[:, 0]], rows[pairs[:, 1]]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.maximum(norms, 1e-12)


def edge_canary_model_scores(model: Any, trained_on: Graph, canaries: np.ndarray) -> dict[str, np.ndarray]:
    """The released model's evidence that each canary pair is an edge, from its released output only, by name.

    * ``pair_score``: link models (``gap-link``, ``relational``) score the pair themselves (``score_pairs``);
    * ``embedding_cosine``: node models that release embeddings (``embed``: DPDGC's noisy ``Z~``, GAP's perturbed
      aggregates ``[H_0..H_K]``) — the cosine of the endpoints' rows: an edge adds each endpoint to the other's
      aggregate, which moves the two rows' similarity (either way: the bound tests both tails);
    * ``class_agreement``: models whose ``embed`` refuses (DPAR) — ``sum_c p_u(c) p_v(c)``, the probability that the
      endpoints get the same class from the released classifier's softmax (``logits``), or whether their predicted
      labels agree (``predict`` only).

    Fair test statistic: every score is computed from what the release contains. Cached aggregates are returned for
    the training graph object without being recomputed; every other query gets the training graph WITHOUT the
    canary edges (:func:`_released_view`), identical in ``in`` and ``out`` runs — the attacker of the DP definition
    knows every edge but the canary, so ``in`` and ``out`` scores differ only through the released mechanism output.
    """
    import torch

    pairs = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    view = _released_view(model, trained_on, _without_pairs(trained_on, pairs))
    if hasattr(model, "score_pairs"):
        return {"pair_score": np.asarray(model.score_pairs(view, pairs), dtype=np.float64).ravel()}
    try:
        emb = np.asarray(model.embed(view), dtype=np.float64)
    except (OptionError, NotImplementedError):
        emb = None  # DPAR: embeddings of a graph would read its structure at inference; score the classifier
    if emb is not None:
        return {"embedding_cosine": _row_cosine(emb.reshape(emb.shape[0], -1), pairs)}
    if hasattr(model, "logits"):
        with torch.no_grad():
            probs = torch.softmax(torch.as_tensor(model.logits(view), dtype=torch.float64), dim=1).numpy()
        return {"class_agreement": np.einsum("ij,ij->i", probs[pairs[:, 0]], probs[pairs[:, 1]])}
    pred = np.asarray(model.predict(view))
    return {"class_agreement": (pred[pairs[:, 0]] == pred[pairs[:, 1]]).astype(np.float64)}


def model_edge_train_and_score(make_model: Callable[[], Any], *, epsilon: float, delta: float) -> TrainAndScore:
    """A ``train_and_score`` for :func:`run_canary_audit` that trains a real private model (``MODELS``) under edge
    adjacency and scores the canary pairs with :func:`edge_canary_model_scores`.

    ``epsilon`` is the TRAINING budget, a fresh ``Budget(epsilon, delta, adjacency="edge")`` per run; ``math.inf``
    trains without noise (the deliberately broken mechanism when the audit is told a finite ``claimed_epsilon``).
    The model draws its own noise; ``seed`` is unused (the scores are deterministic given the release). The canary
    pairs are :func:`run_canary_audit`'s, as for generators: uniformly random non-edges of the base graph
    (:func:`choose_canary_edges`).
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> dict[str, np.ndarray]:
        budget = (Budget.unlimited("edge", delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency="edge"))
        model = make_model()
        model.fit(g, budget)
        return edge_canary_model_scores(model, g, canaries)

    return train_and_score


# ---------------------------------------------------------------------------------------------------- collections
def graph_canary_attacks(fitted: Any, canary: Graph, rng: np.random.Generator, *, samples: int = 8
                         ) -> dict[str, list[float]]:
    """Graph-canary attacks on a fitted collection generator (released objects only), by name.

    * ``node_count_probability``: the released node-count distribution at the canary's size (a DP histogram under
      graph adjacency) — when the release carries one;
    * ``decoder_log_likelihood``: a Monte-Carlo estimate of the canary's log-likelihood under the released decoder,
      ``log mean_k prod_{i<j} Bern(A_ij; sigmoid(f(z_i).f(z_j) + b + offset))`` over ``samples`` prior draws ``z``,
      the offset calibrated to the released density as in sampling — when the release is such a decoder;
    * ``sampled_graph_distance``: otherwise minus the smallest relative (node count, edge count) distance between
      the canary and ``samples`` sampled graphs.
    """
    out: dict[str, list[float]] = {}
    config = getattr(fitted, "config", None) or {}
    nc = config.get("node_counts")
    if nc is not None:
        values, probs = np.asarray(nc["values"]), np.asarray(nc["probs"], dtype=np.float64)
        p = probs[values == canary.num_nodes]
        out["node_count_probability"] = [float(p.sum() / max(probs.sum(), 1e-300))]
    if hasattr(fitted, "embeddings") and hasattr(fitted, "decoder") and config.get("target_density") is not None:
        from scipy.special import logsumexp

        from graphrelease.generators.sampling import calibrate_offset

        n = canary.num_nodes
        adj = np.zeros((n, n), dtype=bool)
        adj[canary.edges[:, 0], canary.edges[:, 1]] = True
        iu = np.triu_indices(n, k=1)
        a = adj[iu]
        bias = float(fitted.decoder["dec.bias"][0])
        target = float(config["target_density"]) * n * (n - 1) / 2
        lls = []
        for _ in range(samples):
            emb = np.asarray(fitted.embeddings(n, rng), dtype=np.float64)
            offset = calibrate_offset(emb, bias, target, rng=rng)
            logit = (emb @ emb.T)[iu] + bias + offset
            # log sigmoid(x) = -log(1 + e^-x), stable through logaddexp
            lls.append(float(np.sum(np.where(a, -np.logaddexp(0.0, -logit), -np.logaddexp(0.0, logit)))))
        out["decoder_log_likelihood"] = [float(logsumexp(lls) - math.log(len(lls)))]
    if not out:
        dists = []
        for g in fitted.sample(samples, rng=rng):
            dists.append(abs(g.num_nodes - canary.num_nodes) / canary.num_nodes
                         + abs(g.num_edges - canary.num_edges) / max(canary.num_edges, 1))
        out["sampled_graph_distance"] = [-float(min(dists))]
    return out


def collection_generator_train_and_score(make_generator: Callable[[], Any], *, epsilon: float, delta: float,
                                         adjacency: str = "graph", samples: int = 8) -> GraphTrainAndScore:
    """A ``train_and_score`` for :func:`run_graph_canary_audit`: fit a real generator on the collection under a
    fresh ``Budget(epsilon, delta, adjacency)`` (``math.inf``: no noise) and run :func:`graph_canary_attacks`."""
    from graphrelease.privacy.budget import Budget

    def train_and_score(coll: GraphCollection, canary: Graph, seed: int) -> dict[str, list[float]]:
        budget = (Budget.unlimited(adjacency, delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency=adjacency))
        fitted = make_generator().fit(coll, budget)
        return graph_canary_attacks(fitted, canary, np.random.default_rng(seed), samples=samples)

    return train_and_score
