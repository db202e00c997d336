"""README's main job: `graphrelease demo` releases the embedded Cora graph, verifies it and audits it."""

from __future__ import annotations

import json
import re

import pytest

from cli.app import app
from cli.common import run_cli


@pytest.mark.slow
def test_demo_writes_a_verified_release_and_an_internal_report(tmp_path, capsys):
    assert run_cli(app, ["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "verifies" in out and "INTERNAL" in out
    # Cora at epsilon 2 is too sparse for dp_bter's DP partition: the demo says so twice, before and after the audit
    # (the verdict's "Lost:" list may name the component count first: the joins reach the soft-thresholded released
    # count, 36-59 of Cora's 78 in some releases at this epsilon)
    flat = " ".join(out.split())
    assert "note: one block:" in flat and re.search(r"Lost:(?:(?!Changed:|Kept:).)*input communities", flat)
    release = tmp_path / "release"
    certificate = json.loads((release / "certificate.json").read_text())
    assert certificate["guarantee"] == "proved"
    assert certificate["epsilon"] <= 2.0 + 1e-9
    assert (tmp_path / "release.key").exists() and not (release / "release.key").exists()
    assert (tmp_path / "audit.html").read_text().lstrip().lower().startswith(("<!doctype html>", "<!--"))
    assert not any(p.name.startswith("audit") for p in release.rglob("*"))
