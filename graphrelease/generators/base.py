"""The one interface every synthetic-graph generator implements.

``generator.fit(data, budget) -> FittedGenerator``; ``fitted.sample(num_graphs, ...) -> list[Graph]``.
Every mechanism that reads ``data`` records an entry in ``budget.ledger`` (charged against the budget before its
result is used); sampling is post-processing and costs nothing.

Register implementations with ``@GENERATORS.register("name")`` in a module listed in
:mod:`graphrelease.generators` so the CLI can list them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
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

    @staticmethod
    def check_sample_request(num_graphs: int, num_nodes: int | None) -> None:
        """The one answer to a sample request no generator can serve (no graphs, or graphs of fewer than 2 nodes)."""
        from graphrelease.errors import OptionError

        if int(num_graphs) < 1:
            raise OptionError(f"num_graphs must be >= 1, got {num_graphs}")
        if num_nodes is not None and int(num_nodes) < 2:
            raise OptionError(f"num_nodes must be >= 2, got {num_nodes}")

    def release_notes(self) -> list[str]:
        """Plain words for the data owner on what this release's own released values imply (a stage that could not
        run at this epsilon, say). Read from released values and public settings only, so they may be shown with
        the release."""
        return []

    @abstractmethod
    def save(self, directory: Path) -> list[Path]:
        """Write the released parameters (weights + config) into ``directory``; return the files written."""

    @classmethod
    @abstractmethod
    def load(cls, directory: Path) -> "FittedGenerator":
        """Inverse of :meth:`save`."""


@dataclass(frozen=True)
class GeneratorFitContext:
    """What the template :meth:`GraphGenerator.fit` has set up when a generator's ``_fit`` hook runs."""

    epsilon: float  #: the budget's epsilon (``inf`` only for generators that run unlimited budgets)
    rng: np.random.Generator  #: noise generator: secure unless the user seeded the generator
    torch_generator: Any  #: the same for torch draws
    used_seed: bool  #: a user seed drove the noise: the certificate must say ``guarantee: none``


class GraphGenerator(ABC):
    """A synthetic-graph generator: hyper-parameters in the constructor (keyword-only), data in :meth:`fit`.

    ``fit`` is the template method every generator shares: it checks the input kind, the adjacency and the
    epsilon against what the generator declares, builds the noise generators from ``self.seed`` (secure unless a
    seed was given), then runs the generator's ``_fit`` hook.
    """

    name: ClassVar[str]
    #: ``"graph"`` (one large graph) and/or ``"collection"``.
    inputs: ClassVar[frozenset[str]] = frozenset({"graph"})
    #: Adjacency notions this generator can certify.
    adjacencies: ClassVar[frozenset[str]] = frozenset({"edge"})
    #: ``True`` when the generator reads the data without noise (a non-private ceiling such as plain GVAE).
    non_private: ClassVar[bool] = False
    #: ``True`` when an unlimited budget (``--epsilon inf``) is meaningful (a non-private mode exists).
    runs_unlimited: ClassVar[bool] = False
    seed: int | None = None

    def fit(self, data: Graph | GraphCollection, budget: "Budget", *, progress: Any = None) -> FittedGenerator:
        """Fit under ``budget`` (which owns the run's ledger) and return the fitted generator."""
        from graphrelease.errors import OptionError
        from graphrelease.privacy.noise import secure_generator

        if isinstance(data, GraphCollection) and "collection" not in self.inputs:
            raise OptionError(f"generator '{self.name}' fits one large graph; got a collection '{data.name}' "
                              "(pick a collection generator, or pass a single graph)")
        if isinstance(data, Graph) and "graph" not in self.inputs:
            raise OptionError(f"generator '{self.name}' fits a collection of graphs; got one graph '{data.name}'")
        if isinstance(data, Graph) and data.num_nodes < 2:
            raise OptionError(f"generator '{self.name}' needs at least 2 nodes, graph '{data.name}' has "
                              f"{data.num_nodes}")
        adjacency = budget.ledger.adjacency
        if adjacency.kind.value not in self.adjacencies:
            raise OptionError(f"generator '{self.name}' certifies {' or '.join(sorted(self.adjacencies))} adjacency "
                              f"only, the budget asks for '{adjacency.name}' (use --adjacency "
                              f"{sorted(self.adjacencies)[0]})")
        eps = float(budget.epsilon)
        if not eps > 0 or (math.isinf(eps) and not self.runs_unlimited):
            raise OptionError(f"generator '{self.name}' needs a finite epsilon > 0, got {eps} (pass --epsilon, e.g. "
                              "--epsilon 1)")
        rng, torch_generator, used_seed = secure_generator(self.seed)
        ctx = GeneratorFitContext(epsilon=eps, rng=rng, torch_generator=torch_generator, used_seed=bool(used_seed))
        return self._fit(data, budget, ctx, progress=progress)

    @abstractmethod
    def _fit(self, data: Graph | GraphCollection, budget: "Budget", ctx: GeneratorFitContext, *,
             progress: Any = None) -> FittedGenerator:
        """The generator itself: charge every mechanism to ``budget`` before its result is used."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fit" in cls.__dict__:
            raise TypeError(f"{cls.__name__} overrides fit(); implement the _fit hook instead (GraphGenerator.fit is "
                            "the template that checks the input, the adjacency and the epsilon)")


GENERATORS: Registry[GraphGenerator] = Registry("generator")
