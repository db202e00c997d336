"""How much the closed-form joint-convexity (JC) bound costs the replace-one DP-SGD stages (k-neighbor rows of the
DPDGC Table 2), against the accountant's exact replace-one pair and the add/remove pair. Writes
reports/replace_one_accounting.md.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/replace_one_accounting.py

For the DP-MLP settings of scripts/reproduce_private_models.py (batch 256, 20 epochs, the public training-slot
count of each dataset's 50% split, delta 1e-5) it finds by bisection the noise multiplier that meets epsilon 16
with the models' own calibration (``calibrate_common_noise``) under (a) the JC entry, (b) the exact replace-one pair
and (c) the add/remove subsampled Gaussian, then evaluates the exact replace-one accountant at (a) and (c).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.models.common import steps_for  # noqa: E402
from graphrelease.models.private_training import calibrate_common_noise  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.privacy.accountants import compute_epsilon  # noqa: E402
from graphrelease.privacy.ledger import LedgerEntry  # noqa: E402

DELTA, TARGET, EPOCHS, BATCH = 1e-5, 16.0, 20, 256
NODES = {"cora": 2708, "citeseer": 3327, "cora_ml": 2995, "chameleon": 2277}


def entry(kind: str, sigma: float, q: float, steps: int) -> LedgerEntry:
    if kind == "jc":
        return LedgerEntry(mechanism="joint_convexity_gaussian", stage="s", count=steps, sensitivity=1.0,
                           params={"noise_multiplier": sigma, "pair_rate": q})
    return LedgerEntry(mechanism="subsampled_gaussian", stage="s", count=steps, sensitivity=1.0,
                       params={"noise_multiplier": sigma, "sample_rate": q, "sampling": "poisson",
                               "neighboring": "add_remove" if kind == "ar" else "replace_one"})


def eps(kind: str, sigma: float, q: float, steps: int) -> float:
    return compute_epsilon([entry(kind, sigma, q, steps)], DELTA, accountant="rdp")


def sigma_for(kind: str, q: float, steps: int) -> float:
    """The noise multiplier the models' own calibration picks for this entry (``calibrate_common_noise``)."""
    budget = Budget(epsilon=TARGET, delta=DELTA, adjacency="node", accountant="rdp")
    return calibrate_common_noise(lambda s: [entry(kind, s, q, steps)], budget)


def main() -> None:
    lines = ["# Replace-one accounting: joint-convexity bound vs exact pair vs add/remove", "",
             "Command: `OMP_NUM_THREADS=1 .venv/bin/python scripts/replace_one_accounting.py`", "",
             f"DP-MLP's DP-SGD settings in `scripts/reproduce_private_models.py` (Poisson batches of expected size "
             f"{BATCH}, {EPOCHS} epochs over the public training slots = 50% of the nodes), target epsilon {TARGET:g}, "
             f"delta {DELTA:g}, RDP accountant. sigma(JC) is what the k-neighbor rows charge (one example replaced, "
             "closed-form joint-convexity bound, linear in the sampling rate); sigma(add/remove) is what the node rows "
             "charge (one example added or removed). The last two columns evaluate the accountant's exact replace-one "
             "pair (numerical quadrature) at those noise levels.", "",
             "| dataset | q | steps | sigma(JC) | sigma(exact replace-one) | sigma(add/remove) | "
             "exact replace-one eps at sigma(JC) | exact replace-one eps at sigma(add/remove) | seconds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, n in NODES.items():
        t = time.perf_counter()
        steps, q = steps_for(EPOCHS, n // 2, BATCH)
        s_jc, s_ro, s_ar = sigma_for("jc", q, steps), sigma_for("ro", q, steps), sigma_for("ar", q, steps)
        e_jc, e_ar = eps("ro", s_jc, q, steps), eps("ro", s_ar, q, steps)
        lines.append(f"| {name} | {q:.3f} | {steps} | {s_jc:.3f} | {s_ro:.3f} | {s_ar:.3f} | {e_jc:.2f} | {e_ar:.2f} | "
                     f"{time.perf_counter() - t:.0f} |")
        print(lines[-1], flush=True)
    lines += ["", "Reading: the JC bound is sound but needs a noise multiplier ~2.6x that of the exact replace-one "
              "pair at the same epsilon (it is linear in the sampling rate where the pair's divergence is quadratic "
              "at small rates); the exact pair certifies the JC noise level at about a third of the target epsilon. "
              "Since 2026-11-23 the models charge the exact pair for one replaced example (DP-MLP and the DPDGC "
              "classifier under k-neighbor adjacency; `graphrelease/models/private_training.py: make_dpsgd_trainer`) and keep JC "
              "for groups (DPDGC's DP-Emb). The k-neighbor rows of reports/private_models.md say which accounting "
              "each cell used. One exact RDP curve takes ~0.1 s, so the calibration loop affords it (the seconds "
              "column: three calibrations of about 14 evaluations each plus two exact evaluations).", ""]
    (ROOT / "reports" / "replace_one_accounting.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
