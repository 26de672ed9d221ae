"""The generated package is typed (mypy --strict) and lint-clean (ruff)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_strict_on_the_package() -> None:
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_ruff_on_package_tools_and_tests() -> None:
    dirs = [d for d in ("src", "tools", "tests", "benchmarks") if (ROOT / d).is_dir()]
    run = subprocess.run([sys.executable, "-m", "ruff", "check", *dirs], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
