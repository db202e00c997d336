"""DPDGC: probes of the Z release and of the group-level clipped gradient sum, accounting cross-checks, fits."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.dpsgd.clipping import FlatClipping  # noqa: E402
from graphrelease.dpsgd.engine import clipped_grad_sum  # noqa: E402
from graphrelease.models.common import adjacency_matrix, cap_degree  # noqa: E402
from graphrelease.models.dpdgc import (  # noqa: E402
    DPDGC,
    DPEmb,
    _row_example_loss,
    dp_emb_clipped_sum,
    normalized_rows,
    padded_neighbours,
)
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.privacy.sensitivities import row_group_size, row_release_sensitivity  # noqa: E402
from graphrelease.testing.probes import (  # noqa: E402
    assert_within,
    edge_neighbours,
    k_neighbour_neighbours,
    node_neighbours,
    probe_sensitivity,
)

D = 4


def _w(n: int, rng: np.random.Generator) -> np.ndarray:
    w = torch.as_tensor(rng.standard_normal((n, 6)) * 3.0)  # rows far above norm 1 before normalisation
    return normalized_rows(w).numpy()


def test_normalized_rows_bound():
    w = torch.randn(500, 16, dtype=torch.float64) * 100
    assert normalized_rows(w).norm(dim=1).max() <= 1.0 + 1e-6


@pytest.mark.parametrize("adjacency", ["edge", "k-neighbor:3", "node"])
def test_z_release_probe(data_dir, adjacency):
    g = small_cora(data_dir)
    kind, _, k = adjacency.partition(":")
    k = int(k) if k else None
    if kind == "node":
        g = cap_degree(g, D)
        neighbours = node_neighbours
    elif kind == "edge":
        neighbours = edge_neighbours
    else:
        neighbours = k_neighbour_neighbours(k)

    def query(graph, rng):
        work = cap_degree(graph, D) if kind == "node" else graph
        return adjacency_matrix(work) @ _w(graph.num_nodes, rng)

    r = probe_sensitivity(query, g, neighbours, declared=row_release_sensitivity(kind, k, D), draws=60,
                          rng=np.random.default_rng(4))
    assert_within(r)
    assert r.max_ratio > 0.3


def test_reference_k_neighbor_sensitivity_is_exceeded(data_dir):
    """The reference code charges sqrt(k) for the Z release; the node's own row alone can move by k."""
    g = small_cora(data_dir)
    k = 4
    query = lambda graph, rng: adjacency_matrix(graph) @ np.tile(  # noqa: E731
        np.eye(1, 6), (graph.num_nodes, 1))  # all rows of W equal: the k flips of one row add up
    r = probe_sensitivity(query, g, k_neighbour_neighbours(k), declared=math.sqrt(k), draws=80,
                          rng=np.random.default_rng(5))
    assert r.max_ratio > 1.5


@pytest.mark.parametrize("adjacency", ["edge", "k-neighbor:2", "node"])
def test_group_gradient_probe(data_dir, adjacency):
    """Clipped gradient sum of DP-Emb over all labelled nodes moves by at most 2C * group size (computed by the
    path the model trains with, :func:`dp_emb_clipped_sum`; it equals the generic one, tested below)."""
    g = small_cora(data_dir, n=120)
    kind, _, k = adjacency.partition(":")
    k = int(k) if k else None
    neighbours = {"edge": edge_neighbours, "node": node_neighbours}.get(kind) or k_neighbour_neighbours(k)
    if kind == "node":
        g = cap_degree(g, D)
    C = 0.05
    clip = FlatClipping(max_grad_norm=C)
    classes = int(g.labels.max()) + 1

    def query(graph, rng):
        seed = int(rng.integers(2**31))
        model = DPEmb(graph.num_nodes, 8, classes, torch.Generator().manual_seed(seed))
        work = cap_degree(graph, D) if kind == "node" else graph
        idx, mask = padded_neighbours(adjacency_matrix(work))
        # fixed padding width so both neighbours give examples of the same shape
        width = 200
        idx = torch.nn.functional.pad(idx, (0, width - idx.shape[1]))
        mask = torch.nn.functional.pad(mask, (0, width - mask.shape[1]))
        y = torch.as_tensor(np.asarray(graph.labels))
        present = torch.as_tensor(np.flatnonzero(np.asarray(graph.labels) >= 0))
        y = y.clamp_min(0)
        total = dp_emb_clipped_sum(model)((idx, mask, y), present, clip)
        return {n: t.numpy() for n, t in total.items()}

    declared = 2 * C * row_group_size(kind, k, D)
    r = probe_sensitivity(query, g, neighbours, declared=declared, draws=15, rng=np.random.default_rng(6))
    assert_within(r)
    assert r.max_ratio > 0.05


