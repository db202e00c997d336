r"""Relational learning with entity-level DP (Huang, Yin, Chien, Wei, Li, "Differentially Private Relational
Learning with Entity-level Privacy Guarantees", 2025; reference code Graph-COM/Node_DP, read, not copied).

An encoder :math:`f_\theta` (an MLP over node features, output rows L2-normalised) is trained on *edge tuples*
with an InfoNCE loss; it is then used zero-shot to predict relations on another graph.

One step
--------
1. **Positives**: every edge of the (degree-capped) training graph joins the batch independently with probability
   :math:`\gamma` (Poisson). ``m`` = realised batch size.
2. **Negatives (NEG-SAMPLE-WOR)**: ``m * k_neg`` distinct node slots drawn without replacement from all ``n`` slots
   and dealt ``k_neg`` per positive tuple, so one node is a negative in at most ONE tuple of the batch. If
   ``m k_neg > n`` the tuples beyond ``n // k_neg`` get no negatives (masked), which keeps that property.
3. **Loss** of tuple :math:`i=(u,v,n_1..n_k)`, with :math:`s(a,b)=\langle f(x_a), f(x_b)\rangle/\tau`:

   .. math:: \ell_i = -s(u,v) + \log\Big(e^{s(u,v)} + \sum_{j} e^{s(u,n_j)}\Big).

   It reads only the features of its own ``2 + k_neg`` nodes.
4. **Clipping**: ``standard`` — each tuple's gradient clipped to :math:`C`; ``freq`` — FREQ-CLIP, tuple :math:`i`
   clipped to :math:`C/f_i` with :math:`f_i` the largest number of batch tuples any of its entities occurs in
   (:class:`graphrelease.dpsgd.FreqClipping`).
5. Noise :math:`\mathcal N(0,\sigma^2 C^2)` (float64, secure generator) on the clipped sum, divided by the expected
   batch size :math:`\gamma|E|`; Adam step. The step is charged to the budget BEFORE anything is sampled.

Privacy (proofs: ``docs/privacy.md#relational``)
-----------------------------------------------
* ``node`` adjacency (entity level; a node slot loses its edges and features). Degree cap ``K``: the analysis
  assumes every node has at most ``K`` edges (public domain assumption; :func:`graphrelease.models.common.cap_degree`
  projects an input into that domain). Conditioned on the shared tuples (the WOR deal is exchangeable, so the tuples
  not containing the node can be coupled to identical negatives), the node is a positive endpoint in
  :math:`i\sim\mathrm{Bin}(K,\gamma)` tuples and a negative in :math:`j\le 1` tuple; with standard clipping the
  clipped sum moves by at most :math:`(i+2j)C` (probed in ``tests/models/test_relational.py``). Accounting: the
  ``relational_coupled`` ledger entry, Theorem 3 of the seed evaluated numerically
  (:mod:`graphrelease.privacy.analysis.relational`).
* ``edge`` adjacency: removing one edge removes one positive tuple; by the same exchangeability the other tuples
  keep their negatives; node features are public. Standard clipping, sensitivity :math:`C`: the Poisson subsampled
  Gaussian (``subsampled_gaussian``, add/remove, rate :math:`\gamma`).

FREQ-CLIP caveat (measured, see the tests): with frequencies counted in the batch, removing a node also changes the
frequencies — hence the clipping thresholds — of tuples that share an entity with the removed node's tuples, so the
clipped sum can move by more than :math:`C`. The ``freq`` mode is kept to reproduce the seed (its ledger entry is
marked unsound, the certificate's guarantee is ``none``); ``standard`` is the default.

Noise multiplier and steps: ``noise_multiplier`` is given (default 1.0); the number of steps is the smaller of
``steps`` and the largest count the budget accepts (calibrated before training from the same ledger entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from graphrelease.errors import BudgetError, OptionError
from graphrelease.graph import Graph
from graphrelease.models.base import FitContext, MODELS, PrivateModel
from graphrelease.models.common import (
    MLP,
    cap_degree,
    feature_matrix,
    load_tensors,
    save_module,
    split_state,
)
from graphrelease.privacy.ledger import LedgerEntry

CLIPPINGS = ("standard", "freq")


@dataclass
class RelationalConfig:
    hidden: int = 128
    out_dim: int = 64
    layers: int = 2
    degree_cap: int = 5
    num_negatives: int = 4
    batch_size: int = 64
    steps: int = 200
    lr: float = 1e-3
    max_grad_norm: float = 1.0
    noise_multiplier: float = 1.0
    temperature: float = 0.2
    clipping: str = "standard"
    chunk_size: int = 64
    seed: int | None = None


# ----------------------------------------------------------------------------------------------- sampling


def negatives_wor(rng: np.random.Generator, num_nodes: int, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """NEG-SAMPLE-WOR: ``(negatives (m, k) int64, mask (m, k) bool)``; every node slot occurs at most once.

    ``min(m k, n)`` distinct slots are drawn without replacement and dealt ``k`` per tuple in order; tuples beyond
    ``n // k`` are masked out (no negatives) when ``m k > n``.
    """
    negs = np.zeros((m, k), dtype=np.int64)
    mask = np.zeros((m, k), dtype=bool)
    if m == 0 or k == 0:
        return negs, mask
    full = min(m, num_nodes // k)
    if full > 0:
        draw = rng.choice(num_nodes, size=full * k, replace=False)
        negs[:full] = draw.reshape(full, k)
        mask[:full] = True
    return negs, mask


def frequency_factors(pos: np.ndarray, negs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """FREQ-CLIP factors: for each tuple, the largest number of batch tuples any of its entities occurs in (>= 1)."""
    m = pos.shape[0]
    if m == 0:
        return np.ones(0)
    ents = [pos[:, 0], pos[:, 1]] + [np.where(mask[:, j], negs[:, j], -1) for j in range(negs.shape[1])]
    ents = np.stack(ents, axis=1)  # (m, 2 + k)
    counts: dict[int, int] = {}
    for row in ents:  # one count per tuple an entity occurs in
        for e in set(int(x) for x in row if x >= 0):
            counts[e] = counts.get(e, 0) + 1
    return np.array([max(counts[int(x)] for x in row if x >= 0) for row in ents], dtype=np.float64)


# ----------------------------------------------------------------------------------------------- loss


class Encoder(nn.Module):
    """MLP over node features; rows of the output are normalised in the loss (cosine scores)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, layers: int) -> None:
        super().__init__()
        self.mlp = MLP(in_dim, hidden, out_dim, layers=layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def _unit(h: torch.Tensor) -> torch.Tensor:
    return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-6)


