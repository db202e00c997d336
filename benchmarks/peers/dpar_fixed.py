"""DPAR side by side at EQUAL node-level epsilon: the authors' algorithm with its accounting bugs fixed
(``public_fixed``) against our ``dpar`` (``ours``), both in the same invocation, on the same graph and split seed.

    python benchmarks/peers/dpar_fixed.py --peer /path/to/DPAR --peer-path /path/to/site_tf \
        --graphs cora_ml,citeseer --epsilons 8,16 --runs 3

``public_fixed`` runs the peer's ``main.main()`` from the fetched copy (adapter of ``dpar.py``: TF2 ``compat.v1``,
our graph and split through its ``utils.get_data``, the peer's 9% training-node sample, 70 APPR sources, top-k 4,
200 epochs, batch 60, its model and its DP-Adam optimiser) with only these changes, each the fix of a known
accounting bug (PRIVACY.md section 4); nothing else of its algorithm is changed:

1. *DP-APPR parameters from our accountant.* The peer's EM DP-APPR is our ``EM1`` mechanism (one-shot Gumbel top-k
   at ``EM_eps`` per selection with utility sensitivity c = ``em_sensitivity``; Laplace on the k clipped values at
   ``report_val_eps`` per row, its default ``report_val_eps = k * EM_eps`` being value share 0.5). Its flags
   ``EM_eps`` / ``report_val_eps`` are set by ``graphrelease.models.appr.calibrate('EM1', ...)`` so that our ledger
   entries for its 70 rows (every row may change under node adjacency; no amplification claimed) compose to
   ``APPR_FRACTION`` (0.5, our ``dpar``'s ``appr_fraction``) of the target epsilon.
2. *Node-level DP-SGD.* A node enters the example of every row whose released top-k holds it. After the release the
   peer's row-of-examples matrix is post-processing; the adapter keeps at most ``COL_CAP`` (8, our ``dpar``'s
   ``col_cap``) entries per column of the released matrix (the largest in absolute value; the rest dropped, as our
   ``column_clip``) before the peer's own column normalisation. A node then touches its own example and at most
   ``COL_CAP`` others, exactly the group our ``dpar`` calibrates to, so the peer's DP-SGD noise multiplier is
   calibrated with ``graphrelease.models.dpar.stage2_entry`` (joint convexity, sensitivity ``col_cap + 1/2``) so that
   stage 1 + stage 2 compose to the target epsilon (our accountant, RDP, delta 1e-5).
3. *Poisson batches.* The peer trains on shuffled sequential batches (and caches each batch position's feed after
   epoch 0, so later epochs reuse epoch 0's batches) but accounts them as Poisson sampling. The adapter's ``train``
   draws each of the peer's ``epochs * ceil(N / 60)`` steps as a Poisson batch at rate 60 / N. The peer's optimiser
   clips each microbatch (= example) and divides the noisy sum by the microbatch count; to keep the count fixed (a
   data-dependent divisor is not covered by the analysis), every step feeds all N examples with the unsampled ones'
   top-k weights zeroed (their loss does not depend on the weights: zero gradient), so it divides by N instead of
   60, a constant that Adam's normalisation absorbs.

Not claimed for the peer: amplification by its 9% node sample (our accountant has no entry for subsampling a whole
composed pipeline), so its rows are at least as private as the epsilon column says. The sources and the training
sample are drawn from our public split slots by the run's seed (as ours draws its sources), so their number is
public. The peer's own RNGs are seeded with the run (benchmark reproducibility; ours draws from the secure
generator).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402
import dpar  # noqa: E402

KEYS = ["test_acc", "our_epsilon", "em_eps", "report_val_eps", "sigma_sgd", "dropped_frac", "max_col_count"]
TOOLS = ("public_fixed", "ours")
APPR_FRACTION = 0.5  # graphrelease.models.dpar.DPARConfig.appr_fraction
COL_CAP = 8  # graphrelease.models.dpar.DPARConfig.col_cap
DELTA = 1e-5
PEER_FLAGS = {**dpar.FIXED_FLAGS, "em_sensitivity": 0.001}  # the peer's defaults (top-k 4, 70 sources, ...)


def fixed_schedule(eps: float, num_examples: int) -> dict:
    """The fixed peer's knobs from OUR accountant: EM_eps, report_val_eps, the DP-SGD noise multiplier, and the
    composed epsilon of the whole schedule."""
    from graphrelease.models import appr
    from graphrelease.models.common import steps_for
    from graphrelease.models.dpar import stage2_entry
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.calibration import calibrate

    k, m = PEER_FLAGS["topk"], PEER_FLAGS["ppr_num"]
    params = appr.calibrate("EM1", k=k, clip=PEER_FLAGS["em_sensitivity"], num_sources=m,
                            target_epsilon=APPR_FRACTION * eps, delta=DELTA, accountant="rdp", value_fraction=0.5)
    stage1 = appr.ledger_entries(params, stage="peer.dpar.appr")
    steps, q = steps_for(PEER_FLAGS["max_epochs"], num_examples, PEER_FLAGS["batch_size"])

    def entries(s: float):
        return stage1 + [stage2_entry(noise_multiplier=s, sample_rate=q, col_cap=COL_CAP, count=steps)]

    sigma = calibrate(entries, target_epsilon=eps * 0.995, delta=DELTA, accountant="rdp", lo=0.05, hi=1e4,
                      rtol=2.5e-3, what="the fixed DPAR peer's schedule")
    return {"em_eps": params.eps_select, "report_val_eps": params.eps_value, "sigma_sgd": sigma, "steps": steps,
            "q": q, "our_epsilon": compute_epsilon(entries(sigma), DELTA, "rdp")}


def cap_columns(m, cap: int):
    """Keep the ``cap`` largest-|value| entries of each column of the released top-k matrix (post-processing)."""
    import scipy.sparse as sp

    c = sp.csc_matrix(m, copy=True)
    c.eliminate_zeros()
    keep = np.ones(c.data.size, dtype=bool)
    for j in range(c.shape[1]):
        a, b = c.indptr[j], c.indptr[j + 1]
        if b - a > cap:
            keep[a + np.argsort(-np.abs(c.data[a:b]), kind="stable")[cap:]] = False
    c.data = np.where(keep, c.data, 0.0)
    c.eliminate_zeros()
    return c.tocsr(), float(1.0 - keep.mean()) if keep.size else 0.0


def run_fixed(peer: Path, g, split, eps: float, run: int):
    import scipy.sparse as sp

    mod = dpar.load_peer(peer)
    n_ex = int(math.ceil(PEER_FLAGS["privacy_amplify_sampling_rate"] * np.asarray(split.train).size))
    sched = fixed_schedule(eps, n_ex)
    flags = {**PEER_FLAGS, "EM_eps": sched["em_eps"], "report_val_eps": sched["report_val_eps"],
             "sigma_sgd": sched["sigma_sgd"] * 1.0, "clip_bound_sgd": 1.0, "data_file": "unused"}
    mod.FLAGS(["dpar"] + [f"--{k}={v}" for k, v in flags.items()])
    mod.utils.get_data = dpar.converter(g, split, run)
    stats: dict[str, float] = {}

    # (2) the column cap on the released DP-APPR matrix, before the peer appends its identity rows.
    release = mod.ppr.topk_ppr_matrix_ista

    def capped_release(*args, **kwargs):
        m = sp.csr_matrix(release(*args, **kwargs))
        counts = np.diff(sp.csc_matrix(m).indptr)
        stats["max_col_count"] = float(counts.max()) if counts.size else 0.0
        capped, stats["dropped_frac"] = cap_columns(m, COL_CAP)
        return capped

    mod.ppr.topk_ppr_matrix_ista = capped_release

    # (3) one microbatch per example, every example fed at every step (fixed divisor).
    model_class = mod.DPGNN

    def make_model(d, nc, hidden, nlayers, lr, wd, dropout, clip, sigma, _microbatches, **kw):
        return model_class(d, nc, hidden, nlayers, lr, wd, dropout, clip, sigma, n_ex, **kw)

    mod.DPGNN = make_model
    rng = np.random.default_rng(10_000 + run)  # the peer's batches were seeded too (np.random.seed(run))

    def poisson_train(sess, model, attr_matrix, train_idx, topk_train, labels, epoch, batch_size):
        from dpgnn.utils import SparseRowIndexer

        if sp.issparse(attr_matrix):
            attr_matrix = SparseRowIndexer(attr_matrix)
        n = len(labels)
        assert n == n_ex, (n, n_ex)
        q = batch_size / n
        topk = sp.csr_matrix(topk_train)
        for _ in range(math.ceil(n / batch_size)):
            mask = (rng.random(n) < q).astype(np.float64)
            masked = sp.diags(mask) @ topk
            masked.eliminate_zeros()
            if masked.nnz:
                feed = model.gen_feed(attr_matrix, masked, labels)
            else:  # empty Poisson batch: one zero-weight entry, so the step is still the noise alone
                feed = model.gen_feed(attr_matrix, sp.csr_matrix(([1.0], ([0], [0])), shape=topk.shape), labels)
                feed[model.batch_pprw] = np.zeros(1, dtype=np.float32)
            sess.run(model.update_op, feed)

    mod.train_solo = poisson_train
    acc, cpu, out = dpar.run_main(mod, run)
    return acc, cpu, {**sched, **stats}


def child(argv: list[str]) -> None:
    ap = common.child_parser(TOOLS)
    a = ap.parse_args(argv)
    from graphrelease.models.common import node_split

    g = common.load_graph(a.graph)
    split = node_split(g, train=0.5, val=0.25, seed=a.run)
    if a.tool == "ours":
        acc, cpu, spent = dpar.run_ours(g, a.eps, a.run)
        common.emit({"test_acc": acc, "fit_cpu_s": cpu, "our_epsilon": spent})
    else:
        acc, cpu, info = run_fixed(a.peer, g, split, a.eps, a.run)
        common.emit({"test_acc": acc, "fit_cpu_s": cpu, **info})


def main(argv: list[str] | None = None) -> list[dict]:
    ap = common.driver_parser(__doc__, peer="Emory-AIMS/DPAR", graphs="cora_ml,citeseer", cells=("epsilons", "8,16"),
                              name="dpar_fixed", timeout=1800)
    ap.add_argument("--peer-path", action="append", default=[], help="site dir with tensorflow-cpu, numba, pynverse")
    ap.add_argument("--tools", default=",".join(TOOLS))
    a = ap.parse_args(argv)
    peer_extra = [str(HERE / "shim"), *a.peer_path]
    rows = []
    for graph in a.graphs.split(","):
        for eps in (float(e) for e in a.epsilons.split(",")):
            for tool in a.tools.split(","):
                runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), tool, graph, str(eps), str(r)],
                                         extra_path=peer_extra if tool != "ours" else [], timeout=a.timeout)
                        for r in range(a.runs)]
                row = {"peer": "DPAR", "graph": graph, "epsilon": eps, "tool": tool, **common.aggregate(runs, KEYS)}
                print(row, flush=True)
                rows.append(row)
                common.write_json(a.json, rows)  # after every cell: a cut-short run keeps what it measured
    return rows


if __name__ == "__main__":
    common.dispatch(child, main)
