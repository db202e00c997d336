"""``dp_bter`` on graphs of near-uniform degrees: lattices, road-like grids, small-world rings, cliques and random
graphs (issue 15's "build for the general case"; none of them is in ``../shared/data``).

Three arms on the same seeds, in the same run:

* ``before``: Chung-Lu endpoints and closures that move degrees everywhere, and the cumulative-count splice only
  where a count at degree <= 2 is large (``EXACT_DEGREE_DISPERSION`` < 0, ``SPLICE_MIN_SHARE`` = inf);
* ``sorted``: the defaults, but with the affinity groups cut from the degree-sorted order on the exact-degree path
  too (as before structure log item 34);
* ``now``: the defaults (stubs and degree-preserving closures where the released degrees' variance is at most their
  mean, and there affinity groups of random members, one size per block; the splice also for a run of large counts
  above degree 2 where one degree holds 30% of the nodes and fewer than a large count lie below it).

Graphs are built with networkx (seeded, node ids permuted); metrics with igraph (triangles, transitivity, average
clustering with zeros for degree < 2, largest component, degree assortativity) and the structure report's degree KL
(1e-10 floor). Every cell is the median over ``--seeds`` seeded fits and samples (assortativity: over the releases
where it is defined, not exactly regular). Three heavy-tailed controls (a connectome-like and a collaboration-like
proxy, and Cora) show what the change leaves alone. Writes ``reports/regular_degrees.md``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_regular_degrees.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import graphrelease.generators.bter as bter  # noqa: E402
import graphrelease.generators.degree_postprocess as degree_postprocess  # noqa: E402
from bench_edge_dp import degree_kl  # noqa: E402
from bench_structure import load_dataset  # noqa: E402
from graphrelease.generators import GENERATORS  # noqa: E402
from graphrelease.graph import Graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from proxies import from_networkx, proxy_graph  # noqa: E402

REPORT = ROOT / "reports" / "regular_degrees.md"

FAMILIES = {
    "grid 40x40": lambda: nx.grid_2d_graph(40, 40),
    "triangular lattice": lambda: nx.triangular_lattice_graph(30, 60),
    "Watts-Strogatz k=10 p=0.05": lambda: nx.watts_strogatz_graph(2000, 10, 0.05, seed=1),
    "ring of 40 10-cliques": lambda: nx.ring_of_cliques(40, 10),
    "relaxed caveman 100x12": lambda: nx.relaxed_caveman_graph(100, 12, 0.1, seed=1),
    "G(2000, 0.005)": lambda: nx.gnp_random_graph(2000, 0.005, seed=1),
    "SBM 8x300": lambda: nx.stochastic_block_model(
        [300] * 8, [[0.08 if i == j else 0.003 for j in range(8)] for i in range(8)], seed=1),
    "random tree 2000": lambda: nx.random_labeled_tree(2000, seed=1),
    "bipartite G(1000, 1000, 0.004)": lambda: nx.bipartite.random_graph(1000, 1000, 0.004, seed=1),
    "Barabasi-Albert m=3": lambda: nx.barabasi_albert_graph(3000, 3, seed=1),
    "Holme-Kim m=4 p=0.7": lambda: nx.powerlaw_cluster_graph(3000, 4, 0.7, seed=1),
}
CONTROLS = {"connectome proxy (conn0)": lambda: proxy_graph("conn0"),
            "collaboration proxy (collab0)": lambda: proxy_graph("collab0"),
            "cora": lambda: load_dataset("cora")}
#: Left out of the summary's means for triangle-free inputs (their cells hold released values, not relative errors).
CLUSTERING_METRICS = ("triangles_re", "transitivity_re", "avg_clustering_re")
METRICS = ("degree_kl", "triangles_re", "transitivity_re", "avg_clustering_re", "edges_re", "lcc_drop",
           "assortativity_error")


def stats(graph: Graph) -> dict[str, float]:
    g = graph.to_igraph()
    comps = g.connected_components()
    return {"triangles": float(len(g.cliques(3, 3))), "transitivity": g.transitivity_undirected() if g.ecount() else 0.0,
            "avg_clustering": g.transitivity_avglocal_undirected(mode="zero"), "edges": float(g.ecount()),
            "lcc": max(comps.sizes()) / g.vcount(),
            "assortativity": g.assortativity_degree(directed=False) if g.ecount() else 0.0}


def relative(released: float, original: float) -> float:
    """|RE|, or the released value itself where the input's is 0 (a triangle-free input)."""
    return abs(released - original) / original if original else abs(released)