def make_tuple_loss(temperature: float):
    """``loss_fn(model_fn, example)`` for one tuple ``(x_u, x_v, x_negs (k, d), mask (k,))``: InfoNCE."""

    def loss_fn(model_fn, example):
        xu, xv, xn, nm = example
        h = _unit(model_fn(torch.cat([xu.unsqueeze(0), xv.unsqueeze(0), xn], dim=0)))
        s = (h[1:] @ h[0]) / temperature  # (1 + k,)
        keep = torch.cat([torch.ones(1, dtype=torch.bool), nm])
        s = torch.where(keep, s, torch.full_like(s, -1e9))
        return torch.logsumexp(s, dim=0) - s[0]

    return loss_fn


def tuple_examples(x: torch.Tensor, pos: np.ndarray, negs: np.ndarray, mask: np.ndarray):
    """Batched example pytree of the tuples: features of u, v and the negatives, and the negative mask."""
    p = torch.as_tensor(pos, dtype=torch.long).reshape(-1, 2)
    n = torch.as_tensor(negs, dtype=torch.long)
    return (x[p[:, 0]], x[p[:, 1]], x[n], torch.as_tensor(mask, dtype=torch.bool))


def clipped_tuple_sum(model: nn.Module, x: torch.Tensor, pos: np.ndarray, negs: np.ndarray, mask: np.ndarray, *,
                      clipping: str, max_grad_norm: float, temperature: float, chunk_size: int = 64):
    """The pre-noise query of one step: the sum of the tuples' clipped gradients (float64 dict)."""
    from graphrelease.dpsgd import FlatClipping, FreqClipping, clipped_grad_sum

    m = int(pos.shape[0])
    if clipping == "freq":
        policy = FreqClipping(max_grad_norm=max_grad_norm, frequencies=frequency_factors(pos, negs, mask))
    else:
        policy = FlatClipping(max_grad_norm=max_grad_norm)
    return clipped_grad_sum(model, make_tuple_loss(temperature), tuple_examples(x, pos, negs, mask),
                            torch.arange(m), policy, chunk_size=chunk_size)


