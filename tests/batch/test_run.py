"""Batch runs end to end on real IMDB-MULTI ego networks: local pool, a real local Ray instance, resume, kill."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from graphrelease.batch import LocalExecutor, RayExecutor, load_plan, run_plan
from graphrelease.privacy.certificate import verify_release

REPO = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, data_dir: Path, *, members: str = "0:3", seed: int | None = 11,
          methods: str = '["chung_lu", "randomized_response"]', output: str = "out") -> Path:
    seeded = f"seed = {seed}\nallow_uncertified = true\n" if seed is not None else ""
    path = tmp_path / f"{output}.toml"
    path.write_text(f"""
name = "imdb-test"
output = "{output}"
{seeded}
[[inputs]]
name = "imdb"
path = "{data_dir / 'collections' / 'IMDB-MULTI'}"
members = "{members}"
sharing = "compose"
epsilon_cap = 6.0
[[runs]]
methods = {methods}
epsilons = [1.0, 2.0]
""")
    return path


def _rows(summary_csv: Path) -> dict[str, dict[str, str]]:
    with summary_csv.open() as handle:
        return {row["job"]: row for row in csv.DictReader(handle)}


def test_local_run_writes_verified_releases_and_composes_per_input(tmp_path, data_dir):
    plan = load_plan(_plan(tmp_path, data_dir, seed=None, members="3:5"))
    summary = run_plan(plan, executor=LocalExecutor(2))
    assert len(summary.results) == 2 * 2 * 2 and not summary.failed
    for job in plan.jobs:
        assert verify_release(job.out).ok
        assert not (job.out / "input.key").exists()  # keys stay beside releases, never inside
    for total in summary.totals:
        assert total.jobs == 4
        assert total.epsilon_sum <= 6.0 + 1e-9  # the cap of the plan
        # the accountant's composition of the four ledgers is a valid bound no larger than the sum
        assert total.epsilon_composed is not None and total.epsilon_composed <= total.epsilon_sum + 1e-9
    rows = _rows(summary.csv_path)
    assert set(rows) == {j.job_id for j in plan.jobs}
    assert all(row["guarantee"] == "proved" for row in rows.values())
    assert "INTERNAL" in summary.markdown_path.read_text()


def test_failed_job_is_reported_and_does_not_stop_the_others(tmp_path, data_dir):
    plan = load_plan(_plan(tmp_path, data_dir, members="0:1", methods='["chung_lu", "no_such_method"]'))
    summary = run_plan(plan, executor=LocalExecutor(1))
    status = {r.job_id: r for r in summary.results}
    assert [r.status for r in summary.results].count("done") == 2
    bad = [r for r in status.values() if r.method == "no_such_method"]
    assert len(bad) == 2 and all(r.status == "failed" and "unknown generator" in r.error for r in bad)
    assert all(not Path(r.release).exists() for r in bad)


def test_ray_gives_the_same_results_as_local_and_matches_a_direct_synth(tmp_path, data_dir):
    local = run_plan(load_plan(_plan(tmp_path, data_dir, output="local", members="0:1")), executor=LocalExecutor(2))
    on_ray = run_plan(load_plan(_plan(tmp_path, data_dir, output="ray", members="0:1")),
                      executor=RayExecutor(workers=2))
    assert on_ray.executor == "ray" and not on_ray.failed
    a, b = _rows(local.csv_path), _rows(on_ray.csv_path)
    assert set(a) == set(b)
    for job, row in a.items():
        for column, value in row.items():
            if column not in ("seconds",):
                assert b[job][column] == value, (job, column)
    # Same seeded job run directly through the library: the same release and the same audit numbers.
    from graphrelease.audit.compare import compare_graphs
    from graphrelease.io import read_graph
    from graphrelease.synth import synthesize

    job = load_plan(_plan(tmp_path, data_dir, output="local", members="0:1")).jobs[1]
    original = read_graph(job.path).data[job.member]
    direct = tmp_path / "direct"
    synthesize(original, method=job.method, epsilon=job.epsilon, delta=job.delta, out=direct, seed=job.seed,
               allow_uncertified=True)
    released = read_graph(direct / "graphs" / "graph_000.csv").data
    batch_graph = read_graph(job.out / "graphs" / "graph_000.csv").data
    assert np.array_equal(released.edges, batch_graph.edges)
    numbers = compare_graphs(original, released)
    assert float(a[job.job_id]["rel_err_num_edges"]) == pytest.approx(numbers["rel_err_num_edges"], rel=1e-3)


@pytest.mark.slow
def test_killed_batch_leaves_whole_releases_and_resumes(tmp_path, data_dir):
    plan_path = _plan(tmp_path, data_dir, members="0:6")
    plan = load_plan(plan_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-c", "from cli.app import main; main()", "batch", str(plan_path), "--workers", "1"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and sum(j.out.exists() for j in plan.jobs) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = [j for j in plan.jobs if j.out.exists()]
    assert 2 <= len(finished) < len(plan.jobs), "kill the batch while it is still running"
    for job in finished:  # whatever exists is a whole release
        assert verify_release(job.out).ok
    summary = run_plan(load_plan(plan_path), executor=LocalExecutor(2), resume=True)
    status = [r.status for r in summary.results]
    assert status.count("skipped") >= len(finished) and not summary.failed
    assert all(verify_release(j.out).ok for j in plan.jobs)


class _InProcess:
    """Runs the jobs one after the other in this process (a real executor spawns workers: seconds of imports)."""

    name = "in-process"

    def run(self, fn, jobs):
        for job in jobs:
            yield job, fn(job)


def test_degenerate_release_is_not_a_silent_success(tmp_path, data_dir):
    """TMF at epsilon 0.01 on a 300-node Cora core releases a degenerate graph (seed 5: 99% of the nodes isolated;
    unseeded runs also gave ~16x the input's edges): the job is done, and the summary says the release is
    degenerate; DPDK at epsilon 1 keeps a sane graph and gets no warning (at 0.01 its release is empty)."""
    from graphrelease.batch.run import release_warnings
    from graphrelease.graph import Graph
    from graphrelease.io import read_graph, write_graph
    from tests.audit.test_run import make_release_dir

    g = read_graph(data_dir / "single" / "cora.npz").data
    g = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:300]))
    write_graph(g, tmp_path / "cora300.npz")
    (tmp_path / "plan.toml").write_text(f"""
name = "degenerate"
output = "out"
seed = 5
allow_uncertified = true
[audit]
enabled = false
[[inputs]]
name = "cora300"
path = "{tmp_path / 'cora300.npz'}"
sharing = "compose"
epsilon_cap = 2.0
[[runs]]
methods = ["tmf"]
epsilons = [0.01]
[[runs]]
methods = ["dpdk"]
epsilons = [1.0]
""")
    summary = run_plan(load_plan(tmp_path / "plan.toml"), executor=_InProcess())
    rows = {row["method"]: row for row in _rows(summary.csv_path).values()}
    assert rows["tmf"]["status"] == "done"
    assert rows["tmf"]["warning"].startswith("degenerate release: mostly isolated: 99% of the nodes"), rows["tmf"]
    assert rows["dpdk"]["status"] == "done" and rows["dpdk"]["warning"] == ""
    md = summary.markdown_path.read_text()
    assert "WARNING: 1 finished job(s) released degenerate graphs" in md
    assert f"- {rows['tmf']['job']}: degenerate release: mostly isolated" in md
    # the same rules on an empty release (the audit verdict's flags)
    empty = make_release_dir(tmp_path / "empty", [Graph(g.num_nodes, np.zeros((0, 2), dtype=np.int64))],
                             epsilon=0.01, method="fake")
    assert release_warnings(g, empty) == "degenerate release: empty graph: no edges at all"


def test_edge_list_inputs_need_a_declared_node_set(tmp_path, data_dir):
    """An edge-list input without a node declaration fails its job with the fix named; ``nodes`` (or the
    disclosed ``node_set = "from-edges"``) lets it run, and the certificate says where the node set came from."""
    import json

    edges = "".join(f"{u},{v}\n" for u in range(40) for v in (u + 1, u + 3) if v < 40)
    (tmp_path / "g.csv").write_text(edges)
    (tmp_path / "plan.toml").write_text(f"""
name = "nodes"
output = "out"
[audit]
enabled = false
[[inputs]]
name = "undeclared"
path = "{tmp_path / 'g.csv'}"
[[inputs]]
name = "declared"
path = "{tmp_path / 'g.csv'}"
nodes = 45
[[runs]]
methods = ["chung_lu"]
epsilons = [1.0]
""")
    summary = run_plan(load_plan(tmp_path / "plan.toml"), executor=_InProcess())
    rows = {row["input"]: row for row in _rows(summary.csv_path).values()}
    assert rows["undeclared"]["status"] == "failed" and "--nodes" in rows["undeclared"]["error"], rows
    assert rows["declared"]["status"] == "done", rows
    cert = json.loads((tmp_path / "out" / rows["declared"]["job"] / "certificate.json").read_text())
    assert cert["public_assumptions"]["node_set"] == "declared by the owner: nodes=45"
