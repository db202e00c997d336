"""Reproduce the private-model comparisons and write reports/private_models.md.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_private_models.py --seeds 5 \
        --datasets cora,citeseer,chameleon [--results reports/private_models.jsonl]

Every finished run is appended to the JSONL results file (so a long run can be resumed: finished
(dataset, method, setting, seed) tuples are skipped) and the Markdown report is re-rendered from it at the end
(``--render-only`` renders without running).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "single"

# Small epoch counts: the whole table has to run on one shared CPU core.
# Issue #17 re-run: GAP runs its defaults (hops=auto, i.e. one hop under node adjacency; probability rows), DPAR its
# defaults (every training node a source, 100 epochs).
OPTIONS = {
    "dp-mlp": {"epochs": 20},
    # GAP under node adjacency trains one network in two phases (encoder, then classifier with the hops): 10 + 10 =
    # DP-MLP's 20 epochs (issue #17, models/residual.py); fixed by that rule, not chosen on a split.
    "gap": {"encoder_epochs": 10, "epochs": 10},
    "dpdgc": {"encoder_epochs": 5, "epochs": 20},
    "dpar": {},
}

TABLE2 = [  # (adjacency, epsilon, methods)
    ("edge", 1.0, ["dpdgc", "gap", "dp-mlp"]),
    ("k-neighbor:1", 16.0, ["dpdgc", "dp-mlp"]),
    ("k-neighbor:5", 16.0, ["dpdgc", "dp-mlp"]),
    ("k-neighbor:25", 16.0, ["dpdgc", "dp-mlp"]),
    ("node", 8.0, ["dpdgc", "gap", "dp-mlp", "dpar"]),
    ("node", 16.0, ["dpdgc", "gap", "dp-mlp"]),
]
COLUMNS = ("dpdgc", "gap", "dp-mlp", "dpar")
GAP_WEIGHTED = [("edge", e) for e in (1.0, 2.0, 4.0, 8.0)]
# Link prediction (edge adjacency): GAP aggregates + DP-SGD scorer, the relational encoder; inf = non-private GAP.
LINK = [("gap-link", e) for e in (1.0, 2.0, 4.0, 8.0, math.inf)] + [("relational", 4.0), ("features", 0.0)]
LINK_OPTIONS = {"gap-link": {}, "relational": {"steps": 100, "hidden": 64, "out_dim": 32},
                "features": {}}


ISSUE17_NOTE = ("**Issue #17 re-run (2026-11-24).** The k-neighbor and node rows were re-run with the current code "
                "(ghost clipping where layers allow; the exact replace-one pair for one-example stages; GAP's defaults: "
                "probability rows, `hops=auto` = one hop under node adjacency, Gaussian aggregation under node "
                "adjacency; DPAR's defaults: every training node a source, 100 epochs) with `--skip-edge`; datasets "
                "and seeds as far as the session's time allowed (n per cell). Their earlier measurements, made before "
                "issue #17, are kept in `reports/private_models_pre17.jsonl` and no longer rendered; datasets without "
                "re-run cells show '-'. The `edge, eps=1 (edge report)` row is read from "
                "`reports/private_models_edge.jsonl` (the current models, 5 seeds; eps 1/2/4/8 in "
                "`reports/private_models_edge.md`). The GAP weighting comparison and the link-prediction table below "
                "were measured before issue #17 (GAP: 32-dim encoder bottleneck, two Gaussian hops).\n\n"
                "**Residual re-run (2026-11-24, second session).** Every GAP and DPDGC k-neighbor / node cell was "
                "re-run after the node-adjacency fix (`graphrelease/models/residual.py`): the private classifier is "
                "DP-MLP's network with a zero-initialised linear read of the released graph inputs added to its "
                "logits (GAP: its encoder's network continued, 10 + 10 epochs = DP-MLP's 20, row-normalised hops, "
                "`hop_inputs=auto`; DPDGC: a fresh DP-MLP network, `graph_share=auto` = 1/g). The cells those replace "
                "are kept in `reports/private_models_pre_residual.jsonl`; DP-MLP and DPAR cells of Cora, CiteSeer, "
                "Chameleon and Squirrel are the earlier runs (their code did not change); Cora-ML, PubMed and "
                "Tolokers were run in this session for every method.\n\n"
                "**Second residual fix (2026-11-24, third session).** Every GAP, DPDGC and DP-MLP k-neighbor / node "
                "cell of the seven datasets was re-run in one invocation after the second fix (the residual head "
                "without its own bias, reading the releases shrunk by their public signal-to-noise ratio; GAP's "
                "aggregation calibrated alone to 1/(D+1) of epsilon; DPDGC's topology share capped at 2% extra "
                "classifier noise; see the reading below). The cells those replace are kept in "
                "`reports/private_models_pre_residual2.jsonl`; DPAR cells are the earlier runs (its code did not "
                "change). The same cells were then extended to 10 seeds (`--seeds 10 --skip-methods dpar`): with GAP "
                "or DPDGC equal in distribution to DP-MLP, a cell fails the criterion below (mean >= DP-MLP mean - "
                "DP-MLP std) by chance with probability 9.5% at 5 seeds per method and 2.7% at 10 (simulated with "
                "normal run-to-run spread), i.e. about 4.7 and 1.3 of the 49 GAP / DPDGC checks.")

SETTING_KEYS = {("edge", 1.0): "edge_eps1", ("k-neighbor:1", 16.0): "kneighbor_k1_eps16",
                ("k-neighbor:5", 16.0): "kneighbor_k5_eps16", ("k-neighbor:25", 16.0): "kneighbor_k25_eps16",
                ("node", 8.0): "node_eps8", ("node", 16.0): "node_eps16"}


TABLE2_READING = """Reading Table 2 (k-neighbor and node rows; GAP / DPDGC / DP-MLP cells re-run after the second residual
fix, 5 seeds unless n says otherwise; criterion of issue #17: GAP and DPDGC >= DP-MLP minus one DP-MLP std in every
cell; the table after this list computes it per cell).

