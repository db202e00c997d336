"""The CLI shell: usage errors exit 2 with one message and no traceback; --help does not import torch."""

from __future__ import annotations

import subprocess
import sys

from cli.app import app
from cli.common import run_cli


def test_unknown_command_and_option_are_usage_errors(capsys):
    assert run_cli(app, ["no-such-command"]) == 2
    assert run_cli(app, ["inspect", "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert "No such command" in err and "No such option" in err
    assert "Traceback" not in err


def test_help_lists_commands_without_importing_torch():
    code = (
        "import sys; from cli.common import run_cli; from cli.app import app; "
        "rc = run_cli(app, ['--help']); assert rc == 0, rc; "
        "assert 'torch' not in sys.modules, 'torch imported on the CLI start-up path'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for command in ("inspect", "synth", "audit", "batch"):
        assert command in done.stdout
