"""Shared machinery of the classical edge-DP generators (randomized response, Chung-Lu, TmF, DP-dK, PrivGraph,
DP-DCSBM): budget charging, Laplace noise, post-processing of noisy counts, and *sparse* samplers.

Nothing here ever builds an ``n x n`` matrix: every sampler works on edge lists and integer pair keys
``u * n + v`` (``u < v``), so the generators run on the 504k-edge Slashdot graph.

Privacy bookkeeping: :func:`charge_laplace` records a ``laplace`` ledger entry in the run's :class:`Budget`
*before* the noise is drawn and returned (a charge that would exceed the budget raises ``BudgetError`` and nothing
is released). Every function below that takes noisy values and no private input is post-processing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.generators.base import FittedGenerator
from graphrelease.graph import Graph
from graphrelease.privacy.ledger import LedgerEntry

if TYPE_CHECKING:
    from graphrelease.privacy.budget import Budget

#: Public assumption every edge-DP generator here makes (the certificate's ``public_assumptions``).
NODE_COUNT_PUBLIC = {
    "num_nodes": "the node count and numbering 0..n-1 are the owner's declared node set (see node_set), public under "
                 "edge adjacency",
}


# ----------------------------------------------------------------------------------------------- input / budget




def split_fractions(fractions: dict[str, float], generator: str) -> dict[str, float]:
    """Validate a budget split (positive fractions summing to 1)."""
    total = sum(fractions.values())
    for name, f in fractions.items():
        if not (f > 0):
            raise OptionError(f"generator '{generator}': budget fraction '{name}' must be > 0, got {f}")
    if abs(total - 1.0) > 1e-9:
        raise OptionError(f"generator '{generator}': budget fractions must sum to 1, got {total} ({fractions})")
    return dict(fractions)


def laplace_entry(stage: str, epsilon: float, sensitivity: float, proof: str, note: str = "",
                  count: int = 1, cap: float | None = None) -> LedgerEntry:
    """Ledger entry of a Laplace mechanism with scale ``sensitivity / epsilon`` (L1 sensitivity). ``cap``: the degree
    cap a capped query's sensitivity is a multiple of, stated so ``certificate verify`` can recompute it."""
    params = {"epsilon": float(epsilon), "scale": float(sensitivity) / float(epsilon)}
    if cap is not None:
        params["cap"] = float(cap)
    return LedgerEntry(
        mechanism="laplace", stage=stage,
        params=params,
        count=count,
        sensitivity=float(sensitivity), proof=proof, note=note,
    )


def charge_laplace(budget: "Budget", rng: np.random.Generator, values: np.ndarray | float, *, epsilon: float,
                   sensitivity: float, stage: str, proof: str, note: str = "", cap: float | None = None
                   ) -> np.ndarray:
    r"""Release ``values + Lap(sensitivity / epsilon)`` (float64), charging the budget first.

    .. math:: \tilde f(G) = f(G) + \mathrm{Lap}(\Delta_1 / \varepsilon)^{\otimes d}

    is :math:`\varepsilon`-DP when :math:`\|f(G) - f(G')\|_1 \le \Delta_1` for neighbouring graphs (Dwork et al.
    2006, Thm. 1). ``values`` is the whole pre-noise vector of the query.
    """
    budget.charge(laplace_entry(stage, epsilon, sensitivity, proof, note, cap=cap))
    x = np.asarray(values, dtype=np.float64)
    return x + rng.laplace(0.0, float(sensitivity) / float(epsilon), size=x.shape)


# ----------------------------------------------------------------------------------------------- post-processing
def average_releases(first: float, first_epsilon: float, second: float, second_epsilon: float) -> tuple[float, float]:
    """Two Laplace releases of one value at one sensitivity, averaged with inverse-variance weights
    (:math:`\varepsilon_i^2`), and the average's Laplace-equivalent epsilon (the same variance),
    :math:`\sqrt{\varepsilon_1^2 + \varepsilon_2^2}`. Post-processing; the topped-up releases of ``dp_bter`` share it."""
    weight_first, weight_second = float(first_epsilon) ** 2, float(second_epsilon) ** 2
    average = (float(first) * weight_first + float(second) * weight_second) / (weight_first + weight_second)
    return average, float(np.hypot(first_epsilon, second_epsilon))


def nonneg_round(x: np.ndarray) -> np.ndarray:
    return np.maximum(np.rint(np.asarray(x, dtype=np.float64)), 0).astype(np.int64)


