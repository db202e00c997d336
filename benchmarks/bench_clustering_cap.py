"""The capped local-clustering sum's cap (issue 15, structure log item 15): writes ``reports/clustering_cap.md``.

Part 1, no privacy involved: the share of the uncapped sum (``n`` times the average clustering) that caps 1, 2, 3 and
5 keep on the named graphs, the held-out-kind proxies and 1,000-node BFS balls (``benchmarks/proxies.py``).
Part 2, paired: ``dp_bter`` fits with the default rule (``clustering_cap="auto"``, ``local_clustering.clustering_cap``)
against the same seeds with the cap fixed at 1 (every release before session 13), on ids permuted as in
``bench_structure.py``; average clustering (igraph, zeros below degree
2) and transitivity, medians over the seeds of the relative error and of the signed one. Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_clustering_cap.py \\
        --cells cora:2,cora:4,ball_cora_1000_0:4,ball_cora_1000_1:4,chameleon:4,lastfm:1,lastfm:4,facebook:4,slashdot:4,collab0:1 --seeds 6
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import igraph as ig  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_structure import load_dataset  # noqa: E402
from proxies import is_proxy, proxy_graph  # noqa: E402

from graphrelease.generators import GENERATORS  # noqa: E402
from graphrelease.generators import local_clustering as lc  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

KEPT_GRAPHS = ("cora,cora_ml,facebook,lastfm,chameleon,squirrel,tolokers,slashdot,email0,em1000_0,collab0,conn0,"
               "cn1000_0,ball_cora_1000_0,ball_cora_1000_1,ball_facebook_1000_0,ball_lastfm_1000_0,"
               "ball_slashdot_1000_0,ball_chameleon_1000_0")


def graph(name: str):
    return proxy_graph(name) if is_proxy(name) else load_dataset(name)


def clustering(g) -> tuple[float, float]:
    G = ig.Graph(n=g.num_nodes, edges=np.asarray(g.edges).tolist())
    return G.transitivity_avglocal_undirected(mode="zero"), G.transitivity_undirected()


def kept_rows(names: list[str]) -> list[str]:
    rows = ["| graph | nodes | edges | average clustering | C = 1 | C = 2 | C = 3 | C = 5 |", "|---|---|---|---|---|---|---|---|"]
    for name in names:
        g = graph(name)
        s, _, _ = lc.edge_apex_sums(g.num_nodes, np.asarray(g.edges))
        total = float(s.sum())
        kept = " | ".join(f"{np.minimum(s, c).sum() / total:.3f}" for c in (1, 2, 3, 5))
        rows.append(f"| {name} | {g.num_nodes:,} | {g.num_edges:,} | {total / g.num_nodes:.3f} | {kept} |")
        print(rows[-1], flush=True)
    return rows


def paired_rows(cells: list[str], seeds: int) -> list[str]:
    rows = ["| graph | eps | cap (auto) | avg clust. RE: C = 1 -> auto | signed | transitivity RE: C = 1 -> auto |",
            "|---|---|---|---|---|---|"]
    for cell in cells:
        name, eps = cell.split(":")
        eps = float(eps)
        g = graph(name)
        a0, t0 = clustering(g)
        res, cap = {}, None
        for label, setting in (("one", lc.CLUSTERING_CAP), ("rule", "auto")):
            ra, rt = [], []
            for r in range(seeds):
                fitted = GENERATORS.get("dp_bter")(seed=900 + r, clustering_cap=setting).fit(
                    g, Budget(epsilon=eps, delta=1e-6, adjacency="edge"))
                if label == "rule":
                    cap = fitted.config["clustering_cap"]
                a, t = clustering(fitted.sample(1, rng=np.random.default_rng(31 + r))[0])
                ra.append((a - a0) / a0)
                rt.append(abs(t - t0) / t0)
            res[label] = (float(np.median(np.abs(ra))), float(np.median(ra)), float(np.median(rt)))
        one, rule = res["one"], res["rule"]
        rows.append(f"| {name} | {eps:g} | {cap:g} | {one[0]:.3f} -> {rule[0]:.3f} | {one[1]:+.3f} -> {rule[1]:+.3f} | "
                    f"{one[2]:.3f} -> {rule[2]:.3f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kept", default=KEPT_GRAPHS)
    ap.add_argument("--cells", default="cora:2,cora:4,ball_cora_1000_0:4,ball_cora_1000_1:4,chameleon:4,lastfm:1,"
                                       "lastfm:4,facebook:4,slashdot:4,collab0:1")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--report", default=str(ROOT / "reports" / "clustering_cap.md"))
    args = ap.parse_args()
    kept = kept_rows(args.kept.split(","))
    paired = paired_rows(args.cells.split(","), args.seeds)
    command = ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_clustering_cap.py "
               f"--cells {args.cells} --seeds {args.seeds}")
    text = "\n".join([
        "# The clustering sum's cap (issue 15)", "", f"Regenerate with `{command}`.", "",
        "## Share of the uncapped local-clustering sum each cap keeps (no privacy involved)", "", *kept, "",
        f"## dp_bter, the default rule `clustering_cap=\"auto\"` against C = 1 (paired: the same "
        f"{args.seeds} seeded fits and draws per cell, permuted ids, medians)", "",
        f"The rule: the largest cap of {lc.CLUSTERING_CAPS} whose noise scale (C + 2) / (share epsilon x n) is at most "
        f"{lc.CAP_NOISE_BOUND} in units of the average clustering, else 1.", "", *paired, ""])
    tmp = Path(args.report).with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(args.report)


if __name__ == "__main__":
    main()
