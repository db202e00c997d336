"""DPDGC side by side (edge-level DP): the authors' code (thupchnsky/dp-gnn, ``EdgePrivDPDGC``), as published and
with its normalisation and edge-sensitivity bugs fixed, against our ``dpdgc``, on the same graph, split, epsilon
and delta.

    python benchmarks/peers/dpdgc.py --peer /path/to/dp-gnn --extra-path /path/to/site \
        --graphs cora,chameleon --epsilons 1,4

The child builds the peer's ``Data`` from our graph and split (``common.peer_data``, ``adj_t`` as the shim
``torch_sparse.SparseTensor``) and calls ``EdgePrivDPDGC(...).fit(data)`` with the hyper-parameters of the
authors' ``train_scripts/real/DPDGC-edge.sh`` for Cora and Chameleon (hidden 64, dropout 0.5, 100 + 100 epochs,
learning rates 1e-3, batch size 64, norm scale 1e-8) on CPU; ``delta='auto'`` (checked equal to ours).

Known accounting bugs (PRIVACY.md section 4):
- the column normalisation of W (``MLP_A``) that the released ``A W^T`` relies on assigns into a fresh
  ``state_dict()`` and is a no-op, so the Gaussian noise calibrated for row-norm ``norm_scale`` = 1e-8 is added to
  an unnormalised product: the release's sensitivity is not bounded by anything, i.e. no finite epsilon;
- one undirected edge changes two adjacency rows (two DP-SGD examples and two rows of ``A W^T``), calibrated as one;
- steps: the calibration composes ``epochs * N // B`` steps while the loader draws ``ceil(N / B)`` per epoch.

``public_fixed`` makes the normalisation real (W's columns projected to norm ``norm_scale`` before every use, in
the module's forward and predict) and passes the real L2 sensitivity ``sqrt(2) * norm_scale`` of ``A W^T`` to the
release; the DP-SGD stage keeps its one-row calibration (the two-row group is not fixed; its epsilon is then a lower
bound). The child reports, for each peer run, OUR accountant's epsilon for the schedule it ran.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402

KEYS = ["test_acc", "our_epsilon", "their_sigma"]
TOOLS = ("public", "public_fixed", "ours")
HPARAMS = dict(hidden_dim=64, dropout=0.5, encoder_epochs=100, encoder_lr=1e-3, epochs=100, learning_rate=1e-3,
               batch_size=64, norm_scale=1e-8)


def their_schedule_epsilon(sigma: float, n_train: int, batch: int, epochs: int, delta: float, fixed: bool) -> float:
    """Our RDP accountant on the schedule the peer ran: ``epochs * ceil(N/B)`` replace-one WOR-subsampled Gaussian
    steps (noise std ``2 sigma C``, per-example bound C) and one Gaussian release of ``A W^T``. With the published
    no-op normalisation that release has no sensitivity bound: infinite. The two-row group of one edge is not
    applied (our WOR analysis refuses groups), so the finite value is a lower bound."""
    if not fixed:
        return math.inf
    from graphrelease.privacy.accountants import compute_epsilon
    from graphrelease.privacy.ledger import LedgerEntry

    steps = epochs * math.ceil(n_train / batch)
    sgd = LedgerEntry("subsampled_gaussian", "peer.dpdgc.adj_encoder",
                      params={"noise_multiplier": 2 * sigma, "sample_rate": batch / n_train, "sampling": "wor",
                              "neighboring": "replace_one", "dataset_size": n_train}, count=steps, sensitivity=1.0)
    pma = LedgerEntry("gaussian", "peer.dpdgc.pma", params={"noise_multiplier": sigma}, count=1,
                      sensitivity=math.sqrt(2))
    return compute_epsilon([sgd, pma], delta, "rdp")


def fix_normalisation(em_module) -> None:
    """Make the peer's intended column normalisation of W real (projection before every use)."""
    import torch
    import torch.nn.functional as F

    cls = em_module.AdjEncoderModule
    forward, predict = cls.forward, cls.predict

    def project(self):
        w = self.mlp_adj.weight
        if isinstance(w, torch.nn.parameter.UninitializedParameter):
            return  # lazy layer: materialised by its first forward; projected from the next use on
        with torch.no_grad():
            w.copy_(F.normalize(w, p=2, dim=0) * self.norm_scale)

    def fwd(self, x):
        project(self)
        return forward(self, x)

    def pred(self, data):
        project(self)
        return predict(self, data)

    cls.forward, cls.predict = fwd, pred


