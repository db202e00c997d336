"""CLI: `graphrelease synth` / `graphrelease sample` through the real app (clean errors, exit codes, outputs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli.app import app
from cli.common import run_cli
from graphrelease.io import read_graph, write_graph


@pytest.fixture(scope="module")
def small_csv(data_dir, tmp_path_factory):
    g = read_graph(data_dir / "single" / "cora.npz").data.induced_subgraph(np.arange(250))
    path = tmp_path_factory.mktemp("in") / "small.csv"
    write_graph(g.replace(features=None, labels=None), path)
    return path


@pytest.mark.slow
def test_synth_then_sample(small_csv, tmp_path, capsys):
    out = tmp_path / "rel"
    code = run_cli(app, ["synth", str(small_csv), "--method", "dpgvae", "--epsilon", "3", "--graphs", "2",
                         "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = " ".join(capsys.readouterr().out.split())
    assert "guarantee: proved" in printed and "epsilon spent" in printed
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"] == "proved" and cert["epsilon"] <= 3.0 * (1 + 1e-6)
    assert (tmp_path / "rel.key").exists()
    code = run_cli(app, ["sample", str(out), "--graphs", "2", "--out", str(tmp_path / "more")])
    assert code == 0
    assert "no privacy budget spent" in " ".join(capsys.readouterr().out.split())


def test_synth_says_when_the_release_cannot_keep_communities(data_dir, tmp_path, capsys):
    """A 1,200-node piece of Cora (643 edges) at epsilon 1 releases one block: the command says what that costs and
    from which epsilon the DP partition runs. (The 250-node piece has 46 edges, whose released count falls to 0 in
    about 8% of fits under its noise; the note then names no epsilon.)"""
    g = read_graph(data_dir / "single" / "cora.npz").data.induced_subgraph(np.arange(1200))
    path = tmp_path / "piece.csv"
    write_graph(g.replace(features=None, labels=None), path)
    code = run_cli(app, ["synth", str(path), "--epsilon", "1", "--nodes", "1200", "--out", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr().err
    printed = " ".join(capsys.readouterr().out.split())
    assert "note: one block:" in printed and "not to the input's communities" in printed
    assert "the partition runs from epsilon" in printed


def test_synth_refuses_paper_mode_without_flag(small_csv, tmp_path, capsys):
    code = run_cli(app, ["synth", str(small_csv), "--method", "dpgvae", "--mode", "paper", "--epsilon", "1",
                         "--out", str(tmp_path / "p")])
    assert code == 5
    err = capsys.readouterr().err
    assert "--allow-uncertified" in err and "Traceback" not in err
    assert not (tmp_path / "p").exists()


def test_synth_bad_method_and_missing_input(small_csv, tmp_path, capsys):
    assert run_cli(app, ["synth", str(small_csv), "--method", "nope", "--epsilon", "1",
                         "--out", str(tmp_path / "x")]) == 2
    assert "unknown generator" in capsys.readouterr().err
    assert run_cli(app, ["synth", str(tmp_path / "missing.csv"), "--epsilon", "1", "--out", str(tmp_path / "y")]) != 0
    assert "Traceback" not in capsys.readouterr().err
