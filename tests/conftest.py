"""Shared fixtures of tests/ (the CUDA skip rule lives in the root conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def site_dir() -> Path:
    """The built site. `make test` builds it first; build it here if it is missing.

    `make test-fast` sets SELFATTN_NO_SITE: it neither builds the site nor reads one that may be stale."""
    if os.environ.get("SELFATTN_NO_SITE"):
        pytest.skip("make test-fast runs without the site (make test builds it and runs this)")
    site = ROOT / "site"
    if not (site / "index.html").exists():
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "NO_MKDOCS_2_WARNING": "1"}
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=ROOT, env=env, check=True)
    return site