def norm_sub(noisy: np.ndarray, total: float | None = None) -> np.ndarray:
    """Project noisy counts onto {x >= 0, sum x = total} (Euclidean projection; total defaults to the noisy sum).

    The "norm-sub" post-processing of Wang et al. (2020, locally private frequency estimation): subtract a common
    shift and clip at zero so the sum is kept. Integer output by largest-remainder rounding.
    """
    x = np.asarray(noisy, dtype=np.float64).ravel()
    target = float(x.sum()) if total is None else float(total)
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    if target <= 0:
        return np.zeros(x.size, dtype=np.int64)
    # Find the shift t with sum(max(x - t, 0)) = target (piecewise linear, decreasing in t).
    s = np.sort(x)[::-1]
    cums = np.cumsum(s)
    ks = np.arange(1, s.size + 1)
    ts = (cums - target) / ks
    valid = s - ts > 0
    k = int(np.nonzero(valid)[0].max()) if valid.any() else 0
    t = ts[k]
    y = np.maximum(x - t, 0.0)
    return round_preserving_sum(y, int(round(target)))


def round_preserving_sum(y: np.ndarray, total: int) -> np.ndarray:
    """Integer vector close to ``y >= 0`` with sum ``total`` (largest remainder)."""
    y = np.maximum(np.asarray(y, dtype=np.float64), 0.0)
    base = np.floor(y).astype(np.int64)
    short = int(total - base.sum())
    if short > 0:
        frac = y - base
        order = np.argsort(-frac, kind="stable")
        base[order[: min(short, y.size)]] += 1
        short -= min(short, y.size)
        if short > 0:  # more to add than entries: spread evenly
            base += short // y.size
            base[: short % y.size] += 1
    elif short < 0:
        order = np.argsort(-(y - base), kind="stable")
        for i in order[::-1]:
            if short == 0:
                break
            take = min(base[i], -short)
            base[i] -= take
            short += take
    return base


def isotonic_increasing(y: np.ndarray) -> np.ndarray:
    """Least-squares non-decreasing fit (pool adjacent violators), Hay et al. 2009 constrained inference."""
    from sklearn.isotonic import isotonic_regression

    return np.asarray(isotonic_regression(np.asarray(y, dtype=np.float64), increasing=True), dtype=np.float64)


# ----------------------------------------------------------------------------------------------- sparse sampling
def pair_keys(edges: np.ndarray, n: int) -> np.ndarray:
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    lo = np.minimum(e[:, 0], e[:, 1])
    hi = np.maximum(e[:, 0], e[:, 1])
    return lo * np.int64(n) + hi


def degree_oriented(n: int, edges: np.ndarray, degrees: np.ndarray):
    """``L``: each edge oriented from its lower to its higher (degree, id) rank, as an ``n x n`` CSR matrix. Every
    triangle is then ``a -> b -> c`` plus ``a -> c`` exactly once, so ``sum((L @ L) * L)`` counts each once."""
    import scipy.sparse as sp

    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), degrees))] = np.arange(n)
    flip = rank[edges[:, 0]] > rank[edges[:, 1]]
    lo = np.where(flip, edges[:, 1], edges[:, 0])
    hi = np.where(flip, edges[:, 0], edges[:, 1])
    return sp.csr_matrix((np.ones(lo.size), (lo, hi)), shape=(n, n))


