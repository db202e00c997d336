"""Typer application: parse options, call one graphrelease function, render with rich. No logic lives here.

Each command group lives in its own module and registers itself on ``app`` when imported below. Library imports
inside command functions stay lazy so that ``graphrelease --help`` does not import torch.
"""

from __future__ import annotations

import sys

import typer

from cli.common import run_cli

EXIT_CODES = ("Exit codes: 0 success; 1 verification failed (certificate verify); 2 bad input or option (one line "
              "on stderr, or JSON with --json); 3 budget cannot be met (the message gives the smallest feasible "
              "epsilon); 4 release cannot be written or read; 5 the release would be uncertified (pass "
              "--allow-uncertified); 130 interrupted (nothing half-written is left).")

app = typer.Typer(
    name="graphrelease",
    help="Secure synthetic graph release: DP generators, private models, certificates and audits.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)


def _show_version(value: bool) -> None:
    if value:
        from graphrelease import __version__

        typer.echo(f"graphrelease {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Secure synthetic graph release: DP generators, private models, certificates and audits."""

# Command modules: each adds its commands to `app` (one line per module; keep this list sorted).
_COMMAND_MODULES = [
    "cli.cmd_audit",
    "cli.cmd_batch",
    "cli.cmd_demo",
    "cli.cmd_budget",
    "cli.cmd_certificate",
    "cli.cmd_inspect",
    "cli.cmd_models",
    "cli.cmd_synth",
]


def _register_commands() -> None:
    import importlib

    for module in _COMMAND_MODULES:
        importlib.import_module(module).register(app)


_register_commands()


def main() -> None:
    sys.exit(run_cli(app))


if __name__ == "__main__":
    main()
