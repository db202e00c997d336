"""``dp_bter`` with degree-mixed affinity groups: a sampler variant measured against the shipped one, not adopted
(structure log item 36, issue 15).

The shipped affinity groups hold nodes of one released-degree band (BTER). Two of the release's known gaps come
from that: it is more assortative than its input (LastFM +0.22 against +0.02), and on Facebook the release's Louvain
partition peels its near-clique groups off the label blocks (the NMI the labels carry is lost in the release). This
benchmark swaps the sampler's groups for another model, all else (the fit, every released value, the steering)
unchanged, so the certificate is the shipped one's: only post-processing of released values changes.

Arms, on the same fit and draw seeds:

* ``shipped``: the defaults.
* ``mixed``: in each block, the nodes whose released degree, randomly rounded like the shipped groups', is >= 2 are
  sorted by degree and dealt round-robin (alternating direction) into ``round(N / S)`` groups of about ``S =
  max(3, round(2 x their mean released degree) + 1)`` nodes, so every group spans the block's degree range; a node
  of released degree ``d`` joins ``ceil(d / (S - 1))`` groups (its own and random others of its block; at most all
  of them), its weight ``w = d / memberships`` in each. Inside a group a pair is an edge with probability
  ``min(1, rho_g phi_uv)``, ``phi_uv`` proportional to ``w_u w_v`` with mean 1 over the group's pairs (Chung-Lu
  inside the group: hubs link to most members, low-degree members mostly to the hubs). ``rho`` is bisected on the
  model's expected triangle count (``trace(P^3) / 6`` per group, summed: a pair two groups share, about 2% of
  Facebook's, counts in both) under the sampler's cap on affinity edges, and handed to the steering as the BTER
  densities with the same expected triangles, so its group / outside split reads this model. A pair drawn in two
  groups is one edge.
* ``mixed 0.3`` / ``mixed 0.6``: that share of the nodes (at random) is dealt as in ``mixed``; the rest goes through
  the shipped sorted cut (Erdos-Renyi groups at ``rho``).
* ``mixed g2`` / ``mixed g3``: ``mixed`` with ``phi_uv`` proportional to ``(w_u w_v)^gamma``, gamma 2 / 3 (still mean
  1 over the group's pairs): the heavier members' pairs saturate into a denser core, which holds more triangles per
  edge.
* ``cap 0.85``: the shipped groups with every group density capped at 0.85 (no group is a clique).

Metrics with igraph on the sampled graph against the input: relative errors of the triangle count, transitivity and
average clustering (zeros for degree < 2); the per-degree clustering error (node-weighted mean over log2 degree bins
of |mean local clustering in the release - in the input|); Louvain NMI (``audit.statistics.louvain_partition``,
seed 0); the input's Louvain partition scored on the release (relative modularity error); the structure report's
degree KL; degree assortativity. Medians over ``--seeds`` seeded fits (fit seeds 900 + i, draw seeds i). Writes
``reports/mixed_groups.md``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mixed_groups.py
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import igraph as ig  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import graphrelease.generators.bter as bter  # noqa: E402
from bench_edge_dp import degree_kl  # noqa: E402
from bench_structure import load_dataset  # noqa: E402
from graphrelease.audit import statistics as st  # noqa: E402
from graphrelease.generators.classical_common import pair_keys  # noqa: E402
from graphrelease.graph import Graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from proxies import proxy_graph  # noqa: E402

REPORT = ROOT / "reports" / "mixed_groups.md"
GRAPHS = ["facebook", "lastfm", "chameleon", "cora", "citeseer", "proxy:email0", "proxy:conn0", "proxy:collab0"]
#: (arm, epsilon, graphs): the grid this benchmark runs by default.
GRID = [("shipped", 1.0, GRAPHS), ("mixed", 1.0, GRAPHS),
        ("shipped", 4.0, ["facebook", "lastfm"]), ("mixed", 4.0, ["facebook", "lastfm"]),
        ("mixed 0.3", 1.0, ["facebook", "lastfm"]), ("mixed 0.6", 1.0, ["facebook", "lastfm"]),
        ("mixed g2", 1.0, GRAPHS), ("mixed g3", 1.0, GRAPHS),
        ("cap 0.85", 1.0, ["facebook", "lastfm", "chameleon", "proxy:collab0"])]


class MixedGroups:
    """The ``mixed`` arms' groups, densities and edges (replacing the three sampler functions while active)."""

    def __init__(self, share: float = 1.0, size_factor: float = 2.0, gamma: float = 1.0) -> None:
        self.share, self.size_factor, self.gamma = float(share), float(size_factor), float(gamma)
        self.starts: np.ndarray | None = None
        self.phis: list[np.ndarray] = []
        self.handed: np.ndarray | None = None
        self.multipliers: np.ndarray | None = None
        self.originals = (bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges)

    def groups(self, degrees, block_of, rng, *, min_degree=2, mixed=False):
        if mixed:  # the exact-degree path keeps its own groups
            self.starts = None
            return self.originals[0](degrees, block_of, rng, min_degree=min_degree, mixed=True)
        x = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
        block_of = np.asarray(block_of, dtype=np.int64)
        members: list[np.ndarray] = []
        er = 0  # the first `er` groups are the sorted cut's (Erdos-Renyi inside)
        if self.share < 1.0:
            sorted_nodes = rng.random(x.size) >= self.share
            order, starts = self.originals[0](np.where(sorted_nodes, x, 0.0), block_of, rng, min_degree=min_degree)
            members += [order[a:b] for a, b in zip(starts[:-1], starts[1:])]
            er = len(members)
            x_mixed = np.where(sorted_nodes, 0.0, x)
        else:
            x_mixed = x
        d = np.floor(x_mixed + rng.random(x.size)).astype(np.int64)
        for block in np.unique(block_of).tolist():
            nodes = np.flatnonzero((block_of == block) & (d >= min_degree))
            if nodes.size < 3:
                continue
            nodes = nodes[np.lexsort((rng.random(nodes.size), -d[nodes]))]
            size = max(3, int(round(self.size_factor * float(np.mean(x[nodes])))) + 1)
            count = max(1, int(round(nodes.size / size)))
            rounds = np.arange(nodes.size) // count
            slots = np.arange(nodes.size) % count
            slots = np.where(rounds % 2 == 0, slots, count - 1 - slots)
            block_groups = [list(nodes[slots == g]) for g in range(count)]
            if count > 1:
                extra = np.ceil(x[nodes] / (size - 1)).astype(np.int64) - 1
                for i in np.flatnonzero(extra > 0).tolist():
                    others = np.setdiff1d(np.arange(count), [slots[i]])
                    for g in rng.permutation(others)[:extra[i]].tolist():
                        block_groups[g].append(nodes[i])
            members += [np.asarray(m, dtype=np.int64) for m in block_groups]
        order = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum([m.size for m in members])]).astype(np.int64)
        memberships = np.maximum(np.bincount(order, minlength=x.size), 1).astype(np.float64)
        self.phis = []
        for g, m in enumerate(members):
            w = np.ones(m.size) if g < er else (x[m] / memberships[m]) ** self.gamma
            pair_sum = (w.sum() ** 2 - (w ** 2).sum()) / 2.0
            phi = (m.size * (m.size - 1) / 2.0) * np.outer(w, w) / max(pair_sum, 1e-12)
            np.fill_diagonal(phi, 0.0)
            self.phis.append(phi)
        self.starts = starts
        return order, starts

    def _expected(self, multipliers: np.ndarray) -> tuple[float, np.ndarray]:
        edges, triangles = 0.0, np.zeros(len(self.phis))
        for g, (phi, r) in enumerate(zip(self.phis, multipliers)):
            p = np.minimum(1.0, r * phi)
            edges += p.sum() / 2.0
            triangles[g] = np.einsum("ij,jk,ki->", p, p, p) / 6.0
        return edges, triangles

    def densities(self, starts, max_edges, triangles, power=0.0, shape=None):
        if self.starts is None or not np.array_equal(starts, self.starts):
            return self.originals[1](starts, max_edges, triangles, power, shape)
        sizes = np.diff(starts).astype(np.float64)
        if sizes.size == 0 or triangles <= 0:
            self.handed, self.multipliers = np.zeros(sizes.size), np.zeros(sizes.size)
            return self.handed
        c3 = sizes * (sizes - 1) * (sizes - 2) / 6
        ref = float(np.average(sizes, weights=np.maximum(c3, 1e-12))) if c3.sum() > 0 else 1.0
        relative = (sizes / ref) ** float(power) * (1.0 if shape is None else np.maximum(np.asarray(shape), 1e-6))
        lo, hi = 0.0, 1e4
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            edges, per_group = self._expected(mid * relative)
            if per_group.sum() > triangles or edges > max_edges:
                hi = mid
            else:
                lo = mid
        self.multipliers = lo * relative
        _, per_group = self._expected(self.multipliers)
        self.handed = np.cbrt(per_group / np.maximum(c3, 1e-12))
        return self.handed

    def sample(self, n, order, starts, rho, rng):
        if self.starts is None or not np.array_equal(starts, self.starts):
            return self.originals[2](n, order, starts, rho, rng)
        if self.handed is None or not np.array_equal(rho, self.handed):
            raise RuntimeError("densities not from this model")
        out = [np.zeros(0, dtype=np.int64)]
        for g, (phi, r) in enumerate(zip(self.phis, self.multipliers)):
            iu, ju = np.triu_indices(phi.shape[0], 1)
            keep = rng.random(iu.size) < np.minimum(1.0, r * phi[iu, ju])
            m = order[starts[g]:starts[g + 1]]
            out.append(pair_keys(np.stack([m[iu[keep]], m[ju[keep]]], axis=1), n))
        return np.unique(np.concatenate(out))  # a pair two groups share is one edge


