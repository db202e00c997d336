"""The released part of a GVAE / GGAN fit: decoder weights, config, node-count model and edge-count target
(:class:`FittedDeep`); sampling from it is post-processing. Fitting is in :mod:`graphrelease.generators.deep_generator`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphrelease.errors import OptionError
from graphrelease.generators import deep_models as dm
from graphrelease.generators.base import FittedGenerator
from graphrelease.generators.sampling import calibrate_offset, sample_edges
from graphrelease.graph import Graph

# ------------------------------------------------------------------------------------------------ fitted model

def write_decoder(directory: Path, tensors: dict[str, torch.Tensor], config: dict[str, Any]) -> list[Path]:
    """``decoder.safetensors`` + ``config.json`` of a deep release (weights and released values only; no pickle)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / "decoder.safetensors"
    save_file({k: v.detach().contiguous() for k, v in tensors.items()}, str(weights))
    path = directory / "config.json"
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return [weights, path]


def read_decoder(directory: Path, what: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Inverse of :func:`write_decoder`; ``what`` names the release in the error when the files are missing."""
    from safetensors.torch import load_file

    directory = Path(directory)
    try:
        return load_file(str(directory / "decoder.safetensors")), json.loads((directory / "config.json").read_text())
    except FileNotFoundError as err:
        raise OptionError(f"{directory} holds no {what} (decoder.safetensors + config.json)") from err

class FittedDeep(FittedGenerator):
    releases_embeddings = True

    @property
    def has_node_latents(self) -> bool:
        return self.latents is not None

    """Decoder weights + what sampling needs; everything in it is DP-released, public, or (nonprivate/paper) said
    otherwise in ``public_assumptions``."""

    def __init__(self, decoder: dict[str, torch.Tensor], config: dict[str, Any],
                 latents: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        self.decoder = {k: v.detach().clone().float() for k, v in decoder.items() if k.startswith(dm.DEC_PREFIX)}
        self.config = dict(config)
        self.latents = latents
        self.public_assumptions = dict(self.config.get("public_assumptions", {}))

    # sampling is post-processing: only the released decoder, node-count model and edge target are used
    def _node_count(self, rng: np.random.Generator) -> int:
        nc = self.config["node_counts"]
        values, probs = np.asarray(nc["values"], dtype=np.int64), np.asarray(nc["probs"], dtype=np.float64)
        return int(rng.choice(values, p=probs / probs.sum()))

    def embeddings(self, num_nodes: int, rng: np.random.Generator) -> np.ndarray:
        """Decoded node embeddings ``f(z)`` for ``num_nodes`` nodes (posterior latents when released, else prior)."""
        tg = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
        if self.latents is not None:
            mu, lv = self.latents
            n0 = mu.shape[0]
            idx = torch.arange(n0) if num_nodes == n0 else torch.as_tensor(rng.integers(0, n0, size=num_nodes))
            z = dm.reparameterize(mu[idx], lv[idx], torch.randn(num_nodes, dm.LATENT, generator=tg))
        else:
            z = torch.randn(num_nodes, dm.LATENT, generator=tg)
        with torch.no_grad():
            return dm.decode(self.decoder, z).numpy()

    def sample(self, num_graphs: int = 1, *, num_nodes: int | None = None, rng: np.random.Generator | None = None
               ) -> list[Graph]:
        self.check_sample_request(num_graphs, num_nodes)
        rng = rng if rng is not None else np.random.default_rng()
        bias = float(self.decoder["dec.bias"][0])
        out = []
        for g in range(int(num_graphs)):
            n = int(num_nodes) if num_nodes is not None else self._node_count(rng)
            emb = self.embeddings(n, rng)
            density = self.config.get("target_density")
            table = self.config.get("size_densities")
            if table:  # per-size DP densities (collections, edge adjacency): the nearest released size
                sizes = np.asarray(table["sizes"])
                density = float(np.asarray(table["densities"])[int(np.argmin(np.abs(sizes - n)))])
            offset = 0.0
            if density is not None:
                offset = calibrate_offset(emb, bias, float(density) * n * (n - 1) / 2, rng=rng)
            edges = sample_edges(emb, bias, offset, rng=rng)
            out.append(Graph(n, edges, name=f"synthetic_{g:03d}"))
        return out

    def save(self, directory: Path) -> list[Path]:
        tensors = dict(self.decoder)
        if self.latents is not None:
            tensors["latent.mu"] = self.latents[0].float()
            tensors["latent.logvar"] = self.latents[1].float()
        return write_decoder(directory, tensors, self.config)

    @classmethod
    def load(cls, directory: Path) -> "FittedDeep":
        tensors, config = read_decoder(directory, "GVAE/GGAN decoder")
        latents = None
        if "latent.mu" in tensors:
            latents = (tensors.pop("latent.mu"), tensors.pop("latent.logvar"))
        return cls(tensors, config, latents)
