"""Edge-adjacency comparison of the private node models after issue #17, written to reports/private_models_edge.md.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_edge_models.py --seeds 5 \
        [--datasets cora,citeseer,chameleon,squirrel,tolokers,lastfm] [--epsilons 1,2,4,8]

Every finished run is appended to ``reports/private_models_edge.jsonl`` (finished (dataset, method, epsilon, seed)
tuples are skipped on a rerun) and the Markdown report is rendered from it (``--render-only``). The seed sets the
public 50/25/25 split (``split_seed``); model noise comes from the secure generator. Test labels are used only for
the reported accuracy. Options are fixed below; where they differ from the models' defaults the comment says how
they were chosen (validation split, never test).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"

OPTIONS = {
    "dp-mlp": {"epochs": 20},
    "gap": {"encoder_epochs": 20, "epochs": 20},
    # DPDGC under edge adjacency: no DP-SGD on W (it starts from the public prior) and a Laplace Z release, chosen on
    # the validation split at eps 4 (2 seeds; encoder_epochs 0 vs 5 x gaussian vs laplace): Cora 77.8 (0, laplace)
    # vs 73.4 / 71.3 / 70.9; Chameleon 51.7 vs 52.4 (0, gaussian) / 46.1 / 44.9.
    "dpdgc": {"encoder_epochs": 0, "epochs": 20, "z_noise": "laplace"},
}
# LastFM Asia has no features: GAP aggregates the one-hot training labels (hop0=labels). hidden 16 and row-normalised
# hop inputs were picked on the validation split at eps 1 (2 seeds per config; epochs 5/10/20/60/150, hidden 16/64,
# scaled/rownorm inputs: 9 configurations), never on test.
# DPDGC on LastFM: W starts from the one-hot training labels (prior_rows=labels) with GAP's LastFM choices (hidden 16,
# row-normalised Z inputs), not tuned separately; a first run with the constant feature prior scored 16-19%, below
# the majority rate (Z then carries only noise and degree).
# After one-sided label aggregation (GAP's label_sources default 0.8: the classifier trains on the 20% of training
# nodes that are receivers) 60 classifier epochs were chosen on the validation split at eps 1 (3 seeds; epochs
# 20 / 60 / 150 x rownorm / scaled inputs: 35.8 / 38.1 / 36.7 rownorm, 34.2 / 30.6 scaled at 60 / 150).
DATASET_OPTIONS = {"lastfm": {"gap": {"hop0": "labels", "hidden": 16, "hop_inputs": "rownorm", "epochs": 60},
                              "dpdgc": {"prior_rows": "labels", "hidden": 16, "z_inputs": "rownorm"}}}


READING = """## Reading (measured 2026-11-24, 5 seeds per cell)

- Why GAP and DPDGC used to fall below DP-MLP (reports/private_models.md, edge eps 1: Cora 67.9 / 71.4 vs 74.2):
  (1) GAP's encoder squeezed features through a 32-dim row-normalised bottleneck: alone it scored 70.4% on Cora
  where the same-width MLP scores 73.8% (3 seeds); (2) stacking on in-sample inputs: the encoder (GAP) or the X
  channel (DPDGC) fits the training nodes perfectly, so the classifier learned to trust hop 0 and fit the noise of
  the aggregates; (3) two Gaussian hops at L2 sensitivity sqrt 2 put noise of norm ~46 on aggregates of norm <= 4
  at eps 1 (noise std 8.1 per coordinate of a 32-dim hop), i.e. pure noise; (4) DPDGC spent its whole edge budget on DP-SGD over
  W (group of 2, joint-convexity bound: common scale s = 8.5 at eps 4 and 29 at eps 1, i.e. DP-SGD noise multiplier
  2s and Z noise std s sqrt 2) before releasing Z. Fixes, each
  a public-data or post-processing change except the noise: hop 0 = class probabilities of a DP-MLP-shaped encoder,
  out-of-fold on training nodes (models/prior.py); the classifier reads the noisy aggregate / max(b, 1);
  Laplace aggregation on L1-normalised rows (L1 sensitivity 2: scale 2 at eps 1 vs Gaussian sigma 5.75); DPDGC
  starts W from the public prior and skips DP-SGD on it under edge adjacency.
