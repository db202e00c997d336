"""Audit reports: HTML (self-contained, inline plots), Markdown and JSON with the same numbers.

An audit report is INTERNAL: it holds non-private statistics of the input. :func:`write_report` refuses to write it
inside a release directory (any directory on the target's path holding ``certificate.json`` or ``manifest.json``, or
one of the audited release directories).

Example
-------
>>> from pathlib import Path
>>> import tempfile, numpy as np
>>> from graphrelease.graph import Graph
>>> from graphrelease.audit.run import run_audit
>>> g, _ = Graph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3]]))
>>> res = run_audit(g, [g], tasks=("statistics",), attacks=())
>>> out = write_report(res, Path(tempfile.mkdtemp()) / "audit.html", plots=False)
>>> sorted(p.suffix for p in out)
['.html', '.json', '.md']
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from graphrelease.errors import OptionError, ReleaseError

FORMATS = ("html", "md", "json")
RELEASE_MARKERS = ("certificate.json", "manifest.json")


def report_paths(path: str | Path, formats: Iterable[str] = FORMATS) -> dict[str, Path]:
    """``x.html`` / ``x.md`` / ``x.json`` beside each other; a directory or suffix-less path gets ``audit.*`` in it."""
    path = Path(path)
    formats = list(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise OptionError(f"unknown report format(s) {bad or formats}; choose from {', '.join(FORMATS)}")
    if path.suffix.lower() in (".html", ".htm", ".md", ".json"):
        base = path.with_suffix("")
    else:
        base = path / "audit"
    return {f: base.with_name(base.name + "." + f) for f in formats}


def check_not_in_release(target: Path, release_dirs: Iterable[str | Path] = ()) -> None:
    """Raise :class:`ReleaseError` if ``target`` would land inside a release directory."""
    resolved = Path(os.path.abspath(target))
    releases = [Path(os.path.abspath(r)) for r in release_dirs if r is not None and Path(r).is_dir()]
    for parent in [resolved.parent, *resolved.parent.parents]:
        if any((parent / m).is_file() for m in RELEASE_MARKERS) or parent in releases:
            raise ReleaseError(
                f"refusing to write the audit report '{target}' inside the release directory '{parent}': the report "
                "holds non-private statistics of the input and must never be published with a release; "
                "choose a path outside it (e.g. --report reports/audit.html)"
            )


def write_report(result: Any, path: str | Path, *, formats: Iterable[str] = FORMATS,
                 release_dirs: Iterable[str | Path] = (), plots: bool = True) -> list[Path]:
    """Write the report files for ``result`` (an ``AuditResult`` or its dict); return the paths written."""
    from graphrelease.report.render import render_html, render_json, render_markdown

    d = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    if not release_dirs and hasattr(result, "releases"):
        release_dirs = [r.get("path") for r in d.get("releases", []) if r.get("path")]
    targets = report_paths(path, formats)
    for t in targets.values():
        check_not_in_release(t, release_dirs)
    renderers = {"html": lambda: render_html(d, make_plots=plots), "md": lambda: render_markdown(d),
                 "json": lambda: render_json(d)}
    written = []
    for fmt_, target in targets.items():
        text = renderers[fmt_]()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
        written.append(target)
    return written