# ----------------------------------------------------------------------------------------------- accounting


def relational_entry(*, kind: str, clipping: str, noise_multiplier: float, sample_rate: float, num_negatives: int,
                     degree_cap: int, num_nodes: int, num_edges: int, count: int = 1) -> LedgerEntry:
    """The ledger entry one training step charges (see the module docstring)."""
    if kind == "edge":
        if clipping != "standard":
            raise OptionError("relational: under edge adjacency only clipping='standard' has an analysis here")
        return LedgerEntry(
            mechanism="subsampled_gaussian", stage="relational.dpsgd", count=count, sensitivity=1.0,
            params={"noise_multiplier": float(noise_multiplier), "sample_rate": float(sample_rate),
                    "sampling": "poisson", "neighboring": "add_remove"},
            proof="relational", note="edge tuples, Poisson positives, NEG-SAMPLE-WOR negatives, standard clipping",
        )
    sound = clipping == "standard"
    return LedgerEntry(
        mechanism="relational_coupled", stage="relational.dpsgd", count=count,
        params={"noise_multiplier": float(noise_multiplier), "sample_rate": float(sample_rate),
                "num_negatives": int(num_negatives), "degree_cap": int(degree_cap), "num_nodes": int(num_nodes),
                "num_edges": int(num_edges), "clipping": clipping},
        proof="relational", sound=sound,
        note=("entity-level coupled sampling (seed Theorem 3), standard clipping, degree cap is a public assumption"
              if sound else
              "FREQ-CLIP with in-batch frequencies: removing a node changes other tuples' thresholds, so the "
              "clipped sum can move by more than C (measured); kept to reproduce the seed, not a proved guarantee"),
    )


# ----------------------------------------------------------------------------------------------- evaluation


def split_halves(graph: Graph, *, seed: int = 0) -> tuple[Graph, Graph]:
    """Induced subgraphs on a random half of the nodes and on the other half (a public split seed)."""
    perm = np.random.default_rng(seed).permutation(graph.num_nodes)
    half = graph.num_nodes // 2
    a, b = np.sort(perm[:half]), np.sort(perm[half:])
    return (graph.induced_subgraph(a, name=f"{graph.name}-half-a"),
            graph.induced_subgraph(b, name=f"{graph.name}-half-b"))


def zero_shot_relation_scores(emb: np.ndarray, graph: Graph, *, candidates: int = 100, seed: int = 0,
                              max_queries: int = 2000) -> dict[str, float]:
    """PREC@1 and MRR of relation prediction: for an edge ``(u, v)`` of ``graph`` (both directions, up to
    ``max_queries`` drawn with the public ``seed``), rank ``v`` among ``v`` plus ``candidates - 1`` random
    non-neighbours of ``u`` by cosine similarity to ``u`` (ties count against the true node)."""
    rng = np.random.default_rng(seed)
    e = np.asarray(graph.edges)
    if e.shape[0] == 0:
        raise OptionError(f"graph '{graph.name}' has no edges to evaluate relation prediction on")
    q = np.concatenate([e, e[:, ::-1]])
    if q.shape[0] > max_queries:
        q = q[rng.choice(q.shape[0], size=max_queries, replace=False)]
    z = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    csr = graph.to_csr()
    ranks = []
    for u, v in q:
        nbrs = set(csr.indices[csr.indptr[u]:csr.indptr[u + 1]].tolist()) | {int(u)}
        cand = rng.integers(0, graph.num_nodes, size=3 * candidates)
        cand = [int(c) for c in cand if int(c) not in nbrs][: candidates - 1]
        s_true = float(z[u] @ z[v])
        s = z[cand] @ z[u] if cand else np.zeros(0)
        ranks.append(1 + int(np.sum(s >= s_true)))
    ranks = np.asarray(ranks, dtype=np.float64)
    return {"prec@1": float(np.mean(ranks == 1)), "mrr": float(np.mean(1.0 / ranks)), "queries": int(ranks.size)}


