"""Root conftest: applies to tests/, to every code block of docs/ and to the doctests in src/.

Any test or book code block marked ``cuda`` (in a chapter: ``<!--pytest.mark.cuda-->``
directly above the fence) is skipped, with its reason, on a machine without CUDA.

One run for two editions: an English code block whose program is the Chinese block's, apart from
comments and assertion messages, with the same expected output and marks
(``tools.codeblocks.same_run``), makes the same run. When the session also runs that Chinese block,
the English block's test checks that sameness (again, from the files) instead of running the program
a second time; the Chinese block's run checks the program. Its report carries the Chinese block's
test id (``same run as``). A block that differs in anything else (a printed string, a number) runs.
"""

from __future__ import annotations

import pytest
import torch

CUDA_REASON = "needs CUDA: torch.cuda.is_available() is False on this machine"


def _skip_cuda(items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


# Tests that share one module fixture costing seconds: the explorer's load the page once per edition.
TOGETHER = ("tests/test_explorer.py::",)


def _together_first(items: list[pytest.Item]) -> None:
    """Put the tests of TOGETHER at the front. pytest-xdist's ``worksteal`` (``make test``) gives the first half of
    the items to the first worker and steals only from the end of a queue: so they run in one worker, which builds
    their fixture once, instead of in both."""
    front = [i for i in items if i.nodeid.startswith(TOGETHER)]
    if front:
        items[:] = front + [i for i in items if not i.nodeid.startswith(TOGETHER)]


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect have chosen the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tools.codeblocks import share_english_runs

    _skip_cuda(items)
    share_english_runs(items)
    _together_first(items)


# The lab notebooks under docs/labs are executed by the site build, not imported as test modules
# (``--doctest-modules`` would otherwise import them).
collect_ignore_glob = ["docs/labs/*.py"]
