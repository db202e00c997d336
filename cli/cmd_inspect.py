"""``graphrelease inspect``: summarise an input graph (rendering only; the work is graphrelease.inspect)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli.common import NODES_HELP, console


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return " / ".join(_fmt(v) for v in value.values())
    return str(value)


def _render(summary: dict) -> None:
    from rich.table import Table

    table = Table(title=f"{summary['name']} ({summary['format']}, {summary['kind']})", show_header=False)
    table.add_column("statistic", style="bold")
    table.add_column("value")
    rows = [("path", summary["path"])]
    if summary["kind"] == "collection":
        rows += [
            ("graphs", summary["graphs"]),
            ("nodes (total)", summary["nodes"]),
            ("edges (total)", summary["edges"]),
            ("triangles (total)", summary["triangles"]),
            ("nodes per graph min / median / mean / max", summary["nodes_per_graph"]),
            ("edges per graph min / median / mean / max", summary["edges_per_graph"]),
            ("graph labels (classes)", summary["graph_classes"] if summary["graph_labels"] else False),
            ("node features (dimensions)", summary["features"]),
            ("node labels", summary["node_labels"]),
            ("node sets", summary["node_set"]),
        ]
    else:
        rows += [
            ("nodes", summary["nodes"]),
            ("edges (undirected)", summary["edges"]),
            ("density 2m/(n(n-1))", summary["density"]),
            ("degree min / median / mean / max", summary["degree"]),
            ("isolated nodes", summary["isolated_nodes"]),
            ("connected components", summary["connected_components"]),
            ("largest component (nodes)", summary["largest_component"]),
            ("triangles", summary["triangles"]),
            ("average clustering (C_i=0 if deg<2)", summary["average_clustering"]),
            ("transitivity", summary["transitivity"]),
            ("features (dimensions)", summary["features"]),
            ("labels (classes)", summary["classes"] if summary["labels"] else False),
            ("original node ids kept", summary["original_ids"]),
            ("node set", summary["node_set"]),
        ]
    reader = summary["reader"]
    dropped = reader["dropped"]
    rows += [
        ("input rows read", reader["input_rows"]),
        ("directed input (symmetrised)", reader["directed_input"]),
        ("dropped: self-loops", dropped["self_loops"]),
        ("dropped: duplicate rows", dropped["duplicate_edges"]),
        ("merged: reverse copies (v,u) of (u,v)", dropped["reverse_edges_merged"]),
    ]
    for key, value in rows:
        table.add_row(key, _fmt(value))
    for note in reader["notes"]:
        table.add_row("note", note)
    console.print(table)


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_command(
        path: Optional[Path] = typer.Argument(None, help="Graph file or TU collection directory."),
        fmt: Optional[str] = typer.Option(
            None, "--format", "-f", help="Input format (default: sniffed): edgelist, csv, tsv (delimited edge lists), npz, "
            "graphml, gml, gexf, pt (PyG), tu (TU Dortmund directory), graphdir (directory of graph_NNN files)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON (for scripts)."),
        features: Optional[Path] = typer.Option(None, "--features", help="Node-feature file (CSV/npz/npy) joined by node id."),
        labels: Optional[Path] = typer.Option(None, "--labels", help="Node-label file (CSV/npz/npy) joined by node id."),
        directed: Optional[bool] = typer.Option(
            None, "--directed/--undirected", help="Declare the input (un)directed; it is symmetrised either way."
        ),
        default: bool = typer.Option(False, "--default", help="Inspect the embedded default graph (Cora)."),
        nodes: Optional[str] = typer.Option(None, "--nodes", help=NODES_HELP),
    ) -> None:
        """Summarise a graph: size, density, degrees, components, triangles, clustering, what the reader dropped.

        Internal information about the input: do not publish it (it is not differentially private).
        """
        from graphrelease.errors import OptionError
        from graphrelease.inspect import inspect_graph
        from graphrelease.io import read_default_graph, read_graph

        if default == (path is not None):
            raise OptionError("give either a PATH or --default (the embedded Cora graph)")
        if default:
            if fmt or features or labels or nodes:
                raise OptionError("--format/--features/--labels/--nodes do not apply to --default")
            result = read_default_graph()
        else:
            extra = {"nodes": nodes} if nodes is not None else {}
            result = read_graph(path, fmt, features=features, labels=labels, directed=directed, **extra)
        summary = inspect_graph(result)
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
        else:
            _render(summary)
