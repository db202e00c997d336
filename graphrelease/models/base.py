"""The one interface every private GNN model / DP embedding method implements.

``model.fit(graph, budget)`` trains under ``budget`` (which owns the ledger); ``model.predict(graph)`` and
``model.embed(graph)`` run the released parameters (post-processing, except where a method documents that
inference reads private structure again and charges for it). Register with ``@MODELS.register("name")``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from graphrelease.graph import Graph
from graphrelease.registry import Registry

if TYPE_CHECKING:
    import torch

    from graphrelease.models.common import NodeSplit
    from graphrelease.privacy.budget import Budget


@dataclass(frozen=True)
class FitContext:
    """What the template :meth:`PrivateModel.fit` has set up when a method's ``_fit`` hook runs."""

    kind: str  #: adjacency kind of the budget (``edge`` / ``node`` / ``k-neighbor``)
    k: int | None  #: k of k-neighbour adjacency, else ``None``
    private: bool  #: ``False`` for an unlimited (non-private) budget
    rng: "np.random.Generator"  #: noise generator (secure unless the user seeded the model)
    tgen: "torch.Generator"  #: the same for torch draws
    split: "NodeSplit | None"  #: public train/val/test split of node classifiers, else ``None``


class PrivateModel(ABC):
    """Every model's ``fit`` is this class's template method (PyG's ``MessagePassing`` is the model): it checks the
    adjacency and the method's options, builds the split and the noise generators, then runs the method's ``_fit``
    hook with torch's global random state forked, so the caller's random state is left as it was. Subclasses
    implement ``_fit``, never ``fit``."""

    name: ClassVar[str]
    adjacencies: ClassVar[frozenset[str]] = frozenset({"edge"})
    #: appended to the one-line refusal of an unsupported adjacency (why the method has no analysis for it)
    adjacency_refusal_note: ClassVar[str] = ""
    non_private: ClassVar[bool] = False
    #: Under node adjacency the proof needs every degree <= the ``degree_cap`` option (a declared bound): an input
    #: above it would come out uncertified, which ``train`` checks before training.
    needs_degree_bound_under_node_adjacency: ClassVar[bool] = False
    #: What ``score_pairs`` returns for link models: ``"logit"`` (``predict`` turns it into a probability) or
    #: ``"cosine"`` (similarity in [-1, 1]); ``None`` for node models.
    pair_score: ClassVar[str | None] = None
    #: ``logits(graph)`` gives per-node class logits (node classifiers whose forward pass can be queried).
    gives_logits: ClassVar[bool] = False

    config: Any
    used_seed: bool = False
    public_assumptions: dict[str, str]
    #: Statements for the certificate's DP-SGD checklist (``hyperparameters_tuned_on_private_data``,
    #: ``final_model_selection``) that only the fitted model knows; reset by every fit.
    selection_notes: dict[str, str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fit" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides fit(); implement the _fit hook instead (PrivateModel.fit is "
                            "the template that sets up adjacency checks, the split and the noise generators)")

    def fit(self, graph: Graph, budget: "Budget", *, progress: Any = None) -> "PrivateModel":
        """Train on ``graph`` under ``budget``; returns ``self``."""
        import torch

        from graphrelease.errors import OptionError
        from graphrelease.models.common import (
            NodeModelMixin,
            adjacency_k,
            adjacency_kind,
            is_unlimited,
            noise_generators,
            public_assumptions_for,
        )

        kind = adjacency_kind(budget)
        if kind not in self.adjacencies:
            raise OptionError(f"{self.name} supports adjacency {sorted(self.adjacencies)}, not '{kind}'"
                              f"{self.adjacency_refusal_note}")
        private = not is_unlimited(budget)
        self._check_options(kind, private=private, budget=budget)
        split = self._prepare(graph) if isinstance(self, NodeModelMixin) else None
        self.public_assumptions = public_assumptions_for(kind)
        self.selection_notes = {}
        rng, tgen, self.used_seed = noise_generators(self.config.seed)
        ctx = FitContext(kind=kind, k=adjacency_k(budget), private=private, rng=rng, tgen=tgen, split=split)
        with torch.random.fork_rng(devices=[]):
            # Initialisation draws from torch's global generator; seed it from the noise generator so a seeded
            # model is reproducible and an unseeded one is not predictable.
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=tgen)))
            self._fit(graph, budget, ctx, progress=progress)
        return self

    def _check_options(self, kind: str, *, private: bool, budget: "Budget") -> None:
        """Refuse option combinations the method has no analysis for, before anything is read or drawn."""

    @abstractmethod
    def _fit(self, graph: Graph, budget: "Budget", ctx: FitContext, *, progress: Any = None) -> None:
        """The method itself: calibrate through :mod:`graphrelease.privacy.calibration`, charge, train."""

    @abstractmethod
    def predict(self, graph: Graph) -> np.ndarray:
        """Class predictions (node classification) or scores, one row per node."""

    def embed(self, graph: Graph) -> np.ndarray:
        raise NotImplementedError(f"{self.name} does not produce embeddings")

    #: ``released_embeddings()`` gives DP embeddings charged during ``fit`` (GAP's aggregates, DPDGC's Z~): what
    #: ``embed`` releases. Models without it compute embeddings at query time from the graph they are given.
    releases_embeddings: ClassVar[bool] = False

    def released_embeddings(self) -> np.ndarray:
        """The embeddings released (and charged) by ``fit``, one row per node of the training graph."""
        raise NotImplementedError(f"{self.name} releases no embeddings during fit")

    def holds_release_for(self, graph: Graph) -> bool:
        """True when querying ``graph`` returns the release charged during ``fit`` (it is the training graph
        object), so an attacker may query it without reading its edges outside the mechanism."""
        return False

    @abstractmethod
    def save(self, directory: Path) -> list[Path]:
        """Write released weights + config; return files written."""

    @classmethod
    @abstractmethod
    def load(cls, directory: Path, config: dict[str, Any]) -> "PrivateModel":
        """Rebuild a released model from what ``save`` wrote (``config`` = its ``config.json``)."""

    #: the options dataclass (``self.config``)
    config_class: ClassVar[type]

    def write_released_config(self, directory: Path, **released: Any) -> Path:
        """``config.json`` of a release: the method, what ``fit`` fixed (``released``: shapes, noise scales) and every
        option except the noise seed (a seeded release is uncertified; the seed never travels with one)."""
        from graphrelease.models.common import write_config

        cfg = {"method": self.name, **released, **asdict(self.config)}
        cfg.pop("seed", None)
        return write_config(directory, cfg)

    @classmethod
    def from_released_config(cls, config: dict[str, Any], **older_release_defaults: Any) -> Any:
        """A model with the options a release recorded; ``older_release_defaults`` fill keys that releases written
        before an option existed do not carry."""
        known = {f.name for f in fields(cls.config_class)}
        return cls(**{**older_release_defaults, **{k: v for k, v in config.items() if k in known}})


MODELS: Registry[PrivateModel] = Registry("model")
