r"""DP-APPR: approximate personalized PageRank by ISTA, row clipping, and a private top-K release (the first stage
of DPAR, "Decoupled GNN with Differentially Private Approximate Personalized PageRank", Zhang et al. 2024;
reference code Emory-AIMS/DPAR, read, not copied).

Pre-noise query
---------------
For the ``M`` source nodes :math:`s_1..s_M` (chosen by the analyst without looking at edges, e.g. the training
nodes), the APPR vector :math:`p_s\in\mathbb R^n_{\ge0}` solves the :math:`\ell_1`-regularised PageRank problem
(Fountoulakis, Roosta-Khorasani, Shun, Cheng, Mahoney 2019) by ISTA:

.. math::

    \min_{q\ge0}\ \tfrac12 q^\top Q q - \alpha\, q^\top D^{-1/2} e_s + \rho\alpha\,\|D^{1/2}q\|_1,\qquad
    Q = \alpha I + \tfrac{1-\alpha}{2}\bigl(I - D^{-1/2} A D^{-1/2}\bigr),\qquad p_s = D^{1/2} q,

iterating :math:`q \leftarrow \max(0,\ q - \nabla f(q) - \rho\alpha D^{1/2}\mathbf 1)` (step 1, valid as
:math:`\lambda_{\max}(Q)\le 1`) until the largest update is below ``tol`` (or ``max_iter``). Each row is then
clipped to L2 norm ``c``: :math:`\bar p_s = p_s\min(1, c/\|p_s\|_2)`.

Sensitivity (any adjacency: edge, node, k-neighbour)
----------------------------------------------------
One changed edge (or node) can change EVERY row — PageRank propagates — so nothing is gained from the structure of
ISTA; the bounds come from clipping alone, and they are what the probes in ``tests/models/test_appr.py`` check:

* rows are non-negative with :math:`\|\bar p\|_2\le c`, so :math:`\|\bar p - \bar p'\|_2^2 = \|\bar p\|^2 +
  \|\bar p'\|^2 - 2\bar p\cdot\bar p' \le 2c^2`: L2 sensitivity of the whole :math:`M\times n` matrix
  :math:`\sqrt{2M}\,c` (``GM``);
* every entry lies in :math:`[0, c]`: the utility of each candidate column moves by at most :math:`\Delta_u = c`
  (``EM0``/``EM1`` selection); the K selected values move by at most :math:`Kc` in L1 (``EM1`` values).

Mechanisms (each records ledger entries; epsilons are composed by the accountant)
----------------------------------------------------------------------------------
``GM``   :math:`\tilde p_s = \bar p_s + \mathcal N(0, \sigma^2 c^2 I)`, then top-K of the noisy row with its noisy
         values (post-processing). Ledger: ``gaussian``, noise multiplier :math:`\sigma`, sensitivity
         :math:`\sqrt{2M}` (units of ``c``), count 1.
``EM0``  one-shot Gumbel top-K per row: :math:`\mathrm{topK}(\bar p_s + \mathrm{Gumbel}(2c/\varepsilon_{sel}))`,
         equivalent to K peeling exponential mechanisms (Durfee & Rogers 2019), each
         :math:`\varepsilon_{sel}`-bounded-range (Cesar & Rogers 2021); values set to ``1/K``. Ledger:
         ``gumbel_topk`` (epsilon :math:`\varepsilon_{sel}`, k=K), count M (every row may change).
``EM1``  as EM0, then the K selected values released with Laplace noise of scale :math:`Kc/\varepsilon_{val}`
         (clamped at 0, post-processing). Ledger: ``gumbel_topk`` count M and ``laplace`` (epsilon
         :math:`\varepsilon_{val}`) count M.

Not carried over from the reference code (PRIVACY.md section 4): multiplying epsilon by the sampling rate
("amplification" without a theorem), the classic Gaussian formula outside :math:`\varepsilon<1`, sensitivity ``C``
where a clipped vector is replaced, and never composing the two stages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import OptionError
from graphrelease.graph import Graph
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.privacy.noise import exponential_mechanism_scale

MECHANISMS = ("GM", "EM0", "EM1")


def appr_ista(graph: Graph, sources: np.ndarray, *, alpha: float = 0.25, rho: float = 1e-4, tol: float = 1e-6,
              max_iter: int = 100) -> np.ndarray:
    """APPR vectors of ``sources`` by ISTA: dense ``(len(sources), n)`` float64, entries >= 0.

    Degree-0 nodes are treated as degree 1 (their row of A is empty), which keeps every step finite.
    """
    if not (0 < alpha < 1):
        raise OptionError(f"alpha must be in (0, 1), got {alpha}")
    if rho <= 0 or tol <= 0:
        raise OptionError(f"rho and tol must be > 0, got rho={rho}, tol={tol}")
    from graphrelease.models.ppr_sparse import appr_ista_sparse

    # The sparse kernel runs the same iteration (its docstring says why nothing is approximated); dense output kept
    # for small-graph callers and tests.
    return appr_ista_sparse(graph.to_csr().astype(np.float64), sources, alpha=alpha, rho=rho, tol=tol,
                            max_iter=max_iter).toarray()


def clip_rows(p: np.ndarray, c: float) -> np.ndarray:
    """Rows scaled to L2 norm at most ``c`` (float64), with a floating-point guard so the bound holds exactly."""
    norms = np.linalg.norm(p, axis=1, keepdims=True)
    out = p * np.minimum(1.0, c / np.maximum(norms, 1e-300))
    over = np.linalg.norm(out, axis=1, keepdims=True)
    return np.where(over > c, out * (c / np.maximum(over, 1e-300)), out)


def clip_rows_sparse(p: sp.csr_matrix, c: float) -> sp.csr_matrix:
    """:func:`clip_rows` for a CSR matrix (same arithmetic on the stored entries; zeros stay zero)."""
    p = p.tocsr(copy=True)
    norms = np.sqrt(np.asarray(p.multiply(p).sum(axis=1)).ravel())
    p = (sp.diags(np.minimum(1.0, c / np.maximum(norms, 1e-300))) @ p).tocsr()
    over = np.sqrt(np.asarray(p.multiply(p).sum(axis=1)).ravel())
    return (sp.diags(np.where(over > c, c / np.maximum(over, 1e-300), 1.0)) @ p).tocsr()


def clipped_appr_sparse(graph: Graph, sources: np.ndarray, *, alpha: float, rho: float, tol: float, max_iter: int,
                        clip: float) -> sp.csr_matrix:
    """:func:`clipped_appr` as a CSR matrix: the same pre-noise query without an (M, n) dense block."""
    from graphrelease.models.ppr_sparse import appr_ista_sparse

    if not (0 < alpha < 1):
        raise OptionError(f"alpha must be in (0, 1), got {alpha}")
    if rho <= 0 or tol <= 0:
        raise OptionError(f"rho and tol must be > 0, got rho={rho}, tol={tol}")
    p = appr_ista_sparse(graph.to_csr().astype(np.float64), sources, alpha=alpha, rho=rho, tol=tol, max_iter=max_iter)
    return clip_rows_sparse(p, clip)


def clipped_appr(graph: Graph, sources: np.ndarray, *, alpha: float, rho: float, tol: float, max_iter: int,
                 clip: float) -> np.ndarray:
    """The pre-noise query of every DP-APPR mechanism: clipped APPR rows of ``sources``."""
    return clip_rows(appr_ista(graph, sources, alpha=alpha, rho=rho, tol=tol, max_iter=max_iter), clip)


@dataclass(frozen=True)
class DPAPPRParams:
    """Calibrated parameters of one DP-APPR release."""

    mechanism: str
    k: int
    clip: float
    num_sources: int
    noise_multiplier: float = 0.0  # GM
    eps_select: float = 0.0  # EM0 / EM1, per selection
    eps_value: float = 0.0  # EM1, per row


def gm_sensitivity(num_sources: int) -> float:
    """L2 sensitivity of the clipped APPR matrix in units of the clip bound: sqrt(2 M)."""
    return math.sqrt(2.0 * num_sources)


def ledger_entries(params: DPAPPRParams, *, stage: str = "dpar.appr") -> list[LedgerEntry]:
    """The entries a release with ``params`` records (one per mechanism; see the module docstring)."""
    m, p = params.num_sources, params
    if p.mechanism == "GM":
        return [LedgerEntry(mechanism="gaussian", stage=f"{stage}.gm", params={"noise_multiplier": p.noise_multiplier},
                            sensitivity=gm_sensitivity(m), proof="dpar-appr",
                            note=f"clipped APPR matrix of {m} sources, every row may change: L2 sensitivity sqrt(2M) c")]
    # scale in units of the clip bound c, like the sensitivity (release() draws Gumbel(2 c / eps_select))
    select_scale = exponential_mechanism_scale(p.eps_select, 1.0)
    out = [LedgerEntry(mechanism="gumbel_topk", stage=f"{stage}.select",
                       params={"epsilon": p.eps_select, "k": p.k, "scale": select_scale},
                       count=m, sensitivity=1.0, proof="dpar-appr",
                       note="one-shot Gumbel top-K per source row, utility sensitivity c (entries in [0, c])")]
    if p.mechanism == "EM1":
        out.append(LedgerEntry(mechanism="laplace", stage=f"{stage}.values",
                               params={"epsilon": p.eps_value, "scale": float(p.k) / float(p.eps_value)}, count=m,
                               sensitivity=float(p.k), proof="dpar-appr",
                               note="Laplace on the K selected clipped values, L1 sensitivity K c"))
    return out


def release(pbar: np.ndarray | sp.spmatrix, params: DPAPPRParams, rng: np.random.Generator,
            chunk: int = 256) -> sp.csr_matrix:
    """Apply the mechanism to the clipped rows ``pbar`` (M, n): sparse (M, n) matrix with K entries per row.

    A sparse ``pbar`` is densified ``chunk`` rows at a time: the mechanisms add noise to every one of the n
    entries of a row (that is what their analysis covers), so each row is dense while it is released, but
    never all M at once. Rows are independent, so chunking does not change the output law.
    """
    if sp.issparse(pbar):
        pbar = pbar.tocsr()
        parts = [_release_dense(pbar[a : a + chunk].toarray(), params, rng) for a in range(0, pbar.shape[0], chunk)]
        return sp.vstack(parts).tocsr() if parts else sp.csr_matrix(pbar.shape)
    return _release_dense(np.asarray(pbar), params, rng)


def _release_dense(pbar: np.ndarray, params: DPAPPRParams, rng: np.random.Generator) -> sp.csr_matrix:
    from graphrelease.privacy.noise import gaussian_noise, gumbel_noise, laplace_noise

    m, n = pbar.shape
    k = min(params.k, n)
    c = params.clip
    if params.mechanism == "GM":
        noisy = pbar + gaussian_noise((m, n), params.noise_multiplier * c, rng)
        idx = np.argpartition(-noisy, k - 1, axis=1)[:, :k]
        vals = np.maximum(np.take_along_axis(noisy, idx, axis=1), 0.0)
    elif params.mechanism in ("EM0", "EM1"):
        scores = pbar + gumbel_noise((m, n), c * exponential_mechanism_scale(params.eps_select, 1.0), rng)
        idx = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        if params.mechanism == "EM0":
            vals = np.full((m, k), 1.0 / k)
        else:
            true = np.take_along_axis(pbar, idx, axis=1)
            vals = np.maximum(true + laplace_noise((m, k), k * c / params.eps_value, rng), 0.0)
    else:
        raise OptionError(f"DP-APPR mechanism must be one of {MECHANISMS}, got {params.mechanism!r}")
    rows = np.repeat(np.arange(m), k)
    return sp.csr_matrix((vals.ravel(), (rows, idx.ravel())), shape=(m, n))


def calibrate(mechanism: str, *, k: int, clip: float, num_sources: int, target_epsilon: float, delta: float,
              accountant: str = "rdp", base_entries=(), value_fraction: float = 0.5) -> DPAPPRParams:
    """Parameters such that ``base_entries`` + this release compose to at most ``target_epsilon`` at ``delta``.

    GM: the smallest noise multiplier; EM0: the largest per-selection epsilon; EM1: the budget left by
    ``base_entries`` is split ``1 - value_fraction`` / ``value_fraction`` between selections and values (by
    bisection on a common scale).
    """
    from graphrelease.errors import BudgetError

    if mechanism not in MECHANISMS:
        raise OptionError(f"DP-APPR mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if k < 1 or clip <= 0 or num_sources < 1:
        raise OptionError(f"DP-APPR needs k >= 1, clip > 0 and at least one source (got {k}, {clip}, {num_sources})")
    base = list(base_entries)

    def make(t: float) -> DPAPPRParams:
        if mechanism == "GM":
            return DPAPPRParams("GM", k, clip, num_sources, noise_multiplier=1.0 / t)
        if mechanism == "EM0":
            return DPAPPRParams("EM0", k, clip, num_sources, eps_select=t)
        # t = per-row total: K selections share 1 - value_fraction of it, the values get value_fraction
        return DPAPPRParams("EM1", k, clip, num_sources, eps_select=t * (1 - value_fraction) / k,
                            eps_value=t * value_fraction)

    from graphrelease.privacy.calibration import calibrate

    # t is a "privacy level" (larger = less private): its inverse s = 1/t behaves like a noise multiplier (epsilon
    # falls as s grows), so the project's one calibration routine finds the smallest s, i.e. the largest t, in
    # [1e-4, 1e8] (t in [1e-8, 1e4]).
    try:
        s = calibrate(lambda s_: ledger_entries(make(1.0 / s_)), target_epsilon=target_epsilon * 0.999, delta=delta,
                      accountant=accountant, prior=base, lo=1e-4, hi=1e8, rtol=1e-6,
                      what="the DP-APPR release")
    except BudgetError as err:
        raise BudgetError(f"DP-APPR: epsilon={target_epsilon} leaves no room for the APPR release; raise --epsilon "
                          f"({err})") from None
    return make(1.0 / s)
