r"""Link-prediction plumbing shared by the link models: edge splits by public per-pair coins, non-edge sampling and
the AUC of held-out edges against sampled non-edges.

Why per-pair coins: under edge adjacency the split must not let one edge move others between parts. Every node pair
:math:`\{u, v\}` gets a uniform :math:`c_{uv}\in[0,1)` from a keyed integer hash of ``(u, v, seed)`` with a PUBLIC
seed; it depends on nothing else. A pair's part is decided by its coin alone, so adding or removing one edge changes
exactly one part by exactly that edge, and leaves the other parts identical (``tests/models/test_link.py`` checks
it on Cora). Held-out test edges are never passed to a model; they are read only to report the test AUC to the data
owner (like test labels for node classification: a measurement, not part of the release).

Example
-------
>>> from graphrelease.io import load_default_graph
>>> g = load_default_graph()
>>> train, test = holdout_split(g, test_frac=0.1, seed=0)
>>> train.num_edges + len(test) == g.num_edges
True
"""

from __future__ import annotations

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph

_M1, _M2, _M3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (a bijection of uint64 with good avalanche)."""
    with np.errstate(over="ignore"):
        x = x + _M1
        x = (x ^ (x >> np.uint64(30))) * _M2
        x = (x ^ (x >> np.uint64(27))) * _M3
        return x ^ (x >> np.uint64(31))


def pair_coins(pairs: np.ndarray, seed: int, salt: int = 0) -> np.ndarray:
    """Uniform coins in [0, 1) per unordered pair, a function of ``(min(u,v), max(u,v), seed, salt)`` only."""
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    lo, hi = np.minimum(p[:, 0], p[:, 1]).astype(np.uint64), np.maximum(p[:, 0], p[:, 1]).astype(np.uint64)
    key = np.uint64((int(seed) * 1_000_003 + int(salt)) % 2**64)
    h = _mix(_mix(_mix(lo) ^ hi) ^ _mix(key))
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def holdout_split(graph: Graph, *, test_frac: float, seed: int) -> tuple[Graph, np.ndarray]:
    """(training graph, held-out test edges): an edge is held out iff its public pair coin is below ``test_frac``."""
    if not 0.0 < float(test_frac) < 1.0:
        raise OptionError(f"test_frac must be in (0, 1), got {test_frac}")
    e = np.asarray(graph.edges)
    test = pair_coins(e, seed, salt=1) < float(test_frac)
    if not test.any() or test.all():
        raise OptionError(f"graph '{graph.name}' with {len(e)} edges leaves no training or no test edges at "
                          f"test_frac={test_frac}")
    return graph.replace(edges=e[~test]), e[test]


def sample_non_edges(graph: Graph, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct node pairs ``u < v`` that are not edges of ``graph`` (uniform by rejection)."""
    n = graph.num_nodes
    if n * (n - 1) // 2 - graph.num_edges < count:
        raise OptionError(f"graph '{graph.name}' has fewer than {count} non-edges to evaluate against")
    existing = set((np.asarray(graph.edges)[:, 0] * n + np.asarray(graph.edges)[:, 1]).tolist())
    out: dict[int, None] = {}
    while len(out) < count:
        u = rng.integers(0, n, size=2 * count)
        v = rng.integers(0, n, size=2 * count)
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        for a, b in zip(lo.tolist(), hi.tolist()):
            k = a * n + b
            if a != b and k not in existing and k not in out:
                out[k] = None
                if len(out) == count:
                    break
    keys = np.fromiter(out, dtype=np.int64, count=count)
    return np.stack([keys // n, keys % n], axis=1)


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counted 1/2 (Mann-Whitney)."""
    from scipy.stats import rankdata

    pos, neg = np.asarray(pos, dtype=np.float64).ravel(), np.asarray(neg, dtype=np.float64).ravel()
    if pos.size == 0 or neg.size == 0:
        raise OptionError("AUC needs at least one positive and one negative pair")
    ranks = rankdata(np.concatenate([pos, neg]))
    return float((ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def held_out_auc(score_pairs, train_graph: Graph, test_edges: np.ndarray, full_graph: Graph, *, seed: int) -> float:
    """AUC of ``score_pairs(train_graph, pairs)`` on the held-out edges vs as many sampled non-edges of the FULL
    graph (so a held-out edge is never drawn as a negative); the non-edges come from the public ``seed``."""
    neg = sample_non_edges(full_graph, len(test_edges), np.random.default_rng([int(seed), 7]))
    return auc(score_pairs(train_graph, np.asarray(test_edges)), score_pairs(train_graph, neg))
