"""Benchmark suite (``make bench``): load, fit, sample, audit and verify timings and peak memory per dataset and
method, written to ``reports/benchmarks.md``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py [--quick] [--runs 3] [--datasets cora,facebook]
        [--methods chung_lu,dpdk] [--out reports/benchmarks.md]

``--quick``: Cora + Facebook with the fast classical methods. Full (default): Cora, Facebook, PubMed, Tolokers,
Slashdot and the IMDB-MULTI collection with every edge-DP classical generator and ``dpgvae`` (its default sound mode).
Every measurement is a fresh subprocess (:func:`suite.measure`): wall time of the stage only (input loaded and
modules imported before the timer) and the process's peak RSS; times are medians over ``--runs`` untimed-trace
runs; one extra run per cell with ``tracemalloc`` on gives the traced peak (skip it with ``--no-trace``).
The audit stage runs once per dataset on the first method's release unless ``--audit-all``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import DATASETS, ROOT, measure  # noqa: E402

CLASSICAL = ["chung_lu", "randomized_response", "dpdk", "tmf", "privgraph", "dp_dcsbm"]
QUICK_DATASETS = ["cora", "facebook"]
QUICK_METHODS = ["chung_lu", "dpdk", "randomized_response"]
FULL_DATASETS = ["cora", "facebook", "pubmed", "tolokers", "slashdot", "imdb-multi"]
FULL_METHODS = CLASSICAL + ["dpgvae"]


def machine_state() -> dict:
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return {"load": " ".join(f"{x:.1f}" for x in os.getloadavg()), "cores": os.cpu_count(), "mem": mem,
            "python": platform.python_version(), "machine": platform.machine(),
            "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def cell(spec: dict, runs: int, trace: bool, timeout: float, log, inline: bool = False) -> dict:
    """Median over ``runs`` fresh-process runs (+ one traced run). Stops at the first error."""
    results = []
    for _ in range(runs):
        r = measure(spec, timeout=timeout, inline=inline)
        log(spec, r)
        if "error" in r:
            return {"error": r["error"]}
        results.append(r)
    secs = [r["seconds"] for r in results]
    out = {"median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs), "runs": len(secs),
           "maxrss_mib": max(r["maxrss_mib"] for r in results)}
    for k in ("nodes", "edges", "graphs", "guarantee", "epsilon_spent", "verified"):
        if k in results[-1]:
            out[k] = results[-1][k]
    if trace:
        r = measure(dict(spec, trace=True), timeout=timeout * 20)
        log(dict(spec, trace=True), r)
        out["traced_peak_mib"] = r.get("traced_peak_mib")
    return out


def render(rows: list[dict], args, state0: dict, state1: dict, command: str) -> str:
    lines = [f"`{command}`", "", "# Benchmark suite: load, fit, sample, audit, verify", "",
             f"Measured {state0['time']} to {state1['time']} on {state0['machine']}, {state0['cores']} cores, "
             f"{state0['mem']} RAM, Python {state0['python']}, one thread per process. The cores are shared with "
             f"other jobs: load average (1/5/15 min) {state0['load']} at start and {state1['load']} at the end, so "
             "wall times are upper bounds for an idle machine.", "",
             "Each number comes from a fresh subprocess per run (`benchmarks/suite.py`): wall time of the stage "
             "alone (input loaded and modules imported before the timer; lazy imports inside the stage count), "
             f"median of {args.runs} runs; peak RSS = max `ru_maxrss` over those runs (whole process, incl. the "
             "~0.25-0.45 GiB Python/numpy/torch runtime); tracemalloc peak = one extra run with `tracemalloc` on "
             "(Python objects + numpy buffers allocated during the stage; torch tensors not traced), not timed.",
             "", "Stages: `load` = `read_graph`; `fit` = `synthesize(..., epsilon=4)` (fit + one sample + certified "
             "release written); `sample` = `sample_release(release, 1)`; `verify` = `verify_release` with input and "
             "key; `audit` = `run_audit` (statistics + 3-4-node motifs + link-inference attack, `fast=True`; "
             "collections: statistics + motifs + MMD).", "",
             "| dataset | method | stage | nodes | edges | median s | min / max s | runs | peak RSS MiB | "
             "tracemalloc MiB | notes |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["result"]
        if "error" in c:
            lines.append(f"| {r['dataset']} | {r.get('method', '-')} | {r['stage']} | | | | | | | | "
                         f"failed: {c['error'].replace('|', '/')} |")
            continue
        notes = []
        if "guarantee" in c:
            notes.append(f"guarantee {c['guarantee']}, eps spent {c['epsilon_spent']:.2f}")
        if "verified" in c:
            notes.append("verified" if c["verified"] else "VERIFY FAILED")
        if "graphs" in c:
            notes.append(f"{c['graphs']} graphs")
        tm = c.get("traced_peak_mib")
        lines.append(f"| {r['dataset']} | {r.get('method', '-')} | {r['stage']} | {c.get('nodes', ''):,} | "
                     f"{c.get('edges', ''):,} | {c['median_s']:.2f} | {c['min_s']:.2f} / {c['max_s']:.2f} | "
                     f"{c['runs']} | {c['maxrss_mib']:.0f} | {'' if tm is None else f'{tm:.0f}'} | "
                     f"{'; '.join(notes)} |")
    lines += ["", "## Reference implementations", "",
              "The papers' reference implementations (thupchnsky/dp-gnn, sisaman/GAP, Emory-AIMS/DPAR, "
              "Graph-COM/Node_DP, haonan3/Secure-Network-Release-with-Link-Privacy) cannot be fetched on this "
              "machine (no network beyond package registries), so no our/their time ratio was measured and none "
              "is reported.", "",
              "## Related reports", "",
              "Per-component benchmarks by their owners: `reports/load.md` (IO), `reports/audit_stats.md` "
              "(statistics, graphlets), `reports/audit.md`, `reports/dpsgd_throughput.md`, "
              "`reports/private_models.md`; large-graph limits per method: `reports/limits.md`.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--datasets", default=None, help="comma-separated names, or paths to graph files")
    p.add_argument("--methods", default=None)
    p.add_argument("--epsilon", type=float, default=4.0)
    p.add_argument("--out", default=str(ROOT / "reports" / "benchmarks.md"))
    p.add_argument("--no-trace", action="store_true")
    p.add_argument("--audit-all", action="store_true")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--workdir", default=None)
    p.add_argument("--inline", action="store_true",
                   help="run the stages in this process (fast self-test only: peak RSS is not per stage)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    datasets = args.datasets.split(",") if args.datasets else (QUICK_DATASETS if args.quick else FULL_DATASETS)
    methods = args.methods.split(",") if args.methods else (QUICK_METHODS if args.quick else FULL_METHODS)
    command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py " + " ".join(argv if argv is not None
                                                                                     else sys.argv[1:])
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="graphrelease-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = not args.no_trace and not args.inline

    def log(spec: dict, r: dict) -> None:
        short = {k: v for k, v in r.items() if k in ("seconds", "maxrss_mib", "traced_peak_mib", "error")}
        print(f"{spec.get('dataset', spec.get('path'))} {spec.get('method', '-')} {spec['stage']}"
              f"{' (traced)' if spec.get('trace') else ''}: {json.dumps(short)}", flush=True)

    state0 = machine_state()
    rows: list[dict] = []
    for ds in datasets:
        base = {"path": ds, "dataset": Path(ds).stem} if ds not in DATASETS else {"dataset": ds}
        rows.append(dict(base, stage="load", result=cell(dict(base, stage="load"), args.runs, trace, args.timeout,
                                                         log, args.inline)))
        audited = False
        for m in methods:
            rel = str(work / f"{base['dataset']}_{m}")
            spec = dict(base, method=m, release=rel, epsilon=args.epsilon)
            fit = cell(dict(spec, stage="fit"), args.runs, trace, args.timeout, log, args.inline)
            rows.append(dict(base, method=m, stage="fit", result=fit))
            if "error" in fit:
                continue
            stages = ["sample", "verify"] + (["audit"] if args.audit_all or not audited else [])
            for st in stages:
                rows.append(dict(base, method=m, stage=st,
                                 result=cell(dict(spec, stage=st), args.runs, trace, args.timeout, log,
                                             args.inline)))
            audited = True
    state1 = machine_state()
    text = render(rows, args, state0, state1, command)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 1 if any("error" in r["result"] for r in rows) and all("error" in r["result"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