def keys_to_edges(keys: np.ndarray, n: int) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    return np.stack([keys // n, keys % n], axis=1) if keys.size else np.zeros((0, 2), dtype=np.int64)


def key_degrees(keys: np.ndarray, n: int) -> np.ndarray:
    """Each node's degree in the edges given as pair keys ``lo * n + hi`` (int64 counts)."""
    keys = np.asarray(keys, dtype=np.int64)
    return np.bincount(keys // n, minlength=n) + np.bincount(keys % n, minlength=n)


def in_sorted(keys: np.ndarray, sorted_ref: np.ndarray) -> np.ndarray:
    if sorted_ref.size == 0 or keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    pos = np.searchsorted(sorted_ref, keys)
    pos = np.minimum(pos, sorted_ref.size - 1)
    return sorted_ref[pos] == keys


def sample_uniform_nonedges(n: int, k: int, exclude_sorted_keys: np.ndarray, rng: np.random.Generator
                            ) -> np.ndarray:
    """``k`` distinct unordered pairs drawn uniformly from the pairs NOT in ``exclude_sorted_keys`` (sorted keys).

    Rejection sampling: draw uniform ordered pairs, drop loops/excluded/repeats, keep a uniformly random subset of
    the fresh distinct keys. The result is a uniformly random ``k``-subset of the allowed pairs (exchangeability).
    """
    total_pairs = n * (n - 1) // 2
    allowed = total_pairs - int(exclude_sorted_keys.size)
    if k > allowed:
        raise OptionError(f"cannot place {k} new edges: only {allowed} free node pairs among {n} nodes")
    chosen = np.zeros(0, dtype=np.int64)
    if k <= 0:
        return chosen
    # When most pairs are wanted, rejection would crawl: draw the complement instead (never for sparse graphs).
    if k > allowed // 2 and total_pairs <= 5_000_000:
        iu, ju = np.triu_indices(n, 1)
        all_keys = iu.astype(np.int64) * n + ju
        free = all_keys[~in_sorted(all_keys, exclude_sorted_keys)]
        return np.sort(rng.choice(free, size=k, replace=False))
    while chosen.size < k:
        need = k - chosen.size
        batch = int(need * 1.3 * total_pairs / max(allowed, 1)) + 64
        u = rng.integers(0, n, size=batch, dtype=np.int64)
        v = rng.integers(0, n, size=batch, dtype=np.int64)
        ok = u != v
        keys = pair_keys(np.stack([u[ok], v[ok]], axis=1), n)
        keys = keys[~in_sorted(keys, exclude_sorted_keys)]
        keys = np.unique(keys)
        keys = keys[~in_sorted(keys, chosen)]
        rng.shuffle(keys)
        chosen = np.sort(np.concatenate([chosen, keys[:need]]))
    return chosen


def _weighted_draw(cum: np.ndarray, starts: np.ndarray, totals: np.ndarray, blocks: np.ndarray,
                   rng: np.random.Generator, order: np.ndarray) -> np.ndarray:
    """One node per entry of ``blocks``, drawn within its block with probability proportional to the weights."""
    x = starts[blocks] + rng.random(blocks.size) * totals[blocks]
    pos = np.searchsorted(cum, x, side="right")
    return order[np.minimum(pos, order.size - 1)]


def _stub_draw(left: np.ndarray, block_of: np.ndarray, blocks: np.ndarray, num_blocks: int,
               rng: np.random.Generator) -> np.ndarray:
    """One node per entry of ``blocks``, drawn inside its block without replacement from the remaining stubs
    (``left[i]`` copies of node ``i``); -1 where the block's stubs run out."""
    nodes = np.repeat(np.arange(left.size), left)
    pool = nodes[np.lexsort((rng.random(nodes.size), block_of[nodes]))]
    pool_start = np.concatenate([[0], np.cumsum(np.bincount(block_of[nodes], minlength=num_blocks))])
    asks = np.lexsort((rng.random(blocks.size), blocks))
    asked = blocks[asks]
    rank = np.arange(asked.size) - np.searchsorted(asked, asked, side="left")
    out = np.full(blocks.size, -1, dtype=np.int64)
    ok = rank < pool_start[asked + 1] - pool_start[asked]
    out[asks[ok]] = pool[pool_start[asked[ok]] + rank[ok]]
    return out


def sample_block_edges(n: int, block_of: np.ndarray, weights: np.ndarray, pair_r: np.ndarray, pair_s: np.ndarray,
                       counts: np.ndarray, rng: np.random.Generator, *, max_rounds: int = 40,
                       exclude_sorted_keys: np.ndarray | None = None, stubs: np.ndarray | None = None
                       ) -> np.ndarray:
    """Sparse (degree-corrected) block-model sampling with exact edge counts per block pair.

    For every block pair ``(r, s)`` (``r <= s``) place ``counts`` distinct edges whose endpoints are drawn from block
    ``r`` and block ``s`` with probability proportional to ``weights`` (uniform weights = plain SBM, one block =
    Chung-Lu with a fixed edge count). Loops and repeats are redrawn; a block pair whose capacity (or whose weight
    concentration) makes the count unreachable after ``max_rounds`` keeps what it has. Returns sorted pair keys.

    With ``stubs`` (an integer per node) the endpoints are drawn without replacement from the nodes' remaining stubs
    instead (a configuration model per block pair), so a node gets about its stub count rather than a Poisson draw
    around it; loops and repeats give their stubs back for the next round, and a block whose stubs run out falls
    back to ``weights``.
    """
    block_of = np.asarray(block_of, dtype=np.int64)
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    pair_r = np.asarray(pair_r, dtype=np.int64)
    pair_s = np.asarray(pair_s, dtype=np.int64)
    # Blocks named by a pair but holding no node have capacity 0 (their counts are dropped below).
    num_blocks = int(max(block_of.max(initial=-1), pair_r.max(initial=-1), pair_s.max(initial=-1))) + 1
    sizes = np.bincount(block_of, minlength=num_blocks)
    order = np.argsort(block_of, kind="stable")
    wo = w[order]
    # Blocks whose weights are all zero fall back to uniform weights (a block cannot be empty of mass).
    block_mass = np.bincount(block_of, weights=w, minlength=num_blocks)
    zero_blocks = block_mass <= 0
    if zero_blocks.any():
        wo = np.where(zero_blocks[block_of[order]], 1.0, wo)
    cum = np.cumsum(wo)
    ends = np.cumsum(np.bincount(block_of[order], weights=wo, minlength=num_blocks))
    totals = np.bincount(block_of[order], weights=wo, minlength=num_blocks)
    starts = ends - totals

    r, s = np.minimum(pair_r, pair_s), np.maximum(pair_r, pair_s)
    cap = np.where(r == s, sizes[r] * (sizes[r] - 1) // 2, sizes[r] * sizes[s])
    target = np.minimum(np.maximum(np.asarray(counts, dtype=np.int64), 0), cap)
    keep = target > 0
    r, s, target = r[keep], s[keep], target[keep]
    if target.size == 0:
        return np.zeros(0, dtype=np.int64)
    excl = np.zeros(0, dtype=np.int64) if exclude_sorted_keys is None else exclude_sorted_keys
    have = np.zeros(target.size, dtype=np.int64)
    keys = np.zeros(0, dtype=np.int64)
    left = None if stubs is None else np.maximum(np.asarray(stubs, dtype=np.int64), 0)
    stalled = 0
    for _ in range(max_rounds):
        deficit = target - have
        if not (deficit > 0).any():
            break
        idx = np.nonzero(deficit > 0)[0]
        from_stubs = left is not None and bool(left.any())
        # Oversample a little: repeats and loops get dropped (not from stubs: every extra draw would take a stub).
        draws = deficit[idx] if from_stubs else np.ceil(deficit[idx] * 1.15 + 2).astype(np.int64)
        which = np.repeat(idx, draws)
        if from_stubs:
            wanted_blocks = np.concatenate([r[which], s[which]])
            ends = _stub_draw(left, block_of, wanted_blocks, num_blocks, rng)
            out = ends < 0
            if out.any():
                ends[out] = _weighted_draw(cum, starts, totals, wanted_blocks[out], rng, order)
            a, b = ends[:which.size], ends[which.size:]
        else:
            a = _weighted_draw(cum, starts, totals, r[which], rng, order)
            b = _weighted_draw(cum, starts, totals, s[which], rng, order)
        ok = a != b
        a, b, which = a[ok], b[ok], which[ok]
        k = pair_keys(np.stack([a, b], axis=1), n)
        fresh = ~in_sorted(k, keys) & ~in_sorted(k, excl)
        k, which = k[fresh], which[fresh]
        k, first = np.unique(k, return_index=True)
        which = which[first]
        # Random order, then keep at most the deficit per block pair.
        perm = rng.permutation(k.size)
        k, which = k[perm], which[perm]
        srt = np.argsort(which, kind="stable")
        k, which = k[srt], which[srt]
        rank = np.arange(which.size) - np.searchsorted(which, which, side="left")
        take = rank < deficit[which]
        k, which = k[take], which[take]
        have += np.bincount(which, minlength=target.size)
        stalled = stalled + 1 if from_stubs and k.size == 0 else 0
        if stalled >= 3:
            # The stubs left cannot pair (one node's, or nodes already joined): the rest is drawn by weight, so the
            # count is still met (a 3,000-node 4-regular pairing spun to max_rounds one edge short).
            left = None
        if left is not None:
            left = np.maximum(left - key_degrees(k, n), 0)
        keys = np.sort(np.concatenate([keys, k]))
    short = np.nonzero((target > have) & (cap[keep] <= _ENUMERATE_PAIRS_UP_TO))[0]
    if short.size:
        first = np.concatenate([[0], np.cumsum(sizes)])
        members = [order[first[b]:first[b + 1]] for b in range(num_blocks)]
        keys = _fill_by_enumeration(n, members, w, r[short], s[short], (target - have)[short], keys, excl, rng)
    return keys


#: A block pair still short after the rejection rounds is finished by listing its free pairs when it has at most this
#: many: small blocks with one heavy node are where rejection stalls (every draw repeats the same few pairs).
_ENUMERATE_PAIRS_UP_TO = 250_000


def _fill_by_enumeration(n: int, members: list[np.ndarray], w: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                         deficit: np.ndarray, keys: np.ndarray, excl: np.ndarray,
                         rng: np.random.Generator) -> np.ndarray:
    """Draw each block pair's missing edges without replacement from its free pairs, with probability proportional
    to ``w_a * w_b`` (then uniformly among zero-weight pairs if the weighted ones run out)."""
    added = []
    for r, s, need in zip(rows.tolist(), cols.tolist(), deficit.tolist()):
        a_nodes, b_nodes = members[r], members[s]
        if r == s:
            i, j = np.triu_indices(a_nodes.size, 1)
            a, b = a_nodes[i], a_nodes[j]
        else:
            a, b = np.repeat(a_nodes, b_nodes.size), np.tile(b_nodes, a_nodes.size)
        k = pair_keys(np.stack([a, b], axis=1), n)
        free = ~in_sorted(k, keys) & ~in_sorted(k, excl)
        k, weight = k[free], (w[a] * w[b])[free]
        positive = np.nonzero(weight > 0)[0]
        if positive.size > need:
            pick = rng.choice(positive, size=need, replace=False, p=weight[positive] / weight[positive].sum())
        else:
            rest = np.nonzero(weight <= 0)[0]
            pick = np.concatenate([positive, rng.permutation(rest)[: need - positive.size]])
        added.append(k[pick])
    return np.sort(np.concatenate([keys, *added]))


def graph_from_keys(n: int, keys: np.ndarray, name: str) -> Graph:
    keys = np.unique(np.asarray(keys, dtype=np.int64))
    return Graph(n, keys_to_edges(keys, n), name=name)


# ----------------------------------------------------------------------------------------------- fitted parameters
class ReleasedParams(FittedGenerator):
    """A fitted classical generator: only DP-released arrays and public configuration.

    Subclasses set ``kind`` and implement :meth:`_sample_one`. ``save`` writes ``params.npz`` (no pickle) and
    ``config.json``; ``load`` reads them back. ``reproducible_seed_used`` is ``True`` when the noise came from a
    user seed (then the certificate must say ``guarantee: none``).
    """

    kind: ClassVar[str] = ""

    def __init__(self, num_nodes: int, arrays: dict[str, np.ndarray], config: dict[str, Any], *,
                 public_assumptions: dict[str, str] | None = None, reproducible_seed_used: bool = False) -> None:
        self.num_nodes = int(num_nodes)
        self.arrays = {k: np.asarray(v) for k, v in arrays.items()}
        self.config = dict(config)
        self.public_assumptions = dict(public_assumptions or NODE_COUNT_PUBLIC)
        self.reproducible_seed_used = bool(reproducible_seed_used)

    # subclasses -----------------------------------------------------------------------------------------
    def _sample_one(self, rng: np.random.Generator) -> Graph:  # pragma: no cover - abstract
        raise NotImplementedError

    #: ``True`` for mechanisms whose output IS the released graph (randomized response, TmF): one graph only.
    single_output: ClassVar[bool] = False

    def sample(self, num_graphs: int = 1, *, num_nodes: int | None = None, rng: np.random.Generator | None = None
               ) -> list[Graph]:
        if num_nodes is not None and int(num_nodes) != self.num_nodes:
            raise OptionError(
                f"generator '{self.kind}' samples graphs on the input's {self.num_nodes} nodes (the public node "
                f"set); --num-nodes {num_nodes} is not supported"
            )
        self.check_sample_request(num_graphs, None)
        if self.single_output and num_graphs != 1:
            raise OptionError(
                f"generator '{self.kind}' releases exactly one perturbed graph; fit again for another (that spends "
                "budget again)"
            )
        rng = rng if rng is not None else np.random.default_rng()
        return [self._sample_one(rng) for _ in range(num_graphs)]

    def save(self, directory: Path) -> list[Path]:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        npz = directory / "params.npz"
        with open(npz, "wb") as fh:
            np.savez_compressed(fh, **self.arrays)
        cfg = directory / "config.json"
        cfg.write_text(json.dumps({
            "generator": self.kind,
            "num_nodes": self.num_nodes,
            "config": self.config,
            "public_assumptions": self.public_assumptions,
        }, indent=2, sort_keys=True))
        return [npz, cfg]

    @classmethod
    def load(cls, directory: Path) -> "ReleasedParams":
        directory = Path(directory)
        meta = json.loads((directory / "config.json").read_text())
        if cls.kind and meta.get("generator") != cls.kind:
            raise OptionError(f"{directory}: saved generator is '{meta.get('generator')}', not '{cls.kind}'")
        with np.load(directory / "params.npz", allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return cls(meta["num_nodes"], arrays, meta["config"], public_assumptions=meta.get("public_assumptions"))

