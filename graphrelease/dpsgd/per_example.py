"""Per-example gradients with ``torch.func``, chunked to bound memory, then clipped and summed.

An *example* is whatever one privacy unit contributes to one step: one node (an MLP on node features), one edge
tuple, one whole graph, one bucket subgraph. The user supplies ``loss_fn(model_fn, example) -> scalar tensor``
where ``model_fn(*args, **kwargs)`` calls the module with the parameters being differentiated, and ``example`` is
one example as a pytree of tensors **without** the leading example dimension.

Two layouts of a set of examples:

* **batched** (:func:`is_batched`): a pytree (tensor, tuple, dict) of tensors that share a leading example dimension.
  Gradients come from ``vmap(grad(loss))`` over that dimension, ``chunk_size`` examples at a time. Variable-size
  examples can be brought into this layout by padding + masks (:func:`graphrelease.dpsgd.examples.pad_graphs`);
  the model must then ignore padded entries (masked rows, zero adjacency), which the tests check by comparing
  with the loop layout.
* **list** : a Python ``list`` of single-example pytrees of arbitrary shapes (whole graphs of different
  sizes, induced subgraphs of buckets). Gradients come from ``grad(loss)`` one example at a time. Exact and
  general; slower than padding when examples are many and small, but padding to the largest example wastes memory
  when sizes are skewed (one 10k-node bucket next to 20-node buckets), so the loop is the safe default.

Opacus's per-sample hooks are never used on message-passing layers (see PRIVACY.md section 3): ``torch.func``
differentiates the *whole* per-example loss, however many layers and nodes it reads.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils._pytree import tree_flatten, tree_map

from graphrelease.errors import OptionError

LossFn = Callable[[Callable[..., Any], Any], torch.Tensor]
Grads = dict[str, torch.Tensor]


def trainable_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies (views) of the parameters that require grad, by name: what DP-SGD differentiates."""
    return {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}


def _frozen_state(model: nn.Module) -> dict[str, torch.Tensor]:
    state = {name: p.detach() for name, p in model.named_parameters() if not p.requires_grad}
    state.update(dict(model.named_buffers()))
    return state


def is_batched(examples: Any) -> bool:
    """True for a batched pytree (tensor, tuple, dict of tensors sharing a leading dimension); False for a ``list``.

    The rule is structural and simple on purpose: a Python ``list`` is always a list of single examples, anything
    else is a batched pytree.
    """
    return not isinstance(examples, list)


def num_examples(examples: Any) -> int:
    """Number of examples in either layout."""
    if not is_batched(examples):
        return len(examples)
    leaves, _ = tree_flatten(examples)
    tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
    if not tensors:
        raise OptionError("examples contain no tensors: give a pytree of tensors with a leading example dimension")
    sizes = {t.shape[0] for t in tensors}
    if len(sizes) != 1:
        raise OptionError(f"batched examples must share one leading dimension, got sizes {sorted(sizes)}")
    return sizes.pop()


def select(examples: Any, indices: torch.Tensor | Sequence[int]) -> Any:
    """The examples at ``indices`` in the same layout (index a batched pytree, or pick list items)."""
    if is_batched(examples):
        idx = torch.as_tensor(indices, dtype=torch.long)
        return tree_map(lambda t: t[idx] if isinstance(t, torch.Tensor) else t, examples)
    return [examples[int(i)] for i in indices]


def _chunks(examples: Any, chunk_size: int) -> Iterator[Any]:
    n = num_examples(examples)
    for start in range(0, n, chunk_size):
        stop = min(n, start + chunk_size)
        if is_batched(examples):
            yield tree_map(lambda t: t[start:stop] if isinstance(t, torch.Tensor) else t, examples)
        else:
            yield examples[start:stop]


def _single_loss(model: nn.Module, loss_fn: LossFn, frozen: Mapping[str, torch.Tensor]):
    def loss(params: Mapping[str, torch.Tensor], example: Any) -> torch.Tensor:
        state = {**frozen, **params}

        def model_fn(*args: Any, **kwargs: Any) -> Any:
            return functional_call(model, state, args, kwargs)

        value = loss_fn(model_fn, example)
        if value.dim() != 0:
            raise OptionError(f"loss_fn must return a scalar for one example, got shape {tuple(value.shape)}")
        return value

    return loss


def iter_per_example_grads(
    model: nn.Module, loss_fn: LossFn, examples: Any, *, chunk_size: int = 256
) -> Iterator[Grads]:
    """Yield per-example gradients chunk by chunk: ``{name: (b, *param.shape)}`` for ``b <= chunk_size``."""
    if chunk_size < 1:
        raise OptionError(f"chunk_size must be >= 1, got {chunk_size}")
    params = trainable_parameters(model)
    if not params:
        raise OptionError("the model has no trainable parameters (requires_grad=True)")
    loss = _single_loss(model, loss_fn, _frozen_state(model))
    if is_batched(examples):
        # randomness="different": dropout masks differ per example, as in an ordinary minibatch.
        batched_grad = vmap(grad(loss), in_dims=(None, 0), randomness="different")
        for chunk in _chunks(examples, chunk_size):
            yield batched_grad(params, chunk)
    else:
        single_grad = grad(loss)
        for chunk in _chunks(examples, chunk_size):
            per = [single_grad(params, ex) for ex in chunk]
            yield {name: torch.stack([g[name] for g in per]) for name in params}


def per_example_grads(model: nn.Module, loss_fn: LossFn, examples: Any, *, chunk_size: int = 256) -> Grads:
    """All per-example gradients ``{name: (n, *param.shape)}`` (memory ``n`` times the model; tests, audits).

    Example
    -------
    >>> import torch
    >>> model = torch.nn.Linear(3, 2)
    >>> x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    >>> loss = lambda f, ex: torch.nn.functional.cross_entropy(f(ex[0]), ex[1])
    >>> g = per_example_grads(model, loss, (x, y))
    >>> tuple(g["weight"].shape)
    (5, 2, 3)
    """
    params = trainable_parameters(model)
    n = num_examples(examples)
    if n == 0:
        return {name: p.new_zeros((0, *p.shape)) for name, p in params.items()}
    parts = list(iter_per_example_grads(model, loss_fn, examples, chunk_size=chunk_size))
    return {name: torch.cat([c[name] for c in parts]) for name in params}
