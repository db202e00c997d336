r"""GAP: aggregation perturbation (Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez, USENIX Security 2023), with the
similarity-weighted aggregation of "Investigating Differentially Private GNNs with Weighted Aggregations".

Three modules, trained in order:

1. **Encoder** ``E``: an MLP on node features with a linear head, trained on the training labels. Default
   (``hop0="probs"``, issue #17): the DP-MLP architecture, :math:`H_0` = its row-normalised class probabilities,
   and under edge adjacency the classifier's own hop-0 input on training nodes is out of fold (models/prior.py);
   ``hop0="embedding"`` is GAP's original ``encoder_dim`` bottleneck, ``hop0="labels"`` aggregates one-hot
   training labels (featureless graphs, edge adjacency only). Under edge
   adjacency features and labels are public, so it is trained without noise; under node adjacency with DP-SGD (one
   node = one example, add/remove). Its output rows are normalised: :math:`H_0 = \mathrm{rownorm}(E(X))`.
2. **Aggregation perturbation**, computed once and cached:

   .. math:: H_k = \mathrm{rownorm}\bigl(A_w H_{k-1} + \mathcal N(0, \sigma_a^2 I)\bigr),\quad k = 1..K

   with :math:`A_w` the (optionally weighted) adjacency, weights :math:`w_{uv}\in[0,1]`. The pre-noise query of hop
   :math:`k`, given the released :math:`H_{k-1}`, is :math:`A_w H_{k-1}` whose rows are sums of vectors of norm
   :math:`\le 1`:

   * edge adjacency: one undirected edge changes rows u and v by :math:`w_{uv} H_v` and :math:`w_{uv} H_u`, so the L2
     sensitivity is :math:`\sqrt 2` (not 1 as in GAP's code, which treats the edge as directed);
   * node adjacency (a node slot loses its edges, features and label), degree cap :math:`D`: the node's own row
     changes by at most :math:`D` (a sum of :math:`\le D` unit rows) and each of its :math:`\le D` neighbours' rows
     by at most 1, so the sensitivity is :math:`\sqrt{D^2 + D}`. GAP's Lemma counts only the neighbours
     (:math:`\sqrt D`); the node's own aggregate row is released too, so we charge for it.

   Each hop is a Gaussian mechanism (``gaussian`` ledger entry, count K); hops compose adaptively.
3. **Classifier**: one MLP per hop on :math:`H_0..H_K`, concatenated, then a head MLP. Its inputs are the released
   :math:`H_1..H_K` plus the node's own :math:`H_0`, so one node changes one example: no cost under edge adjacency
   (public features/labels), DP-SGD add/remove under node adjacency.

Under node adjacency the classifier is by default (``node_classifier="residual"``, issue #17) the encoder's own
network continued for ``epochs`` more DP-SGD epochs with a zero-initialised, bias-free linear read of the hops shrunk
by their public signal-to-noise ratio (``hop_inputs="snr"``) added to its logits (models/residual.py): with
noise-dominated aggregates GAP is then a DP-MLP trained for encoder_epochs + epochs. The aggregation is calibrated
alone to ``graph_share`` (default 1/(D+1)) of epsilon and the encoder and classifier share one noise multiplier for
the rest; ``graph_share="common"`` (and the ``hops`` classifier) give every stage one noise scale (the encoder's and
classifier's noise multipliers equal the aggregation's noise-to-sensitivity ratio), calibrated so the composed
ledger meets the target.

``aggregation="similarity"``: :math:`w_{uv} = \mathrm{sigmoid}(\cos(x_u, x_v))\in(0,1)` from the raw features
(public under edge adjacency; under node adjacency only the removed node's own edges change weight), same
sensitivity as the unweighted sum (probed in ``tests/models/test_gap.py``).

``aggregation="attention"``: weights from learned attention scores :math:`w_{uv}=\mathrm{sigmoid}(a^\top[h_u\|h_v])`.
The scores depend on parameters that are trained *through* the aggregation, so the aggregation must be released
again after every update of :math:`a`: with R refinement rounds the cost is R*K Gaussian mechanisms instead of K
(the weighted-aggregation paper's Theorem 2 makes the same point: learned weights multiply the number of
perturbed aggregations), which is why it is worse at equal epsilon.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.models.base import FitContext, MODELS, PrivateModel
from graphrelease.models.common import (
    MLP,
    NodeModelMixin,
    PublicTrainingOptions,
    ReleaseAtFitMixin,
    TrainConfig,
    adjacency_matrix,
    as_index,
    cap_degree,
    feature_matrix,
    load_tensors,
    node_level_projection,
    node_split,
    noise_generators,
    row_normalize,
    save_module,
    split_state,
    steps_for,
    train_nonprivate,
    validation_select,
)
from graphrelease.models.aggregation import aggregate_once, l1_normalize, laplace_like, perturbed_hops  # noqa: F401
from graphrelease.models.hops import choose_hops
from graphrelease.models.label_sources import SOURCE_FRACTION, label_sources, receiver_adjacency
from graphrelease.models.mlp import node_batch_loss, node_example_loss
from graphrelease.models.private_training import calibrate_common_noise, make_dpsgd_trainer, run_dpsgd, with_noise
from graphrelease.models.prior import ProbEncoder, out_of_fold_embedding
from graphrelease.models.residual import (
    RULES_LOOK,
    ResidualGraphHead,
    graph_share_for,
    xz_batch_loss,
    xz_example_loss,
)
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.privacy.sensitivities import row_release_sensitivity

AGGREGATIONS = ("sum", "similarity", "attention")


@dataclass
class GAPConfig(PublicTrainingOptions):
    # "auto" (issue #17): 1 or 2 hops from a DP estimate of the mean degree (2% of epsilon, models/hops.py, rule
    # chosen on the validation split); one hop under node adjacency. An int fixes the count. fit() stores the value.
    hops: int | str = "auto"
    hidden: int = 64
    encoder_dim: int = 32
    encoder_epochs: int = 50
    epochs: int = 50
    degree_cap: int = 10
    aggregation: str = "sum"
    attention_rounds: int = 3
    # "probs": hop 0 is the row-normalised class probabilities of a DP-MLP-shaped encoder (see models/prior.py);
    # "embedding": GAP's original encoder_dim-wide row-normalised bottleneck (3-4 points worse on Cora, issue #17).
    # "labels": the aggregated rows are the one-hot training labels (zero rows elsewhere), for graphs whose
    # features carry little (featureless LastFM Asia); edge adjacency only (labels are public there). The
    # classifier's own hop-0 input stays the encoder's (out-of-fold) probabilities.
    hop0: str = "probs"
    # hop0="labels" with one hop: the fraction of training nodes that are label *sources*; only the other nodes'
    # rows are released, each counting its source neighbours (L1 sensitivity 1 instead of 2; models/label_sources.py,
    # fraction chosen on the validation split). 0 = every training node is a source and every row is released.
    label_sources: float = SOURCE_FRACTION
    # Out-of-fold hop-0 inputs for the classifier's training nodes when the encoder is trained without noise
    # (edge adjacency, public features/labels: free). 0 or 1 disables.
    crossfit_folds: int = 5
    # What the classifier reads of hop k >= 1: "scaled" = the noisy aggregate A H + N divided by max(sigma, 1)
    # (keeps the magnitude, i.e. how much neighbour mass backs the direction); "rownorm" = the next hop's input.
    # "snr" = the release shrunk by its public signal-to-noise ratio (models/residual.py snr_shrink, bound D).
    # "auto" (default): scaled under edge adjacency; snr under node adjacency, where the aggregate is
    # noise-dominated (std 57 at its 1/11 share, 17.6 at one common scale, against rows of norm <= D = 10 on Cora at
    # eps 8) and the residual classifier's head should add a term to the feature logits that vanishes with the
    # signal (rownorm before the second residual fix, reports/private_models.md). fit() stores the resolved value.
    hop_inputs: str = "auto"
    # "gaussian": rows of L2 norm <= 1, Gaussian noise (sensitivity sqrt 2 per edge). "laplace": rows of L1 norm
    # <= 1, Laplace noise (L1 sensitivity 2 per edge, pure DP). For probability / one-hot rows (L1 = 1) Laplace
    # needs about half the noise std at epsilon 1 (scale 2 vs sigma 5.75 per coordinate, delta 1e-5). "auto"
    # (default): laplace under edge adjacency, where on the validation split (2 seeds) it was ahead or tied on
    # Cora / CiteSeer / Chameleon at eps 1 and 4 (Cora eps 4: 79.8 vs 73.3; Chameleon eps 1: 51.6 vs 47.7; Cora
    # eps 1: 71.0 vs 71.4); gaussian under node adjacency, where L1 sensitivity 2D exceeds the L2 sqrt(D^2 + D)
    # and nothing was measured. fit() replaces "auto" by the resolved value (saved with the release).
    noise: str = "auto"
    # Classifier under node adjacency (issue #17, models/residual.py): "residual" = the encoder's own network (the
    # DP-MLP architecture) continued for `epochs` more DP-SGD epochs with a zero-initialised linear read of the
    # released hops added to its logits, so with useless aggregates GAP is a DP-MLP; "hops" = the per-hop
    # HopClassifier on [H_0, H_1..H_K] (before issue #17's node fix). Needs hop0="probs".
    node_classifier: str = "residual"
    # The residual head's own bias (models/residual.py: a duplicate of the network's; False since the second fix).
    head_bias: bool = False
    # Share of epsilon for the aggregation when the classifier is private (node adjacency, residual classifier):
    # "auto" = 1/(D+1), the rule DPDGC's topology stages follow (one node changes D+1 aggregate rows; public). A
    # float fixes it; "common" = one noise scale for every stage (before the second residual fix).
    graph_share: float | str = "auto"


NOISES = ("gaussian", "laplace", "auto")
HOP0 = ("probs", "embedding", "labels")
HOP_INPUTS = ("scaled", "rownorm", "snr", "auto")
NODE_CLASSIFIERS = ("residual", "hops")


def aggregation_sensitivity(kind: str, degree_cap: int, noise: str = "gaussian") -> float:
    """Sensitivity of one hop :math:`A_w H` (weights in [0, 1]): L2 with rows of L2 norm <= 1 (``gaussian``), L1
    with rows of L1 norm <= 1 (``laplace``: the two (edge) or 1 + D (node) changed rows add up in L1); the formula
    is the verifier's (:func:`graphrelease.privacy.sensitivities.row_release_sensitivity`)."""
    if kind not in ("edge", "node"):
        raise OptionError(f"GAP has no aggregation analysis for adjacency '{kind}' (use edge or node)")
    return row_release_sensitivity(kind, None, degree_cap, noise)


