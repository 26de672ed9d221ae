"""Shared fixtures and the CUDA skip rule.

Any test or book code block marked ``cuda`` (in a chapter: ``<!--pytest.mark.cuda-->``
right above the fence) is skipped, with its reason, on a machine without CUDA.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
CUDA_REASON = "needs CUDA: torch.cuda.is_available() is False on this machine"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def site_dir() -> Path:
    """The built site. `make test` builds it first; build it here if it is missing."""
    site = ROOT / "site"
    if not (site / "index.html").exists():
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "NO_MKDOCS_2_WARNING": "1"}
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=ROOT, env=env, check=True)
    return site
