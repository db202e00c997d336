"""The proofs page must travel with the package: a wheel install certifies exactly what a checkout does."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from graphrelease.privacy import proofs

ROOT = Path(__file__).resolve().parents[2]


def test_packaged_page_is_the_docs_page(monkeypatch):
    monkeypatch.delenv("GRAPHRELEASE_PRIVACY_DOCS", raising=False)
    page = proofs.docs_path()
    assert page is not None
    assert page.read_bytes() == (ROOT / "docs" / "privacy.md").read_bytes()
    # An anchor that sound DP-SGD ledgers cite, so certificates read from this very page.
    assert proofs.has_proof("dp-sgd-edge-tuples")


def test_missing_page_means_no_proof(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHRELEASE_PRIVACY_DOCS", str(tmp_path / "absent.md"))
    monkeypatch.setattr(proofs, "__file__", str(tmp_path / "proofs.py"))
    assert proofs.docs_path() is None
    assert not proofs.has_proof("gaussian")


def test_wheel_carries_the_proofs_page(tmp_path):
    pytest.importorskip("setuptools", minversion="68")
    # Build from a copy (symlinks kept as links) so setuptools' build/ directory never lands in the checkout.
    src = tmp_path / "src"
    for name in ("pyproject.toml", "README.md"):
        src.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for name in ("graphrelease", "cli", "docs"):
        shutil.copytree(ROOT / name, src / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("graphrelease-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        packaged = zf.read("graphrelease/privacy/proofs.md")
    # The symlink is dereferenced into real content, byte for byte.
    assert packaged == (ROOT / "docs" / "privacy.md").read_bytes()
