"""Structure fidelity of the edge-DP single-graph generators (issue 15): writes ``reports/structure_fidelity.md``.

For every (dataset, epsilon, generator, run): fit under ``Budget(epsilon, delta=1e-6, adjacency="edge")``, draw one
graph, and compare it with the input on the structure the issue asks for (edges, triangles, 4-cliques, global
clustering 3T / wedges, average clustering (igraph ``transitivity_avglocal_undirected``, zeros for degree < 2),
modularity of each graph's own Louvain partition, NMI of the two Louvain partitions (node ids aligned), degree
KL(P_orig || P_syn), number of connected components and the largest component's share of the nodes) and on every
other PGB query of ``bench_edge_dp.pgb_statistics`` (degree variance, diameter, CPL, degree assortativity, degree
Wasserstein-1, overlap and MAE of the top 1% eigenvector centralities). Cells report the MEDIAN over the runs. Fit
and sample CPU seconds (``time.process_time``, imports warmed up first) and the peak traced memory of fit + sample
(``tracemalloc``) are reported too. Each cell is cached as JSON (``--cache``), so runs can be split and resumed.

Regenerate (the grid in the report)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_structure.py \\
        --datasets cora,chameleon,facebook,lastfm,slashdot --epsilons 0.5,1,2,4 \\
        --generators dp_bter,dp_dcsbm,privgraph,chung_lu --runs 3

``--render-only`` re-renders the report from the cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_edge_dp import DATA, pgb_statistics  # noqa: E402
from bench_edge_dp import compare as pgb_compare  # noqa: E402
from bench_edge_dp import load_dataset as _load_edge_dp  # noqa: E402

from graphrelease.graph import Graph  # noqa: E402

DELTA = 1e-6
REPORT = ROOT / "reports" / "structure_fidelity.md"
COLUMNS = [
    ("edges_re", "RE edges"),
    ("triangles_re", "RE triangles"),
    ("four_cliques_re", "RE 4-cliques"),
    ("global_clustering_re", "RE global clust."),
    ("avg_clustering_re", "RE avg clust."),
    ("modularity_re", "RE modularity"),
    ("input_partition_modularity_re", "RE input-partition mod."),
    ("louvain_nmi", "Louvain NMI"),
    ("louvain_ami", "Louvain AMI"),
    ("degree_kl", "degree KL"),
    ("components", "components"),
    ("lcc_share", "LCC share"),
    ("fit_cpu_s", "fit CPU s"),
    ("sample_cpu_s", "sample CPU s"),
    ("peak_mb", "peak MB"),
]
#: The other PGB queries (second table per dataset; the first already holds edges, triangles, both clusterings,
#: modularity, Louvain NMI and degree KL).
PGB_COLUMNS = [
    ("degree_variance_re", "RE degree var."),
    ("diameter_re", "RE diameter"),
    ("cpl_re", "RE CPL"),
    ("assortativity_re", "RE assortativity"),
    ("degree_w1", "degree W1"),
    ("evc_overlap", "EVC top-1% overlap"),
    ("evc_mae", "EVC MAE"),
]


def permute_nodes(graph: Graph, seed: int) -> Graph:
    """The same graph with its node ids shuffled (seeded): releases are judged on graphs whose numbering carries
    nothing, so no generator may profit from the order in which a dataset happens to list its nodes."""
    perm = np.random.default_rng(seed).permutation(graph.num_nodes)
    g, _ = Graph.from_edges(graph.num_nodes, perm[graph.edges], name=graph.name)
    return g


def load_dataset(name: str, permute: bool = True) -> Graph:
    graph = _load_unpermuted(name)
    # One fixed permutation per dataset (seed from the name) so cached cells share the same input.
    return permute_nodes(graph, sum(map(ord, name))) if permute else graph


def _load_unpermuted(name: str) -> Graph:
    if name == "lastfm":
        pairs = np.loadtxt(DATA / "raw" / "lastfm_asia_edges.csv", delimiter=",", skiprows=1, dtype=np.int64)
        ids, inv = np.unique(pairs.ravel(), return_inverse=True)
        g, _ = Graph.from_edges(int(ids.size), inv.reshape(-1, 2), name="lastfm")
        return g
    return _load_edge_dp(name)


def statistics(graph: Graph) -> dict:
    from graphrelease.audit import statistics as st

    stats = pgb_statistics(graph)
    ncomp, comp = sp.csgraph.connected_components(graph.to_csr(), directed=False)
    stats.update(four_cliques=float(st.four_clique_count(graph)), components=int(ncomp),
                 lcc_share=float(np.bincount(comp).max() / graph.num_nodes))
    return stats


def compare(orig: dict, syn: dict) -> dict:
    out = pgb_compare(orig, syn, len(orig["_degrees"]))
    a, b = orig["four_cliques"], syn["four_cliques"]
    out["four_cliques_re"] = abs(b - a) / a if a else float("nan")
    if "input_partition_modularity" in syn:
        a, b = orig["modularity"], syn["input_partition_modularity"]
        out["input_partition_modularity_re"] = abs(b - a) / abs(a) if a else float("nan")
    for key in ("components", "lcc_share", "triangles", "four_cliques", "global_clustering", "avg_clustering"):
        out[key] = syn[key]
    return out


def run_cell(graph: Graph, orig: dict, generator: str, eps: float) -> dict:
    import torch

    from graphrelease.generators import GENERATORS
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.budget import Budget

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_edge_dp import _warm_up

    torch.set_num_threads(1)
    _warm_up()
    budget = Budget(epsilon=eps, delta=DELTA, adjacency="edge")
    # "name:key=value,..." sets keyword options (ablations, e.g. dp_bter:clustering_profile=false).
    name, _, opts = generator.partition(":")
    kwargs = {k: {"true": True, "false": False}.get(v.lower(), v)
              for k, v in (o.split("=", 1) for o in opts.split(",") if o)}
    gen = GENERATORS.get(name)(**kwargs)
    tracemalloc.start()
    t0 = time.process_time()
    fitted = gen.fit(graph, budget)
    fit_cpu = time.process_time() - t0
    (syn,) = fitted.sample(1)
    sample_cpu = time.process_time() - t0 - fit_cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    from graphrelease.audit.statistics import modularity

    syn_stats = statistics(syn)
    # The input's own Louvain partition scored on the release: does the release keep the input's communities (not
    # just some communities)? A G(n, m) graph scores about 0 (RE 1).
    syn_stats["input_partition_modularity"] = modularity(syn, orig["_louvain"])
    res = compare(orig, syn_stats)
    res.update(fit_cpu_s=fit_cpu, sample_cpu_s=sample_cpu, peak_mb=peak / 2**20,
               spent_epsilon=compute_epsilon(budget.ledger, DELTA), ledger_sound=budget.ledger.sound,
               config=getattr(fitted, "config", {}))
    return res


#: Each dataset's input statistics go to their own file, so runs of different datasets into one cache (two processes,
#: one per core) do not overwrite each other's (one shared file did, in session 32).
INPUTS_SUFFIX = "__inputs.json.txt"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_inputs(cache: Path, dataset: str, graph: Graph, orig: dict) -> None:
    summary = {k: v for k, v in orig.items() if not k.startswith("_")}
    summary["nodes"] = graph.num_nodes
    _write_atomic(cache / f"{dataset}{INPUTS_SUFFIX}", json.dumps(summary, default=_json_default, indent=1))


def read_inputs(cache: Path) -> dict:
    """Input statistics per dataset: the per-dataset files, over the single ``inputs.json.txt`` of older caches."""
    legacy = cache / "inputs.json.txt"
    inputs = json.loads(legacy.read_text()) if legacy.exists() else {}
    for path in sorted(cache.glob(f"*{INPUTS_SUFFIX}")):
        inputs[path.name[: -len(INPUTS_SUFFIX)]] = json.loads(path.read_text())
    return inputs


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def _fmt(key: str, values: list) -> str:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return "n/a"
    med = float(np.median(vals))
    if key == "components":
        return f"{med:.0f}"
    if key in ("fit_cpu_s", "sample_cpu_s", "peak_mb"):
        return f"{med:.1f}"
    return f"{med:.3f}"


def render(cache: Path, command: str, inputs: dict, notes: str, appendix: str = "") -> str:
    cells: dict = {}
    for f in sorted(cache.glob("*.json")):
        r = json.loads(f.read_text())
        if "dataset" in r:
            cells.setdefault((r["dataset"], r["epsilon"], r["generator"]), []).append(r)
    lines = [
        "# Structure fidelity of the edge-DP single-graph generators (issue 15)",
        "",
        "Regenerate with:",
        "",
        "```",
        command,
        "```",
        "",
        f"Edge adjacency, delta = {DELTA:g}; every ledger composes to the requested epsilon (`spent` = the PLD "
        "accountant's epsilon). One synthetic graph per run; every cell is the MEDIAN over the runs (`runs`). RE = "
        "|x_syn - x| / |x|. Global clustering = 3 triangles / wedges; average clustering = mean local clustering with "
        "0 for degree < 2 (igraph); modularity = of each graph's own Louvain partition (igraph, seeded); input-partition "
        "mod. = the input's Louvain partition scored on the synthetic graph (G(n, m): RE about 1); Louvain NMI "
        "= NMI of the two Louvain partitions with node ids aligned (arithmetic normalisation; it rewards "
        "fragmentation: an edgeless graph scores 0.37-0.59 on these five); Louvain AMI = their adjusted mutual "
        "information (about 0 for a partition independent of the input's); degree KL = KL(P_orig || P_syn) of the "
        "degree histograms (1e-10 floor); components and LCC share of the synthetic graph. The second table per dataset "
        "holds the other PGB queries: degree variance, diameter and CPL (exact up to 3,000 nodes, else sampled "
        "sources), degree assortativity, Wasserstein-1 distance of the degree distributions, and the top 1% of "
        "nodes by eigenvector centrality (share of the same nodes; MAE of their unit-norm scores). Fit / sample CPU s = process "
        "time of `fit` / of drawing one graph; peak MB = peak traced memory of fit + sample; 2 shared cores.",
        "",
    ]
    if notes:
        lines += [notes, ""]
    order = ["cora", "chameleon", "facebook", "lastfm", "slashdot"]
    # The five first, then any other dataset measured (held-out style checks: citeseer, squirrel, ...).
    datasets = [d for d in order if any(k[0] == d for k in cells)]
    datasets += sorted({k[0] for k in cells} - set(order))
    for d in datasets:
        inp = inputs.get(d)
        lines += [f"## {d}", ""]
        if inp:
            lines += [f"Input: {inp['nodes']:,} nodes, {int(inp['edges']):,} edges, {int(inp['triangles']):,} "
                      f"triangles, {int(inp.get('four_cliques', 0)):,} 4-cliques, global clustering "
                      f"{inp['global_clustering']:.3f}, average clustering "
                      f"{inp['avg_clustering']:.3f}, Louvain modularity {inp['modularity']:.3f}, "
                      f"{inp['components']} components, LCC share {inp['lcc_share']:.3f}.", ""]
        eps_values = sorted({k[1] for k in cells if k[0] == d})
        for columns, title in ((COLUMNS, None), (PGB_COLUMNS, "The other PGB queries:")):
            if title:
                if not any(key in r for rs in cells.values() for r in rs for key, _ in columns):
                    continue  # cells cached before these queries were measured
                lines += ["", title, ""]
            lines += ["| epsilon | generator | runs | spent | " + " | ".join(lbl for _, lbl in columns) + " |",
                      "|" + "---|" * (len(columns) + 4)]
            for eps in eps_values:
                for gname in ("dp_bter", "dp_dcsbm", "privgraph", "chung_lu"):
                    rs = cells.get((d, eps, gname))
                    if not rs:
                        continue
                    row = [f"{eps:g}", gname, str(len(rs)), f"{max(r['spent_epsilon'] for r in rs):.3f}"]
                    row += [_fmt(key, [r.get(key) for r in rs]) for key, _ in columns]
                    lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    if appendix:
        lines += [appendix]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="cora,chameleon,facebook,lastfm,slashdot")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--generators", default="dp_bter,dp_dcsbm,privgraph,chung_lu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / "results" / "structure_permuted"))
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--no-permute", action="store_true", help="keep the datasets' own node numbering")
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--notes-file", default=None, help="markdown inserted after the legend")
    ap.add_argument("--appendix-file", default=None, help="markdown appended after the tables")
    ap.add_argument("--command", default=None, help="the regenerate command shown in the report header")
    args = ap.parse_args(argv)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if not args.render_only:
        for dname in args.datasets.split(","):
            graph = load_dataset(dname, permute=not args.no_permute)
            orig = None
            for eps in (float(e) for e in args.epsilons.split(",")):
                for gname in args.generators.split(","):
                    for run in range(args.runs):
                        path = cache / f"{dname}__{gname}__eps{eps:g}__run{run}.json"
                        if path.exists():
                            continue
                        if orig is None:
                            orig = statistics(graph)
                            _write_inputs(cache, dname, graph, orig)
                        res = run_cell(graph, orig, gname, eps)
                        res.update(dataset=dname, generator=gname, epsilon=eps, run=run)
                        # Atomic: a cell file that exists is never run again, so a half-written one would stay.
                        _write_atomic(path, json.dumps(res, default=_json_default, indent=1))
                        print(f"[{dname}] {gname} eps={eps:g} run {run}: fit {res['fit_cpu_s']:.1f}s "
                              f"tri_re={res['triangles_re']:.3f} gc_re={res['global_clustering_re']:.3f} "
                              f"ac_re={res['avg_clustering_re']:.3f} nmi={res['louvain_nmi']:.3f} "
                              f"mod_re={res['modularity_re']:.3f} kl={res['degree_kl']:.3f} "
                              f"lcc={res['lcc_share']:.3f}", flush=True)
            if orig is None and dname not in read_inputs(cache):
                # Every cell cached but the inputs lost (an older cache's shared file overwritten): measure them again.
                _write_inputs(cache, dname, graph, statistics(graph))
    command = args.command or ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_structure.py "
                               + " ".join(a for a in (argv if argv is not None else sys.argv[1:])
                                          if a != "--render-only"))
    notes = Path(args.notes_file).read_text() if args.notes_file else ""
    appendix = Path(args.appendix_file).read_text() if args.appendix_file else ""
    Path(args.report).write_text(render(cache, command.strip(), read_inputs(cache), notes, appendix))
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
