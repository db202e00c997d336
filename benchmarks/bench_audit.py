"""Audit benchmark: full-audit wall time on Facebook and Slashdot, 5-node graphlets on Facebook, and the empirical
privacy audit (edge, node and graph canaries) on reference and real mechanisms. Writes reports/audit.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit.py [--repeats 3] [--canary-runs 400] \\
        [--deep-runs 100 --deep-modes paper,edge-tuples,buckets --deep-nodes 40] [--model-runs 60] [--skip-slashdot] \\
        [--part all|full|empirical|report --cache results.json]

Full audit = ``run_audit`` with statistics, motifs (3- and 4-node graphlets; no 5-node graphlets), downstream link
prediction (node classification is skipped: these graphs have no features) and the link-inference and membership
attacks, against one DP Chung-Lu release at epsilon=1 of the same graph. Times are medians over ``--repeats`` runs
on one core (torch and BLAS limited to one thread), load included. ``--part`` with ``--cache`` runs the parts one at
a time (finished rows are kept) and ``--part report`` only rewrites the report from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", ROOT.parent / "shared" / "data"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

from graphrelease.audit import empirical as emp  # noqa: E402
from graphrelease.testing import reference_mechanisms as ref  # noqa: E402
from graphrelease.audit.run import run_audit  # noqa: E402
from graphrelease.generators import GENERATORS  # noqa: E402
from graphrelease.io import read_graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

COMMAND = ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit.py "
           "--repeats {repeats} --slashdot-repeats {slashdot_repeats} --canary-runs {canary_runs} "
           "--deep-runs {deep_runs} --deep-modes {deep_modes} --deep-nodes {deep_nodes} "
           "--model-runs {model_runs}{skip}")


def chung_lu_release(graph, epsilon: float):
    gen = GENERATORS.get("chung_lu")()
    budget = Budget(epsilon=epsilon, delta=1e-6, adjacency="edge")
    fitted = gen.fit(graph, budget)
    rel = fitted.sample(1, rng=np.random.default_rng())[0]
    return rel.replace(name=f"chung_lu eps={epsilon:g}"), budget.spent_epsilon()


def time_full_audit(name: str, path: Path, repeats: int) -> dict:
    t0 = time.perf_counter()
    graph = read_graph(path).data
    load = time.perf_counter() - t0
    release, spent = chung_lu_release(graph, 1.0)
    load_start = os.getloadavg()[0]
    runs, cpu = [], []
    last = None
    for r in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        last = run_audit(graph, [release], tasks=("statistics", "motifs", "downstream"),
                         attacks=("link_inference", "membership"), motif_size=4, seed=r)
        runs.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        print(f"{name}: run {r + 1}/{repeats}: {runs[-1]:.1f} s wall, {cpu[-1]:.1f} CPU-s  stages {last.timings}",
              flush=True)
    return {"name": name, "nodes": graph.num_nodes, "edges": graph.num_edges, "read_s": load,
            "median_s": statistics.median(runs), "runs": runs, "median_cpu_s": statistics.median(cpu), "cpu": cpu,
            "stages": last.timings, "spent": spent, "load": [load_start, os.getloadavg()[0]],
            "table1": last.table1[0], "attacks": last.attacks[release.name],
            "downstream": last.downstream[release.name]}


def time_five_node(path: Path, limit: float) -> dict:
    """5-node graphlets of one graph with the audit's time limit (ESU pilot, then the lifting sampler)."""
    from graphrelease.audit import motifs as mo

    graph = read_graph(path).data
    load_start = os.getloadavg()[0]
    t, c = time.perf_counter(), time.process_time()
    res = mo.graphlet_counts(graph, sizes=(5,), time_limit=limit, seed=0)
    return {"limit": limit, "wall": time.perf_counter() - t, "cpu": time.process_time() - c, "method": res.method[5],
            "names": list(mo.GRAPHLET_NAMES[8:]), "counts": res.counts[8:].tolist(), "low": res.ci_low[8:].tolist(),
            "high": res.ci_high[8:].tolist(), "load": [load_start, os.getloadavg()[0]], "edges": graph.num_edges}