def measure(graph: Graph, epsilon: float, seeds: int, arm: str) -> tuple[dict[str, float], float, float]:
    saved = bter.EXACT_DEGREE_DISPERSION, degree_postprocess.SPLICE_MIN_SHARE, bter.affinity_groups
    if arm == "before":
        bter.EXACT_DEGREE_DISPERSION, degree_postprocess.SPLICE_MIN_SHARE = -1.0, float("inf")
    if arm == "sorted":
        bter.affinity_groups = lambda *a, **k: saved[2](*a, **{**k, "mixed": False})
    try:
        truth = stats(graph)
        rows, gates, cpu = [], [], []
        for seed in range(seeds):
            t0 = time.process_time()
            fitted = GENERATORS.get("dp_bter")(seed=100 + seed).fit(
                graph, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
            sample = fitted.sample(1, rng=np.random.default_rng(5 + seed))[0]
            cpu.append(time.process_time() - t0)
            gates.append(fitted._exact_degrees())
            got = stats(sample)
            rows.append({"degree_kl": degree_kl(graph.degrees(), sample.degrees()),
                         "triangles_re": relative(got["triangles"], truth["triangles"]),
                         "transitivity_re": relative(got["transitivity"], truth["transitivity"]),
                         "avg_clustering_re": relative(got["avg_clustering"], truth["avg_clustering"]),
                         "edges_re": relative(got["edges"], truth["edges"]),
                         "lcc_drop": max(truth["lcc"] - got["lcc"], 0.0),
                         "assortativity_error": abs(got["assortativity"] - truth["assortativity"])})
        return ({m: float(np.nanmedian([r[m] for r in rows])) for m in METRICS}, float(np.mean(gates)),
                float(np.median(cpu)))
    finally:
        bter.EXACT_DEGREE_DISPERSION, degree_postprocess.SPLICE_MIN_SHARE, bter.affinity_groups = saved


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--only", default="", help="graph titles to run, separated by ';' (default: all)")
    ap.add_argument("--report", default=str(REPORT))
    args = ap.parse_args(argv)
    only = set(args.only.split(";")) - {""}
    epsilons = [float(e) for e in args.epsilons.split(",")]
    lines = []
    summary: dict[str, dict[str, list[float]]] = {"before": {}, "sorted": {}, "now": {}}
    for title, build in list(FAMILIES.items()) + list(CONTROLS.items()):
        if only and title not in only:
            continue
        built = build()
        graph = from_networkx(built) if isinstance(built, nx.Graph) else built
        d = graph.degrees().astype(float)
        r_input = stats(graph)["assortativity"]
        for eps in epsilons:
            cells = {arm: measure(graph, eps, args.seeds, arm) for arm in ("before", "sorted", "now")}
            if title in FAMILIES:
                triangle_free = stats(graph)["triangles"] == 0
                for arm, (vals, _, _) in cells.items():
                    for m in METRICS:
                        if not (triangle_free and m in CLUSTERING_METRICS):
                            summary[arm].setdefault(m, []).append(vals[m])
            for arm, (vals, gate, cpu) in cells.items():
                row = (f"| {title} | {graph.num_nodes:,} | {d.var() / d.mean():.2f} | {r_input:+.2f} | {eps:g} | "
                       f"{arm} | {gate:.2f} | "
                       + " | ".join(f"{vals[m]:.3f}" for m in METRICS) + f" | {cpu:.1f} |")
                lines.append(row)
                print(row, flush=True)
    header = ("| graph | nodes | input variance / mean | input assortativity | epsilon | arm | exact share | "
              "degree KL | RE triangles | RE transitivity | RE avg clustering | RE edges | LCC drop | "
              "assortativity error | CPU s |\n"
              + "|---" * 15 + "|")
    mean_rows = "\n".join(
        f"| {arm} | " + " | ".join(f"{np.mean(summary[arm][m]):.3f}" for m in METRICS) + " |" for arm in summary)
    command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_regular_degrees.py" + (
        f" --epsilons {args.epsilons}" if args.epsilons != "1,4" else "") + (
        f" --seeds {args.seeds}" if args.seeds != 8 else "") + (f" --only '{args.only}'" if args.only else "")
    table = "\n".join(lines)
    text = f"""# dp_bter on near-uniform degrees (issue 15)

Regenerate with `{command}` (about a minute on one core).

`before` / `sorted` / `now`: the same seeded fits and samples without the exact-degree path, with it but with
degree-sorted affinity groups, and with it as shipped (random members, one group size per block; module docstring of
`benchmarks/bench_regular_degrees.py`). `exact share`: share of the fits whose released degrees took it (variance at
most `EXACT_DEGREE_DISPERSION` = 1 times the mean). RE where the input has no triangles is the released value itself.
Median of {args.seeds} seeded fits per cell. LCC drop = the input's largest-component share minus the release's (0 if
larger). Assortativity error = |degree assortativity of the release - the input's|.

{header}
{table}

Mean over the {len(FAMILIES)} near-uniform families and the epsilons (controls excluded; the clustering columns
without the three triangle-free inputs):

| arm | degree KL | RE triangles | RE transitivity | RE avg clustering | RE edges | LCC drop | assortativity error |
|---|---|---|---|---|---|---|---|
{mean_rows}
"""
    Path(args.report).write_text(text)
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
