"""GVAE / GGAN generators behind the :class:`~graphrelease.generators.base.GraphGenerator` interface.

Modes (``mode=``):

``nonprivate``   plain GVAE/GGAN (registered as ``gvae`` / ``ggan``): the utility ceiling; reads the data without
                 noise, the certificate says ``guarantee: none`` (non-private).
``paper``        the seed's Algorithm 1 as published (per-node clipping of decoder gradients, encoder and
                 discriminator on the raw adjacency). NOT private: its ledger entry is marked ``sound=False`` with
                 the reason, so the certificate says ``guarantee: none``; needs ``allow_uncertified``.
``edge-tuples``  one large graph, option A of PRIVACY.md §3: DP edge count, DP sketch ``S = A R + N``, then DP-SGD
                 over Poisson-sampled positive edges with an MLP encoder reading only sketch rows and public features;
                 negatives, KL and (GGAN) a discriminator over sketch rows are post-processing.
``buckets``      one large graph, option B: every step each node joins bucket j with probability q/m; example j is
                 bucket j's induced subgraph (GCN encoder kept), its whole gradient clipped; joint-convexity
                 accounting with pair rate q^2/m.
``graphs``       a collection: one example = one graph (Poisson-sampled), whole gradient clipped. Graph adjacency:
                 add/remove subsampled Gaussian; edge adjacency: replace-one under Poisson sampling.
``measured``     edge adjacency (issue 16), measure then generate. A collection: the whole budget buys per-graph DP
                 statistics (edge, triangle and component counts, per-size-class degree histograms;
                 :mod:`~graphrelease.generators.deep_measured`) and a conditional latent-distance decoder is trained
                 on them only (:mod:`~graphrelease.generators.deep_conditional`). One graph: the whole budget buys
                 dp_bter's statistics and the GVAE/GGAN is trained on skeletons drawn from them
                 (:mod:`~graphrelease.generators.deep_single`). Both are post-processing after the measurements.
``auto``         :data:`DEFAULT_COLLECTION_MODE` for collections, :data:`DEFAULT_SINGLE_MODE` for one graph.

Released (``model/``): the decoder weights, its config, the node-count model, the DP edge-count target and — for
``edge-tuples`` and ``nonprivate`` — per-node latent posteriors (for edge-tuples a function of the DP sketch and the
DP-trained encoder only, i.e. post-processing). The encoder itself is never released.
"""

from __future__ import annotations

import math
from typing import Any, Callable, ClassVar

import numpy as np
import torch

from graphrelease.errors import BudgetError, GraphValidationError, OptionError
from graphrelease.generators import deep_models as dm
from graphrelease.generators import deep_train as dt
from graphrelease.generators.base import GeneratorFitContext, GraphGenerator
from graphrelease.graph import Graph, GraphCollection
from graphrelease.generators.deep_fitted import FittedDeep  # noqa: F401  (releases name it from here too)
from graphrelease.privacy.ledger import LedgerEntry

MODES = ("auto", "nonprivate", "paper", "edge-tuples", "buckets", "graphs", "measured")
#: Default sound mode for a collection under edge adjacency (graph adjacency falls back to ``graphs``); decided in
#: reports/deep_generators.md.
DEFAULT_COLLECTION_MODE = "measured"
#: Default sound mode for one large graph (issue 16): ``measured`` (dp_bter's statistics, then the network trained
#: on post-processing; :mod:`~graphrelease.generators.deep_single`) beats ``buckets`` and ``dp_dcsbm`` on triangles,
#: global clustering and degree KL on Cora and Facebook at epsilon 1 and 4 (reports/deep_generators.md). ``buckets``
#: and ``edge-tuples`` stay available (DP-SGD on the private graph; their prior-latent sampler isolates most nodes).
DEFAULT_SINGLE_MODE = "measured"
#: Noise multipliers above this make training useless; budgets that need more are refused (BudgetError).
MAX_NOISE_MULTIPLIER = 200.0
PAPER_NOTE = (
    "seed Alg. 1 (mode=paper) clips per node while the GCN encoder and discriminator read the raw adjacency "
    "without noise: one edge changes every node's gradient in its receptive field, so the per-node bound does not "
    "bound one edge's influence (PRIVACY.md section 3). Epsilon shown is the nominal value of the clipped decoder "
    "channel only; the algorithm has no differential-privacy guarantee."
)


# --------------------------------------------------------------------------------------------------- accounting
def _compute_epsilon(entries: list[LedgerEntry], delta: float, accountant: str) -> float:
    from graphrelease.privacy.accountants import compute_epsilon

    return compute_epsilon(entries, delta, accountant)