def similarity_weights(graph: Graph, x: torch.Tensor) -> np.ndarray:
    """:math:`\\mathrm{sigmoid}(\\cos(x_u, x_v))` per edge of ``graph.edges``: values in (0, 1)."""
    e = torch.as_tensor(np.array(graph.edges), dtype=torch.long)
    if e.numel() == 0:
        return np.zeros(0)
    xn = row_normalize(x.double())
    cos = (xn[e[:, 0]] * xn[e[:, 1]]).sum(dim=1).clamp(-1.0, 1.0)
    return torch.sigmoid(cos).numpy()


class Encoder(nn.Module):
    def __init__(self, in_dim: int, hidden: int, out_dim: int, classes: int) -> None:
        super().__init__()
        self.body = MLP(in_dim, hidden, out_dim, layers=2)
        self.head = nn.Linear(out_dim, classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return row_normalize(self.body(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.selu(self.embed(x)))


class HopClassifier(nn.Module):
    """Per-hop base MLPs on (K+1) inputs, concatenated, then a head MLP."""

    def __init__(self, dim: int, n_inputs: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.bases = nn.ModuleList(nn.Linear(dim, hidden) for _ in range(n_inputs))
        self.head = MLP(hidden * n_inputs, hidden, classes, layers=2)

    def forward(self, hs: torch.Tensor) -> torch.Tensor:  # hs: (batch, n_inputs, dim)
        parts = [torch.selu(base(hs[:, i])) for i, base in enumerate(self.bases)]
        return self.head(torch.cat(parts, dim=1))


class AttentionScorer(nn.Module):
    """:math:`w_{uv}=\\mathrm{sigmoid}(a^\\top[h_u \\| h_v])` (symmetrised), weights in (0, 1)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.a = nn.Linear(2 * dim, 1)

    def forward(self, hu: torch.Tensor, hv: torch.Tensor) -> torch.Tensor:
        s = self.a(torch.cat([hu, hv], 1)).squeeze(1) + self.a(torch.cat([hv, hu], 1)).squeeze(1)
        return torch.sigmoid(0.5 * s)


@MODELS.register("gap")
class GAP(ReleaseAtFitMixin, PrivateModel, NodeModelMixin):
    """GAP with sum / similarity-weighted / learned-attention aggregation; edge and node adjacency."""

    config_class = GAPConfig
    adjacencies = frozenset({"edge", "node"})
    needs_degree_bound_under_node_adjacency = True

    def __init__(self, **options: Any) -> None:
        self.config = GAPConfig(**options)
        if self.config.aggregation not in AGGREGATIONS:
            raise OptionError(f"--aggregation must be one of {AGGREGATIONS}, got '{self.config.aggregation}'")
        if self.config.hops != "auto" and (not isinstance(self.config.hops, int) or self.config.hops < 1):
            raise OptionError(f"--hops must be >= 1, got {self.config.hops}")
        if self.config.hop0 not in HOP0:
            raise OptionError(f"--hop0 must be one of {HOP0}, got '{self.config.hop0}'")
        if not 0.0 <= float(self.config.label_sources) < 1.0:
            raise OptionError(f"--label-sources must be in [0, 1), got {self.config.label_sources}")
        if self.config.noise not in NOISES:
            raise OptionError(f"--noise must be one of {NOISES}, got '{self.config.noise}'")
        if self.config.hop_inputs not in HOP_INPUTS:
            raise OptionError(f"--hop-inputs must be one of {HOP_INPUTS}, got '{self.config.hop_inputs}'")
        if self.config.node_classifier not in NODE_CLASSIFIERS:
            raise OptionError(f"--node-classifier must be one of {NODE_CLASSIFIERS}, got '{self.config.node_classifier}'")
        self.encoder: Encoder | ProbEncoder | None = None
        self.classifier: HopClassifier | ResidualGraphHead | None = None
        self.scorer: AttentionScorer | None = None
        self.noise_scale = 0.0
        self.aggregation_noise_std = 0.0
        self.kind = "edge"
        self.noisy_edge_count: float | None = None
        self._cache: tuple[Graph, list[torch.Tensor]] | None = None

    # ------------------------------------------------------------------ fitting
    def _check_options(self, kind: str, *, private: bool, budget: Any) -> None:
        c = self.config
        if c.hop0 == "labels" and kind != "edge" and private:
            raise OptionError("gap --hop0 labels aggregates training labels, which are public only under edge adjacency")
        if c.aggregation == "attention" and kind != "edge" and private:
            raise OptionError(
                "gap --aggregation attention is implemented for edge adjacency only: its refinement reads training "
                "labels, which are private under node adjacency"
            )

    def _fit(self, graph: Graph, budget: Any, ctx: FitContext, *, progress: Any = None) -> None:
        c, kind, private, split, rng, tgen = self.config, ctx.kind, ctx.private, ctx.split, ctx.rng, ctx.tgen
        self.kind = kind
        if kind != "edge":
            self.selection_notes["hyperparameters_tuned_on_private_data"] = RULES_LOOK
        work = node_level_projection(self, graph, kind, c.degree_cap)
        x = feature_matrix(graph)
        y = torch.as_tensor(np.array(graph.labels), dtype=torch.long)
        self.in_dim = x.shape[1]
        tr = as_index(split.train)
        n_tr = tr.numel()
        if c.noise == "auto":
            c.noise = "laplace" if kind == "edge" else "gaussian"
        if c.hop_inputs == "auto":
            c.hop_inputs = "scaled" if kind == "edge" else "snr"
        if c.hops == "auto":  # charged (edge adjacency) before any other stage is calibrated
            c.hops, self.noisy_edge_count = choose_hops(graph, budget, rng, kind=kind, private=private)
        sens = 1.0 if self.one_sided else aggregation_sensitivity(kind, c.degree_cap, c.noise)
        rounds = c.attention_rounds if c.aggregation == "attention" else 1
        enc_steps, _ = steps_for(c.encoder_epochs, split.train_slots, c.batch_size)
        cls_steps, _ = steps_for(c.epochs, split.train_slots, c.batch_size)
        dp_sgd = private and kind == "node"
        # Without DP-SGD (edge adjacency: public features and labels; or a non-private run) encoder, its out-of-fold
        # twins and classifier are trained without noise, with the optimiser every noise-free stage shares
        # (public_lr; public_dropout in the encoder, as DPDGC's prior: models/common.py PUBLIC_LR).
        self.encoder = self._make_encoder(dropout=0.0 if dp_sgd else c.public_dropout)
        self.classifier = self._make_classifier()
        lr = c.lr if dp_sgd else c.public_lr
        enc_cfg = TrainConfig(epochs=c.encoder_epochs, lr=lr, batch_size=c.batch_size, max_grad_norm=c.max_grad_norm)
        cls_cfg = TrainConfig(epochs=c.epochs, lr=lr, batch_size=c.batch_size, max_grad_norm=c.max_grad_norm)
        pick = lambda f: validation_select(f, y, split.val, public=kind == "edge" and not dp_sgd,  # noqa: E731
                                           notes=self.selection_notes)

        # what the verifier needs to recompute `sens`: node adjacency's degree cap, or the one-sided label sources
        stated = {"cap": int(c.degree_cap)} if kind == "node" else ({"one_sided": True} if self.one_sided else {})

        def agg_entry(s: float) -> LedgerEntry:
            if c.noise == "laplace":  # scale b = sens * s, i.e. a (1/s)-DP Laplace mechanism per hop
                return LedgerEntry(
                    mechanism="laplace", stage=f"gap.aggregation.{c.aggregation}",
                    params={"epsilon": 1.0 / s, "scale": sens * s, **stated},
                    count=c.hops * rounds, sensitivity=sens, proof="gap-aggregation",
                    note=f"K={c.hops} hops x {rounds} round(s), rows L1-normalised, weights in [0,1], L1 sensitivity"
                         + (", one-sided label sources" if self.one_sided else ""),
                )
            return LedgerEntry(
                mechanism="gaussian", stage=f"gap.aggregation.{c.aggregation}",
                params={"noise_multiplier": s * sens, **stated},
                count=c.hops * rounds, sensitivity=sens, proof="gap-aggregation",
                note=f"K={c.hops} hops x {rounds} round(s), rows normalised, weights in [0,1]"
                     + (", one-sided label sources" if self.one_sided else ""),
            )

        enc_trainer = cls_trainer = None
        if dp_sgd:
            enc_trainer = make_dpsgd_trainer(
                self.encoder, node_example_loss, budget=budget, cfg=enc_cfg, num_examples=n_tr, public_num_examples=split.train_slots, noise_multiplier=1.0,
                stage="gap.encoder.dpsgd", rng=rng, noise_generator=tgen, proof="gap-dpsgd",
                batch_loss=node_batch_loss,
            )
            residual = self.residual
            cls_trainer = make_dpsgd_trainer(
                self.classifier, xz_example_loss if residual else node_example_loss, budget=budget, cfg=cls_cfg,
                num_examples=n_tr, public_num_examples=split.train_slots, noise_multiplier=1.0,
                stage="gap.classifier.dpsgd", rng=rng, noise_generator=tgen, proof="gap-dpsgd",
                batch_loss=xz_batch_loss if residual else node_batch_loss,
            )
            enc_t, cls_t = enc_trainer.ledger_entry(1), cls_trainer.ledger_entry(1)
            share = graph_share_for(c.graph_share, c.degree_cap + 1) if residual else "common"
            if share == "common":
                agg_scale = None
            else:  # the aggregation alone gets `share` of epsilon; the DP-SGD stages one scale for the rest
                agg_scale = calibrate_common_noise(lambda s: [agg_entry(s)], budget, fraction=share)
            scale = calibrate_common_noise(
                lambda s: [with_noise(enc_t, s, enc_steps), agg_entry(s if agg_scale is None else agg_scale), with_noise(cls_t, s, cls_steps)],
                budget)
            enc_trainer.noise_multiplier = cls_trainer.noise_multiplier = scale
            scale_agg = scale if agg_scale is None else agg_scale
        elif private:
            scale = scale_agg = calibrate_common_noise(lambda s: [agg_entry(s)], budget)
        else:
            scale = scale_agg = 0.0
        self.noise_scale = scale
        self.aggregation_noise_std = scale_agg * sens

        # 1. encoder
        if dp_sgd:
            self.encoder.train()
            run_dpsgd(enc_trainer, (x[tr], y[tr]), enc_steps, progress)
            if self.residual:  # one network, one optimiser: the classifier phase continues the encoder's Adam state
                for p in self.encoder.parameters():
                    if p in enc_trainer.optimizer.state:
                        cls_trainer.optimizer.state[p] = enc_trainer.optimizer.state[p]
        else:
            def enc_loss(module, idx):
                return nn.functional.cross_entropy(module(x[tr[idx]]), y[tr[idx]])

            train_nonprivate(self.encoder, enc_loss, n_tr, enc_cfg, generator=tgen, progress=progress)
        self.encoder.eval()
        with torch.no_grad():
            h0 = self.encoder.embed(x)
        h0_train = h0
        if not dp_sgd and c.hop0 != "embedding" and c.crossfit_folds >= 2:
            # Out-of-fold rows for the classifier's own hop-0 input on training nodes (models/prior.py explains why);
            # public data only. The aggregation and every test node keep the full encoder's rows.
            h0_train = out_of_fold_embedding(x, y, tr, h0, folds=c.crossfit_folds, hidden=c.hidden,
                                             classes=self.num_classes, cfg=enc_cfg, generator=tgen,
                                             dropout=c.public_dropout)

        # 2. aggregation perturbation (cached), 3. classifier
        if c.aggregation == "attention":
            self.scorer = AttentionScorer(self.h_dim)
        hops = None
        for r in range(rounds):
            adj = self.round_adjacency(work, x, h0, hops, y, tr, tgen)
            if private:
                budget.charge(agg_entry(scale_agg).with_count(c.hops))  # charged before the noisy aggregates exist
            # attention refinement reads earlier rounds' row-normalised hops; the classifier the last round's inputs
            hops = perturbed_hops(adj, self._aggregated_rows(graph, h0), c.hops, self.aggregation_noise_std, tgen,
                                  inputs=c.hop_inputs if r == rounds - 1 else "rownorm", noise=c.noise,
                                  signal_norm=c.degree_cap)
        assert hops is not None
        self._cache = (graph, hops)
        feats = torch.stack([h0_train] + hops, dim=1)
        cls_tr = self._classifier_nodes(graph, tr)
        if dp_sgd:
            self.classifier.train()
            examples = (x[tr], self._hop_rows(hops)[tr], y[tr]) if self.residual else (feats[tr], y[tr])
            run_dpsgd(cls_trainer, examples, cls_steps, progress)
        else:
            hop_rows = self._hop_rows(hops) if self.residual else None

            def cls_loss(module, idx):
                nodes = cls_tr[idx]
                inputs = (x[nodes], hop_rows[nodes]) if hop_rows is not None else feats[nodes]
                return nn.functional.cross_entropy(module(inputs), y[nodes])

            select = pick(lambda m, v: m((x[v], hop_rows[v]) if hop_rows is not None else feats[v]))
            train_nonprivate(self.classifier, cls_loss, cls_tr.numel(), cls_cfg, generator=tgen, progress=progress,
                             select=select)
        self.classifier.eval()
        self._evaluate(graph, self.predict(graph))

    @property
    def residual(self) -> bool:
        """The node-adjacency classifier is the encoder's network plus a linear read of the hops (residual.py)."""
        return self.kind == "node" and self.config.node_classifier == "residual" and self.config.hop0 == "probs"

    @staticmethod
    def _hop_rows(hops: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(hops, dim=1)

    def _make_classifier(self) -> nn.Module:
        c = self.config
        if self.residual:
            assert isinstance(self.encoder, ProbEncoder)
            return ResidualGraphHead(self.encoder.net, c.hops * self.h_dim, self.num_classes, bias=c.head_bias)
        return HopClassifier(self.h_dim, c.hops + 1, c.hidden, self.num_classes)

    @property
    def h_dim(self) -> int:
        """Width of the rows that are aggregated (hop 0 and every released hop)."""
        return self.config.encoder_dim if self.config.hop0 == "embedding" else self.num_classes

    def _aggregated_rows(self, graph: Graph, h0: torch.Tensor) -> torch.Tensor:
        """Rows H_0 that hop 1 sums (norm <= 1 each): the encoder's rows, or the one-hot training labels."""
        if self.config.hop0 != "labels":
            return h0
        c = self.config
        split = node_split(graph, train=c.train_frac, val=c.val_frac, seed=c.split_seed)  # same public split as fit
        rows = torch.zeros(graph.num_nodes, self.num_classes)
        tr = as_index(split.train)
        rows[tr, torch.as_tensor(np.asarray(graph.labels))[tr]] = 1.0
        return rows

    @property
    def one_sided(self) -> bool:
        """Labels flow from source nodes into the other nodes' rows only (models/label_sources.py): hop0=labels,
        one hop, edge adjacency, ``label_sources`` > 0."""
        c = self.config
        return c.hop0 == "labels" and c.hops == 1 and c.label_sources > 0 and self.kind == "edge"

    def _sources(self, graph: Graph) -> np.ndarray:
        c = self.config
        split = node_split(graph, train=c.train_frac, val=c.val_frac, seed=c.split_seed)  # same public split as fit
        return label_sources(np.asarray(split.train), c.label_sources, c.split_seed)

    def _classifier_nodes(self, graph: Graph, tr: torch.Tensor) -> torch.Tensor:
        """Training nodes the classifier learns from: all of them, or the receivers when labels are one-sided (a
        source's row counts nothing, so it would teach the classifier an input it never meets at test time)."""
        if not self.one_sided:
            return tr
        src = torch.as_tensor(self._sources(graph))
        return tr[~torch.isin(tr, src)]

    def _make_encoder(self, dropout: float = 0.0) -> nn.Module:
        c = self.config
        if c.hop0 != "embedding":  # dropout acts in training only: a loaded release needs none
            return ProbEncoder(self.in_dim, c.hidden, self.num_classes, dropout=dropout)
        return Encoder(self.in_dim, c.hidden, c.encoder_dim, self.num_classes)

    def _adjacency(self, graph: Graph, x: torch.Tensor, h0: torch.Tensor) -> sp.csr_matrix:
        agg = self.config.aggregation
        if agg == "sum":
            adj = adjacency_matrix(graph)
        elif agg == "similarity":
            adj = adjacency_matrix(graph, similarity_weights(graph, x))
        else:
            assert self.scorer is not None
            e = torch.as_tensor(np.array(graph.edges), dtype=torch.long)
            with torch.no_grad():
                w = self.scorer(h0[e[:, 0]], h0[e[:, 1]]).double().numpy() if e.numel() else np.zeros(0)
            adj = adjacency_matrix(graph, w)
        return receiver_adjacency(adj, self._sources(graph)) if self.one_sided else adj

    def round_adjacency(self, graph: Graph, x: torch.Tensor, h0: torch.Tensor,
                        released_hops: list[torch.Tensor] | None, y: torch.Tensor, tr: torch.Tensor,
                        generator: torch.Generator) -> sp.csr_matrix:
        """The weighted adjacency of one aggregation round: the pre-noise query's matrix. For ``attention`` the
        scorer is first refined on the previous round's *released* hops (none in round one); the refinement never
        sees ``graph``, so every weight is fixed by public data and earlier releases before this round's query."""
        if self.config.aggregation == "attention" and released_hops is not None:
            self._refine_attention(h0, released_hops, y, tr, generator)
        return self._adjacency(graph, x, h0)

    def _refine_attention(self, h0: torch.Tensor, hops: list[torch.Tensor], y: torch.Tensor, tr: torch.Tensor,
                          generator: torch.Generator, partners: int = 16) -> None:
        """Fit the attention scores so that the weighted mean of *released* H_1 rows of a node's partners predicts
        its (public, under edge adjacency) label. Partners are drawn uniformly from all node slots, never from the
        private edge list: fitting on the real edges made the scorer, hence every other edge's weight, a
        noise-free function of E (an edge then moved the next round's aggregate by more than sqrt 2). Uniform
        partners still teach the scorer which feature pairs carry label signal in the released H_1; the next
        round re-releases the aggregation with the new weights (charged)."""
        assert self.scorer is not None
        n = h0.shape[0]
        if tr.numel() == 0 or n < 2:
            return
        src = tr.repeat_interleave(partners)
        dst = torch.randint(0, n, (src.numel(),), generator=generator)
        probe = nn.Linear(h0.shape[1], self.num_classes)
        opt = torch.optim.Adam(list(self.scorer.parameters()) + list(probe.parameters()), lr=self.config.lr)
        for _ in range(20):
            opt.zero_grad()
            w = self.scorer(h0[src], h0[dst])
            agg = torch.zeros(n, h0.shape[1]).index_add_(0, src, w.unsqueeze(1) * hops[0][dst])
            loss = nn.functional.cross_entropy(probe(row_normalize(agg))[tr], y[tr])
            loss.backward()
            opt.step()

    # ------------------------------------------------------------------ inference
    def _features(self, graph: Graph) -> torch.Tensor:
        if self.encoder is None or self.classifier is None:
            raise OptionError("gap: call fit() or load() before predict()")
        x = feature_matrix(graph)
        if x.shape[1] != self.in_dim:
            raise OptionError(f"gap: the model expects {self.in_dim} features, the graph has {x.shape[1]}")
        with torch.no_grad():
            h0 = self.encoder.embed(x)
        if self._cache is not None and self._cache[0] is graph:
            hops = self._cache[1]  # the released, already-charged aggregates: no new privacy cost
        else:
            # New data supplied by the user at prediction time: aggregate it with the training noise level so the
            # classifier sees inputs of the same distribution. Not a release of the training graph; not charged.
            work = cap_degree(graph, self.config.degree_cap) if self.kind == "node" else graph
            _, tgen, _ = noise_generators(None)
            hops = perturbed_hops(self._adjacency(work, x, h0), self._aggregated_rows(graph, h0), self.config.hops,
                                  self.aggregation_noise_std, tgen,
                                  inputs=self.config.hop_inputs, noise=self.config.noise,
                                  signal_norm=self.config.degree_cap)
        return torch.stack([h0] + hops, dim=1)

    @torch.no_grad()
    def predict(self, graph: Graph) -> np.ndarray:
        assert self.classifier is not None or self.encoder is None
        feats = self._features(graph)
        if self.residual:  # the classifier reads the raw features itself (its network is the encoder's)
            hops = [feats[:, i] for i in range(1, feats.shape[1])]
            return self.classifier((feature_matrix(graph), self._hop_rows(hops))).argmax(dim=1).numpy()
        return self.classifier(feats).argmax(dim=1).numpy()

    def embed(self, graph: Graph) -> np.ndarray:
        """The perturbed aggregates :math:`[H_1..H_K]` (plus :math:`H_0` under edge adjacency, where features are
        public). Under node adjacency :math:`H_0` is a function of the node's own private features and is left out."""
        feats = self._features(graph)
        parts = feats if self.kind == "edge" else feats[:, 1:]
        return parts.reshape(parts.shape[0], -1).numpy()

    # ------------------------------------------------------------------ persistence
    def save(self, directory: Path) -> list[Path]:
        assert self.encoder is not None and self.classifier is not None
        mods: dict[str, nn.Module] = {"encoder": self.encoder, "classifier": self.classifier}
        if self.scorer is not None:
            mods["scorer"] = self.scorer
        return [save_module(directory, "weights", mods),
                self.write_released_config(directory, in_dim=self.in_dim, num_classes=self.num_classes,
                                           adjacency=self.kind, aggregation_noise_std=self.aggregation_noise_std)]

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> "GAP":
        # releases written before issue #17 carry neither key and were made with the original encoder and inputs
        # label_sources: releases written before one-sided label aggregation were two-sided
        # node_classifier: releases written before the residual node classifier used the per-hop classifier
        legacy = {"hop0": "embedding", "hop_inputs": "rownorm", "noise": "gaussian", "label_sources": 0.0,
                  "node_classifier": "hops", "head_bias": True}
        model = cls.from_released_config(config, **legacy)
        c = model.config
        model.num_classes, model.in_dim = int(config["num_classes"]), int(config["in_dim"])
        model.kind = str(config.get("adjacency", "edge"))
        model.aggregation_noise_std = float(config.get("aggregation_noise_std", 0.0))
        tensors = load_tensors(Path(directory) / "weights.safetensors")
        model.encoder = model._make_encoder()
        model.encoder.load_state_dict(split_state(tensors, "encoder"))
        model.classifier = model._make_classifier()
        model.classifier.load_state_dict(split_state(tensors, "classifier"))
        if c.aggregation == "attention":
            model.scorer = AttentionScorer(model.h_dim)
            model.scorer.load_state_dict(split_state(tensors, "scorer"))
        model.encoder.eval()
        model.classifier.eval()
        return model
