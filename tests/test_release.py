"""The release bundle is written atomically: complete, or not at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from graphrelease.errors import ReleaseError
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.release import MANIFEST_FORMAT, ReleaseWriter, check_manifest, read_release, sha256_file

REPO = Path(__file__).resolve().parents[1]


def _cert(artifacts: dict[str, str]) -> dict:
    return {"artifacts": artifacts, "guarantee": "none", "reason": "test"}


@pytest.fixture
def graph() -> Graph:
    g, _ = Graph.from_edges(5, np.array([[0, 1], [1, 2], [3, 2]]), node_ids=np.array(["a", "b", "c", "d", "e"]))
    return g


def test_complete_release_layout_and_manifest(tmp_path, graph):
    out = tmp_path / "release"
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/graph_000.csv", graph)
        w.write_json("model/config.json", {"hidden": 16})
        returned = w.finalize(_cert)
    assert returned == out.absolute()
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json", "graphs", "manifest.json", "model"]
    loaded = read_release(out)
    manifest, cert = loaded["manifest"], loaded["certificate"]
    assert manifest["format"] == MANIFEST_FORMAT and manifest["tool"] == "graphrelease" and manifest["tool_version"]
    assert set(manifest["artifacts"]) == {"graphs/graph_000.csv", "model/config.json"}
    for rel, entry in manifest["artifacts"].items():
        assert entry["sha256"] == sha256_file(out / rel) == cert["artifacts"][rel]
        assert entry["size"] == (out / rel).stat().st_size
    assert manifest["certificate"]["sha256"] == sha256_file(out / "certificate.json")
    assert check_manifest(out) == []
    assert not list(tmp_path.glob(".release.*")), "no temporary directory left behind"


def test_release_never_contains_original_ids_or_input_name(tmp_path, graph):
    out = tmp_path / "r"
    graph = graph.replace(name="secret_input_name")
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/g.npz", graph, fmt="npz")
        w.write_graph("graphs/g.csv", graph)
        w.write_graph("graphs/g.graphml", graph, fmt="graphml")
        w.finalize(_cert)
    for path in out.rglob("*"):
        if path.is_file():
            assert b"secret_input_name" not in path.read_bytes(), path
    back = read_graph(out / "graphs/g.npz").data
    assert back.node_ids is None and back.structurally_equal(graph)
    text = (out / "graphs/g.csv").read_text()
    assert not any(name in text.split() for name in ("a", "b", "c", "d", "e"))


def test_exception_inside_block_leaves_nothing(tmp_path, graph):
    out = tmp_path / "release"
    with pytest.raises(ZeroDivisionError):
        with ReleaseWriter(out) as w:
            w.write_graph("graphs/graph_000.csv", graph)
            1 / 0
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_failing_certificate_factory_leaves_nothing(tmp_path, graph):
    def broken(artifacts):
        raise ReleaseError("budget exceeded")

    with pytest.raises(ReleaseError):
        with ReleaseWriter(tmp_path / "r") as w:
            w.write_graph("graphs/g.csv", graph)
            w.finalize(broken)
    assert list(tmp_path.iterdir()) == []


def test_missing_finalize_is_an_error_and_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError, match="finalize"):
        with ReleaseWriter(tmp_path / "r") as w:
            w.path("a.txt").write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_refuses_existing_target_without_force(tmp_path, graph):
    out = tmp_path / "r"
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/old.csv", graph)
        w.finalize(_cert)
    with pytest.raises(ReleaseError, match="already exists"):
        ReleaseWriter(out).__enter__()
    with ReleaseWriter(out, force=True) as w:
        w.write_graph("graphs/new.csv", graph)
        w.finalize(_cert)
    assert sorted(p.name for p in (out / "graphs").iterdir()) == ["new.csv"]
    assert check_manifest(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_force_keeps_old_release_if_new_one_fails(tmp_path, graph):
    out = tmp_path / "r"
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/old.csv", graph)
        w.finalize(_cert)
    before = (out / "manifest.json").read_text()
    with pytest.raises(KeyError):
        with ReleaseWriter(out, force=True) as w:
            w.write_graph("graphs/new.csv", graph)
            raise KeyError("boom")
    assert (out / "manifest.json").read_text() == before


def test_force_refuses_a_directory_that_is_not_a_release(tmp_path):
    victim = tmp_path / "home"
    victim.mkdir()
    (victim / "thesis.tex").write_text("precious")
    with pytest.raises(ReleaseError, match="not a graphrelease release"):
        ReleaseWriter(victim, force=True).__enter__()
    assert (victim / "thesis.tex").read_text() == "precious"


@pytest.mark.parametrize("relpath", ["../escape.txt", "/abs.txt", "manifest.json", "certificate.json", ""])
def test_artifact_paths_stay_inside(tmp_path, relpath):
    with pytest.raises(ReleaseError):
        with ReleaseWriter(tmp_path / "r") as w:
            w.path(relpath)
    assert not (tmp_path / "escape.txt").exists()


def test_check_manifest_detects_tampering(tmp_path, graph):
    out = tmp_path / "r"
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/g.csv", graph)
        w.finalize(_cert)
    (out / "graphs/g.csv").write_text("0,1\n")
    (out / "extra.bin").write_bytes(b"x")
    cert = json.loads((out / "certificate.json").read_text())
    cert["guarantee"] = "proved"
    (out / "certificate.json").write_text(json.dumps(cert))
    problems = "\n".join(check_manifest(out))
    assert "graphs/g.csv: SHA-256 differs" in problems
    assert "extra.bin: present but not listed" in problems
    assert "certificate.json: SHA-256 differs" in problems


def test_read_release_errors(tmp_path):
    with pytest.raises(ReleaseError, match="no such release"):
        read_release(tmp_path / "nope")
    (tmp_path / "half").mkdir()
    (tmp_path / "half/certificate.json").write_text("{}")
    with pytest.raises(ReleaseError, match="missing manifest.json"):
        read_release(tmp_path / "half")


_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from graphrelease.release import ReleaseWriter

    out = Path(sys.argv[1])
    with ReleaseWriter(out, force=len(sys.argv) > 2) as w:
        for i in range(100000):
            w.path(f"graphs/graph_{i:05d}.csv").write_text("source,target\\n0,1\\n" * 50)
            if i == 20:
                print("writing", flush=True)
            time.sleep(0.001)
        w.finalize(lambda a: {"artifacts": a})
    """
)


