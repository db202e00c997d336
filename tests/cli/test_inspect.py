"""``graphrelease inspect``: table and JSON output, known statistics, collections, the embedded default."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from cli.app import app
from graphrelease.inspect import inspect_graph
from graphrelease.io import read_default_graph, read_graph

runner = CliRunner()


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, ["inspect", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_default_graph_table():
    result = runner.invoke(app, ["inspect", "--default"])
    assert result.exit_code == 0, result.output
    for fragment in ("cora", "2,708", "5,278", "triangles", "1,630", "largest component", "2,485"):
        assert fragment in result.stdout


def test_facebook_matches_snap_published_statistics(data_dir):
    """SNAP's ego-Facebook page lists 1,612,010 triangles and average clustering 0.6055."""
    summary = _json([str(data_dir / "raw/facebook_combined.txt.gz")])
    assert summary["nodes"] == 4039 and summary["edges"] == 88234
    assert summary["triangles"] == 1612010
    assert summary["average_clustering"] == pytest.approx(0.6055, abs=5e-5)
    assert summary["connected_components"] == 1 and summary["largest_component"] == 4039
    assert summary["format"] == "edgelist"


def test_statistics_match_networkx_on_cora():
    result = read_default_graph()
    summary = inspect_graph(result)
    nxg = result.data.to_networkx()
    assert summary["triangles"] == sum(nx.triangles(nxg).values()) // 3
    assert summary["average_clustering"] == pytest.approx(nx.average_clustering(nxg), abs=1e-9)
    assert summary["connected_components"] == nx.number_connected_components(nxg)
    degrees = np.array([d for _, d in nxg.degree()])
    assert summary["degree"] == {
        "min": int(degrees.min()), "median": float(np.median(degrees)), "mean": float(degrees.mean()),
        "max": int(degrees.max()),
    }
    assert summary["density"] == pytest.approx(nx.density(nxg))


def test_slashdot_json_reports_what_was_dropped(data_dir):
    summary = _json([str(data_dir / "raw/soc-Slashdot0902.txt.gz")])
    reader = summary["reader"]
    assert reader["directed_input"] is True
    assert reader["dropped"]["self_loops"] > 0 and reader["dropped"]["reverse_edges_merged"] > 0
    assert summary["edges"] == 504230 and summary["largest_component"] == 82168


def test_collection_summary(data_dir):
    summary = _json([str(data_dir / "collections/MUTAG")])
    assert summary["kind"] == "collection" and summary["graphs"] == 188
    assert summary["nodes"] == 3371 and summary["edges"] == 3721
    assert summary["nodes_per_graph"]["min"] == 10 and summary["nodes_per_graph"]["max"] == 28
    assert summary["graph_classes"] == 2
    table = runner.invoke(app, ["inspect", str(data_dir / "collections/MUTAG")])
    assert table.exit_code == 0 and "188" in table.stdout


def test_format_and_side_files(tmp_path):
    edges = tmp_path / "edges.dat"  # unknown extension: --format decides
    edges.write_text("a,b\nb,c\nc,c\n")
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\na,1\nb,0\nc,1\n")
    summary = _json([str(edges), "--format", "csv", "--labels", str(labels)])
    assert summary["format"] == "csv" and summary["nodes"] == 3 and summary["edges"] == 2
    assert summary["labels"] is True and summary["classes"] == 2
    assert summary["reader"]["dropped"]["self_loops"] == 1
    assert summary["original_ids"] is True


def test_options_are_exclusive(data_dir, capsys):
    from cli.common import run_cli

    assert run_cli(app, ["inspect"]) != 0
    assert run_cli(app, ["inspect", str(data_dir / "single/cora.npz"), "--default"]) != 0
    assert "either a PATH or --default" in capsys.readouterr().err


def test_help_lists_command():
    result = runner.invoke(app, ["inspect", "--help"])
    assert result.exit_code == 0 and "--json" in result.stdout and "--default" in result.stdout
