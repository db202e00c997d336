"""GGAN generators: ``ggan`` (non-private ceiling) and ``dpggan`` (modes paper / edge-tuples / buckets / graphs).

The discriminator is a GCN with sum pooling and an FNN 16 -> 32 -> 1 (lambda1 = lambda2 = 0.1). In the sound modes
it sees only DP-released structure (edge-tuples: rows of the DP sketch against generated sketches with the same
noise law) or is itself clipped with the example it reads (buckets, graphs).

Example
-------
>>> from graphrelease.generators import GENERATORS
>>> GENERATORS.get("dpggan")(mode="graphs").gan
True
"""

from __future__ import annotations

from graphrelease.generators.base import GENERATORS
from graphrelease.generators.deep_generator import DeepGraphGenerator


@GENERATORS.register("ggan")
class GGAN(DeepGraphGenerator):
    """Non-private graph GAN (utility ceiling)."""

    gan = True
    non_private = True


@GENERATORS.register("dpggan")
class DPGGAN(DeepGraphGenerator):
    """Edge-DP graph GAN: sound modes by default; ``mode="paper"`` reproduces the seed's Algorithm 1."""

    gan = True
