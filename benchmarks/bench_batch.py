"""Run a batch plan with an executor, time it, and append the figures to reports/batch.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_batch.py benchmarks/plans/imdb_multi.toml --executor local
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_batch.py benchmarks/plans/imdb_multi.toml --executor ray \
        --members 0:300

``--members A:B`` restricts the plan's collection members (same jobs otherwise), for a shorter run.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

from graphrelease.batch import load_plan, make_executor, run_plan
from graphrelease.batch.plan import parse_plan

REPORT = Path(__file__).resolve().parents[1] / "reports" / "batch.md"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("plan", type=Path)
    parser.add_argument("--executor", default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--members", default=None)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    if args.members:
        raw = tomllib.loads(args.plan.read_text())
        for item in raw["inputs"]:
            item["members"] = args.members
        raw["output"] = f"{raw['output']}-{args.executor}-{args.members.replace(':', '_')}"
        plan = parse_plan(raw, source=args.plan)
    else:
        plan = load_plan(args.plan)
    start = time.perf_counter()
    summary = run_plan(plan, executor=make_executor(args.executor, workers=args.workers), resume=args.resume,
                       force=not args.resume)
    seconds = time.perf_counter() - start
    done = sum(r.status == "done" for r in summary.results)
    skipped = sum(r.status == "skipped" for r in summary.results)
    per_job = sorted(r.seconds for r in summary.results if r.status == "done")
    median = per_job[len(per_job) // 2] if per_job else float("nan")
    worst = max((t.epsilon_composed or t.epsilon_sum) for t in summary.totals)
    line = (f"| {time.strftime('%Y-%m-%d %H:%M')} | {plan.name} | {args.members or 'all'} | {args.executor} x"
            f"{args.workers} | {len(plan.jobs)} | {done} | {skipped} | {len(summary.failed)} | {seconds:.0f} | "
            f"{median:.2f} | {worst:.3f} | {os.getloadavg()[0]:.1f} |")
    print(line)
    if not REPORT.exists():
        REPORT.write_text(
            "# Batch runs\n\nRegenerate a row: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_batch.py "
            "benchmarks/plans/imdb_multi.toml --executor local|ray [--members A:B] [--resume]`\n\n"
            "Each row is one run of the plan (2 cores; 'load' is the 1-minute load average at the end, other work "
            "shared the machine). 'max composed eps' is the largest per-input total (the accountant's composition "
            "of every release made from one ego network).\n\n"
            "| when | plan | members | executor | jobs | done | skipped (verified) | failed | wall s | "
            "median job s | max composed eps | load |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    with REPORT.open("a") as handle:
        handle.write(line + "\n")


if __name__ == "__main__":
    main()
