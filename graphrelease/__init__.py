"""graphrelease: secure synthetic graph release with machine-checkable privacy certificates."""

from graphrelease.errors import UserError
from graphrelease.graph import CleaningReport, Graph, GraphCollection

__version__ = "0.1.0"

__all__ = ["CleaningReport", "Graph", "GraphCollection", "UserError", "__version__"]