- Number of hops (GAP `hops=auto`, models/hops.py): 2% of epsilon buys a Laplace edge count; two hops iff the noisy
  mean degree times the remaining epsilon is >= 100 (rule chosen on validation accuracy, 2 seeds: one hop won by
  2.7-5.0 points on Cora / CiteSeer at eps 1 and 4 and Chameleon at eps 1 and 2, two hops by 2.7 / 3.7 on Chameleon
  eps 8 / Squirrel eps 4; models/hops.py lists every case). With the mean degrees here the rule gives one hop on
  Cora / CiteSeer / LastFM at every epsilon, on Chameleon at eps 1-2 and on Squirrel / Tolokers at eps 1; two
  elsewhere.
  Chameleon at eps 4 (d eps ~108, just above the threshold) scores 52.4 with two hops where the one-hop run of the
  previous version of this report scored 53.5: the rule is close to its crossover there.
- Edge eps 4, ahead of DP-MLP by >= 5 points: GAP on Cora (+6.3), Squirrel (+6.1) and LastFM (+40.4); DPDGC on
  Cora (+6.5), Chameleon (+5.0) and LastFM (+37.8). Smaller gains: Chameleon GAP +2.8, Squirrel DPDGC +2.9
  (DPDGC's Z is one hop), CiteSeer (mean degree 2.7) +1.3-1.5. Tolokers is 78% one class and every model sits at
  the majority rate in accuracy (we did not compute ROC-AUC).
- Below DP-MLP by more than one of its standard deviations: one cell, CiteSeer GAP at eps 1 (69.1 ± 0.9 vs
  70.2 ± 0.9, 1.2 std); the previous run of the same configuration (one hop; before the 2% count, which at eps 1
  moves the aggregation from eps 1 to 0.98) scored 70.0 ± 1.4.
- LastFM Asia (no features; 18 classes; majority 20.8). Public node inputs under edge adjacency: the node set (ids)
  and the training labels; a node id carries nothing a model could transfer (held-out graphs renumber their
  nodes), so the models see a constant feature; the degree is private and enters only through the noisy release.
  GAP aggregates the one-hot training labels one-sidedly (models/label_sources.py: 80% of training nodes are
  sources by a public coin, only the other nodes' rows are released, L1 sensitivity 1 instead of 2; the classifier
  trains on the remaining 20%): 38.0% at eps 1 (+17.2 over the majority rate; the two-sided version scored 34.1),
  61.2% at eps 4. At eps 8 the one-sided version is 2.6 points below DPDGC's two-sided label rows (fewer
  training examples for the classifier outweigh the halved noise).
- DPDGC with the constant feature prior on LastFM scored 17.0 / 16.2 / 17.3 / 19.2 at eps 1/2/4/8 (5 seeds,
  below the majority rate: Z carried noise and degree only); the rows above use `prior_rows=labels`.
