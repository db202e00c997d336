"""Typer application: parse options, call one graphrelease function, render with rich. No logic lives here.

Each command group lives in its own module and registers itself on ``app`` when imported below. Library imports
inside command functions stay lazy so that ``graphrelease --help`` does not import torch.
"""

from __future__ import annotations

import sys

import typer

from cli.common import run_cli

app = typer.Typer(
    name="graphrelease",
    help="Secure synthetic graph release: DP generators, private models, certificates and audits.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

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
