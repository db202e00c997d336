"""Audit reports: same numbers in HTML / Markdown / JSON, INTERNAL first line, never inside a release, renders in
headless Chromium without console errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from graphrelease.audit.empirical import run_canary_audit
from graphrelease.testing.reference_mechanisms import randomized_response_train_and_score
from graphrelease.audit.run import run_audit
from graphrelease.errors import OptionError, ReleaseError
from graphrelease.graph import Graph
from graphrelease.io import read_graph
from graphrelease.report import check_not_in_release, report_paths, write_report
from graphrelease.report.render import INTERNAL_NOTICE, fmt, render_html
from tests.audit.test_run import make_release_dir, perturbed, random_like

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def audit_result(data_dir, tmp_path_factory):
    g = read_graph(data_dir / "single" / "citeseer.npz").data
    g = g.induced_subgraph(np.sort(np.argsort(-g.degrees(), kind="stable")[:400]))
    root = tmp_path_factory.mktemp("releases")
    dirs = [
        make_release_dir(root / "a", [perturbed(g, 0.1, 1)], epsilon=4.0, method="fake"),
        make_release_dir(root / "b", [perturbed(g, 0.5, 2)], epsilon=1.0, method="fake"),
        make_release_dir(root / "c", [random_like(g, 3)], epsilon=0.25, method="fake"),
    ]
    small = g.induced_subgraph(np.arange(60))
    emp = run_canary_audit(small, randomized_response_train_and_score(1.0), runs=200, delta=1e-5,
                           claimed_epsilon=1.0, rng=np.random.default_rng(0), label="edge RR eps=1")
    res = run_audit(g, dirs, tasks=("statistics",), attacks=("link_inference", "membership"), empirical=[emp])
    return res, dirs


def test_formats_carry_same_numbers(tmp_path, audit_result):
    res, _ = audit_result
    paths = write_report(res, tmp_path / "out" / "audit.html")
    assert sorted(p.name for p in paths) == ["audit.html", "audit.json", "audit.md"]
    for p in paths:
        first = p.read_text().splitlines()[0]
        assert "INTERNAL" in first, p
    data = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert data["_internal"] == INTERNAL_NOTICE
    d = res.to_dict()
    assert data["table1"] == d["table1"] and data["empirical"] == d["empirical"]
    md = (tmp_path / "out" / "audit.md").read_text()
    html_text = (tmp_path / "out" / "audit.html").read_text()
    for row in d["table1"]:
        for key in ("lcc", "tc", "cpl", "gini", "rede", "mean_relative_error"):
            cell = fmt(row[key])
            assert f"| {cell} |" in md
            assert f">{cell}</td>" in html_text
    auc = d["attacks"][d["table1"][0]["release"]]["link_inference"]["auc"]
    assert fmt(auc) in md and fmt(auc) in html_text
    # Every Table 1 column and every attack metric is defined in the legend.
    for word in ("LCC", "TC", "CPL", "GINI", "REDE", "AUC", "TPR@1%FPR", "eps lower bound"):
        assert word in md
    # Four plots: degree, privacy-utility (3 epsilons), ROC, empirical (no motifs requested).
    assert html_text.count("data:image/png;base64,") == 4
    # The verdict comes first in every format, the same object in all three; Table 1 shows original values.
    assert data["verdict"] == d["verdict"] and len(d["verdict"]["releases"]) == 3
    assert md.index("## Verdict") < md.index("| ")
    assert html_text.index('id="verdict"') < html_text.index("<table")
    # the privacy-utility curve sits inside the verdict section (first image of the page)
    assert html_text.index('id="verdict"') < html_text.index("data:image/png") < html_text.index("</section>")
    orig = d["statistics"]["original"]
    original_row = "| original (values) | " + " | ".join(
        fmt(orig[k]) for k in ("lcc_size", "triangle_count", "cpl", "gini", "rede")) + " | - | - |"
    assert original_row in md
    for r in d["verdict"]["releases"]:
        for text in r["lost"] + r["kept"] + r["changed"]:
            assert text in md and text in html_text


def test_report_paths_and_refusal(tmp_path, audit_result):
    res, dirs = audit_result
    assert report_paths(tmp_path / "r")["json"] == tmp_path / "r" / "audit.json"
    assert report_paths(tmp_path / "x.md")["html"] == tmp_path / "x.html"
    with pytest.raises(OptionError):
        report_paths(tmp_path / "x.html", formats=["pdf"])
    with pytest.raises(ReleaseError, match="inside the release"):
        write_report(res, dirs[0] / "audit.html")
    with pytest.raises(ReleaseError):
        write_report(res, dirs[1] / "graphs" / "deeper" / "audit.html")
    assert not (dirs[1] / "graphs" / "deeper").exists()
    # A directory that is not a release but was named as one is refused too.
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ReleaseError):
        check_not_in_release(plain / "audit.html", [plain])


def _chromium_render(html_path: Path, tmp: Path) -> tuple[Path, str]:
    shot = tmp / "shot.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp / 'profile'}", f"--screenshot={shot}", "--window-size=1280,2000",
         "--enable-logging=stderr", "--v=0", html_path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    return shot, proc.stderr + proc.stdout


_CONSOLE_ERROR = re.compile(r"CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|Failed to load resource|net::ERR_")


def console_errors(log: str) -> list[str]:
    return [ln for ln in log.splitlines() if _CONSOLE_ERROR.search(ln)]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI: apt-get install -y chromium)")
def test_html_renders_in_headless_chromium(tmp_path, audit_result):
    import matplotlib.image as mpimg

    res, _ = audit_result
    write_report(res, tmp_path / "rep" / "audit.html")
    shot, log = _chromium_render(tmp_path / "rep" / "audit.html", tmp_path)
    assert shot.is_file() and shot.stat().st_size > 10_000, log[-2000:]
    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.std() > 0.05  # non-empty, non-uniform
    assert console_errors(log) == [], console_errors(log)
    # The detector is not vacuous: a page with a script error and a missing image is caught.
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>undefined_fn();</script>'
                      "</body></html>")
    _, bad_log = _chromium_render(broken, tmp_path / "b")
    assert console_errors(bad_log), bad_log[-2000:]


_LAYOUT_PROBE = """<script>
const verdict = document.getElementById("verdict");
const first = verdict.querySelector(".verdict-release");
const table = document.querySelector("table");
document.body.setAttribute("data-layout", JSON.stringify({
  width: window.innerWidth, height: window.innerHeight,
  verdict_top: verdict.querySelector("h2").getBoundingClientRect().top,
  first_release_bottom: first.getBoundingClientRect().bottom,
  first_table_top: table.getBoundingClientRect().top}));
