"""Benchmark suite (``make bench``): load, fit, sample, audit and verify timings and peak memory per dataset and
method, written to ``reports/benchmarks.md``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py [--quick] [--runs 3] [--datasets cora,facebook]
        [--methods chung_lu,dpdk] [--out reports/benchmarks.md]

``--quick``: Cora + Facebook with the fast classical methods. Full (default): Cora, Facebook, PubMed, Tolokers,
Slashdot and the IMDB-MULTI collection with every edge-DP classical generator and ``dpgvae`` (its default sound mode;
the classical generators take one graph, so on the collection only ``dpgvae`` runs and the others are listed as not
applicable: per-graph releases of a collection are ``graphrelease batch``, reports/batch.md).
Every measurement is a fresh subprocess (:func:`suite.measure`): wall time of the stage only (input loaded and
modules, including the lazily imported accounting libraries, imported before the timer; the one-time import cost is
its own row) and the process's peak RSS; times are medians over ``--runs`` untraced runs; one extra run per cell with
``tracemalloc`` on gives the traced peak (skip it with ``--no-trace``).
The audit stage runs once per dataset on the first method's release unless ``--audit-all``.

Cells run in priority order (:func:`plan`), not dataset by dataset, so that a time-boxed run (``--budget-min``) covers
every dataset and every stage before it spends time on the remaining method x dataset cells; the report is rewritten
after every cell and lists the cells the budget left out.
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
from suite import DATASETS, ROOT, measure, warm  # noqa: E402

CLASSICAL = ["chung_lu", "randomized_response", "dpdk", "tmf", "privgraph", "dp_dcsbm"]
QUICK_DATASETS = ["cora", "facebook"]
QUICK_METHODS = ["chung_lu", "dpdk", "randomized_response"]
FULL_DATASETS = ["cora", "facebook", "pubmed", "tolokers", "slashdot", "imdb-multi"]
FULL_METHODS = CLASSICAL + ["dpgvae"]
#: Graphs where one audit takes minutes (reports/limits.md: 287 s on Slashdot): ``--large-audit-runs`` applies.
LARGE = {"slashdot", "tolokers"}
#: Methods whose fit can take many minutes on the large graphs (dpgvae on Slashdot: > 900 s): run last.
SLOW = {"dpgvae", "dpggan", "gvae", "ggan"}


def accepts(method: str, dataset: str) -> bool:
    """Whether ``method`` takes the dataset's input kind (the classical generators take one graph, not a collection)."""
    if dataset != "imdb-multi":
        return True
    from graphrelease.generators import GENERATORS

    return "collection" in GENERATORS.get(method).inputs


def plan(datasets: list[str], methods: list[str]) -> list[tuple[str, str | None]]:
    """Cells ``(dataset, method)`` in priority order; ``method=None`` is the dataset's load cell.

    1. every dataset's load and its first applicable method (all stages incl. the audit): every stage on every graph;
    2. the other fast methods on the large graphs (the issue's large-graph requirement);
    3. the other fast methods on the small graphs;
    4. the slow (deep) methods, small graphs first, the large graphs last (a timeout there is a measured limit).
    """
    cells: list[tuple[str, str | None]] = []
    fast = [m for m in methods if m not in SLOW]
    slow = [m for m in methods if m in SLOW]
    for ds in datasets:
        cells.append((ds, None))
        first = next((m for m in fast + slow if accepts(m, ds)), None)
        if first is not None:
            cells.append((ds, first))
    for group in ([d for d in datasets if d in LARGE], [d for d in datasets if d not in LARGE]):
        for ds in group:
            cells += [(ds, m) for m in fast if (ds, m) not in cells]
    for group in ([d for d in datasets if d not in LARGE], [d for d in datasets if d in LARGE]):
        for ds in group:
            cells += [(ds, m) for m in slow if (ds, m) not in cells]
    return cells


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