def run_peer(peer: Path, g, split, eps: float, delta: float, run: int, fixed: bool):
    sys.path.insert(0, str(peer))
    import torch

    common.pyg_compat()
    import core.modules.node.em as em
    from core.loggers import Logger
    from core.methods.node.dpdgc.dpdgc_edp import EdgePrivDPDGC

    Logger.setup(enabled=False, config={})
    if fixed:
        fix_normalisation(em)
        EdgePrivDPDGC.perturb = lambda self, x: self.pma_mechanism(x, sensitivity=math.sqrt(2) * self.norm_scale)
    torch.manual_seed(run)
    np.random.seed(run)
    data = common.peer_data(g, split, adj="shim")
    num_classes = int(np.asarray(g.labels).max()) + 1
    method, acc, cpu = common.fit_gap_framework_method(
        lambda: EdgePrivDPDGC(num_features=data.num_features, num_classes=num_classes, epsilon=eps, delta="auto",
                              device="cpu", **HPARAMS), data, g, delta)
    sigma = float(method.noise_scale)
    spent = their_schedule_epsilon(sigma, int(split.train.size), HPARAMS["batch_size"], HPARAMS["encoder_epochs"],
                                   delta, fixed)
    return acc, cpu, spent, sigma


def child(argv: list[str]) -> None:
    ap = common.child_parser(TOOLS)
    ap.add_argument("--epochs", type=int, default=None, help="peer: encoder and classifier epochs (default: 100)")
    a = ap.parse_args(argv)
    from graphrelease.models.common import node_split

    if a.epochs is not None:
        HPARAMS.update(encoder_epochs=a.epochs, epochs=a.epochs)
    g = common.load_graph(a.graph)
    delta = common.auto_delta(g.num_edges)
    split = node_split(g, train=0.5, val=0.25, seed=a.run)
    if a.tool == "ours":
        acc, cpu, spent, sigma = common.run_our_node_model("dpdgc", g, a.eps, delta, a.run)
    else:
        acc, cpu, spent, sigma = run_peer(a.peer, g, split, a.eps, delta, a.run, fixed=a.tool == "public_fixed")
    common.emit({"test_acc": acc, "fit_cpu_s": cpu, "our_epsilon": spent, "their_sigma": sigma, "delta": delta,
                 "peer_epochs": HPARAMS["epochs"] if a.tool != "ours" else float("nan")})


def main(argv: list[str] | None = None) -> list[dict]:
    ap = common.driver_parser(__doc__, peer="thupchnsky/dp-gnn", graphs="cora,chameleon", cells=("epsilons", "1,4"),
                              name="dpdgc", timeout=1800)
    ap.add_argument("--tools", default=",".join(TOOLS), help="subset of " + ",".join(TOOLS))
    ap.add_argument("--peer-runs", type=int, default=None, help="runs for the peer's rows (default: --runs)")
    ap.add_argument("--peer-epochs", type=int, default=None,
                    help="override the authors' 100 encoder + 100 classifier epochs (time; noise follows the steps)")
    ap.add_argument("--cells", default=None, help="only these graph:eps cells, e.g. chameleon:1,cora:4")
    ap.add_argument("--extra-path", action="append", default=[], help="site dir with torchmetrics 0.9.3 etc.")
    a = ap.parse_args(argv)
    extra = [str(HERE / "shim"), *a.extra_path]
    rows = []
    for graph in a.graphs.split(","):
        for eps in [float(e) for e in a.epsilons.split(",")]:
            if a.cells and f"{graph}:{eps:g}" not in a.cells.split(","):
                continue
            for tool in a.tools.split(","):
                n_runs = a.runs if tool == "ours" or a.peer_runs is None else a.peer_runs
                opt = ["--epochs", str(a.peer_epochs)] if a.peer_epochs and tool != "ours" else []
                runs = [common.run_child(Path(__file__), ["--peer", str(a.peer), *opt, tool, graph, str(eps), str(r)],
                                         extra_path=extra, timeout=a.timeout) for r in range(n_runs)]
                row = {"peer": "DPDGC", "graph": graph, "epsilon": eps, "tool": tool, **common.aggregate(runs, KEYS),
                       "peer_epochs": (a.peer_epochs or 100) if tool != "ours" else None}
                print(row, flush=True)
                rows.append(row)
                common.write_json(a.json, rows)
    common.write_json(a.json, rows)
    return rows


if __name__ == "__main__":
    common.dispatch(child, main)
