"""The sampler's triangle listing: row-marker membership against the binary search it replaced (structure log item 35).

``dp_bter``'s draws list their triangles a dozen times per sample (the clustering sum and triangle count the steering
reads, :func:`graphrelease.generators.local_clustering.edge_apex_sums`). Each listing tests every oriented 2-path
``a -> b -> c`` for the edge ``a -> c``. The baseline is this code's fallback, the binary search of all edge keys
that did it before (still the path for graphs of more than 524,288 nodes, forced here with ``MIN_MARKER_ROWS``); the
new path looks each query up in a boolean marker of its own row. Both enumerate the 2-paths a chunk at a time and
return the triangles' edge positions, so the fallback is not the code before this change (whose figures are in
structure log item 35). Both run in the same process, in alternating order, and must return identical arrays.

Part 1: ``edge_apex_sums`` on the named graphs, median CPU seconds (``time.process_time``) of ``--runs`` runs each,
and the peak of one more run each under ``tracemalloc``.
Part 2: ``dp_bter`` fit + one sample of Slashdot at epsilon 1, ``--fits`` seeded fits per path (the same seeds, so
the releases must be identical), medians. Usage (writes ``reports/triangle_listing.md``)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_triangle_listing.py --runs 7 --fits 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_structure import load_dataset  # noqa: E402

from graphrelease.generators import local_clustering as lc  # noqa: E402
from graphrelease.generators.bter import DPBTER  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

GRAPHS = "slashdot,tolokers,squirrel,facebook,lastfm,chameleon"
MARKER_PATH = lc.MIN_MARKER_ROWS
SEARCH_PATH = 10 ** 12  # no graph gets this many rows per marker chunk: always the binary search


def timed(path: int, fn, *args):
    lc.MIN_MARKER_ROWS = path
    try:
        t0 = time.process_time()
        out = fn(*args)
        return time.process_time() - t0, out
    finally:
        lc.MIN_MARKER_ROWS = MARKER_PATH


def listing_row(name: str, runs: int) -> str:
    g = load_dataset(name)
    n, e = g.num_nodes, np.asarray(g.edges)
    search, marker = [], []
    for run in range(runs):
        first, second = (SEARCH_PATH, MARKER_PATH) if run % 2 == 0 else (MARKER_PATH, SEARCH_PATH)
        times = {}
        for path in (first, second):
            times[path] = timed(path, lc.edge_apex_sums, n, e)
        (ts, (s0, k0, t0)), (tm, (s1, k1, t1)) = times[SEARCH_PATH], times[MARKER_PATH]
        if not (np.array_equal(s0, s1) and np.array_equal(k0, k1) and t0 == t1):
            raise AssertionError(f"{name}: the two paths disagree")
        search.append(ts)
        marker.append(tm)
    s, m = float(np.median(search)), float(np.median(marker))
    peaks = []
    for path in (SEARCH_PATH, MARKER_PATH):
        tracemalloc.start()
        timed(path, lc.edge_apex_sums, n, e)
        peaks.append(tracemalloc.get_traced_memory()[1] / 2 ** 20)
        tracemalloc.stop()
    return (f"| {name} | {n:,} | {g.num_edges:,} | {t0:,} | {s:.3f} | {m:.3f} | {s / m:.2f} | {peaks[0]:.0f} | "
            f"{peaks[1]:.0f} |")


def release(graph, seed: int):
    t0 = time.process_time()
    fitted = DPBTER(seed=900 + seed).fit(graph, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
    t1 = time.process_time()
    (syn,) = fitted.sample(1, rng=np.random.default_rng(seed))
    t2 = time.process_time()
    return t1 - t0, t2 - t1, hashlib.sha256(np.ascontiguousarray(syn.edges).tobytes()).hexdigest()


def slashdot_rows(fits: int) -> list[str]:
    release(load_dataset("cora"), 0)  # warm-up: the first fit in a process pays for imports and first touches
    g = load_dataset("slashdot")
    cpu = {SEARCH_PATH: [], MARKER_PATH: []}
    for seed in range(fits):
        digests = set()
        for path in ((SEARCH_PATH, MARKER_PATH) if seed % 2 == 0 else (MARKER_PATH, SEARCH_PATH)):
            _, (fit, sample, digest) = timed(path, release, g, seed)
            cpu[path].append((fit, sample))
            digests.add(digest)
        if len(digests) != 1:
            raise AssertionError(f"slashdot seed {seed}: the two paths drew different releases")
    rows = []
    for path, label in ((SEARCH_PATH, "binary-search fallback"), (MARKER_PATH, "row marker")):
        fit, sample = np.median([c[0] for c in cpu[path]]), np.median([c[1] for c in cpu[path]])
        total = [a + b for a, b in cpu[path]]
        rows.append(f"| {label} | {fit:.1f} | {sample:.1f} | {np.median(total):.1f} | "
                    + " / ".join(f"{t:.1f}" for t in total) + " |")
    ratio = np.median([a + b for a, b in cpu[MARKER_PATH]]) / np.median([a + b for a, b in cpu[SEARCH_PATH]])
    return rows + ["", f"Identical releases for every seed; fit + sample median ratio marker / fallback: {ratio:.2f}."]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default=GRAPHS)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--fits", type=int, default=3)
    ap.add_argument("--report", default=str(ROOT / "reports" / "triangle_listing.md"))
    args = ap.parse_args()
    listing = [listing_row(name, args.runs) for name in args.graphs.split(",")]
    for line in listing:
        print(line, flush=True)
    slashdot = slashdot_rows(args.fits)
    print("\n".join(slashdot), flush=True)
    command = ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_triangle_listing.py "
               f"--graphs {args.graphs} --runs {args.runs} --fits {args.fits}")
    text = "\n".join([
        "# The sampler's triangle listing (issue 15, structure log item 35)", "", f"Regenerate with `{command}`.", "",
        f"Row-marker membership against this code's binary-search fallback (the search it replaced), in one "
        f"process, in alternating order; identical outputs asserted. Marker: {lc.MARKER_BYTES >> 20} MiB, binary "
        f"search below {MARKER_PATH} rows per chunk. Both paths enumerate at most {lc.PATH_CHUNK:,} 2-paths at a time "
        f"and return the triangles' edge positions; the code before the change is measured against the marker in "
        f"structure log item 35.",
        "", f"## `edge_apex_sums` (one listing), median CPU seconds of {args.runs} runs, traced peak of one", "",
        "| graph | nodes | edges | triangles | binary search | row marker | ratio | peak MiB, search | peak MiB, "
        "marker |", "|---|---|---|---|---|---|---|---|---|",
        *listing, "", f"## `dp_bter` fit + one sample of Slashdot at epsilon 1, {args.fits} seeded fits per path "
        "(CPU seconds, medians)", "", "| path | fit | sample | fit + sample | per fit |", "|---|---|---|---|---|",
        *slashdot, ""])
    tmp = Path(args.report).with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(args.report)


if __name__ == "__main__":
    main()
