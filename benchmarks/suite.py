"""Measurement core of the benchmark suite (``benchmarks/run_all.py``, ``make bench``).

Every measurement runs in a FRESH subprocess (``python benchmarks/suite.py child '<json spec>'``) so peak memory of
one stage never leaks into the next: the child reports the stage's wall time and CPU time, the ``tracemalloc`` peak during the
stage (Python objects and numpy buffers; torch tensors are not traced; only when ``spec["trace"]``, because
tracemalloc slows Python-heavy stages by orders of magnitude, so traced runs are not used for timing) and the
process's ``ru_maxrss`` (whole process incl. the Python/numpy/torch runtime).

Stages (``spec["stage"]``):

``imports`` importing what a CLI process needs before any stage: torch, ``graphrelease`` (synth, generators,
            certificate, audit) and the accounting libraries (``dp_accounting``, ``opacus.accountants``). A fixed cost
            paid once per process, measured on its own so that the stage times below are not dominated by it.
``imports_accounting`` the accounting libraries alone (everything else imported before the timer).
``load``    ``graphrelease.io.read_graph(path)``.
``fit``     ``graphrelease.synth.synthesize(graph, method=..., epsilon=...)``: fit + one sample + certified release
            written (input loaded before the timer starts). Leaves the release at ``spec["release"]`` for the stages
            below.
``sample``  ``graphrelease.synth.sample_release(release, 1, out)`` (post-processing, no input).
``audit``   ``graphrelease.audit.run.run_audit(graph, [release], tasks=("statistics", "motifs"),
            attacks=("link_inference",), motif_size=4, fast=True)`` (collections: statistics + motifs + mmd).
``verify``  ``graphrelease.privacy.certificate.verify_release(release, input_graph=graph, key=key)``.

Before the timer of every other stage the child imports the same modules, INCLUDING the accounting libraries that
``graphrelease.privacy`` imports lazily on the first charge/verify (``spec["cold"] = True`` leaves them to be
imported inside the stage, as a fresh CLI process does): a cProfile of ``synthesize(cora, chung_lu)`` put ~3.7 of its
4.1 s in those two first-use imports, which would otherwise swamp every per-method difference on small graphs.

``spec["profile"]`` (optional) writes a cProfile of the stage to that path, e.g. the cold-start profile of
reports/benchmarks.md: ``suite.py child '{"stage": "fit", "dataset": "cora", "method": "chung_lu", "release":
"/tmp/r", "cold": true, "profile": "/tmp/fit.prof"}'`` then ``python -m pstats /tmp/fit.prof``.

``spec["max_nodes"]`` (optional) keeps the induced subgraph on the first ``max_nodes`` nodes of a uniformly random
node permutation (public seed 0) for the scaling runs of ``reports/limits.md``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", ROOT.parent / "shared" / "data"))
DATASETS = {
    "cora": DATA / "single" / "cora.npz",
    "facebook": DATA / "raw" / "facebook_combined.txt.gz",
    "pubmed": DATA / "single" / "pubmed.npz",
    "tolokers": DATA / "single" / "tolokers.npz",
    "slashdot": DATA / "raw" / "soc-Slashdot0902.txt.gz",
    "imdb-multi": DATA / "collections" / "IMDB-MULTI",
}
#: Methods fitted without a privacy guarantee (need ``allow_uncertified``).
NON_PRIVATE = {"gvae", "ggan"}
STAGES = ("imports", "imports_accounting", "load", "fit", "sample", "audit", "verify")


def _import_core() -> None:
    import torch

    torch.set_num_threads(1)
    import graphrelease.audit.run  # noqa: F401
    import graphrelease.generators  # noqa: F401
    import graphrelease.privacy.certificate  # noqa: F401
    import graphrelease.synth  # noqa: F401


def _import_accounting() -> None:
    """What ``graphrelease.privacy.analysis`` imports lazily on the first charge / verify: ``dp_accounting`` (its
    ``__init__`` pulls in ``scipy.signal``) and ``opacus.accountants.analysis.rdp`` (``opacus/__init__`` pulls in
    the privacy engine, its optimizers, ``torch.distributed.tensor`` and ``scipy.stats``)."""
    import dp_accounting  # noqa: F401
    import opacus.accountants.analysis.rdp  # noqa: F401


def _subsample(graph, max_nodes: int):
    import numpy as np

    if max_nodes is None or graph.num_nodes <= max_nodes:
        return graph
    keep = np.sort(np.random.default_rng(0).permutation(graph.num_nodes)[:max_nodes])
    return graph.induced_subgraph(keep)


def _load(spec: dict):
    from graphrelease.io import read_graph

    path = spec.get("path") or str(DATASETS[spec["dataset"]])
    data = read_graph(path).data
    if spec.get("max_nodes"):
        data = _subsample(data, int(spec["max_nodes"]))
    return data


def run_stage(spec: dict) -> dict:
    """Run one stage in this process and return its measurements (called inside the child)."""
    sys.path.insert(0, str(ROOT))
    stage = spec["stage"]
    release = Path(spec["release"]) if spec.get("release") else None
    data = None
    if stage == "imports_accounting":
        _import_core()
    elif stage != "imports":  # the imports stages time the imports themselves; every other stage starts warm
        _import_core()
        if not spec.get("cold"):
            _import_accounting()
        data = None if stage == "load" else _load(spec)
    extra: dict = {}
    trace = bool(spec.get("trace"))
    if trace:  # tracemalloc slows Python-heavy code (and imports) by up to 1000x: traced runs are not timed
        tracemalloc.start()
    prof = None
    if spec.get("profile"):  # cProfile of the stage alone, written to this path (pstats format); not for timing
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    c0 = time.process_time()
    t0 = time.perf_counter()
    if stage == "imports":
        _import_core()
        _import_accounting()
    elif stage == "imports_accounting":
        _import_accounting()
    elif stage == "load":
        data = _load(spec)
    elif stage == "fit":
        from graphrelease.synth import synthesize

        r = synthesize(data, method=spec["method"], epsilon=float(spec.get("epsilon", 4.0)), out=release,
                       force=True, allow_uncertified=spec["method"] in NON_PRIVATE,
                       options=spec.get("options") or None)
        extra = {"guarantee": r.guarantee, "epsilon_spent": r.epsilon_spent, "mode": r.mode}
    elif stage == "sample":
        from graphrelease.synth import sample_release

        sample_release(release, 1, Path(str(release) + "-sample"), force=True)
    elif stage == "audit":
        from graphrelease.audit.run import run_audit
        from graphrelease.graph import Graph

        if isinstance(data, Graph):
            kw = dict(tasks=("statistics", "motifs"), attacks=("link_inference",))
        else:
            kw = dict(tasks=("statistics", "motifs", "mmd"), attacks=())
        run_audit(data, [release], motif_size=4, fast=True, seed=0, **kw)
    elif stage == "verify":
        from graphrelease.privacy.certificate import verify_release

        rep = verify_release(release, input_graph=data, key=Path(str(release) + ".key"))
        extra = {"verified": rep.ok, "problems": rep.problems[:3]}
    else:
        raise ValueError(f"unknown stage {stage}")
    seconds = time.perf_counter() - t0
    if prof is not None:
        prof.disable()
        prof.dump_stats(spec["profile"])
    # CPU time of this (single-threaded) process: on the shared machine wall time also counts waiting for a core.
    out = {"seconds": seconds, "cpu_seconds": time.process_time() - c0, "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "traced": trace}
    if trace:
        out["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if data is not None and hasattr(data, "edges"):  # a Graph; a GraphCollection has .graphs
        out.update(nodes=int(data.num_nodes), edges=int(len(data.edges)))
    elif data is not None:
        out.update(nodes=int(sum(g.num_nodes for g in data.graphs)), edges=int(sum(len(g.edges) for g in data.graphs)),
                   graphs=len(data.graphs))
    out.update(extra)
    return out


def measure(spec: dict, *, timeout: float = 3600.0, mem_limit_gib: float | None = 24.0, inline: bool = False,
            fork: bool = False) -> dict:
    """Run one stage in a fresh subprocess (one thread, address space capped at ``mem_limit_gib``).

    ``fork=True``: the fresh process is forked from this one instead of starting a new interpreter. Call
    :func:`warm` first: the imports then happen once here, not per run, which on a loaded 2-core machine was ~20 s
    of start-up per 0.2-2 s measurement. The child is still a new process with its own address space, rusage and
    caches (this process only imports, it never runs a stage), and its ``ru_maxrss`` starts from this process's
    resident set (the same imported runtime a fresh interpreter has before its timer). The ``imports`` stages always
    start a new interpreter (that is what they time).

    ``inline=True`` runs it in this process instead (for the suite's own fast test: the peak RSS is then this
    process's, not the stage's)."""
    if inline:
        try:
            return run_stage(spec)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    if fork and not spec["stage"].startswith("imports"):
        return _measure_forked(spec, timeout, mem_limit_gib)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", json.dumps(spec)]

    def limit() -> None:  # runs in the child before exec
        if mem_limit_gib:
            lim = int(mem_limit_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s", "wall_incl_startup": time.perf_counter() - t0}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {proc.returncode}: {tail[:300]}"}


def warm() -> None:
    """Import what every stage imports before its timer, in this process, so that forked children start warm."""
    sys.path.insert(0, str(ROOT))
    _import_core()
    _import_accounting()


def _measure_forked(spec: dict, timeout: float, mem_limit_gib: float | None) -> dict:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def target() -> None:
        if mem_limit_gib:
            lim = int(mem_limit_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        try:
            res = run_stage(spec)
        except MemoryError:
            res = {"error": "MemoryError"}
        except Exception as exc:  # reported as a failed measurement, with the message
            res = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        send.send(res)

    proc = ctx.Process(target=target, daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()
            proc.join()
            return {"error": f"timeout after {timeout:.0f} s"}
        try:
            return recv.recv()
        except EOFError:  # the child died without a result (killed, or out of memory outside Python)
            proc.join()
            return {"error": f"exit {proc.exitcode}: no result"}
    finally:
        recv.close()
        proc.join(timeout=30)


def child_main(arg: str) -> None:
    spec = json.loads(arg)
    try:
        res = run_stage(spec)
    except MemoryError:
        res = {"error": "MemoryError"}
    except Exception as exc:  # reported as a failed measurement, with the message
        res = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        child_main(sys.argv[2])
    else:
        print("usage: suite.py child '<json spec>'  (use benchmarks/run_all.py)", file=sys.stderr)
        sys.exit(2)
