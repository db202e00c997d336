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
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = [  # (method, adjacency, epsilon, options)
    ("mlp", "edge", "inf", {"epochs": 50}),
    ("gcn", "edge", "inf", {"epochs": 50}),
    ("sage", "edge", "inf", {"epochs": 50}),
    ("dp-mlp", "node", "8", {"epochs": 5}),
    ("gap", "edge", "1", {"encoder_epochs": 5, "epochs": 5}),
    ("gap", "node", "8", {"encoder_epochs": 5, "epochs": 5, "degree_cap": 10}),
    ("dpdgc", "edge", "1", {"encoder_epochs": 2, "epochs": 5}),
    ("dpdgc", "node", "8", {"encoder_epochs": 2, "epochs": 5, "degree_cap": 10}),
    ("dpar", "edge", "1", {"mechanism": "EM1", "epochs": 5, "num_sources": 500, "max_iter": 50}),
    ("dpar", "node", "8", {"mechanism": "EM1", "epochs": 5, "num_sources": 500, "max_iter": 50}),
    # link prediction (the 'test acc' column holds the held-out edge AUC)
    ("gap-link", "edge", "1", {}),
    ("relational", "edge", "4", {"steps": 100, "hidden": 64, "out_dim": 32}),
]
LINK_METHODS = {"gap-link": "gap", "relational": "relational"}

CHILD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
sys.path.insert(0, {root!r})
from graphrelease.io.npz import read_npz
from graphrelease.train import fit_link_model, fit_model
g = read_npz({path!r})[0]
t = time.perf_counter()
if {link!r}:  # includes the hold-out split and the AUC evaluation
    run, _ = fit_link_model(g, {link!r}, adjacency={adj!r}, epsilon=float({eps!r}), accountant="rdp", options={opts!r})
    acc = run.test_auc
else:
    opts = dict({opts!r})
    if {adj!r} != "edge" and {method!r} not in ("gcn", "sage", "mlp"):
        opts["num_classes"] = g.num_classes  # documented label set of a benchmark dataset, declared as an owner would
    run = fit_model(g, {method!r}, adjacency={adj!r}, epsilon=float({eps!r}), accountant="rdp", options=opts)
    acc = run.test_accuracy
sec = time.perf_counter() - t
print(json.dumps({{"seconds": sec, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "acc": acc, "spent": run.epsilon_spent}}))
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--datasets", default="cora,tolokers")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "bench_models.md")
    p.add_argument("--methods", default="", help="only these configs: comma list of METHOD or METHOD:ADJACENCY; rows "
                   "of other configs already in --out are kept (marked with the command that measured them)")
    p.add_argument("--child-timeout", type=float, default=None,
                   help="seconds; a fit still running then is stopped and reported as not finished")
    args = p.parse_args()
    wanted = [m for m in args.methods.split(",") if m]
    command = (f"OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_models.py --repeats {args.repeats} "
               f"--datasets {args.datasets}" + (f" --methods {args.methods}" if args.methods else "")
               + (f" --child-timeout {args.child_timeout:g}" if args.child_timeout else ""))
    rows = []
    kept = previous_rows(args.out) if wanted else []
    for ds in args.datasets.split(","):
        path = str(ROOT.parent / "shared" / "data" / "single" / f"{ds}.npz")
        for method, adj, eps, opts in CONFIGS:
            if wanted and method not in wanted and f"{method}:{adj}" not in wanted:
                continue
            results = []
            for _ in range(args.repeats):
                code = CHILD.format(root=str(ROOT), path=path, method=method, adj=adj, eps=eps, opts=opts,
                                   link=LINK_METHODS.get(method, ""))
                try:
                    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
                                          timeout=args.child_timeout)
                except subprocess.TimeoutExpired:
                    results.append({"error": f"not finished within {args.child_timeout:.0f} s (stopped)"})
                    break
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
            row["load"] = os.getloadavg()[0]  # 1-minute load average when the row finished (2 cores)
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_report(rows, args.out, command, kept)  # after every row: a long run leaves a partial table


def _key(cells: list[str]) -> tuple[str, ...]:
    return tuple(c.strip() for c in cells[:5])


def previous_rows(out: Path) -> list[tuple[list[str], str]]:
    """Table rows of an existing report (cells, the command that measured them), to keep beside new rows."""
    if not out.is_file():
        return []
    found, command = [], ""
    for line in out.read_text().splitlines():
        if line.startswith("Command: `") or line.startswith("Rows from an earlier invocation (`"):
            command = line.split("`")[1]
            if command.startswith("--"):  # the old report gave only the flags of its earlier invocation
                command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_models.py " + command
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 9 and cells[0] not in ("dataset", "---"):
            found.append((cells[:9], cells[9] if len(cells) > 9 else command))
    return found


def write_report(rows: list[dict], out: Path, command: str, kept: list | None = None) -> None:
    lines = [f"<!-- regenerate: {command} -->", "# Private models: fit time and peak memory", "",
             f"Command: `{command}`", "",
             "Median over runs of one `fit_model` call in a fresh process (1 thread; the machine's 2 cores were shared "
             "with other jobs while this ran, so times are upper bounds). Peak memory = process max RSS including "
             "the interpreter and torch. Accuracy is the held-out test accuracy of these short runs (not tuned; "
             "for gap-link and relational, link prediction, it is the held-out edge AUC). The last column gives the "
             "1-minute load average on the 2 cores when the row finished. "
             "Rows kept from earlier invocations name their command in the last column; the first sessions ran at a "
             "load average of ~15 on 2 cores, so their times are inflated several-fold.", "",
             "| dataset | method | adjacency | epsilon | options | runs | fit seconds | peak MB | test acc "
             "| measured by |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    new_keys = {(r["dataset"], r["method"], r["adjacency"], str(r["epsilon"]), str(r["options"])) for r in rows}
    for cells, by in kept or []:
        if _key(cells) not in new_keys:
            lines.append("| " + " | ".join(cells) + f" | {by} |")
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['method']} | {r['adjacency']} | {r['epsilon']} | {r['options']} | 0 | "
                         f"failed: {r['error'][:80]} | | | {command} |")
        else:
            lines.append(f"| {r['dataset']} | {r['method']} | {r['adjacency']} | {r['epsilon']} | {r['options']} | "
                         f"{r['runs']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {r['acc']:.3f} | {command} "
                         f"(load {r.get('load', float('nan')):.1f}) |")
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