"""


def load(name: str):
    if name == "lastfm":
        from graphrelease.io import read_graph

        # The target file lists every node id: it is the owner's node declaration (all 7,624 ids appear in it).
        return read_graph(DATA / "raw" / "lastfm_asia_edges.csv", labels=DATA / "raw" / "lastfm_asia_target.csv").data
    from graphrelease.io.npz import read_npz

    return read_npz(DATA / "single" / f"{name}.npz")[0]


def run_one(graph, dataset: str, method: str, epsilon: float, seed: int) -> dict:
    from graphrelease.train import fit_model

    opts = dict(OPTIONS[method], **DATASET_OPTIONS.get(dataset, {}).get(method, {}), split_seed=seed)
    t = time.perf_counter()
    run = fit_model(graph, method, adjacency="edge", epsilon=epsilon, delta=1e-5, accountant="rdp", options=opts)
    return {"dataset": dataset, "method": method, "epsilon": epsilon, "seed": seed, "options": opts,
            "test_accuracy": run.test_accuracy, "epsilon_spent": run.epsilon_spent,
            "seconds": time.perf_counter() - t}


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    m = statistics.mean(values) * 100
    s = statistics.stdev(values) * 100 if len(values) > 1 else 0.0
    return f"{m:.1f} ± {s:.1f} (n={len(values)})"


def render(results: Path, out: Path, command: str, datasets: list[str], epsilons: list[float]) -> None:
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.is_file() else []
    lines = [
        f"<!-- regenerate: {command} -->",
        "# Private node models under edge adjacency (after issue #17)",
        "",
        f"Command: `{command}`",
        "",
        "Test accuracy (%) on the held-out 25% of labelled nodes, mean ± sample std over seeds (n per cell; the seed "
        "is the public split seed, model noise from the secure generator); delta = 1e-5, RDP accountant; every "
        "run's ledger was composed and checked against its target. DP-MLP reads no edge: under edge adjacency it "
        "spends nothing, so one set of runs fills its row at every epsilon. "
        f"Options: {json.dumps(OPTIONS)}; per dataset: {json.dumps(DATASET_OPTIONS)}. GAP runs its defaults "
        "(hop 0 = class probabilities of a DP-MLP-shaped encoder, cross-fitted on training nodes; hops=auto; Laplace "
        "aggregation with L1 sensitivity 2; classifier reads noisy aggregates / max(b, 1)); DPDGC its defaults "
        "(public prior for the X channel and W's initialisation) with the options above. Majority-class rate on the "
        "test nodes is given per dataset.",
        "",
        "| dataset | method | " + " | ".join(f"eps={e:g}" for e in epsilons) + " |",
        "|---|---|" + "---|" * len(epsilons),
    ]
    for ds in datasets:
        for method in ("dp-mlp", "gap", "dpdgc"):
            cells = []
            for e in epsilons:
                vals = [r["test_accuracy"] for r in rows if r["dataset"] == ds and r.get("method") == method
                        and (r["epsilon"] == e or method == "dp-mlp")]
                cells.append(fmt(vals))
            if any(c != "-" for c in cells):
                lines.append(f"| {ds} | {method} | " + " | ".join(cells) + " |")
        maj = [r["majority"] for r in rows if r["dataset"] == ds and "majority" in r]
        if maj:
            lines.append(f"| {ds} | majority class | " + " | ".join(fmt(maj) for _ in epsilons) + " |")
    lines += ["", READING]
    lines += ["", "## Epsilon spent (max over runs) and mean fit seconds", "",
              "| dataset | method | epsilon | max spent | mean s |", "|---|---|---|---|---|"]
    groups: dict = {}
    for r in rows:
        if "method" in r:
            groups.setdefault((r["dataset"], r["method"], r["epsilon"]), []).append(r)
    for key in sorted(groups):
        rs = groups[key]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]:g} | {max(r['epsilon_spent'] for r in rs):.4g} | "
                     f"{statistics.mean(r['seconds'] for r in rs):.1f} |")
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--datasets", default="cora,citeseer,chameleon,squirrel,tolokers,lastfm")
    p.add_argument("--epsilons", default="1,2,4,8")
    p.add_argument("--methods", default="dp-mlp,gap,dpdgc")
    p.add_argument("--results", type=Path, default=ROOT / "reports" / "private_models_edge.jsonl")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "private_models_edge.md")
    p.add_argument("--render-only", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    datasets = args.datasets.split(",")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    command = (f"OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_edge_models.py --seeds {args.seeds} "
               f"--datasets {args.datasets} --epsilons {args.epsilons}")
    if not args.render_only:
        done = set()
        if args.results.is_file():
            for line in args.results.read_text().splitlines():
                r = json.loads(line)
                done.add((r["dataset"], r.get("method", "majority"), r.get("epsilon", 0.0), r["seed"]))
        for seed in range(args.seeds):  # seed-major: every cell reaches n=k before any reaches k+1
            for ds in datasets:
                graph = load(ds)
                if (ds, "majority", 0.0, seed) not in done:
                    from graphrelease.models.common import node_split

                    split = node_split(graph, train=0.5, val=0.25, seed=seed)
                    labels = np.asarray(graph.labels)
                    top = np.bincount(labels[split.train]).argmax()  # majority class of the TRAINING labels
                    with args.results.open("a") as f:
                        f.write(json.dumps({"dataset": ds, "seed": seed,
                                            "majority": float((labels[split.test] == top).mean())}) + "\n")
                for method in args.methods.split(","):
                    for e in (epsilons[:1] if method == "dp-mlp" else epsilons):
                        if (ds, method, e, seed) in done:
                            continue
                        r = run_one(graph, ds, method, e, seed)
                        print(json.dumps(r), flush=True)
                        with args.results.open("a") as f:
                            f.write(json.dumps(r) + "\n")
                        render(args.results, args.out, command, datasets, epsilons)
    render(args.results, args.out, command, datasets, epsilons)


if __name__ == "__main__":
    main()
