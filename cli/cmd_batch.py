"""`graphrelease batch PLAN.toml`: scripted anonymisation of many graphs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.common import console, err_console


def register(app: typer.Typer) -> None:
    app.command("batch")(batch)


def batch(
    plan_file: Path = typer.Argument(..., help="Plan file (TOML): inputs, methods, budgets, audit options."),
    executor: str = typer.Option("local", "--executor", help="'local' (process pool) or 'ray'."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --executor ray)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel jobs (default: number of CPUs)."),
    resume: bool = typer.Option(False, "--resume", help="Skip jobs whose release already exists and verifies."),
    force: bool = typer.Option(False, "--force", help="Replace existing releases of the plan's jobs."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Expand and check the plan (budgets too); run nothing."),
) -> int:
    """Expand PLAN into jobs (input x method x budget), run them, write one release per job and a summary.

    epsilon_spent in the summary is each certificate's epsilon at the job's delta; the per-input table composes
    all releases made from the same private graph.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from graphrelease.batch import load_plan, make_executor, run_plan

    plan = load_plan(plan_file)
    console.print(f"plan [bold]{plan.name}[/]: {len(plan.jobs)} jobs on {len(plan.jobs_by_input())} private inputs "
                  f"-> {plan.output}")
    if dry_run:
        for job in plan.jobs[:20]:
            console.print(f"  {job.job_id}  epsilon={job.epsilon:g} delta={job.delta:g}")
        if len(plan.jobs) > 20:
            console.print(f"  ... and {len(plan.jobs) - 20} more")
        return 0
    runner = make_executor(executor, workers=workers, address=address)
    failures: list[str] = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=False) as progress:
        overall = progress.add_task("jobs", total=len(plan.jobs), last="")

        def on_result(result, finished: int, total: int) -> None:
            mark = {"done": "[green]done[/]", "skipped": "[cyan]verified, skipped[/]"}.get(result.status,
                                                                                          "[red]failed[/]")
            progress.update(overall, completed=finished, last=f"{result.job_id} {mark}")
            if result.status == "failed":
                failures.append(f"{result.job_id}: {result.error}")

        try:
            summary = run_plan(plan, executor=runner, resume=resume, force=force, on_result=on_result)
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/]: finished releases are intact; run again with --resume")
            return 130
    for line in failures:
        err_console.print(f"[red]failed[/] {line}", highlight=False)
    console.print(f"summary: {summary.markdown_path} and {summary.csv_path}")
    return 1 if summary.failed else 0