@contextlib.contextmanager
def arm(name: str):
    saved = (bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges)
    try:
        if name.startswith("mixed"):
            option = name.split()[1] if " " in name else ""
            model = (MixedGroups(gamma=float(option[1:])) if option.startswith("g")
                     else MixedGroups(share=float(option) if option else 1.0))
            bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges = (
                model.groups, model.densities, model.sample)
        elif name.startswith("cap"):
            cap, original = float(name.split()[1]), saved[1]
            bter.group_densities = lambda *a, **k: np.minimum(original(*a, **k), cap)
        yield
    finally:
        bter.affinity_groups, bter.group_densities, bter.sample_affinity_edges = saved


def measure(graph: Graph) -> dict:
    g = graph.to_igraph()
    degrees = np.asarray(g.degree())
    local = np.asarray(g.transitivity_local_undirected(mode="zero"))
    bins = np.floor(np.log2(np.maximum(degrees, 1))).astype(np.int64)
    wedges = float(np.sum(degrees * (degrees - 1) / 2))
    transitivity = g.transitivity_undirected() if wedges > 0 else 0.0
    return {"triangles": transitivity * wedges / 3, "transitivity": transitivity, "avg_clustering": local.mean(),
            "profile": {int(b): (int((bins == b).sum()), float(local[bins == b].mean())) for b in np.unique(bins)},
            "assortativity": g.assortativity_degree(directed=False), "degrees": degrees,
            "louvain": st.louvain_partition(graph, seed=0), "igraph": g}


