"""dp_bter on two versions of the code, paired (the same seeded fits and draws), scored with independent igraph
metrics: how a change moved the releases (issue 15's structure log cites it). Prints a markdown table of medians.

Each version runs in its own process from its own checkout (``git worktree add /tmp/base <commit>``; the checkout
needs ``../shared`` beside it, a symlink will do). The editable install's import hook is removed from the child so
that the checkout's own ``graphrelease`` is imported. Metrics per fit, against the permuted input
(``bench_structure.load_dataset``) or a proxy (``proxies.proxy_graph``): relative errors of average clustering
(zeros below degree 2), transitivity and the triangle count, the input's Louvain partition's modularity on the
release (RE), the RE of the release's own Louvain modularity, the Louvain NMI and AMI (node ids aligned), a degree
KL with a half-count pseudocount and the largest component's share minus the input's. Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_versions.py /tmp/base . \\
        --cells cora:1,cora:4,ball_cora_1000_0:4,em1000_0:1,lastfm:1,slashdot:4 --seeds 6
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r'''
import json, random, sys
root, out, cells, seeds = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__name__.lower()
                    and "editable" not in getattr(f, "__module__", "")]
sys.path[:0] = [root, root + "/benchmarks"]
import igraph as ig
import numpy as np
import graphrelease
assert graphrelease.__file__.startswith(root), graphrelease.__file__
from bench_structure import load_dataset
from proxies import is_proxy, proxy_graph
from sklearn.metrics import adjusted_mutual_info_score as ami, normalized_mutual_info_score as nmi
from graphrelease.generators import GENERATORS
from graphrelease.privacy.budget import Budget


def stats(G):
    random.seed(0)
    ig.set_random_number_generator(random.Random(0))
    lv = G.community_multilevel()
    d = np.array(G.degree(), float)
    t = G.transitivity_undirected()
    return dict(avgc=G.transitivity_avglocal_undirected(mode="zero"), trans=t, tri=t * (d * (d - 1) / 2).sum() / 3,
                memb=lv.membership, mod=lv.modularity, deg=np.array(G.degree()),
                lcc=max(G.connected_components().sizes()) / G.vcount())


def degree_kl(a, b):
    m = max(a.max(), b.max()) + 1
    p, q = np.bincount(a, minlength=m) + 0.5, np.bincount(b, minlength=m) + 0.5
    p, q = p / p.sum(), q / q.sum()
    return float((p * np.log(p / q)).sum())


with open(out, "w") as fh:
    for cell in cells:
        name, eps = cell.split(":")
        g = proxy_graph(name) if is_proxy(name) else load_dataset(name)
        s0 = stats(ig.Graph(n=g.num_nodes, edges=np.asarray(g.edges).tolist()))
        for r in range(seeds):
            fitted = GENERATORS.get("dp_bter")(seed=900 + r).fit(g, Budget(epsilon=float(eps), delta=1e-6,
                                                                            adjacency="edge"))
            s = fitted.sample(1, rng=np.random.default_rng(31 + r))[0]
            S = ig.Graph(n=s.num_nodes, edges=np.asarray(s.edges).tolist())
            s1 = stats(S)
            rel = lambda k: (s1[k] - s0[k]) / s0[k] if s0[k] else float("nan")
            fh.write(json.dumps(dict(cell=cell, seed=r, avgc=rel("avgc"), trans=rel("trans"), tri=rel("tri"),
                                     modin=abs(S.modularity(s0["memb"]) - s0["mod"]) / s0["mod"],
                                     modre=abs(s1["mod"] - s0["mod"]) / s0["mod"],
                                     nmi=nmi(s0["memb"], s1["memb"]), ami=ami(s0["memb"], s1["memb"]),
                                     kl=degree_kl(s0["deg"], s1["deg"]),
                                     lcc=s1["lcc"] - s0["lcc"])) + "\n")
'''

COLUMNS = (("avgc", True, "avg clust. RE"), ("trans", True, "transitivity RE"), ("tri", True, "triangles RE"),
           ("modin", False, "input-partition modularity RE"), ("modre", False, "modularity RE"),
           ("nmi", False, "Louvain NMI"), ("ami", False, "Louvain AMI"),
           ("kl", False, "degree KL (smoothed)"), ("lcc", False, "LCC share - input's"))


def run(root: Path, cells: str, seeds: int, out: Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", CHILD, str(root.resolve()), str(out), cells, str(seeds)], env=env)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--cells", required=True, help="dataset:epsilon,...")
    ap.add_argument("--seeds", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / "before.jsonl", Path(tmp) / "after.jsonl"]
        # The two versions run side by side (one core each).
        procs = [run(root, args.cells, args.seeds, out) for root, out in zip((args.before, args.after), outs)]
        if any(p.wait() != 0 for p in procs):
            sys.exit("a version's run failed (its traceback is above)")
        rows = [{(r["cell"], r["seed"]): r for r in map(json.loads, out.read_text().splitlines())} for out in outs]
    print("| graph | eps | " + " | ".join(c[2] + ": before -> after" for c in COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for cell in args.cells.split(","):
        seeds = [s for s in range(args.seeds) if (cell, s) in rows[0] and (cell, s) in rows[1]]
        cols = []
        for key, absolute, _ in COLUMNS:
            before, after = ([abs(v[(cell, s)][key]) if absolute else v[(cell, s)][key] for s in seeds] for v in rows)
            cols.append(f"{np.median(before):.3f} -> {np.median(after):.3f}")
        print(f"| {cell.replace(':', ' | ')} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