@pytest.mark.parametrize("adjacency,C", [("edge", 0.05), ("edge", 50.0), ("node", 0.05)])
def test_gathered_row_clipped_sum_equals_generic(data_dir, adjacency, C):
    """DPDGC's hand-written DP-Emb step (gradients w.r.t. the gathered rows of W) returns the engine's generic
    ``vmap(grad)`` clipped sum, for clipped (small C) and unclipped (large C) examples, with padding and repeats."""
    g = small_cora(data_dir, n=150)
    if adjacency == "node":
        g = cap_degree(g, D)
    classes = int(g.labels.max()) + 1
    model = DPEmb(g.num_nodes, 8, classes, torch.Generator().manual_seed(3))
    with torch.no_grad():
        model.bias.normal_(0, 0.3)
    idx, mask = padded_neighbours(adjacency_matrix(g))
    y = torch.as_tensor(np.asarray(g.labels)).clamp_min(0)
    batch = torch.as_tensor(np.random.default_rng(2).choice(g.num_nodes, 90, replace=True))
    clip = FlatClipping(max_grad_norm=C)
    generic = clipped_grad_sum(model, _row_example_loss, (idx, mask, y), batch, clip, chunk_size=32)
    gathered = dp_emb_clipped_sum(model, chunk_size=17)((idx, mask, y), batch, clip)
    assert set(gathered) == set(generic)
    for name in generic:
        assert generic[name].abs().max() > 0
        # The two sum the same float32 terms in another order (chunks of 17 against 32): a few ulps of the largest
        # entry apart. atol=1e-7 failed once in the suite on 1 of 1,200 entries by 1.19e-7 (one ulp at 1).
        ulps = 8 * torch.finfo(torch.float32).eps * float(generic[name].abs().max())
        torch.testing.assert_close(gathered[name], generic[name], rtol=1e-5, atol=ulps)


def test_group_accounting_cross_check():
    """The group step's joint-convexity entry: accountant RDP curve vs the closed form evaluated here, converted
    with opacus' independent RDP-to-DP conversion."""
    from opacus.accountants.analysis.rdp import get_privacy_spent

    from graphrelease.privacy.accountants import compute_epsilon, entry_rdp
    from graphrelease.privacy.analysis.rdp import DEFAULT_ORDERS
    from graphrelease.privacy.ledger import LedgerEntry

    q, g, sigma, steps, delta = 0.05, 3, 9.0, 200, 1e-5
    p = 1 - (1 - q) ** g
    e = LedgerEntry(mechanism="joint_convexity_gaussian", stage="dpdgc", count=steps, sensitivity=g,
                    params={"noise_multiplier": sigma, "pair_rate": p})
    a = np.asarray(DEFAULT_ORDERS)
    dist = 2.0 * g
    x = a * (a - 1) * dist**2 / (2 * sigma**2)
    mixed = np.logaddexp(np.log1p(-p), np.log(p) + x) / (a - 1)  # log(1 + p(e^x - 1)), overflow-free
    closed = np.minimum(mixed, a * dist**2 / (2 * sigma**2)) * steps
    np.testing.assert_allclose(entry_rdp(e), closed, rtol=1e-9)
    eps_opacus, _ = get_privacy_spent(orders=list(a), rdp=closed, delta=delta)
    assert compute_epsilon([e], delta, accountant="rdp") == pytest.approx(eps_opacus, rel=0.01)


def test_fit_edge_and_prediction_uses_released_z(data_dir):
    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = DPDGC(encoder_epochs=2, epochs=10).fit(g, b)
    assert [e.stage for e in b.ledger] == ["dpdgc.dp_emb.dpsgd", "dpdgc.z_release"]
    assert b.spent_epsilon() <= 1.0
    z1, z2 = m.embed(g), m.embed(g)
    assert np.array_equal(z1, z2) and z1.shape == (g.num_nodes, m.emb_dim)
    assert len(b.ledger) == 2  # no charge at inference


def test_fit_k_neighbor_group_size(data_dir):
    g = small_cora(data_dir, n=200)
    b = Budget(epsilon=16.0, delta=1e-5, adjacency="k-neighbor:5", accountant="rdp")
    DPDGC(encoder_epochs=1, epochs=1).fit(g, b)
    enc, z, cls = b.ledger.entries
    assert enc.sensitivity == 6 and enc.mechanism == "joint_convexity_gaussian"
    assert z.sensitivity == pytest.approx(math.sqrt(30))
    assert cls.stage == "dpdgc.classifier.dpsgd"
    assert b.spent_epsilon() <= 16.0


