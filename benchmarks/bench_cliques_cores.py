"""``dp_bter`` on graphs made of near-cliques and on a dense core amid a periphery: the affinity groups' edge cap and
the hubs-apart sampler pass measured against the code before them (issue 15; structure log item 40).

Two kinds of graph on which session 31's probe (seeded fits) found the sampler far from the released triangle count,
at epsilon 1 and 4 alike, where the count itself was near the truth (within 3% on the caveman graph; within 2% at
epsilon 4 on the core-periphery graph, 19-27% low in the median at 1):

* near-cliques (a caveman graph, a ring of cliques): the affinity groups could take at most 90% of the released
  edges, and these inputs hold 96-98% of theirs inside their cliques; the draws stayed 12-24% short of the count.
  ``bter.affinity_edge_cap`` now leaves the groups all but ``GROUP_JOIN_EDGES`` edges per group where that is more;
* a dense core amid a periphery that links to the core only: a DC-SBM of its degrees joins the core more densely than
  the input and the periphery to itself; its draws held three times the released count, and the swaps left 1.6 times
  it. Its clustering sum
  was met, so the bipartite pass of item 38 never ran. ``bter.HUBS_APART_PASS``: where the swaps leave the count far
  over, a pass whose phase 2 joins each block's hubs to the rest only competes, kept only if nearer the count, no
  farther from the clustering sum (beyond one Laplace scale of it, since item 42) and with no fewer wedges (the hubs
  keep their degrees).

Arms, on the same fit and draw seeds (every arm's certificate states the same mechanisms: the sampler is
post-processing of released values):

* ``before``: the 90% cap and no hubs-apart pass (``GROUP_JOIN_EDGES`` infinite, ``HUBS_APART_PASS`` off);
* ``cap``: the new cap alone;
* ``shipped``: both.

Graphs (:mod:`proxies`, ids permuted): ``cave100_10`` and ``ring60_8`` (near-cliques), ``core0`` and ``core1`` (the
core-periphery graph), ``windmill200_4`` (a hub whose triangles the count's cap biases low: the pass may run there and
must not be kept), and as controls, where neither change may act, a Barabasi-Albert graph (3,000 nodes, m = 3), the
collaboration and e-mail proxies, Cora, LastFM, Chameleon and Facebook. Metrics with igraph on the release against the
input, as in ``bench_bipartite.py``, plus the share of fits whose sampler ran the hubs-apart pass and the share whose
release is that pass's draw. Medians over ``--seeds`` fits (fit seeds 900 + i, draw seeds i). Writes
``reports/cliques_cores.md``::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cliques_cores.py
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import graphrelease.generators.bter as bter  # noqa: E402
from bench_bipartite import (  # noqa: E402
    METRIC_COLUMNS,
    arm_table,
    bench_main,
    fit_and_sample,
    input_table,
    run_arms,
)
from graphrelease.graph import Graph  # noqa: E402

REPORT = ROOT / "reports" / "cliques_cores.md"
GRAPHS = ["cave100_10", "ring60_8", "core0", "core1", "windmill200_4", "ba3000", "collab0", "email0", "cora",
          "lastfm", "chameleon", "facebook"]
#: arm -> (GROUP_JOIN_EDGES, HUBS_APART_PASS)
ARMS = {"before": (np.inf, False), "cap": (bter.GROUP_JOIN_EDGES, False),
        "shipped": (bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS)}


@contextlib.contextmanager
def arm(name: str):
    saved = bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS
    bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS = ARMS[name]
    try:
        yield
    finally:
        bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS = saved


def release_once(graph: Graph, epsilon: float, seed: int) -> tuple[Graph, dict]:
    """One seeded fit and draw: the release, its released count, whether the hubs-apart pass ran and was kept, CPU s."""
    decide = bter.keep_hubs_apart
    decisions: list[bool] = []

    def watched(*args, **kwargs) -> bool:
        decisions.append(decide(*args, **kwargs))
        return decisions[-1]

    bter.keep_hubs_apart = watched
    try:
        fitted, release, seconds = fit_and_sample(graph, epsilon, seed)
    finally:
        bter.keep_hubs_apart = decide
    return release, {"released": float(fitted.arrays["triangles"]), "hub_pass": float(bool(decisions)),
                     "kept": float(any(decisions)), "seconds": seconds}


def run(graphs: list[str], epsilons: list[float], seeds: int) -> dict:
    return run_arms(graphs, epsilons, seeds, ARMS, arm, release_once)


def render(result: dict, epsilons: list[float], seeds: int) -> str:
    lines = ["# `dp_bter` on near-cliques and on a dense core: the groups' edge cap and the hubs-apart pass", "",
             "Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cliques_cores.py` "
             f"({seeds} seeded fits per cell, medians; arms, graphs and metrics in the script's docstring; the "
             "largest-degree triangle weights, `bench_bipartite.TRIANGLE_WEIGHT`). Structure log items 40 and 42 "
             "(`benchmarks/notes/structure_fidelity_log.md`) read these tables; item 42 re-ran them after the "
             "hubs-apart keep rule's noise allowance.", "",
             "## The inputs", ""] + input_table(result["inputs"])
    lines += ["", "## Before / cap / shipped", "",
              "Transitivity and average clustering: relative error where the input's is positive, else the release's "
              "value. \"released\": the released triangle count (the same fit in every arm); \"hub pass\": share of "
              "the fits whose sampler ran the hubs-apart pass; \"kept\": share whose release is that pass's draw.", ""]
    lines += arm_table(result, epsilons, ARMS, METRIC_COLUMNS + [
        ("hub pass", "hub_pass", "{:.2f}", np.mean), ("kept", "kept", "{:.2f}", np.mean),
        ("sample CPU s", "seconds", "{:.1f}", np.median)])
    return "\n".join(lines) + "\n"


def main() -> None:
    bench_main(__doc__, GRAPHS, 5, run, render, REPORT)


if __name__ == "__main__":
    main()