def compare(m0: dict, m1: dict) -> dict:
    def rel(key: str) -> float:
        return abs(m1[key] - m0[key]) / max(m0[key], 1e-12)
    g0, g1 = m0["igraph"], m1["igraph"]
    n = g0.vcount()
    profile_error = sum(count * abs(m1["profile"].get(b, (0, 0.0))[1] - c)
                        for b, (count, c) in m0["profile"].items()) / n
    q0 = g0.modularity(m0["louvain"])
    return {"triangles": rel("triangles"), "transitivity": rel("transitivity"), "avg_clustering": rel("avg_clustering"),
            "profile": profile_error, "nmi": ig.compare_communities(m0["louvain"], m1["louvain"], method="nmi"),
            "input_partition": abs(g1.modularity(m0["louvain"]) - q0) / q0,
            "kl": degree_kl(m0["degrees"], m1["degrees"]), "assortativity": m1["assortativity"]}


def mixing_statistic_noise(graph: Graph, quantile: float = 0.99, epsilons=(0.03, 0.1)) -> dict:
    """What a DP degree-mixing statistic would cost (the next step item 36 names; nothing here releases it).

    With degrees ``x`` clipped at ``D`` and fixed by an earlier release, one edge adds ``x_u x_v <= D^2`` to
    ``S_xy = sum_e x_u x_v``, and the mean and variance of ``x`` over edge ends follow from the released degrees
    alone (a node of degree ``x_v`` is ``x_v`` edge ends), so only ``S_xy`` needs noise. ``r_x = (S_xy / m -
    mu^2) / var`` is then the statistic a sampler would steer to. The input's true degrees stand in for the released
    ones here. Returns the input's ``r``, ``r_x`` and the standard deviation of ``r_x`` under Laplace noise
    (``sqrt(2) D^2 / (epsilon m var)``) at each epsilon."""
    e = graph.edges
    d = graph.degrees().astype(np.float64)
    m = float(e.shape[0])

    def r_of(x: np.ndarray) -> tuple[float, float]:
        mu = float((x * d).sum() / d.sum())
        var = float((x * x * d).sum() / d.sum()) - mu * mu
        return (float((x[e[:, 0]] * x[e[:, 1]]).sum()) / m - mu * mu) / var, var

    clip = float(np.quantile(d, quantile))
    r_x, var = r_of(np.minimum(d, clip))
    return {"r": r_of(d)[0], "clip": clip, "r_x": r_x,
            "sd": {eps: float(np.sqrt(2.0) * clip * clip / (eps * m * var)) for eps in epsilons}}


