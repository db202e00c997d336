"""``graphrelease certificate verify|show`` on a real release (Cora), untouched and tampered."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from cli.app import app
from graphrelease.io import load_default_graph
from graphrelease.privacy.binding import input_hmac, write_key
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.certificate import build_certificate
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.release import ReleaseWriter

runner = CliRunner()


def _release(tmp_path):
    graph = load_default_graph()
    budget = Budget(epsilon=2.0, delta=1e-5, adjacency="edge", accountant="rdp")
    budget.charge(LedgerEntry(mechanism="gaussian", stage="sketch", params={"noise_multiplier": 12.0},
                              sensitivity=math.sqrt(2), proof="gaussian"))
    out, key_file = tmp_path / "rel", tmp_path / "rel.key"
    key = write_key(key_file)
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/graph_000.csv", graph.without_private_metadata())
        w.finalize(lambda a: build_certificate(budget=budget, method="cli-test", mode="default", artifacts=a,
                                               public_assumptions={}, released=["graphs/graph_000.csv"],
                                               extra={"input_hmac_sha256": input_hmac(graph, key)}))
    graph_file = tmp_path / "cora.npz"
    from graphrelease.io import write_graph

    write_graph(graph, graph_file)
    return out, key_file, graph_file


def test_verify_show_and_tamper(tmp_path):
    out, key_file, graph_file = _release(tmp_path)
    ok = runner.invoke(app, ["certificate", "verify", str(out), "--input", str(graph_file), "--key", str(key_file)])
    assert ok.exit_code == 0, ok.output
    assert "verified" in ok.output
    show = runner.invoke(app, ["certificate", "show", str(out)])
    assert show.exit_code == 0 and "cli-test" in show.output and "proved" in show.output
    wrong = tmp_path / "wrong.key"
    write_key(wrong)
    bad = runner.invoke(app, ["certificate", "verify", str(out), "--input", str(graph_file), "--key", str(wrong)])
    assert bad.exit_code != 0
    cert_path = out / "certificate.json"
    cert = json.loads(cert_path.read_text())
    cert["epsilons"]["rdp"] = cert["epsilons"]["rdp"] * 0.9
    cert_path.write_text(json.dumps(cert))
    tampered = runner.invoke(app, ["certificate", "verify", str(out)])
    assert tampered.exit_code != 0