def _calibrate(make: Callable[[float], list[LedgerEntry]], *, prior: list[LedgerEntry], target: float,
               delta: float, accountant: str, what: str, rtol: float = 5e-3,
               max_sigma: float = MAX_NOISE_MULTIPLIER) -> float:
    """Smallest scale ``c`` (noise multiplier) with ``eps(prior + make(c)) <= target``; BudgetError if even
    ``max_sigma`` does not fit, naming the smallest feasible epsilon for this schedule."""
    from graphrelease.privacy.calibration import calibrate

    # The search uses the RDP accountant: fast at every sigma, and never tighter than PLD (PRIVACY.md 2.3), so the
    # result also fits a PLD budget (it may leave some of it unspent; the certificate reports what was spent).
    return calibrate(make, target_epsilon=target, delta=delta, accountant="rdp", prior=prior, lo=0.05,
                     hi=max_sigma, rtol=rtol, what=what)


def _gaussian_entry(stage: str, sigma: float, sensitivity: float, proof: str, note: str = "") -> LedgerEntry:
    return LedgerEntry(mechanism="gaussian", stage=stage, params={"noise_multiplier": float(sigma)},
                       sensitivity=float(sensitivity), proof=proof, note=note)


def _share_sigma(share_eps: float, sensitivity: float, delta: float, accountant: str) -> float:
    """Noise multiplier of a one-shot Gaussian that alone costs ``share_eps`` (then composed with the rest)."""
    return _calibrate(lambda c: [_gaussian_entry("share", c, sensitivity, "gaussian")], prior=[],
                      target=share_eps, delta=delta, accountant=accountant, what="a one-shot Gaussian release",
                      rtol=2e-2, max_sigma=1e6)


# ------------------------------------------------------------------------------------------------- generators

def truncated_edge_counts(coll: GraphCollection, cap: int) -> np.ndarray:
    """Per-graph edge count among each graph's first ``cap`` nodes (the public truncation): the vector the
    ``graphs`` mode releases under edge adjacency (one edge changes one coordinate by one: L2 sensitivity 1)."""
    return np.array([float(g.induced_subgraph(np.arange(cap)).num_edges if g.num_nodes > cap else g.num_edges)
                     for g in coll])

