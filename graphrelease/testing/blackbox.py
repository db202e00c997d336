"""A black-box two-world audit through the file readers: what a sceptical reviewer runs against a release tool.

Two worlds of edge-list FILES differ in one canary edge ``(u, v)`` whose endpoint ``v`` has no other edge. Each
world is released many times the way an owner would release it: the file goes through the reader and
:func:`graphrelease.synth.synthesize` (or the CLI), never through the generator objects; when the tool refuses the
input for want of a declared node set, the owner declares it (the same declaration in both worlds, as an owner
who knows their node universe would). Every release is read back with the file reader and scored by a few
statistics an attacker sees (node count, edge count, the canary endpoints' degrees, whether the canary pair is an
edge). A Clopper-Pearson lower bound on epsilon (Bonferroni over thresholds, events and statistics) must stay
below the certified epsilon.

This module is test infrastructure (the audit of the CLI path in ``tests/`` and ``benchmarks/``); it writes
releases into a scratch directory and deletes them as it goes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from graphrelease.audit.empirical import EpsilonLowerBound, epsilon_lower_bound

STATISTICS = ("num_nodes", "num_edges", "degree_u", "degree_v", "canary_edge")


@dataclass
class TwoWorldResult:
    """Scores of every release in both worlds and the best lower bound over the statistics."""

    method: str
    runs_per_world: int
    certified_epsilon: float
    bound: EpsilonLowerBound
    statistic: str
    refused_without_declaration: bool
    seconds: float
    scores: dict[str, dict[str, list[float]]] = field(default_factory=dict, repr=False)


def write_edge_list(path: Path, edges: np.ndarray) -> None:
    """A plain CSV edge list with a header and no node declaration (what an owner's export usually is)."""
    rows = "\n".join(f"{int(a)},{int(b)}" for a, b in np.asarray(edges).tolist())
    path.write_text("source,target\n" + rows + "\n", encoding="utf-8")


def _release_statistics(release: Path, u: int, v: int) -> dict[str, float]:
    from graphrelease.io import read_graph

    graph = read_graph(release / "graphs" / "graph_000.csv").data
    deg = graph.degrees()
    n = graph.num_nodes
    keys = set((graph.edges[:, 0] * n + graph.edges[:, 1]).tolist()) if graph.num_edges else set()
    lo, hi = min(u, v), max(u, v)
    return {
        "num_nodes": float(n),
        "num_edges": float(graph.num_edges),
        "degree_u": float(deg[u]) if u < n else -1.0,
        "degree_v": float(deg[v]) if v < n else -1.0,
        "canary_edge": float(hi < n and lo * n + hi in keys),
    }


def _release_library(path: Path, out: Path, *, method: str, epsilon: float, nodes: int | None,
                     node_set: str) -> None:
    from graphrelease.synth import synthesize

    synthesize(path, method=method, epsilon=epsilon, out=out, nodes=nodes, key_path=out.parent / "key",
               node_set=node_set)


def _release_cli(path: Path, out: Path, *, method: str, epsilon: float, nodes: int | None, node_set: str) -> None:
    cmd = [sys.executable, "-m", "cli.app", "synth", str(path), "--method", method, "--epsilon", str(epsilon),
           "--out", str(out), "--key", str(out.parent / "key"), "--node-set", node_set]
    if nodes is not None:
        cmd += ["--nodes", str(nodes)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise _Refused(done.stdout + done.stderr)


class _Refused(Exception):
    pass


def two_world_audit(method: str, base_edges: np.ndarray, canary: tuple[int, int], *, workdir: Path,
                    runs_per_world: int, epsilon: float = 1.0, declared_nodes: int,
                    through: str = "library", delta: float = 1e-5, node_set: str = "declared",
                    on_release: Callable[[int], None] | None = None) -> TwoWorldResult:
    """Release both worlds ``runs_per_world`` times each and bound epsilon from the releases' statistics.

    ``declared_nodes`` is what the owner passes (``--nodes N``) when the tool refuses an undeclared node set; it
    must cover the canary's endpoint. ``through``: ``"library"`` (:func:`synthesize` on the file) or ``"cli"``
    (``graphrelease synth`` in a subprocess: slow, start-up included). ``node_set="from-edges"`` is the positive
    control: the owner accepts the disclosed node set, and the audit must see the canary through it.
    """
    from graphrelease.errors import NodeSetError

    start = time.perf_counter()
    u, v = canary
    (workdir / "worlds").mkdir(parents=True, exist_ok=True)  # inputs apart from the releases, as an owner keeps them
    files = {"out": workdir / "worlds" / "world_out.csv", "in": workdir / "worlds" / "world_in.csv"}
    write_edge_list(files["out"], base_edges)
    write_edge_list(files["in"], np.concatenate([base_edges, np.array([[u, v]])]))
    release = _release_cli if through == "cli" else _release_library
    nodes: int | None = None
    refused = False
    scores: dict[str, dict[str, list[float]]] = {w: {s: [] for s in STATISTICS} for w in files}
    for i in range(runs_per_world):
        for world, path in files.items():
            out = workdir / "release"
            shutil.rmtree(out, ignore_errors=True)
            (workdir / "key").unlink(missing_ok=True)
            try:
                release(path, out, method=method, epsilon=epsilon, nodes=nodes, node_set=node_set)
            except (NodeSetError, _Refused) as err:
                if nodes is not None or "node" not in str(err):
                    raise
                refused, nodes = True, declared_nodes  # the owner declares the node universe, in both worlds
                release(path, out, method=method, epsilon=epsilon, nodes=nodes, node_set=node_set)
            for name, value in _release_statistics(out, u, v).items():
                scores[world][name].append(value)
        if on_release is not None:
            on_release(i)
    shutil.rmtree(workdir / "release", ignore_errors=True)
    confidence = 1.0 - 0.05 / len(STATISTICS)
    best, best_stat = None, STATISTICS[0]
    for name in STATISTICS:
        b = epsilon_lower_bound(scores["in"][name], scores["out"][name], delta=delta, confidence=confidence)
        if best is None or b.epsilon > best.epsilon:
            best, best_stat = b, name
    assert best is not None
    return TwoWorldResult(method, runs_per_world, epsilon, best, best_stat, refused, time.perf_counter() - start,
                          scores)


def isolated_endpoint_canary(edges: np.ndarray, num_nodes: int) -> tuple[np.ndarray, tuple[int, int], int]:
    """The base edges, a canary ``(u, v)`` with ``v`` a new node that has no other edge, and the declared count.

    ``u`` is the highest-degree node (its degree moves least, relatively); ``v = num_nodes`` sits after every
    existing node, so dropping it renumbers nothing in the out-world (the node count alone distinguishes them).
    """
    deg = np.bincount(np.asarray(edges).ravel(), minlength=num_nodes)
    u = int(np.argmax(deg))
    return np.asarray(edges), (u, num_nodes), num_nodes + 1