- First cause, measured (Cora, node eps 8, validation split, before the first fix): GAP's three stages shared one
  noise multiplier of 2.15 against DP-MLP's 1.58 (encoder 20 + classifier 20 epochs) and its per-hop classifier
  re-learnt the feature path from that noisier encoder; DPDGC gave its topology stages half of epsilon (Z noise
  std 128 at node eps 8: pure noise). First fix (`graphrelease/models/residual.py`): the private classifier is
  DP-MLP's network plus a zero-initialised linear read of the released graph inputs; GAP continues its encoder's
  network (10 + 10 epochs = DP-MLP's 20); DPDGC's topology share is 1/g (g = k+1 or D+1, public).
- Second cause, measured (Cora-ML's VALIDATION split, node eps 8, 10 split seeds, each variant minus DP-MLP run on
  the same seeds, `scripts/validate_node_models.py`): the first head still cost DPDGC 2.8 ± 0.9 points and GAP 2.4
  ± 0.7. (1) The head had its own bias, a duplicate of the network's output bias: its per-example gradient equals
  the output bias's, so it took a share of every clip norm, and it drew a second bias noise; without it DPDGC's
  deficit fell to 1.6 ± 0.8, and with a zero graph input the network now trains exactly as DP-MLP
  (`tests/models/test_residual.py::test_zero_graph_input_trains_exactly_dp_mlp`, which fails with the bias).
  (2) The head read row-normalised releases, i.e. unit-norm noise whatever the noise level; it now reads the release
  shrunk by its public signal-to-noise ratio, Z B / (B^2 + d sigma^2) with B = D (`snr_shrink`: the linear MMSE
  estimate for a signal of norm B, over B), which tends to zero when the noise norm sigma sqrt(d) is far above B:
  DPDGC -0.0 ± 0.8. (3) GAP's aggregation shared one noise scale with its DP-SGD stages (1.57 vs DP-MLP's 1.47);
  it now gets 1/(D+1) of epsilon alone, DPDGC's rule (DP-SGD noise 1.47): GAP -0.2 ± 0.9. (4) DPDGC under
  k-neighbor k = 1 gave the topology half of epsilon (classifier noise 1.58 vs DP-MLP's 1.35 at eps 16; validation
  63.3 vs 67.7, 8 seeds); the share is now capped so that the classifier's noise multiplier is at most 2% above
  DP-MLP's on the same schedule (1.374 vs 1.347; validation 67.7 vs 67.7). All four are rules from public values
  (D, k, epsilon, delta, the schedule), the same for every graph; no new mechanism, the same ledger entries,
  re-calibrated. (5) Under k-neighbor adjacency no degree cap bounds Z~'s rows (Chameleon: degrees up to ~700),
  so the shrunk rows of hubs read far above norm 1; they are clipped to norm 1 (`z_inputs=snr_clipped`; Chameleon
  k-neighbor:1 eps 16 validation, 10 seeds, minus DP-MLP: -0.95 ± 0.76 -> +0.19 ± 0.64; k-neighbor:5: +1.25 ± 0.93
  -> +0.95 ± 0.66). The DPDGC k-neighbor cells were re-run after (5); the 10-seed cells they replace are kept in
  `reports/private_models_pre_kclip.jsonl` (Chameleon k = 1 / 5 / 25: 41.0 / 41.2 / 41.4 vs DP-MLP 42.4 ± 1.2).
  Where the graph releases are noise, GAP and DPDGC are now DP-MLP with a nearly silent head: the
  node-level rows show little or no gain from the graph on these datasets (GAP's node-level aggregate at its 1/11
  share has noise std 57 / 30 per coordinate at eps 8 / 16, against rows of norm <= D = 10; at one common scale
  it was about 17 at eps 8, still noise).