class DeepGraphGenerator(GraphGenerator):
    """Shared implementation of GVAE (``gan=False``) and GGAN (``gan=True``) in every mode."""

    gan: ClassVar[bool] = False
    default_mode: ClassVar[str] = "auto"
    inputs = frozenset({"graph", "collection"})
    adjacencies = frozenset({"edge", "graph"})
    runs_unlimited = True  # the non-private ceilings (gvae, ggan) fit on an unlimited budget

    def __init__(self, *, mode: str | None = None, epochs: float | None = None, lr: float | None = None,
                 max_grad_norm: float = 5.0, clip_decay: float = 0.99, lambda1: float = 0.1, lambda2: float = 0.1,
                 batch_size: int | None = None, sketch_dim: int = 16, count_share: float = 0.05,
                 sketch_share: float = 0.25, num_negatives: int = 256, bucket_size: int = 64,
                 bucket_rate: float = 1.0, max_nodes: int = 128, paper_noise_multiplier: float = 5.0,
                 paper_sample_rate: float = 0.01, max_steps: int = 2000, steps: int | None = None,
                 feature_dim: int = 32, residual: float | None = None, seed: int | None = None) -> None:
        mode = (mode or self.default_mode).lower().replace("_", "-")
        if mode not in MODES:
            raise OptionError(f"unknown mode '{mode}' for {self.name}; choose one of: {', '.join(MODES)}")
        if self.non_private and mode not in ("auto", "nonprivate"):
            raise OptionError(f"{self.name} is the non-private baseline; use dp{self.name} for mode '{mode}'")
        if not self.non_private and mode == "nonprivate":
            raise OptionError(f"{self.name}: mode 'nonprivate' is the separate method '{self.name[2:]}'")
        for key, value in (("max_grad_norm", max_grad_norm), ("sketch_dim", sketch_dim),
                           ("num_negatives", num_negatives), ("bucket_size", bucket_size), ("max_nodes", max_nodes),
                           ("paper_noise_multiplier", paper_noise_multiplier), ("max_steps", max_steps)):
            if not value > 0:
                raise OptionError(f"{self.name}: {key} must be > 0, got {value!r}")
        for key, value in (("bucket_rate", bucket_rate), ("paper_sample_rate", paper_sample_rate),
                           ("clip_decay", clip_decay)):
            if not 0 < value <= 1:
                raise OptionError(f"{self.name}: {key} must be in (0, 1], got {value!r}")
        if not (0 < count_share < 1 and 0 < sketch_share < 1 and count_share + sketch_share < 0.9):
            raise OptionError(f"{self.name}: count_share and sketch_share must be in (0, 1) with sum < 0.9")
        if epochs is not None and not epochs > 0:
            raise OptionError(f"{self.name}: epochs must be > 0, got {epochs!r}")
        self.mode, self.epochs, self.lr = mode, epochs, lr
        self.max_grad_norm, self.clip_decay = float(max_grad_norm), float(clip_decay)
        self.lambda1, self.lambda2 = float(lambda1), float(lambda2)
        self.batch_size, self.sketch_dim = batch_size, int(sketch_dim)
        self.count_share, self.sketch_share = float(count_share), float(sketch_share)
        self.num_negatives, self.bucket_size, self.bucket_rate = int(num_negatives), int(bucket_size), bucket_rate
        self.max_nodes = int(max_nodes)
        self.paper_sigma, self.paper_rate = float(paper_noise_multiplier), float(paper_sample_rate)
        self.max_steps, self.steps, self.seed = int(max_steps), steps, seed
        self.feature_dim = int(feature_dim)
        if residual is not None and not 0 <= residual <= 1:
            raise OptionError(f"{self.name}: residual must be in [0, 1], got {residual!r}")
        self.residual = residual
        self.last_info: dict[str, Any] = {}

    # ---------------------------------------------------------------------------------------------- dispatch
    def resolve_mode(self, data: Graph | GraphCollection) -> str:
        if self.non_private:
            return "nonprivate"
        if self.mode != "auto":
            return self.mode
        return DEFAULT_COLLECTION_MODE if isinstance(data, GraphCollection) else DEFAULT_SINGLE_MODE

    def _fit(self, data: Graph | GraphCollection, budget, ctx: GeneratorFitContext, *, progress: Any = None
             ) -> FittedDeep:
        mode = self.resolve_mode(data)
        is_coll = isinstance(data, GraphCollection)
        if is_coll and mode in ("edge-tuples", "buckets", "paper"):
            raise OptionError(f"{self.name}: mode '{mode}' is for one graph; a collection takes mode 'graphs'")
        if not is_coll and mode == "graphs":
            raise OptionError(f"{self.name}: mode '{mode}' is for a collection of graphs; give a collection")
        adjacency = budget.ledger.adjacency.kind.value
        if mode == "measured" and adjacency != "edge":
            if self.mode == "measured":
                raise OptionError(f"{self.name}: mode 'measured' certifies edge adjacency only; use mode 'graphs'")
            mode = "graphs"  # auto under graph adjacency
        if adjacency == "graph" and not is_coll:
            raise OptionError(f"{self.name}: graph adjacency needs a collection input; use --adjacency edge")
        np_rng = ctx.rng
        gen = torch.Generator().manual_seed(int(np_rng.integers(0, 2**62)))
        self.last_info = {"mode": mode}
        kw = dict(budget=budget, np_rng=np_rng, noise_gen=ctx.torch_generator, gen=gen, progress=progress)
        if mode == "nonprivate":
            return self._fit_nonprivate(data, **kw)
        if mode == "paper":
            return self._fit_paper(data, **kw)
        if mode == "edge-tuples":
            return self._fit_edge_tuples(data, **kw)
        if mode == "buckets":
            return self._fit_buckets(data, **kw)
        if mode == "measured":
            return self._fit_measured(data, **kw) if is_coll else self._fit_measured_single(data, **kw)
        return self._fit_graphs(data, adjacency, **kw)

    def _fit_measured(self, coll: GraphCollection, *, budget, np_rng, noise_gen, gen, progress):
        from graphrelease.generators import deep_conditional as dc
        from graphrelease.generators.deep_measured import release_collection_stats

        if coll.node_set_inferred:
            raise OptionError(f"{self.name}: mode 'measured' treats every graph's node count as public; this "
                              f"collection's node sets were read off its edges, not declared (declare them, or use "
                              f"mode 'graphs')")
        stats = release_collection_stats(coll, budget, np_rng, epsilon=budget.epsilon, cap=self.max_nodes,
                                         stage=f"{self.name}.measured")
        steps = self.steps or int(1000 * (self.epochs or 1))
        net, curve = dc.train_conditional(stats, steps=steps, batch=self.batch_size or 32, lr=self.lr or 2e-3,
                                          gen=gen, rng=np_rng)
        self.last_info.update(steps=steps, final_loss=float(np.mean(curve[-20:])))
        public = {"node_counts": "every graph's node count is public (declared; edge adjacency)",
                  "max_nodes": f"public cap {self.max_nodes}: larger graphs keep their first {self.max_nodes} nodes"}
        return dc.FittedMeasured(net, stats, {"method": self.name, "mode": "measured", "gan": self.gan,
                                              "steps": steps, "decoder": "conditional latent-distance MLP",
                                              "public_assumptions": public})

    def _fit_measured_single(self, graph: Graph, *, budget, np_rng, noise_gen, gen, progress):
        from graphrelease.generators import deep_single as ds

        steps = self.steps or int(ds.DEFAULT_STEPS * (self.epochs or 1))
        residual = ds.DEFAULT_RESIDUAL if self.residual is None else self.residual
        self.last_info.update(steps=steps, residual=residual)
        return ds.fit_measured_single(
            graph, budget, make_net=lambda d: self._net(d, gen, disc_in=d), features=self._features(graph),
            feature_dim=self.feature_dim, steps=steps, lr=self.lr or 1e-2, residual=residual, seed=self.seed,
            gen=gen, rng=np_rng, config=self._config("measured", node_counts=_fixed_count(graph.num_nodes)),
            progress=progress)

    def _net(self, in_dim: int, gen: torch.Generator, *, encoder: str = "gcn", disc_in: int | None = None
             ) -> dt.DeepNet:
        params = dm.init_params(in_dim, gan=self.gan, gen=gen, disc_in_dim=disc_in, encoder=encoder)
        return dt.DeepNet(params, gan=self.gan, lambda1=self.lambda1 if self.gan else 1.0, lambda2=self.lambda2)

    def _config(self, mode: str, **extra: Any) -> dict[str, Any]:
        return {"method": self.name, "mode": mode, "gan": self.gan, "latent_dim": dm.LATENT,
                "decoder": "FNN 16 -> 32 -> 32 (ReLU), A_ij = sigmoid(f(z_i).f(z_j) + bias + offset)", **extra}

    # ------------------------------------------------------------------------------------------ single graph
    def _features(self, graph: Graph) -> torch.Tensor | None:
        """Public node features (edge adjacency), reduced to ``feature_dim`` columns by a truncated SVD of the
        features alone (post-processing of public data; keeps per-example gradients small)."""
        x = graph.dense_features()
        if x is None:
            return None
        x = torch.as_tensor(np.array(x, dtype=np.float32))
        if x.shape[1] > self.feature_dim:
            torch.manual_seed(0)  # the SVD's random start only; it reads public features, never the edges
            u, s, _ = torch.svd_lowrank(x - x.mean(0, keepdim=True), q=self.feature_dim, niter=3)
            x = u * s
            x = x / x.std(0, keepdim=True).clamp_min(1e-6)
        return x

    def _release_edge_count(self, graph: Graph, budget, np_rng) -> tuple[float, float]:
        """Gaussian mechanism on |E| (edge adjacency: sensitivity 1), charged before it is computed."""
        sigma = _share_sigma(self.count_share * budget.epsilon, 1.0, budget.delta, budget.accountant)
        budget.charge(_gaussian_entry(f"{self.name}.edge_count", sigma, 1.0, "dp-edge-count",
                                      "Gaussian mechanism on the number of edges (used to calibrate sampling)"))
        noisy = graph.num_edges + float(np_rng.normal(0.0, sigma))
        n = graph.num_nodes
        return float(np.clip(noisy, 1.0, n * (n - 1) / 2)), sigma

    def _fit_nonprivate(self, data, *, budget, np_rng, noise_gen, gen, progress) -> FittedDeep:
        if isinstance(data, GraphCollection):
            net = self._net(self.max_nodes, gen)
            examples = [dt.dense_example(g.num_nodes, g.edges, self.max_nodes,
                                         dt.identity_features(min(g.num_nodes, self.max_nodes), self.max_nodes))
                        for g in data]
            steps = self.steps or int(max(1, (self.epochs or 20) * len(data) / (self.batch_size or 32)))
            dt.train_dense_nonprivate(net, examples, steps=steps, batch=self.batch_size or 32, lr=self.lr or 1e-2,
                                      gen=gen, rng=np_rng, progress=progress)
            counts = np.array([min(g.num_nodes, self.max_nodes) for g in data])
            dens = float(np.mean([g.density for g in data]))
            return FittedDeep(net.detached(), self._config(
                "nonprivate", node_counts=_empirical_counts(counts), target_density=dens,
                public_assumptions={"everything": "non-private baseline: the input was read without noise"}))
        graph = data
        x = self._features(graph)
        net = self._net(graph.num_nodes if x is None else x.shape[1], gen,
                        disc_in=(min(graph.num_nodes, 128) if x is None else x.shape[1]))
        steps = self.steps or int(200 * (self.epochs or 1))
        dt.train_single_nonprivate(net, graph.num_nodes, graph.edges, x, steps=steps, lr=self.lr or 1e-2, gen=gen,
                                   rng=np_rng, progress=progress)
        mu, lv = dt.posterior_latents_gcn(net, graph.num_nodes, graph.edges, x)
        return FittedDeep(net.detached(), self._config(
            "nonprivate", node_counts=_fixed_count(graph.num_nodes), target_density=graph.density,
            public_assumptions={"everything": "non-private baseline: the input was read without noise"}),
            latents=(mu, lv))

    def _paper_entry(self, count: int, note: str = "") -> LedgerEntry:
        """The nominal ledger entry of mode=paper's noisy decoder channel (``sound=False``: not a guarantee)."""
        return LedgerEntry(mechanism="subsampled_gaussian", stage=f"{self.name}.paper.decoder", count=count,
                           params={"noise_multiplier": self.paper_sigma, "sample_rate": self.paper_rate,
                                   "sampling": "poisson", "neighboring": "add_remove"},
                           sensitivity=1.0, proof="dpggan-paper-mode", sound=False,
                           note=PAPER_NOTE + (" " + note if note else ""))

    def _paper_steps(self, budget) -> int:
        """Steps of mode=paper: ``steps`` if given, else the seed's rule (epsilon varies through T at fixed sigma):
        the most steps whose nominal epsilon fits, up to ``max_steps``. Depends only on the public schedule."""
        if self.steps is not None:
            steps = int(self.steps)
        else:
            steps = _max_steps(lambda t: [self._paper_entry(t)], budget, self.max_steps)
        if steps < 1:
            floor = _compute_epsilon([self._paper_entry(1)], budget.delta, budget.accountant)
            raise BudgetError(f"epsilon={budget.epsilon:g} is below one step of mode=paper (nominal epsilon "
                              f"{floor:.4g} at sigma={self.paper_sigma:g}, q={self.paper_rate:g}); raise --epsilon")
        return steps

    def _fit_paper(self, graph: Graph, *, budget, np_rng, noise_gen, gen, progress) -> FittedDeep:
        n = graph.num_nodes
        if n > 5000:
            raise OptionError(f"{self.name} mode=paper is a reproduction mode for small graphs (<= 5000 nodes); "
                              f"this graph has {n}. Use a sound mode (edge-tuples or buckets).")
        x = self._features(graph)
        net = self._net(n if x is None else x.shape[1], gen, disc_in=(min(n, 128) if x is None else x.shape[1]))
        q = self.paper_rate
        steps = self._paper_steps(budget)
        sched = dt.Schedule(sample_rate=q, steps=steps, noise_multiplier=self.paper_sigma,
                            max_grad_norm=self.max_grad_norm, clip_decay=self.clip_decay, lr=self.lr or 1e-3)
        dt.train_paper(net, n, graph.edges, x, schedule=sched, entry=self._paper_entry(1), budget=budget,
                       noise_gen=noise_gen, gen=gen, rng=np_rng, progress=progress)
        self.last_info.update(steps=steps, noise_multiplier=self.paper_sigma, sample_rate=q)
        # The seed keeps exactly |E| pairs at generation: the edge count is read without noise (declared below).
        return FittedDeep(net.detached(), self._config("paper", **_paper_extras(graph)))

    # ------------------------------------------------------------------------------- one model per graph
    def fit_each(self, data: GraphCollection | list[Graph], budget, *, chunk: int = 256) -> list[FittedDeep]:
        """The seed's collection protocol: one model per graph (``nonprivate`` or ``paper`` mode), all graphs
        trained in lockstep by :mod:`graphrelease.generators.deep_pergraph` (same algorithm as :meth:`fit` on each
        graph alone, without one Python training loop per graph).

        Edge adjacency only: neighbouring collections differ in one edge of one graph, which only that graph's model
        reads, so the per-graph models compose in parallel and the collection's ledger is ONE per-graph entry (the
        same public schedule for every graph), charged once. For mode=paper that entry is nominal (``sound=False``).
        """
        from graphrelease.generators import deep_pergraph as pg
        from graphrelease.privacy.noise import secure_generator

        graphs = list(data)
        mode = "nonprivate" if self.non_private else self.mode
        if mode not in ("nonprivate", "paper"):
            raise OptionError(f"{self.name}: fit_each trains per-graph models in mode 'paper' (or the non-private "
                              f"baseline), not '{mode}'; a sound collection model is mode 'graphs' with fit()")
        if budget.ledger.adjacency.kind.value != "edge":
            raise OptionError(f"{self.name}: per-graph models compose in parallel only under edge adjacency")
        for g in graphs:
            if not 2 <= g.num_nodes <= pg.MAX_NODES or g.has_features:
                raise OptionError(f"{self.name}: fit_each takes featureless graphs of 2..{pg.MAX_NODES} nodes; graph "
                                  f"'{g.name}' has {g.num_nodes} nodes" + (" and features" if g.has_features else ""))
        np_rng, noise_gen, _ = secure_generator(self.seed)
        gen = torch.Generator().manual_seed(int(np_rng.integers(0, 2**62)))
        kw = dict(gan=self.gan, lambda1=self.lambda1 if self.gan else 1.0, lambda2=self.lambda2, gen=gen, rng=np_rng,
                  chunk=chunk)
        if mode == "nonprivate":
            steps = self.steps or int(200 * (self.epochs or 1))
            fits = pg.fit_many(graphs, mode="nonprivate", steps=steps, lr=self.lr or 1e-2, **kw)
            self.last_info = {"mode": mode, "steps": steps, "graphs": len(graphs)}
            return [FittedDeep(f["decoder"], self._config(
                "nonprivate", node_counts=_fixed_count(g.num_nodes), target_density=g.density,
                public_assumptions={"everything": "non-private baseline: the input was read without noise"}),
                latents=f["latents"]) for f, g in zip(fits, graphs)]
        steps = self._paper_steps(budget)  # one calibration for every graph: the schedule is public and shared
        budget.charge(self._paper_entry(steps, "One model per graph; per-graph entries compose in parallel."))
        sched = dt.Schedule(sample_rate=self.paper_rate, steps=steps, noise_multiplier=self.paper_sigma,
                            max_grad_norm=self.max_grad_norm, clip_decay=self.clip_decay, lr=self.lr or 1e-3)
        fits = pg.fit_many(graphs, mode="paper", steps=steps, lr=sched.lr, schedule=sched, noise_gen=noise_gen, **kw)
        self.last_info = {"mode": mode, "steps": steps, "noise_multiplier": self.paper_sigma,
                          "sample_rate": self.paper_rate, "graphs": len(graphs)}
        return [FittedDeep(f["decoder"], self._config("paper", **_paper_extras(g))) for f, g in zip(fits, graphs)]

    def _fit_edge_tuples(self, graph: Graph, *, budget, np_rng, noise_gen, gen, progress) -> FittedDeep:
        n = graph.num_nodes
        m_hat, _ = self._release_edge_count(graph, budget, np_rng)
        # expected positives per step: 512, or 1/40 of the (DP) edge count on large graphs (bounds the step count)
        batch = self.batch_size or max(512, int(math.ceil(m_hat / 40)))
        q = float(min(1.0, batch / m_hat))
        steps = self.steps or min(self.max_steps, dt.epochs_to_steps(self.epochs or 8, q))
        sigma_s = _share_sigma(self.sketch_share * budget.epsilon, math.sqrt(2.0), budget.delta, budget.accountant)
        sketch_entry = _gaussian_entry(f"{self.name}.sketch", sigma_s, math.sqrt(2.0), "dp-sketch",
                                       f"S = A R + N, R: {n} x {self.sketch_dim} with unit rows")

        def sgd(c: float, count: int = steps) -> LedgerEntry:
            return LedgerEntry(mechanism="subsampled_gaussian", stage=f"{self.name}.edge_tuples.dpsgd", count=count,
                               params={"noise_multiplier": float(c), "sample_rate": q, "sampling": "poisson",
                                       "neighboring": "add_remove"}, sensitivity=1.0, proof="dpgvae-edge-tuples",
                               note="examples = positive edges (Poisson), whole per-edge gradient clipped")

        prior = list(budget.ledger.entries)
        sigma = _calibrate(lambda c: [sketch_entry, sgd(c)], prior=prior, target=budget.epsilon, delta=budget.delta,
                           accountant=budget.accountant, what=f"{steps} DP-SGD steps at sample rate {q:.4g}")
        # the sketch: charged, then computed (R from the noise generator; R is never released)
        budget.charge(sketch_entry)
        proj = torch.randn(n, self.sketch_dim, generator=noise_gen, dtype=torch.float64)
        proj = proj / proj.norm(dim=1, keepdim=True)
        a = graph.to_csr()
        sketch = torch.as_tensor(a @ proj.numpy()) + torch.normal(0.0, sigma_s, size=(n, self.sketch_dim),
                                                                 generator=noise_gen, dtype=torch.float64)
        # node inputs: the released sketch (scaled) and public features
        s_scale = 1.0 / max(sigma_s, 1.0)
        parts = [sketch.float() * s_scale]
        x = self._features(graph)
        if x is not None:
            parts.append(x)
        node_x = torch.cat(parts, dim=1)
        net = self._net(node_x.shape[1], gen, encoder="mlp", disc_in=self.sketch_dim)
        sched = dt.Schedule(sample_rate=q, steps=steps, noise_multiplier=sigma, max_grad_norm=self.max_grad_norm,
                            clip_decay=self.clip_decay, lr=self.lr or 1e-2)
        disc = {"sketch": sketch.float(), "projection": proj.float(), "noise_std": float(sigma_s)} if self.gan else None
        dt.train_edges_dp(net, node_x, graph.edges, schedule=sched, expected_batch=q * m_hat,
                          num_negatives=self.num_negatives, entry=sgd(sigma, 1), budget=budget, noise_gen=noise_gen,
                          gen=gen, rng=np_rng, sketch_disc=disc, progress=progress)
        mu, lv = dt.posterior_latents_mlp(net, node_x)
        self.last_info.update(steps=steps, noise_multiplier=sigma, sample_rate=q, sketch_noise=sigma_s)
        return FittedDeep(net.detached(), self._config(
            "edge-tuples", node_counts=_fixed_count(n), target_density=m_hat / (n * (n - 1) / 2),
            public_assumptions=_single_public(graph)), latents=(mu, lv))

    def _fit_buckets(self, graph: Graph, *, budget, np_rng, noise_gen, gen, progress) -> FittedDeep:
        n = graph.num_nodes
        m_hat, _ = self._release_edge_count(graph, budget, np_rng)
        q = float(self.bucket_rate)
        buckets = max(1, int(math.ceil(q * n / self.bucket_size)))
        pair_rate = q * q / buckets
        steps = self.steps or min(self.max_steps, dt.epochs_to_steps(self.epochs or 30, q))

        def entry(c: float, count: int = steps) -> LedgerEntry:
            return LedgerEntry(mechanism="joint_convexity_gaussian", stage=f"{self.name}.buckets.dpsgd", count=count,
                               params={"noise_multiplier": float(c), "pair_rate": pair_rate, "buckets": buckets,
                                       "node_rate": q}, sensitivity=1.0, proof="dpgvae-buckets",
                               note="example = induced subgraph of one bucket; whole gradient clipped")

        sigma = _calibrate(lambda c: [entry(c)], prior=list(budget.ledger.entries), target=budget.epsilon,
                           delta=budget.delta, accountant=budget.accountant,
                           what=f"{steps} bucketed steps ({buckets} buckets, node rate {q:g})")
        x = self._features(graph)
        # featureless graphs: a fixed random Gaussian code per node (public randomness, independent of E) instead of
        # an n-dimensional one-hot, which would make every per-example gradient n x 32
        feat = torch.randn(n, self.feature_dim, generator=gen) if x is None else x
        net = self._net(feat.shape[1], gen)
        csr = graph.to_csr()

        def build(rng: np.random.Generator) -> list[tuple[torch.Tensor, ...]]:
            # membership drawn without looking at E: node joins bucket j w.p. q/m, none w.p. 1-q
            assign = np.where(rng.random(n) < q, rng.integers(0, buckets, size=n), -1)
            out = []
            for j in range(buckets):
                nodes = np.flatnonzero(assign == j)
                if nodes.size == 0:
                    continue
                sub = csr[nodes][:, nodes].tocoo()
                keep = sub.row < sub.col
                local = np.stack([sub.row[keep], sub.col[keep]], axis=1)
                out.append(dt.dense_example(nodes.size, local, nodes.size, feat[torch.as_tensor(nodes)]))
            return out

        sched = dt.Schedule(sample_rate=q, steps=steps, noise_multiplier=sigma, max_grad_norm=self.max_grad_norm,
                            clip_decay=self.clip_decay, lr=self.lr or 1e-2)
        dt.train_dense_dp(net, build, schedule=sched, expected_batch=float(buckets), entry=entry(sigma, 1),
                          budget=budget, noise_gen=noise_gen, gen=gen, rng=np_rng, progress=progress)
        self.last_info.update(steps=steps, noise_multiplier=sigma, pair_rate=pair_rate, buckets=buckets)
        return FittedDeep(net.detached(), self._config(
            "buckets", node_counts=_fixed_count(n), target_density=m_hat / (n * (n - 1) / 2),
            public_assumptions=_single_public(graph)))

    # -------------------------------------------------------------------------------------------- collections
    def _fit_graphs(self, coll: GraphCollection, adjacency: str, *, budget, np_rng, noise_gen, gen, progress
                    ) -> FittedDeep:
        cap = self.max_nodes
        counts = np.array([min(g.num_nodes, cap) for g in coll])
        edges_in = truncated_edge_counts(coll, cap)
        dens = edges_in / np.maximum(counts * (counts - 1) / 2, 1)
        eps, delta, acc = budget.epsilon, budget.delta, budget.accountant
        public: dict[str, str] = {"max_nodes": f"public cap {cap}: larger graphs are truncated to their first {cap}"
                                                f" nodes inside their own example"}
        # 1) densities. Edge adjacency: per-graph edge counts (the vector has L2 sensitivity 1: one edge, one graph),
        #    pooled per node count into one DP density per size (post-processing). One mean density for every size
        #    was why more epsilon looked worse (reports/deep_generators.md): small graphs are near-cliques, large
        #    ones sparse. Graph adjacency: the sum of per-graph densities in [0, 1] (sensitivity 1).
        if adjacency == "edge":
            sig_d = _share_sigma(self.count_share * eps, 1.0, delta, acc)
            budget.charge(_gaussian_entry(f"{self.name}.edge_counts", sig_d, 1.0, "dp-per-graph-edge-counts",
                                          "Gaussian mechanism on every graph's edge count (vector, L2 sensitivity 1)"))
            noisy = edges_in + np_rng.normal(0.0, sig_d, size=len(counts))
            dens_sum = float(np.sum(noisy / np.maximum(counts * (counts - 1) / 2, 1)))
            sizes = np.unique(counts)
            size_dens = [float(np.clip(noisy[counts == k].sum() / max(1, (counts == k).sum() * k * (k - 1) / 2),
                                       1e-6, 1.0)) for k in sizes]
            size_table = {"sizes": sizes.tolist(), "densities": size_dens}
        else:
            size_table = None
            sig_d = _share_sigma(self.count_share * eps, 1.0, delta, acc)
            budget.charge(_gaussian_entry(f"{self.name}.density_sum", sig_d, 1.0, "dp-density-sum",
                                          "Gaussian mechanism on the sum of per-graph edge densities"))
            dens_sum = float(dens.sum() + np_rng.normal(0.0, sig_d))
        # 2) node counts: public under edge adjacency; a Gaussian histogram (sensitivity 1) under graph adjacency
        if adjacency == "graph":
            sig_h = _share_sigma(self.count_share * eps, 1.0, delta, acc)
            budget.charge(_gaussian_entry(f"{self.name}.node_count_histogram", sig_h, 1.0, "dp-node-histogram",
                                          f"Gaussian mechanism on the histogram of node counts 1..{cap}"))
            hist = np.bincount(counts, minlength=cap + 1)[1:].astype(float) + np_rng.normal(0.0, sig_h, size=cap)
            hist = np.clip(hist, 0.0, None)
            if hist[1:].sum() <= 0:
                hist[:] = 1.0
            hist[0] = 0.0  # one-node graphs carry no edges
            num_graphs_hat = max(1.0, float(hist.sum()))
            node_counts = {"values": list(range(1, cap + 1)), "probs": (hist / hist.sum()).tolist()}
            neighboring = "add_remove"
        else:
            num_graphs_hat = float(len(coll))
            node_counts = _empirical_counts(counts)
            public["node_counts"] = "public under edge adjacency (node sets are public)"
            public["num_graphs"] = "public under edge adjacency"
            neighboring = "replace_one"
        density = float(np.clip(dens_sum / num_graphs_hat, 1e-6, 1.0))
        batch = self.batch_size or 32
        q = float(min(1.0, batch / num_graphs_hat))
        steps = self.steps or min(self.max_steps, dt.epochs_to_steps(self.epochs or 20, q))

        def entry(c: float, count: int = steps) -> LedgerEntry:
            return LedgerEntry(
                mechanism="subsampled_gaussian", stage=f"{self.name}.graphs.dpsgd", count=count,
                params={"noise_multiplier": float(c), "sample_rate": q, "sampling": "poisson",
                        "neighboring": neighboring}, sensitivity=1.0,
                proof="dpgvae-graphs-graph-adjacency" if adjacency == "graph" else "dpgvae-graphs-edge-adjacency",
                note="example = one whole graph; whole gradient (encoder, decoder, discriminator) clipped")

        sigma = _calibrate(lambda c: [entry(c)], prior=list(budget.ledger.entries), target=eps, delta=delta,
                           accountant=acc, what=f"{steps} DP-SGD steps at sample rate {q:.4g}")
        feats = dt.identity_features(cap, cap)
        examples = [dt.dense_example(g.num_nodes, g.edges, cap, feats) for g in coll]
        net = self._net(cap, gen)

        def build(rng: np.random.Generator) -> list[tuple[torch.Tensor, ...]]:
            picked = np.flatnonzero(rng.random(len(examples)) < q)
            out = []
            for i in picked:
                x, adj, mask = examples[i]
                k = int(mask.sum())
                out.append((x[:k], adj[:k, :k], mask[:k]))
            return out

        sched = dt.Schedule(sample_rate=q, steps=steps, noise_multiplier=sigma, max_grad_norm=self.max_grad_norm,
                            clip_decay=self.clip_decay, lr=self.lr or 1e-2)
        dt.train_dense_dp(net, build, schedule=sched, expected_batch=q * num_graphs_hat, entry=entry(sigma, 1),
                          budget=budget, noise_gen=noise_gen, gen=gen, rng=np_rng, progress=progress)
        self.last_info.update(steps=steps, noise_multiplier=sigma, sample_rate=q)
        return FittedDeep(net.detached(), self._config("graphs", node_counts=node_counts, target_density=density,
                                                       size_densities=size_table, public_assumptions=public))


