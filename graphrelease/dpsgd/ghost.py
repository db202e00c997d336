r"""Ghost clipping with book-keeping for models made of linear layers: the clipped gradient sum of a DP-SGD step
without materialising per-example gradients.

For a linear layer :math:`o_i = W a_i + b` applied once to example i's row :math:`a_i`, example i's gradient is
:math:`\nabla_W \ell_i = \delta_i a_i^\top` and :math:`\nabla_b \ell_i = \delta_i` with
:math:`\delta_i = \partial \ell_i / \partial o_i`, so (Goodfellow 2015; Li et al. 2022 "ghost clipping"; Bu et al.
2023 "book-keeping", Algorithm 1):

.. math::

    \|g_i\|_2^2 = \sum_{\text{layers}} \|\delta_i\|^2 \bigl(\|a_i\|^2 + 1_{\text{bias}}\bigr), \qquad
    \sum_i f_i g_i = \Bigl(\sum_i f_i \delta_i a_i^\top,\ \sum_i f_i \delta_i\Bigr)_{\text{layers}},

with :math:`f_i` the flat clipping factor of :math:`\|g_i\|`. One forward and one backward of the summed batch
loss give every :math:`a_i` and :math:`\delta_i` (each example's loss reads only its own rows, so the gradient of
the sum w.r.t. row i of a layer's output is :math:`\delta_i`); the clipped sum is then one weighted product per
layer ("book-keeping": no second backward). Cost: O(B (in + out)) extra memory per layer instead of O(B in out).

The value is the same pre-noise query as :func:`graphrelease.dpsgd.engine.clipped_grad_sum` with flat clipping
(``tests/dpsgd/test_ghost.py`` compares the two and probes the add/remove bound), so the ledger entry and the
proof (docs/privacy.md#dp-sgd-engine) are unchanged.

When it applies (:func:`ghost_supported`): every trainable parameter belongs to an ``nn.Linear`` whose parameters
are all trainable, the clipping is :class:`~graphrelease.dpsgd.clipping.FlatClipping`, and the caller supplies a
batched loss ``batch_loss(model, batch) -> (B,)`` whose entry i reads only example i. At run time each linear
layer must be called once per forward on a 2-D ``(B, in)`` input; anything else (weight sharing, sequences) raises
rather than giving a wrong norm.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from graphrelease.dpsgd.clipping import ClippingPolicy, FlatClipping
from graphrelease.dpsgd.per_example import select
from graphrelease.errors import OptionError

BatchLoss = Callable[[nn.Module, Any], torch.Tensor]


def _linear_layers(model: nn.Module) -> dict[str, nn.Linear] | None:
    """Trainable linear layers by module name, or None when some trainable parameter lives elsewhere."""
    layers: dict[str, nn.Linear] = {}
    covered: set[int] = set()
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear):
            own = list(mod.parameters(recurse=False))
            flags = {p.requires_grad for p in own}
            if flags == {True}:
                layers[name] = mod
                covered.update(id(p) for p in own)
            elif True in flags:
                return None  # half-frozen layer: keep the exact path
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    return layers if trainable and trainable == covered else None


def ghost_supported(model: nn.Module, clipping: ClippingPolicy) -> bool:
    """True when :func:`ghost_clipped_sum` computes the engine's clipped sum for this model and policy."""
    return isinstance(clipping, FlatClipping) and _linear_layers(model) is not None


def ghost_clipped_sum(model: nn.Module, batch_loss: BatchLoss, examples: Any, indices: torch.Tensor,
                      clipping: ClippingPolicy) -> dict[str, torch.Tensor]:
    """:math:`\\sum_{i\\in\\text{indices}} \\mathrm{clip}_C(g_i)` in float64, by parameter name (see module doc)."""
    layers = _linear_layers(model)
    if layers is None or not isinstance(clipping, FlatClipping):
        raise OptionError("ghost clipping needs a model whose trainable parameters are all in nn.Linear layers "
                          "and flat clipping")
    names = {name: (f"{name}.weight" if name else "weight", f"{name}.bias" if name else "bias") for name in layers}
    total: dict[str, torch.Tensor] = {}
    for name, mod in layers.items():
        total[names[name][0]] = torch.zeros(mod.weight.shape, dtype=torch.float64)
        if mod.bias is not None:
            total[names[name][1]] = torch.zeros(mod.bias.shape, dtype=torch.float64)
    indices = torch.as_tensor(indices, dtype=torch.long)
    if indices.numel() == 0:
        return total
    clipping.begin_step(indices)
    batch = select(examples, indices)
    b = indices.numel()
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def hook_for(name: str):
        def hook(_mod, inputs, output):
            if name in seen:
                raise OptionError(f"ghost clipping: layer '{name}' is called twice in one forward (shared weights); "
                                  "its per-example gradient norm is not separable: use the exact path")
            a = inputs[0]
            if a.dim() != 2 or a.shape[0] != b:
                raise OptionError(f"ghost clipping: layer '{name}' got input of shape {tuple(a.shape)}, expected "
                                  f"({b}, in): one row per example")
            seen[name] = (a.detach(), output)
        return hook

    handles = [mod.register_forward_hook(hook_for(name)) for name, mod in layers.items()]
    try:
        losses = batch_loss(model, batch)
    finally:
        for h in handles:
            h.remove()
    if losses.shape != (b,):
        raise OptionError(f"ghost clipping: batch_loss must return one loss per example, shape ({b},), got "
                          f"{tuple(losses.shape)}")
    order = [n for n in layers if n in seen]
    deltas = torch.autograd.grad(losses.sum(), [seen[n][1] for n in order], allow_unused=True)
    sq = torch.zeros(b, dtype=torch.float64)
    acts: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for n, d in zip(order, deltas):
        a = seen[n][0]
        if d is None:
            d = torch.zeros(b, layers[n].out_features, dtype=a.dtype)
        # Norms in the tensors' dtype (float32 norms are within ~1e-6 relative, inside the clipping margin, as in
        # clipping._per_example_norms), squared and summed in float64; the weighted sum below is all float64.
        an = torch.linalg.vector_norm(a, dim=1).to(torch.float64).pow(2)
        dn = torch.linalg.vector_norm(d, dim=1).to(torch.float64).pow(2)
        sq += dn * (an + (1.0 if layers[n].bias is not None else 0.0))
        acts[n] = (a.to(torch.float64), d.to(torch.float64))
    norms = sq.sqrt()
    # the flat policy's own factor, fed a norm-equal stand-in for the per-example gradient
    f = clipping.factors({"norm": norms.unsqueeze(1)}, indices=indices, positions=torch.arange(b))["norm"]
    f = f.to(torch.float64)
    for n, (a, d) in acts.items():
        fd = d * f.unsqueeze(1)
        torch.addmm(total[names[n][0]], fd.T, a, out=total[names[n][0]])
        if layers[n].bias is not None:
            total[names[n][1]] += fd.sum(dim=0)
    return total
