r"""The noisy aggregation of GAP's hops (and DPDGC's Laplace option): the pre-noise query, the noise, and what the
classifier reads of the release. Moved out of models/gap.py (which re-exports these names) to keep it under the
project's file-size limit.
"""

from __future__ import annotations

import scipy.sparse as sp
import torch

from graphrelease.models.common import row_normalize
from graphrelease.models.residual import snr_shrink


def aggregate_once(adj: sp.csr_matrix, h: torch.Tensor) -> torch.Tensor:
    """The pre-noise query of one hop: :math:`A_w H` in float64."""
    return torch.as_tensor(adj @ h.double().numpy())


def l1_normalize(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to L1 norm <= 1 exactly (zero rows stay zero), with the same float guard as row_normalize."""
    out = x / x.abs().sum(dim=-1, keepdim=True).clamp_min(1e-12)
    over = out.abs().sum(dim=-1, keepdim=True)
    return torch.where(over > 1.0, out / over, out)


def laplace_like(shape, scale: float, generator: torch.Generator | None) -> torch.Tensor:
    """Float64 Laplace(0, scale) noise from ``generator``: the difference of two independent Exp(1) draws."""
    e1 = torch.empty(shape, dtype=torch.float64).exponential_(generator=generator)
    e2 = torch.empty(shape, dtype=torch.float64).exponential_(generator=generator)
    return float(scale) * (e1 - e2)


def perturbed_hops(
    adj: sp.csr_matrix, h0: torch.Tensor, hops: int, noise_std: float, generator: torch.Generator | None,
    inputs: str = "rownorm", noise: str = "gaussian", signal_norm: float = 1.0,
) -> list[torch.Tensor]:
    """:math:`H_1..H_K`, each ``rownorm(A_w H_{k-1} + N(0, noise_std^2))``, noise drawn in float64.

    The next hop always aggregates the row-normalised release (the sensitivity needs rows of norm <= 1). With
    ``inputs="scaled"`` the returned list holds :math:`(A_w H_{k-1} + N)/\max(\sigma, 1)` instead: the same
    release, post-processed differently for the classifier (row normalisation of a noise-dominated row throws
    away how far the signal stands above the noise). ``inputs="snr"``: the release shrunk by
    :func:`graphrelease.models.residual.snr_shrink` with the public row-norm bound ``signal_norm`` (node adjacency:
    the degree cap D), what the residual node classifier reads.
    """
    # ``noise="laplace"``: rows are L1-normalised before every hop and ``noise_std`` is the Laplace scale b.
    norm = l1_normalize if noise == "laplace" else row_normalize
    out, h = [], norm(h0)
    for _ in range(hops):
        agg = aggregate_once(adj, h)
        if noise_std > 0 and noise == "laplace":
            agg = agg + laplace_like(agg.shape, noise_std, generator)
        elif noise_std > 0:
            agg = agg + torch.normal(0.0, float(noise_std), size=agg.shape, generator=generator, dtype=torch.float64)
        h = norm(agg).float()
        if inputs == "snr":
            out.append(snr_shrink(agg, signal_norm, noise_std, noise))
        else:
            out.append((agg / max(float(noise_std), 1.0)).float() if inputs == "scaled" else row_normalize(agg).float())
    return out
