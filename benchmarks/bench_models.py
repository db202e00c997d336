"""Fit time and peak memory of the private node models on Cora and Tolokers.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_models.py [--repeats 3] [--datasets cora,tolokers]

Each fit runs in a fresh subprocess (peak RSS = that process's ru_maxrss, which includes the Python/torch baseline
of roughly 0.3-0.4 GB); the figure is the median over ``--repeats`` runs. Epoch counts are fixed and small (see
CONFIGS) so the table measures the cost per configuration, not a tuned training run. Writes reports/bench_models.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = [  # (method, adjacency, epsilon, options)
    ("gcn", "edge", "inf", {"epochs": 50}),
    ("dp-mlp", "node", "8", {"epochs": 5}),
    ("gap", "edge", "1", {"encoder_epochs": 5, "epochs": 5}),
    ("gap", "node", "8", {"encoder_epochs": 5, "epochs": 5, "degree_cap": 10}),
    ("dpdgc", "edge", "1", {"encoder_epochs": 2, "epochs": 5}),
]

CHILD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
sys.path.insert(0, {root!r})
from graphrelease.io.npz import read_npz
from graphrelease.train import fit_model
g = read_npz({path!r})[0]
t = time.perf_counter()
run = fit_model(g, {method!r}, adjacency={adj!r}, epsilon=float({eps!r}), accountant="rdp", options={opts!r})
sec = time.perf_counter() - t
print(json.dumps({{"seconds": sec, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "acc": run.test_accuracy, "spent": run.epsilon_spent}}))
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--datasets", default="cora,tolokers")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "bench_models.md")
    args = p.parse_args()
    command = (f"OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_models.py --repeats {args.repeats} "
               f"--datasets {args.datasets}")
    rows = []
    for ds in args.datasets.split(","):
        path = str(ROOT.parent / "shared" / "data" / "single" / f"{ds}.npz")
        for method, adj, eps, opts in CONFIGS:
            results = []
            for _ in range(args.repeats):
                code = CHILD.format(root=str(ROOT), path=path, method=method, adj=adj, eps=eps, opts=opts)
                proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
                if proc.returncode != 0:
                    results.append({"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"})
                    break
                results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            ok = [r for r in results if "error" not in r]
            row = {"dataset": ds, "method": method, "adjacency": adj, "epsilon": eps, "options": opts, "runs": len(ok)}
            if ok:
                row.update(seconds=statistics.median(r["seconds"] for r in ok),
                           peak_mb=statistics.median(r["peak_mb"] for r in ok),
                           acc=statistics.median(r["acc"] for r in ok))
            else:
                row["error"] = results[-1]["error"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_report(rows, args.out, command)  # after every row: a long run leaves a partial table


def write_report(rows: list[dict], out: Path, command: str) -> None:
    lines = [f"<!-- regenerate: {command} -->", "# Private models: fit time and peak memory", "",
             f"Command: `{command}`", "",
             "Median over runs of one `fit_model` call in a fresh process (1 thread; the machine's 2 cores were shared "
             "with other jobs while this ran, so times are upper bounds). Peak memory = process max RSS including "
             "the interpreter and torch. Accuracy is the held-out test accuracy of these short runs (not tuned).", "",
             "| dataset | method | adjacency | epsilon | options | runs | fit seconds | peak MB | test acc |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['method']} | {r['adjacency']} | {r['epsilon']} | {r['options']} | 0 | "
                         f"failed: {r['error'][:80]} | | |")
        else:
            lines.append(f"| {r['dataset']} | {r['method']} | {r['adjacency']} | {r['epsilon']} | {r['options']} | "
                         f"{r['runs']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {r['acc']:.3f} |")
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
