"""PrivGraph side by side: the public code (Privacy-Graph/PrivGraph), as published and with its stale-variable bug
fixed, against our ``privgraph``, on the same graph and budget.

    python benchmarks/peers/privgraph.py --peer /path/to/PrivGraph --graphs chameleon,facebook --epsilons 1,3.5

The peer's ``main.py`` is one script with the generation inlined in ``main_func`` (its pandas ``DataFrame.append``
no longer exists in pandas >= 2, so ``main_func`` cannot run as is here). The child therefore reads the peer's own
generation block out of ``main.py`` at run time (from ``# Community Initialization`` to ``mat2[mat2>0] = 1``) and
executes it unchanged with the peer's ``utils``/``comm`` modules and python-louvain, on a dense adjacency built from
our data. ``public_fixed`` applies one textual change: the inter-community endpoint list is the pair's own first
community instead of the stale ``pi`` left over from the edge-vector loop. Nothing of the peer is stored here.

Utility is scored by our metric code for every tool alike: NMI of the seeded Louvain partitions (input vs release,
the paper's community-preservation headline), transitivity relative error, relative error of the input's Louvain
partition's modularity scored on the release, and edge-count relative error.
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

KEYS = ["nmi", "transitivity_re", "modularity_re", "edges_re"]
TOOLS = ("public", "public_fixed", "ours")
BLOCK_START, BLOCK_END = "# Community Initialization", "mat2[mat2>0] = 1"
BUGGY, FIXED = "c1 = np.random.choice(pi,ev1)", "c1 = np.random.choice(mat1_pvs[i],ev1)"


def peer_block(peer: Path, fixed: bool) -> str:
    src = (peer / "main.py").read_text().splitlines()
    start = next(i for i, ln in enumerate(src) if ln.strip() == BLOCK_START)
    end = next(i for i in range(start, len(src)) if src[i].strip() == BLOCK_END)
    block = textwrap.dedent("\n".join(src[start:end + 1]))
    if fixed:
        if block.count(BUGGY) != 1:
            raise SystemExit("peer main.py changed: the stale-variable line was not found exactly once")
        block = block.replace(BUGGY, FIXED)
    return block


def run_peer(peer: Path, g, eps: float, run: int, fixed: bool):
    import random

    import networkx as nx

    sys.path.insert(0, str(peer))
    import utils as peer_utils  # the peer's module (imports its comm package and python-louvain)

    from graphrelease.graph import Graph

    n = g.num_nodes
    mat0 = np.zeros((n, n), dtype=np.uint8)
    mat0[g.edges[:, 0], g.edges[:, 1]] = 1
    mat0[g.edges[:, 1], g.edges[:, 0]] = 1
    mat0_graph = nx.from_numpy_array(mat0, create_using=nx.Graph)
    e1 = e2 = e3 = eps / 3.0  # the peer's defaults: e1_r = e2_r = 1/3
    ns = dict(vars(peer_utils))
    ns.update(mat0=mat0, mat0_graph=mat0_graph, mat0_node=n, e1=e1, e2=e2, ev_lambda=1 / e3, dd_lam=2 / e3,
              N=20, t=1.0)
    random.seed(run)
    np.random.seed(run)
    code = compile(peer_block(peer, fixed), str(peer / "main.py"), "exec")
    start = time.process_time()
    exec(code, ns)
    cpu = time.process_time() - start
    mat2 = ns["mat2"]
    iu, ju = np.nonzero(np.triu(mat2, 1))
    return Graph(n, np.stack([iu, ju], axis=1)), cpu, eps


def run_ours(g, eps: float, run: int):
    from graphrelease.generators.privgraph import PrivGraph
    from graphrelease.privacy.budget import Budget

    budget = Budget(epsilon=eps, delta=1e-6, adjacency="edge", accountant="rdp")
    start = time.process_time()
    fitted = PrivGraph().fit(g, budget)
    s = fitted.sample(1, rng=np.random.default_rng(run))[0]
    return s, time.process_time() - start, budget.spent_epsilon()


def child(argv: list[str]) -> None:
    ap = common.child_parser(TOOLS)
    a = ap.parse_args(argv)
    from graphrelease.audit import statistics as st
    from graphrelease.audit.compare import community_nmi

    g = common.load_graph(a.graph)
    if a.tool == "ours":
        s, cpu, spent = run_ours(g, a.eps, a.run)
    else:
        s, cpu, spent = run_peer(a.peer, g, a.eps, a.run, fixed=a.tool == "public_fixed")
    part0 = st.louvain_partition(g)
    t0, t1 = g.to_igraph().transitivity_undirected(), s.to_igraph().transitivity_undirected()
    m0, m1 = st.modularity(g, part0), st.modularity(s, part0)
    common.emit({"nmi": community_nmi(g, s), "transitivity_re": abs(t1 - t0) / t0, "modularity_re": abs(m1 - m0) / m0,
                 "edges_re": abs(s.num_edges - g.num_edges) / g.num_edges, "fit_cpu_s": cpu, "our_epsilon": spent})


def main(argv: list[str] | None = None) -> list[dict]:
    ap = common.driver_parser(__doc__, peer="Privacy-Graph/PrivGraph", graphs="chameleon,facebook", cells=("epsilons", "1,3.5"),
                              name="privgraph", timeout=900)
    ap.add_argument("--extra-path", action="append", default=[], help="site dir with python-louvain etc.")
    ap.add_argument("--tools", default=",".join(TOOLS), help="subset of " + ",".join(TOOLS))
    a = ap.parse_args(argv)
    rows = []
    for graph in a.graphs.split(","):
        for eps in [float(e) for e in a.epsilons.split(",")]:
            for tool in a.tools.split(","):
                runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), tool, graph, str(eps), str(r)],
                                         extra_path=a.extra_path, timeout=a.timeout) for r in range(a.runs)]
                row = {"peer": "PrivGraph", "graph": graph, "epsilon": eps, "tool": tool,
                       **common.aggregate(runs, KEYS + ["our_epsilon"])}
                print(row, flush=True)
                rows.append(row)
                common.write_json(a.json, rows)  # after every cell: a cut-short run keeps what it measured
    common.write_json(a.json, rows)
    return rows


if __name__ == "__main__":
    common.dispatch(child, main)
