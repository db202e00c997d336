"""Where dp_bter's Louvain NMI is lost between the DP partition and the synthetic graph (issue 15).

Seeded ``dp_bter`` fits on a permuted dataset; per fit one draw per sampler variant (the same released values):

* ``default``: the shipped sampler;
* ``truecounts``: the block-pair counts replaced by the exact counts of the DP labels (is their noise the loss?);
* ``noclose``: no clustering-sum wedge closures (the released sum set to NaN, as when it is not released);
* ``noaff``: ablation, no affinity groups (``group_densities`` returns zeros: a DC-SBM on the DP labels; the
  triangles are lost, so this is a diagnosis, not a candidate).

Prints NMI(input Louvain, DP labels) -- the most a release that reproduced the labels exactly could score --,
NMI(input Louvain, synthetic Louvain) (the metric), NMI(labels, synthetic Louvain), the synthetic Louvain's community
count and share of nodes in communities under 20 nodes, the within-label edge share of input and draw, the Louvain
modularity RE and the triangle ratio. Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_partition_loss.py facebook 1 default,truecounts,noclose,noaff 2
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_structure import load_dataset  # noqa: E402
from sklearn.metrics import normalized_mutual_info_score as nmi  # noqa: E402

from graphrelease.audit import statistics as st  # noqa: E402
from graphrelease.generators import bter  # noqa: E402
from graphrelease.generators.base import GENERATORS  # noqa: E402
from graphrelease.generators.community_dp import group_pair_counts  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402


def main() -> None:
    name, eps, variants, runs = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4])
    g = load_dataset(name)
    lv = st.louvain_partition(g, seed=0)
    q0 = st.modularity(g, lv)
    t0 = max(st.triangle_count(g), 1)
    shipped = bter.group_densities
    for r in range(runs):
        fitted = GENERATORS.get("dp_bter")(seed=1000 + r).fit(g, Budget(epsilon=eps, delta=1e-6, adjacency="edge"))
        lab = fitted.arrays["labels"].astype(np.int64)
        k = int(lab.max()) + 1
        released = {key: np.array(v, copy=True) for key, v in fitted.arrays.items()}
        for var in variants:
            fitted.arrays.update({key: np.array(v, copy=True) for key, v in released.items()})
            bter.group_densities = shipped
            if var == "truecounts":
                fitted.arrays["block_counts"] = group_pair_counts(g, lab, k).astype(np.float64)
            elif var == "noclose":
                fitted.arrays["clustering_sum"] = np.float64(np.nan)
            elif var == "noaff":
                bter.group_densities = lambda starts, *a, **kw: np.zeros(len(starts) - 1)
            s = fitted.sample(1, rng=np.random.default_rng(7 + r))[0]
            bter.group_densities = shipped
            slv = st.louvain_partition(s, seed=0)
            sizes = np.bincount(slv)
            small = float(np.isin(slv, np.flatnonzero(sizes < 20)).mean())
            e_in, e_s = np.asarray(g.edges), np.asarray(s.edges)
            win_in = float((lab[e_in[:, 0]] == lab[e_in[:, 1]]).mean())
            win_s = float((lab[e_s[:, 0]] == lab[e_s[:, 1]]).mean())
            print(f"| {name} | {eps:g} | {r} | {var} | {k} | {nmi(lv, lab):.3f} | {nmi(lv, slv):.3f} | "
                  f"{nmi(lab, slv):.3f} | {int(slv.max()) + 1} | {small:.2f} | {win_in:.3f} / {win_s:.3f} | "
                  f"{abs(st.modularity(s, slv) - q0) / q0:.3f} | {st.triangle_count(s) / t0:.3f} |", flush=True)


if __name__ == "__main__":
    main()