def load(name: str) -> Graph:
    if name.startswith("proxy:"):
        return proxy_graph(name[len("proxy:"):])
    return load_dataset(name)


def run(grid, seeds: int) -> dict:
    inputs: dict[str, tuple[Graph, dict]] = {}
    cells: dict[tuple[str, float, str], list[dict]] = {}
    for name, epsilon, graphs in grid:
        for graph_name in graphs:
            if graph_name not in inputs:
                graph = load(graph_name)
                inputs[graph_name] = (graph, measure(graph))
            graph, m0 = inputs[graph_name]
            rows = []
            t0 = time.process_time()
            with arm(name):
                for s in range(seeds):
                    fitted = bter.DPBTER(seed=900 + s).fit(graph, Budget(epsilon=epsilon, delta=1e-6,
                                                                         adjacency="edge"))
                    rows.append(compare(m0, measure(fitted.sample(1, rng=np.random.default_rng(s))[0])))
            cells[(name, epsilon, graph_name)] = rows
            print(f"{graph_name:14s} eps {epsilon:g} {name:10s} {time.process_time() - t0:6.1f} CPU-s  " + "  ".join(
                f"{k} {np.median([r[k] for r in rows]):.3f}" for k in rows[0]), flush=True)
    return {"cells": cells, "input_assortativity": {k: v[1]["assortativity"] for k, v in inputs.items()},
            "mixing_statistic": {k: mixing_statistic_noise(v[0]) for k, v in inputs.items()},
            "edges": {k: v[0].num_edges for k, v in inputs.items()}}


