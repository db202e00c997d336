"""The benchmark suite runs end to end on a tiny real graph and writes a report; one stage in a fresh subprocess."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import run_all  # noqa: E402
from suite import measure  # noqa: E402


def test_suite_end_to_end_on_tiny_graph(data_dir, tmp_path):
    from graphrelease.io import read_graph, write_graph

    cora = read_graph(data_dir / "single" / "cora.npz").data
    tiny = cora.induced_subgraph(np.arange(300))
    path = tmp_path / "tiny.npz"
    write_graph(tiny, path)
    out = tmp_path / "bench.md"
    rc = run_all.main(["--datasets", str(path), "--methods", "chung_lu", "--runs", "1", "--no-trace",
                       "--out", str(out), "--workdir", str(tmp_path / "work"), "--timeout", "300", "--inline"])
    assert rc == 0
    text = out.read_text()
    assert text.startswith("`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py --datasets")
    assert "load average" in text and "cores" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| tiny |")]
    stages = {r[2]: r for r in rows}
    assert set(stages) == {"load", "fit", "sample", "verify", "audit"}, text
    for stage, r in stages.items():
        assert "failed" not in r[-1], r
        assert int(r[3].replace(",", "")) == tiny.num_nodes
        assert int(r[4].replace(",", "")) == len(tiny.edges)
        # times are printed to 0.01 s, so a fast stage (loading 300 nodes) can read 0.00
        assert float(r[5]) >= 0 and float(r[6]) >= 0 and float(r[9]) > 50  # a Python process with numpy: > 50 MiB
    assert "verified" in stages["verify"][-1]
    assert "guarantee proved" in stages["fit"][-1]
    assert "no our/their time ratio was measured" in text

    # --append adds a section with its own command before the closing sections and keeps the first table
    rc = run_all.main(["--datasets", str(path), "--methods", "dpdk", "--runs", "1", "--no-trace", "--append",
                       "--out", str(out), "--workdir", str(tmp_path / "work2"), "--timeout", "300", "--inline"])
    assert rc == 0
    text2 = out.read_text()
    assert text2.startswith(text[: text.index("## Not run")])
    added = text2[text2.index("## Added by `OMP_NUM_THREADS=1"):text2.index("## Reference implementations")]
    assert "| tiny | dpdk | fit |" in added and "| tiny | - | load |" in added and "imports" not in added


def test_measure_reports_failures_instead_of_numbers(tmp_path):
    r = measure({"stage": "load", "path": str(tmp_path / "missing.npz")}, timeout=120)
    assert "error" in r and "seconds" not in r


def test_measure_runs_a_stage_in_a_fresh_process(data_dir):
    r = measure({"stage": "load", "path": str(data_dir / "single" / "cora.npz")}, timeout=300)
    assert "error" not in r, r
    assert (r["nodes"], r["edges"]) == (2708, 5278)
    assert 0 < r["seconds"] < 60 and r["maxrss_mib"] > 50 and r["traced"] is False


def test_measure_forked_child_reports_result_and_timeout(data_dir, tmp_path):
    from suite import warm

    warm()  # what run_all.py --fork does once before forking every run
    r = measure({"stage": "load", "path": str(data_dir / "single" / "cora.npz")}, timeout=300, fork=True)
    assert "error" not in r, r
    assert (r["nodes"], r["edges"]) == (2708, 5278) and r["maxrss_mib"] > 50
    spec = {"stage": "fit", "dataset": "cora", "method": "dpdk", "release": str(tmp_path / "rel")}
    r = measure(dict(spec, path=str(data_dir / "single" / "cora.npz")), timeout=0.05, fork=True)
    assert r == {"error": "timeout after 0 s"}