def small_graph(n: int, *, keep_metadata: bool = False):
    g = read_graph(DATA / "single" / "cora.npz").data
    sub = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:n]))
    return sub if keep_metadata else sub.without_private_metadata()


def node_and_graph_rows(model_runs: int, cache: dict) -> list[dict]:
    """Node canaries (80 labelled Cora nodes) and graph canaries (60 MUTAG graphs): reference mechanisms and real
    models / generators, honest and broken (trained without noise while claiming eps=1)."""
    import math

    from graphrelease.models import MODELS

    g = small_graph(80, keep_metadata=True)
    mutag = read_graph(DATA / "collections" / "MUTAG").data.subset(range(60))

    def mlp():
        return MODELS.get("dp-mlp")(epochs=10, hidden=32)

    slot = emp.model_canary_slot(mlp, g.num_nodes)
    model_canary = emp.choose_canary_node(g, np.random.default_rng(1), slot=slot)
    ref_canary = emp.choose_canary_node(g, np.random.default_rng(2), feature_nonzeros=1)
    gen = GENERATORS.get
    cases = [
        ("node", "reference class sums + Laplace, eps=1 (honest)", ref.class_sums_train_and_score(1.0), 2000,
         ref_canary),
        ("node", "reference class sums, noise off, claims eps=1 (broken)",
         ref.class_sums_train_and_score(1.0, noise=False), 2000, ref_canary),
        ("node", "dp-mlp, node adjacency, eps=1", emp.model_train_and_score(mlp, epsilon=1.0, delta=1e-5),
         model_runs, model_canary),
        ("node", "dp-mlp trained without noise, claims eps=1 (broken)",
         emp.model_train_and_score(mlp, epsilon=math.inf, delta=1e-5), 400, model_canary),
        ("graph", "reference node-count histogram + Laplace, eps=1 (honest)", ref.size_histogram_train_and_score(1.0),
         2000, None),
        ("graph", "reference node-count histogram, noise off, claims eps=1 (broken)",
         ref.size_histogram_train_and_score(1.0, noise=False), 2000, None),
        ("graph", "dpgvae mode=graphs, graph adjacency, eps=1 (epochs=5)",
         emp.collection_generator_train_and_score(lambda: gen("dpgvae")(mode="graphs", epochs=5), epsilon=1.0,
                                                  delta=1e-5), model_runs, None),
        ("graph", "gvae (non-private) claims eps=1 (broken)",
         emp.collection_generator_train_and_score(lambda: gen("gvae")(epochs=5), epsilon=math.inf, delta=1e-5),
         400, None),
    ]
    rows = []
    for kind, label, tas, runs, canary in cases:
        if label in cache:
            rows.append(cache[label])
            continue
        t = time.perf_counter()
        if kind == "node":
            res = emp.run_node_canary_audit(g, tas, runs=runs, delta=1e-5, claimed_epsilon=1.0, canary=canary,
                                            rng=np.random.default_rng(0), label=label)
        else:
            res = emp.run_graph_canary_audit(mutag, tas, runs=runs, delta=1e-5, claimed_epsilon=1.0,
                                             rng=np.random.default_rng(0), label=label)
        d = res.to_dict()
        d["seconds"] = time.perf_counter() - t
        rows.append(d)
        cache[label] = d
        save_cache()
        print(f"{label}: eps_lb={res.epsilon_lower:.3f} via {res.attack} in {d['seconds']:.1f} s", flush=True)
    return rows


