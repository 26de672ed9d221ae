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

from collections import defaultdict
from pathlib import Path

import pytest
import torch

CUDA_REASON = "needs CUDA: torch.cuda.is_available() is False on this machine"
EN_SUFFIX = ".en.md"


def _skip_cuda(items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=CUDA_REASON)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


def _check_same_run(zh_path: Path, zh_line: int, en_path: Path, en_line: int) -> None:
    from tools.codeblocks import chains, same_run

    zh = {c.line: c for c in chains(zh_path.read_text(encoding="utf-8"), zh_path.name)}[zh_line]
    en = {c.line: c for c in chains(en_path.read_text(encoding="utf-8"), en_path.name)}[en_line]
    assert same_run(zh, en), f"{en_path.name}:{en_line} is no longer the same program as {zh_path.name}:{zh_line}"


def share_english_runs(items: list[pytest.Item]) -> int:
    """Let each English block that makes the same run as its Chinese block (run in this session) check that
    instead of running again. Returns how many were shared."""
    from tools.codeblocks import chains, same_run

    pages: dict[Path, dict[int, pytest.Item]] = defaultdict(dict)
    for item in items:
        obj = getattr(item, "obj", None)
        if type(item).__name__ == "TestBlock" and getattr(obj, "syntax", "") == "python":
            pages[Path(item.path)][obj.lineno] = item
    shared = 0
    for en_path, en_items in pages.items():
        if not en_path.name.endswith(EN_SUFFIX):
            continue
        zh_path = en_path.with_name(en_path.name.removesuffix(EN_SUFFIX) + ".md")
        zh_items = pages.get(zh_path, {})
        zh = chains(zh_path.read_text(encoding="utf-8"), zh_path.name) if zh_items else []
        en = chains(en_path.read_text(encoding="utf-8"), en_path.name)
        if len(zh) != len(en):  # tests/test_parity.py reports the difference
            continue
        for a, b in zip(zh, en, strict=True):
            if b.line in en_items and a.line in zh_items and same_run(a, b):
                item = en_items[b.line]
                item.runtest = lambda z=zh_path, zl=a.line, e=en_path, el=b.line: _check_same_run(z, zl, e, el)
                item.user_properties.append(("same run as", zh_items[a.line].nodeid))
                shared += 1
    return shared


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect have chosen the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_cuda(items)
    share_english_runs(items)


# The lab notebooks under docs/labs are executed by the site build, not imported as test modules
# (``--doctest-modules`` would otherwise import them).
collect_ignore_glob = ["docs/labs/*.py"]
