"""Reproduce the seed's IMDB-MULTI Tables 1-2 (Yang et al., 'Secure Deep Graph Generation with Link Differential
Privacy') for GVAE, GGAN, DPGVAE/DPGGAN in mode=paper (per-graph models, our accounting) and in the sound
collection mode (one model, one example = one graph, edge adjacency); writes reports/dpggan_reproduction.md.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_dpggan.py [--graphs 30] [--out reports/dpggan_reproduction.md]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrelease.audit.compare import compare_graph_sets  # noqa: E402
from graphrelease.errors import BudgetError  # noqa: E402
from graphrelease.generators.base import GENERATORS  # noqa: E402
from graphrelease.graph import GraphCollection  # noqa: E402
from graphrelease.io import read_graph  # noqa: E402
from graphrelease.privacy.accountants import compute_epsilon  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-5
COLUMNS = ("table1_mad_lcc_size", "table1_mad_triangle_count", "table1_mad_cpl", "table1_mad_gini",
           "table1_mad_rede", "degree_cosine", "motif_cosine")
HEAD = ("LCC", "TC", "CPL", "GINI", "REDE", "deg cos", "motif cos")


def per_graph(method: str, graphs, *, mode: str | None, eps: float | None, steps: int, seed: int):
    """The seed's protocol: one model per graph, one generated graph per model (same node count)."""
    out, spent, info = [], [], []
    for i, g in enumerate(graphs):
        kwargs = {"seed": seed + i, "max_steps": steps}
        if mode is not None:
            # q = 1: the reference code's effective rate (q = n_graph / n_first_graph >= 1 there); with the paper's
            # stated q = 0.01 a 13-node graph's batches are almost always empty and the decoder learns only noise
            kwargs.update(mode=mode, paper_sample_rate=1.0)
        else:
            kwargs["steps"] = steps
        gen = GENERATORS.get(method)(**kwargs)
        budget = Budget.unlimited("edge") if eps is None else Budget(epsilon=eps, delta=DELTA, adjacency="edge",
                                                                      accountant="rdp")
        try:
            fitted = gen.fit(g, budget)
        except BudgetError as err:
            return None, [], str(err)
        out.extend(fitted.sample(1, num_nodes=g.num_nodes, rng=np.random.default_rng(seed + i)))
        if eps is not None:
            spent.append(compute_epsilon(budget.ledger, DELTA, "rdp"))
            info.append(gen.last_info.get("steps"))
    return out, spent, f"steps/graph {info[0] if info else steps}"


def collection_mode(method: str, coll: GraphCollection, subset, *, eps: float, epochs: float, seed: int):
    gen = GENERATORS.get(method)(mode="graphs", epochs=epochs, seed=seed)
    budget = Budget(epsilon=eps, delta=DELTA, adjacency="edge", accountant="rdp")
    fitted = gen.fit(coll, budget)
    rng = np.random.default_rng(seed)
    # node counts are public under edge adjacency: generate graph i with the i-th original's node count
    out = [fitted.sample(1, num_nodes=max(2, g.num_nodes), rng=rng)[0] for g in subset]
    info = gen.last_info
    return out, compute_epsilon(budget.ledger, DELTA, "rdp"), (
        f"{info['steps']} steps, sigma {info['noise_multiplier']:.3g}, q {info['sample_rate']:.3g}")


