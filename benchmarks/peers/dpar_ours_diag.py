"""Why our ``dpar`` (and the bug-fixed peer) sit near the majority-class rate at node epsilon 8-16: our model at
the table's budget with its defaults, with a column cap of 1 (group 2 instead of 9), with fewer DP-SGD steps, and
with the APPR-aggregated input channel switched off (a diagnostic monkeypatch of ``DPAR._aggregate``, both at
training and at inference; never a release option). One process, sequential fits, split seed = run.

    python benchmarks/peers/dpar_ours_diag.py --graph cora_ml --runs 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402

CASES = [  # (target epsilon, options, aggregate channel on)
    (8.0, {}, True),
    (8.0, {"col_cap": 1}, True),
    (8.0, {"col_cap": 1, "epochs": 10}, True),
    (100.0, {"col_cap": 1, "epochs": 10}, True),
    (100.0, {"col_cap": 1, "epochs": 10}, False),
    (float("inf"), {}, True),
]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="cora_ml")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, default=common.ROOT / "reports" / "peers" / "dpar_ours_diag.json")
    a = ap.parse_args(argv)
    import torch

    from graphrelease.models import dpar as dpar_model
    from graphrelease.models.common import node_split
    from graphrelease.train import fit_model

    g = common.load_graph(a.graph)
    y = np.asarray(g.labels)
    k = int(y.max()) + 1
    aggregate = dpar_model.DPAR._aggregate
    rows = []
    for eps, opts, agg_on in CASES:
        dpar_model.DPAR._aggregate = staticmethod(
            aggregate if agg_on else (lambda pi, x: torch.zeros(pi.shape[0], x.shape[1])))
        for run in range(a.runs):
            test = y[node_split(g, train=0.5, val=0.25, seed=run).test]
            start = time.process_time()
            r = fit_model(g, "dpar", adjacency="node", epsilon=eps, delta=1e-5,
                          options={"split_seed": run, "num_classes": k, **opts})
            m = r.model
            row = {"graph": a.graph, "eps_target": eps, "options": opts, "aggregate_channel": agg_on, "run": run,
                   "test_acc": r.test_accuracy, "train_acc": r.train_accuracy,
                   "majority_rate": float(np.bincount(test).max() / test.size),
                   "noise_multiplier": m.noise_multiplier, "steps": m.steps,
                   "eps_select": m.appr_params.eps_select if m.appr_params else None,
                   "epsilon_spent": r.epsilon_spent, "fit_cpu_s": time.process_time() - start}
            print(json.dumps(row), flush=True)
            rows.append(row)
            common.write_json(a.json, rows)
    dpar_model.DPAR._aggregate = aggregate
    return rows


if __name__ == "__main__":
    main()
