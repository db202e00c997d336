"""Validation-only check of best-validation epoch selection (models/common.py ``validation_select``), issue #17.

For each (dataset, method, epsilon, split seed) the model is fitted twice under edge adjacency with the script's
options (scripts/reproduce_edge_models.py) and the same noise seed: once without selection and once selecting the epoch
on the EVEN half of the validation nodes. Both are scored on the ODD half, which the selection never reads, so the selected run's score
is not biased by its own choice. Test nodes are not read. One JSON line per fit goes to ``--out``.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/check_epoch_selection.py --out reports/epoch_selection_validation.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.models import common, dpdgc, gap, mlp  # noqa: E402
from scripts.reproduce_edge_models import load, options_for  # noqa: E402

REAL = common.validation_select
USERS = (mlp, gap, dpdgc)  # modules that imported the hook by name


def use_selection(mode: str) -> None:
    """"off": no stage selects; "even": stages select on the even-position validation nodes only."""
    def hook(forward, labels, val, *, public):
        nodes = np.asarray(val)[::2]
        return None if mode == "off" else REAL(forward, labels, nodes, public=public)

    for mod in USERS:
        mod.validation_select = hook


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cells", default="tolokers:2,tolokers:8,cora:4,citeseer:1")
    p.add_argument("--methods", default="dp-mlp,gap,dpdgc")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    from graphrelease.train import fit_model

    graphs: dict = {}
    for cell in args.cells.split(","):
        ds, eps = cell.split(":")
        graph = graphs.setdefault(ds, load(ds))
        labels = np.asarray(graph.labels)
        for method in args.methods.split(","):
            for seed in range(args.seeds):
                for mode in ("off", "even"):
                    use_selection(mode)
                    # seeded (a check, not a release): both fits draw the same noise, and scoring draws nothing,
                    # so they share one trajectory and differ only in the kept epoch
                    opts = dict(options_for(graph, method), split_seed=seed, seed=1000 + seed)
                    run = fit_model(graph, method, adjacency="edge", epsilon=float(eps), delta=1e-5,
                                    accountant="rdp", options=opts)
                    held = np.asarray(run.model.split.val)[1::2]
                    acc = float((run.model.predict(graph)[held] == labels[held]).mean())
                    r = {"dataset": ds, "method": method, "epsilon": float(eps), "seed": seed, "select": mode,
                         "heldout_val_accuracy": acc}
                    print(json.dumps(r), flush=True)
                    with args.out.open("a") as f:
                        f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
