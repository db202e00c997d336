"""`graphrelease audit` through the Typer app: report files, --json, clean refusal inside a release."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from cli import cmd_audit
from cli.common import run_cli
from graphrelease.io import read_graph, write_graph
from tests.audit.test_run import make_release_dir, random_like


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    cmd_audit.register(a)

    @a.command("noop")  # a second command keeps Typer in multi-command mode, as in cli.app
    def noop() -> None:
        pass

    return a


@pytest.fixture(scope="module")
def small_input(data_dir, tmp_path_factory):
    g = read_graph(data_dir / "single" / "cora.npz").data
    g = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:300]))
    root = tmp_path_factory.mktemp("cli")
    original = root / "orig.npz"
    write_graph(g, original)
    rel = make_release_dir(root / "release", [random_like(g, 1)], epsilon=1.0, method="fake")
    return original, rel


def test_audit_writes_report_and_json(app, small_input, tmp_path):
    original, rel = small_input
    report = tmp_path / "out" / "audit.html"
    result = CliRunner().invoke(app, ["audit", "--original", str(original), "--release", str(rel),
                                      "--report", str(report), "--task", "statistics", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["_internal"].startswith("INTERNAL")
    assert data["table1"][0]["epsilon"] == 1.0
    assert {"link_inference", "membership_adjacency"} <= set(data["attacks"][data["table1"][0]["release"]])
    for suffix in ("html", "md", "json"):
        assert report.with_suffix("." + suffix).is_file()


def test_audit_human_output(app, small_input, tmp_path):
    original, rel = small_input
    result = CliRunner().invoke(app, ["audit", "--original", str(original), "--release", str(rel),
                                      "--report", str(tmp_path / "rep"), "--task", "statistics",
                                      "--attack", "none", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "Table 1" in result.output and "INTERNAL report" in result.output
    assert (tmp_path / "rep" / "audit.html").is_file()


def test_audit_refuses_report_inside_release(app, small_input, capsys):
    original, rel = small_input
    code = run_cli(app, ["audit", "--original", str(original), "--release", str(rel),
                         "--report", str(rel / "audit.html")])
    err = capsys.readouterr().err
    assert code == 4
    assert "refusing to write the audit report" in err and "Traceback" not in err
    assert not (rel / "audit.html").exists()


def test_audit_missing_release_is_clean_error(app, small_input, tmp_path, capsys):
    original, _ = small_input
    code = run_cli(app, ["audit", "--original", str(original), "--release", str(tmp_path / "nope"),
                         "--report", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code != 0 and "does not exist" in err and "Traceback" not in err


def test_audit_of_a_real_synth_release_with_canaries(app, data_dir, tmp_path):
    """End to end: `graphrelease synth`'s library call writes a real release; the audit reads its certificate and
    re-fits its method for the canary audit."""
    from graphrelease.synth import synthesize

    g = read_graph(data_dir / "single" / "cora.npz").data
    g = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:120]))
    original = tmp_path / "orig.npz"
    write_graph(g, original)
    synthesize(g, method="randomized_response", epsilon=2.0, out=tmp_path / "rel", mode="symmetric",
               key_path=tmp_path / "rel.key", allow_uncertified=True)
    result = CliRunner().invoke(app, ["audit", "--original", str(original), "--release", str(tmp_path / "rel"),
                                      "--report", str(tmp_path / "rep.html"), "--task", "statistics", "--json",
                                      "--canary-runs", "40"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (rel,) = data["releases"]
    assert rel["method"] == "randomized_response" and rel["mode"] == "symmetric"
    assert rel["adjacency"] == "edge" and rel["epsilon"] == pytest.approx(2.0, rel=1e-3)
    assert not any("manifest" in n for n in data["notes"])
    (emp,) = data["empirical"]
    assert emp["runs"] == 40 and emp["claimed_epsilon"] == pytest.approx(2.0, rel=1e-3)
    assert emp["epsilon_lower"] <= 2.0