def cell(spec: dict, runs: int, trace: bool, timeout: float, log, inline: bool = False, fork: bool = False) -> dict:
    """Median over ``runs`` fresh-process runs (+ one traced run). Stops at the first error; runs that completed
    before it are kept (a 400 s fit that then times out once is still a measurement) and the error is noted."""
    results = []
    failed = None
    for _ in range(runs):
        r = measure(spec, timeout=timeout, inline=inline, fork=fork)
        log(spec, r)
        if "error" in r:
            failed = r["error"]
            break
        results.append(r)
    if not results:
        return {"error": failed}
    secs = [r["seconds"] for r in results]
    out = {"median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs), "runs": len(secs),
           "median_cpu_s": statistics.median(r["cpu_seconds"] for r in results),
           "maxrss_mib": max(r["maxrss_mib"] for r in results)}
    for k in ("nodes", "edges", "graphs", "guarantee", "epsilon_spent", "verified", "mode"):
        if k in results[-1]:
            out[k] = results[-1][k]
    if failed:
        out["later_failure"] = failed
    if trace and not failed:
        r = measure(dict(spec, trace=True), timeout=timeout * 20, fork=fork)
        log(dict(spec, trace=True), r)
        out["traced_peak_mib"] = r.get("traced_peak_mib")
    return out