def _max_steps(make: Callable[[int], list[LedgerEntry]], budget, limit: int) -> int:
    """Largest step count (up to ``limit``) that fits the budget after what it already holds."""
    from graphrelease.privacy.calibration import calibrate

    # RDP (fast, never tighter than PLD): the steps found also fit a PLD budget
    return int(calibrate(lambda t: make(int(t)), target_epsilon=budget.epsilon, delta=budget.delta,
                         accountant="rdp", prior=list(budget.ledger.entries), solve="steps", lo=1, hi=limit))


def _paper_extras(graph: Graph) -> dict[str, Any]:
    return {"node_counts": _fixed_count(graph.num_nodes), "target_density": graph.density,
            "public_assumptions": {"num_nodes": "public (edge adjacency)",
                                   "num_edges": "read WITHOUT noise, as in the seed (mode=paper is not private)"}}


def _fixed_count(n: int) -> dict[str, list]:
    return {"values": [int(n)], "probs": [1.0]}


def _empirical_counts(counts: np.ndarray) -> dict[str, list]:
    values, freq = np.unique(counts, return_counts=True)
    return {"values": values.tolist(), "probs": (freq / freq.sum()).tolist()}


def _single_public(graph: Graph) -> dict[str, str]:
    out = {"num_nodes": "public under edge adjacency (the node set is public)"}
    if graph.has_features:
        out["node_features"] = "public under edge adjacency (used as encoder input)"
    return out


def check_graph(data: Graph | GraphCollection) -> None:
    if isinstance(data, Graph) and data.num_nodes < 2:
        raise GraphValidationError(f"graph '{data.name}' needs at least 2 nodes to train a generator")
