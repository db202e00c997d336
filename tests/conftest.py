"""Shared fixtures: the real datasets in ../shared/data (CI clones the repo with shared/ beside it)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("GRAPHRELEASE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def pytest_configure(config: pytest.Config) -> None:
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.is_dir():
        pytest.fail(f"shared data not found at {DATA_DIR}; set GRAPHRELEASE_SHARED_DATA")
    return DATA_DIR
