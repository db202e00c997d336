"""The side-by-side report's same-run claims (issue 19) against the committed peer JSONs.

The peer runs themselves are not in the test run (they need fetched peers and minutes of CPU); what is checked here is
the part of ``benchmarks/peers/run_peers.py`` that turns the committed ``reports/peers/*.json`` into the header's
"same run or not" sentence, and that the sections issue 19 made same-run stay so.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "peers" / "run_peers.py"


@pytest.fixture(scope="module")
def run_peers():
    spec = importlib.util.spec_from_file_location("run_peers_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("peer", ["privgraph", "gap", "dpdgc"])
def test_fixed_peer_and_ours_same_run_in_every_cell(run_peers, peer):
    rows = run_peers.load_rows(peer)
    cells = run_peers.cell_sources(rows, "epsilon")
    assert len(cells) >= 4  # two graphs x two budgets at least (issue 19's "done when")
    for cell, tools in cells.items():
        assert {"public_fixed", "ours"} <= set(tools), cell
        assert tools["public_fixed"] == tools["ours"], cell
    assert run_peers.same_run_status(peer, rows, "epsilon", "public_fixed").startswith(f"{peer}: same-run")


def test_split_cell_is_reported(run_peers):
    # The DPDGC rows as they would read if ours had come from a later, separate invocation of one cell.
    rows = run_peers.load_rows("dpdgc")
    moved = dict(next(r for r in rows if r["tool"] == "ours"), _src="dpdgc_zlater.json")
    status = run_peers.same_run_status("DPDGC", rows + [moved], "epsilon", "public_fixed")
    assert "separate invocations in 1 of 4 cells" in status
    assert f"{moved['graph']} {moved['epsilon']:g}" in status


def test_committed_report_states_the_json_it_was_built_from(run_peers):
    report = (ROOT / "reports" / "peers.md").read_text()
    for peer, name in (("privgraph", "PrivGraph"), ("gap", "GAP"), ("dpdgc", "DPDGC")):
        status = run_peers.same_run_status(name, run_peers.load_rows(peer), "epsilon", "public_fixed")
        assert status in report, f"reports/peers.md is stale for {name}: regenerate with run_peers.py --report-only"
