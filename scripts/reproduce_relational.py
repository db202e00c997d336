"""Reproduce reports/relational.md: the relational-learning seed's Figure 2 setting (epsilon vs steps T for FREQ-CLIP
vs standard clipping; Theorem 3 evaluated numerically) and a small zero-shot utility table (train the encoder on one
half of Cora, predict relations on the other half).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_relational.py [--seeds 3] [--steps 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.io import read_graph  # noqa: E402
from graphrelease.models.relational import (  # noqa: E402
    RelationalModel,
    split_halves,
    standard_vs_freq_epsilons,
    zero_shot_relation_scores,
)
from graphrelease.errors import BudgetError  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
FIG2 = dict(noise_multiplier=0.5, sample_rate=1e-5, num_negatives=4, degree_cap=5, num_nodes=10**6,
            num_edges=5 * 10**6)
FIG2_STEPS = [1, 10, 100, 1000, 5000, 10000]


def fmt(xs: list[float]) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.3f}"
    return f"{statistics.mean(xs):.3f} +- {statistics.stdev(xs):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--node-sigma", type=float, default=8.0)
    ap.add_argument("--out", default=str(ROOT / "reports" / "relational.md"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = [
        "# Relational learning with entity-level DP (reproduction)",
        "",
        "Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_relational.py "
        f"--seeds {args.seeds} --steps {args.steps} --node-sigma {args.node_sigma:g}`",
        "",
        "## Figure 2 setting: epsilon vs steps T (Theorem 3 evaluated numerically)",
        "",
        "K=5, n=1e6, |E|=5e6, gamma=1e-5 (expected 50 positives per step), sigma=0.5, k_neg=4, delta=1/|E|=2e-7. "
        "Per-step RDP curve from `graphrelease.privacy.analysis.relational` (both divergence directions, conservative "
        "tails), composed over T and converted with Balle et al. 2020 Thm 21.",
        "",
    ]
    t0 = time.time()
    eps = standard_vs_freq_epsilons(steps=FIG2_STEPS, delta=2e-7, **FIG2)
    lines += ["| T | FREQ-CLIP (adaptive) | standard clipping |", "|---|---|---|"]
    for i, t in enumerate(FIG2_STEPS):
        lines.append(f"| {t} | {eps['freq'][i]:.3f} | {eps['standard'][i]:.3f} |")
    lines += ["", f"(computed in {time.time() - t0:.0f} s)", "",
              "The seed's Figure 2 shows the same ordering: FREQ-CLIP's constant sensitivity keeps epsilon far below "
              "standard clipping, whose sensitivity grows with the degree cap (shift up to K+2). Caveat measured here: "
              "with in-batch frequencies FREQ-CLIP's entity-level sensitivity is NOT C (knock-on threshold changes, "
              "`tests/models/test_relational.py::test_freq_clipping_knock_on_exceeds_C`), so only the standard-clipping "
              "column is a proved bound for our implementation; the model's `freq` mode is certified `guarantee: none`.",
              ""]
    print("\n".join(lines), flush=True)

    g = read_graph(DATA / "single" / "cora.npz").data
    train_g, eval_g = split_halves(g, seed=0)
    rows = []
    settings = [("untrained encoder", None, None, 0, 1.0), ("non-private", "edge", float("inf"), args.steps, 1.0),
                ("edge DP, eps=4, sigma=1", "edge", 4.0, args.steps, 1.0),
                (f"node DP (standard clip, K=5), eps=4, sigma={args.node_sigma:g}", "node", 4.0, args.steps,
                 args.node_sigma),
                (f"node DP (standard clip, K=5), eps=8, sigma={args.node_sigma:g}", "node", 8.0, args.steps,
                 args.node_sigma)]
    for name, adj, eps_t, steps, sigma in settings:
        p1, mrr, used, spent = [], [], [], []
        for seed in range(args.seeds):
            t = time.time()
            model = RelationalModel(steps=max(1, steps), batch_size=32, num_negatives=4, degree_cap=5,
                                    noise_multiplier=sigma, lr=1e-3)
            if adj is None:
                model.config.steps = 0
                budget = Budget.unlimited("edge")
                torch.manual_seed(seed)
                model.config.steps = 0
            else:
                budget = Budget.unlimited(adj) if eps_t == float("inf") else Budget(
                    epsilon=eps_t, delta=1e-5, adjacency=adj, accountant="rdp")
            if adj is None:
                from graphrelease.models.relational import Encoder

                model.in_dim = train_g.dense_features().shape[1]
                model.net = Encoder(model.in_dim, model.config.hidden, model.config.out_dim, model.config.layers).eval()
            else:
                try:
                    model.fit(train_g, budget)
                except BudgetError as err:  # not even one step fits at this sigma: say so in the table
                    print(name, seed, "refused:", err, flush=True)
                    break
            s = zero_shot_relation_scores(model.embed(eval_g), eval_g, candidates=100, seed=seed, max_queries=2000)
            p1.append(s["prec@1"])
            mrr.append(s["mrr"])
            used.append(model.steps)
            spent.append(0.0 if adj is None or budget.is_unlimited else budget.spent_epsilon())
            print(name, seed, s, model.steps, spent[-1], f"{time.time() - t:.0f}s", flush=True)
        if not p1:
            rows.append((name, "budget refuses one step", "-", "0", "0"))
            continue
        rows.append((name, fmt(p1), fmt(mrr), f"{statistics.mean(used):.0f}", f"{max(spent):.3f}"))
    lines += [
        "## Zero-shot relation prediction: train on one half of Cora, predict on the other half",
        "",
        "Nodes of Cora split in two halves by a public seed; the encoder (MLP 1433-128-64, InfoNCE, temperature 0.2) "
        "is trained on the induced subgraph of half A and embeds half B with B's own features. Query: an edge (u, v) "
        "of half B (both directions, 2000 drawn); v is ranked among v + 99 random non-neighbours of u by cosine "
        "similarity. PREC@1 = fraction ranked first, MRR = mean reciprocal rank. Random ranking: PREC@1 0.01, MRR "
        "~0.05. Batch: Poisson positives with expected 32 per step, k_neg=4 NEG-SAMPLE-WOR negatives, C=1, "
        f"sigma as in the row (node level: one node moves the sum by up to (K+2)C, so sigma=1 does not fit one "
        f"step at eps=4), Adam lr 1e-3, at most {args.steps} steps (fewer when the budget runs out), delta=1e-5, RDP "
        f"accountant. Mean +- std over {args.seeds} seeds (noise and initialisation; the split is fixed).",
        "",
        "| setting | PREC@1 | MRR | steps | epsilon spent |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} |" for r in rows]
    lines += ["", "The seed evaluates on other datasets (e-commerce / citation relation graphs) that we do not have; "
              "no paper number is comparable row by row.", ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
