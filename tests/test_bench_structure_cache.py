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