def render(result: dict, seeds: int) -> str:
    cells, r0 = result["cells"], result["input_assortativity"]

    def med(name, eps, graph, key):
        return float(np.median([r[key] for r in cells[(name, eps, graph)]]))

    def span(name, eps, graph, key):
        values = [r[key] for r in cells[(name, eps, graph)]]
        return f"{min(values):.3f} to {max(values):.3f}"

    keys = [("triangles", "RE triangles"), ("transitivity", "RE transitivity"), ("avg_clustering", "RE avg clust."),
            ("profile", "per-degree clust. error"), ("nmi", "Louvain NMI"),
            ("input_partition", "input-partition mod. RE"), ("kl", "degree KL"), ("assortativity", "assortativity")]
    lines = [
        "# `dp_bter` with degree-mixed affinity groups (measured, not adopted)",
        "",
        "Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mixed_groups.py` "
        f"({seeds} seeded fits per cell, medians; the arms and metrics are in the script's docstring). Structure log "
        "item 36 (`benchmarks/notes/structure_fidelity_log.md`) reads these tables.",
        "",
        "## Shipped -> mixed (every node in degree-mixed groups, Chung-Lu inside each group)",
        "",
        "| graph | epsilon | " + " | ".join(label for _, label in keys) + " | input assortativity |",
        "|---|---|" + "---|" * (len(keys) + 1),
    ]
    for (name, eps, graph) in cells:
        if name != "shipped" or ("mixed", eps, graph) not in cells:
            continue
        row = [f"{med('shipped', eps, graph, k):.3f} -> {med('mixed', eps, graph, k):.3f}" for k, _ in keys]
        lines.append(f"| {graph.replace('proxy:', '')} | {eps:g} | " + " | ".join(row) + f" | {r0[graph]:+.3f} |")
    lines += ["", "## Share of the nodes in mixed groups (the rest in the shipped sorted groups), epsilon 1", "",
              "| graph | arm | RE triangles | RE avg clust. | per-degree clust. error | Louvain NMI | assortativity "
              "(runs; input) |", "|---|---|---|---|---|---|---|"]
    for graph in GRAPHS:
        for name in ("shipped", "mixed 0.3", "mixed 0.6", "mixed"):
            if (name, 1.0, graph) not in cells or ("mixed 0.3", 1.0, graph) not in cells:
                continue
            lines.append(f"| {graph} | {name} | {med(name, 1.0, graph, 'triangles'):.3f} | "
                         f"{med(name, 1.0, graph, 'avg_clustering'):.3f} | {med(name, 1.0, graph, 'profile'):.3f} | "
                         f"{med(name, 1.0, graph, 'nmi'):.3f} | {med(name, 1.0, graph, 'assortativity'):.3f} "
                         f"({span(name, 1.0, graph, 'assortativity')}; {r0[graph]:+.3f}) |")
    lines += ["", "## The weight exponent gamma of the mixed groups (phi ~ (w_u w_v)^gamma), epsilon 1", "",
              "| graph | " + " | ".join(label for _, label in keys) + " |", "|---|" + "---|" * len(keys)]
    for graph in GRAPHS:
        arms = [a for a in ("shipped", "mixed", "mixed g2", "mixed g3") if (a, 1.0, graph) in cells]
        if len(arms) < 4:
            continue
        lines.append(f"| {graph.replace('proxy:', '')} (shipped / gamma 1 / 2 / 3) | " + " | ".join(
            " / ".join(f"{med(a, 1.0, graph, k):.3f}" for a in arms) for k, _ in keys) + " |")
    lines += ["", "## Shipped -> group densities capped at 0.85, epsilon 1", "",
              "| graph | RE triangles | RE avg clust. | per-degree clust. error | Louvain NMI | assortativity |",
              "|---|---|---|---|---|---|"]
    for graph in GRAPHS:
        if ("cap 0.85", 1.0, graph) in cells:
            lines.append(f"| {graph.replace('proxy:', '')} | " + " | ".join(
                f"{med('shipped', 1.0, graph, k):.3f} -> {med('cap 0.85', 1.0, graph, k):.3f}"
                for k in ("triangles", "avg_clustering", "profile", "nmi", "assortativity")) + " |")
    lines += ["", "## A DP degree-mixing statistic's noise (not released by any arm)", "",
              "The input's degrees clipped at their 99th percentile `D` stand in for released ones; only `S_xy` takes "
              "Laplace noise (`mixing_statistic_noise` in the script).", "",
              "| graph | edges | r | D | r_x (clipped) | sd of r_x at epsilon 0.03 | at 0.1 |",
              "|---|---|---|---|---|---|---|"]
    for graph, stat in result["mixing_statistic"].items():
        lines.append(f"| {graph.replace('proxy:', '')} | {int(result['edges'][graph]):,} | {stat['r']:+.3f} | "
                     f"{stat['clip']:.0f} | {stat['r_x']:+.3f} | {stat['sd'][0.03]:.3f} | {stat['sd'][0.1]:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--graphs", default="", help="comma-separated subset of " + ",".join(GRAPHS))
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    keep = set(args.graphs.split(",")) if args.graphs else None
    grid = [(a, e, [g for g in gs if keep is None or g in keep]) for a, e, gs in GRID]
    result = run(grid, args.seeds)
    if not args.no_report:
        REPORT.write_text(render(result, args.seeds))
        print(f"wrote {REPORT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
