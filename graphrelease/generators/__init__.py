"""Synthetic-graph generators. Importing this package registers every generator in ``GENERATORS``."""

from __future__ import annotations

import importlib

from graphrelease.generators.base import GENERATORS, FittedGenerator, GraphGenerator

# One line per generator module (keep sorted). Each registers itself with @GENERATORS.register("name").
_GENERATOR_MODULES: list[str] = [
    "graphrelease.generators.bter",
    "graphrelease.generators.chung_lu",
    "graphrelease.generators.dcsbm",
    "graphrelease.generators.dpdk",
    "graphrelease.generators.ggan",
    "graphrelease.generators.gvae",
    "graphrelease.generators.privgraph",
    "graphrelease.generators.randomized_response",
    "graphrelease.generators.tmf",
]

for _module in _GENERATOR_MODULES:
    importlib.import_module(_module)

__all__ = ["GENERATORS", "FittedGenerator", "GraphGenerator"]
