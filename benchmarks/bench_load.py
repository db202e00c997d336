"""Load time and peak memory of the public reader on the two largest single graphs.

Usage: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_load.py [--repeats 5] [--out reports/load.md]``

For each file, a fresh subprocess (so memory figures are not polluted by earlier loads) imports
``graphrelease.io``, loads the file once untimed (measuring memory), then times ``read_graph`` ``--repeats`` times
(median reported). Memory figures:

* ``tracemalloc`` peak during one load (Python objects and numpy buffers allocated by the reader);
* process peak RSS (``ru_maxrss``) after loading, and the RSS baseline after imports, so the difference is
  what loading added at its peak.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", REPO.parent / "shared" / "data"))
FILES = ["raw/soc-Slashdot0902.txt.gz", "single/tolokers.npz"]

_CHILD = r"""
import json, resource, sys, time, tracemalloc
import torch
torch.set_num_threads(1)
from graphrelease.io import read_graph
path, repeats = sys.argv[1], int(sys.argv[2])
base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
result = read_graph(path)
_, traced_peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
del result
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    result = read_graph(path)
    times.append(time.perf_counter() - t0)
    del result
g = read_graph(path).data
print(json.dumps({"times": times, "traced_peak": traced_peak, "base_rss_kib": base_rss, "peak_rss_kib": peak_rss,
                  "nodes": g.num_nodes, "edges": g.num_edges}))
"""


def measure(path: Path, repeats: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(repeats)], cwd=REPO, env=env, check=True,
        capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "load.md")
    args = parser.parse_args()
    command = f"OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_load.py --repeats {args.repeats}"
    rows = []
    for rel in FILES:
        path = DATA / rel
        r = measure(path, args.repeats)
        times = r["times"]
        row = {
            "file": rel,
            "size_mib": path.stat().st_size / 2**20,
            "nodes": r["nodes"],
            "edges": r["edges"],
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
            "traced_peak_mib": r["traced_peak"] / 2**20,
            "rss_added_mib": (r["peak_rss_kib"] - r["base_rss_kib"]) / 1024,
            "peak_rss_mib": r["peak_rss_kib"] / 1024,
        }
        rows.append(row)
        print(
            f"{rel}: median {row['median_s']:.2f}s (min {row['min_s']:.2f}, max {row['max_s']:.2f}) over "
            f"{len(times)} runs; tracemalloc peak {row['traced_peak_mib']:.0f} MiB; RSS +{row['rss_added_mib']:.0f} MiB "
            f"(process peak {row['peak_rss_mib']:.0f} MiB)"
        )
    load = os.getloadavg()
    lines = [
        f"`{command}`",
        "",
        "# Load time and peak memory of `graphrelease.io.read_graph`",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} "
        f"({os.cpu_count()} cores shared with other jobs; load average at the end {load[0]:.1f}), Python "
        f"{platform.python_version()}, one thread. Times: wall clock of `read_graph` (parse + canonicalise), median "
        f"of {args.repeats} runs in one process after one untimed load. Memory: `tracemalloc` peak during one load "
        f"(Python objects + numpy buffers), and growth of the process peak RSS over the post-import baseline.",
        "",
        "| file | size (MiB) | nodes | undirected edges | median (s) | min / max (s) | tracemalloc peak (MiB) | peak RSS growth (MiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['file']} | {row['size_mib']:.1f} | {row['nodes']:,} | {row['edges']:,} | {row['median_s']:.2f} | "
            f"{row['min_s']:.2f} / {row['max_s']:.2f} | {row['traced_peak_mib']:.0f} | {row['rss_added_mib']:.0f} |"
        )
    lines += [
        "",
        "Slashdot is a 3.1 MiB gzip of a 948,464-row directed edge list with CRLF line ends and self-loops; it is "
        "read by the vectorised numeric path (`graphrelease/io/table.py: fast_numeric`: one `bytes.translate` check, "
        "token counts per line with numpy, one `np.fromstring`) and canonicalised by a sort-based unique. "
        "Tolokers is a pickle-free gnn-benchmark npz (CSR adjacency, 1,038,000 stored entries).",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
