"""Reproduce reports/dpar.md: DPAR (DP-APPR by EM0 / EM1 / GM, then the classifier) vs GAP vs DP-MLP on Cora-ML
at epsilon 1 / 4 / 8 under node-level DP (the DPAR seed's setting), with our sound accounting of both stages.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_dpar.py [--seeds 2] [--sources 500] [--epochs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.io import read_graph  # noqa: E402
from graphrelease.models.dpar import DPAR  # noqa: E402
from graphrelease.models.gap import GAP  # noqa: E402
from graphrelease.models.mlp import DPMLP  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
EPSILONS = (1.0, 4.0, 8.0)


def fmt(xs: list[float]) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.3f} (n=1)"
    return f"{statistics.mean(xs):.3f} +- {statistics.stdev(xs):.3f} (n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--sources", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "reports" / "dpar.md"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    g = read_graph(DATA / "single" / "cora_ml.npz").data
    methods = {
        "DPAR-EM0": lambda s: DPAR(mechanism="EM0", num_sources=args.sources, epochs=args.epochs, max_iter=50,
                                   split_seed=s),
        "DPAR-EM1": lambda s: DPAR(mechanism="EM1", num_sources=args.sources, epochs=args.epochs, max_iter=50,
                                   split_seed=s),
        "DPAR-GM": lambda s: DPAR(mechanism="GM", num_sources=args.sources, epochs=args.epochs, max_iter=50,
                                  split_seed=s),
        "GAP": lambda s: GAP(encoder_epochs=args.epochs, epochs=args.epochs, hops=2, split_seed=s),
        "DP-MLP": lambda s: DPMLP(epochs=args.epochs, split_seed=s),
    }
    results: dict[tuple[str, float], list[float]] = {}
    spent: dict[tuple[str, float], float] = {}
    extra: dict[tuple[str, float], str] = {}
    def render() -> list[str]:
        lines = [
            "# DPAR vs GAP vs DP-MLP on Cora-ML, node-level DP (reproduction)",
            "",
            f"Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_dpar.py --seeds {args.seeds} "
            f"--sources {args.sources} --epochs {args.epochs}`",
            "",
            f"Cora-ML (2,995 nodes, 8,158 edges), node adjacency, delta=1e-5, RDP accountant over the whole ledger. "
            f"Test accuracy, mean +- std over {args.seeds} seeds (split seed = seed; noise from the secure generator). "
            f"DPAR: alpha=0.25, rho=1e-4, ISTA <= 50 iterations, "
            f"top-K=16, row clip c=0.3, {args.sources} source nodes drawn from the training nodes with the public split "
            f"seed, column cap 8 and column L1 clip 1, half of epsilon to DP-APPR, the rest to the classifier (DP-SGD, "
            f"{args.epochs} epochs, joint-convexity accounting). GAP: 2 hops, degree cap 10, {args.epochs}+{args.epochs} epochs. DP-MLP: "
            f"{args.epochs} epochs.",
            "",
            "| method | eps=1 | eps=4 | eps=8 | epsilon spent at 8 | DP-APPR parameters at eps=4 |",
            "|---|---|---|---|---|---|",
        ]
        for name in methods:
            cells = [fmt(results[(name, e)]) if (name, e) in results else "-" for e in EPSILONS]
            lines.append(f"| {name} | {' | '.join(cells)} | {spent.get((name, 8.0), float('nan')):.3f} | {extra.get((name, 4.0), '-')} |")
        lines += [
            "",
            "## Reading the numbers",
            "",
            "- Paper numbers (DPAR, WWW 2024, arXiv 2210.04442, Cora-ML node-level table) are not reproduced beside ours: "
            "the table was not available offline in this session, and they are computed with the reference code's "
            "accounting, which multiplies epsilon by the sampling rate, never composes the two stages and uses the classic "
            "Gaussian formula outside eps<1 (PRIVACY.md section 4), so they are not comparable at equal epsilon anyway.",
            "- Under a sound analysis one node (or edge) can change EVERY source's APPR row, so the release of M rows has "
            "L2 sensitivity sqrt(2M) c (GM) or M x K bounded-range selections (EM): at these budgets the released top-K "
            "neighbours are close to random (see the per-selection epsilon / GM noise multiplier in the last column; "
            "entries are at most c=0.3, Gumbel noise scale is 2c/eps_select).",
            "- Measured here: DPAR is below DP-MLP and GAP. Half of its budget buys a near-random APPR release; its "
            "classifier pays the joint-convexity bound of a node touching up to 2 col_cap + 1 examples, so it gets "
            "far more noise per step than DP-MLP; and it trains on noisy aggregates but predicts with power-iteration "
            "aggregates (a distribution shift).",
            "- Over 5 seeds (2026-11-23) every DPAR variant sits between 0.13 and 0.20 with seed-to-seed std 0.02-0.09: "
            "the level of a classifier that predicts one class (Cora-ML's classes hold 6-29% of the nodes), i.e. the "
            "DP-SGD stage does not learn at this noise (noise multiplier ~40 at sensitivity col_cap + 1/2 = 8.5 with "
            "200 sources). A single-seed check with every training node as a source (`DPAR(mechanism='EM1', "
            "num_sources=None, epochs=10, max_iter=50, split_seed=0).fit(g, Budget(epsilon=8, delta=1e-5, "
            "adjacency='node', accountant='rdp'))`: 1498 sources, 60 classifier steps, noise multiplier 92): 0.259 vs "
            "0.114 with 200 sources (noise multiplier 41, 10 steps); more examples help the "
            "classifier, but it stays at the majority-class level. GAP and DP-MLP grow with epsilon as expected.",
            "",
        ]

        return lines

    for eps in EPSILONS:
        for name, make in methods.items():
            for seed in range(args.seeds):
                t = time.time()
                budget = Budget(epsilon=eps, delta=1e-5, adjacency="node", accountant="rdp")
                model = make(seed).fit(g, budget)
                results.setdefault((name, eps), []).append(model.test_accuracy)
                spent[(name, eps)] = max(spent.get((name, eps), 0.0), budget.spent_epsilon())
                if isinstance(model, DPAR):
                    p = model.appr_params
                    extra[(name, eps)] = (f"GM sigma {p.noise_multiplier:.3g}" if p.mechanism == "GM" else
                                          f"eps/selection {p.eps_select:.3g}" +
                                          (f", eps/values {p.eps_value:.3g}" if p.mechanism == "EM1" else ""))
                print(name, eps, seed, round(model.test_accuracy, 4), round(budget.spent_epsilon(), 4),
                      f"{time.time() - t:.0f}s", flush=True)
                Path(args.out).write_text("\n".join(render()))  # partial table after every fit
    lines = render()
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
