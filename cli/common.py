"""Shared CLI plumbing: the one place that turns a UserError into a clean one-line message and an exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


NODES_HELP = ("The input's node set, declared by you: a node count N (ids 0..N-1) or a file listing one node id per "
              "line. An edge list names only nodes that have an edge, so without this its node set comes from the "
              "private edges and the release is refused (or see --node-set).")
NODE_SET_HELP = ("declared (default): refuse an input whose node set was read off its edges; from-edges: accept it, "
                 "and the certificate says the non-isolated nodes were treated as public.")


def echo_json(payload: dict) -> None:
    """One JSON object on stdout (``--json``): paths as strings, non-finite floats as null."""
    import json
    import math
    from pathlib import Path

    def clean(value):
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    typer.echo(json.dumps(clean(payload), indent=2, sort_keys=True))


def _route_library_warnings() -> None:
    """The library's UserWarnings (risky but allowed settings) reach the user as one 'warning:' line."""
    import warnings

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        from graphrelease.errors import ReleaseWarning

        if issubclass(category, ReleaseWarning):
            err_console.print(f"[bold yellow]warning:[/] {message}", highlight=False, soft_wrap=True)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def require_files(**paths: Path | None) -> None:
    """A missing input file is answered before the heavy imports: the readers say the same, seconds later (2 s for
    ``synth`` on a file that is not there). The keyword names the option (``input`` for the argument itself)."""
    from graphrelease.errors import InputFormatError

    for what, path in paths.items():
        if path is not None and not Path(path).exists():
            raise InputFormatError(f"{path}: no such file" + ("" if what == "input" else f" ({what})"))


def run_cli(app: typer.Typer, args: list[str] | None = None) -> int:
    """Run ``app``; print library UserErrors as one line on stderr, without a traceback."""
    from graphrelease.errors import UserError

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    argv = sys.argv[1:] if args is None else list(args)
    _route_library_warnings()
    try:
        result = app(args=args, standalone_mode=False)
    except UserError as err:
        if "--json" in argv:  # scripts asked for JSON: errors come as JSON too, on stdout
            import json

            print(json.dumps({"error": str(err), "kind": type(err).__name__, "exit_code": err.exit_code}))
        else:
            err_console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        return err.exit_code
    except typer.Abort:
        err_console.print("[bold red]aborted[/]")
        return 130
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]: nothing half-written was left behind")
        return 130
    except typer.Exit as ex:
        return ex.exit_code
    except Exception as err:  # usage errors carry their own exit code; everything else is a bug
        usage = _click_exception_types()
        if isinstance(err, usage):
            err.show(file=sys.stderr)
            return int(getattr(err, "exit_code", 2))
        raise
    return result if isinstance(result, int) else 0


def _click_exception_types() -> tuple[type, ...]:
    """Typer >= 0.20 vendors click as ``typer._click``; older ones use click. Accept both."""
    types: list[type] = []
    try:
        from typer._click.exceptions import ClickException as VendoredClickException

        types.append(VendoredClickException)
    except ImportError:
        pass
    try:
        from click import ClickException

        types.append(ClickException)
    except ImportError:
        pass
    return tuple(types)


def parse_set_options(items: list[str] | None) -> dict:
    """``--set KEY=VALUE`` (repeatable) -> dict; VALUE is read as JSON when it parses (numbers, true, lists)."""
    import json

    from graphrelease.errors import OptionError

    out: dict = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--set '{item}' must look like KEY=VALUE")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip().replace("-", "_")] = value
    return out
