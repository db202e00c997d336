"""Edge-DP synthetic graph generators on the PGB queries (issue 6): writes ``reports/edge_dp_generators.md``.

For every (dataset, epsilon, generator, run): fit under ``Budget(epsilon, delta=1e-6, adjacency="edge")``, draw one
graph, and compare it with the input on the PGB graph-privacy benchmark queries (Liu et al. 2024, "PGB: Benchmarking
differentially private synthetic graph generation algorithms"): relative error of edges, triangles, average degree,
degree variance, diameter, average shortest path, global and average clustering, Louvain modularity and degree
assortativity; KL and Wasserstein-1 of the degree distribution; NMI of the two Louvain partitions; overlap of the
top-1% eigenvector-centrality nodes and MAE of the top-1% centrality values. Wall time and peak traced memory cover
fit + sample. Each cell is cached as JSON (``--cache``), so runs can be split and resumed; the report is rendered from
everything in the cache.

Full grid (the default)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_edge_dp.py

Subsets: ``--datasets cora,facebook --epsilons 1 --generators privgraph,dp_dcsbm --runs 3``;
``--render-only`` re-renders the report from the cache.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.graph import Graph  # noqa: E402

DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", ROOT.parent / "shared" / "data"))
DATASETS = ("chameleon", "facebook", "cora", "slashdot")
EPSILONS = (0.5, 1.0, 2.0, 5.0)
CLASSICAL = ("randomized_response", "tmf", "chung_lu", "dpdk", "privgraph", "dp_dcsbm")
DELTA = 1e-6
REPORT = ROOT / "reports" / "edge_dp_generators.md"
#: Diameter / average shortest path exact up to this many nodes (Cora, Chameleon), sampled from 256 BFS sources above
#: (Facebook, Slashdot) to keep the grid affordable on 2 shared cores.
EXACT_PATH_MAX_NODES = 3000

METRICS = [
    ("edges_re", "RE edges"),
    ("triangles_re", "RE triangles"),
    ("avg_degree_re", "RE avg degree"),
    ("degree_variance_re", "RE degree variance"),
    ("diameter_re", "RE diameter"),
    ("cpl_re", "RE avg shortest path"),
    ("global_clustering_re", "RE global clustering"),
    ("avg_clustering_re", "RE avg clustering"),
    ("modularity_re", "RE modularity"),
    ("assortativity_re", "RE assortativity"),
    ("degree_kl", "degree KL"),
    ("degree_w1", "degree W1"),
    ("louvain_nmi", "Louvain NMI"),
    ("evc_overlap", "EVC top-1% overlap"),
    ("evc_mae", "EVC top-1% MAE"),
    ("seconds", "time (s)"),
    ("peak_mb", "peak MB"),
]


# ------------------------------------------------------------------------------------------------ data
def load_dataset(name: str) -> Graph:
    if name in ("cora", "chameleon", "citeseer", "squirrel", "cora_ml", "tolokers"):
        with np.load(DATA / "single" / f"{name}.npz", allow_pickle=False) as z:
            adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
            kw = {}
            if "labels" in z.files:
                kw["labels"] = z["labels"]
            if "attr_data" in z.files:
                kw["features"] = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]),
                                               shape=tuple(z["attr_shape"]))
        g, _ = Graph.from_csr(adj, name=name, **kw)
        return g
    path = {"facebook": "raw/facebook_combined.txt.gz", "slashdot": "raw/soc-Slashdot0902.txt.gz"}[name]
    with gzip.open(DATA / path, "rt") as fh:
        rows = [line.split() for line in fh if line.strip() and not line.startswith("#")]
    pairs = np.array(rows, dtype=np.int64)
    ids, inv = np.unique(pairs.ravel(), return_inverse=True)
    g, _ = Graph.from_edges(int(ids.size), inv.reshape(-1, 2), name=name)
    return g


# ------------------------------------------------------------------------------------------------ queries
def pgb_statistics(graph: Graph) -> dict:
    """The scalar PGB statistics plus what the pairwise metrics need (degrees, Louvain labels, centrality)."""
    from graphrelease.audit import statistics as st

    g = graph.to_igraph()
    d = graph.degrees().astype(np.float64)
    tri = float(st.triangle_count(graph))
    wedges = float((d * (d - 1) / 2).sum())
    paths = st.path_statistics(graph, seed=0, exact_max_nodes=EXACT_PATH_MAX_NODES)
    members = st.louvain_partition(graph, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evc = st.eigenvector_centrality(graph)
    norm = np.linalg.norm(evc)
    return {
        "edges": float(graph.num_edges),
        "triangles": tri,
        "avg_degree": float(d.mean()),
        "degree_variance": float(d.var()),
        "diameter": float(paths["diameter"]),
        "cpl": float(paths["cpl"]),
        "global_clustering": 3.0 * tri / wedges if wedges else 0.0,
        "avg_clustering": float(g.transitivity_avglocal_undirected(mode="zero")) if graph.num_edges else 0.0,
        "modularity": st.modularity(graph, members),
        "assortativity": float(g.assortativity_degree(directed=False)) if graph.num_edges else float("nan"),
        "_degrees": graph.degrees(),
        "_louvain": members,
        "_evc": evc / norm if norm > 0 else evc,  # unit L2 norm, as networkx (PGB/PrivGraph) reports it
    }


def degree_kl(orig_deg: np.ndarray, syn_deg: np.ndarray) -> float:
    """KL(P_orig || P_syn) of the degree histograms (padded to one length; 1e-10 floor on P_syn's zeros)."""
    size = int(max(orig_deg.max(), syn_deg.max())) + 1
    p = np.bincount(orig_deg, minlength=size).astype(float)
    q = np.bincount(syn_deg, minlength=size).astype(float)
    p /= p.sum()
    q /= q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-10))))


