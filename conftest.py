"""Root conftest: applies to tests/, to every code block of docs/ and to the doctests in src/.

Any test or book code block marked ``cuda`` (in a chapter: ``<!--pytest.mark.cuda-->``
directly above the fence) is skipped, with its reason, on a machine without CUDA.

One run for two editions: an English code block whose program is the Chinese block's, apart from
comments and assertion messages, with the same expected output and marks
(``tools.testing.codeblocks.same_run``), makes the same run. When the session also runs that Chinese block,
the English block's test checks that sameness (again, from the files) instead of running the program
a second time; the Chinese block's run checks the program. Its report carries the Chinese block's
test id (``same run as``). A block that differs in anything else (a printed string, a number) runs.
The programs are compared by the digests of their syntax trees (``tools.testing.codeblocks.code_key``).
"""

from __future__ import annotations

import glob
import os

import pytest

# Triton chooses at its import between compiled and interpreted kernels, and torch's own tools import it early
# (torch.utils.flop_counter, the profiler, dispatch modes). Without a GPU only the interpreter runs a kernel: choose
# it before any test or book block can import triton (8.5, selfattn.triton_attention; no torch import here).
if not glob.glob("/dev/nvidia[0-9]*"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

CUDA_REASON = "needs CUDA: torch.cuda.is_available() is False on this machine"


def _skip_cuda(items: list[pytest.Item]) -> None:
    # Imported here, not at the top: pytest-xdist's controller loads this file but collects nothing, and
    # importing torch there (about 3 s on 2 cores) would delay the workers and the background site build.
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


# Tests that share one module fixture costing seconds: the explorer's load the page once per edition.
TOGETHER = ("tests/site/test_explorer.py::",)


def _reads_site(item: pytest.Item) -> bool:
    return "site_dir" in getattr(item, "fixturenames", ())


def _order(items: list[pytest.Item]) -> None:
    """TOGETHER first, then the tests that do not read the built site, then those that do.

    pytest-xdist's ``worksteal`` (``make test``) gives the first half of the items to the first worker and the
    second half to the second, and steals only from the end of a queue. So the tests of TOGETHER run in one
    worker, which builds their fixture once, instead of in both. They read the site, which `make test` builds in
    the background (tests/conftest.py): that worker waits for it while the build takes its core, and the other
    worker runs the tests that do not read the site, which come before those that do in its half."""
    front = [i for i in items if i.nodeid.startswith(TOGETHER)]
    rest = [i for i in items if not i.nodeid.startswith(TOGETHER)]
    items[:] = front + [i for i in rest if not _reads_site(i)] + _pairs([i for i in rest if _reads_site(i)])


def _pairs(items: list[pytest.Item]) -> list[pytest.Item]:
    """Each page's figure text test right after its page test (same ``src``), so that the page test's load of the
    page measures the figures for it (``FIGURE_MEASURES`` in tools/testing/browser.py); the other tests in order."""
    from tools.testing.browser import FIGURE_TEXT_TEST as SECOND
    from tools.testing.browser import PAGE_TEST as FIRST

    def src(item: pytest.Item) -> object:
        return item.callspec.params["src"]  # type: ignore[attr-defined]

    second = {src(i): i for i in items if i.nodeid.startswith(SECOND)}
    firsts = {src(i) for i in items if i.nodeid.startswith(FIRST)}
    out: list[pytest.Item] = []
    for i in items:
        if i.nodeid.startswith(SECOND) and src(i) in firsts:
            continue  # placed after its first test, below
        out.append(i)
        if i.nodeid.startswith(FIRST) and src(i) in second:
            out.append(second[src(i)])
    return out


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect have chosen the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tools.testing.codeblocks import share_english_runs

    _skip_cuda(items)
    share_english_runs(items)
    _order(items)


# The lab notebooks under docs/labs are executed by the site build, not imported as test modules
# (``--doctest-modules`` would otherwise import them).
collect_ignore_glob = ["docs/labs/*.py"]