def table(rows: list[dict]) -> list[str]:
    lines = ["| dataset | method | stage | nodes | edges | median s | CPU s | min / max s | runs | peak RSS MiB | "
             "tracemalloc MiB | load | notes |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["result"]
        head = f"| {r['dataset']} | {r.get('method', '-')} | {r['stage']} |"
        if "na" in c:
            lines.append(f"{head} | | | | | | | | | not applicable: {c['na']} |")
            continue
        if "error" in c:
            lines.append(f"{head} | | | | | | | | {c.get('load1', 0):.1f} | failed: {c['error'].replace('|', '/')} |")
            continue
        notes = []
        if "guarantee" in c:
            notes.append(f"guarantee {c['guarantee']}, eps spent {c['epsilon_spent']:.2f}")
        if c.get("mode"):  # the deep generators' mode (their default changes with the code: say which ran)
            notes.append(f"mode {c['mode']}")
        if "verified" in c:
            notes.append("verified" if c["verified"] else "VERIFY FAILED")
        if "graphs" in c:
            notes.append(f"{c['graphs']} graphs")
        if "later_failure" in c:
            notes.append(f"run {c['runs'] + 1} failed: {c['later_failure']}")
        tm = c.get("traced_peak_mib")
        nodes = f"{c['nodes']:,}" if "nodes" in c else ""
        edges = f"{c['edges']:,}" if "edges" in c else ""
        lines.append(f"{head} {nodes} | {edges} | {c['median_s']:.2f} | {c['median_cpu_s']:.2f} | "
                     f"{c['min_s']:.2f} / {c['max_s']:.2f} | "
                     f"{c['runs']} | {c['maxrss_mib']:.0f} | {'' if tm is None else f'{tm:.0f}'} | "
                     f"{c.get('load1', 0):.1f} | {'; '.join(notes)} |")
    return lines


def render_appendix(rows: list[dict], args, state0: dict, state1: dict, command: str, skipped: list[str]) -> str:
    """A section appended to an existing report (``--append``): same columns and method, its own command and load."""
    end = ("still running at " if state1.get("running") else "to ") + state1["time"]
    lines = ["", f"## Added by `{command}`", "",
             f"Measured {state0['time']} {end}; load average (1/5/15 min) {state0['load']} at start and "
             f"{state1['load']} at the end; medians of {args.runs} runs, each in a fresh "
             + ("forked " if args.fork else "") + "subprocess, as above.", ""] + table(rows)
    if skipped:
        lines += ["", f"Not run (time budget): {', '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def render(rows: list[dict], args, state0: dict, state1: dict, command: str, skipped: list[str] = ()) -> str:
    end = ("still running at " if state1.get("running") else "to ") + state1["time"]
    lines = [f"`{command}`", "", "# Benchmark suite: load, fit, sample, audit, verify", "",
             f"Measured {state0['time']} {end} on {state0['machine']}, {state0['cores']} cores, "
             f"{state0['mem']} RAM, Python {state0['python']}, one thread per process. The cores are shared with "
             f"other jobs: load average (1/5/15 min) {state0['load']} at start and {state1['load']} at the end "
             "(the `load` column is the 1-min load average when the cell started), so wall times are upper bounds "
             "for an idle machine.", "",
             f"Every time is the **median of {args.runs} runs, each in a fresh subprocess** (`benchmarks/suite.py`; "
             "the `runs` column says where fewer ran)"
             + (", forked from a parent that has done the imports once (`--fork`: a new process with its own "
                "memory and rusage, but no per-run interpreter start-up)" if getattr(args, "fork", False) else "")
             + ": wall time of the stage alone. Input loading and module "
             "imports happen before the timer, including the accounting libraries that `graphrelease.privacy` "
             "imports lazily on first use; that one-time cost, which a fresh CLI process pays once, is the "
             "`imports` rows. Peak RSS = max `ru_maxrss` over the runs (whole process, incl. the "
             "~0.25-0.45 GiB Python/numpy/torch runtime); every run is capped at 24 GiB of address space. "
             + ("tracemalloc peak = one extra run with `tracemalloc` on (Python objects + numpy buffers allocated "
                "during the stage; torch tensors not traced), not timed." if not args.no_trace else
                "Run with `--no-trace`: tracemalloc slows Python-heavy stages by orders of magnitude (a Cora "
                "verify: 0.06 s untraced, 59.5 s traced), so the tracemalloc column is empty and peak RSS is the "
                "memory figure."),
             "", "Stages: `imports` = torch + graphrelease + accounting libraries; `imports_accounting` = "
             "`dp_accounting` + `opacus.accountants` alone; `load` = `read_graph`; `fit` = "
             f"`synthesize(..., epsilon={args.epsilon:g})` (fit + one sample + certified release written); "
             "`sample` = `sample_release(release, 1)`; `verify` = `verify_release` with input and key; `audit` = "
             "`run_audit` (statistics + 3-4-node motifs + link-inference attack, `fast=True`; collections: "
             "statistics + motifs + MMD).", "",
             "`median s` is wall time; `CPU s` is the median CPU time (user + system) of the stage's process, which "
             "does not count waiting for a core and is the better figure on a loaded machine.", "",
             ] + table(rows)
    lines += ["", "## Not run", ""]
    if skipped:
        lines.append(f"The time budget (`--budget-min {args.budget_min:g}`) ran out before these cells "
                     f"(dataset x method, in the planned order): {', '.join(skipped)}.")
    else:
        lines.append("Every planned cell ran (failures and timeouts are rows above)." if not state1.get("running")
                     else "(run in progress: this report is rewritten after every cell)")
    lines += ["", "## Reference implementations", "",
              "The papers' reference implementations (thupchnsky/dp-gnn, sisaman/GAP, Emory-AIMS/DPAR, "
              "Graph-COM/Node_DP, haonan3/Secure-Network-Release-with-Link-Privacy) cannot be fetched on this "
              "machine (no network beyond package registries), so no our/their time ratio was measured and none "
              "is reported.", "",
              "Same-run baselines that ARE installed here were timed on the same input by the component "
              "benchmarks (not re-measured by this suite): 3-4-node graphlet counts on Cora, ours vs a networkx "
              "pure-Python ESU: ours/theirs = 0.043 / 13.2 CPU s (303x faster; `reports/audit_stats.md`, "
              "section 2); the DP-SGD clipped-gradient step on the same MLP and batch of 256, our `torch.func` "
              "engine vs opacus `GradSampleModule` + `DPOptimizer.step`: ours/theirs = 823.8 / 962.1 ms = 0.86 "
              "(`reports/dpsgd_throughput.md`; the opacus row includes its optimizer step, ours does not include "
              "noise and the update, so this ratio slightly favours us).", "",
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
    p.add_argument("--no-audit", action="store_true", help="skip the audit stage (e.g. re-measuring one method)")
    p.add_argument("--large-audit-runs", type=int, default=None,
                   help=f"runs of the audit on {', '.join(sorted(LARGE))} (default: --runs)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--slow-timeout", type=float, default=None,
                   help=f"seconds per run for {', '.join(sorted(SLOW))} (default: --timeout); a timeout is "
                        "reported as a measured limit and the cell's remaining runs are skipped")
    p.add_argument("--budget-min", type=float, default=None,
                   help="start no new cell after this many minutes; the report lists the cells left out")
    p.add_argument("--fork", action="store_true",
                   help="fork each run from this (pre-imported) process instead of starting a new interpreter "
                        "(suite.measure: cuts ~20 s of start-up per run on a loaded machine)")
    p.add_argument("--append", action="store_true",
                   help="append this run's cells as a new section of --out (with its own command and load) "
                        "instead of rewriting the report; no imports rows")
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
    t_start = time.monotonic()

    def log(spec: dict, r: dict) -> None:
        short = {k: v for k, v in r.items() if k in ("seconds", "cpu_seconds", "maxrss_mib", "traced_peak_mib", "error")}
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.1f} "
              f"{spec.get('dataset', spec.get('path'))} {spec.get('method', '-')} {spec['stage']}"
              f"{' (traced)' if spec.get('trace') else ''}: {json.dumps(short)}", flush=True)

    def base_of(ds: str) -> dict:
        return {"path": ds, "dataset": Path(ds).stem} if ds not in DATASETS else {"dataset": ds}

    def run_cell(spec: dict, runs: int) -> dict:
        load1 = os.getloadavg()[0]
        timeout = args.slow_timeout if spec.get("method") in SLOW and args.slow_timeout else args.timeout
        out = cell(spec, runs, trace, timeout, log, args.inline, args.fork)
        out["load1"] = load1
        return out

    if args.fork:
        warm()
    state0 = machine_state()
    rows: list[dict] = []
    skipped: list[str] = []
    # The one-time import cost, measured apart so that it does not swamp the per-stage times (see suite.py).
    prior = Path(args.out).read_text() if args.append and Path(args.out).exists() else None
    for st in () if args.append else ("imports", "imports_accounting"):
        rows.append(dict(dataset="-", stage=st, result=run_cell({"stage": st}, args.runs)))
    audited: set[str] = set()
    cells = plan(datasets, methods)
    for i, (ds, m) in enumerate(cells):
        if args.budget_min is not None and time.monotonic() - t_start > 60 * args.budget_min:
            skipped += [f"{d} x {mm or 'load'}" for d, mm in cells[i:]]
            break
        base = base_of(ds)
        if m is None:
            rows.append(dict(base, stage="load", result=run_cell(dict(base, stage="load"), args.runs)))
        elif not accepts(m, base["dataset"]):
            rows.append(dict(base, method=m, stage="fit", result={"na": "takes one graph, not a collection "
                                                                   "(per-graph releases: `graphrelease batch`, "
                                                                   "reports/batch.md)"}))
        else:
            rel = str(work / f"{base['dataset']}_{m}")
            spec = dict(base, method=m, release=rel, epsilon=args.epsilon)
            fit = run_cell(dict(spec, stage="fit"), args.runs)
            rows.append(dict(base, method=m, stage="fit", result=fit))
            if "error" not in fit:
                stages = ["sample", "verify"] + (["audit"] if not args.no_audit and (args.audit_all or ds not in audited)
                                                 else [])
                for st in stages:
                    runs = args.runs
                    if st == "audit" and base["dataset"] in LARGE and args.large_audit_runs:
                        runs = args.large_audit_runs
                    rows.append(dict(base, method=m, stage=st, result=run_cell(dict(spec, stage=st), runs)))
                audited.add(ds)
        write_report(rows, args, state0, command, skipped, prior=prior)
    state1 = machine_state()
    text = write_report(rows, args, state0, command, skipped, state1, prior=prior)
    print(text)
    results = [r["result"] for r in rows if "na" not in r["result"]]
    return 1 if results and all("error" in r for r in results) else 0


def write_report(rows, args, state0, command, skipped, state1=None, prior: str | None = None) -> str:
    state1 = state1 or dict(machine_state(), running=True)
    if args.append:  # the new section goes before the closing sections of the report it extends
        section = render_appendix(rows, args, state0, state1, command, skipped)
        prior = prior or ""
        cut = prior.find("\n## Reference implementations")
        text = prior + section if cut < 0 else prior[:cut] + section + prior[cut:]
    else:
        text = render(rows, args, state0, state1, command, skipped)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
