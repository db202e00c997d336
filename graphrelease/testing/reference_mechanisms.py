"""Reference mechanisms for testing the empirical audit itself (never released): exactly-DP mechanisms whose noise
can be switched off, so an audit must stay below their epsilon with noise and flag them without."""

from __future__ import annotations

import math

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

from graphrelease.audit.canaries import GraphTrainAndScore, NodeCanary, NodeTrainAndScore, TrainAndScore, pair_keys

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
        keys = set(pair_keys(released.edges, n).tolist())
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