def empirical_rows(canary_runs: int, deep_runs: int, cache: dict, deep_modes: tuple[str, ...] = (),
                   deep_nodes: int = 80) -> list[dict]:
    g = small_graph(80)
    g_deep = small_graph(deep_nodes)
    rows = []
    cases = [
        ("reference edge RR, eps=1 (honest)", ref.randomized_response_train_and_score(1.0), 1.0, 1e-5),
        ("reference edge RR, noise off, claims eps=1 (broken)",
         ref.randomized_response_train_and_score(1.0, noise=False), 1.0, 1e-5),
    ]
    RR = GENERATORS.get("randomized_response")
    cases.append(("randomized_response mode=symmetric, eps=1",
                  emp.generator_train_and_score(lambda: RR(mode="symmetric"), epsilon=1.0, delta=1e-5), 1.0, 1e-5))
    cases.append(("randomized_response mode=edgerand, eps=1",
                  emp.generator_train_and_score(lambda: RR(mode="edgerand"), epsilon=1.0, delta=1e-5), 1.0, 1e-5))
    for name in ("chung_lu", "tmf"):
        if name in GENERATORS:
            cls = GENERATORS.get(name)
            cases.append((f"{name}, eps=1",
                          emp.generator_train_and_score(lambda c=cls: c(), epsilon=1.0, delta=1e-5), 1.0, 1e-5))
    for name, mode in (("dpgvae", "edge-tuples"), ("dpgvae", "buckets"), ("dpgvae", "paper")):
        if name in GENERATORS and (deep_runs <= 0 or mode not in deep_modes):
            key = f"{name} mode={mode}, eps=1 (stated)"
            if key not in cache:
                cost = deep_fit_cost(g_deep, name, mode)
                cache[key] = {"label": key, "skipped": (
                    f"one re-fit costs {cost:.1f} CPU-s on the {deep_nodes}-node graph; a perfect attack needs about 60 "
                    f"runs before the bound can exceed eps=1 (table below), i.e. {60 * cost / 60:.0f} CPU-min, "
                    "several times that in wall time on the shared cores; left for a quieter machine "
                    "(--deep-runs 60 --deep-modes paper,edge-tuples,buckets)")}
                save_cache()
            rows.append(cache[key])
            continue
        if name in GENERATORS:
            cls = GENERATORS.get(name)
            cases.append((f"{name} mode={mode}, eps=1 (stated)",
                          emp.generator_train_and_score(lambda c=cls, m=mode: c(mode=m), epsilon=1.0, delta=1e-5),
                          1.0, 1e-5))
        else:
            rows.append({"label": f"{name} mode={mode}", "skipped": f"generator '{name}' is not registered yet"})
    for label, tas, eps, delta in cases:
        if label in cache:
            rows.append(cache[label])
            continue
        runs = 2000 if label.startswith("reference") else deep_runs if label.startswith("dpg") else canary_runs
        t = time.perf_counter()
        try:
            res = emp.run_canary_audit(g_deep if label.startswith("dpg") else g, tas, runs=runs, delta=delta, claimed_epsilon=eps,
                                       rng=np.random.default_rng(0), label=label)
        except Exception as err:  # report, do not hide: a generator that cannot be re-fitted is a finding
            rows.append({"label": label, "skipped": f"{type(err).__name__}: {err}"})
            print(f"{label}: FAILED {err}", flush=True)
            continue
        d = res.to_dict()
        d["seconds"] = time.perf_counter() - t
        rows.append(d)
        cache[label] = d
        save_cache()
        print(f"{label}: eps_lb={res.epsilon_lower:.3f} via {res.attack} (tpr {res.bound.tpr:.3f} fpr "
              f"{res.bound.fpr:.3f}) in {d['seconds']:.1f} s", flush=True)
    return rows


def deep_fit_cost(g, name: str, mode: str) -> float:
    """CPU seconds of one fit (what every canary run of that mechanism would cost)."""
    c = time.process_time()
    GENERATORS.get(name)(mode=mode).fit(g, Budget(epsilon=1.0, delta=1e-5, adjacency="edge"))
    cost = time.process_time() - c
    print(f"{name} mode={mode}: one fit {cost:.1f} CPU-s", flush=True)
    return cost


def max_bound_rows() -> list[str]:
    """The largest lower bound the audit can report with R runs (perfectly separating attack)."""
    rows = []
    for runs in (30, 60, 100, 200, 400, 1000, 2000):
        half = runs // 2
        binary = emp.epsilon_lower_bound([1.0] * half, [0.0] * half, delta=1e-5).epsilon
        cont = emp.epsilon_lower_bound(np.arange(half, runs, dtype=float), np.arange(half, dtype=float),
                                       delta=1e-5).epsilon
        rows.append(f"| {runs} | {binary:.2f} | {cont:.2f} |")
    return rows


