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


def test_a_missing_input_file_is_answered_before_torch_is_imported(tmp_path):
    # The readers would say the same after the generators' imports (2 s for synth); the commands check first.
    missing = tmp_path / "nope.csv"
    graph = tmp_path / "g.csv"
    graph.write_text("0,1\n1,2\n")
    commands = [
        (["synth", str(missing), "--nodes", "5", "--epsilon", "1", "--out", str(tmp_path / "r")], f"{missing}"),
        (["train", str(missing), "--epsilon", "1", "--out", str(tmp_path / "m")], f"{missing}"),
        (["embed", str(missing), "--epsilon", "1", "--out", str(tmp_path / "e")], f"{missing}"),
        (["synth", str(graph), "--nodes", "3", "--epsilon", "1", "--features", str(missing), "--out",
          str(tmp_path / "r")], f"{missing}: no such file (features)"),
    ]
    for argv, message in commands:
        code = (
            "import sys; from cli.common import run_cli; from cli.app import app; "
            f"rc = run_cli(app, {argv!r}); assert rc == 2, rc; "
            "assert 'torch' not in sys.modules, 'torch imported before the missing file was reported'"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (argv, done.stderr)
        assert f"{missing}: no such file" in done.stderr and message in done.stderr
        assert "Traceback" not in done.stderr
        assert not (tmp_path / "r").exists()
