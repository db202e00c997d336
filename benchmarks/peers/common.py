"""Shared plumbing for the side-by-side peer scripts (not part of the package, not in the default test run).

Every measured run happens in a fresh child process (``python <script> --child ...``) so that its peak resident
memory (``ru_maxrss`` at exit) belongs to that one run and one tool; both tools pay the same interpreter and import
baseline, which the report states. Fit CPU time is ``time.process_time()`` around the fit only (evaluation and data
conversion excluded). The child prints one JSON object on its last stdout line.

A peer's code is never imported from this repository: each script takes the path of a fetched copy on the command
line and puts it on ``sys.path`` inside the child only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", ROOT.parent / "shared" / "data"))

GRAPHS = {
    "chameleon": ("single/chameleon.npz", {}),
    "facebook": ("raw/facebook_combined.txt.gz", {"nodes": 4039}),
    "cora": ("single/cora.npz", {}),
    "citeseer": ("single/citeseer.npz", {}),
    "cora_ml": ("single/cora_ml.npz", {}),
    "pubmed": ("single/pubmed.npz", {}),
}


def load_graph(name: str):
    """Our ``Graph`` for a dataset name of :data:`GRAPHS` (read from the shared data directory)."""
    sys.path.insert(0, str(ROOT))
    from graphrelease.io import read_graph

    rel, opts = GRAPHS[name]
    return read_graph(DATA / rel, **opts).data


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def emit(result: dict[str, Any]) -> None:
    """Child side: add the peak memory and print the result as the last stdout line."""
    result["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.flush()
    print("\n" + json.dumps(result), flush=True)


def run_child(script: Path, args: list[str], *, extra_path: list[str], timeout: float) -> dict[str, Any]:
    """Parent side: run one measurement in a fresh interpreter; returns its JSON (or an ``error`` entry)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *extra_path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TF_NUM_INTRAOP_THREADS", "1")  # one thread for TensorFlow peers too (shared machine)
    env.setdefault("TF_NUM_INTEROP_THREADS", "1")
    env.setdefault("GRAPHRELEASE_SHARED_DATA", str(DATA))
    cmd = ["nice", "-n", "10", sys.executable, str(script), "--child", *args]
    # A scratch working directory: the peers write checkpoints / logs relative to it (GAP's trainer, DPAR's
    # dp_experiment_out.txt), never into the checkout.
    with tempfile.TemporaryDirectory(prefix="peer_") as scratch:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=scratch)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.strip().splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


def summarise(values: list[float]) -> tuple[float, float]:
    """Median and sample standard deviation (0 for one value) of the finite values."""
    vals = [float(v) for v in values if v is not None and np.isfinite(v)]
    if not vals:
        return float("nan"), float("nan")
    return st.median(vals), (st.stdev(vals) if len(vals) > 1 else 0.0)


def fmt(med: float, sd: float, digits: int = 3) -> str:
    if not np.isfinite(med):
        return "n/a"
    return f"{med:.{digits}f} ± {sd:.{digits}f}"