def _bound_row(e: dict) -> str:
    if "skipped" in e:
        return f"| {e['label']} | - | - | - | not run: {e['skipped'].removeprefix('not run: ')} | - | - | - |"
    return (f"| {e['label']} | {e['runs']} | {e['claimed_epsilon']:g} | {e.get('attack', 'score')} | "
            f"{e['epsilon_lower']:.3f} | {e['bound']['tpr']:.3f} / {e['bound']['fpr']:.3f} | "
            f"{'YES' if e['violation'] else 'no'} | {e['seconds']:.1f} |")


def _per_attack(e: dict) -> str:
    parts = [f"{name} {a['bound']['epsilon']:.3f}" for name, a in (e.get("attacks") or {}).items()]
    return ", ".join(parts)


def write_report(full: list[dict], empirical: list[dict], node_graph: list[dict], args) -> Path:
    skip = " --skip-slashdot" if args.skip_slashdot else ""
    loads = [f"{x:.1f}" for r in full for x in r.get("load", [])]
    emp_load = CACHE.get("empirical_load")
    # the highest 1-min load seen with `uptime` while the canary audits ran (sampled by hand, so optional)
    peak = f" (up to {CACHE['empirical_load_peak']:.1f} in between)" if "empirical_load_peak" in CACHE else ""
    lines = [
        "# Audit benchmark",
        "",
        "Regenerate with:",
        "",
        "```",
        COMMAND.format(repeats=args.repeats, slashdot_repeats=args.slashdot_repeats, canary_runs=args.canary_runs,
                       deep_runs=args.deep_runs, deep_modes=args.deep_modes, deep_nodes=args.deep_nodes,
                       model_runs=args.model_runs, skip=skip),
        "```",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}, one thread; "
        f"{os.cpu_count()} cores shared with 4 other engineers' jobs while measured. Load average (1 min) at start "
        f"and end of each timed graph: {', '.join(loads) or '-'}; of the canary audits: "
        f"{' to '.join(f'{x:.1f}' for x in emp_load) if emp_load else '-'}{peak}.",
        "",
        "## Full audit time",
        "",
        "`run_audit(original, [release])` with statistics (NetGAN suite + PGB queries + spectrum), 3/4-node "
        "graphlets (no 5-node graphlets), downstream link prediction and the link-inference / membership attacks. "
        "The release is one DP Chung-Lu graph at epsilon=1 of the same input. Target from issue 5: under 60 s on "
        "Facebook.",
        "",
        "| graph | nodes | edges | median CPU-s | median wall (s) | runs wall (s) | statistics | motifs | "
        "downstream | attacks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in full:
        st = r["stages"]
        lines.append(f"| {r['name']} | {r['nodes']:,} | {r['edges']:,} | {r['median_cpu_s']:.1f} | {r['median_s']:.1f} | "
                     + ", ".join(f"{x:.1f}" for x in r["runs"])
                     + f" | {st.get('statistics', 0):.1f} | {st.get('motifs', 0):.1f} | "
                     f"{st.get('downstream', 0):.1f} | {st.get('attacks', 0):.1f} |")
    lines += ["", "CPU-s = process CPU time (user + system) of the audit; wall times include waiting for a core. "
              "Stage columns are wall seconds of the last run. What the audit found for these releases:", ""]
    for r in full:
        t1 = r["table1"]
        li = r["attacks"].get("link_inference", {})
        mem = r["attacks"].get("membership_adjacency", {})
        lp = next((d for d in r["downstream"] if d["task"] == "link_prediction"), {})
        lines.append(
            f"- {r['name']} (Chung-Lu, eps spent {r['spent']:.3g}): |diff| LCC {t1['lcc']:.4g}, TC {t1['tc']:.4g}, "
            f"CPL {t1['cpl']:.4g}, GINI {t1['gini']:.4g}, REDE {t1['rede']:.4g}; link-inference AUC "
            f"{li.get('auc', float('nan')):.3f} (original itself: "
            f"{r['attacks'].get('link_inference_reference', {}).get('auc', float('nan')):.3f}); edge membership AUC "
            f"{mem.get('auc', float('nan')):.3f}, TPR@1%FPR {mem.get('tpr_at_1pct_fpr', float('nan')):.3f}; link "
            f"prediction AUC trained on the release {lp.get('release_auc', float('nan')):.3f} vs on the original "
            f"{lp.get('original_auc', float('nan')):.3f}")
    five = CACHE.get("five_node")
    if five:
        lines += [
            "",
            "## 5-node graphlets on Facebook",
            "",
            f"`graphlet_counts(facebook, sizes=(5,), time_limit={five['limit']:.0f})` (not part of the full audit "
            f"above): {five['wall']:.1f} s wall, {five['cpu']:.1f} CPU-s, load {five['load'][0]:.1f} to "
            f"{five['load'][1]:.1f}; {five['method']}. The ESU pilot takes up to a quarter of the limit; the lifting "
            "sampler uses the rest. Its sampling probabilities are checked exactly (they sum to 1 over all connected "
            "5-sets of real molecules) and its 99.9 % intervals cover the exact ESU counts on Cora and LastFM "
            "subgraphs (tests/audit/test_motifs.py).",
            "",
            "| graphlet | estimate | 95 % interval | relative half-width |",
            "|---|---|---|---|",
        ]
        for name, c, lo, hi in zip(five["names"], five["counts"], five["low"], five["high"]):
            lines.append(f"| {name} | {c:.4g} | [{lo:.4g}, {hi:.4g}] | {(hi - lo) / 2 / max(c, 1e-300):.3f} |")
    lines += [
        "",
        "## Empirical privacy audit",
        "",
        "Multi-run canary audit (Jagielski et al. 2020): the canary is inserted in half of the runs; each run "
        "re-fits the mechanism from scratch with fresh noise and attacks the release. Lower bound = max over "
        "thresholds and four (tail, ordering) events of log((TPR_lo - delta)/FPR_hi), Clopper-Pearson at 95 % with "
        "Bonferroni over all tests and over the attacks run on the same releases (per-attack bounds below each "
        "table). A lower bound above the stated epsilon proves the mechanism is less private than stated; a zero "
        "bound is no evidence of leakage at this run count, not a measurement of epsilon (largest reachable bounds "
        "at the end).",
        "",
        "### Edge canaries",
        "",
        f"One canary edge (a non-edge of the base graph). Base graph: the 80 highest-degree Cora nodes; DPGVAE rows "
        f"use the {args.deep_nodes} highest-degree nodes, because one mode=paper re-fit (2,000 steps) costs several "
        "CPU-s. Attacks: `score`/`sampled_graphs` = the canary pair is in the released graph (node order kept); "
        "`decoder_inner_product` = the released decoder's score of the pair from the released per-node latents "
        "(edge-tuples); `sampled_graphs_degree_aligned` = the pair is in one sampled graph after matching "
        "nodes by degree rank (decoders released without per-node latents: paper); "
        "`released_edge_count` = the released edge-count target (DP in sound modes).",
        "",
        "| mechanism | runs | stated eps | best attack | eps lower bound | TPR / FPR | violation | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_bound_row(e) for e in empirical]
    multi = [e for e in empirical if len(e.get("attacks") or {}) > 1]
    if multi:
        lines += ["", "Per-attack bounds: " + "; ".join(f"{e['label']}: {_per_attack(e)}" for e in multi) + "."]
    lines += ["", "### Node and graph canaries", "",
              "Node canaries (node adjacency; 80 labelled Cora nodes with features): one extra node slot holds a "
              "crafted node (20 random words, the rarest class, edges to median-degree many random nodes; the "
              "reference rows use one word so the clipped row's whole norm sits in one Laplace coordinate) in "
              "in-runs and is empty in out-runs. Attacks: `log_prob` = the released classifier's log-probability "
              "of the canary's label at its slot (a training slot of the public split); `likelihood_ratio` = the "
              "Neyman-Pearson statistic of the Laplace reference. Graph canaries (graph adjacency; the first 60 "
              "MUTAG graphs): a clique on the least frequent node count between the collection's smallest and "
              "largest graph (27 nodes here, a size none of the 60 has), added in in-runs. Attacks: "
              "`node_count_probability` = the released node-count distribution at the canary's size; "
              "`decoder_log_likelihood` = Monte-Carlo log-likelihood of the canary under the released decoder (8 "
              "prior draws); `released_count` = the reference histogram's count.",
              "",
              "| mechanism | runs | stated eps | best attack | eps lower bound | TPR / FPR | violation | seconds |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [_bound_row(e) for e in node_graph]
    multi = [e for e in node_graph if len(e.get("attacks") or {}) > 1]
    if multi:
        lines += ["", "Per-attack bounds: " + "; ".join(f"{e['label']}: {_per_attack(e)}" for e in multi) + "."]
    lines += ["", "Reading the tables:", ""] + [f"- {x}" for x in reading(empirical, node_graph)] + [
        "",
        "Largest lower bound the audit can report with R runs (half in, half out) when one attack separates in- "
        "from out-runs perfectly, at delta = 1e-5 and 95 % confidence. Binary scores give 2 thresholds, continuous "
        "scores up to 32, so a larger Bonferroni correction:",
        "",
        "| runs R | binary score | continuous score |",
        "|---|---|---|",
        *max_bound_rows(),
        "",
    ]
    out = ROOT / "reports" / "audit.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines))
    return out


def _find(rows: list[dict], prefix: str) -> dict | None:
    return next((e for e in rows if e.get("label", "").startswith(prefix) and "bound" in e), None)


def reading(empirical: list[dict], node_graph: list[dict]) -> list[str]:
    """What the tables say, with the numbers taken from them."""
    out = []
    broken = [e for e in empirical + node_graph if "(broken)" in e.get("label", "") and "bound" in e]
    if broken:
        out.append("Every deliberately broken mechanism (no noise while claiming eps=1) is flagged: "
                   + "; ".join(f"{e['label']}: {e['epsilon_lower']:.2f} via {e.get('attack')}" for e in broken)
                   + ". The honest reference mechanisms stay below 1 and close to it (their attacks are the "
                   "Neyman-Pearson tests), which shows the audit's power at these run counts.")
    sym = _find(empirical, "randomized_response mode=symmetric")
    if sym is not None:
        import math

        p_half = math.exp(0.5) / (1 + math.exp(0.5))
        out.append(
            f"`randomized_response mode=symmetric` at eps=1 keeps a canary with observed rate "
            f"{sym['bound']['tpr']:.3f} vs {sym['bound']['fpr']:.3f} without it; its code keeps a cell with "
            f"p = e^(eps/2)/(1+e^(eps/2)) = {p_half:.3f}, so one edge moves each cell's likelihood by e^(eps/2): "
            "the mechanism is (eps/2)-DP per edge while its ledger charges eps (bounded-range accounting). Sound, "
            "but a factor 2 conservative for a single release.")
    paper, sound = _find(empirical, "dpgvae mode=paper"), _find(empirical, "dpgvae mode=edge-tuples")
    if paper is not None:
        out.append(
            f"DPGVAE mode=paper (the seed's Algorithm 1, certificate `guarantee: none`) at a stated eps=1: lower "
            f"bound {paper['epsilon_lower']:.2f} over {paper['runs']} runs ({_per_attack(paper)}), "
            f"{'a violation' if paper['violation'] else 'no violation'}, {paper['seconds']:.0f} s wall for the "
            f"{paper['runs']} re-fits. The leak is the released edge-count target (TPR "
            f"{paper['attacks']['released_edge_count']['bound']['tpr']:.2f}, FPR "
            f"{paper['attacks']['released_edge_count']['bound']['fpr']:.2f}): mode=paper reads |E| without noise "
            "(as the seed does, and as its certificate declares), so the released config moves by exactly one edge "
            "with the canary. A perfect attack cannot show more than this with this run count and two attacks "
            "(about 2.1 with one, table below); the true leakage is unbounded (the count is exact). The structural "
            "attack on a sampled graph (degree-aligned, the seed's own protocol) never found the canary pair, in "
            "in- or out-runs: the released decoder samples exchangeable nodes, so single edges do not survive "
            "alignment.")
    if sound is not None:
        out.append(
            f"DPGVAE mode=edge-tuples (sound, certified) at eps=1: lower bound {sound['epsilon_lower']:.2f} over "
            f"{sound['runs']} runs ({_per_attack(sound)}); its edge count is a Gaussian release and its decoder "
            "scores of the canary pair do not separate in- from out-runs. No evidence against the certificate; "
            "with these run counts the audit could only have caught a gross violation.")
    mlp = _find(node_graph, "dp-mlp, node adjacency")
    if mlp is not None:
        out.append(f"DP-MLP under node adjacency at eps=1: lower bound {mlp['epsilon_lower']:.2f} over "
                   f"{mlp['runs']} runs (canary log-probability). The same model trained without noise is flagged "
                   "(row above), so the attack works; with noise the canary's label is not memorised measurably.")
    gg = _find(node_graph, "dpgvae mode=graphs")
    if gg is not None:
        out.append(f"DPGVAE mode=graphs under graph adjacency at eps=1: lower bound {gg['epsilon_lower']:.2f} over "
                   f"{gg['runs']} runs ({_per_attack(gg)}); the non-private GVAE on the same collection is flagged "
                   "through its exact node-count distribution.")
    return out


CACHE: dict = {}
CACHE_PATH: Path | None = None


def save_cache() -> None:
    if CACHE_PATH is not None:
        CACHE_PATH.write_text(json.dumps(CACHE))


def main() -> None:
    global CACHE_PATH
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--canary-runs", type=int, default=400)
    ap.add_argument("--slashdot-repeats", type=int, default=1)
    ap.add_argument("--skip-slashdot", action="store_true")
    ap.add_argument("--deep-runs", type=int, default=0,
                    help="canary runs for DPGVAE (each run re-trains it); 0 = measure one fit's cost only")
    ap.add_argument("--deep-modes", default="edge-tuples", help="DPGVAE modes audited with --deep-runs re-fits")
    ap.add_argument("--deep-nodes", type=int, default=80, help="base graph size (highest-degree Cora nodes) for DPGVAE")
    ap.add_argument("--model-runs", type=int, default=60,
                    help="runs for the real private model / collection generator audits (node and graph canaries)")
    ap.add_argument("--part", choices=("all", "full", "empirical", "report"), default="all",
                    help="run only one part (results are kept in --cache; the report is written from the cache)")
    ap.add_argument("--cache", type=Path, default=None, help="JSON file keeping finished results between runs")
    args = ap.parse_args()
    CACHE_PATH = args.cache
    if CACHE_PATH is not None and CACHE_PATH.is_file():
        CACHE.update(json.loads(CACHE_PATH.read_text()))
    CACHE.setdefault("full", {})
    CACHE.setdefault("empirical", {})
    jobs = [("Facebook", "facebook_combined.txt.gz", args.repeats)]
    if not args.skip_slashdot:
        jobs.append(("Slashdot", "soc-Slashdot0902.txt.gz", args.slashdot_repeats))
    if args.part in ("all", "full"):
        for name, fname, reps in jobs:
            if name not in CACHE["full"]:
                CACHE["full"][name] = time_full_audit(name, DATA / "raw" / fname, reps)
                save_cache()
        if "five_node" not in CACHE:
            CACHE["five_node"] = time_five_node(DATA / "raw" / "facebook_combined.txt.gz", 60.0)
            save_cache()
    CACHE.setdefault("node_graph", {})
    if args.part in ("all", "empirical"):
        CACHE.setdefault("empirical_load", [os.getloadavg()[0]])
        empirical_rows(args.canary_runs, args.deep_runs, CACHE["empirical"], tuple(args.deep_modes.split(",")),
                       args.deep_nodes)
        node_and_graph_rows(args.model_runs, CACHE["node_graph"])
        CACHE["empirical_load"] = CACHE["empirical_load"][:1] + [os.getloadavg()[0]]
        save_cache()
    full = [CACHE["full"][name] for name, _, _ in jobs if name in CACHE["full"]]
    empirical = list(CACHE["empirical"].values())
    print(f"wrote {write_report(full, empirical, list(CACHE['node_graph'].values()), args)}")


if __name__ == "__main__":
    main()
