"""Every Python block of the book runs, or is skipped explicitly with a reason.

pytest-codeblocks 0.18 collects only fences whose info string is exactly ``python``
(or ``sh``/``bash``). Anything else that looks like Python (``py``, ``python3``,
``python title=...``, ``{.python}``, ``~~~python``) would be skipped *silently*:
these tests make that impossible.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pytest_codeblocks.main import extract_from_file

from tools.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
PYTHONISH = re.compile(r"^\{?\s*\.?(py|python|python3|py3|pycon|ipython|ipython3)\b", re.IGNORECASE)
ALLOWED_MARKS = re.compile(r"^pytest\.mark\.(cuda|skipif\(.+reason\s*=\s*['\"].+['\"]\s*\)|skip\(\s*reason\s*=\s*['\"].+['\"]\s*\))$")


def ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


def test_pages_exist() -> None:
    assert len(PAGES) >= 10


def silently_skipped(text: str) -> list[str]:
    """Python-looking fences that pytest-codeblocks would not run."""
    bad = []
    for fence in parse_fences(text, ""):
        runs = fence.char == "`" and fence.info == "python"
        if not runs and PYTHONISH.match(fence.info):
            bad.append(f"line {fence.start + 1}: {fence.char * 3}{fence.info}")
    return bad


@pytest.mark.parametrize(
    "fence",
    ["```py", "```python3", '```python title="x.py"', "```{.python}", "~~~python", "```pycon", "```python hl_lines=\"2\""],
)
def test_the_detector_catches_each_silent_form(fence: str) -> None:
    close = fence[:3]
    assert silently_skipped(f"# t\n\n{fence}\nprint(1)\n{close}\n") != []


def test_the_detector_accepts_plain_python_and_other_languages() -> None:
    text = "```python\nprint(1)\n```\n\n```text\n1\n```\n\n```console\n$ make test\n```\n"
    assert silently_skipped(text) == []


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_no_python_fence_is_skipped_silently(page: Path) -> None:
    bad = silently_skipped(page.read_text(encoding="utf-8"))
    assert not bad, f"{page.relative_to(ROOT)}: use a bare ```python fence (these are never run): {bad}"


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_every_skip_is_explicit_and_cuda_only(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "pytest-codeblocks:skip" not in text, "use <!--pytest.mark.cuda--> (with its reason) instead of a bare skip"
    assert "expect-exception" not in text and "expect-error" not in text, "assert the exception in the block instead"
    for block in extract_from_file(page):
        for mark in block.marks:
            assert ALLOWED_MARKS.match(mark), f"line {block.lineno}: mark {mark!r} must be cuda or carry a reason"
            assert mark == "pytest.mark.cuda", f"line {block.lineno}: only CUDA-only blocks may be skipped, got {mark!r}"


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_every_python_fence_is_collected(page: Path) -> None:
    """python fences = collected python tests + blocks joined to them with `cont`."""
    text = page.read_text(encoding="utf-8")
    fences = [f for f in parse_fences(text, "") if f.char == "`" and f.info == "python"]
    blocks = [b for b in extract_from_file(page) if b.syntax == "python"]
    lines = text.splitlines()
    conts = 0
    for f in fences:
        k = f.start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and re.match(r"<!--[-\s]*pytest-codeblocks:\s*cont", lines[k].strip()):
            conts += 1
    assert len(blocks) + conts == len(fences), f"{len(fences)} python fences, {len(blocks)} tests + {conts} continuations"


def test_fence_counts_across_the_book() -> None:
    """The whole book: executed + explicitly skipped (CUDA-only) = python fences - continuations."""
    total = sum(1 for p in PAGES for f in parse_fences(p.read_text(encoding="utf-8"), "") if f.char == "`" and f.info == "python")
    blocks = [b for p in PAGES for b in extract_from_file(p) if b.syntax == "python"]
    skipped = [b for b in blocks if b.marks]
    assert total >= len(blocks) > 0
    assert all(b.marks == ["pytest.mark.cuda"] for b in skipped)


VARIES = "# 输出因机器而异"


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_printed_output_is_shown_and_checked(page: Path) -> None:
    """A block that prints shows its output (expected-output), unless it says the output varies by machine."""
    unchecked = [
        b.lineno
        for b in extract_from_file(page)
        if b.syntax == "python"
        and "print(" in b.code
        and b.expected_output is None
        and VARIES not in b.code
        and not b.code.startswith("#| file:")  # module code: it defines functions, it prints nothing when run
    ]
    assert not unchecked, (
        f"{page.relative_to(ROOT)}: blocks at lines {unchecked} print but show no checked output; add "
        f"<!--pytest-codeblocks:expected-output--> and a text fence, or mark timings with the comment {VARIES!r}"
    )
