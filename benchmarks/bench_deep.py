"""Deep generators against random-graph baselines on collections (issue 16); writes reports/deep_generators.md.

    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_deep.py [--datasets IMDB-MULTI,ENZYMES]
        [--epsilons 1,4] [--runs 3] [--eval 200] [--cache /tmp/bench_deep.jsonl]

Every (dataset, row, epsilon, run) is one child process (fit CPU seconds and peak RSS are that child's own). The
fit reads the whole collection; scores compare a fixed random subset of ``--eval`` graphs (same subset for every
row) with one generated counterpart each (same node count; rows with per-graph released statistics generate graph
i's counterpart from row i, as the seed's Table 1 protocol pairs them). Columns: the seed's Table 1 mean absolute
differences (LCC, TC, CPL, GINI, REDE; lower is better) and Table 2 cosines (degree, motif; higher is better), and
GraphRNN MMDs (degree, clustering, orbit; lower is better) between the evaluated and generated sets. Medians over
runs; releases are never seeded (the runs differ in their noise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DELTA = 1e-5
T1 = ("lcc_size", "triangle_count", "cpl", "gini", "rede")
COLS = T1 + ("degree_cosine", "motif_cosine", "degree_mmd", "clustering_mmd", "orbit_mmd")
HEAD = ("LCC", "TC", "CPL", "GINI", "REDE", "deg cos", "motif cos", "deg MMD", "clus MMD", "orbit MMD")
HIGHER = {"degree_cosine", "motif_cosine"}
ROWS = {  # label -> (kind, private?)
    "GVAE (non-private, one model)": ("gvae", False),
    "G(n, m) true m (non-private)": ("gnm_true", False),
    "G(n, m) DP per-graph m": ("gnm_dp", True),
    "per-graph DP Chung-Lu": ("chung_lu_dp", True),
    "DPGVAE graphs (DP-SGD)": ("dpgvae:graphs", True),
    "DPGGAN graphs (DP-SGD)": ("dpggan:graphs", True),
    "DPGVAE measured": ("dpgvae:measured", True),
    "DPGGAN measured": ("dpggan:measured", True),
}


def _gnm(n: int, m: float, rng: np.random.Generator):
    from graphrelease.graph import Graph

    iu, ju = np.triu_indices(n, 1)
    m = int(np.clip(round(m), 0, iu.size))
    k = np.sort(rng.choice(iu.size, m, replace=False))
    return Graph(n, np.stack([iu[k], ju[k]], 1).astype(np.int64))


def _chung_lu(n: int, w: np.ndarray, rng: np.random.Generator):
    """Bernoulli Chung-Lu: p_ij = min(1, w_i w_j / sum w) (post-processing of DP degrees)."""
    from graphrelease.graph import Graph

    iu, ju = np.triu_indices(n, 1)
    s = max(float(w.sum()), 1e-9)
    keep = rng.random(iu.size) < np.minimum(1.0, w[iu] * w[ju] / s)
    return Graph(n, np.stack([iu[keep], ju[keep]], 1).astype(np.int64))


def generate(kind: str, coll, idx: np.ndarray, eps: float) -> tuple[list, dict]:
    """Fit (if any) on the whole collection and generate one counterpart per evaluated graph."""
    from graphrelease.generators.base import GENERATORS
    from graphrelease.privacy.budget import Budget

    graphs = list(coll)
    rng = np.random.default_rng()
    info: dict = {}
    if kind == "gnm_true":
        return [_gnm(graphs[i].num_nodes, graphs[i].num_edges, rng) for i in idx], info
    if kind == "gnm_dp":  # per-graph edge counts, vector L1 sensitivity 1: Laplace(1 / eps) each
        return [_gnm(graphs[i].num_nodes, graphs[i].num_edges + rng.laplace(0, 1 / eps), rng) for i in idx], info
    if kind == "chung_lu_dp":  # per-graph degree vectors, concatenated L1 sensitivity 2
        out = []
        for i in idx:
            g = graphs[i]
            w = np.clip(g.degrees() + rng.laplace(0, 2 / eps, size=g.num_nodes), 0, g.num_nodes - 1)
            out.append(_chung_lu(g.num_nodes, w, rng))
        return out, info
    if kind == "gvae":
        gen = GENERATORS.get("gvae")()
        fitted = gen.fit(coll, Budget.unlimited("edge"))
        return [fitted.sample(1, num_nodes=graphs[i].num_nodes, rng=rng)[0] for i in idx], gen.last_info
    method, mode = kind.split(":")
    gen = GENERATORS.get(method)(mode=mode)
    budget = Budget(epsilon=eps, delta=DELTA, adjacency="edge", accountant="rdp")
    fitted = gen.fit(coll, budget)
    info = {k: v for k, v in gen.last_info.items() if isinstance(v, (int, float, str))}
    if hasattr(fitted, "sample_rows"):
        return fitted.sample_rows(idx, rng=rng), info
    return [fitted.sample(1, num_nodes=max(2, graphs[i].num_nodes), rng=rng)[0] for i in idx], info


def score(orig: list, out: list) -> dict[str, float]:
    from graphrelease.audit import motifs
    from graphrelease.audit.compare import table1_statistics
    from graphrelease.audit.mmd import clustering_mmd, degree_mmd, orbit_mmd

    t0, t1 = [table1_statistics(g) for g in orig], [table1_statistics(g) for g in out]
    res = {}
    for key in T1:
        d = [abs(a[key] - b[key]) for a, b in zip(t0, t1)]
        res[key] = float(np.nanmean(d)) if not all(map(math.isnan, d)) else float("nan")
    res["degree_cosine"] = motifs.mean_pairwise_cosine([motifs.degree_vector(g) for g in orig],
                                                       [motifs.degree_vector(g) for g in out])
    res["motif_cosine"] = motifs.mean_pairwise_cosine([motifs.motif_vector(g, time_limit=2.0) for g in orig],
                                                      [motifs.motif_vector(g, time_limit=2.0) for g in out])
    res["degree_mmd"] = degree_mmd(orig, out)
    res["clustering_mmd"] = clustering_mmd(orig, out)
    res["orbit_mmd"] = orbit_mmd(orig, out)
    return res


SINGLE = {"cora": "single/cora.npz", "facebook": "raw/facebook_combined.txt.gz"}
SINGLE_ROWS = {"dpgvae (default: buckets)": "dpgvae", "dp_dcsbm": "dp_dcsbm", "dp_bter": "dp_bter"}
SINGLE_COLS = ("rel_err_num_edges", "rel_err_triangle_count", "rel_err_global_clustering",
               "rel_err_avg_clustering", "degree_kl", "degree_wasserstein", "community_nmi", "isolated_frac")
SINGLE_HEAD = ("edges RE", "triangles RE", "global clust. RE", "avg clust. RE", "degree KL", "degree W1",
               "Louvain NMI", "isolated")


def single_child(dataset: str, method: str, eps: float) -> dict:
    from graphrelease.audit.compare import compare_graphs
    from graphrelease.generators.base import GENERATORS
    from graphrelease.io import read_graph
    from graphrelease.privacy.budget import Budget

    base = os.environ.get("GRAPHRELEASE_SHARED_DATA", str(ROOT.parent / "shared/data"))
    graph = read_graph(os.path.join(base, SINGLE[dataset])).data
    c0 = time.process_time()
    gen = GENERATORS.get(method)()
    fitted = gen.fit(graph, Budget(epsilon=eps, delta=DELTA, adjacency="edge", accountant="rdp"))
    out = fitted.sample(1, rng=np.random.default_rng())[0]
    fit_cpu = time.process_time() - c0
    res = compare_graphs(graph, out)
    res = {k: float(res[k]) for k in SINGLE_COLS if k in res}
    res["isolated_frac"] = float(np.mean(out.degrees() == 0))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"dataset": dataset, "kind": "single:" + method, "eps": eps, "fit_cpu": fit_cpu, "peak_mib": peak, **res}


def child(dataset: str, kind: str, eps: float, n_eval: int) -> dict:
    from graphrelease.io import read_graph

    if kind.startswith("single:"):
        return single_child(dataset, kind.split(":", 1)[1], eps)

    coll = read_graph(os.path.join(os.environ.get("GRAPHRELEASE_SHARED_DATA", str(ROOT.parent / "shared/data")),
                                   "collections", dataset)).data
    idx = np.sort(np.random.default_rng(0).choice(len(coll), min(n_eval, len(coll)), replace=False))
    c0 = time.process_time()
    out, info = generate(kind, coll, idx, eps)
    fit_cpu = time.process_time() - c0
    res = score([coll[int(i)] for i in idx], out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"dataset": dataset, "kind": kind, "eps": eps, "fit_cpu": fit_cpu, "peak_mib": peak, "info": info, **res}


def _fmt(v: float, key: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3f}" if key not in ("triangle_count",) else f"{v:.1f}"


def render(results: list[dict], args) -> str:
    cmd = ("OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_deep.py "
           f"--datasets {args.datasets} --single {args.single} --epsilons {args.epsilons} --runs {args.runs} "
           f"--eval {args.eval}")
    lines = ["# Deep generators vs random-graph baselines on collections (issue 16)", "",
             f"Regenerate: `{cmd}`", "", __doc__.split("\n\n", 2)[2].strip(), ""]
    for ds in [d for d in args.datasets.split(",") if d]:
        lines += [f"## {ds}", "", "| row | epsilon | " + " | ".join(HEAD) + " | fit CPU s | peak MiB | runs |",
                  "|---|---|" + "---|" * (len(HEAD) + 3)]
        for label, (kind, private) in ROWS.items():
            for eps in ([None] if not private else [float(e) for e in args.epsilons.split(",")]):
                rs = [r for r in results if r["dataset"] == ds and r["kind"] == kind
                      and (eps is None or r["eps"] == eps)]
                if not rs:
                    continue
                med = {k: statistics.median([r[k] for r in rs]) for k in COLS + ("fit_cpu", "peak_mib")}
                cells = [_fmt(med[k], k) for k in COLS]
                lines.append(f"| {label} | {'inf' if eps is None else f'{eps:g}'} | " + " | ".join(cells)
                             + f" | {med['fit_cpu']:.1f} | {med['peak_mib']:.0f} | {len(rs)} |")
        lines.append("")
    singles = sorted({r["dataset"] for r in results if r["kind"].startswith("single:")})
    for ds in singles:
        lines += [f"## One graph: {ds}", "", "| row | epsilon | " + " | ".join(SINGLE_HEAD)
                  + " | fit+sample CPU s | peak MiB | runs |", "|---|---|" + "---|" * (len(SINGLE_HEAD) + 3)]
        for label, method in SINGLE_ROWS.items():
            for eps in sorted({r["eps"] for r in results if r["dataset"] == ds}):
                rs = [r for r in results if r["dataset"] == ds and r["kind"] == "single:" + method
                      and r["eps"] == eps]
                if not rs:
                    continue
                med = {k: statistics.median([r.get(k, float("nan")) for r in rs])
                       for k in SINGLE_COLS + ("fit_cpu", "peak_mib")}
                lines.append(f"| {label} | {eps:g} | " + " | ".join(f"{med[k]:.3f}" for k in SINGLE_COLS)
                             + f" | {med['fit_cpu']:.1f} | {med['peak_mib']:.0f} | {len(rs)} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="IMDB-MULTI,ENZYMES")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--eval", type=int, default=200)
    ap.add_argument("--rows", default=",".join(k for k, _ in ROWS.values()))
    ap.add_argument("--cache", default="/tmp/bench_deep.jsonl")
    ap.add_argument("--out", default=str(ROOT / "reports" / "deep_generators.md"))
    ap.add_argument("--single", default="", help="one-graph datasets (cora,facebook): dpgvae vs dp_dcsbm, dp_bter")
    ap.add_argument("--child", nargs=4, metavar=("DATASET", "KIND", "EPS", "EVAL"))
    args = ap.parse_args()
    if args.child:
        ds, kind, eps, n_eval = args.child
        print(json.dumps(child(ds, kind, float(eps), int(n_eval))))
        return
    cache = Path(args.cache)
    results = [json.loads(x) for x in cache.read_text().splitlines()] if cache.exists() else []
    jobs = []
    for ds in [d for d in args.datasets.split(",") if d]:
        for kind in args.rows.split(","):
            private = dict(ROWS.values())[kind]
            for eps in ([1.0] if not private else [float(e) for e in args.epsilons.split(",")]):
                jobs.append((ds, kind, eps, args.runs if kind != "gvae" else 1))
    for ds in [d for d in args.single.split(",") if d]:
        for method in SINGLE_ROWS.values():
            for eps in [float(e) for e in args.epsilons.split(",")]:
                jobs.append((ds, "single:" + method, eps, args.runs))
    for ds, kind, eps, runs in jobs:
        have = [r for r in results if r["dataset"] == ds and r["kind"] == kind and r["eps"] == eps]
        for _ in range(runs - len(have)):
            p = subprocess.run([sys.executable, __file__, "--child", ds, kind, str(eps), str(args.eval)],
                               capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            if p.returncode != 0:
                print(p.stderr[-2000:], file=sys.stderr)
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            results.append(r)
            with cache.open("a") as fh:
                fh.write(json.dumps(r) + "\n")
            print(ds, kind, eps, {k: round(v, 4) for k, v in r.items() if isinstance(v, float)}, flush=True)
    Path(args.out).write_text(render(results, args) + "\n")


if __name__ == "__main__":
    main()
