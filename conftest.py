"""Root conftest: applies to tests/, to every code block of docs/ and to the doctests in src/.

Any test or book code block marked ``cuda`` (in a chapter: ``<!--pytest.mark.cuda-->``
directly above the fence) is skipped, with its reason, on a machine without CUDA.
"""

from __future__ import annotations

import pytest
import torch

CUDA_REASON = "needs CUDA: torch.cuda.is_available() is False on this machine"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


# The lab notebooks under docs/labs are executed by the site build, not imported as test modules
# (``--doctest-modules`` would otherwise import them).
collect_ignore_glob = ["docs/labs/*.py"]
