"""The audit's verdict on the default single-graph release (issue 15 item 4): for each graph of
``reports/structure_fidelity.md`` and each epsilon, one release through the library path a data owner uses
(``synthesize`` -> a release bundle with its certificate) and ``run_audit`` on it, so the plain-words verdict (kept /
changed / lost, degenerate flags, attacks) sits beside the report's own metrics for the same generator and budgets.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/structure_verdict.py --datasets cora,chameleon,facebook,lastfm,slashdot --epsilons 1,4

Writes ``reports/structure_verdict.md`` (and ``.json``). One release per cell: the verdict reads one graph, as an
owner's audit does; the spread over runs is in the structure report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_structure import load_dataset  # noqa: E402

from graphrelease.audit.run import run_audit  # noqa: E402
from graphrelease.synth import synthesize  # noqa: E402


def cell(name: str, epsilon: float, method: str) -> dict:
    graph = load_dataset(name)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.process_time()
        res = synthesize(graph, method=method, epsilon=epsilon, out=Path(tmp) / "release")
        fit_cpu = time.process_time() - t0
        t0 = time.process_time()
        audit = run_audit(graph, [res.release_dir], tasks=("statistics", "motifs"),
                          attacks=("link_inference", "membership"))
        audit_cpu = time.process_time() - t0
    v = audit.verdict["releases"][0]
    return {"dataset": name, "epsilon": epsilon, "method": method, "spent": res.epsilon_spent,
            "guarantee": res.guarantee, "headline": v["headline"], "flags": v["flags"], "kept": v["kept"],
            "changed": v["changed"], "lost": v["lost"], "privacy": v["privacy"], "synth_cpu_s": fit_cpu,
            "audit_cpu_s": audit_cpu}


def render(rows: list[dict], command: str) -> str:
    out = ["# The audit's verdict on the default single-graph release (issue 15)", "",
           "Regenerate with:", "", "```", command, "```", "",
           "One `dp_bter` release per cell through `synthesize` (a bundle with its certificate; node ids permuted as "
           "in `reports/structure_fidelity.md`), audited by `run_audit` (statistics, 3/4-node motifs, link-inference "
           "and membership attacks). The verdict's thresholds are the audit's own (`graphrelease/audit/verdict.py`): "
           "kept at relative error <= 10%, lost at >= 50%, degree distribution by the KL of log2-binned degrees "
           "(kept <= 0.1, lost >= 1), motif proportions by cosine (kept >= 0.9, lost < 0.5). Average clustering is "
           "the audit's `clustering` item; triangles, components, the largest component and CPL are its counts.",
           "", "| dataset | epsilon | spent | verdict | kept | changed | lost | synth CPU s | audit CPU s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['dataset']} | {r['epsilon']:g} | {r['spent']:.3f} | {r['headline']} | "
                   f"{'; '.join(r['kept']) or '-'} | {'; '.join(r['changed']) or '-'} | "
                   f"{'; '.join(r['lost']) or '-'} | {r['synth_cpu_s']:.1f} | {r['audit_cpu_s']:.1f} |")
    out += ["", ("Privacy lines of the same audits (the audit's attacks against the certified epsilon). These "
                  "attacks score the input's edges against uniform non-edges, so a release that keeps the communities "
                  "lets them beat "
                  "chance without exposing any one edge: edge DP bounds what one edge changes, not what the graph's "
                  "structure implies. The per-edge test is the two-world black-box audit "
                  "(`tests/testing/test_blackbox.py`) and the canary audit (`reports/audit.md`)."), ""]
    for r in rows:
        p = r["privacy"]
        out.append(f"- {r['dataset']} epsilon {r['epsilon']:g} ({p.get('guarantee')}): link-inference AUC "
                   f"{p.get('link_inference_auc', float('nan')):.3f} (on the input itself "
                   f"{p.get('link_inference_auc_original', float('nan')):.3f}); membership advantage "
                   f"{p.get('membership_advantage', float('nan')):.3f}, TPR at 1% FPR "
                   f"{p.get('membership_tpr_at_1pct_fpr', float('nan')):.3f}")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="cora,chameleon,facebook,lastfm,slashdot")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--method", default="dp_bter")
    ap.add_argument("--out", default=str(ROOT / "reports" / "structure_verdict.md"))
    args = ap.parse_args()
    rows = []
    for name in args.datasets.split(","):
        for eps in (float(e) for e in args.epsilons.split(",")):
            rows.append(cell(name, eps, args.method))
            r = rows[-1]
            print(f"{name} eps {eps:g}: {r['headline']} | lost: {'; '.join(r['lost']) or '-'}", flush=True)
    command = ("OMP_NUM_THREADS=1 .venv/bin/python benchmarks/structure_verdict.py "
               f"--datasets {args.datasets} --epsilons {args.epsilons}"
               + (f" --method {args.method}" if args.method != "dp_bter" else ""))
    Path(args.out).write_text(render(rows, command))
    Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
