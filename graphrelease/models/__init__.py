"""Private GNN models and DP embeddings. Importing this package registers every model in ``MODELS``."""

from __future__ import annotations

import importlib

from graphrelease.models.base import MODELS, PrivateModel

# One line per model module (keep sorted). Each registers itself with @MODELS.register("name").
_MODEL_MODULES: list[str] = [
    "graphrelease.models.baselines",
    "graphrelease.models.dpar",
    "graphrelease.models.dpdgc",
    "graphrelease.models.gap",
    "graphrelease.models.gap_link",
    "graphrelease.models.mlp",
    "graphrelease.models.relational",
]

for _module in _MODEL_MODULES:
    importlib.import_module(_module)

__all__ = ["MODELS", "PrivateModel"]
