"""``graphrelease certificate verify|show``: re-check or display a release's privacy certificate (rendering only;
the work is graphrelease.privacy.certificate)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.common import console, echo_json, err_console


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Verify or display a release's privacy certificate.", no_args_is_help=True)
    app.add_typer(group, name="certificate")

    @group.command("verify")
    def verify(
        release_dir: Path = typer.Argument(..., help="release directory (with certificate.json, manifest.json)"),
        input_path: Optional[Path] = typer.Option(None, "--input", help="the private input graph, to check the "
                                                                         "HMAC binding"),
        key: Optional[Path] = typer.Option(None, "--key", help="the key file kept beside the release"),
        nodes: Optional[str] = typer.Option(None, "--nodes", help="the node set declared for --input (as given to "
                                                                  "synth: a count or a node-list file)"),
        signer_key: Optional[str] = typer.Option(None, "--signer-key", help="the issuer's Ed25519 public key (.pub "
                                                 "file or hex): the release must be signed by it"),
        as_json: bool = typer.Option(False, "--json", help="print {ok, checks, problems, recomputed} as JSON"),
        input_format: Optional[str] = typer.Option(None, "--format", help="--input's format (default: sniffed)"),
        features: Optional[Path] = typer.Option(None, "--features", help="the features file given to the release "
                                                "(it may have declared the node set)"),
        labels: Optional[Path] = typer.Option(None, "--labels", help="the labels file given to the release"),
    ) -> int:
        """Recompute epsilon and every ledger entry, re-hash every artifact, check the signature and the input
        binding; exit 1 on failure."""
        from graphrelease.privacy.certificate import verify_release

        options = {k: v for k, v in {"nodes": nodes, "fmt": input_format, "features": features,
                                     "labels": labels}.items() if v is not None}
        report = verify_release(release_dir, input_graph=input_path, key=key, signer_key=signer_key,
                                input_options=options or None)
        if as_json:
            echo_json({"release": str(release_dir), "ok": report.ok, "checks": report.checks,
                       "problems": report.problems, "recomputed": report.recomputed,
                       "input_binding_checked": input_path is not None})
            if not report.ok:
                raise typer.Exit(1)
            return 0
        for check in report.checks:
            console.print(f"[green]ok[/]   {check}", highlight=False)
        if input_path is None:
            console.print("[yellow]note[/] input binding not checked (pass --input and --key to check it)",
                          highlight=False)
        for problem in report.problems:
            err_console.print(f"[bold red]FAIL[/] {problem}", highlight=False)
        if report.ok:
            console.print(f"[bold green]verified[/]: {release_dir}")
            return 0
        err_console.print(f"[bold red]verification failed[/]: {len(report.problems)} problem(s) in {release_dir}")
        raise typer.Exit(1)

    @group.command("keygen")
    def keygen(path: Path = typer.Argument(..., help="where to write the private key (PEM, mode 0600); the "
                                                     "public key goes to PATH.pub")) -> None:
        """Make an Ed25519 signing key pair for `synth|train|embed --signing-key`; publish PATH.pub."""
        from graphrelease.privacy.signing import generate_keypair

        private, public = generate_keypair(path)
        console.print(f"private key: {private} (keep it secret)\npublic key:  {public} (publish it; verifiers pass "
                      f"it as --signer-key)", highlight=False)

    @group.command("show")
    def show(release_dir: Path = typer.Argument(..., help="release directory")) -> None:
        """Print the certificate's human summary."""
        from graphrelease.privacy.certificate import human_summary
        from graphrelease.release import read_release

        cert = read_release(release_dir)["certificate"]
        console.print(human_summary(cert), highlight=False, soft_wrap=True)
