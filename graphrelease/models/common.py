"""Shared pieces of the node-classification models: options, splits, MLPs, the non-private training loop, degree
capping, persistence and the mixins that make a model's shape (one network, release at fit).

Nothing here reads private data on its own; DP-SGD lives in :mod:`graphrelease.models.private_training`.

Splits
------
:func:`node_split` draws a random train / validation / test split of the *labelled* nodes from a split seed. Which
node lands in which split is a public choice of the analyst (it does not look at labels, edges or features); test
labels are used only to report accuracy, never to select a model. Validation labels are read only under edge
adjacency (where labels are public), to keep the best-validation epoch of noise-free stages (:func:`validation_select`);
under node / k-neighbour adjacency no model reads them, so the split is effectively train / held-out there.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from graphrelease.errors import GraphValidationError, OptionError
from graphrelease.graph import Graph


# --------------------------------------------------------------------------------------------------- splits


@dataclass(kw_only=True)
class NodeSplitOptions:
    """Options every node classifier shares: the public split (an analyst choice made independently of the data) and
    the noise seed (tests and reproductions only: a seeded release is certified ``guarantee: none``)."""

    train_frac: float = 0.5
    val_frac: float = 0.25
    split_seed: int = 0
    seed: int | None = None


@dataclass(kw_only=True)
class NodeTrainingOptions(NodeSplitOptions):
    """The split options plus the optimiser settings the DP-SGD-trained node classifiers share."""

    lr: float = 1e-2
    batch_size: int = 256
    max_grad_norm: float = 1.0


# Optimiser of every stage a node model trains WITHOUT noise (edge adjacency, where features and training labels are
# public, or a non-private run): DP-MLP's network, GAP's encoder / hop-0 path and classifier, DPDGC's public prior
# and classifier. The reference DPDGC code's defaults for its non-private modules; ``lr`` (1e-2) is sized for
# DP-SGD, whose clipping and noise regularise, and without them it over-fits: DPDGC's feature-only validation
# accuracy 0.725 / 0.456 / 0.702 at (1e-2, no dropout) against 0.752 / 0.500 / 0.724 at (1e-3, 0.5) on Cora /
# Chameleon / CiteSeer (3 split seeds; reports/peers.md, "DPDGC"). GAP and DP-MLP checked on the VALIDATION split,
# edge adjacency, old (1e-2, no dropout) -> shared (scripts/reproduce_edge_models.py --check-public;
# reports/public_defaults_validation.jsonl): DP-MLP (3 seeds) Cora 71.7 -> 74.7, CiteSeer 70.0 -> 72.6, Chameleon
# 45.8 -> 49.7, LastFM 20.8 -> 20.8 (featureless); GAP (2 seeds, eps 1 / 4) Cora 70.0 -> 75.2 / 79.2 -> 79.5,
# CiteSeer 68.1 -> 72.3 / 70.2 -> 72.9, Chameleon 48.7 -> 53.1 / 53.1 -> 53.0, LastFM 37.3 -> 27.9 / 60.7 -> 45.3
# at its 60 classifier epochs (under-trained at the lower rate; 300 epochs: 38.7 / 60.4). DP-SGD stages keep ``lr``.
PUBLIC_LR = 1e-3
PUBLIC_DROPOUT = 0.5


@dataclass(kw_only=True)
class PublicTrainingOptions(NodeTrainingOptions):
    """:class:`NodeTrainingOptions` plus the optimiser of the stages trained without noise (see ``PUBLIC_LR``)."""

    public_lr: float = PUBLIC_LR
    public_dropout: float = PUBLIC_DROPOUT


@dataclass(frozen=True)
class NodeSplit:
    """Index arrays of the training, validation and test nodes (labelled nodes only).

    ``train_slots`` is the number of node *slots* assigned to training by the public permutation of ``0..n-1``
    (labelled or not). It is public, so sampling rates, step counts and the DP-SGD denominator use it, never the
    private number of labelled training nodes (review finding F2: under node adjacency, removing one node must
    change only that node's example).
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    train_slots: int = 0
    train_slot_ids: np.ndarray | None = None  # the public training slots (labelled or not), sorted

    def mask(self, n: int, which: str) -> np.ndarray:
        m = np.zeros(n, dtype=bool)
        m[getattr(self, which)] = True
        return m


def node_split(graph: Graph, *, train: float = 0.5, val: float = 0.25, seed: int = 0) -> NodeSplit:
    """Random split of the labelled nodes into train / val / test fractions (the rest is test).

    The split seed is a public analyst choice, not privacy noise; it never goes into a release.
    """
    if graph.labels is None:
        raise GraphValidationError(
            f"graph '{graph.name}' has no node labels; node classification needs labels (an npz 'labels' array, "
            "or --labels FILE)"
        )
    if not (0 < train < 1 and 0 <= val < 1 and train + val < 1):
        raise OptionError(f"split fractions must satisfy 0 < train, 0 <= val, train + val < 1; got {train}, {val}")
    labels = np.asarray(graph.labels)
    labelled_count = int((labels >= 0).sum())
    if labelled_count < 3:
        raise GraphValidationError(f"graph '{graph.name}' has {labelled_count} labelled nodes; need at least 3")
    # Split node SLOTS 0..n-1 by a public permutation, then keep the labelled nodes of each part: a node's own
    # label (or its removal) decides only whether its own slot holds an example, never where other nodes go.
    rng = np.random.default_rng(seed)
    perm = rng.permutation(graph.num_nodes)
    n_train = max(1, int(round(train * perm.size)))
    n_val = int(round(val * perm.size))

    def labelled_of(slots: np.ndarray) -> np.ndarray:
        return np.sort(slots[labels[slots] >= 0])

    split = NodeSplit(train=labelled_of(perm[:n_train]), val=labelled_of(perm[n_train : n_train + n_val]),
                      test=labelled_of(perm[n_train + n_val :]), train_slots=n_train,
                      train_slot_ids=np.sort(perm[:n_train]))
    if split.train.size == 0:
        raise GraphValidationError(f"graph '{graph.name}': no labelled node fell into the training split")
    return split


def accuracy(pred: np.ndarray, labels: np.ndarray, idx: np.ndarray) -> float:
    if idx.size == 0:
        return float("nan")
    return float((np.asarray(pred)[idx] == np.asarray(labels)[idx]).mean())


# --------------------------------------------------------------------------------------------------- features


def feature_matrix(graph: Graph) -> torch.Tensor:
    """Dense float32 node features; a graph without features gets a constant 1 column (structure-only)."""
    feats = graph.dense_features()
    if feats is None:
        return torch.ones(graph.num_nodes, 1)
    return torch.as_tensor(np.array(feats, dtype=np.float32))  # a copy: Graph arrays are read-only


def row_normalize(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit L2 norm (zero rows stay zero): every row has norm <= 1 exactly."""
    norms = x.norm(dim=-1, keepdim=True)
    out = x / norms.clamp_min(1e-12)
    # Division can land a hair above 1 in floating point; rescale those rows so the bound holds exactly.
    over = out.norm(dim=-1, keepdim=True)
    return torch.where(over > 1.0, out / over, out)


# --------------------------------------------------------------------------------------------------- graphs


def adjacency_matrix(graph: Graph, weights: np.ndarray | None = None) -> sp.csr_matrix:
    """Symmetric CSR adjacency (float64); optional per-edge ``weights`` aligned with ``graph.edges``."""
    n = graph.num_nodes
    e = np.asarray(graph.edges)
    w = np.ones(e.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.concatenate([e[:, 0], e[:, 1]])
    cols = np.concatenate([e[:, 1], e[:, 0]])
    data = np.concatenate([w, w])
    return sp.csr_matrix((data, (rows, cols)), shape=(n, n))


#: Why a node-level release whose degree-cap projection dropped edges is not certified (review finding F5).
DEGREE_CAP_UNSOUND = (
    "under node adjacency the degree-cap projection dropped edges; it is not node-stable (adding one node can change "
    "capped edges elsewhere, docs/privacy.md#degree-cap), so the node-level proof does not cover this input: raise "
    "degree_cap above the maximum degree for a proved release"
)


def cap_degree(graph: Graph, max_degree: int, *, order_seed: int = 0) -> Graph:
    """Keep at most ``max_degree`` edges per node: edge-addition projection in a fixed public random order.

    Edges are visited in an order drawn from ``order_seed`` (a public constant; it does not depend on the graph's
    data beyond the node ids of each pair: the order is a random priority per node *pair*, derived from a hash of
    ``(u, v, order_seed)``); an edge is kept when both of its endpoints still have fewer than ``max_degree`` kept
    edges. Every node of the result has degree <= ``max_degree``.

    The node-level analyses in this package assume the degree bound holds (a public domain assumption, stated in
    the certificate); this projection is how an input that violates it is brought into that domain (see
    ``docs/privacy.md#degree-cap``).
    """
    if max_degree < 1:
        raise OptionError(f"--degree-cap must be >= 1, got {max_degree}")
    e = np.asarray(graph.edges)
    if e.shape[0] == 0 or graph.degrees().max() <= max_degree:
        return graph
    # Priority of a pair from a keyed integer hash: independent of every other pair and of the data.
    key = (e[:, 0].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ (
        e[:, 1].astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    ) ^ np.uint64(order_seed * 0x165667B19E3779F9 % (2**64))
    key ^= key >> np.uint64(31)
    key *= np.uint64(0xBF58476D1CE4E5B9)
    key ^= key >> np.uint64(29)
    order = np.argsort(key, kind="stable")
    deg = np.zeros(graph.num_nodes, dtype=np.int64)
    keep = np.zeros(e.shape[0], dtype=bool)
    for idx in order:
        u, v = e[idx]
        if deg[u] < max_degree and deg[v] < max_degree:
            keep[idx] = True
            deg[u] += 1
            deg[v] += 1
    return graph.replace(edges=e[keep])


# --------------------------------------------------------------------------------------------------- modules


def node_level_projection(model: Any, graph: Graph, kind: str, degree_cap: int) -> Graph:
    """The graph a node-level analysis runs on: under node adjacency, ``graph`` capped at the public ``degree_cap``
    (stated in the model's public assumptions; a cap that dropped edges makes the release uncertified); otherwise
    ``graph`` itself."""
    if kind != "node":
        return graph
    work = cap_degree(graph, degree_cap)
    model.uncertified_reasons = [] if work.num_edges == graph.num_edges else [DEGREE_CAP_UNSOUND]
    model.public_assumptions["degree_cap"] = (
        f"degree cap D={degree_cap} is public; the node-level analysis is over graphs of maximum degree "
        f"<= {degree_cap} (inputs are projected by dropping edges in a fixed data-independent pair order)"
    )
    return work


class MLP(nn.Module):
    """Plain MLP: ``layers`` linear layers with SELU and dropout between them (no batch norm: per-example DP-SGD)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, *, layers: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        if layers < 1:
            raise OptionError(f"an MLP needs at least one layer, got {layers}")
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, lin in enumerate(self.lins):
            x = lin(x)
            if i < len(self.lins) - 1:
                x = torch.selu(x)
                if self.dropout and self.training:
                    x = nn.functional.dropout(x, self.dropout, training=True)
        return x


# --------------------------------------------------------------------------------------------------- training


@dataclass
class TrainConfig:
    """Optimisation hyper-parameters shared by every model (one vocabulary: epochs, lr, batch_size, ...)."""

    epochs: int = 100
    lr: float = 1e-2
    batch_size: int = 256
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0


def train_nonprivate(
    module: nn.Module,
    loss_fn: Callable[[nn.Module, torch.Tensor], torch.Tensor],
    num_examples: int,
    cfg: TrainConfig,
    *,
    generator: torch.Generator,
    progress: Any = None,
    select: Callable[[nn.Module], float] | None = None,
) -> None:
    """Mini-batch Adam over ``num_examples`` (shuffled each epoch); ``loss_fn(module, batch_indices)`` is the mean loss.

    ``select`` (see :func:`validation_select`): scored once per epoch in eval mode; the module ends in the state of
    the best-scoring epoch (ties keep the earlier one). Scoring draws nothing from ``generator``, so the trajectory
    is the same with or without it. Only for stages whose every input is public or already released.
    """
    opt = torch.optim.Adam([p for p in module.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=cfg.weight_decay)
    module.train()
    bs = max(1, min(cfg.batch_size, num_examples))
    best, best_state = -math.inf, None
    for _ in range(cfg.epochs):
        perm = torch.randperm(num_examples, generator=generator)
        for start in range(0, num_examples, bs):
            idx = perm[start : start + bs]
            opt.zero_grad()
            loss = loss_fn(module, idx)
            loss.backward()
            opt.step()
        if select is not None:
            module.eval()
            score = float(select(module))
            module.train()
            if score > best:
                best, best_state = score, copy.deepcopy(module.state_dict())
        if progress is not None:
            progress()
    if best_state is not None:
        module.load_state_dict(best_state)
    module.eval()


#: The certificate's ``final_model_selection`` when a model's last stage keeps its best-validation epoch.
EPOCH_SELECTION_NOTE = ("DP-SGD stages: last iterate; the final noise-free classifier: its best-validation epoch, "
                        "chosen on labels that are public under edge adjacency (docs/privacy.md#epoch-selection)")


def validation_select(
    forward: Callable[[nn.Module, torch.Tensor], torch.Tensor], labels: torch.Tensor, val: np.ndarray | torch.Tensor,
    *, public: bool, notes: dict[str, str] | None = None,
) -> Callable[[nn.Module], float] | None:
    """The ``select`` hook of :func:`train_nonprivate`: accuracy of ``forward(module, nodes)`` (logits) on the split's
    validation nodes, or None (no selection) unless ``public``.

    ``public`` must be true only for a noise-free stage under EDGE adjacency: there the features and labels (of the
    validation nodes too) are public and the stage's other inputs are released values, so choosing its epoch by
    validation accuracy is post-processing of public data and costs no epsilon (docs/privacy.md#epoch-selection).
    Under node / k-neighbour adjacency labels are private, and a DP-SGD stage never gets this hook. When it does
    select, ``notes`` (the model's ``selection_notes``) records it for the certificate's DP-SGD checklist.
    """
    nodes = torch.as_tensor(np.asarray(val), dtype=torch.long)
    if not public or nodes.numel() == 0:
        return None
    truth = labels[nodes]
    if notes is not None:
        notes["final_model_selection"] = EPOCH_SELECTION_NOTE

    @torch.no_grad()
    def score(module: nn.Module) -> float:
        return float((forward(module, nodes).argmax(dim=-1) == truth).float().mean())

    return score


def steps_for(epochs: int, num_examples: int, batch_size: int) -> tuple[int, float]:
    """(steps, sample_rate) for ``epochs`` passes of Poisson batches of expected size ``batch_size``.

    Steps are ``epochs * ceil(N / B)``: the count the loop really runs (never floored).
    """
    if num_examples < 1:
        raise OptionError("no training examples (no labelled training nodes)")
    q = min(1.0, batch_size / num_examples)
    steps = max(1, int(epochs) * math.ceil(num_examples / max(1, batch_size)))
    return steps, q


# --------------------------------------------------------------------------------------------------- persistence


def save_module(directory: Path, name: str, modules: dict[str, nn.Module], extra: dict[str, torch.Tensor] | None = None) -> Path:
    """Write the modules' state dicts (prefixed ``module.``) and extra tensors into ``directory/name.safetensors``."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for prefix, mod in modules.items():
        for k, v in mod.state_dict().items():
            tensors[f"{prefix}.{k}"] = v.detach().contiguous().clone()
    for k, v in (extra or {}).items():
        tensors[f"extra.{k}"] = v.detach().contiguous().clone()
    path = Path(directory) / f"{name}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path))
    return path


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))


def split_state(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    p = prefix + "."
    return {k[len(p) :]: v for k, v in tensors.items() if k.startswith(p)}


def write_config(directory: Path, config: dict[str, Any]) -> Path:
    path = Path(directory) / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, sort_keys=True))
    return path


def as_index(idx: Sequence[int] | np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.asarray(idx), dtype=torch.long)


# --------------------------------------------------------------------------------------------------- private training


def adjacency_kind(budget: Any) -> str:
    """``edge`` / ``node`` / ``k-neighbor`` / ``graph`` of the budget's adjacency."""
    return budget.ledger.adjacency.kind.value


def adjacency_k(budget: Any) -> int | None:
    return budget.ledger.adjacency.k


def is_unlimited(budget: Any) -> bool:
    return math.isinf(float(budget.epsilon))


def noise_generators(seed: int | None) -> tuple[np.random.Generator, torch.Generator, bool]:
    """(numpy rng, torch generator, used_seed) from :func:`graphrelease.privacy.noise.secure_generator`."""
    from graphrelease.privacy.noise import secure_generator

    return secure_generator(seed)


def public_assumptions_for(kind: str) -> dict[str, str]:
    """What each adjacency treats as public (stated in every certificate)."""
    if kind == "edge":
        return {
            "node_set": "the node set and its size are public (edge adjacency)",
            "features_labels": "node features and the labels of training and validation nodes are public under edge "
                               "adjacency; validation labels choose the epoch of noise-free stages",
            "split": "the train/validation/test split is an analyst choice independent of the data",
        }
    return {
        "node_count": "the number of node slots is public; a removed node is an isolated slot without features or label",
        "split": "the train/validation/test split is an analyst choice independent of the data",
    }


class ReleaseAtFitMixin:
    """For models whose ``fit`` releases per-node values (GAP's noisy aggregates, DPDGC's Z~) and keeps them keyed by
    the training graph object in ``self._cache = (graph, values)``: querying that graph returns the release."""

    releases_embeddings = True
    _cache: tuple | None = None

    def released_embeddings(self) -> np.ndarray:
        if self._cache is None:
            from graphrelease.errors import OptionError

            raise OptionError(f"{getattr(self, 'name', 'model')}: call fit() before released_embeddings()")
        return self.embed(self._cache[0])  # type: ignore[attr-defined]

    def holds_release_for(self, graph: Graph) -> bool:
        return self._cache is not None and self._cache[0] is graph


class NodeModelMixin:
    """State every node classifier keeps: split, classes, seed usage, the accuracy measured after fit."""

    num_classes: int
    used_seed: bool = False
    split: NodeSplit | None = None
    train_accuracy: float = float("nan")
    test_accuracy: float = float("nan")
    public_assumptions: dict[str, str]
    #: the number of classes as the owner declared it (``num_classes`` option; required under node adjacency,
    #: where the labels are private and their maximum could change with one node)
    declared_num_classes: int | None = None

    config: Any  # train_frac, val_frac, split_seed: public analyst choices

    def _prepare(self, graph: Graph) -> NodeSplit:
        c = self.config
        self.split = node_split(graph, train=c.train_frac, val=c.val_frac, seed=c.split_seed)
        seen = int(np.asarray(graph.labels).max()) + 1
        if self.declared_num_classes is not None and seen > self.declared_num_classes:
            from graphrelease.errors import OptionError

            raise OptionError(f"num_classes={self.declared_num_classes} but the labels go up to {seen - 1}")
        self.num_classes = self.declared_num_classes or seen
        return self.split

    def _evaluate(self, graph: Graph, pred: np.ndarray) -> None:
        """Accuracy on the training and held-out test nodes (test labels used for this report only)."""
        assert self.split is not None
        labels = np.asarray(graph.labels)
        self.train_accuracy = accuracy(pred, labels, self.split.train)
        self.test_accuracy = accuracy(pred, labels, self.split.test)


class OneNetworkMixin:
    """Node classifiers whose whole release is one network ``self.net`` over node features (DP-MLP, DPAR's
    classifier, the baselines): logits, predictions, save and load are the same for all of them. ``_build_net``
    makes the network from the options and the released ``in_dim`` / ``num_classes``; ``_forward`` runs it."""

    net: nn.Module | None = None
    in_dim: int
    num_classes: int

    def _build_net(self, dropout: float = 0.0) -> nn.Module:
        c = self.config  # type: ignore[attr-defined]
        return MLP(self.in_dim, c.hidden, self.num_classes, layers=c.layers, dropout=dropout)

    def _forward(self, x: torch.Tensor, graph: Graph) -> torch.Tensor:
        assert self.net is not None
        return self.net(x)

    @torch.no_grad()
    def logits(self, graph: Graph) -> torch.Tensor:
        name = self.name  # type: ignore[attr-defined]
        if self.net is None:
            raise OptionError(f"{name}: call fit() or load() before predict()")
        x = feature_matrix(graph)
        if x.shape[1] != self.in_dim:
            raise OptionError(f"{name}: the model expects {self.in_dim} features, the graph has {x.shape[1]}")
        self.net.eval()
        return self._forward(x, graph)

    def predict(self, graph: Graph) -> np.ndarray:
        return self.logits(graph).argmax(dim=1).numpy()

    def embed(self, graph: Graph) -> np.ndarray:
        """Class logits per node: a function of the released weights and the graph the caller passes."""
        return self.logits(graph).numpy()

    def save(self, directory: Path) -> list[Path]:
        if self.net is None:
            raise OptionError(f"{self.name}: nothing to save before fit()")  # type: ignore[attr-defined]
        return [save_module(directory, "weights", {"net": self.net}),
                self.write_released_config(directory, in_dim=self.in_dim,  # type: ignore[attr-defined]
                                           num_classes=self.num_classes)]

    @classmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> Any:
        model = cls.from_released_config(config)  # type: ignore[attr-defined]
        model.num_classes, model.in_dim = int(config["num_classes"]), int(config["in_dim"])
        model.net = model._build_net()
        model.net.load_state_dict(split_state(load_tensors(Path(directory) / "weights.safetensors"), "net"))
        model.net.eval()
        return model
