"""Wall time and peak memory of fitting the GVAE-family generators on Cora, Facebook and PubMed in each mode,
a small utility comparison of the sound single-graph modes (to choose the default), and sampling a 100k-node graph
from a fitted decoder. Writes reports/synth_benchmark.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_synth.py [--runs 2] [--epsilon 4]

Each configuration runs in a fresh subprocess (peak RSS = that process's ``ru_maxrss``, including the Python/torch
runtime of ~0.3-0.5 GB); wall time is the median over ``--runs`` runs of the fit (data loading excluded).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
DATASETS = {
    "cora": DATA / "single" / "cora.npz",
    "facebook": DATA / "raw" / "facebook_combined.txt.gz",
    "pubmed": DATA / "single" / "pubmed.npz",
}
CONFIGS = [  # (method, mode)
    ("dpgvae", "edge-tuples"),
    ("dpggan", "edge-tuples"),
    ("dpgvae", "buckets"),
    ("dpgvae", "paper"),
    ("gvae", None),
]


def child(dataset: str, method: str, mode: str | None, epsilon: float, epochs: float | None) -> None:
    """Run one fit + one sample; print a JSON line with timings, peak RSS and a few utility numbers."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))
    import graphrelease.generators  # noqa: F401
    from graphrelease.generators.base import GENERATORS
    from graphrelease.io import read_graph
    from graphrelease.privacy.budget import Budget

    graph = read_graph(DATASETS[dataset]).data
    cls = GENERATORS.get(method)
    budget = Budget.unlimited("edge") if cls.non_private else Budget(
        epsilon=epsilon, delta=1e-5, adjacency="edge", accountant="rdp")
    kw = {} if epochs is None else {"epochs": epochs}
    gen = cls(mode=mode, **kw) if mode else cls(**kw)
    t = time.perf_counter()
    try:
        fitted = gen.fit(graph, budget)
    except Exception as err:  # report, e.g. paper mode refusing a large graph
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
        return
    fit_s = time.perf_counter() - t
    t = time.perf_counter()
    (g,) = fitted.sample(1, rng=np.random.default_rng(0))
    sample_s = time.perf_counter() - t
    real = set(map(tuple, graph.edges.tolist()))
    overlap = sum(tuple(e) in real for e in g.edges.tolist()) / max(1, g.num_edges)
    ig0, ig1 = graph.to_igraph(), g.to_igraph()
    d0, d1 = np.sort(graph.degrees()), np.sort(g.degrees())
    out = {
        "fit_s": fit_s, "sample_s": sample_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "steps": gen.last_info.get("steps"), "edges": g.num_edges, "edges_real": graph.num_edges,
        "edge_overlap": overlap,
        "max_degree": int(d1.max()), "max_degree_real": int(d0.max()),
        "degree_w1": float(np.mean(np.abs(d0 - d1))) if len(d0) == len(d1) else float("nan"),
        "triangles": len(ig1.list_triangles()),
        "triangles_real": int(len(ig0.list_triangles())),
        "clustering": float(ig1.transitivity_avglocal_undirected(mode="zero")),
        "clustering_real": float(ig0.transitivity_avglocal_undirected(mode="zero")),
        "spent": None if cls.non_private else budget.spent_epsilon(),
    }
    print(json.dumps(out))


