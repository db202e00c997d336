"""Audit benchmark: full-audit wall time on Facebook and Slashdot, and the empirical privacy audit on real
mechanisms. Writes reports/audit.md.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit.py [--repeats 3] [--canary-runs 400] [--skip-slashdot]

Full audit = ``run_audit`` with statistics, motifs (3- and 4-node graphlets; no 5-node graphlets), downstream link
prediction (node classification is skipped: these graphs have no features) and the link-inference and membership
attacks, against one DP Chung-Lu release at epsilon=1 of the same graph. Times are medians over ``--repeats`` runs
on one core (torch and BLAS limited to one thread), load included.
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
from graphrelease.audit.run import run_audit  # noqa: E402
from graphrelease.generators import GENERATORS  # noqa: E402
from graphrelease.io import read_graph  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

COMMAND = ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_audit.py "
           "--repeats {repeats} --slashdot-repeats {slashdot_repeats} --canary-runs {canary_runs} "
           "--deep-runs {deep_runs} --deep-modes {deep_modes}{skip}")


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
            "stages": last.timings, "spent": spent,
            "table1": last.table1[0], "attacks": last.attacks[release.name],
            "downstream": last.downstream[release.name]}


def small_graph(n: int):
    g = read_graph(DATA / "single" / "cora.npz").data
    return g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:n])).without_private_metadata()


def empirical_rows(canary_runs: int, deep_runs: int, cache: dict, deep_modes: tuple[str, ...] = ()) -> list[dict]:
    g = small_graph(80)
    rows = []
    cases = [
        ("reference edge RR, eps=1 (honest)", emp.randomized_response_train_and_score(1.0), 1.0, 1e-5),
        ("reference edge RR, noise off, claims eps=1 (broken)",
         emp.randomized_response_train_and_score(1.0, noise=False), 1.0, 1e-5),
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
    for name, mode in (("dpgvae", "edge-tuples"), ("dpgvae", "paper")):
        if name in GENERATORS and (deep_runs <= 0 or mode not in deep_modes):
            key = f"{name} mode={mode}, eps=1 (stated)"
            if key not in cache:
                cost = deep_fit_cost(g, name, mode)
                cache[key] = {"label": key, "skipped": (
                    f"one re-fit costs {cost:.1f} CPU-s on this 80-node graph; a perfect attack needs about 60 "
                    f"runs before the bound can exceed eps=1 (table below), i.e. {60 * cost / 60:.0f} CPU-min, "
                    "several times that in wall time on the shared cores; left for a quieter machine "
                    "(--deep-runs 60 --deep-modes paper,edge-tuples)")}
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
            res = emp.run_canary_audit(g, tas, runs=runs, delta=delta, claimed_epsilon=eps,
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
        print(f"{label}: eps_lb={res.epsilon_lower:.3f} (tpr {res.bound.tpr:.3f} fpr {res.bound.fpr:.3f}) "
              f"in {d['seconds']:.1f} s", flush=True)
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


def write_report(full: list[dict], empirical: list[dict], args) -> Path:
    skip = " --skip-slashdot" if args.skip_slashdot else ""
    lines = [
        "# Audit benchmark",
        "",
        "Regenerate with:",
        "",
        "```",
        COMMAND.format(repeats=args.repeats, slashdot_repeats=args.slashdot_repeats, canary_runs=args.canary_runs,
                       deep_runs=args.deep_runs, deep_modes=args.deep_modes, skip=skip),
        "```",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}, one thread; "
        f"{os.cpu_count()} cores shared with up to 7 other engineers' jobs while measured (load average about 8).",
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
    lines += ["", "CPU-s = process CPU time (user + system) of the audit, the figure least disturbed by other jobs on "
              "the shared cores; wall times include waiting for a core. Stage columns are wall seconds of the last "
              "run. What the audit found for these releases:", ""]
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
    lines += [
        "",
        "## Empirical privacy audit (canary edges)",
        "",
        "Multi-run canary audit (Jagielski et al. 2020): one canary edge (a non-edge of the base graph) is added in "
        "half of the runs; each run re-fits the mechanism from scratch with fresh noise; the attack score is the "
        "release's evidence for the canary (edge present in the released graph, or the released decoder's "
        "inner product). Lower bound = max over thresholds and four (tail, ordering) events of "
        "log((TPR_lo - delta)/FPR_hi), Clopper-Pearson at 95 % with Bonferroni over all tests. Base graph: the 80 "
        "highest-degree Cora nodes (re-fitting hundreds of times on a large graph is too costly). A lower bound "
        "above the stated epsilon proves the mechanism is less private than stated.",
        "",
        "| mechanism | runs | stated eps | eps lower bound | TPR / FPR at the best threshold | violation | "
        "seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in empirical:
        if "skipped" in e:
            lines.append(f"| {e['label']} | - | - | not run: {e['skipped'].removeprefix('not run: ')} | - | - | - |")
            continue
        lines.append(f"| {e['label']} | {e['runs']} | {e['claimed_epsilon']:g} | {e['epsilon_lower']:.3f} | "
                     f"{e['bound']['tpr']:.3f} / {e['bound']['fpr']:.3f} | {'YES' if e['violation'] else 'no'} | "
                     f"{e['seconds']:.1f} |")
    sym = next((e for e in empirical if e.get("label", "").startswith("randomized_response mode=symmetric")
                and "bound" in e), None)
    lines += ["", "Reading the table:", ""]
    lines.append("- The broken reference (no noise, claiming eps=1) is flagged far above its claim; the honest one "
                 "stays below 1, close to it (the attack is optimal for randomized response).")
    if sym is not None:
        import math

        p_half = math.exp(0.5) / (1 + math.exp(0.5))
        lines.append(
            f"- `randomized_response mode=symmetric` at eps=1 keeps a canary with observed rate "
            f"{sym['bound']['tpr']:.3f} vs {sym['bound']['fpr']:.3f} without it; its code keeps a cell with "
            f"p = e^(eps/2)/(1+e^(eps/2)) = {p_half:.3f}, so one edge moves each cell's likelihood by e^(eps/2): "
            "the mechanism is (eps/2)-DP per edge while its ledger charges eps (bounded-range accounting). "
            "Sound, but a factor 2 conservative for a single release.")
    lines.append("- Zero bounds (edgerand, Chung-Lu, TmF, DPGVAE edge-tuples) mean the attack found no threshold at "
                 "which the confidence intervals rule out zero leakage; with these run counts that is evidence of no gross "
                 "violation, not a measurement of epsilon (see the largest reachable bound below). DPGVAE scores "
                 "are the released decoder's inner products of the canary's released posterior latents; "
                 "mode=paper releases no per-node latents, so its audit would need sampled graphs plus degree "
                 "alignment.")
    lines += [
        "",
        "Largest lower bound the audit can report with R runs (half in, half out) when the attack separates in- "
        "from out-runs perfectly, at delta = 1e-5 and 95 % confidence. Binary scores (edge present or not) give 2 "
        "thresholds, continuous scores up to 32, so a larger Bonferroni correction:",
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
    ap.add_argument("--part", choices=("all", "full", "empirical"), default="all",
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
    if args.part in ("all", "empirical"):
        empirical_rows(args.canary_runs, args.deep_runs, CACHE["empirical"], tuple(args.deep_modes.split(",")))
    full = [CACHE["full"][name] for name, _, _ in jobs if name in CACHE["full"]]
    empirical = list(CACHE["empirical"].values())
    print(f"wrote {write_report(full, empirical, args)}")


if __name__ == "__main__":
    main()
