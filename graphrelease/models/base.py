"""The one interface every private GNN model / DP embedding method implements.

``model.fit(graph, budget)`` trains under ``budget`` (which owns the ledger); ``model.predict(graph)`` and
``model.embed(graph)`` run the released parameters (post-processing, except where a method documents that
inference reads private structure again and charges for it). Register with ``@MODELS.register("name")``.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from graphrelease.graph import Graph
from graphrelease.registry import Registry

if TYPE_CHECKING:
    from graphrelease.privacy.budget import Budget


class PrivateModel(ABC):
    """Every subclass's ``fit`` runs with a forked torch random state: a model may seed torch's global generator
    for its initialisation (from its own noise generator), and the caller's random state is left as it was."""

    name: ClassVar[str]
    adjacencies: ClassVar[frozenset[str]] = frozenset({"edge"})
    non_private: ClassVar[bool] = False
    #: Under node adjacency the proof needs every degree <= the ``degree_cap`` option (a declared bound): an input
    #: above it would come out uncertified, which ``train`` checks before training.
    needs_degree_bound_under_node_adjacency: ClassVar[bool] = False
    #: What ``score_pairs`` returns for link models: ``"logit"`` (``predict`` turns it into a probability) or
    #: ``"cosine"`` (similarity in [-1, 1]); ``None`` for node models.
    pair_score: ClassVar[str | None] = None
    #: ``logits(graph)`` gives per-node class logits (node classifiers whose forward pass can be queried).
    gives_logits: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_forks_torch_rng", False):
            @functools.wraps(fit)
            def fit_with_forked_rng(self, *args: Any, **kw: Any):
                import torch

                with torch.random.fork_rng(devices=[]):
                    return fit(self, *args, **kw)

            fit_with_forked_rng._forks_torch_rng = True  # type: ignore[attr-defined]
            cls.fit = fit_with_forked_rng  # type: ignore[method-assign]

    @abstractmethod
    def fit(self, graph: Graph, budget: "Budget", *, progress: Any = None) -> "PrivateModel":
        """Train on ``graph`` under ``budget``; returns ``self``."""

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


MODELS: Registry[PrivateModel] = Registry("model")