</script>"""


def _layout(html_text: str, tmp: Path) -> dict:
    """Lay the page out in headless Chromium at 1280x800 and read back where the verdict is (a probe script
    injected into a copy; the report itself has no scripts)."""
    tmp.mkdir(parents=True, exist_ok=True)
    page = tmp / "probe.html"
    page.write_text(html_text.replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
         "--disable-background-networking", "--disable-component-update", f"--user-data-dir={tmp / 'profile'}",
         "--window-size=1280,800", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    found = re.search(r'data-layout="([^"]*)"', proc.stdout)
    assert found, (proc.stdout[-500:], proc.stderr[-2000:])
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI: apt-get install -y chromium)")
def test_verdict_is_on_the_first_screen(tmp_path, audit_result):
    """A data owner opening the report in a 1280x800 window sees the verdict heading and the whole first release's
    verdict before any table; the same probe on a page where a tall element precedes the verdict reports it
    off-screen."""
    res, _ = audit_result
    (path,) = write_report(res, tmp_path / "rep" / "audit.html", formats=["html"])
    text = path.read_text()
    layout = _layout(text, tmp_path / "a")
    # New headless Chromium counts its window frame in --window-size: a 1280x800 window shows a 1280x657
    # viewport, like a laptop browser; the checks use the viewport actually measured, which is at most 800.
    screen = layout["height"]
    assert layout["width"] == 1280 and 500 < screen <= 800, layout
    assert 0 <= layout["verdict_top"] < 300 and layout["first_release_bottom"] <= screen, layout
    assert layout["first_table_top"] > layout["first_release_bottom"], layout
    pushed = text.replace('<section id="verdict">', '<div style="height:1500px">tall</div><section id="verdict">')
    bad = _layout(pushed, tmp_path / "b")
    assert bad["verdict_top"] > bad["height"], bad


def test_html_without_plots_and_escaping(audit_result):
    res, _ = audit_result
    d = res.to_dict()
    d["notes"] = d["notes"] + ["<script>alert(1)</script>"]
    text = render_html(d, make_plots=False)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert text.splitlines()[0].startswith("<!-- INTERNAL")
