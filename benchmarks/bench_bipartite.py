"""``dp_bter`` on graphs whose hubs share neighbours instead of linking to each other: the sided sampler passes
measured against the DC-SBM pass alone (issue 15; structure log item 38).

A bank's customer-merchant transaction graph has no triangle: merchants do not trade with each other, customers do
not either. Its released triangle count and clustering sum say so (both are noise around 0), but a DC-SBM draw of its
degrees joins the merchants, the hubs, to each other, and every customer of two linked merchants closes a triangle:
the one-pass sampler released 28,870-132,781 triangles and average clustering 0.28-0.36 for 0 and 0 on three such
graphs at epsilon 1 (``reports/bipartite.md``), and the triangle estimate's capping correction multiplied counts at noise
level. ``bter.SAMPLER_PASSES`` adds a pass whose phase-2 edges join two sides only, run where the best draw is far
over both the released count and clustering sum, and ``dp_stats.CORRECTION_NOISE`` keeps the correction off counts
at noise level. Arms, on the same fit and draw seeds (every arm's certificate states the same mechanisms: the sampler
is post-processing of released values, and the estimate's rule post-processing of its two Laplace releases):

* ``before``: the code before item 38: one sampler pass, and the triangle estimate's half capping correction added
  whatever the count (``dp_stats.CORRECTION_NOISE`` set to minus infinity);
* ``one pass``: the count corrected only where it stands out of its noise, the sampler cut to its first pass;
* ``shipped``: both passes.

Graphs (:mod:`proxies`, ids permuted): ``trans0``/``trans1`` (5,200-node transaction graphs), ``trans1000_20000_0``
(21,000 nodes, 80k edges), the bipartite double covers of Facebook, LastFM and Cora (triangle-free, the datasets'
degrees twice over), K(10, 300), a Barabasi-Albert graph (3,000 nodes, m = 3: 308 triangles, a
count at noise level), and as controls, where no sided pass may run, Cora, LastFM, Chameleon and
Facebook themselves. Metrics with igraph on the release against the input: triangles (count), RE of transitivity and
average clustering where the input's are positive (else the release's values), degree assortativity, degree KL
(``bench_edge_dp.degree_kl``), edge RE; the released triangle count, the share of fits whose sampler ran the sided
pass, and the sample's CPU seconds. Medians over ``--seeds`` fits (fit seeds 900 + i, draw seeds i). Writes
``reports/bipartite.md``::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_bipartite.py
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import igraph as ig  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import graphrelease.generators.bter as bter  # noqa: E402
import graphrelease.generators.dp_stats as dp_stats  # noqa: E402
from bench_edge_dp import degree_kl  # noqa: E402
from bench_structure import load_dataset  # noqa: E402
from graphrelease.graph import Graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from proxies import from_networkx, is_proxy, proxy_graph  # noqa: E402

REPORT = ROOT / "reports" / "bipartite.md"
GRAPHS = ["trans0", "trans1", "trans1000_20000_0", "cover_facebook", "cover_lastfm", "cover_cora", "kbip10_300",
          "ba3000", "cora", "lastfm", "chameleon", "facebook"]
#: arm -> (sampler passes, the estimate's CORRECTION_NOISE, the hubs-apart pass of structure log item 40, which came
#: after this benchmark and is off in the arms that stand for the code before it)
ARMS = {"before": (bter.SAMPLER_PASSES[:1], -np.inf, False),
        "one pass": (bter.SAMPLER_PASSES[:1], dp_stats.CORRECTION_NOISE, False),
        "shipped": (bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS)}


def load(name: str) -> Graph:
    if name == "kbip10_300":
        return from_networkx(nx.complete_bipartite_graph(10, 300), name=name)
    if name == "ba3000":
        return from_networkx(nx.barabasi_albert_graph(3000, 3, seed=1), name=name)
    return proxy_graph(name) if is_proxy(name) else load_dataset(name)


def measure(graph: Graph) -> dict:
    g = graph.to_igraph()
    degrees = np.asarray(g.degree())
    wedges = float(np.sum(degrees * (degrees - 1) / 2))
    transitivity = g.transitivity_undirected() if wedges > 0 else 0.0
    return {"triangles": transitivity * wedges / 3, "transitivity": transitivity,
            "avg_clustering": float(np.mean(g.transitivity_local_undirected(mode="zero"))),
            "assortativity": g.assortativity_degree(directed=False), "degrees": degrees, "edges": g.ecount()}


def compare(m0: dict, m1: dict) -> dict:
    def rel_or_value(key: str) -> float:
        return abs(m1[key] - m0[key]) / m0[key] if m0[key] > 0 else m1[key]
    return {"triangles": m1["triangles"], "transitivity": rel_or_value("transitivity"),
            "avg_clustering": rel_or_value("avg_clustering"), "assortativity": m1["assortativity"],
            "kl": degree_kl(m0["degrees"], m1["degrees"]), "edges": abs(m1["edges"] - m0["edges"]) / m0["edges"]}


@contextlib.contextmanager
def arm(name: str):
    saved = bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS
    bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS = ARMS[name]
    try:
        yield
    finally:
        bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS = saved


#: The triangle weights these arms were measured with (``reports/bipartite.md``, ``reports/cliques_cores.md``): the
#: largest degree, the default before session 32. The arms compare sampler passes, so they keep the weights of the
#: figures that cite them; the median weights, the default since, are measured in the structure grid (log item 42).
TRIANGLE_WEIGHT = "largest"


def fit_and_sample(graph: Graph, epsilon: float, seed: int) -> tuple[bter.FittedBTER, Graph, float]:
    """The seeded fit (seed 900 + ``seed``, :data:`TRIANGLE_WEIGHT`), its one draw (seed ``seed``) and the draw's CPU
    seconds."""
    fitted = bter.DPBTER(seed=900 + seed, triangle_weight=TRIANGLE_WEIGHT).fit(
        graph, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
    t0 = time.process_time()
    release = fitted.sample(1, rng=np.random.default_rng(seed))[0]
    return fitted, release, time.process_time() - t0


def release_once(graph: Graph, epsilon: float, seed: int) -> tuple[Graph, dict]:
    """One seeded fit and draw: the release, its released count, whether the sampler ran the sided pass, CPU s."""
    draw = bter.FittedBTER._draw
    sided: list[float] = []

    def counted(self, rng, order, starts, rho, repulsion=0.0, hubs_apart=False):
        if not hubs_apart:  # the sided pass, not item 40's hubs-apart pass
            sided.append(repulsion)
        return draw(self, rng, order, starts, rho, repulsion, hubs_apart)

    bter.FittedBTER._draw = counted
    try:
        fitted, release, seconds = fit_and_sample(graph, epsilon, seed)
    finally:
        bter.FittedBTER._draw = draw
    return release, {"released": float(fitted.arrays["triangles"]), "sided": float(any(r > 0 for r in sided)),
                     "seconds": seconds}


def run_arms(graphs: list[str], epsilons: list[float], seeds: int, arms: dict, arm_context: Callable,
             release: Callable[[Graph, float, int], tuple[Graph, dict]]) -> dict:
    """Every graph x epsilon x arm, ``seeds`` seeded releases each (``release``: the release and its extra columns),
    measured against the input: ``{"cells": {(graph, epsilon, arm): rows}, "inputs": {graph: input's metrics}}``."""
    cells: dict[tuple[str, float, str], list[dict]] = {}
    inputs: dict[str, dict] = {}
    for name in graphs:
        graph = load(name)
        m0 = measure(graph)
        inputs[name] = {"nodes": graph.num_nodes, "edges": m0["edges"], "triangles": m0["triangles"],
                        "transitivity": m0["transitivity"], "avg_clustering": m0["avg_clustering"],
                        "assortativity": m0["assortativity"]}
        for epsilon in epsilons:
            for arm_name in arms:
                rows = []
                for s in range(seeds):
                    with arm_context(arm_name):
                        out, extra = release(graph, epsilon, s)
                    rows.append({**compare(m0, measure(out)), **extra})
                cells[(name, epsilon, arm_name)] = rows
                print(f"{name:18s} eps {epsilon:g} {arm_name:8s} " + "  ".join(
                    f"{k} {np.median([r[k] for r in rows]):.3f}" for k in rows[0]), flush=True)
    return {"cells": cells, "inputs": inputs}


def run(graphs: list[str], epsilons: list[float], seeds: int) -> dict:
    return run_arms(graphs, epsilons, seeds, ARMS, arm, release_once)


def input_table(inputs: dict) -> list[str]:
    lines = ["| graph | nodes | edges | triangles | transitivity | avg clustering | assortativity |",
             "|---|---|---|---|---|---|---|"]
    for name, m in inputs.items():
        lines.append(f"| {name} | {m['nodes']:,} | {m['edges']:,} | {m['triangles']:,.0f} | {m['transitivity']:.3f} "
                     f"| {m['avg_clustering']:.3f} | {m['assortativity']:+.3f} |")
    return lines


def arm_table(result: dict, epsilons: list[float], arms: dict, columns: list[tuple[str, str, str, Callable]]
              ) -> list[str]:
    """One row per graph and epsilon, each cell the arms' values joined by " / " (``columns``: header, row key,
    format, aggregate over the seeds)."""
    cells, inputs = result["cells"], result["inputs"]
    lines = ["| graph | epsilon | " + " | ".join(c[0] for c in columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for name in inputs:
        for eps in epsilons:
            lines.append(f"| {name} | {eps:g} | " + " | ".join(
                " / ".join(fmt.format(float(agg([r[key] for r in cells[(name, eps, a)]]))) for a in arms)
                for _, key, fmt, agg in columns) + " |")
    return lines


#: The metric columns of both benchmarks' tables (header, row key, format, aggregate).
METRIC_COLUMNS = [("released triangles", "released", "{:,.0f}", np.median),
                  ("triangles", "triangles", "{:,.0f}", np.median),
                  ("transitivity", "transitivity", "{:.3f}", np.median),
                  ("avg clustering", "avg_clustering", "{:.3f}", np.median),
                  ("assortativity", "assortativity", "{:+.3f}", np.median), ("degree KL", "kl", "{:.3f}", np.median),
                  ("edge RE", "edges", "{:.3f}", np.median)]


def render(result: dict, epsilons: list[float], seeds: int) -> str:
    lines = ["# `dp_bter` on graphs whose hubs share neighbours: the sided sampler passes", "",
             "Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_bipartite.py` "
             f"({seeds} seeded fits per cell, medians; arms, graphs and metrics in the script's docstring). Structure "
             "log item 38 (`benchmarks/notes/structure_fidelity_log.md`) reads these tables.", "",
             "## The inputs", ""] + input_table(result["inputs"])
    lines += ["", "## Before / one pass / shipped", "",
              "Transitivity and average clustering: relative error where the input's is positive, else the release's "
              "value. \"released\": the released triangle count; \"sided\": share of the fits whose sampler ran "
              "the sided pass.", ""]
    lines += arm_table(result, epsilons, ARMS, METRIC_COLUMNS + [("sided", "sided", "{:.2f}", np.median),
                                                                 ("sample CPU s", "seconds", "{:.1f}", np.median)])
    return "\n".join(lines) + "\n"


def bench_main(doc: str, graphs: list[str], seeds: int, run: Callable, render: Callable, report: Path) -> None:
    """The command line of both benchmarks: ``--graphs``, ``--epsilons``, ``--seeds``, ``--no-report``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--graphs", default=",".join(graphs))
    parser.add_argument("--epsilons", default="1,4")
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--no-report", action="store_true", help="print only")
    args = parser.parse_args()
    epsilons = [float(x) for x in args.epsilons.split(",")]
    result = run(args.graphs.split(","), epsilons, args.seeds)
    if not args.no_report:
        report.write_text(render(result, epsilons, args.seeds))
        print(f"wrote {report}")


def main() -> None:
    bench_main(__doc__, GRAPHS, 3, run, render, REPORT)


if __name__ == "__main__":
    main()
