r"""One graph, mode ``measured`` (issue 16): measure with ``dp_bter``, then train the GVAE/GGAN on post-processing.

The sound single-graph modes that train on the private graph (``edge-tuples``, ``buckets``) buy a few dozen very
noisy DP-SGD steps and then sample from prior latents through an inner-product decoder with one global offset; that
sampler puts the edges on a dense core and leaves most nodes isolated (reports/deep_generators.md, diagnosis). This
mode follows "measure once, in one place":

1. The whole budget buys ``dp_bter``'s statistics through :class:`~graphrelease.generators.bter.DPBTER` itself:
   the same release code, the same ``dp_bter.*`` ledger entries and the same proofs (``docs/privacy.md#dp-bter``).
   Nothing else reads the private graph.
2. Skeleton graphs are drawn from those statistics (post-processing) and the GVAE/GGAN (GCN encoder, FNN decoder,
   GGAN's discriminator) is trained on their union without DP-SGD: its input is a function of released values only,
   so it costs nothing and the certificate covers the measurements only.
3. Sampling draws a fresh skeleton (it carries the measured degrees, triangle count, block-pair counts and component
   count) and applies a learned residual: a ``residual`` share of its triangle-free edges are offered
   degree-preserving double-edge swaps, each kept with probability ``sigmoid(decoder score gain)``. Degrees are
   unchanged by construction and edges on triangles are never moved, so the measured structure stays.

Time and memory are linear in the edges (dp_bter's fit and draws plus ``steps`` sparse GCN passes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from graphrelease.generators import deep_models as dm
from graphrelease.generators.base import FittedGenerator
from graphrelease.generators.bter import DPBTER, FittedBTER
from graphrelease.generators.deep_fitted import read_decoder, write_decoder
from graphrelease.graph import Graph

#: Skeleton draws the decoder is trained on (their union). One: each draw of a 500k-edge graph costs ~10 CPU-s.
SKELETON_DRAWS = 1
#: Larger skeletons are trained on the induced subgraph of a breadth-first ball of this many nodes (the GCN's weights
#: do not depend on n; the posterior latents of every node are then one pass over the whole skeleton). Keeps a
#: 500k-edge fit under 2 CPU-minutes: a full-graph step on Slashdot's skeleton took ~0.8 CPU-s.
TRAIN_NODES = 8000
#: Default share of a sample's triangle-free edges offered a decoder-guided swap. Measured (Cora and Facebook, epsilon
#: 1, two fits, same samples at 0 / 0.1 / 0.3 / 1): every positive share raised the triangle and global-clustering
#: errors on Cora (0.174 -> 0.188 -> 0.204 -> 0.244) and changed nothing on Facebook, so the default is off; the
#: decoder then only supplies the released embeddings (reports/deep_generators.md).
DEFAULT_RESIDUAL = 0.0
#: Default training steps of the GVAE/GGAN on the skeletons (post-processing; bounded for the 2 CPU-min target).
DEFAULT_STEPS = 100


def fit_measured_single(graph: Graph, budget: Any, *, make_net: Any, features: torch.Tensor | None,
                        feature_dim: int, steps: int, lr: float, residual: float, seed: int | None,
                        gen: torch.Generator, rng: np.random.Generator, config: dict[str, Any],
                        progress: Any = None) -> "FittedMeasuredSingle":
    """Spend ``budget`` on dp_bter's statistics, train the network on skeletons drawn from them (free)."""
    from graphrelease.generators import deep_train as dt

    skeleton = DPBTER(seed=seed).fit(graph, budget)  # every DP release of this mode: dp_bter.* ledger entries
    n = graph.num_nodes
    draws = [skeleton.sample(1, rng=rng)[0].edges for _ in range(SKELETON_DRAWS)]
    keys = np.unique(np.concatenate([np.minimum(e[:, 0], e[:, 1]) * n + np.maximum(e[:, 0], e[:, 1])
                                     for e in draws if len(e)] or [np.zeros(0, dtype=np.int64)]))
    edges = np.stack([keys // n, keys % n], axis=1).astype(np.int64)
    # Featureless graphs: a fixed random code per node (public randomness, independent of E), not an n-wide one-hot.
    x = features if features is not None else torch.randn(n, feature_dim, generator=gen)
    net = make_net(x.shape[1])
    nodes, local = training_ball(n, edges, TRAIN_NODES, rng)
    if len(local):
        dt.train_single_nonprivate(net, nodes.size, local, x[torch.as_tensor(nodes)], steps=steps, lr=lr, gen=gen,
                                   rng=rng, progress=progress)
    mu, lv = dt.posterior_latents_gcn(net, n, edges, x)
    cfg = {**config, "mode": "measured", "steps": int(steps), "residual": float(residual),
           "skeleton_draws": SKELETON_DRAWS,
           "decoder": "GVAE/GGAN trained on dp_bter skeletons (post-processing); residual degree-preserving swaps",
           "public_assumptions": dict(skeleton.public_assumptions)}
    return FittedMeasuredSingle(skeleton, net.detached(), cfg, (mu, lv))


def training_ball(n: int, edges: np.ndarray, limit: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Nodes of breadth-first balls (random roots) up to ``limit`` nodes, and their induced edges relabelled."""
    if n <= limit or not len(edges):
        return np.arange(n), edges
    from scipy.sparse.csgraph import breadth_first_order

    a = sp.csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    a = a + a.T
    taken = np.zeros(n, dtype=bool)
    picked: list[np.ndarray] = []
    count = 0
    for root in rng.permutation(n):
        if count >= limit:
            break
        if taken[root]:
            continue
        order = breadth_first_order(a, int(root), directed=False, return_predecessors=False)
        order = order[~taken[order]][: limit - count]
        taken[order] = True
        picked.append(order)
        count += order.size
    nodes = np.sort(np.concatenate(picked))
    pos = np.full(n, -1, dtype=np.int64)
    pos[nodes] = np.arange(nodes.size)
    keep = (pos[edges[:, 0]] >= 0) & (pos[edges[:, 1]] >= 0)
    return nodes, pos[edges[keep]]


def triangle_support(n: int, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Common-neighbour count of the edges ``keys[rows]`` (cost linear in their endpoints' degrees)."""
    u, v = keys // n, keys % n
    a = sp.csr_matrix((np.ones(2 * keys.size), (np.concatenate([u, v]), np.concatenate([v, u]))), shape=(n, n))
    return np.asarray(a[u[rows]].multiply(a[v[rows]]).sum(axis=1)).ravel()


def residual_swaps(n: int, keys: np.ndarray, emb: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Degree-preserving double-edge swaps of triangle-free edges, each kept w.p. sigmoid(score gain).

    ``keys`` are sorted pair keys ``u * n + v`` (u < v); ``emb`` are decoded node embeddings (scores are their inner
    products; the decoder's bias cancels in a swap). Returns the new sorted keys (same degrees, same edge count).
    """
    k = int(share * keys.size) // 2 * 2
    if k < 2 or share <= 0:
        return keys
    rows = rng.choice(keys.size, size=k, replace=False)
    rows = rows[triangle_support(n, keys, rows) == 0]
    rows = rows[: rows.size // 2 * 2]
    if rows.size < 2:
        return keys
    a, b = keys[rows[0::2]] // n, keys[rows[0::2]] % n
    c, d = keys[rows[1::2]] // n, keys[rows[1::2]] % n
    flip = rng.random(a.size) < 0.5  # both rewirings (a-d, c-b) and (a-c, b-d) are offered
    c, d = np.where(flip, d, c), np.where(flip, c, d)

    def score(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", emb[x], emb[y])

    gain = score(a, d) + score(c, b) - score(a, b) - score(c, d)
    take = rng.random(a.size) < 1.0 / (1.0 + np.exp(-np.clip(gain, -50, 50)))
    n1 = np.minimum(a, d) * n + np.maximum(a, d)
    n2 = np.minimum(c, b) * n + np.maximum(c, b)
    take &= (a != d) & (c != b) & (n1 != n2)
    take &= ~np.isin(n1, keys) & ~np.isin(n2, keys)
    # two accepted swaps must not create the same new pair
    new = np.concatenate([n1[take], n2[take]])
    uniq, counts = np.unique(new, return_counts=True)
    dup = uniq[counts > 1]
    take &= ~np.isin(n1, dup) & ~np.isin(n2, dup)
    gone = np.concatenate([keys[rows[0::2]][take], keys[rows[1::2]][take]])
    return np.union1d(np.setdiff1d(keys, gone), np.concatenate([n1[take], n2[take]]))


class FittedMeasuredSingle(FittedGenerator):
    """Released: dp_bter's statistics, the decoder weights and per-node latents (post-processing of those)."""

    releases_embeddings = True

    def __init__(self, skeleton: FittedBTER, decoder: dict[str, torch.Tensor], config: dict[str, Any],
                 latents: tuple[torch.Tensor, torch.Tensor]) -> None:
        self.skeleton = skeleton
        self.decoder = {k: v.detach().clone().float() for k, v in decoder.items() if k.startswith(dm.DEC_PREFIX)}
        self.config = dict(config)
        self.latents = latents
        self.public_assumptions = dict(self.config.get("public_assumptions", {}))

    @property
    def has_node_latents(self) -> bool:
        return True

    def embeddings(self, num_nodes: int, rng: np.random.Generator) -> np.ndarray:
        """Decoded embeddings of the posterior means (node ``i`` is the input's node ``i``)."""
        mu = self.latents[0]
        idx = torch.arange(mu.shape[0]) if num_nodes == mu.shape[0] else \
            torch.as_tensor(rng.integers(0, mu.shape[0], size=num_nodes))
        with torch.no_grad():
            return dm.decode(self.decoder, mu[idx]).double().numpy()

    def sample(self, num_graphs: int = 1, *, num_nodes: int | None = None, rng: np.random.Generator | None = None
               ) -> list[Graph]:
        rng = rng if rng is not None else np.random.default_rng()
        graphs = self.skeleton.sample(num_graphs, num_nodes=num_nodes, rng=rng)  # checks the request
        share = float(self.config.get("residual", 0.0))
        if share <= 0:  # the default: the samples are the skeleton's, no decoding needed
            return [g.replace(name=f"synthetic_{i:03d}") for i, g in enumerate(graphs)]
        n = self.skeleton.num_nodes
        emb = self.embeddings(n, rng)
        out = []
        for i, g in enumerate(graphs):
            e = g.edges
            keys = np.unique(np.minimum(e[:, 0], e[:, 1]) * n + np.maximum(e[:, 0], e[:, 1])) if len(e) else \
                np.zeros(0, dtype=np.int64)
            keys = residual_swaps(n, keys, emb, share, rng)
            out.append(Graph(n, np.stack([keys // n, keys % n], axis=1).astype(np.int64), name=f"synthetic_{i:03d}"))
        return out

    def save(self, directory: Path) -> list[Path]:
        directory = Path(directory)
        tensors = {**self.decoder, "latent.mu": self.latents[0].float(), "latent.logvar": self.latents[1].float()}
        return write_decoder(directory, tensors, self.config) + self.skeleton.save(directory / "skeleton")

    @classmethod
    def load(cls, directory: Path) -> "FittedMeasuredSingle":
        directory = Path(directory)
        tensors, config = read_decoder(directory, "single-graph measured-mode decoder")
        latents = (tensors.pop("latent.mu"), tensors.pop("latent.logvar"))
        return cls(FittedBTER.load(directory / "skeleton"), tensors, config, latents)
