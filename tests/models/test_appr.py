"""DP-APPR: ISTA against the closed-form l1-regularised PageRank, sensitivity probes of the clipped APPR matrix
(GM: L2 sqrt(2M) c; EM: per-entry c; EM1 values: L1 K c) under edge and node adjacency, the mechanisms' outputs,
and accounting cross-checks against autodp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.models import appr
from graphrelease.privacy.accountants import compute_epsilon, entry_rdp
from graphrelease.testing.probes import assert_within, edge_neighbours, node_neighbours, probe_sensitivity

CLIP = 0.3
ARGS = dict(alpha=0.25, rho=1e-4, tol=1e-7, max_iter=200, clip=CLIP)


@pytest.fixture(scope="module")
def small(data_dir) -> Graph:
    g = read_graph(data_dir / "single" / "cora_ml.npz").data
    nodes = np.sort(np.argsort(-g.degrees(), kind="stable")[:400])
    return g.induced_subgraph(nodes)


def test_ista_matches_closed_form_when_rho_is_tiny(small):
    """With rho -> 0 the ISTA fixed point is p = alpha D^{1/2} Q^{-1} D^{-1/2} e_s (Fountoulakis et al. 2019)."""
    src = np.array([0, 5, 17])
    p = appr.appr_ista(small, src, alpha=0.3, rho=1e-12, tol=1e-12, max_iter=2000)
    A = small.to_csr().toarray().astype(np.float64)
    d = np.maximum(A.sum(1), 1.0)
    S = A / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    Q = 0.3 * np.eye(len(d)) + 0.35 * (np.eye(len(d)) - S)
    for r, s in enumerate(src):
        e = np.zeros(len(d))
        e[s] = 1.0
        exact = np.sqrt(d) * np.linalg.solve(Q, 0.3 * e / np.sqrt(d))
        np.testing.assert_allclose(p[r], exact, atol=1e-8)
    assert (p >= 0).all()


def test_rho_sparsifies(small):
    dense = appr.appr_ista(small, np.arange(20), alpha=0.25, rho=1e-6)
    sparse = appr.appr_ista(small, np.arange(20), alpha=0.25, rho=1e-2)
    assert (sparse > 0).sum() < (dense > 0).sum()


def _sources(graph: Graph) -> np.ndarray:
    return np.arange(0, graph.num_nodes, 8)  # 50 public sources (chosen without looking at edges)


@pytest.mark.parametrize("neighbours", [edge_neighbours, node_neighbours], ids=["edge", "node"])
def test_gm_probe_l2_sqrt_2m_c(small, neighbours):
    src = _sources(small)
    declared = appr.gm_sensitivity(src.size) * CLIP

    def query(graph, rng):
        return appr.clipped_appr(graph, src, **ARGS)

    r = probe_sensitivity(query, small, neighbours, declared=declared, draws=15, rng=np.random.default_rng(0))
    assert_within(r)
    assert r.max_ratio > 0.005  # the change is real, not a constant query


@pytest.mark.parametrize("neighbours", [edge_neighbours, node_neighbours], ids=["edge", "node"])
def test_em_probes_entry_c_and_values_l1_kc(small, neighbours):
    """Selection utility: every entry moves by at most c (l-infinity per row). EM1 values: for any fixed K columns
    (the selection is coupled), the L1 change of the K values is at most K c."""
    src = _sources(small)
    rng = np.random.default_rng(1)
    k = 16
    worst_inf, worst_l1 = 0.0, 0.0
    for _ in range(12):
        pair = neighbours(small, rng)
        a = appr.clipped_appr(pair.base, src, **ARGS)
        b = appr.clipped_appr(pair.neighbour, src, **ARGS)
        worst_inf = max(worst_inf, float(np.abs(a - b).max()) / CLIP)
        cols = np.argsort(-a, axis=1)[:, :k]  # the selection made on one side, reused on the other
        l1 = np.abs(np.take_along_axis(a, cols, 1) - np.take_along_axis(b, cols, 1)).sum(axis=1)
        worst_l1 = max(worst_l1, float(l1.max()) / (k * CLIP))
    assert worst_inf <= 1 + 1e-9 and worst_l1 <= 1 + 1e-9
    assert worst_inf > 0.01


def test_release_shapes_and_recovery(small):
    src = _sources(small)
    pbar = appr.clipped_appr(small, src, **ARGS)
    exact = np.sort(np.argsort(-pbar, axis=1)[:, :4], axis=1)
    rng = np.random.default_rng(0)
    em0 = appr.release(pbar, appr.DPAPPRParams("EM0", 4, CLIP, src.size, eps_select=1e6), rng)
    assert (np.diff(em0.indptr) == 4).all() and np.allclose(em0.data, 0.25)
    got = np.sort(em0.indices.reshape(-1, 4), axis=1)
    assert (got == exact).mean() > 0.95  # huge epsilon: the exact top-4 (up to ties)
    em1 = appr.release(pbar, appr.DPAPPRParams("EM1", 4, CLIP, src.size, eps_select=1e6, eps_value=1e6), rng)
    np.testing.assert_allclose(np.sort(em1.toarray(), axis=1)[:, -4:], np.sort(pbar, axis=1)[:, -4:], atol=1e-3)
    gm = appr.release(pbar, appr.DPAPPRParams("GM", 4, CLIP, src.size, noise_multiplier=1e-6), rng)
    assert (np.sort(gm.indices.reshape(-1, 4), axis=1) == exact).mean() > 0.95


def test_calibration_meets_target_and_composes():
    for mech in ("EM0", "EM1"):  # GM is calibrated (and its epsilon checked) in the cross-check below
        p = appr.calibrate(mech, k=8, clip=CLIP, num_sources=200, target_epsilon=2.0, delta=1e-5)
        eps = compute_epsilon(appr.ledger_entries(p), 1e-5, accountant="rdp")
        assert 1.9 < eps <= 2.0, (mech, eps)
    em1 = appr.calibrate("EM1", k=8, clip=CLIP, num_sources=200, target_epsilon=2.0, delta=1e-5)
    assert em1.eps_value == pytest.approx(8 * em1.eps_select, rel=1e-9)  # value_fraction 0.5 of the per-row total


def test_accounting_cross_check_autodp():
    """The ledger entries' RDP curves agree with autodp's independent RDP formulas (Gaussian, Laplace), and the
    Gumbel top-K composition is never looser than basic composition of the M K selections."""
    from autodp import rdp_bank

    gm = appr.calibrate("GM", k=8, clip=CLIP, num_sources=200, target_epsilon=4.0, delta=1e-5)
    (entry,) = appr.ledger_entries(gm)
    assert 3.9 < compute_epsilon([entry], 1e-5, accountant="rdp") <= 4.0
    orders = [2.0, 8.0, 32.0]
    sigma_eff = gm.noise_multiplier / appr.gm_sensitivity(200)
    np.testing.assert_allclose(entry_rdp(entry, orders), [rdp_bank.RDP_gaussian({"sigma": sigma_eff}, a)
                                                          for a in orders], rtol=1e-9)
    em1 = appr.calibrate("EM1", k=8, clip=CLIP, num_sources=200, target_epsilon=4.0, delta=1e-5)
    sel, val = appr.ledger_entries(em1)
    np.testing.assert_allclose(entry_rdp(val, orders), [200 * rdp_bank.RDP_laplace({"b": 1.0 / em1.eps_value}, a)
                                                        for a in orders], rtol=1e-6)
    total = compute_epsilon([sel], 1e-5, accountant="rdp")
    assert total <= 200 * 8 * em1.eps_select * (1 + 1e-9)
    pld = compute_epsilon([sel, val], 1e-5, accountant="pld")
    assert pld <= compute_epsilon([sel, val], 1e-5, accountant="rdp") * 1.01
    assert math.isfinite(pld)
