"""Where dp_bter's communities are lost on graphs it has never seen: the DP partition or the sampler (issue 15).

Per graph (a named dataset or a :mod:`proxies` name), with the input's Louvain partition ``lv`` (igraph, seed 0):

* **selection bound**: ``lv``'s communities handed over as if they were PUBLIC candidate sets, every node picks one by
  report-noisy-max (exponential noise, scale ``2 / eps_p``: each edge is read by both of its endpoints' selections)
  on its neighbour counts per community. The labels' NMI against ``lv``, mean of 3 draws, at the partition epsilon
  of the default shares at epsilon 1 (0.31, 0.42 when the sweeps take SWEEP_SHIFT) and at 1 and 2. A reference
  point, not a proof: it is what one selection per node from its own edges gives when the sets are known, where
  the sweeps must also find them (a scheme that pools evidence over neighbourhoods could do better).
* **DP labels**: seeded ``dp_bter`` fits at epsilon 1: number of labels, their NMI against ``lv``, and the release's
  Louvain NMI and input-partition modularity RE (``lv``'s modularity on the release against on the input).
* **oracle sampler**: the same fits with the labels replaced by ``lv`` and the block counts by ``lv``'s exact ones
  (not private: a ceiling of the sampler, not a release).

Usage (writes ``reports/partition_bound.md``)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_partition_bound.py conn0,conn1,email0,collab0,facebook 3
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_structure import load_dataset  # noqa: E402
from proxies import is_proxy, proxy_graph  # noqa: E402
from sklearn.metrics import normalized_mutual_info_score as nmi  # noqa: E402

from graphrelease.audit import statistics as st  # noqa: E402
from graphrelease.generators.base import GENERATORS  # noqa: E402
from graphrelease.generators.community_dp import group_pair_counts  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402

SELECTION_EPSILONS = (0.31, 0.42, 1.0, 2.0)
REPORT = ROOT / "reports" / "partition_bound.md"


def selection_bound(graph, lv: np.ndarray, eps: float, rng: np.random.Generator, draws: int = 3) -> float:
    k = int(lv.max()) + 1
    counts = np.zeros((graph.num_nodes, k))
    e = np.asarray(graph.edges)
    np.add.at(counts, (e[:, 0], lv[e[:, 1]]), 1.0)
    np.add.at(counts, (e[:, 1], lv[e[:, 0]]), 1.0)
    return float(np.mean([nmi(lv, np.argmax(counts + rng.exponential(2.0 / eps, size=counts.shape), axis=1))
                          for _ in range(draws)]))


def row(name: str, fits: int) -> str:
    g = proxy_graph(name) if is_proxy(name) else load_dataset(name)
    lv = st.louvain_partition(g, seed=0)
    q0 = st.modularity(g, lv)
    bound = [selection_bound(g, lv, e, np.random.default_rng(0)) for e in SELECTION_EPSILONS]
    k_lab, lab_nmi, rel, rel_mod, ora, ora_mod = [], [], [], [], [], []
    for s in range(fits):
        fitted = GENERATORS.get("dp_bter")(seed=s).fit(g, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
        lab = fitted.arrays["labels"].astype(np.int64)
        k_lab.append(int(lab.max()) + 1)
        lab_nmi.append(nmi(lv, lab))
        for labels, counts, nmis, mods in ((None, None, rel, rel_mod),
                                           (lv, group_pair_counts(g, lv, int(lv.max()) + 1), ora, ora_mod)):
            if labels is not None:
                fitted.arrays["labels"], fitted.arrays["block_counts"] = labels.astype(np.int64), counts
            syn = fitted.sample(1, rng=np.random.default_rng(100 + s))[0]
            nmis.append(nmi(lv, st.louvain_partition(syn, seed=0)))
            mods.append(abs(st.modularity(syn, lv) - q0) / q0)
    med = lambda x: f"{np.median(x):.3f}"  # noqa: E731
    return (f"| {name} | {g.num_nodes:,} | {2 * g.num_edges / g.num_nodes:.1f} | {int(lv.max()) + 1} | "
            + " | ".join(f"{b:.3f}" for b in bound)
            + f" | {'/'.join(map(str, k_lab))} | {med(lab_nmi)} | {med(rel)} | {med(rel_mod)} | {med(ora)} | "
              f"{med(ora_mod)} |")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    names, fits = argv[0].split(","), int(argv[1]) if len(argv) > 1 else 3
    head = ("| graph | nodes | mean degree | Louvain communities | "
            + " | ".join(f"bound NMI at eps_p {e:g}" for e in SELECTION_EPSILONS)
            + " | DP labels (per fit) | labels' NMI | release NMI | release input-partition mod. RE | "
              "oracle-sampler NMI | oracle input-partition mod. RE |")
    lines = [f"`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_partition_bound.py {argv[0]} {fits}`", "",
             __doc__.split("Usage")[0].strip(), "", f"Medians over {fits} seeded fits at epsilon 1.", "", head,
             "|" + "---|" * (head.count("|") - 1)]
    print("\n".join(lines), flush=True)
    for name in names:
        lines.append(row(name, fits))
        print(lines[-1], flush=True)
    REPORT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
