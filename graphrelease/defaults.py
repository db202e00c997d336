"""Defaults and limits every entry point shares (library, CLI, batch), in one place and free of heavy imports, so
that the CLI can validate options before it imports torch or an accountant.
"""

from __future__ import annotations

import math

from graphrelease.errors import OptionError

#: Largest epsilon a run accepts. Beyond it a guarantee says nothing (e^100 ~ 2.7e43 bounds no likelihood ratio
#: anyone cares about), and the PLD accountant's grid grows with epsilon (epsilon 1000 needs > 2 GB); a
#: non-private ceiling is a separate method (gvae, ggan, gcn ...) with ``guarantee: none``.
MAX_EPSILON = 100.0


def check_epsilon(epsilon: float, *, option: str = "--epsilon", allow_inf: bool = False) -> float:
    """``epsilon`` as a float in ``(0, MAX_EPSILON]`` (or ``inf`` where a non-private baseline allows it)."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"{option} must be a number, got {epsilon!r}") from None
    if math.isnan(value) or value <= 0:
        raise OptionError(f"{option} must be > 0, got {epsilon!r}")
    if math.isinf(value):
        if allow_inf:
            return value
        raise OptionError(f"{option} must be finite (inf means non-private: use a non-private baseline method), "
                          f"got {epsilon!r}")
    if value > MAX_EPSILON:
        raise OptionError(f"{option} {epsilon!r} is above the largest supported {MAX_EPSILON:g}: no guarantee is left "
                          f"to certify there; use epsilon <= {MAX_EPSILON:g}, or a non-private baseline")
    return value


def check_delta(delta: float | None, *, option: str = "--delta") -> float | None:
    """``delta`` in ``(0, 1)`` (``None`` = the method's default)."""
    if delta is None:
        return None
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise OptionError(f"{option} must be a number, got {delta!r}") from None
    if not (0.0 < value < 1.0):
        raise OptionError(f"{option} must be in (0, 1), got {delta!r}")
    return value


def warn_if_beside_input(input_path: object, *paths: object) -> None:
    """Warn when a release or key would be written inside the private input's directory (easy to publish or share
    together with the data by mistake). The current directory is exempt: that is where people work."""
    import os
    import warnings
    from pathlib import Path

    if not isinstance(input_path, (str, os.PathLike)):
        return
    source = Path(input_path).resolve()
    folder = source if source.is_dir() else source.parent
    if folder == Path.cwd().resolve():
        return
    for p in paths:
        if p is not None and Path(p).resolve().is_relative_to(folder):
            from graphrelease.errors import ReleaseWarning

            warnings.warn(f"{p} will be written inside the private input's directory {folder}; keep releases and "
                          "keys apart from the data they protect", ReleaseWarning, stacklevel=3)
