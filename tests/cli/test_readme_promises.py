"""README's promises about options, one test per promise, for every command README names with it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from cli.app import app
from cli.common import run_cli

READING_COMMANDS = ("inspect", "synth", "train", "embed", "audit")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An edge list with string ids (no node declaration), a node list, a features and a labels file keyed by id:
    the owner's files for a 300-node Cora core."""
    from graphrelease.io import load_default_graph

    root = tmp_path_factory.mktemp("promises")
    cora = load_default_graph()
    core = cora.induced_subgraph(np.argsort(-cora.degrees(), kind="stable")[:300])
    names = [f"n{i:03d}" for i in range(core.num_nodes)]
    (root / "g.csv").write_text("source;target\n" + "".join(f"{names[u]};{names[v]}\n" for u, v in core.edges.tolist()))
    (root / "nodes.csv").write_text("id\n" + "\n".join(names) + "\n")
    feats = np.asarray(core.dense_features())[:, :16]
    (root / "x.csv").write_text("".join(f"{names[i]}," + ",".join(f"{v:g}" for v in feats[i]) + "\n"
                                        for i in range(core.num_nodes)))
    (root / "y.csv").write_text("".join(f"{names[i]},{int(core.labels[i])}\n" for i in range(core.num_nodes)))
    return root, core


def _run(args, capsys):
    rc = run_cli(app, [str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _declared(summary: dict) -> bool:
    return summary["node_set"].startswith("declared")


def test_every_reading_command_takes_the_same_reading_options():
    import typer.main

    cli = typer.main.get_command(app)
    for name in READING_COMMANDS:
        options = {opt for p in cli.commands[name].params for opt in getattr(p, "opts", [])}
        assert {"--format", "--nodes", "--features", "--labels"} <= options, name


def test_inspect_nodes_features_labels_format(files, capsys):
    root, core = files
    rc, out, _ = _run(["inspect", root / "g.csv", "--json"], capsys)
    assert rc == 0 and not _declared(json.loads(out))  # read off the edges, and it says so
    rc, out, _ = _run(["inspect", root / "g.csv", "--nodes", root / "nodes.csv", "--format", "csv", "--features",
                       root / "x.csv", "--labels", root / "y.csv", "--json"], capsys)
    summary = json.loads(out)
    assert rc == 0 and _declared(summary) and summary["nodes"] == core.num_nodes and summary["features"] == 16


def test_synth_reads_like_inspect_and_declares_from_a_labels_file(files, tmp_path, capsys):
    root, core = files
    rc, out, err = _run(["synth", root / "g.csv", "--format", "csv", "--labels", root / "y.csv", "--epsilon", "1",
                         "--out", tmp_path / "rel", "--json"], capsys)
    assert rc == 0, err
    cert = json.loads((tmp_path / "rel" / "certificate.json").read_text())
    assert "labels file" in cert["public_assumptions"]["node_set"]
    assert json.loads(out)["guarantee"] == "proved" and (tmp_path / "rel.key").is_file()
    # the binding is checked from the same files: the labels file declared the node set
    rc, out, err = _run(["certificate", "verify", tmp_path / "rel", "--input", root / "g.csv", "--labels",
                         root / "y.csv", "--key", tmp_path / "rel.key", "--json"], capsys)
    assert rc == 0 and json.loads(out)["input_binding_checked"], err


def test_train_and_embed_take_nodes_features_labels_and_bind_their_input(files, tmp_path, capsys):
    root, core = files
    common = ["--nodes", root / "nodes.csv", "--features", root / "x.csv", "--labels", root / "y.csv",
              "--epsilon", "2", "--set", "epochs=2", "--json"]
    rc, out, err = _run(["train", root / "g.csv", "--method", "gap", "--out", tmp_path / "m", *common,
                         "--set", "encoder_epochs=2"], capsys)
    assert rc == 0, err
    assert json.loads(out)["key_path"] == str(tmp_path / "m.key") and (tmp_path / "m.key").is_file()
    rc, out, err = _run(["certificate", "verify", tmp_path / "m", "--input", root / "g.csv", "--nodes",
                         root / "nodes.csv", "--key", tmp_path / "m.key", "--json"], capsys)
    verdict = json.loads(out)
    assert rc == 0 and verdict["ok"] and verdict["input_binding_checked"], err
    rc, out, err = _run(["embed", root / "g.csv", "--method", "gap", "--out", tmp_path / "e", *common,
                         "--set", "encoder_epochs=2"], capsys)
    assert rc == 0, err
    emb = np.load(tmp_path / "e" / "embeddings" / "embeddings.npz")["embeddings"]
    assert emb.shape[0] == core.num_nodes and (tmp_path / "e.key").is_file()


def test_audit_reads_the_original_like_synth(files, tmp_path, capsys):
    root, _ = files
    assert _run(["synth", root / "g.csv", "--nodes", root / "nodes.csv", "--epsilon", "1", "--out",
                 tmp_path / "rel"], capsys)[0] == 0
    rc, _, err = _run(["audit", "--original", root / "g.csv", "--format", "csv", "--nodes", root / "nodes.csv",
                       "--labels", root / "y.csv", "--release", tmp_path / "rel", "--report", tmp_path / "a.html",
                       "--fast"], capsys)
    assert rc == 0, err
    assert (tmp_path / "a.html").is_file()


def test_epsilon_is_required_and_capped_everywhere(files, tmp_path, capsys):
    root, _ = files
    for cmd in ("synth", "train", "embed"):
        rc, _, _ = _run([cmd, root / "g.csv", "--nodes", root / "nodes.csv", "--out", tmp_path / cmd], capsys)
        assert rc == 2, cmd
        start = time.perf_counter()
        rc, _, err = _run([cmd, root / "g.csv", "--nodes", root / "nodes.csv", "--epsilon", "1e9", "--out",
                           tmp_path / cmd], capsys)
        assert rc == 2 and "largest supported" in err, (cmd, err)
        assert not (tmp_path / cmd).exists() and not (tmp_path / f"{cmd}.key").exists()


def test_seed_is_one_option_everywhere(files, tmp_path, capsys):
    root, _ = files
    base = ["--nodes", root / "nodes.csv", "--epsilon", "1", "--seed", "3"]
    runs = {"synth": ["synth", root / "g.csv", *base, "--out", tmp_path / "s"],
            "train": ["train", root / "g.csv", *base, "--out", tmp_path / "t", "--labels", root / "y.csv",
                      "--method", "dp-mlp", "--set", "epochs=1"]}
    for cmd, args in runs.items():
        rc, _, err = _run(args, capsys)
        assert rc == 5 and "allow-uncertified" in err, (cmd, err)  # reproducible noise: never a proved release


def test_version_and_exit_codes_in_help(capsys):
    from graphrelease import __version__

    rc, out, _ = _run(["--version"], capsys)
    assert rc == 0 and __version__ in out
    rc, out, _ = _run(["--help"], capsys)
    assert rc == 0 and "Exit codes" in out and "--install-completion" in out