def fmt_row(name: str, eps: str, res: dict | None, note: str) -> str:
    if res is None:
        return f"| {name} | {eps} | " + " | ".join("-" for _ in COLUMNS) + f" | {note} |"
    vals = " | ".join(f"{res[c]:.3f}" if not math.isnan(res[c]) else "nan" for c in COLUMNS)
    return f"| {name} | {eps} | {vals} | {note} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graphs", type=int, default=30, help="random subset of IMDB-MULTI graphs (paper: all 1500)")
    ap.add_argument("--steps", type=int, default=200, help="max steps per per-graph model")
    ap.add_argument("--epochs", type=float, default=4.0, help="epochs of the sound collection mode")
    ap.add_argument("--out", default=str(ROOT / "reports" / "dpggan_reproduction.md"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "collections" / "IMDB-MULTI"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    coll = read_graph(args.data).data
    idx = np.sort(np.random.default_rng(2021).choice(len(coll), size=args.graphs, replace=False))
    subset = [coll[int(i)] for i in idx]
    rows = []

    def record(name, eps_label, generated, note):
        res = None if generated is None else compare_graph_sets(subset, generated, motif_time_limit=5.0)
        rows.append(fmt_row(name, eps_label, res, note))
        print(rows[-1], f"[{time.time() - t0:.0f}s]", flush=True)

    for method in ("gvae", "ggan"):
        gen, _, note = per_graph(method, subset, mode=None, eps=None, steps=args.steps, seed=1)
        record(method.upper(), "inf (non-private)", gen, f"per-graph models, {note}")
    for method in ("dpgvae", "dpggan"):
        for eps in EPSILONS:
            gen, spent, note = per_graph(method, subset, mode="paper", eps=eps, steps=args.steps, seed=11)
            label = f"{eps:g} (nominal, ours: {max(spent):.3g})" if spent else f"{eps:g}"
            record(f"{method.upper()} paper", label, gen,
                   f"per-graph, sigma 5, q 1, {note}; true guarantee: none" if gen is not None else note)
    for method in ("dpgvae", "dpggan"):
        for eps in EPSILONS:
            try:
                gen, spent, note = collection_mode(method, coll, subset, eps=eps, epochs=args.epochs, seed=21)
                record(f"{method.upper()} sound (graphs)", f"{eps:g} (spent {spent:.3g})", gen,
                       f"one model on all {len(coll)} graphs, {note}")
            except BudgetError as err:
                record(f"{method.upper()} sound (graphs)", f"{eps:g}", None, str(err))
    elapsed = time.time() - t0
    text = f"""# DPGGAN / DPGVAE reproduction on IMDB-MULTI

Regenerate: `OMP_NUM_THREADS=1 .venv/bin/python scripts/reproduce_dpggan.py --graphs {args.graphs} --steps {args.steps} --epochs {args.epochs:g}`
(ran in {elapsed / 60:.1f} min on a shared 2-core CPU).

Seed: Yang et al., "Secure Deep Graph Generation with Link Differential Privacy" (IJCAI 2021), Tables 1 and 2,
IMDB-MULTI. Columns: mean absolute difference between each original graph and its generated counterpart of the
largest-connected-component size (LCC), triangle count (TC), characteristic path length (CPL), Gini coefficient of
degrees (GINI) and relative edge-distribution entropy (REDE), lower is better (definitions:
`graphrelease.audit.compare.SET_COMPARISON_LEGEND`, isolated nodes removed first as in the seed's code); and the
seed's Table 2 mean cosine similarity of degree vectors and of graphlet-count (motif) vectors, higher is better.

**Protocol and deviations.** The paper trains one model per graph on all 1500 graphs; here a random subset of
{args.graphs} graphs (numpy seed 2021) is used for every row, because 1500 x 8 per-graph fits do not fit in this
machine's time budget. Per-graph models (GVAE, GGAN, paper mode) generate one graph each with the original's node
count. The sound collection mode trains ONE model on all {len(coll)} graphs (one example = one graph,
edge adjacency, replace-one Poisson subsampled Gaussian) and generates one graph per subset graph with that
graph's node count (public under edge adjacency). The paper's own numbers are not transcribed here: we could not
check them against the paper text in this session, and we do not print numbers we did not read or measure; see the
seed's Tables 1-2 for them.

**Epsilon.** mode=paper runs the seed's Algorithm 1 (sigma = 5 as in the paper; q = 1, which is what the
reference code effectively runs since its q = n_graph / n_first_graph is >= 1 for most graphs; per-node clipping of decoder gradients, encoder and discriminator on the raw adjacency). The "ours" value is OUR RDP
accounting of the noisy decoder channel (Poisson subsampled Gaussian, {args.steps} steps at most, the most steps
whose nominal epsilon fits); it is only nominal: the encoder and the discriminator read the adjacency without
noise, so the algorithm has no edge-DP guarantee at all (PRIVACY.md section 3, and
`tests/generators/test_gvae.py::test_probe_paper_mode_exceeds_C`). The sound rows report the epsilon actually
spent (RDP accountant; calibration by RDP). Per-graph models under edge adjacency compose in parallel (an edge
lives in one graph), so a per-graph epsilon is also the collection's.

| model | epsilon | LCC | TC | CPL | GINI | REDE | deg cos | motif cos | notes |
|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + """

**Where the sound modes lose.** Read the table: the sound collection mode shares one decoder across all graphs and
samples latents from the prior, so it cannot tailor each graph's structure (TC and LCC of the dense IMDB ego
networks suffer most), and at epsilon 0.1 its gradients are dominated by noise. The per-graph paper-mode rows look
better or similar only because their encoder/discriminator leak the adjacency for free; their epsilon is not a
guarantee.
"""
    Path(args.out).write_text(text)
    print(f"wrote {args.out} in {elapsed:.0f}s")


if __name__ == "__main__":
    main()
