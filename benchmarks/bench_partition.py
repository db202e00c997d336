"""DP partitions from the edges alone at one partition budget, on randomly permuted graphs (issue 15).

For each dataset (node ids permuted as in ``bench_structure.py``) and partition epsilon: the degree-ordered label
sweeps (``dp_partition``, split as ``dp_bter`` splits them, ``bter.DOWN_SHARE``), PrivGraph's noisy super-graph +
sequential adjustment (a third of the epsilon for the super-graph, two thirds for the adjustment's two selections
per edge), and random-start label propagation (two sequential passes reading every edge, monotone exponential
mechanism). Degrees are released first at epsilon 0.22 + 0.10 (they rank the nodes and size K). Prints a markdown row per cell: median over 3 runs of the
NMI against the input's Louvain partition, the partition's modularity on the input, its number of labels, and CPU
seconds per run. Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_partition.py cora,chameleon,facebook,lastfm,slashdot 0.35,1.4
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_structure import load_dataset  # noqa: E402
from sklearn.metrics import normalized_mutual_info_score as nmi  # noqa: E402

from graphrelease.audit import statistics as st  # noqa: E402
from graphrelease.generators.bter import DOWN_SHARE  # noqa: E402
from graphrelease.generators.community_dp import em_refine_sequential, noisy_supergraph_partition, relabel  # noqa
from graphrelease.generators.dp_partition import degree_ordered_partition, label_count  # noqa: E402
from graphrelease.generators.dp_stats import release_degrees  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402


def sweeps(g, dhat, eps, rng, b):
    """As ``dp_bter`` runs them (``DOWN_SHARE`` of the epsilon to the down sweep, the rest to the up sweep)."""
    return degree_ordered_partition(g, dhat, b, rng, epsilon_down=DOWN_SHARE * eps,
                                    epsilon_up=(1.0 - DOWN_SHARE) * eps, stage="x", proof="x")


def privgraph(g, dhat, eps, rng, b):
    lab, _ = noisy_supergraph_partition(g, b, rng, epsilon=eps / 3, group_size=20, resolution=1.0, stage="x",
                                        proof="x")
    return em_refine_sequential(g, lab, b, rng, epsilon=eps / 3, stage="y", proof="x")  # 2 selections x eps/3


def lpa(g, dhat, eps, rng, b):
    """Random start, two sequential passes reading every edge (two reads per edge per pass at eps/4 each)."""
    n = g.num_nodes
    csr = g.to_csr()
    ip, ix = csr.indptr, csr.indices
    k = label_count(eps / 2, dhat.mean())
    lab = rng.integers(k, size=n)
    for _ in range(2):
        for i in rng.permutation(n):
            c = np.bincount(lab[ix[ip[i]:ip[i + 1]]], minlength=k)
            lab[i] = int(np.argmax(eps / 4 * c + rng.gumbel(size=k)))
    return lab


def main() -> None:
    for name in sys.argv[1].split(","):
        g = load_dataset(name)
        lv = st.louvain_partition(g, seed=0)
        for eps in [float(e) for e in sys.argv[2].split(",")]:
            for mech in (sweeps, privgraph, lpa):
                res = []
                t0 = time.process_time()
                for r in range(3):
                    rng = np.random.default_rng(100 + r)
                    b = Budget(epsilon=100, delta=1e-6, adjacency="edge")
                    dhat = release_degrees(g, b, rng, epsilon_sorted=0.22, epsilon_rank=0.10, stage="d").plain
                    lab = relabel(mech(g, dhat, eps, rng, b))
                    res.append((nmi(lv, lab), st.modularity(g, lab), lab.max() + 1))
                med = np.median(np.array(res), axis=0)
                print(f"| {name} | {eps:g} | {mech.__name__} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:.0f} | "
                      f"{(time.process_time() - t0) / 3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