def sample_100k() -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))
    from graphrelease.generators import deep_models as dm
    from graphrelease.generators.deep_generator import FittedDeep

    params = dm.init_params(8, gan=False, gen=torch.Generator().manual_seed(0))
    fitted = FittedDeep(params, {"node_counts": {"values": [100_000], "probs": [1.0]},
                                 "target_density": 2 * 500_000 / (100_000 * 99_999)})
    t = time.perf_counter()
    (g,) = fitted.sample(1, rng=np.random.default_rng(0))
    return {"seconds": time.perf_counter() - t, "edges": g.num_edges,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--datasets", default="cora,facebook,pubmed")
    ap.add_argument("--epochs", type=float, default=None, help="override each mode's default epochs")
    ap.add_argument("--child", nargs=3, metavar=("DATASET", "METHOD", "MODE"))
    ap.add_argument("--sample100k", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "reports" / "synth_benchmark.md"))
    args = ap.parse_args()
    if args.child:
        d, m, mode = args.child
        child(d, m, None if mode == "-" else mode, args.epsilon, args.epochs)
        return
    if args.sample100k:
        print(json.dumps(sample_100k()))
        return
    rows, util = [], []
    for dataset in args.datasets.split(","):
        for method, mode in CONFIGS:
            results = []
            for r in range(args.runs if dataset == "cora" else 1):
                extra = [] if args.epochs is None else ["--epochs", str(args.epochs)]
                res = run_child(["--child", dataset, method, mode or "-", "--epsilon", str(args.epsilon), *extra])
                results.append(res)
                print(dataset, method, mode, res, flush=True)
                if "error" in res:
                    break
            ok = [r for r in results if "error" not in r]
            label = f"{method}" + (f" ({mode})" if mode else " (non-private)")
            if not ok:
                rows.append(f"| {dataset} | {label} | - | - | - | - | {results[-1]['error'][:120]} |")
                continue
            fit = statistics.median(r["fit_s"] for r in ok)
            rss = max(r["peak_rss_mb"] for r in ok)
            smp = statistics.median(r["sample_s"] for r in ok)
            rows.append(f"| {dataset} | {label} | {fit:.1f} | {smp:.1f} | {rss:.0f} | {ok[0]['steps']} | "
                        f"{len(ok)} run(s) |")
            r0 = ok[0]
            spent = "-" if r0["spent"] is None else f"{r0['spent']:.3g}"
            util.append(f"| {dataset} | {label} | {spent} | {r0['edges']} / {r0['edges_real']} | "
                        f"{r0['edge_overlap']:.3f} | {r0['max_degree']} / {r0['max_degree_real']} | "
                        f"{r0['degree_w1']:.2f} | {r0['triangles']} / {r0['triangles_real']} | "
                        f"{r0['clustering']:.3f} / {r0['clustering_real']:.3f} |")
    big = run_child(["--sample100k"])
    print("100k", big, flush=True)
    epochs_flag = "" if args.epochs is None else f" --epochs {args.epochs:g}"
    epochs_note = "" if args.epochs is None else f", except epochs = {args.epochs:g} (time budget of this session)"
    text = f"""# Synth benchmark (GVAE family)

Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_synth.py --runs {args.runs} --epsilon {args.epsilon:g}{epochs_flag}`

Machine: 2 CPU cores shared by 8 concurrent sessions (timings are noisy and pessimistic). Each row is a fresh
subprocess; fit time is the median over the runs shown (Cora: {args.runs}; Facebook and PubMed: 1 run each, for time),
peak memory is the subprocess's maximum RSS (includes ~0.4 GB of Python + torch). Budget: epsilon {args.epsilon:g},
delta 1e-5, edge adjacency, RDP accountant (the budget's charge with the PLD accountant adds a capacity search per
ledger entry). Hyper-parameters: each mode's defaults{epochs_note}.

## Fit time and memory

| dataset | method (mode) | fit s | sample s | peak RSS MB | DP-SGD steps | notes |
|---|---|---|---|---|---|---|
""" + "\n".join(rows) + f"""

## Sampling a 100k-node graph from a fitted decoder

Exact block sampler (`graphrelease.generators.sampling.sample_edges`, no n x n matrix; offset calibrated on 10^6
random pairs to 500,000 expected edges): **{big.get('seconds', float('nan')):.1f} s**, {big.get('edges', '?')} edges,
peak RSS {big.get('peak_rss_mb', float('nan')):.0f} MB.

## Utility of one sample (which sound single-graph mode is better)

Generated / real. Edge overlap: share of generated edges that are real edges. Degree W1: mean absolute difference
of the sorted degree sequences. One run each (noisy; treat differences below ~20% as ties).

| dataset | method (mode) | eps spent | edges | edge overlap | max degree | degree W1 | triangles | avg clustering |
|---|---|---|---|---|---|---|---|---|
""" + "\n".join(util) + "\n"
    Path(args.out).write_text(text)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