def compare(orig: dict, syn: dict, n: int) -> dict:
    from scipy.stats import wasserstein_distance
    from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

    out = {}
    for key in ("edges", "triangles", "avg_degree", "degree_variance", "diameter", "cpl", "global_clustering",
                "avg_clustering", "modularity", "assortativity"):
        a, b = orig[key], syn[key]
        out[f"{key}_re"] = abs(b - a) / abs(a) if a and not math.isnan(b) else float("nan")
    out["degree_kl"] = degree_kl(orig["_degrees"], syn["_degrees"])
    out["degree_w1"] = float(wasserstein_distance(orig["_degrees"], syn["_degrees"]))
    out["louvain_nmi"] = float(normalized_mutual_info_score(orig["_louvain"], syn["_louvain"]))
    # NMI rewards fragmentation (an edgeless graph scores 0.37 on Slashdot); the AMI is about 0 for any partition
    # independent of the input's.
    out["louvain_ami"] = float(adjusted_mutual_info_score(orig["_louvain"], syn["_louvain"]))
    k = max(1, int(0.01 * n))
    top_o = np.argsort(-orig["_evc"], kind="stable")[:k]
    top_s = np.argsort(-syn["_evc"], kind="stable")[:k]
    out["evc_overlap"] = len(set(top_o.tolist()) & set(top_s.tolist())) / k
    out["evc_mae"] = float(np.mean(np.abs(orig["_evc"][top_o] - syn["_evc"][top_s])))
    return out


# ------------------------------------------------------------------------------------------------ runs
def _warm_up() -> None:
    """Import the accountants (dp-accounting, torch via the noise module) before tracemalloc starts: imports under
    tracemalloc are an order of magnitude slower and would be billed to the first generator."""
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.ledger import LedgerEntry
    from graphrelease.privacy.noise import secure_generator

    secure_generator(None)
    entry = LedgerEntry(mechanism="laplace", stage="warm-up", params={"epsilon": 0.1})
    compute_epsilon([entry, LedgerEntry(mechanism="exponential", stage="warm-up", params={"epsilon": 0.1})], DELTA)
    compute_epsilon([entry], DELTA, accountant="rdp")


def run_cell(graph: Graph, orig: dict, generator: str, eps: float) -> dict:
    import torch

    from graphrelease.generators import GENERATORS
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.budget import Budget

    torch.set_num_threads(1)
    _warm_up()
    budget = Budget(epsilon=eps, delta=DELTA, adjacency="edge")
    gen = GENERATORS.get(generator)()
    tracemalloc.start()
    t0 = time.perf_counter()
    fitted = gen.fit(graph, budget)
    (syn,) = fitted.sample(1)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    res = compare(orig, pgb_statistics(syn), graph.num_nodes)
    res.update(seconds=seconds, peak_mb=peak / 2**20, synthetic_edges=syn.num_edges,
               spent_epsilon=compute_epsilon(budget.ledger, DELTA), ledger_sound=budget.ledger.sound,
               config=getattr(fitted, "config", {}))
    return res


def cache_path(cache: Path, dataset: str, generator: str, eps: float, run: int) -> Path:
    return cache / f"{dataset}__{generator}__eps{eps:g}__run{run}.json"


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


# ------------------------------------------------------------------------------------------------ report
def fmt(values: list[float]) -> str:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return "n/a"
    mean, std = float(np.mean(vals)), float(np.std(vals))
    digits = 1 if abs(mean) >= 100 else 3
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if len(vals) > 1 else f"{mean:.{digits}f}"


