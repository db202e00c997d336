"""Adjacency notions: what one "record" of the private data is.

``edge``       two graphs differ in one undirected edge (node set, features and labels public).
``node``       one node with all its edges, features and label added or removed.
``k-neighbor`` one node's features/label replaced and up to k entries of its row/column of A replaced
               (DPDGC, Def. 4.1).
``graph``      one whole graph of a collection added or removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from graphrelease.errors import OptionError


class AdjacencyKind(str, Enum):
    EDGE = "edge"
    NODE = "node"
    K_NEIGHBOR = "k-neighbor"
    GRAPH = "graph"


_DESCRIPTIONS = {
    AdjacencyKind.EDGE: "neighbouring graphs differ in one undirected edge; node set, features and labels are public",
    AdjacencyKind.NODE: "neighbouring graphs differ in one node together with all its edges, features and label",
    AdjacencyKind.K_NEIGHBOR: (
        "neighbouring graphs differ in one node's features and label and in at most k entries of its adjacency "
        "row/column (DPDGC Def. 4.1)"
    ),
    AdjacencyKind.GRAPH: "neighbouring collections differ by adding or removing one whole graph",
}


@dataclass(frozen=True)
class Adjacency:
    """A privacy unit. Construct with :meth:`parse` from CLI strings such as ``"edge"`` or ``"k-neighbor:5"``."""

    kind: AdjacencyKind
    k: int | None = None

    def __post_init__(self) -> None:
        kind = AdjacencyKind(self.kind)
        object.__setattr__(self, "kind", kind)
        if kind is AdjacencyKind.K_NEIGHBOR:
            if self.k is None or int(self.k) < 1:
                raise OptionError(f"k-neighbor adjacency needs k >= 1, got k={self.k!r} (write e.g. 'k-neighbor:5')")
            object.__setattr__(self, "k", int(self.k))
        elif self.k is not None:
            raise OptionError(f"adjacency '{kind.value}' takes no k (got k={self.k!r})")

    @classmethod
    def parse(cls, text: "str | Adjacency") -> "Adjacency":
        if isinstance(text, Adjacency):
            return text
        raw = str(text).strip().lower().replace("_", "-")
        name, _, k = raw.partition(":")
        if name in ("k-neighbor", "k-neighbour", "kneighbor"):
            try:
                return cls(AdjacencyKind.K_NEIGHBOR, int(k))
            except ValueError as err:
                raise OptionError(f"--adjacency '{text}': k must be an integer, e.g. 'k-neighbor:5'") from err
        try:
            kind = AdjacencyKind(name)
        except ValueError as err:
            choices = ", ".join(a.value for a in AdjacencyKind)
            raise OptionError(f"--adjacency '{text}' is not one of: {choices} (k-neighbor as 'k-neighbor:K')") from err
        if k:
            raise OptionError(f"--adjacency '{text}': only k-neighbor takes ':K'")
        return cls(kind)

    @property
    def name(self) -> str:
        return f"{self.kind.value}:{self.k}" if self.kind is AdjacencyKind.K_NEIGHBOR else self.kind.value

    def describe(self) -> str:
        text = _DESCRIPTIONS[self.kind]
        return text.replace("at most k", f"at most k={self.k}") if self.k is not None else text

    def __str__(self) -> str:
        return self.name


EDGE = Adjacency(AdjacencyKind.EDGE)
NODE = Adjacency(AdjacencyKind.NODE)
GRAPH = Adjacency(AdjacencyKind.GRAPH)