# ----------------------------------------------------------------------------------------------- the model


@MODELS.register("relational")
class RelationalModel(PrivateModel):
    """Encoder trained on edge tuples with InfoNCE under entity-level (node) or edge DP; ``embed`` gives the
    normalised encoder output of a graph's nodes (zero-shot relation prediction on another graph)."""

    config_class = RelationalConfig
    adjacencies = frozenset({"node", "edge"})
    pair_score = "cosine"
    #: no node labels are used: accuracies are not defined (``graphrelease.train`` reports them as nan)
    train_accuracy: float = float("nan")
    test_accuracy: float = float("nan")

    def __init__(self, **options: Any) -> None:
        self.config = RelationalConfig(**options)
        c = self.config
        if c.clipping not in CLIPPINGS:
            raise OptionError(f"relational: clipping must be one of {CLIPPINGS}, got {c.clipping!r}")
        if c.degree_cap < 1 or c.num_negatives < 0 or c.batch_size < 1:
            raise OptionError(f"relational: need degree_cap >= 1, num_negatives >= 0, batch_size >= 1 (got {c})")
        self.net: Encoder | None = None
        self.steps = 0
        self.used_seed = False
        self.public_assumptions: dict[str, str] = {}

    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        from graphrelease.dpsgd import gaussian_noise_like

        c, kind, private, rng, tgen = self.config, ctx.kind, ctx.private, ctx.rng, ctx.tgen
        g = cap_degree(graph, c.degree_cap) if kind == "node" else graph
        if g.num_edges == 0:
            raise OptionError(f"relational: graph '{graph.name}' has no edges to train on")
        # The sampling rate batch_size / |E| and Theorem 3 read the exact edge count. Neighbouring graphs differ in
        # |E|, so they would run at different rates, and the count is released through no mechanism: the release
        # is not covered by the proof (PRIVACY.md section 1), whatever the owner declares.
        self.uncertified_reasons = [] if not private else [
            "relational: the sampling rate batch_size/|E| and Theorem 3 read the exact edge count, which neighbouring "
            "graphs do not share and no mechanism releases"]
        if kind == "node":
            self.public_assumptions = {
                "degree_cap": f"every node has at most {c.degree_cap} edges (the input is projected by a public-order "
                              "edge-addition cap)",
                "node_count": "the number of node slots is public",
                "edge_count": "NOT covered: the exact edge count after the degree cap sets the sampling rate",
            }
        else:
            self.public_assumptions = {
                "features": "node features and the node set are public under edge adjacency",
                "edge_count": "NOT covered: the exact edge count sets the sampling rate",
            }
        x = feature_matrix(g)
        n, num_edges = g.num_nodes, g.num_edges
        gamma = min(1.0, c.batch_size / num_edges)
        if kind == "node" and 2 * c.batch_size * c.num_negatives > n:
            # NEG-SAMPLE-WOR masks tuples once a batch needs more than n negatives, which breaks the per-tuple
            # coupling of Theorem 3 (review F3); keep batches far below that regime.
            raise OptionError(f"relational (node adjacency): batch_size x num_negatives = "
                              f"{c.batch_size * c.num_negatives} must stay below n/2 = {n // 2}; lower --set batch_size")
        self.in_dim = x.shape[1]
        self.net = Encoder(self.in_dim, c.hidden, c.out_dim, c.layers)
        opt = torch.optim.Adam(self.net.parameters(), lr=c.lr)
        entry = relational_entry(kind=kind, clipping=c.clipping, noise_multiplier=c.noise_multiplier,
                                 sample_rate=gamma, num_negatives=c.num_negatives, degree_cap=c.degree_cap,
                                 num_nodes=n, num_edges=num_edges)
        steps = c.steps
        if private:
            steps = min(steps, int(budget.max_count(entry)))
            if steps < 1:
                raise BudgetError(f"relational: epsilon={budget.epsilon} does not allow one step at noise multiplier "
                                  f"{c.noise_multiplier}; raise --epsilon or the noise multiplier")
        self.sample_rate, self.noise_multiplier = gamma, c.noise_multiplier if private else 0.0
        edges = np.asarray(g.edges)
        named = dict(self.net.named_parameters())
        self.net.train()
        for _ in range(steps):
            if private:
                budget.charge(entry)  # before anything private is sampled
            pos = edges[rng.random(num_edges) < gamma]
            if kind == "edge":
                # Independent negatives per tuple: removing one positive removes exactly one tuple (review F3: shared
                # without-replacement negatives can unmask another tuple when the batch is large relative to n).
                negs = rng.integers(0, n, size=(pos.shape[0], c.num_negatives))
                mask = np.ones(negs.shape, dtype=bool)
            else:
                negs, mask = negatives_wor(rng, n, pos.shape[0], c.num_negatives)
            summed = clipped_tuple_sum(self.net, x, pos, negs, mask, clipping=c.clipping,
                                       max_grad_norm=c.max_grad_norm, temperature=c.temperature,
                                       chunk_size=c.chunk_size)
            noise = gaussian_noise_like(summed, c.noise_multiplier * c.max_grad_norm, tgen) if private else None
            opt.zero_grad(set_to_none=True)
            for name, total in summed.items():
                gsum = total if noise is None else total + noise[name]
                named[name].grad = (gsum / (gamma * num_edges)).to(named[name].dtype)
            opt.step()
            self.steps += 1
            if progress is not None:
                progress()
        self.net.eval()

    @torch.no_grad()
    def embed(self, graph: Graph) -> np.ndarray:
        """Unit-norm encoder output per node of ``graph``: released weights applied to that graph's own features.

        Under node adjacency the features of the training graph are private: embeddings of the TRAINING graph's
        nodes are then not covered by the certificate (release the weights; recipients embed their own graphs).
        """
        if self.net is None:
            raise OptionError("relational: call fit() or load() before embed()")
        x = feature_matrix(graph)
        if x.shape[1] != self.in_dim:
            raise OptionError(f"relational: the encoder expects {self.in_dim} features, the graph has {x.shape[1]}")
        return _unit(self.net(x)).numpy()

    def score_pairs(self, graph: Graph, pairs: np.ndarray) -> np.ndarray:
        """Link scores: cosine of the pair's embeddings (post-processing of the released encoder)."""
        z = self.embed(graph)
        p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if p.size and (p.min() < 0 or p.max() >= graph.num_nodes):
            raise OptionError(f"relational: pairs must name nodes 0..{graph.num_nodes - 1}")
        return np.sum(z[p[:, 0]] * z[p[:, 1]], axis=1)

    def predict(self, graph: Graph) -> np.ndarray:
        """Relation scores are pairwise; per node this returns the embedding (score(u, v) = <z_u, z_v>)."""
        return self.embed(graph)

    def save(self, directory: Path) -> list[Path]:
        if self.net is None:
            raise OptionError("relational: nothing to save before fit()")
        return [save_module(directory, "weights", {"net": self.net}),
                self.write_released_config(directory, in_dim=self.in_dim)]

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> "RelationalModel":
        model = cls.from_released_config(config)
        c = model.config
        model.in_dim = int(config["in_dim"])
        model.net = Encoder(model.in_dim, c.hidden, c.out_dim, c.layers)
        model.net.load_state_dict(split_state(load_tensors(Path(directory) / "weights.safetensors"), "net"))
        model.net.eval()
        return model


def standard_vs_freq_epsilons(*, steps: list[int], delta: float, **params: Any) -> dict[str, list[float]]:
    """Epsilon after each of ``steps`` for both clippings (Figure 2 of the seed): one per-step RDP curve per
    clipping from :mod:`graphrelease.privacy.analysis.relational`, composed over T and converted (Balle et al.
    2020, Thm 21)."""
    from graphrelease.privacy.analysis import rdp as rdp_analysis
    from graphrelease.privacy.analysis import relational as rel

    out: dict[str, list[float]] = {}
    orders = list(rdp_analysis.DEFAULT_ORDERS)
    for clip in CLIPPINGS:
        curve = rel.rdp_per_step({**params, "clipping": clip}, orders)
        out[clip] = [float(rdp_analysis.rdp_to_epsilon(curve * t, delta, orders)[0]) for t in steps]
    return out


