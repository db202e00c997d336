"""DPAR side by side (node-level DP): the authors' code (Emory-AIMS/DPAR, ``main.py``, DP-APPR by the exponential
mechanism + DP-SGD) against our ``dpar``, on the same graph and test nodes.

    python benchmarks/peers/dpar.py --peer /path/to/DPAR --peer-path /path/to/site_tf \
        --graphs cora_ml,citeseer --settings default,tight

The peer is TensorFlow 1 code written against ``tensorflow.compat.v1``; it runs here under TensorFlow 2 (CPU wheel,
installed outside the checkout and put on the peer child's path only, ``--peer-path``) with numba and pynverse.
Its ``main(argv)`` runs unchanged; the child only (a) sets its absl flags, (b) replaces ``utils.get_data`` by a
converter that returns the same tuple from our graph and split (the peer's own split calls METIS, whose C library is
not installed: ``shim/metis.py`` makes the import succeed and refuses to partition), keeping the peer's rule of
training on a random ``privacy_amplify_sampling_rate`` share of the training nodes and testing on the induced test
subgraph, (c) reads the test accuracy through its ``accuracy_score``, (d) runs in a temporary directory (the peer
appends to ``dp_experiment_out.txt`` in the working directory).

Settings (the peer's flags; both with ``--EM --dp_sgd``, top-k 4, 70 APPR sources, sampling rate 0.09, 200
epochs, batch 60): ``default`` = the peer's defaults (EM epsilon 1.3 per selection, DP-SGD sigma 0.95); ``tight`` =
EM epsilon 0.3, sigma 2.0. The peer prints its own epsilons for the two stages; ours runs at their sum (the peer's
claimed total; it never composes them).

Known accounting bugs (PRIVACY.md section 4): epsilon multiplied by the sampling rate as "amplification"; the
classic Gaussian / advanced-composition formulas outside their range; DP-APPR and DP-SGD epsilons never composed;
shuffled sequential batches accounted as Poisson sampling; and a node enters the DP-SGD examples of every source
whose top-k holds it. The child reports OUR accountant's epsilon for the peer's DP-APPR stage alone (70 x 4
exponential selections at the per-selection epsilon plus 70 value releases, pure-DP basic composition, no
amplification claimed): a lower bound on the whole schedule's epsilon, since the DP-SGD stage only adds to it.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402

KEYS = ["test_acc", "our_epsilon", "claimed_epsilon"]
TOOLS = ("public", "ours")
SETTINGS = {"default": {"EM_eps": 1.3, "sigma_sgd": 0.95}, "tight": {"EM_eps": 0.3, "sigma_sgd": 2.0}}
FIXED_FLAGS = {"EM": True, "dp_sgd": True, "dp_ppr": False, "topk": 4, "ppr_num": 70,
               "privacy_amplify_sampling_rate": 0.09, "max_epochs": 200, "batch_size": 60}


def converter(g, split, run: int):
    """``utils.get_data`` replacement: the peer's tuple from our graph and split."""
    import scipy.sparse as sp

    def get_data(_path, privacy_amplify_sampling_rate):
        from dpgnn.utils import SparseRowIndexer

        rng = np.random.default_rng(run)
        a = g.to_csr()
        x = sp.csr_matrix(g.features)
        labels = np.asarray(g.labels)
        train_total = rng.permutation(np.asarray(split.train))
        train_idx = train_total[:int(np.ceil(privacy_amplify_sampling_rate * train_total.size))]
        test_idx = np.asarray(split.test)
        tr_adj = a[train_idx][:, train_idx].tolil()
        num_edges = int(tr_adj.sum())
        tr_adj.setdiag(1)
        te_adj = a[test_idx][:, test_idx].tolil()
        te_adj.setdiag(1)
        n, d = x.shape
        return (labels[train_idx], sp.csr_matrix(tr_adj), x[train_idx], np.arange(train_idx.size),
                labels[test_idx], sp.csr_matrix(te_adj), SparseRowIndexer(x[test_idx]), np.arange(test_idx.size),
                n, int(labels.max()) + 1, d, num_edges)

    return get_data


