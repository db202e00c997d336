"""The structure benchmark's cache: input statistics per dataset, so runs split over processes keep every dataset's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_structure  # noqa: E402


def test_inputs_of_runs_split_over_processes_are_all_read(tmp_path):
    # An older cache's single file (cora) and two per-dataset files written by two runs of the benchmark.
    (tmp_path / "inputs.json.txt").write_text(json.dumps({"cora": {"edges": 5278.0}, "lastfm": {"edges": 1.0}}))
    suffix = bench_structure.INPUTS_SUFFIX
    bench_structure._write_atomic(tmp_path / f"slashdot{suffix}", json.dumps({"edges": 504230.0}))
    bench_structure._write_atomic(tmp_path / f"lastfm{suffix}", json.dumps({"edges": 27806.0}))
    inputs = bench_structure.read_inputs(tmp_path)
    assert inputs == {"cora": {"edges": 5278.0}, "lastfm": {"edges": 27806.0}, "slashdot": {"edges": 504230.0}}
    assert not list(tmp_path.glob("*.tmp*"))  # the atomic writes leave no temporary file
    # Cell files are found by "*.json": the input files must not be read as cells.
    assert not list(tmp_path.glob("*.json"))


def test_a_cache_whose_inputs_were_lost_gets_them_again(tmp_path, data_dir):
    """One real cell (Cora, dp_bter, epsilon 1), then the inputs file removed, as a shared file overwritten by another
    process left them: the next run measures them again without re-running the cell, and the report has them."""
    args = ["--datasets", "cora", "--epsilons", "1", "--generators", "dp_bter", "--runs", "1",
            "--cache", str(tmp_path), "--report", str(tmp_path / "report.md")]
    bench_structure.main(args)
    cell = tmp_path / "cora__dp_bter__eps1__run0.json"
    inputs_file = tmp_path / f"cora{bench_structure.INPUTS_SUFFIX}"
    written = cell.read_text()
    assert "Input: 2,708 nodes, 5,278 edges" in (tmp_path / "report.md").read_text()
    inputs_file.unlink()
    bench_structure.main(args)
    assert cell.read_text() == written  # the cell was not run again
    assert json.loads(inputs_file.read_text())["nodes"] == 2708
    assert "Input: 2,708 nodes, 5,278 edges" in (tmp_path / "report.md").read_text()
