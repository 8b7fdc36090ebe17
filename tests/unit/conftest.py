"""Fixtures for unit tests: a throwaway copy of the project to break on purpose."""

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A copy of matrix.yaml, images/, templates/ and recipes/ in tmp_path (the real tree stays untouched)."""
    for name in ("images", "templates", "recipes"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")
    return tmp_path
