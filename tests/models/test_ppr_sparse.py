"""Sparse PPR kernels of DPAR (issue #17): sparse ISTA reproduces the dense iteration it replaced, forward push stays
within ACL's bound of the exact PPR, and DPAR's push inference agrees with the old power iteration."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.models import appr
from graphrelease.models.dpar import power_iteration_topk
from graphrelease.models.ppr_sparse import appr_ista_sparse, push_ppr_topk


@pytest.fixture(scope="module")
def small(data_dir) -> Graph:
    g = read_graph(data_dir / "single" / "cora_ml.npz").data
    nodes = np.sort(np.argsort(-g.degrees(), kind="stable")[:400])
    return g.induced_subgraph(nodes)


def _dense_ista(graph: Graph, src: np.ndarray, alpha: float, rho: float, tol: float, max_iter: int) -> np.ndarray:
    """The dense ISTA that appr.appr_ista ran before issue #17, kept verbatim as the reference."""
    n = graph.num_nodes
    A = graph.to_csr().astype(np.float64)
    deg = np.maximum(np.asarray(A.sum(axis=1)).ravel(), 1.0)
    dm = 1.0 / np.sqrt(deg)
    S = sp.diags(dm) @ A @ sp.diags(dm)
    sqrt_d = np.sqrt(deg)[:, None]
    b = np.zeros((n, src.size))
    b[src, np.arange(src.size)] = alpha * dm[src]
    q = np.zeros((n, src.size))
    thr = rho * alpha * sqrt_d
    for _ in range(int(max_iter)):
        grad = (alpha + (1 - alpha) / 2) * q - (1 - alpha) / 2 * (S @ q) - b
        new = np.maximum(q - grad - thr, 0.0)
        step = np.abs(new - q).max() if new.size else 0.0
        q = new
        if step <= tol:
            break
    return (sqrt_d * q).T


@pytest.mark.parametrize("rho", [1e-2, 1e-4, 1e-6])
def test_sparse_ista_equals_dense_reference(small, rho):
    src = np.array([0, 3, 50, 199, 399])
    ref = _dense_ista(small, src, 0.25, rho, 1e-7, 200)
    got = appr_ista_sparse(small.to_csr().astype(np.float64), src, alpha=0.25, rho=rho, tol=1e-7, max_iter=200)
    assert np.abs(got.toarray() - ref).max() <= 1e-12
    # and the clipped sparse query equals the dense one the probes in test_appr.py check
    dense = appr.clipped_appr(small, src, alpha=0.25, rho=rho, tol=1e-7, max_iter=200, clip=0.3)
    sparse = appr.clipped_appr_sparse(small, src, alpha=0.25, rho=rho, tol=1e-7, max_iter=200, clip=0.3)
    assert np.abs(sparse.toarray() - dense).max() <= 1e-12
    assert (np.linalg.norm(sparse.toarray(), axis=1) <= 0.3 * (1 + 1e-12)).all()


def test_push_within_acl_bound(small):
    """0 <= pi - p <= r_max * d_u entrywise, against the exact solution of pi^T = a e^T + (1-a) pi^T D^-1 A."""
    alpha, r_max = 0.25, 1e-3
    A = small.to_csr().astype(np.float64)
    n = A.shape[0]
    deg = np.maximum(np.asarray(A.sum(axis=1)).ravel(), 1.0)
    walk = (sp.diags(1.0 / deg) @ A).toarray()
    exact = alpha * np.linalg.inv(np.eye(n) - (1 - alpha) * walk)  # row s = pi_s
    nodes = np.array([0, 7, 100, 333])
    est = push_ppr_topk(A, nodes, alpha=alpha, r_max=r_max, k=n).toarray()
    gap = exact[nodes] - est[nodes]
    assert gap.min() >= -1e-12
    assert (gap <= r_max * deg[None, :] + 1e-12).all()
    assert np.abs(est[np.setdiff1d(np.arange(n), nodes)]).sum() == 0.0  # only queried rows are computed


def test_push_topk_agrees_with_power_iteration(small):
    """The default push tolerance picks (almost) the same top-K as 40 power iterations."""
    A = small.to_csr().astype(np.float64)
    nodes = np.arange(small.num_nodes)
    push = push_ppr_topk(A, nodes, alpha=0.25, r_max=1e-4, k=8)
    power = power_iteration_topk(small, alpha=0.25, iterations=40, k=8)
    overlap = [len(set(push[i].indices) & set(power[i].indices)) / 8 for i in nodes]
    assert np.mean(overlap) >= 0.95
