"""graphrelease: secure synthetic graph release with machine-checkable privacy certificates."""

from __future__ import annotations

from typing import Any

from graphrelease.errors import UserError

__version__ = "0.1.0"

__all__ = ["CleaningReport", "Graph", "GraphCollection", "UserError", "__version__"]


def __getattr__(name: str) -> Any:
    # The graph classes pull in numpy and scipy (~0.5 s); the CLI imports this package for its errors and must
    # answer --help and a mistyped option before any of that (PEP 562 lazy attributes).
    if name in ("CleaningReport", "Graph", "GraphCollection"):
        from graphrelease import graph

        return getattr(graph, name)
    raise AttributeError(f"module 'graphrelease' has no attribute {name!r}")
