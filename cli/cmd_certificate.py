"""``graphrelease certificate verify|show``: re-check or display a release's privacy certificate (rendering only;
the work is graphrelease.privacy.certificate)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.common import console, err_console


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Verify or display a release's privacy certificate.", no_args_is_help=True)
    app.add_typer(group, name="certificate")

    @group.command("verify")
    def verify(
        release_dir: Path = typer.Argument(..., help="release directory (with certificate.json, manifest.json)"),
        input_path: Optional[Path] = typer.Option(None, "--input", help="the private input graph, to check the "
                                                                         "HMAC binding"),
        key: Optional[Path] = typer.Option(None, "--key", help="the key file kept beside the release"),
    ) -> int:
        """Recompute epsilon from the ledger, re-hash every artifact, check the input binding; exit 1 on failure."""
        from graphrelease.privacy.certificate import verify_release

        report = verify_release(release_dir, input_graph=input_path, key=key)
        for check in report.checks:
            console.print(f"[green]ok[/]   {check}", highlight=False)
        for problem in report.problems:
            err_console.print(f"[bold red]FAIL[/] {problem}", highlight=False)
        if report.ok:
            console.print(f"[bold green]verified[/]: {release_dir}")
            return 0
        err_console.print(f"[bold red]verification failed[/]: {len(report.problems)} problem(s) in {release_dir}")
        raise typer.Exit(1)

    @group.command("show")
    def show(release_dir: Path = typer.Argument(..., help="release directory")) -> None:
        """Print the certificate's human summary."""
        from graphrelease.privacy.certificate import human_summary
        from graphrelease.release import read_release

        cert = read_release(release_dir)["certificate"]
        console.print(human_summary(cert), highlight=False, soft_wrap=True)
