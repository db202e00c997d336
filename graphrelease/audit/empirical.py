"""Empirical privacy audit: canaries, a threshold attack and a Clopper–Pearson lower bound on epsilon.

Protocol (multi-run canary audit, Jagielski et al. 2020 "Auditing Differentially Private Machine Learning: How
Private is Private SGD?", Nasr et al. 2021 "Adversary Instantiation"): a fixed set of ``k`` canary records (edges
that are not in the base graph, under edge adjacency; whole graphs under graph adjacency) is either inserted
(``in`` runs) or not (``out`` runs). Each run trains/releases from scratch with fresh mechanism randomness and the
caller's ``train_and_score(graph, canaries, seed)`` returns one score per canary; the run's score is their mean.
Runs are independent, so the counts of ``in``/``out`` runs above a threshold ``t`` are binomial and Clopper–Pearson
intervals apply. This module does *not* implement the one-run audit of Steinke, Nasr & Jagielski (2023).

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
from typing import Any, Callable, Sequence

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph

TrainAndScore = Callable[[Graph, np.ndarray, int], Sequence[float]]


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
    existing = set((graph.edges[:, 0] * np.int64(n) + graph.edges[:, 1]).tolist())
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


# ---------------------------------------------------------------------------------------------------- the audit
@dataclass
class EmpiricalAuditResult:
    """Outcome of :func:`run_canary_audit`. ``epsilon_lower`` is comparable with ``claimed_epsilon``."""

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
        derived from ``seed`` and returns one membership score per canary pair (higher = "the edge was in").
    runs:
        Total runs; half with the canaries (alternating), half without.
    canaries_per_run:
        ``k`` canary edges inserted together; ``k > 1`` audits group privacy (see module docstring).
    delta, claimed_epsilon:
        The certified guarantee being audited (``claimed_epsilon=None``: report the bound only).
    """
    if runs < 2:
        raise OptionError(f"the empirical audit needs at least 2 runs, got {runs}")
    rng = rng if rng is not None else np.random.default_rng()
    if canaries is None:
        canaries = choose_canary_edges(graph, canaries_per_run, rng)
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    k = canaries.shape[0]
    with_canaries = insert_canary_edges(graph, canaries)
    if with_canaries.num_edges != graph.num_edges + k:
        raise OptionError("canary pairs must be distinct non-edges of the base graph")
    scores_in: list[float] = []
    scores_out: list[float] = []
    seeds = rng.integers(0, 2**63 - 1, size=runs)
    for r in range(runs):
        include = r % 2 == 0
        s = np.asarray(train_and_score(with_canaries if include else graph, canaries, int(seeds[r])), dtype=float)
        if s.shape != (k,):
            raise OptionError(f"train_and_score returned {s.shape} scores for {k} canaries")
        (scores_in if include else scores_out).append(float(s.mean()))
        if progress is not None:
            progress(r + 1, runs)
    bound = epsilon_lower_bound(scores_in, scores_out, delta=delta, confidence=confidence)
    g_eps, g_delta = (None, None) if claimed_epsilon is None else group_guarantee(claimed_epsilon, delta, k)
    return EmpiricalAuditResult(
        protocol="multi-run canary audit (Jagielski et al. 2020), Clopper-Pearson + Bonferroni",
        runs=runs, runs_in=len(scores_in), runs_out=len(scores_out), canaries_per_run=k, confidence=confidence,
        delta=delta, claimed_epsilon=claimed_epsilon, claimed_group_epsilon=g_eps, claimed_group_delta=g_delta,
        bound=bound, scores_in=scores_in, scores_out=scores_out, label=label,
    )


# ---------------------------------------------------------------------------------------------------- reference mechanisms
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
        keys = set((released.edges[:, 0] * np.int64(n) + released.edges[:, 1]).tolist())
        return np.array([1.0 if int(a) * n + int(b) in keys else 0.0 for a, b in canaries])

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
    if hasattr(fitted, "embeddings"):
        acc = np.zeros(canaries.shape[0])
        for _ in range(samples):
            emb = np.asarray(fitted.embeddings(graph.num_nodes, rng), dtype=np.float64)
            acc += np.einsum("ij,ij->i", emb[canaries[:, 0]], emb[canaries[:, 1]])
        return acc / samples
    n = graph.num_nodes
    want = canaries[:, 0] * np.int64(n) + canaries[:, 1]
    hits = np.zeros(canaries.shape[0])
    for g in fitted.sample(samples, num_nodes=n, rng=rng):
        if g.num_nodes != n:
            raise OptionError(f"generator sampled {g.num_nodes} nodes, the audit needs the owner's {n} nodes")
        hits += np.isin(want, g.edges[:, 0] * np.int64(n) + g.edges[:, 1])
    return hits / samples


def generator_train_and_score(make_generator: Callable[[], Any], *, epsilon: float, delta: float,
                              samples: int = 1, allow_uncertified: bool = True) -> TrainAndScore:
    """A ``train_and_score`` that fits a real generator under a fresh edge-adjacency ``Budget(epsilon, delta)``.

    The generator draws its own noise (``secure_generator``); ``seed`` only drives the audit's sampling of
    released graphs. ``allow_uncertified`` is needed to audit reproduction modes (``mode=paper``) whose
    certificate says ``guarantee: none`` — which is exactly what the audit is for.
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> np.ndarray:
        budget = Budget(epsilon=epsilon, delta=delta, adjacency="edge")
        fitted = make_generator().fit(g, budget)
        return canary_scores_from_fitted(fitted, g, canaries, np.random.default_rng(seed), samples=samples)

    return train_and_score
