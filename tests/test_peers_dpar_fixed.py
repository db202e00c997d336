"""The bug-fixed DPAR peer's schedule (benchmarks/peers/dpar_fixed.py): its knobs come from our accountant and the
column cap bounds the group its DP-SGD noise is calibrated for. The peer itself (TensorFlow, fetched copy) is not
run here; these are the two pieces its soundness rests on."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "peers"))

import dpar_fixed  # noqa: E402


def test_fixed_schedule_composes_to_the_target_under_our_accountant():
    from graphrelease.models import appr
    from graphrelease.models.dpar import stage2_entry
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.ledger import LedgerEntry

    n_ex = 135  # the peer's 9% sample of Cora-ML's 1,498 training nodes
    s8, s16 = dpar_fixed.fixed_schedule(8.0, n_ex), dpar_fixed.fixed_schedule(16.0, n_ex)
    for eps, s in ((8.0, s8), (16.0, s16)):
        assert 0.98 * eps <= s["our_epsilon"] <= eps
        # Recompose from the knobs the peer is given (its flags), independently of fixed_schedule's entries.
        k, m = dpar_fixed.PEER_FLAGS["topk"], dpar_fixed.PEER_FLAGS["ppr_num"]
        stage1 = [LedgerEntry("gumbel_topk", "t.sel", params={"epsilon": s["em_eps"], "k": k}, count=m),
                  LedgerEntry("laplace", "t.val", params={"epsilon": s["report_val_eps"]}, count=m)]
        e1 = compute_epsilon(stage1, dpar_fixed.DELTA, "rdp")
        assert 0.49 * eps <= e1 <= 0.5 * eps  # the DP-APPR stage gets appr_fraction of the target
        # The peer's default value budget: report_val_eps = k * EM_eps (value share 0.5).
        assert np.isclose(s["report_val_eps"], k * s["em_eps"])
        stage2 = stage2_entry(noise_multiplier=s["sigma_sgd"], sample_rate=s["q"], col_cap=dpar_fixed.COL_CAP,
                              count=s["steps"])
        assert stage2.sensitivity == dpar_fixed.COL_CAP + 0.5
        assert s["steps"] == 200 * int(np.ceil(n_ex / 60)) and np.isclose(s["q"], 60 / n_ex)
        assert compute_epsilon(stage1 + [stage2], dpar_fixed.DELTA, "rdp") <= eps
        # A slightly smaller noise multiplier would overspend: the calibration is tight, not arbitrary.
        lower = stage2_entry(noise_multiplier=0.97 * s["sigma_sgd"], sample_rate=s["q"], col_cap=dpar_fixed.COL_CAP,
                             count=s["steps"])
        assert compute_epsilon(stage1 + [lower], dpar_fixed.DELTA, "rdp") > 0.995 * eps
    assert s16["sigma_sgd"] < s8["sigma_sgd"] and s16["em_eps"] > s8["em_eps"]
    # Same per-selection epsilon as our EM1 calibration of 70 rows at half the target.
    ours = appr.calibrate("EM1", k=4, clip=0.001, num_sources=70, target_epsilon=4.0, delta=1e-5, accountant="rdp")
    assert np.isclose(ours.eps_select, s8["em_eps"])


def test_cap_columns_keeps_the_largest_entries_of_each_column(data_dir):
    from graphrelease.io import read_graph

    g = read_graph(data_dir / "single" / "cora.npz").data
    a = g.to_csr().astype(np.float64)
    # A released-like matrix: 300 source rows of the (row-normalised) adjacency plus signed noise on the entries.
    rng = np.random.default_rng(0)
    m = sp.csr_matrix(a[:300])
    m.data = m.data / np.repeat(np.diff(m.indptr), np.diff(m.indptr)) + rng.normal(0, 0.1, m.data.size)
    m = m + sp.csr_matrix(a[300:600])  # columns with many entries, so the cap binds
    for cap in (1, 3, 8):
        capped, dropped = dpar_fixed.cap_columns(m, cap)
        before, after = sp.csc_matrix(m), sp.csc_matrix(capped)
        counts = np.diff(after.indptr)
        assert counts.max() <= cap
        assert np.all(counts == np.minimum(np.diff(before.indptr), cap))
        assert np.isclose(dropped, 1 - after.nnz / before.nnz) and (dropped > 0)
        for j in np.flatnonzero(np.diff(before.indptr) > cap)[:50]:
            col = before.data[before.indptr[j]:before.indptr[j + 1]]
            kept = after.data[after.indptr[j]:after.indptr[j + 1]]
            assert np.abs(kept).min() >= np.sort(np.abs(col))[-cap]  # the cap's largest |values|
        # Kept entries are unchanged entries of the original.
        diff = (capped - m).tocsr().multiply(capped != 0)
        assert abs(diff).sum() == 0