def compat_row_indexer() -> None:
    """The peer's ``SparseRowIndexer`` stores ragged rows with ``np.array(list_of_arrays)``, which numpy >= 1.24
    refuses (numpy 1.18, its pin, made an object array). Same layout, built as explicit object arrays."""
    import dpgnn.model
    import dpgnn.utils

    base = dpgnn.utils.SparseRowIndexer

    class RowIndexer(base):
        def __init__(self, csr_matrix):
            m = csr_matrix.tocsr()
            n = m.shape[0]
            self.data, self.indices = np.empty(n, dtype=object), np.empty(n, dtype=object)
            for i in range(n):
                lo, hi = m.indptr[i], m.indptr[i + 1]
                self.data[i], self.indices[i] = m.data[lo:hi], m.indices[lo:hi]
            self.indptr = np.diff(m.indptr)
            self.n_columns = m.shape[1]

    dpgnn.utils.SparseRowIndexer = dpgnn.model.SparseRowIndexer = RowIndexer


def appr_epsilon(em_eps: float, topk: int, sources: int, report_eps: float, delta: float) -> float:
    """Our accountant on the peer's DP-APPR stage under node adjacency: every source's APPR vector can change, so
    all ``sources * topk`` selections and ``sources`` value releases compose (no amplification claimed)."""
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.ledger import LedgerEntry

    sel = LedgerEntry("exponential", "peer.dpar.appr_select", params={"epsilon": em_eps}, count=sources * topk)
    val = LedgerEntry("laplace", "peer.dpar.appr_values", params={"epsilon": report_eps}, count=sources)
    return compute_epsilon([sel, val], delta, "rdp")