def render(cache: Path, command: str, notes: list[str]) -> str:
    cells: dict = {}
    for f in sorted(cache.glob("*.json")):
        r = json.loads(f.read_text())
        cells.setdefault((r["dataset"], r["epsilon"], r["generator"]), []).append(r)
    lines = [
        "# Edge-DP synthetic graph generators on the PGB queries",
        "",
        "Regenerate with:",
        "",
        "```",
        command,
        "```",
        "",
        f"Edge adjacency, delta = {DELTA:g}; every generator is charged through `Budget` and its ledger composes to "
        "the requested epsilon (column `spent` is the PLD accountant's epsilon of the ledger). One synthetic graph "
        "per run; cells show mean ± std over the runs (`runs` column). RE = relative error |x_syn - x|/|x|; lower "
        "is better except Louvain NMI and EVC overlap (higher is better). Definitions: degree KL = KL(P_orig || "
        "P_syn) of the degree histograms (1e-10 floor); degree W1 = Wasserstein-1 between the degree samples; "
        "Louvain NMI = NMI of igraph Louvain partitions (seeded) of the input and of the synthetic graph, node ids "
        "aligned; EVC = eigenvector centrality (unit L2 norm), top-1% node overlap and the MAE of the top-1% sorted "
        "values; diameter and average shortest path are exact up to 3,000 nodes (Cora, Chameleon) and sampled from "
        "256 BFS sources above (Facebook, Slashdot; the diameter is then a lower bound, for input and output "
        "alike). Time and peak traced Python/numpy memory cover fit + one sample on 2 shared CPU cores.",
        "",
    ]
    lines += notes
    datasets = [d for d in DATASETS if any(k[0] == d for k in cells)]
    for d in datasets:
        lines += [f"## {d}", ""]
        for eps in sorted({k[1] for k in cells if k[0] == d}):
            lines += [f"### {d}, epsilon = {eps:g}", ""]
            header = "| generator | runs | spent | " + " | ".join(lbl for _, lbl in METRICS) + " |"
            lines += [header, "|" + "---|" * (len(METRICS) + 3)]
            gens = [g for g in sorted({k[2] for k in cells if k[0] == d and k[1] == eps})]
            for gname in gens:
                rs = cells[(d, eps, gname)]
                row = [gname, str(len(rs)), f"{max(r['spent_epsilon'] for r in rs):.3f}"]
                row += [fmt([r[key] for r in rs]) for key, _ in METRICS]
                lines.append("| " + " | ".join(row) + " |")
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--generators", default=",".join(CLASSICAL),
                    help="comma list; 'all' = every registered generator that fits one graph")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / "results" / "edge_dp"))
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--note", action="append", default=[], help="extra paragraph for the report")
    ap.add_argument("--notes-file", default=None,
                    help="markdown file inserted after the legend (findings written from the cached numbers)")
    args = ap.parse_args(argv)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if not args.render_only:
        from graphrelease.generators import GENERATORS

        gens = args.generators.split(",")
        if gens == ["all"]:
            gens = [g for g in GENERATORS.names() if "graph" in GENERATORS.get(g).inputs
                    and not GENERATORS.get(g).non_private]
        for dname in args.datasets.split(","):
            graph = load_dataset(dname)
            orig = None
            for eps in (float(e) for e in args.epsilons.split(",")):
                for gname in gens:
                    for run in range(args.runs):
                        path = cache_path(cache, dname, gname, eps, run)
                        if path.exists():
                            continue
                        if orig is None:
                            t = time.perf_counter()
                            orig = pgb_statistics(graph)
                            print(f"[{dname}] input statistics in {time.perf_counter() - t:.1f}s", flush=True)
                        try:
                            res = run_cell(graph, orig, gname, eps)
                        except Exception as err:  # report a failing generator instead of losing the grid
                            res = {"error": f"{type(err).__name__}: {err}"}
                            print(f"[{dname}] {gname} eps={eps:g} run {run}: FAILED {res['error']}", flush=True)
                            continue
                        res.update(dataset=dname, generator=gname, epsilon=eps, run=run)
                        path.write_text(json.dumps(res, default=_json_default, indent=1))
                        print(f"[{dname}] {gname} eps={eps:g} run {run}: {res['seconds']:.1f}s "
                              f"edges_re={res['edges_re']:.3f} nmi={res['louvain_nmi']:.3f} "
                              f"mod_re={res['modularity_re']:.3f}", flush=True)
    # The header shows the command that regenerates the grid (bookkeeping options left out).
    raw = list(argv if argv is not None else sys.argv[1:])
    shown, skip = [], False
    for a in raw:
        if skip:
            skip = False
            continue
        if a in ("--cache", "--report", "--notes-file", "--note"):
            skip = True
            continue
        if a == "--render-only" or a.startswith(("--cache=", "--report=", "--notes-file=", "--note=")):
            continue
        shown.append(a)
    command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_edge_dp.py " + " ".join(shown)
    notes = list(args.note)
    if args.notes_file:
        notes.append(Path(args.notes_file).read_text())
    Path(args.report).write_text(render(cache, command.strip(), notes))
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
