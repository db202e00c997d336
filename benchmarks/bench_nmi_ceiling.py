"""The Louvain-NMI metric's own ceiling and floor on the inputs (issue 15).

For each dataset (node ids permuted as in ``bench_structure.py``): Louvain (igraph multilevel, as the structure
benchmark runs it) with seeds 0..4 on the INPUT; the median and range of the 10 pairwise NMIs, the number of
communities and the modularity. No release can be expected to score above the input's agreement with itself.
"chance" is the NMI between the seed-0 partition and a random relabelling of its own nodes (the same community
sizes, no information): the floor a release without community signal scores. Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_nmi_ceiling.py facebook,chameleon,slashdot
"""
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_structure import load_dataset  # noqa: E402
from sklearn.metrics import normalized_mutual_info_score as nmi  # noqa: E402

from graphrelease.audit import statistics as st  # noqa: E402


def main() -> None:
    print("| dataset | nodes | self-NMI median | range | communities | modularity | chance |")
    print("|---|---|---|---|---|---|---|")
    for name in sys.argv[1].split(","):
        g = load_dataset(name)
        parts = [st.louvain_partition(g, seed=s) for s in range(5)]
        vals = [nmi(a, b) for a, b in itertools.combinations(parts, 2)]
        ks = [int(p.max()) + 1 for p in parts]
        mods = [st.modularity(g, p) for p in parts]
        chance = np.median([nmi(parts[0], np.random.default_rng(r).permutation(parts[0])) for r in range(5)])
        print(f"| {name} | {g.num_nodes} | {np.median(vals):.3f} | {min(vals):.3f}-{max(vals):.3f} | "
              f"{min(ks)}-{max(ks)} | {min(mods):.3f}-{max(mods):.3f} | {chance:.3f} |", flush=True)


if __name__ == "__main__":
    main()