- DPAR at node eps 8 (its defaults: every training node a source, EM1, col_cap 8, 100 epochs) scores 18.8-23.7,
  at or below the majority-class rate (Cora 29.4, CiteSeer 22.0, Chameleon 22.9; Squirrel 18.6 against DPAR's
  20.4), far below DP-MLP on every re-run dataset. Why, with numbers (Cora, 1,354 training slots; the
  calibration `DPAR()._calibrate_stages`): one node touches its own example and the aggregated inputs of up to
  col_cap = 8 other examples, so the classifier's DP-SGD step has sensitivity 8.5 C and its group of 9 examples is
  sampled with probability 1 - (1 - q)^9 = 0.85 at q = 0.19 (joint convexity), which removes almost all of the
  subsampling amplification; the classifier's noise multiplier is then 295 (600 steps, half of epsilon left after
  DP-APPR), and still 246 if DP-APPR were free, or 110 with 20 epochs, against 1.58 for DP-MLP at the same epsilon
  (120 steps, one example per node). DP-APPR's half buys per-row selections at epsilon 0.0015 (top-16 picks out of n
  by Gumbel noise of scale 2c / 0.0015 = 410 on entries <= c = 0.3: random). Under sound accounting the method
  cannot beat DP-MLP at eps 8 unless col_cap (the classifier's group) is near 1, which leaves each node in at most
  one source's aggregate.
- Tolokers is 78% one class: every GAP / DPDGC / DP-MLP cell is 77.9 ± 0.5, the majority rate (DPAR 76.5), so
  the criterion holds there without saying anything about the graph.
"""


def replace_one_tag(method: str, adjacency: str) -> str:
    """'exact' for runs whose one-example replace-one stage is charged with the exact Poisson replace-one pair
    (the models' accounting since 2026-11-23); rows without the tag were charged with the joint-convexity bound."""
    return "exact" if method in ("dp-mlp", "dpdgc") and adjacency.startswith("k-neighbor") else ""


def _norm(name: object) -> str:
    return str(name).lower().replace("-", "").replace("_", "").replace(" ", "")


def paper_numbers() -> tuple[dict, dict, list[str]]:
    """Published numbers from scripts/paper_numbers.py (transcribed by hand from retrieved paper text by another
    engineer), if that file exists and holds values: ({(dataset, method, setting): cell}, {(dataset, variant, eps):
    cell}, source lines). Keys are normalised (case, hyphens); empty when nothing was transcribed."""
    import importlib.util

    path = ROOT / "scripts" / "paper_numbers.py"
    if not path.is_file():
        return {}, {}, []
    spec = importlib.util.spec_from_file_location("paper_numbers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def cell(v) -> str:
        if isinstance(v, dict) and v.get("mean") is not None:
            return f"{v['mean']}" + (f" ± {v['std']}" if v.get("std") is not None else "")
        return ""

    t2, gw, sources = {}, {}, []
    paper = getattr(mod, "DPDGC", {}) or {}
    for key, v in ((paper.get("tables", {}).get("table2", {}) or {}).get("rows", {}) or {}).items():
        if cell(v):
            t2[(_norm(key[0]), _norm(key[1]), key[2])] = cell(v)
    if t2:
        sources.append(f"DPDGC Table 2: {paper.get('paper', '?')}")
    paper = getattr(mod, "GAP_WEIGHTED", {}) or {}
    for name, table in (paper.get("tables", {}) or {}).items():
        for key, v in (table.get("rows", {}) or {}).items():
            if cell(v):
                gw[(_norm(key[0]), _norm(key[1]), float(key[2]))] = cell(v)
    if gw:
        sources.append(f"GAP weighted vs unweighted: {paper.get('paper', '?')}")
    return t2, gw, sources


def load(name: str):
    from graphrelease.io.npz import read_npz

    return read_npz(DATA / f"{name}.npz")[0]


def done_keys(path: Path) -> set[tuple]:
    keys = set()
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            keys.add((r["dataset"], r["method"], r["adjacency"], r["epsilon"], r.get("aggregation", ""), r["seed"],
                      r.get("replace_one", "")))
    return keys


def features_only_auc(graph, seed: int) -> float:
    """Reference that reads no edge at all: cosine of gap-link's public feature rows H_0 (same hold-out split)."""
    import numpy as np

    from graphrelease.models.gap_link import GAPLink
    from graphrelease.models.link import held_out_auc, holdout_split
    from graphrelease.train import DEFAULT_TEST_FRAC

    train, test = holdout_split(graph, test_frac=DEFAULT_TEST_FRAC, seed=seed)
    m = GAPLink()
    m._fit_projection(train)
    h0 = m._base_rows(train).numpy()
    return held_out_auc(lambda g, p: np.sum(h0[p[:, 0]] * h0[p[:, 1]], axis=1), train, test, graph, seed=seed)


def run_link(graph, dataset, method, epsilon, seed):
    from graphrelease.train import fit_link_model

    opts = dict(LINK_OPTIONS[method], split_seed=seed)
    t = time.perf_counter()
    if method == "features":
        score, spent = features_only_auc(graph, seed), 0.0
    else:
        run, _ = fit_link_model(graph, "gap" if method == "gap-link" else method, adjacency="edge",
                                epsilon=epsilon, delta=1e-5, accountant="rdp", options=opts)
        score, spent = run.test_auc, run.epsilon_spent
    return {
        "dataset": dataset, "method": method, "adjacency": "edge", "epsilon": epsilon, "aggregation": "", "seed": seed,
        "test_accuracy": float("nan"), "test_auc": score, "epsilon_spent": spent,
        "seconds": time.perf_counter() - t,
    }


def run_one(graph, dataset, method, adjacency, epsilon, seed, aggregation=""):
    from graphrelease.train import fit_model

    opts = dict(OPTIONS[method])
    opts["split_seed"] = seed
    if aggregation:
        opts["aggregation"] = aggregation
    if adjacency != "edge":  # the benchmark datasets' label sets are documented (public); declared as an owner would
        opts["num_classes"] = graph.num_classes
    t = time.perf_counter()
    run = fit_model(graph, method, adjacency=adjacency, epsilon=epsilon, delta=1e-5 if graph.num_nodes < 1e5 else 1e-6,
                    accountant="rdp", options=opts)
    row = {
        "dataset": dataset, "method": method, "adjacency": adjacency, "epsilon": epsilon, "aggregation": aggregation,
        "seed": seed, "test_accuracy": run.test_accuracy, "epsilon_spent": run.epsilon_spent,
        "seconds": time.perf_counter() - t,
    }
    if replace_one_tag(method, adjacency):
        row["replace_one"] = replace_one_tag(method, adjacency)
    return row


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    m = statistics.mean(values) * 100
    s = statistics.stdev(values) * 100 if len(values) > 1 else 0.0
    return f"{m:.1f} ± {s:.1f} (n={len(values)})"


def criterion_table(rows: list[dict], before_file: Path) -> list[str]:
    """Issue #17's node-level criterion per cell (GAP / DPDGC mean >= DP-MLP mean - DP-MLP std, all from this
    file's runs) beside the cells the second residual fix replaced (``before_file``), computed, not transcribed."""
    if not before_file.is_file():
        return []
    before = [json.loads(x) for x in before_file.read_text().splitlines() if x.strip()]

    def stats(src, ds, method, adjacency, eps):
        adj = "k-neighbor:1" if method == "dp-mlp" and adjacency.startswith("k-neighbor") else adjacency
        v = [100 * r["test_accuracy"] for r in src if r["dataset"] == ds and r["method"] == method
             and r["adjacency"] == adj and r["epsilon"] == eps and r.get("replace_one", "") in ("", "exact")]
        return (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v)) if v else None

    out = ["### Issue #17 node-level criterion, computed (second residual fix)", "",
           "Each cell: before -> after mean test accuracy (before = `reports/private_models_pre_residual2.jsonl`, "
           "after = this report's runs; DP-MLP's code did not change, its runs were repeated in the same invocation); "
           "'ok' when after >= DP-MLP's mean minus its std (this report's DP-MLP runs).",
           "", "| dataset | setting | DPDGC | GAP | DP-MLP (mean ± std) | criterion |", "|---|---|---|---|---|---|"]
    for ds in sorted({r["dataset"] for r in rows}):
        for adjacency, eps, methods in TABLE2:
            mlp = stats(rows, ds, "dp-mlp", adjacency, eps)
            if adjacency == "edge" or mlp is None:
                continue
            cells, verdict = [], []
            for method in ("dpdgc", "gap"):
                now, old = stats(rows, ds, method, adjacency, eps), stats(before, ds, method, adjacency, eps)
                if method not in methods or now is None:
                    cells.append("n/a" if method not in methods else "-")
                    continue
                cells.append(f"{old[0]:.1f} -> {now[0]:.1f}" if old else f"{now[0]:.1f}")
                ok = now[0] >= mlp[0] - mlp[1]
                verdict.append(f"{method} {'ok' if ok else 'NOT met'}" + ("" if now[2] >= 5 else f" (n={now[2]})"))
            mlp_old = stats(before, ds, "dp-mlp", adjacency, eps)
            was = f"{mlp_old[0]:.1f} -> " if mlp_old else ""
            out.append(f"| {ds} | {adjacency}, eps={eps:g} | {cells[0]} | {cells[1]} | {was}{mlp[0]:.1f} ± "
                       f"{mlp[1]:.1f} (n={mlp[2]}) | {', '.join(verdict)} |")
    return out + [""]


def render(results: Path, out: Path, command: str) -> None:
    rows, seen = [], set()
    for line in (results.read_text().splitlines() if results.is_file() else []):
        r = json.loads(line)
        key = (r["dataset"], r["method"], r["adjacency"], r["epsilon"], r["aggregation"], r["seed"],
               r.get("replace_one", ""))
        if key not in seen:  # two workers may have finished the same run: count it once
            seen.add(key)
            rows.append(r)
    datasets = sorted({r["dataset"] for r in rows})
    # Table 2's edge row comes from scripts/reproduce_edge_models.py's runs (current models, 5 seeds) when present.
    edge_file = ROOT / "reports" / "private_models_edge.jsonl"
    edge_rows = [json.loads(x) for x in edge_file.read_text().splitlines()] if edge_file.is_file() else []
    lines = [
        f"<!-- regenerate: {command} -->",
        "# Private node models: DPDGC, GAP, DP-MLP",
        "",
        f"Command: `{command}`",
        "",
        "Test accuracy (%) on held-out labelled nodes, mean ± std over seeds (the seed changes the random 50/25/25 "
        "split and the model noise); delta = 1e-5; epsilon is the target and every run's ledger was composed by "
        "the project's RDP accountant (`graphrelease.privacy.accountants`, Balle et al. 2020 conversion). "
        "No validation-based model selection per run, except that under edge adjacency the final noise-free "
        "classifier keeps its best-validation epoch (public labels, post-processing: docs/privacy.md#epoch-selection; "
        "the edge row comes from scripts/reproduce_edge_models.py). The rules of the second residual fix (no head bias, graph "
        "inputs shrunk by their public signal-to-noise ratio, GAP's aggregation share 1/(D+1), DPDGC's 2% cap on "
        "the classifier's extra noise) are fixed from public values; they were checked once on Cora-ML's "
        "validation labels (node eps 8, 10 split seeds; k-neighbor:1 eps 16, 8 seeds) and the k-neighbor row clip on "
        "Chameleon's (k-neighbor:1 / 5 eps 16, 10 seeds; validation nodes of one seed overlap other seeds' test "
        "nodes), so the Cora-ML node / k-neighbor and the Chameleon k-neighbor GAP / DPDGC rows carry a look at "
        "their own labels outside the ledger; for every other dataset they are public defaults. Fixed small epoch counts "
        f"({json.dumps(OPTIONS)}) because the table runs on one shared CPU core.",
        "",
        "Our analyses differ from the papers' code (PRIVACY.md section 4): GAP edge sensitivity sqrt(2) (not 1); "
        "node-level aggregation sensitivity sqrt(D^2+D) with degree cap D=10 (the node's own aggregate row is "
        "released and charged); DPDGC with row-normalised W in the forward pass, group sensitivity 2C*g "
        "(g = 2 / k+1 / D+1), group amplification by the joint-convexity bound, Z release sensitivity "
        "sqrt(2) / sqrt(k^2+k) / sqrt(D^2+D). Replace-one DP-SGD stages are charged with the closed-form "
        "joint-convexity bound; k-neighbor rows marked (JC) were measured that way, rows marked (exact pair) with "
        "the exact Poisson replace-one pair the models charge since 2026-11-23 for one replaced example (DP-MLP, the "
        "DPDGC classifier; DPDGC's DP-Emb groups keep JC). At epsilon 16 JC needs ~2.6x the noise multiplier of the "
        "exact pair (reports/replace_one_accounting.md). Published numbers are printed beside "
        "ours only from `scripts/paper_numbers.py` (hand transcriptions of retrieved paper text, each labelled with "
        "its source); when that file is absent or holds no values there is no 'paper' column: we do not quote "
        "numbers from memory.",
        "",
        "Seeds: the target is 5 seeds per cell; each cell shows n, the number of seeds that finished (a std of 0.0 "
        "with n=1 is not a measured spread). The runs share a 2-core machine with other jobs (load average ~15 in "
        "the first session, ~5-6 in the second, 3-5 in the third with up to four runs side by side at `nice 5`; the "
        "fit times below are therefore upper bounds and not comparable across datasets); cells with n < 5 had not been "
        "reached when the session ended; rerun the command (it resumes from reports/private_models.jsonl, and "
        "`--only-table2 --dataset-major` fills Table-2 cells dataset by dataset). "
        "Under k-neighbor / node adjacency DPDGC gives its topology stages (DP-Emb + Z) 1/g of epsilon "
        "(`graph_share=auto`, g = k+1 or D+1 = 11, public; 0.5 before the residual re-run), capped so that the "
        "private classifier's noise multiplier is at most 2% above DP-MLP's on the same schedule (binding at k = 1), "
        "and the private classifier the rest; under edge adjacency the classifier is free and the topology stages get "
        "all of it. GAP under node adjacency gives its aggregation 1/(D+1) of epsilon and its encoder + classifier "
        "the rest (one common scale for all three stages before the second residual fix).",
        "",
        "DPDGC column: DPDGC runs measured before commit 1675787 (when the unnormalised noisy Z swamped the "
        "classifier's feature channel: k-neighbor/node accuracies ~18-24%, a bug, not a property of the method) were "
        "discarded; every DPDGC cell here comes from the fixed code.",
        "",
        "DP-MLP reads no edges: under edge adjacency it is a non-private MLP on public features/labels (epsilon "
        "spent 0); under k-neighbor adjacency its cost does not depend on k (one example replaced), so the same "
        "runs fill the three k rows. GAP has no k-neighbor analysis here (n/a).",
        "",
        ISSUE17_NOTE,
        "",
        "## DPDGC Table 2 settings",
        "",
    ]
    t2_paper, gw_paper, sources = paper_numbers()
    if sources:
        lines[lines.index("## DPDGC Table 2 settings") + 1:lines.index("## DPDGC Table 2 settings") + 1] = [
            "", "Columns marked 'paper' are the published numbers as transcribed in `scripts/paper_numbers.py` "
            "(blank = not transcribed); they were computed with the papers' own accounting (PRIVACY.md section 4), "
            "ours with the sound one. Sources: " + "; ".join(sources) + "."]
    for ds in datasets:
        head = "| setting | DPDGC | GAP | DP-MLP | DPAR |"
        if t2_paper:
            head += " paper DPDGC | paper GAP | paper DP-MLP |"
        lines += [f"### {ds}", "", head, "|---" * (head.count("|") - 1) + "|"]
        for adjacency, eps, setting_methods in TABLE2:
            variants = [""]
            if adjacency.startswith("k-neighbor"):
                tags = {r.get("replace_one", "") for r in rows if r["dataset"] == ds and r["adjacency"] == adjacency}
                variants = [v for v in ("", "exact") if v in tags] or ["exact"]
            for tag in variants:
                cells = []
                for method in COLUMNS:
                    if adjacency == "edge" and edge_rows:  # the current models' edge runs (issue #17)
                        vals = [r["test_accuracy"] for r in edge_rows if r["dataset"] == ds and r.get("method") == method
                                and (r["epsilon"] == eps or method == "dp-mlp")]
                        cells.append(fmt(vals) if method in setting_methods else "n/a")
                        continue
                    adj = "k-neighbor:1" if method == "dp-mlp" and adjacency.startswith("k-neighbor") else adjacency
                    vals = [r["test_accuracy"] for r in rows if r["dataset"] == ds and r["method"] == method
                            and r["adjacency"] == adj and r["epsilon"] == eps and r["aggregation"] in ("", "sum")
                            and r.get("replace_one", "") == (tag if replace_one_tag(method, adj) else "")]
                    if method not in setting_methods and method != "gap" or (
                            method == "gap" and adjacency.startswith("k-neighbor")):
                        cells.append("n/a")
                    else:
                        cells.append(fmt(vals))
                if t2_paper:
                    cells += [t2_paper.get((_norm(ds), _norm(m), SETTING_KEYS[(adjacency, eps)]), "")
                              for m in ("dpdgc", "gap", "dp-mlp")]
                label = {"": " (JC)", "exact": " (exact pair)"}[tag] if adjacency.startswith("k-neighbor") else ""
                if adjacency == "edge" and edge_rows:
                    label = " (edge report)"
                lines.append(f"| {adjacency}, eps={eps:g}{label} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        *TABLE2_READING.splitlines(),
        "",
        *criterion_table(rows, ROOT / "reports" / "private_models_pre_residual2.jsonl"),
    ]
    gw_head = "| dataset | epsilon | sum | similarity (sigmoid cos) |"
    if gw_paper:
        gw_head += " paper unweighted | paper weighted |"
    lines += ["## GAP: similarity-weighted vs unweighted aggregation (edge adjacency)", "",
              gw_head, "|---" * (gw_head.count("|") - 1) + "|"]
    for ds in datasets:
        for _, eps in GAP_WEIGHTED:
            cells = []
            for agg in ("sum", "similarity"):
                vals = [r["test_accuracy"] for r in rows if r["dataset"] == ds and r["method"] == "gap"
                        and r["adjacency"] == "edge" and r["epsilon"] == eps and r["aggregation"] == agg]
                cells.append(fmt(vals))
            if gw_paper:
                cells += [gw_paper.get((_norm(ds), v, float(eps)), "") for v in ("unweighted", "weighted")]
            lines.append(f"| {ds} | {eps:g} | " + " | ".join(cells) + " |")
    link_rows = [r for r in rows if "test_auc" in r]
    if link_rows:
        lines += ["", "## Link prediction (edge adjacency): held-out AUC", "",
                  "AUC (%) of held-out real edges (10% of edges, public per-pair coins keyed by the seed) against as "
                  "many sampled non-edges, mean ± std over seeds. `gap-link`: GAP aggregates over message edges + a "
                  "DP-SGD pair scorer on supervision edges (defaults of `graphrelease/models/gap_link.py`: 2 hops, "
                  "`blocks` scorer, 100 steps at sample rate 0.1); eps=inf is the same pipeline without noise. "
                  f"`relational`: the edge-tuple DP-SGD encoder, cosine scores, options {LINK_OPTIONS['relational']} "
                  "(its step count, not epsilon, is the binding limit: see epsilon spent below). `features`: "
                  "cosine of the public feature rows H_0 alone (reads no edge; the share of the AUC that needs no "
                  "structure).", "",
                  "Reading (first measured 2026-11-22, 5 seeds each): on Cora and CiteSeer (mean degree ~4 and ~3) "
                  "gap-link at eps <= 8 is no better than `features`, i.e. the perturbed aggregates carry no usable "
                  "structure at these budgets (the noise norm over a 32-dim hop exceeds a low-degree node's "
                  "aggregate); without noise (inf) the structure adds ~10 points. On Chameleon (mean degree ~28) the "
                  "DP aggregates add 14-30 points over `features` from eps = 1. The relational encoder (100 steps, "
                  "features only at inference) is below `features` on these graphs.", "",
                  "| dataset | method | epsilon | AUC |", "|---|---|---|---|"]
        for ds in datasets:
            for method, eps in LINK:
                vals = [r["test_auc"] for r in link_rows if r["dataset"] == ds and r["method"] == method
                        and r["epsilon"] == eps]
                if vals:
                    lines.append(f"| {ds} | {method} | {eps:g} | {fmt(vals)} |")
    lines += ["", "## Epsilon actually spent (max over runs) and mean fit time", "",
              "| dataset | method | setting | max epsilon spent | mean seconds |", "|---|---|---|---|---|"]
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["method"], r["adjacency"], r["epsilon"], r["aggregation"],
                           r.get("replace_one", "")), []).append(r)
    for key in sorted(groups):
        rs = groups[key]
        setting = (f"{key[2]}, eps={key[3]:g}" + (f", {key[4]}" if key[4] else "")
                   + (" (JC)" if replace_one_tag(key[1], key[2]) and not key[5] else "")
                   + (f" ({key[5]} pair)" if key[5] else ""))
        lines.append(f"| {key[0]} | {key[1]} | {setting} | {max(r['epsilon_spent'] for r in rs):.4g} | "
                     f"{statistics.mean(r['seconds'] for r in rs):.1f} |")
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--datasets", default="cora,citeseer,chameleon")
    p.add_argument("--results", type=Path, default=ROOT / "reports" / "private_models.jsonl")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "private_models.md")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--only-gap-weighted", action="store_true", help="run only the (cheap) GAP weighting comparison")
    p.add_argument("--only-table2", action="store_true", help="run only the DPDGC Table-2 settings")
    p.add_argument("--only-link", action="store_true", help="run only the link-prediction comparison")
    p.add_argument("--only-kneighbor", action="store_true", help="run only the k-neighbor Table-2 settings")
    p.add_argument("--skip-edge", action="store_true", help="drop the edge-adjacency jobs (issue #17 re-run of the "
                   "k-neighbor and node rows; the edge comparison is scripts/reproduce_edge_models.py)")
    p.add_argument("--skip-methods", default="", help="comma-separated methods whose jobs are dropped (e.g. dpar, "
                   "whose code did not change, when extending the other cells to more seeds)")
    p.add_argument("--dataset-major", action="store_true",
                   help="finish every seed of a dataset before the next (cells reach n=seeds sooner)")
    args = p.parse_args()
    torch.set_num_threads(1)
    command = ("OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_private_models.py "
               f"--seeds {args.seeds} --datasets {args.datasets}"
               + "".join(f" --{f.replace('_', '-')}" for f in ("only_table2", "skip_edge", "dataset_major")
                         if getattr(args, f))
               + (f" --skip-methods {args.skip_methods}" if args.skip_methods else ""))
    if not args.render_only:
        done = done_keys(args.results)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        jobs = []
        for seed in range(args.seeds):  # seed-major: every setting gets some seeds early
            for ds in args.datasets.split(","):
                for _, eps in ([] if args.only_table2 else GAP_WEIGHTED):
                    for agg in ("sum", "similarity"):
                        jobs.append((ds, "gap", "edge", eps, seed, agg))
                if args.only_table2:  # the GAP edge eps=1 cell is the 'sum' run of the weighting comparison
                    jobs.append((ds, "gap", "edge", 1.0, seed, "sum"))
                for adjacency, eps, methods in ([] if args.only_gap_weighted else TABLE2):
                    for m in methods:
                        if m == "dp-mlp" and adjacency.startswith("k-neighbor") and adjacency != "k-neighbor:1":
                            continue  # identical mechanism for every k (reads no edges)
                        if m == "gap" and adjacency == "edge" and eps == 1.0:
                            continue  # = the 'sum' run of the weighted comparison
                        jobs.append((ds, m, adjacency, eps, seed, ""))
        if args.dataset_major:
            order = args.datasets.split(",")
            jobs.sort(key=lambda j: (order.index(j[0]), j[4]))  # stable: keeps the setting order within a seed
        if args.only_kneighbor:
            jobs = [j for j in jobs if j[2].startswith("k-neighbor")]
        if args.skip_edge:
            jobs = [j for j in jobs if j[2] != "edge"]
        if args.skip_methods:
            jobs = [j for j in jobs if j[1] not in args.skip_methods.split(",")]
        if args.only_link:
            jobs = [(ds, m, "edge", eps, seed, "") for seed in range(args.seeds) for ds in args.datasets.split(",")
                    for m, eps in LINK]
        graphs = {}
        for ds, m, adjacency, eps, seed, agg in jobs:
            key = (ds, m, adjacency, eps, agg, seed, replace_one_tag(m, adjacency))
            if key in done:
                continue
            graphs.setdefault(ds, load(ds))
            if m in LINK_OPTIONS:
                r = run_link(graphs[ds], ds, m, eps, seed)
            else:
                r = run_one(graphs[ds], ds, m, adjacency, eps, seed, agg)
            with open(args.results, "a") as fh:
                fh.write(json.dumps(r) + "\n")
            print(json.dumps(r), flush=True)
            render(args.results, args.out, command)
    render(args.results, args.out, command)


if __name__ == "__main__":
    main()