def aggregate(runs: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """Median/std per key over the successful runs; the errors of failed runs are kept verbatim."""
    ok = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {"n": len(ok), "errors": [r["error"] for r in runs if "error" in r]}
    for k in keys + ["fit_cpu_s", "peak_rss_mb"]:
        out[k] = summarise([r.get(k, float("nan")) for r in ok])
    return out


def pyg_compat() -> None:
    """Names the peers import from PyG 2.1 that PyG 2.8 moved or dropped, used only by their node-level degree
    bounding (not run here): placeholders that fail loudly if ever called."""
    import torch_geometric.loader.utils as lu

    def _missing(*_args, **_kwargs):
        raise NotImplementedError("PyG 2.1 helper not available under PyG 2.8 (node-level path, not run)")

    for name in ("to_csc", "filter_data"):
        if not hasattr(lu, name):
            setattr(lu, name, _missing)


def auto_delta(num_edges: int) -> float:
    """The GAP/DPDGC code's ``delta='auto'`` rule, ``10 ** -len(str(stored directed edges))`` (2|E| undirected)."""
    return 1.0 / (10 ** len(str(2 * num_edges)))


def fit_gap_framework_method(make_method: Callable[[], Any], data: Any, graph: Any, delta: float) -> tuple[Any, float, float]:
    """Fit a method of the GAP code base (sisaman/GAP; thupchnsky/dp-gnn builds DPDGC on it), timed from its
    construction. Returns ``(method, test accuracy as a fraction, CPU s)``; checks that its ``delta='auto'`` rule saw
    our edge count."""
    start = time.process_time()
    method = make_method()
    metrics = method.fit(data)
    cpu = time.process_time() - start
    if auto_delta(method.num_edges // 2) != delta:
        raise SystemExit(f"peer delta rule gave num_edges={method.num_edges}, expected {2 * graph.num_edges}")
    acc = float(metrics["test/acc"])
    return method, (acc / 100.0 if acc > 1.0 else acc), cpu


def peer_data(g, split, *, adj: str = "csr"):
    """PyG ``Data`` in the GAP/DPDGC code's layout built from our graph and split: dense float features, labels,
    boolean masks, ``edge_index`` (both directions) and ``adj_t`` (a torch CSR tensor, or the shim
    ``torch_sparse.SparseTensor`` when ``adj='shim'``)."""
    import scipy.sparse as sp
    import torch
    from torch_geometric.data import Data

    x = g.features.toarray() if sp.issparse(g.features) else np.asarray(g.features)
    n = g.num_nodes
    masks = {}
    for name in ("train", "val", "test"):
        m = torch.zeros(n, dtype=torch.bool)
        m[torch.as_tensor(getattr(split, name), dtype=torch.long)] = True
        masks[f"{name}_mask"] = m
    src = np.r_[g.edges[:, 0], g.edges[:, 1]]
    dst = np.r_[g.edges[:, 1], g.edges[:, 0]]
    if adj == "shim":
        from torch_sparse import SparseTensor

        adj_t = SparseTensor(row=torch.as_tensor(dst), col=torch.as_tensor(src), sparse_sizes=(n, n))
    else:
        a = sp.coo_matrix((np.ones(src.size), (dst, src)), shape=(n, n)).tocsr()
        adj_t = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.long),
                                        torch.as_tensor(a.indices, dtype=torch.long),
                                        torch.as_tensor(a.data, dtype=torch.float32), size=(n, n))
    y = torch.as_tensor(np.asarray(g.labels), dtype=torch.long)
    edge_index = torch.as_tensor(np.stack([src, dst]), dtype=torch.long)
    data = Data(x=torch.as_tensor(x, dtype=torch.float32), y=y, adj_t=adj_t, edge_index=edge_index, **masks)
    data.num_nodes = n
    return data


def write_json(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1))


def child_parser(tools: list[str] | tuple[str, ...], *, cell: str = "eps") -> argparse.ArgumentParser:
    """Arguments of one measurement child: ``--peer PATH tool graph <cell> run`` (cell = the epsilon, or a named
    setting for peers whose budget is a flag set)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", type=Path, required=True)
    ap.add_argument("tool", choices=tools)
    ap.add_argument("graph")
    if cell == "eps":
        ap.add_argument("eps", type=float)
    ap.add_argument("run", type=int)
    return ap


def run_our_node_model(method: str, g, eps: float, delta: float, run: int, *, adjacency: str = "edge",
                       options: dict[str, Any] | None = None) -> tuple[float, float, float, float]:
    """(test accuracy, fit CPU s, epsilon our ledger spent, nan) of ``graphrelease.train.fit_model`` on split ``run``."""
    from graphrelease.train import fit_model

    start = time.process_time()
    r = fit_model(g, method, adjacency=adjacency, epsilon=eps, delta=delta,
                  options={"split_seed": run, **(options or {})})
    return float(r.test_accuracy), time.process_time() - start, float(r.epsilon_spent), float("nan")


def dispatch(child: Callable[[list[str]], None], main: Callable[[], Any]) -> None:
    """``script.py --child ...`` runs one measurement (in a fresh process); otherwise the script's driver."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()


def driver_parser(doc: str | None, *, peer: str, graphs: str, cells: tuple[str, str], name: str,
                  timeout: float) -> argparse.ArgumentParser:
    """The options every peer driver takes: the fetched copy, graphs, budget cells (``--epsilons`` or a named set),
    runs, the child timeout and the JSON it writes (``reports/peers/<name>.json``)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", type=Path, required=True, help=f"fetched copy of {peer}")
    ap.add_argument("--graphs", default=graphs)
    ap.add_argument(f"--{cells[0]}", default=cells[1])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=timeout)
    ap.add_argument("--json", type=Path, default=ROOT / "reports" / "peers" / f"{name}.json")
    return ap
