"""The generated package is typed (mypy --strict), and the repository is lint-clean (ruff check .)."""

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


def test_ruff_on_the_whole_repository() -> None:
    """`ruff check .`, the command CONTRIBUTING gives: the package, tools, tests, benchmarks, the labs and
    models/train.py, with the rules and per-file ignores of pyproject.toml (nothing else is left out)."""
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", ".", "--show-files"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    for path in ("src/selfattn/functional.py", "tools/book/tangle.py", "tests/conftest.py", "docs/labs/scaling.py",
                 "models/train.py", "benchmarks/run.py"):
        assert str(ROOT / path) in checked, f"ruff check . no longer checks {path}"
