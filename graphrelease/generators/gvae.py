"""GVAE generators: ``gvae`` (non-private ceiling) and ``dpgvae`` (modes paper / edge-tuples / buckets / graphs).

See :mod:`graphrelease.generators.deep_generator` for the modes and ``docs/privacy.md`` (sections
``dpgvae-*``) for their proofs.

Example
-------
>>> from graphrelease.generators import GENERATORS
>>> GENERATORS.get("dpgvae")(mode="edge-tuples").mode
'edge-tuples'
"""

from __future__ import annotations

from graphrelease.generators.base import GENERATORS
from graphrelease.generators.deep_generator import DeepGraphGenerator


@GENERATORS.register("gvae")
class GVAE(DeepGraphGenerator):
    """Non-private graph VAE (utility ceiling): GCN encoder, FNN decoder, inner-product edges."""

    gan = False
    non_private = True


@GENERATORS.register("dpgvae")
class DPGVAE(DeepGraphGenerator):
    """Edge-DP graph VAE: sound modes by default; ``mode="paper"`` reproduces the seed's Algorithm 1."""

    gan = False
