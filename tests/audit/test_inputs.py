"""A release is audited only against the input it was made from: node-count mismatch and input-binding (HMAC)
checks, in the library and through the CLI (one line, no traceback, no report written)."""

from __future__ import annotations

import numpy as np
import pytest
import typer

from cli import cmd_audit
from cli.common import run_cli
from graphrelease.audit.run import run_audit
from graphrelease.errors import GraphValidationError, OptionError
from graphrelease.graph import Graph
from graphrelease.io import read_graph, write_graph
from tests.audit.test_run import make_release_dir, perturbed


@pytest.fixture(scope="module")
def cora(data_dir) -> Graph:
    g = read_graph(data_dir / "single" / "cora.npz").data
    return g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:150]))


@pytest.fixture(scope="module")
def synth_release(cora, tmp_path_factory):
    """A real `graphrelease synth` release of ``cora`` with its input-binding key beside it."""
    from graphrelease.synth import synthesize

    root = tmp_path_factory.mktemp("bound")
    synthesize(cora, method="randomized_response", epsilon=2.0, out=root / "rel", mode="symmetric",
               key_path=root / "rel.key", allow_uncertified=True)
    return root / "rel", root / "rel.key"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    cmd_audit.register(a)

    @a.command("noop")  # a second command keeps Typer in multi-command mode, as in cli.app
    def noop() -> None:
        pass

    return a


def test_node_count_mismatch_is_refused_unless_allowed(cora, tmp_path):
    other = cora.induced_subgraph(np.arange(120))
    rel = make_release_dir(tmp_path / "other", [perturbed(other, 0.1, 1)], epsilon=1.0, method="fake")
    with pytest.raises(GraphValidationError, match=r"has graphs of 120 nodes but the original .* has 150: it was "
                                                    r"not made from this input \(--allow-mismatch"):
        run_audit(cora, [rel], tasks=("statistics",), attacks=())
    res = run_audit(cora, [rel], tasks=("statistics",), attacks=(), allow_mismatch=True)
    assert any("audited anyway (--allow-mismatch)" in n for n in res.notes)
    (v,) = res.verdict["releases"]
    assert v["headline"] == "degenerate" and "another node count (120 vs 150)" in v["flags"][0]


def test_input_binding_checked_with_the_owners_key(cora, synth_release, tmp_path):
    rel, key = synth_release
    res = run_audit(cora, [rel], tasks=(), attacks=(), keys=[key])
    assert any("input binding (HMAC-SHA256) matches" in n for n in res.notes)
    # Same node count, other edges: only the binding can tell.
    with pytest.raises(GraphValidationError, match="input binding does not match the original"):
        run_audit(perturbed(cora, 0.05, 3), [rel], tasks=(), attacks=(), keys=[key])
    wrong_key = tmp_path / "wrong.key"
    wrong_key.write_text("ab" * 32 + "\n")
    with pytest.raises(GraphValidationError, match="input binding does not match"):
        run_audit(cora, [rel], tasks=(), attacks=(), keys=[wrong_key])
    unbound = make_release_dir(tmp_path / "unbound", [cora], epsilon=1.0, method="fake")
    with pytest.raises(GraphValidationError, match="carries no input binding"):
        run_audit(cora, [unbound], tasks=(), attacks=(), keys=[key])
    with pytest.raises(OptionError, match="one key per release"):
        run_audit(cora, [rel, unbound], tasks=(), attacks=(), keys=[key])


def test_cli_refuses_a_mismatched_original_in_one_line(app, cora, synth_release, tmp_path, capsys):
    rel, key = synth_release
    other = tmp_path / "other.npz"
    write_graph(cora.induced_subgraph(np.arange(100)), other)
    report = tmp_path / "rep" / "audit.html"
    code = run_cli(app, ["audit", "--original", str(other), "--release", str(rel), "--report", str(report),
                         "--task", "statistics", "--attack", "none"])
    err = capsys.readouterr().err
    assert code == GraphValidationError.exit_code
    assert "not made from this input" in err and str(rel) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not report.parent.exists()
    # the same original with the wrong edges: refused through --key
    wrong = tmp_path / "wrong.npz"
    write_graph(perturbed(cora, 0.05, 4), wrong)
    code = run_cli(app, ["audit", "--original", str(wrong), "--release", str(rel), "--key", str(key),
                         "--report", str(report), "--task", "statistics", "--attack", "none"])
    err = capsys.readouterr().err
    assert code == GraphValidationError.exit_code and "input binding does not match" in err
    assert len(err.strip().splitlines()) == 1 and not report.parent.exists()
    # the right original and key: the report is written and the verdict printed first
    original = tmp_path / "orig.npz"
    write_graph(cora, original)
    code = run_cli(app, ["audit", "--original", str(original), "--release", str(rel), "--key", str(key),
                         "--report", str(report), "--task", "statistics", "--attack", "none", "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0 and report.is_file()
    first_verdict_line = min(out.index(w) for w in ("Lost:", "Changed:", "Kept:") if w in out)
    assert first_verdict_line < out.index("Comparison")


def test_cli_edge_list_original_needs_its_declared_node_set(app, cora, synth_release, tmp_path, capsys):
    """A plain edge list of the original names only its 127 non-isolated nodes: the audit refuses it as another
    input; --nodes 150 declares the node set and the binding then matches."""
    rel, key = synth_release
    plain = tmp_path / "orig.csv"
    plain.write_text("".join(f"{u},{v}\n" for u, v in cora.edges))
    base = ["audit", "--original", str(plain), "--release", str(rel), "--key", str(key),
            "--report", str(tmp_path / "rep.html"), "--task", "statistics", "--attack", "none", "--no-plots"]
    code = run_cli(app, base)
    err = capsys.readouterr().err
    assert code == GraphValidationError.exit_code and "has 127" in err and "not made from this input" in err
    assert run_cli(app, base + ["--nodes", "150"]) == 0, capsys.readouterr().err
    assert (tmp_path / "rep.html").is_file()
