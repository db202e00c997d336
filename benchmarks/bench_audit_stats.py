"""Benchmark the audit statistics: full graph_statistics on Facebook and Slashdot, 4-node orbits, motif counting vs
a networkx baseline, and the time-limited 5-node count.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit_stats.py [--repeats 3] [--report reports/audit_stats.md]

Prints every figure and writes the Markdown report. Times are wall-clock seconds on one thread (medians of
``--repeats`` runs where stated); the machine is shared, so the load average at start and end is recorded too.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics as pystats
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.audit import motifs as mo  # noqa: E402
from graphrelease.audit import statistics as st  # noqa: E402
from graphrelease.graph import Graph  # noqa: E402

DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def load(name: str) -> Graph:
    """Load through graphrelease.io.read_graph (the project's reader)."""
    from graphrelease.io import read_graph

    path = {"facebook": DATA / "raw" / "facebook_combined.txt.gz",
            "slashdot": DATA / "raw" / "soc-Slashdot0902.txt.gz",
            "cora": DATA / "single" / "cora.npz",
            "lastfm": DATA / "raw" / "lastfm_asia_edges.csv"}[name]
    return read_graph(path).data.without_private_metadata()


CPU: dict[str, float] = {}


def timed(fn, *args, **kwargs):
    """Wall seconds returned; CPU seconds of this process (what the shared machine cannot inflate much) kept in
    CPU['last']."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    CPU["last"] = time.process_time() - c0
    return out, time.perf_counter() - t0


def median_time(fn, repeats: int, *args, **kwargs):
    times, cpus, out = [], [], None
    for _ in range(repeats):
        out, t = timed(fn, *args, **kwargs)
        times.append(t)
        cpus.append(CPU["last"])
    CPU["median"] = pystats.median(cpus)
    return out, pystats.median(times), times


def networkx_esu_counts(nxg, max_size: int = 4) -> np.ndarray:
    """Baseline: pure-Python ESU over a networkx graph, classifying each connected induced 3-/4-node subgraph by its
    (edge count, sorted degree sequence), which identifies the 8 graphlets of sizes 3-4 uniquely."""
    sig_to_idx = {}
    for gl in mo.GRAPHLETS[:8]:
        deg = [0] * gl.size
        for a, b in gl.edges:
            deg[a] += 1
            deg[b] += 1
        sig_to_idx[(gl.size, len(gl.edges), tuple(sorted(deg)))] = gl.index
    counts = np.zeros(8)
    adj = {v: set(nxg[v]) for v in nxg}

    def classify(sub: list[int]) -> None:
        deg = [len(adj[v].intersection(sub)) for v in sub]
        counts[sig_to_idx[(len(sub), sum(deg) // 2, tuple(sorted(deg)))]] += 1

    def extend(sub: list[int], ext: set[int], root: int, nbhood: set[int]) -> None:
        if len(sub) >= 3:
            classify(sub)
        if len(sub) == max_size:
            return
        ext = set(ext)
        while ext:
            w = ext.pop()
            new_ext = ext | {u for u in adj[w] if u > root and u not in nbhood}
            extend(sub + [w], new_ext, root, nbhood | adj[w])

    for v in adj:
        extend([v], {u for u in adj[v] if u > v}, v, adj[v] | {v})
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--five-node-limit", type=float, default=60.0)
    parser.add_argument("--report", default=str(ROOT / "reports" / "audit_stats.md"))
    args = parser.parse_args()
    load_start = os.getloadavg()
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    say("## 1. Full graph_statistics (all keys incl. spectrum; no 5-node graphlets)")
    say()
    say("| graph | nodes | edges | median wall s | median CPU s | wall s per run | CPL/diameter |")
    say("|---|---|---|---|---|---|---|")
    stats_by_graph = {}
    for name in ("facebook", "slashdot"):
        g = load(name)
        g.to_igraph()  # conversion cached on the immutable graph, as in an audit run
        s, med, runs = median_time(st.graph_statistics, args.repeats, g)
        stats_by_graph[name] = s
        how = "exact" if s["cpl_exact"] else f"sampled, {st.PATH_SAMPLE_SOURCES} sources, CPL s.e. {s['cpl_stderr']:.4f}"
        say(f"| {name} | {g.num_nodes:,} | {g.num_edges:,} | {med:.1f} | {CPU['median']:.1f} | "
            f"{', '.join(f'{t:.1f}' for t in runs)} | {how} |")
    say()
    say("Breakdown (one run each, CPU seconds of this process):")
    say()
    say("| graph | triangles | 4-cycles | paths (CPL, diameter) | Louvain+modularity | eigenvector | spectrum | "
        "4-node orbits (per node) | NetGAN 4-cliques |")
    say("|---|---|---|---|---|---|---|---|---|")
    for name in ("facebook", "slashdot"):
        g = load(name)
        g.to_igraph()
        def cpu(fn, *a):
            timed(fn, *a)
            return CPU["last"]

        t_tri = cpu(st.triangle_count, g)
        t_c4 = cpu(st.four_cycle_count, g)
        t_path = cpu(st.path_statistics, g)
        t_louv = cpu(lambda: st.modularity(g, st.louvain_partition(g)))
        t_eig = cpu(st.eigenvector_centrality, g)
        t_spec = cpu(st.spectrum_summary, g)
        t_orb = cpu(mo.orbit_counts, g)
        t_k4 = cpu(st.four_clique_count, g)
        say(f"| {name} | {t_tri:.2f} | {t_c4:.2f} | {t_path:.2f} | {t_louv:.2f} | {t_eig:.2f} | {t_spec:.2f} | "
            f"{t_orb:.2f} | {t_k4:.2f} |")
    say()
    fb = stats_by_graph["facebook"]
    say(f"Facebook check values: triangles {fb['triangle_count']:,.0f} (SNAP: 1,612,010), average clustering "
        f"{fb['avg_clustering']:.4f} (SNAP: 0.6055), diameter {fb['diameter']:.0f} (SNAP: 8), "
        f"4-cycles {fb['square_count']:,.0f}.")
    sd = stats_by_graph["slashdot"]
    say(f"Slashdot: triangles {sd['triangle_count']:,.0f}, CPL {sd['cpl']:.3f} +- {sd['cpl_stderr']:.3f} (sampled), "
        f"diameter lower bound {sd['diameter']:.0f}.")
    say()

    say("## 2. 3-4-node graphlet counting vs a networkx baseline (Cora, 5,278 edges)")
    say()
    cora = load("cora")
    ours, t_ours, runs = median_time(mo.graphlet_counts, args.repeats, cora, sizes=(3, 4))
    nxg = cora.to_networkx()
    c_ours = CPU["median"]
    base, t_base = timed(networkx_esu_counts, nxg)
    c_base = CPU["last"]
    agree = bool(np.array_equal(ours.counts[:8], base))
    say("| method | wall s | CPU s | counts agree |")
    say("|---|---|---|---|")
    say(f"| graphrelease (closed-form orbit equations, median of {args.repeats}) | {t_ours:.3f} | {c_ours:.3f} | - |")
    say(f"| networkx pure-Python ESU (1 run) | {t_base:.1f} | {c_base:.1f} | {agree} |")
    say()
    say(f"Speed-up (CPU time): **{c_base / c_ours:,.0f}x** (wall: {t_base / t_ours:,.0f}x). Counts (3-path, triangle, "
        f"4-path, 3-star, 4-cycle, paw, diamond, 4-clique): {', '.join(f'{c:,.0f}' for c in ours.counts[:8])}.")
    # the seed's brute force (all node subsets + isomorphism) cannot finish on Cora; measure its throughput only
    nodes = list(nxg.nodes())
    t0 = time.perf_counter()
    checked = 0
    for combo in itertools.combinations(nodes, 4):
        sub = nxg.subgraph(combo)
        if sub.number_of_edges() >= 3:
            import networkx as nx

            nx.is_connected(sub)
        checked += 1
        if time.perf_counter() - t0 > 10:
            break
    rate = checked / (time.perf_counter() - t0)
    from math import comb

    say(f"The seed's own brute force (itertools.combinations over node subsets) checked {rate:,.0f} 4-node subsets/s "
        f"here with only a connectivity test (the seed also runs one isomorphism test per motif, so this is "
        f"optimistic); Cora has {comb(cora.num_nodes, 4):.2e} of them, i.e. at least "
        f"{comb(cora.num_nodes, 4) / rate / 3.15e7:,.0f} years (extrapolated from a 10 s run, not measured).")
    say()

    say("## 3. 5-node graphlets: exact ESU, and the time-limited sampling fallback")
    say()
    exact5, t_exact5 = timed(mo.graphlet_counts, cora, sizes=(5,), force="exact")
    say(f"Cora exact (igraph ESU, degree-ordered): {t_exact5:.1f} s wall, {CPU['last']:.1f} s CPU, {np.nansum(exact5.counts[8:]):,.0f} connected "
        f"5-node subgraphs.")
    samp5, t_samp5 = timed(mo.graphlet_counts, cora, sizes=(5,), force="sample", time_limit=10.0, seed=1)
    inside = (samp5.ci_low[8:] <= exact5.counts[8:]) & (exact5.counts[8:] <= samp5.ci_high[8:])
    rel = abs(np.nansum(samp5.counts[8:]) - np.nansum(exact5.counts[8:])) / np.nansum(exact5.counts[8:])
    say(f"Cora sampled with a 10 s limit: {t_samp5:.1f} s; {samp5.method[5]}; total off by {rel:.1%}; "
        f"{int(inside.sum())}/21 exact counts inside their 95% intervals.")
    results = {}
    for name in ("lastfm", "facebook"):
        g = load(name)
        res, t5 = timed(mo.graphlet_counts, g, sizes=(5,), time_limit=args.five_node_limit, seed=2)
        results[name] = res
        say(f"{name} ({g.num_edges:,} edges) with a {args.five_node_limit:.0f} s limit: {t5:.1f} s wall; "
            f"{res.method[5]}.")
    say()
    say("| graphlet | LastFM Asia estimate | 95% interval | Facebook estimate | 95% interval |")
    say("|---|---|---|---|---|")
    lf, fb5 = results["lastfm"], results["facebook"]
    for i in range(8, 29):
        say(f"| {mo.GRAPHLET_NAMES[i]} | {lf.counts[i]:.3e} | [{lf.ci_low[i]:.3e}, {lf.ci_high[i]:.3e}] | "
            f"{fb5.counts[i]:.3e} | [{fb5.ci_low[i]:.3e}, {fb5.ci_high[i]:.3e}] |")
    say()
    say("## Notes")
    say()
    say("- Anchor from the issue: igraph/networkit pieces of the PGB query set plus 4-node orbits take about 20 CPU-s "
        "on a 118k-edge graph. Here: Facebook (88k edges) full statistics plus per-node 4-node orbits are the sum "
        "of the section-1 median and the orbit column above.")
    say("- Reference-code findings kept out of our definitions: NetGAN's and the seed's `square_count` counts "
        "4-cliques (offered as `netgan_square_count`); NetGAN's clustering divides by claws (`netgan_clustering`); "
        "the seed's Gini ranks from 0 (subtracting 2/n) and its REDE adds 1e-4 inside the log; the seed's degree "
        "vector drops nodes of maximal clipped degree (`seed_degree_vector`); the seed's 29th motif lists edge 2-4 "
        "twice and no edge 1-4, so it is a second copy of the 5-clique-minus-an-edge and 5-cliques are never "
        "counted (our index 28 is the 5-clique).")
    say("- The 5-node fallback is the lifting sampler (Paramonov et al., KDD 2019): i.i.d. connected 5-node sets, "
        "each with its exactly computed sampling probability, Horvitz-Thompson counts and normal intervals. It "
        "replaced RAND-ESU start-node sampling, which could not finish one batch on Facebook in 60 s (igraph's "
        "deeper cut probabilities were also measured biased for 5-node motifs: 0.02-0.35 of the exact count on "
        "Cora). The limit includes an ESU pilot of up to a quarter of it.")
    say()
    load_end = os.getloadavg()
    header = [
        "# Audit statistics benchmark (internal)",
        "",
        "Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit_stats.py --repeats "
        f"{args.repeats} --five-node-limit {args.five_node_limit:.0f}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, one thread; "
        f"the 2 cores are shared with other jobs: load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at "
        "end, so times are upper bounds for an idle machine.",
        "",
    ]
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text("\n".join(header + lines) + "\n")
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
