"""The one interface every synthetic-graph generator implements.

``generator.fit(data, budget) -> FittedGenerator``; ``fitted.sample(num_graphs, ...) -> list[Graph]``.
Every mechanism that reads ``data`` records an entry in ``budget.ledger`` (charged against the budget before its
result is used); sampling is post-processing and costs nothing.

Register implementations with ``@GENERATORS.register("name")`` in a module listed in
:mod:`graphrelease.generators` so the CLI can list them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from graphrelease.graph import Graph, GraphCollection
from graphrelease.registry import Registry

if TYPE_CHECKING:
    from graphrelease.privacy.budget import Budget


class FittedGenerator(ABC):
    """A fitted generator: only released (DP) parameters, safe to publish and to sample from without the input."""

    #: Statistics of the input the generator treats as public (node count under edge adjacency, ...), for the
    #: certificate's ``public_assumptions``.
    public_assumptions: dict[str, str]
    #: Capabilities an attacker (the audit) may use, declared rather than discovered: ``releases_embeddings``
    #: means ``embeddings(num_nodes, rng)`` gives decoded per-node embeddings whose inner products score pairs
    #: (node order kept only when per-node latents are released: ``has_node_latents``).
    releases_embeddings: ClassVar[bool] = False

    @property
    def has_node_latents(self) -> bool:
        """True when sampled node ``i`` is the owner's node ``i`` (per-node latents were released)."""
        return False

    @abstractmethod
    def sample(self, num_graphs: int = 1, *, num_nodes: int | None = None, rng: np.random.Generator | None = None
               ) -> list[Graph]:
        """Draw synthetic graphs (post-processing: no privacy cost)."""

    @abstractmethod
    def save(self, directory: Path) -> list[Path]:
        """Write the released parameters (weights + config) into ``directory``; return the files written."""

    @classmethod
    @abstractmethod
    def load(cls, directory: Path) -> "FittedGenerator":
        """Inverse of :meth:`save`."""


class GraphGenerator(ABC):
    """A synthetic-graph generator: hyper-parameters in the constructor (keyword-only), data in :meth:`fit`."""

    name: ClassVar[str]
    #: ``"graph"`` (one large graph) and/or ``"collection"``.
    inputs: ClassVar[frozenset[str]] = frozenset({"graph"})
    #: Adjacency notions this generator can certify.
    adjacencies: ClassVar[frozenset[str]] = frozenset({"edge"})
    #: ``True`` when the generator reads the data without noise (a non-private ceiling such as plain GVAE).
    non_private: ClassVar[bool] = False

    @abstractmethod
    def fit(self, data: Graph | GraphCollection, budget: "Budget", *, progress: Any = None) -> FittedGenerator:
        """Fit under ``budget`` (which owns the run's ledger) and return the fitted generator."""


GENERATORS: Registry[GraphGenerator] = Registry("generator")
