"""Large-graph limits (issue 8 item 3): every stage on Slashdot and Tolokers, one fresh subprocess per measurement
(address space capped at 24 GiB, one thread), appended as JSON lines; reports/limits.md is written from them.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/limits.py [--datasets slashdot,tolokers] [--max-nodes 10000]
        [--methods chung_lu,...] [--out /tmp/limits.jsonl]

``--from-report reports/benchmarks.md`` prints, instead, the suite's rows for these datasets as the per-stage
tables of reports/limits.md (medians of the suite's fresh-process runs; no new measurement).

``--max-nodes`` measures on the induced subgraph of a uniformly random node subset (public seed 0) instead, for
scaling runs. One run per measurement (these are limits, not medians; the suite's medians are in
reports/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import measure  # noqa: E402

METHODS = ["chung_lu", "randomized_response", "dpdk", "tmf", "privgraph", "dp_dcsbm", "dpgvae"]


def tables_from_report(text: str, datasets: list[str]) -> str:
    """The suite report's rows for ``datasets`` as one table each: stage, method, wall / CPU median, peak RSS."""
    out = []
    for ds in datasets:
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
                if line.startswith(f"| {ds} |")]
        if not rows:
            continue
        out += [f"### {ds} ({rows[0][3]} nodes, {rows[0][4]} edges)", "",
                "| stage | method | median wall s | median CPU s | runs | peak RSS MiB | result |", "|---|---|---|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: (["load", "fit", "sample", "verify", "audit"].index(r[2]), r[1])):
            result = r[12] if len(r) > 12 else ""
            out.append(f"| {r[2]} | {r[1]} | {r[5]} | {r[6]} | {r[8]} | {r[9]} | {result or 'ok'} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--datasets", default="slashdot,tolokers")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--max-nodes", type=int, default=None)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--workdir", default="/tmp/graphrelease-limits")
    p.add_argument("--out", default="/tmp/graphrelease-limits.jsonl")
    p.add_argument("--from-report", default=None, help="print limits tables from a run_all.py report and exit")
    args = p.parse_args(argv)
    if args.from_report:
        print(tables_from_report(Path(args.from_report).read_text(), args.datasets.split(",")))
        return 0
    out = open(args.out, "a")

    def go(spec: dict) -> dict:
        if args.max_nodes:
            spec["max_nodes"] = args.max_nodes
        r = measure(spec, timeout=args.timeout)
        r.update(spec=spec, at=time.strftime("%H:%M:%S", time.gmtime()))
        out.write(json.dumps(r) + "\n")
        out.flush()
        print(json.dumps(r), flush=True)
        return r

    for ds in args.datasets.split(","):
        go({"stage": "load", "dataset": ds})
        for i, m in enumerate(args.methods.split(",")):
            rel = f"{args.workdir}/{ds}_{m}_{args.max_nodes or 'all'}"
            fit = go({"stage": "fit", "dataset": ds, "method": m, "release": rel})
            if i == 0 and "error" not in fit:  # the other stages do not depend on the method's fitting cost
                for st in ("sample", "verify", "audit"):
                    go({"stage": st, "dataset": ds, "method": m, "release": rel})
    return 0


if __name__ == "__main__":
    sys.exit(main())
