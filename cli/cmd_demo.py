"""`graphrelease demo`: the main job on the embedded default graph (README's first command)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.common import console


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", help="Working directory: release/, release.key, audit.*"),
    epsilon: float = typer.Option(2.0, "--epsilon", help="Edge-DP budget epsilon (delta defaults to 1/n^1.1)."),
    method: Optional[str] = typer.Option(None, "--method", help="Generator (default: the measured winner)."),
) -> int:
    """Release a DP synthetic version of the embedded Cora graph, verify its certificate, and audit it.

    epsilon: privacy-loss bound under edge adjacency (graphs differing in one edge); smaller is more private.
    """
    from rich.panel import Panel
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cli.cmd_audit import print_summary
    from graphrelease.demo import run_demo
    from graphrelease.privacy.certificate import human_summary

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, transient=True) as bar:
        tasks: dict[str, int] = {}

        def on_synth(stage: str, done: int, total: int, spent: float) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(f"synth {stage}", total=total, info="")
            bar.update(tasks[stage], completed=done, total=total, info=f"epsilon spent {spent:.3f}")

        def on_audit(stage: str, done: int, total: int) -> None:
            if "audit" not in tasks:
                tasks["audit"] = bar.add_task("audit", total=total, info="")
            bar.update(tasks["audit"], completed=done, total=total, info=stage)

        result = run_demo(out, epsilon=epsilon, method=method, synth_progress=on_synth, audit_progress=on_audit)
    s = result.synth
    files = sorted(p.relative_to(s.release_dir).as_posix() for p in s.release_dir.rglob("*") if p.is_file())
    console.print(Panel.fit(
        f"[bold]release[/] {s.release_dir}  ({s.method}{' / ' + s.mode if s.mode else ''}, {s.seconds:.1f} s)\n"
        + "\n".join(f"  {f}" for f in files)
        + f"\n[bold]input-binding key[/] {s.key_path} (keep it private, outside the release)",
        title="Safe to publish"))
    console.print(Panel(human_summary(s.certificate), title="Privacy certificate"), highlight=False)
    verdict = "[green]verifies[/]" if result.verify.ok else "[red]DOES NOT VERIFY[/]: " + "; ".join(
        result.verify.problems)
    console.print(f"certificate verify (independent accountant, artifact hashes, input binding): {verdict}")
    for note in s.notes:
        console.print(f"note: {note}", highlight=False)
    print_summary(result.audit)
    console.print("INTERNAL audit report (contains non-private statistics of the input; do not publish): "
                  + ", ".join(str(p) for p in result.report_files), highlight=False)
    return 0 if result.verify.ok else 1