def _start_and_kill(tmp_path: Path, out: Path, *extra: str) -> None:
    script = tmp_path / "writer.py"
    script.write_text(_KILLED_WRITER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out), *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    try:
        assert proc.stdout.readline().strip() == b"writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL


def test_killed_writer_leaves_no_release(tmp_path):
    out = tmp_path / "out" / "release"
    _start_and_kill(tmp_path, out)
    assert not out.exists(), "a SIGKILLed writer must not leave a (half-written) release"
    leftovers = list(out.parent.glob(".release.tmp-*"))
    assert leftovers, "the staging directory is where the partial files went"
    # The next writer removes the dead writer's staging directory and succeeds.
    with ReleaseWriter(out) as w:
        w.path("a.txt").write_text("ok")
        w.finalize(_cert)
    assert sorted(p.name for p in out.parent.iterdir()) == ["release"]
    assert check_manifest(out) == []


def test_killed_forced_writer_keeps_old_release(tmp_path):
    out = tmp_path / "release"
    with ReleaseWriter(out) as w:
        w.path("old.txt").write_text("old")
        w.finalize(_cert)
    _start_and_kill(tmp_path, out, "--force")
    assert (out / "old.txt").read_text() == "old"
    assert check_manifest(out) == []


def test_release_records_its_method_options_and_the_audit_refits_them(tmp_path):
    """A release made with non-default options is re-fitted in that configuration by the canary audit."""
    from graphrelease.audit.inputs import load_release
    from graphrelease.audit.run import _method_factory, run_audit
    from graphrelease.io import load_default_graph
    from graphrelease.release import load_method
    from graphrelease.synth import synthesize

    cora = load_default_graph()
    core = cora.induced_subgraph(np.sort(np.argsort(-cora.degrees(), kind="stable")[:200]))
    out = tmp_path / "rel"
    synthesize(core, method="dp_dcsbm", epsilon=1.0, out=out,
               options={"partition": "degree_classes", "num_blocks": 4})
    method = load_method(out)
    assert method.name == "dp_dcsbm" and method.kind == "generator"
    assert method.options == {"partition": "degree_classes", "num_blocks": 4}
    built = _method_factory(load_release(out))()
    assert built.partition == "degree_classes" and built.num_blocks == 4
    res = run_audit(core, [out], tasks=(), attacks=(), canary_runs=4, canary_max_nodes=60)
    (e,) = res.empirical
    assert e["runs"] == 4


def test_model_release_records_its_options(tmp_path):
    from graphrelease.io import load_default_graph
    from graphrelease.release import load_method
    from graphrelease.train import train_model

    cora = load_default_graph()
    core = cora.induced_subgraph(np.arange(300))
    train_model(core, tmp_path / "m", method="dp-mlp", epsilon=1.0, options={"epochs": 3, "hidden": 32})
    method = load_method(tmp_path / "m")
    assert method.kind == "model" and method.options["epochs"] == 3 and method.options["hidden"] == 32
    assert "seed" not in method.options and method.build().config.hidden == 32
