"""README's tour is a contract: every command in it parses as printed (fast), and the whole tour runs end to end
on real files with the commands exactly as README prints them (slow). README and this test read the same lines, so
they cannot drift apart."""

from __future__ import annotations

import gzip
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def tour_commands() -> list[list[str]]:
    """The ``graphrelease ...`` lines of README's tour block, comments stripped, as argument lists."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## A tour", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line:
            args = shlex.split(line)
            assert args[0] == "graphrelease", line
            commands.append(args[1:])
    return commands


def _parse_only(args: list[str]) -> None:
    """Resolve the (sub)command and parse its options exactly as the CLI would, without running it."""
    import typer.main

    from cli.app import app

    def remaining(ctx) -> list[str]:  # the vendored click keeps nested-command args as shell completion reads them
        return list(getattr(ctx, "_protected_args", getattr(ctx, "protected_args", []))) + list(ctx.args)

    command = typer.main.get_command(app)
    ctx = command.make_context("graphrelease", list(args))
    while hasattr(command, "resolve_command") and remaining(ctx):
        name, sub, rest = command.resolve_command(ctx, remaining(ctx))
        ctx = sub.make_context(name, rest, parent=ctx)
        command = sub
    assert not hasattr(command, "resolve_command"), f"{args}: no subcommand"


def test_tour_has_the_promised_commands():
    names = {" ".join(a[:2]) if a[0] == "certificate" else a[0] for a in tour_commands()}
    assert {"inspect", "synth", "sample", "certificate verify", "certificate show", "certificate keygen", "audit",
            "budget", "embed", "train", "predict", "batch"} <= names


@pytest.mark.parametrize("args", tour_commands(), ids=lambda a: " ".join(a[:3]))
def test_every_tour_command_parses_as_printed(args):
    _parse_only(args)


def _stage_tour_files(root: Path, data_dir: Path) -> None:
    """The files README's tour names, made from the real datasets: graph.csv (LastFM Asia) with nodes.csv, cora.npz,
    IMDB-MULTI/, new_graph.npz, pairs.csv and a small batch plan."""
    shutil.copy(data_dir / "raw" / "lastfm_asia_edges.csv", root / "graph.csv")
    (root / "nodes.csv").write_text("id\n" + "\n".join(str(i) for i in range(7624)) + "\n", encoding="utf-8")
    shutil.copy(data_dir / "single" / "cora.npz", root / "cora.npz")
    shutil.copytree(data_dir / "collections" / "IMDB-MULTI", root / "IMDB-MULTI")
    from graphrelease.io import read_graph, write_graph

    cora = read_graph(root / "cora.npz").data
    # a later snapshot of the same node set (DPDGC's released embedding has one row per node): 10% fewer edges
    write_graph(cora.replace(edges=cora.edges[np.arange(cora.num_edges) % 10 != 0]), root / "new_graph.npz")
    (root / "pairs.csv").write_text("u,v\n0,1\n0,2\n5,9\n", encoding="utf-8")
    (root / "plan.toml").write_text(
        'name = "tour"\noutput = "batch-out"\ndelta = 1e-5\n\n[audit]\nenabled = false\n\n'
        '[[inputs]]\nname = "imdb"\npath = "IMDB-MULTI"\nmembers = "0:3"\nsharing = "compose"\nepsilon_cap = 2.0\n\n'
        '[[runs]]\nmethods = ["chung_lu"]\nepsilons = [0.5, 1.0]\n', encoding="utf-8")


@pytest.mark.slow
def test_tour_runs_end_to_end_as_printed(tmp_path, data_dir, monkeypatch, capsys):
    from cli.app import app
    from cli.common import run_cli

    _stage_tour_files(tmp_path, data_dir)
    monkeypatch.chdir(tmp_path)
    for args in tour_commands():
        rc = run_cli(app, list(args))
        out = capsys.readouterr()
        assert rc == 0, (args, out.out[-2000:], out.err[-2000:])
    assert (tmp_path / "release" / "certificate.json").is_file()
    assert (tmp_path / "signed" / "manifest.sig").is_file()
    assert (tmp_path / "model.key").is_file() and (tmp_path / "emb.key").is_file()
    assert re.search(r"^u,v,score", (tmp_path / "scores.csv").read_text(), re.M)
    assert (tmp_path / "reports" / "audit.html").is_file()
