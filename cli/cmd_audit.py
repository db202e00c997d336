"""`graphrelease audit`: compare releases with the private original; write the INTERNAL audit report."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from cli.common import NODES_HELP, console, err_console


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)


def _quiet():
    import contextlib

    return contextlib.nullcontext()


def audit(
    original: Path = typer.Option(..., "--original", help="The private input graph or collection (any readable "
                                                          "format)."),
    release: List[Path] = typer.Option(..., "--release", help="A release directory (or graph file); repeat the "
                                                              "option to compare several releases in one table."),
    report: Optional[Path] = typer.Option(None, "--report", help="Report path: X.html also writes X.md and X.json; "
                                                                 "a directory gets audit.html/.md/.json. Default: "
                                                                 "reports/audit-<input name>.html. Never inside a "
                                                                 "release directory."),
    as_json: bool = typer.Option(False, "--json", help="Print the audit's numbers as JSON on stdout."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Audit stages to run (repeatable): statistics, "
                                                                  "motifs, mmd, downstream. Default: all."),
    attack: Optional[List[str]] = typer.Option(None, "--attack", help="Attacks (repeatable): link_inference, "
                                                                      "membership. Default: both; 'none' for none."),
    motif_size: int = typer.Option(4, "--motif-size", help="Largest graphlet size counted (3, 4 or 5; 5 is slow)."),
    fast: bool = typer.Option(False, "--fast", help="Fewer training epochs for the downstream models."),
    canary_runs: int = typer.Option(0, "--canary-runs", help="Empirical privacy audit: re-fit each release's method "
                                                             "this many times, half with a canary, and report a "
                                                             "lower bound on epsilon (0 = off; 200+ for a useful "
                                                             "bound). The canary follows the certificate's "
                                                             "adjacency: an edge, a node (model releases) or a "
                                                             "whole graph (collections)."),
    refit_attack: bool = typer.Option(False, "--refit-attack", help="Seed link-inference protocol: hide 20% of "
                                                                    "the edges, re-fit each release's method on "
                                                                    "the rest, predict the hidden links."),
    canary_nodes: int = typer.Option(300, "--canary-nodes", help="Canary audit on the induced subgraph of at most "
                                                                 "this many highest-degree nodes."),
    canary_graphs: int = typer.Option(100, "--canary-graphs", help="Graph-canary audit on a uniform sample of at "
                                                                   "most this many original graphs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the audit's own sampling (the audit is internal)."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Skip the plots in the HTML report."),
    key: Optional[List[Path]] = typer.Option(None, "--key", help="The input-binding key written beside a release "
                                                                 "(<release>.key); repeat once per --release, in "
                                                                 "the same order. The audit refuses a release whose "
                                                                 "certificate's HMAC does not match ORIGINAL."),
    allow_mismatch: bool = typer.Option(False, "--allow-mismatch", help="Audit releases whose graphs have another "
                                                                        "node count than ORIGINAL (refused by "
                                                                        "default: they were not made from it); "
                                                                        "the verdict flags them."),
    nodes: Optional[str] = typer.Option(None, "--nodes", help="ORIGINAL's node set when it is an edge list. "
                                                              + NODES_HELP),
    input_format: Optional[str] = typer.Option(None, "--format", help="ORIGINAL's format (default: sniffed)."),
    features: Optional[Path] = typer.Option(None, "--features", help="Node features file for ORIGINAL, joined by "
                                            "node id."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Node labels file for ORIGINAL, joined by node id."),
) -> int:
    """Audit RELEASE(s) against the private ORIGINAL: statistics (Table 1 layout), motifs, MMD, downstream utility
    and attacks; writes an INTERNAL HTML + Markdown + JSON report.

    Table 1 columns are |statistic(release) - statistic(original)| for LCC (largest component size), TC (triangle
    count), CPL (characteristic path length), GINI (degree Gini coefficient) and REDE (relative edge distribution
    entropy); AUC 0.5 means an attack does no better than chance. Every number is defined in the report's legend.

    The report (and this command's output) opens with a verdict per release: what is kept and what is lost in
    plain words, degenerate releases flagged, the certified epsilon beside the attack figures. A release whose graphs
    have another node count than ORIGINAL is refused (--allow-mismatch to audit it anyway); with --key, so is one
    whose certificate's input binding does not match ORIGINAL.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from graphrelease.audit.run import ATTACKS, TASKS, load_original, run_audit
    from graphrelease.report import check_not_in_release, report_paths, write_report

    tasks = tuple(task) if task else TASKS
    attacks = () if attack and [a.lower() for a in attack] == ["none"] else (tuple(attack) if attack else ATTACKS)
    if report is None:
        report = Path("reports") / f"audit-{original.name.split('.')[0] or 'input'}.html"
    # Refuse a report path inside a release before spending minutes on the audit.
    for target in report_paths(report).values():
        check_not_in_release(target, release)
    orig = load_original(original, nodes=nodes, input_format=input_format, features=features, labels=labels)
    with Progress(TextColumn("[bold]audit[/] {task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True, disable=as_json) as progress:
        bar = progress.add_task("loading", total=1)

        def on_stage(stage: str, done: int, total: int) -> None:
            progress.update(bar, description=stage, completed=done, total=total)

        result = run_audit(orig, list(release), tasks=tasks, attacks=attacks, motif_size=motif_size, seed=seed,
                           fast=fast, canary_runs=canary_runs, canary_max_nodes=canary_nodes,
                           canary_max_graphs=canary_graphs,
                           refit_attack=refit_attack, keys=list(key or ()), allow_mismatch=allow_mismatch,
                           progress=on_stage)
    with err_console.status("writing the report (plots are drawn with matplotlib)") if not as_json else _quiet():
        written = write_report(result, report, release_dirs=release, plots=not no_plots)
    if as_json:
        from graphrelease.report.render import render_json

        typer.echo(render_json(result.to_dict()), nl=False)
        return 0
    print_summary(result)
    console.print("INTERNAL report (non-private statistics of the input) written to: "
                  + ", ".join(str(p) for p in written), highlight=False)
    return 0


def print_summary(result) -> None:
    from rich.markup import escape
    from rich.table import Table

    from graphrelease.report.render import TABLE1_HEADERS, eps_cell, fmt, verdict_lines

    styles = {"flag": "bold white on red", "lost": "red", "changed": "yellow", "kept": "green", "privacy": "blue"}
    for r in result.verdict.get("releases", []):
        console.print(f"[bold]{escape(r['label'])}[/]: {r['headline']}", highlight=False)
        for kind, text in verdict_lines(r):
            console.print(f"  [{styles[kind]}]{escape(text)}[/]", highlight=False)
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    if result.table1:
        table = Table(title="Comparison (|release - original|, Table 1 layout)")
        for h in ["release"] + [h for _, h in TABLE1_HEADERS] + ["mean rel. err", "eps"]:
            table.add_column(h, justify="left" if h == "release" else "right")
        for row in result.table1:
            table.add_row(row["release"], *[fmt(row.get(k)) for k, _ in TABLE1_HEADERS],
                          fmt(row.get("mean_relative_error")), eps_cell(row))
        console.print(table)
    rows = [(lab, key, res[key]) for lab, res in result.attacks.items()
            for key in ("link_inference", "membership_adjacency", "membership_model") if key in res]
    if rows:
        table = Table(title="Attacks (AUC 0.5 = chance)")
        for h in ("release", "attack", "AUC", "TPR@1%FPR"):
            table.add_column(h, justify="left" if h in ("release", "attack") else "right")
        for lab, key, r in rows:
            table.add_row(lab, key, fmt(r["auc"]), fmt(r["tpr_at_1pct_fpr"]))
        console.print(table)
