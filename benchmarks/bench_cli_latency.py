"""How fast the CLI answers a user's mistake: writes ``reports/cli_latency.md``.

Each command runs in a fresh process (the installed ``graphrelease`` entry point, as a user types it), ``--repeats``
times; the table gives the median and the worst wall time, and the load average at the start. Targets: a
wrong-option error under 1 s, ``graphrelease --help`` under 1.5 s.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cli_latency.py --repeats 7
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("graphrelease --help", ["--help"], 0, 1.5),
    ("graphrelease --version", ["--version"], 0, 1.0),
    ("inspect with a mistyped option (--epsilon)", ["inspect", "{graph}", "--epsilon", "1"], 2, 1.0),
    ("synth with a negative epsilon", ["synth", "{graph}", "--epsilon", "-1", "--out", "{tmp}/r"], 2, 1.0),
    ("synth with epsilon 1e9", ["synth", "{graph}", "--epsilon", "1e9", "--out", "{tmp}/r"], 2, 1.0),
    ("train with delta 2", ["train", "{graph}", "--epsilon", "1", "--delta", "2", "--out", "{tmp}/m"], 2, 1.0),
    ("synth with an unknown option", ["synth", "{graph}", "--epsilonn", "1", "--out", "{tmp}/r"], 2, 1.0),
    ("synth on a missing file", ["synth", "{tmp}/missing.csv", "--nodes", "3", "--epsilon", "1", "--out", "{tmp}/r"],
     2, 1.0),
    ("budget with a missing schedule", ["budget", "--noise-multiplier", "1"], 2, 1.0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "reports" / "cli_latency.md"))
    args = parser.parse_args()
    exe = shutil.which("graphrelease", path=str(Path(sys.executable).parent)) or "graphrelease"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "g.csv"
        graph.write_text("0,1\n1,2\n")
        for label, argv, expected_rc, target in CASES:
            cmd = [exe] + [a.format(graph=graph, tmp=tmp) for a in argv]
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, env=env)
                times.append(time.perf_counter() - start)
                if done.returncode != expected_rc:
                    raise SystemExit(f"{label}: exit {done.returncode}, expected {expected_rc}\n{done.stderr[-500:]}")
            med, worst = statistics.median(times), max(times)
            rows.append((label, med, worst, target))
            print(f"{label:45s} median {med:.3f}s  worst {worst:.3f}s  target {target}s", flush=True)
    lines = ["# CLI latency: how fast a mistake is answered", "",
             f"Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cli_latency.py --repeats "
             f"{args.repeats}`", "",
             f"Fresh process per run (the `graphrelease` entry point), {args.repeats} runs each; load average at the "
             f"start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on 2 cores shared with other work, so these are "
             "upper bounds. Option checks run before numpy, scipy or torch are imported.", "",
             "| command | median wall s | worst wall s | target s | met |", "|---|---|---|---|---|"]
    lines += [f"| {label} | {med:.3f} | {worst:.3f} | {target} | {'yes' if med < target else 'NO'} |"
              for label, med, worst, target in rows]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