def load_peer(peer: Path):
    """The peer's ``main`` module, loaded from the fetched copy with the compat pieces (TF1 API, numpy aliases,
    object-array row indexer) in place; its flags are not parsed yet."""
    sys.path.insert(0, str(peer))
    # TF1 graph-mode code: the peer imports ``tensorflow.compat.v1`` in main/model but plain ``tensorflow`` (meaning
    # the 1.x API) in its copy of tensorflow_privacy; both resolve to the compat.v1 API with v2 behaviour off.
    import tensorflow.compat.v1 as tf1

    tf1.disable_v2_behavior()
    sys.modules["tensorflow"] = tf1
    spec = importlib.util.spec_from_file_location("dpar_main", peer / "main.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    compat_row_indexer()
    for alias, typ in (("int", int), ("float", float), ("bool", bool)):  # numpy 1.18 aliases the peer uses
        setattr(np, alias, typ)
    return mod


def run_main(mod, run: int):
    """Run the peer's ``main`` (flags already parsed, ``utils.get_data`` replaced) in a scratch directory; returns
    (test accuracy read through its ``accuracy_score``, CPU s of ``main``, its stdout)."""
    import io
    from contextlib import redirect_stdout

    seen: dict[str, float] = {}
    score = mod.accuracy_score

    def accuracy(y_true, y_pred):
        seen["acc"] = float(score(y_true, y_pred))
        return seen["acc"]

    mod.accuracy_score = accuracy
    np.random.seed(run)
    buf = io.StringIO()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            start = time.process_time()
            with redirect_stdout(buf):
                mod.main(None)
            cpu = time.process_time() - start
        finally:
            os.chdir(cwd)
    return seen["acc"], cpu, buf.getvalue()


def run_peer(peer: Path, g, split, setting: str, run: int):
    mod = load_peer(peer)
    flags = {**FIXED_FLAGS, **SETTINGS[setting], "data_file": "unused"}
    mod.FLAGS(["dpar"] + [f"--{k}={v}" for k, v in flags.items()])
    mod.utils.get_data = converter(g, split, run)
    acc, cpu, out = run_main(mod, run)
    claimed = sum(float(m) for m in re.findall(r"DP budget for DP-(?:PPR using EM|SGD): epsilon=([0-9.eE+-]+)", out))
    report_eps = float(mod.FLAGS.report_val_eps)
    ours = appr_epsilon(flags["EM_eps"], flags["topk"], flags["ppr_num"], report_eps, 1e-5)
    return acc, cpu, ours, claimed


def claimed_total(peer_json: list[dict], graph: str, setting: str) -> float:
    for r in peer_json:
        if r["graph"] == graph and r["setting"] == setting and r["tool"] == "public":
            return r["claimed_epsilon"][0]
    raise KeyError


def run_ours(g, eps: float, run: int):
    from graphrelease.defaults import MAX_EPSILON
    from graphrelease.train import fit_model

    eps = min(eps, MAX_EPSILON)  # the largest epsilon we certify; above it ours is then MORE private than asked
    start = time.process_time()
    # Under node adjacency the class count must be declared (labels are private); the peer reads it off the labels.
    k = int(np.asarray(g.labels).max()) + 1
    r = fit_model(g, "dpar", adjacency="node", epsilon=eps, delta=1e-5, options={"split_seed": run, "num_classes": k})
    return float(r.test_accuracy), time.process_time() - start, float(r.epsilon_spent)


def child(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", type=Path, required=True)
    ap.add_argument("--eps", type=float, default=math.nan, help="ours: the epsilon to run at")
    ap.add_argument("tool", choices=TOOLS)
    ap.add_argument("graph")
    ap.add_argument("setting", choices=sorted(SETTINGS))
    ap.add_argument("run", type=int)
    a = ap.parse_args(argv)
    from graphrelease.models.common import node_split

    g = common.load_graph(a.graph)
    split = node_split(g, train=0.5, val=0.25, seed=a.run)
    if a.tool == "ours":
        acc, cpu, spent = run_ours(g, a.eps, a.run)
        common.emit({"test_acc": acc, "fit_cpu_s": cpu, "our_epsilon": spent, "claimed_epsilon": a.eps})
    else:
        acc, cpu, ours, claimed = run_peer(a.peer, g, split, a.setting, a.run)
        common.emit({"test_acc": acc, "fit_cpu_s": cpu, "our_epsilon": ours, "claimed_epsilon": claimed})


def ours_from(a) -> list[dict]:
    """Our rows for every peer row of a previous run: at the peer's claimed epsilon (``ours``) and at the epsilon
    our accountant gives the peer's DP-APPR stage (``ours_at_peer_eps``), i.e. at no more privacy than the peer
    really has (its full schedule costs more)."""
    import json

    prev = json.loads(a.ours_from.read_text())
    peer_rows = [r for r in prev if r["tool"] == "public" and r["n"] > 0]
    have = {(r["graph"], r["setting"], r["tool"]) for r in prev if r["n"] > 0}
    rows = []
    for pr in peer_rows:
        for tool, eps in (("ours", pr["claimed_epsilon"][0]), ("ours_at_peer_eps", pr["our_epsilon"][0])):
            if (pr["graph"], pr["setting"], tool) in have:
                continue
            runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), "--eps", str(eps), "ours", pr["graph"],
                                                      pr["setting"], str(r)], extra_path=[], timeout=a.timeout)
                    for r in range(a.runs)]
            row = {"peer": "DPAR", "graph": pr["graph"], "setting": pr["setting"], "tool": tool,
                   **common.aggregate(runs, KEYS)}
            print(row, flush=True)
            rows.append(row)
            common.write_json(a.json, rows)
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = common.driver_parser(__doc__, peer="Emory-AIMS/DPAR", graphs="cora_ml,citeseer", cells=("settings", "default,tight"),
                              name="dpar", timeout=1800)
    ap.add_argument("--peer-runs", type=int, default=None, help="runs for the peer's rows (default: --runs)")
    ap.add_argument("--peer-path", action="append", default=[], help="site dir with tensorflow-cpu, numba, pynverse")
    ap.add_argument("--ours-from", type=Path, default=None,
                    help="skip the peer: run ours at the claimed AND at our accountant's epsilon of the peer rows "
                         "in this JSON (a previous run of this script); writes --json")
    ap.add_argument("--peer-only", action="store_true",
                    help="only the peer's rows (ours from an earlier --json; the report takes each cell's latest file)")
    a = ap.parse_args(argv)
    if a.ours_from is not None:
        return ours_from(a)
    peer_extra = [str(HERE / "shim"), *a.peer_path]
    rows = []
    for graph in a.graphs.split(","):
        for setting in a.settings.split(","):
            peer_runs = a.runs if a.peer_runs is None else a.peer_runs
            runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), "public", graph, setting, str(r)],
                                     extra_path=peer_extra, timeout=a.timeout) for r in range(peer_runs)]
            peer_row = {"peer": "DPAR", "graph": graph, "setting": setting, "tool": "public",
                        **common.aggregate(runs, KEYS)}
            print(peer_row, flush=True)
            rows.append(peer_row)
            common.write_json(a.json, rows)  # after every cell: a cut-short run keeps what it measured
            if a.peer_only:
                continue
            eps = peer_row["claimed_epsilon"][0]
            runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), "--eps", str(eps), "ours", graph,
                                                      setting, str(r)], extra_path=[], timeout=a.timeout)
                    for r in range(a.runs)] if math.isfinite(eps) else []
            row = {"peer": "DPAR", "graph": graph, "setting": setting, "tool": "ours", **common.aggregate(runs, KEYS)}
            print(row, flush=True)
            rows.append(row)
            common.write_json(a.json, rows)
    common.write_json(a.json, rows)
    return rows


if __name__ == "__main__":
    common.dispatch(child, main)
