"""Per-example gradients from vmap(grad) equal gradients computed one example at a time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphrelease.dpsgd import is_batched, num_examples, per_example_grads, select
from graphrelease.dpsgd.examples import DenseGCN, graph_examples, pad_graphs
from graphrelease.errors import OptionError


def _ce(f, ex):
    x, y = ex
    return torch.nn.functional.cross_entropy(f(x.unsqueeze(0)), y.unsqueeze(0))


def _cora_tensors(cora, n=64):
    x = torch.from_numpy(np.asarray(cora.features[:n].toarray(), dtype=np.float64))
    y = torch.from_numpy(cora.labels[:n].copy())
    return x, y


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 500])
def test_vmap_matches_loop_on_cora_mlp(cora, chunk_size):
    torch.manual_seed(0)
    x, y = _cora_tensors(cora)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 16), torch.nn.ReLU(), torch.nn.Linear(16, 7)).double()
    grads = per_example_grads(model, _ce, (x, y), chunk_size=chunk_size)
    for i in range(x.shape[0]):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for name, p in model.named_parameters():
            torch.testing.assert_close(grads[name][i], p.grad, rtol=0, atol=1e-12)


def test_frozen_parameters_are_not_differentiated(cora):
    x, y = _cora_tensors(cora, 8)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 4), torch.nn.Linear(4, 7)).double()
    model[0].weight.requires_grad_(False)
    grads = per_example_grads(model, _ce, (x, y))
    assert set(grads) == {"0.bias", "1.weight", "1.bias"}
    assert grads["1.weight"].shape == (8, 7, 4)


def test_padded_graph_examples_match_list_layout(imdb_small):
    graphs = list(imdb_small)[:12]
    labels = imdb_small.graph_labels[:12]
    torch.manual_seed(1)
    model = DenseGCN(21, 8, 3).double()

    def loss(f, ex):
        out = f(ex["adj"].double(), ex["x"].double(), ex["mask"].double())
        return torch.nn.functional.cross_entropy(out.unsqueeze(0), ex["y"].unsqueeze(0))

    padded = pad_graphs(graphs, labels, features="degree", max_degree=20)
    listed = graph_examples(graphs, labels, features="degree", max_degree=20)
    assert is_batched(padded) and not is_batched(listed)
    assert num_examples(padded) == num_examples(listed) == 12
    a = per_example_grads(model, loss, padded, chunk_size=5)
    b = per_example_grads(model, loss, listed, chunk_size=5)
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-12)
    # and the list layout equals plain autograd on each graph
    for i, ex in enumerate(listed):
        model.zero_grad()
        loss(model, ex).backward()
        for name, p in model.named_parameters():
            torch.testing.assert_close(b[name][i], p.grad, rtol=0, atol=1e-12)


def test_select_both_layouts():
    batched = {"x": torch.arange(10.0), "y": torch.arange(10)}
    sub = select(batched, torch.tensor([2, 5]))
    assert sub["x"].tolist() == [2.0, 5.0]
    listed = [{"x": torch.tensor(float(i))} for i in range(4)]
    assert [e["x"].item() for e in select(listed, [3, 0])] == [3.0, 0.0]


def test_non_scalar_loss_is_rejected():
    model = torch.nn.Linear(3, 2)
    with pytest.raises(OptionError, match="scalar"):
        per_example_grads(model, lambda f, x: f(x), torch.randn(4, 3))


def test_empty_examples_give_empty_gradients():
    model = torch.nn.Linear(3, 2)
    g = per_example_grads(model, lambda f, x: f(x).sum(), torch.zeros(0, 3))
    assert g["weight"].shape == (0, 2, 3)


def test_mismatched_leading_dimensions_are_rejected():
    with pytest.raises(OptionError, match="leading dimension"):
        num_examples((torch.zeros(3, 2), torch.zeros(4)))
