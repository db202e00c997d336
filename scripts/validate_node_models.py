"""Validation-split accuracy of node-level private models under option variants (issue #17 diagnosis).

Reads only the VALIDATION labels for the comparison (test accuracy is not printed), so choices made from its output
are not made on the test split. Each line of output is one run: dataset, method, adjacency, epsilon, seed, variant,
validation accuracy, and the classifier's noise multiplier.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/validate_node_models.py --dataset cora_ml --adjacency node \
        --epsilon 8 --seeds 0-7 --variants "dp-mlp;dpdgc;dpdgc:z_inputs=rownorm,head_bias=1"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from reproduce_private_models import OPTIONS, load  # noqa: E402


def parse_variant(text: str) -> tuple[str, dict]:
    method, _, rest = text.partition(":")
    opts: dict = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                continue
        opts[key] = value
    return method.strip(), opts


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    from graphrelease.models.common import accuracy
    from graphrelease.train import fit_model

    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True)
    p.add_argument("--adjacency", default="node")
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--seeds", default="0-7")
    p.add_argument("--variants", required=True, help="';'-separated method[:key=value,...]")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    graph = load(args.dataset)
    labels = np.asarray(graph.labels)
    results: dict[str, list[float]] = {}
    for seed in seeds_of(args.seeds):
        for text in args.variants.split(";"):
            method, extra = parse_variant(text)
            opts = {**OPTIONS[method], **extra, "split_seed": seed, "num_classes": graph.num_classes}
            t = time.perf_counter()
            run = fit_model(graph, method, adjacency=args.adjacency, epsilon=args.epsilon, delta=1e-5,
                            accountant="rdp", options=opts)
            model = run.model
            val = accuracy(model.predict(graph), labels, model.split.val)
            # the noise multiplier of the feature network's DP-SGD (DPDGC: its classifier; GAP: encoder + classifier)
            sigma = next((getattr(model, a) for a in ("classifier_noise", "noise_multiplier", "noise_scale")
                          if getattr(model, a, None) is not None), None)
            row = {"dataset": args.dataset, "adjacency": args.adjacency, "epsilon": args.epsilon, "seed": seed,
                   "variant": text, "val": val, "spent": run.epsilon_spent, "sigma": sigma,
                   "seconds": time.perf_counter() - t}
            results.setdefault(text, []).append(val)
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
    for text, vals in results.items():
        v = 100 * np.array(vals)
        print(f"{text:60s} val {v.mean():.1f} ± {v.std(ddof=1) if v.size > 1 else 0:.1f} (n={v.size})")


if __name__ == "__main__":
    main()