def test_edge_prior_without_dp_emb_training_charges_only_z(data_dir):
    """encoder_epochs=0 with the public prior (edge adjacency): W starts at the prior's unit rows, no DP-SGD step
    runs, so the ledger holds the Z release alone and it spends the whole budget."""
    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = DPDGC(encoder_epochs=0, epochs=5).fit(g, b)
    assert [e.stage for e in b.ledger] == ["dpdgc.z_release"]
    assert 0.9 * 2.0 <= b.spent_epsilon() <= 2.0
    assert m.prior is not None and m.emb.weight.shape[1] == m.num_classes
    assert float(m.emb.weight.detach().norm(dim=1).max()) <= 1.0 + 1e-6


@pytest.mark.parametrize("adjacency, prior, epochs, stages", [
    ("edge", True, 0, ["dpdgc.z_release"]),
    ("edge", False, 30, ["dpdgc.dp_emb.dpsgd", "dpdgc.z_release"]),
    ("node", True, 30, ["dpdgc.dp_emb.dpsgd", "dpdgc.z_release", "dpdgc.classifier.dpsgd"]),
])
def test_encoder_epochs_auto(data_dir, adjacency, prior, epochs, stages):
    """encoder_epochs=None resolves to 0 only where the public prior initialises W (edge adjacency); the resolved
    value is stored and the ledger charges exactly the stages that ran."""
    g = small_cora(data_dir, n=200)
    if adjacency == "node":
        g = cap_degree(g, 10)
    b = Budget(epsilon=8.0, delta=1e-5, adjacency=adjacency, accountant="rdp")
    m = DPDGC(public_prior=prior, epochs=1).fit(g, b)
    assert m.config.encoder_epochs == epochs
    assert [e.stage for e in b.ledger] == stages
    assert b.spent_epsilon() <= 8.0


@pytest.mark.parametrize("adjacency", ["edge", "k-neighbor:3", "node"])
def test_z_release_probe_l1(data_dir, adjacency):
    """z_noise='laplace': rows of W normalised in L1, Z = A W moves by <= 2 / 2k / 2D in L1."""
    from graphrelease.models.dpdgc import normalized_rows_l1

    g = small_cora(data_dir)
    kind, _, k = adjacency.partition(":")
    k = int(k) if k else None
    if kind == "node":
        g = cap_degree(g, D)
        neighbours = node_neighbours
    elif kind == "edge":
        neighbours = edge_neighbours
    else:
        neighbours = k_neighbour_neighbours(k)

    def query(graph, rng):
        work = cap_degree(graph, D) if kind == "node" else graph
        w = normalized_rows_l1(torch.as_tensor(rng.standard_normal((graph.num_nodes, 6)) * 3.0)).numpy()
        return adjacency_matrix(work) @ w

    r = probe_sensitivity(query, g, neighbours, declared=row_release_sensitivity(kind, k, D, "laplace"), draws=60,
                          rng=np.random.default_rng(9), norm="l1")
    assert_within(r)
    assert r.max_ratio > 0.3


def test_laplace_z_release_fit(data_dir):
    """A Laplace Z release records one `laplace` entry (L1 sensitivity 2 under edge adjacency) spending the budget,
    the forward pass keeps every row of W within L1 norm 1, and the noise scale is 2 / epsilon."""
    g = small_cora(data_dir, n=300)
    b = Budget(epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = DPDGC(encoder_epochs=0, epochs=3, z_noise="laplace").fit(g, b)
    (entry,) = list(b.ledger.entries)
    assert entry.mechanism == "laplace" and entry.sensitivity == 2.0
    assert 0.9 * 2.0 <= b.spent_epsilon() <= 2.0
    assert float(m.emb.bar(m.emb.weight.detach()).abs().sum(dim=1).max()) <= 1.0 + 1e-6  # float32 row sums
    assert m.z_noise_std == pytest.approx(2.0 / entry.params["epsilon"])


def test_prior_rows_labels_start_from_training_labels(data_dir):
    """prior_rows='labels' (edge adjacency): W's rows are the one-hot public training labels, zero elsewhere; with
    encoder_epochs=0 they are exactly what Z aggregates, and only the Z release is charged."""
    g = small_cora(data_dir, n=200)
    b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge", accountant="rdp")
    m = DPDGC(encoder_epochs=0, epochs=2, prior_rows="labels").fit(g, b)
    w = m.emb.weight.detach()
    tr = torch.as_tensor(m.split.train)
    y = torch.as_tensor(np.asarray(g.labels))
    assert torch.equal(w[tr].argmax(dim=1), y[tr]) and torch.equal(w[tr].sum(dim=1), torch.ones(tr.numel()))
    others = torch.ones(g.num_nodes, dtype=torch.bool)
    others[tr] = False
    assert float(w[others].abs().sum()) == 0.0
    assert [e.stage for e in b.ledger] == ["dpdgc.z_release"]
