"""Every Python block of the book runs, or is skipped explicitly with a reason.

pytest-codeblocks 0.18 collects only fences whose info string is exactly ``python``
(or ``sh``/``bash``). Anything else that looks like Python (``py``, ``python3``,
``python title=...``, ``{.python}``, ``~~~python``) would be skipped *silently*:
these tests make that impossible.

pytest-codeblocks ignores indentation: a fence indented 4 spaces under ``??? note "检验"``
or inside a content tab (``=== "..."``) is collected and run like any other, and so are the
markers above it. The guards below therefore count indented fences too, and they compare
line numbers, not just totals, with what pytest-codeblocks collects.
"""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pytest
from pytest_codeblocks.main import extract_from_buffer, extract_from_file

from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
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


SILENT_FORMS = ["```py", "```python3", '```python title="x.py"', "```{.python}", "~~~python", "```pycon", "```python hl_lines=\"2\""]


@pytest.mark.parametrize("fence", SILENT_FORMS)
def test_the_detector_catches_each_silent_form(fence: str) -> None:
    close = fence[:3]
    assert silently_skipped(f"# t\n\n{fence}\nprint(1)\n{close}\n") != []


@pytest.mark.parametrize("fence", SILENT_FORMS)
@pytest.mark.parametrize("container", ['??? note "检验"', '!!! tip "提示"', '=== "PyTorch"'])
def test_the_detector_catches_silent_forms_inside_admonitions_and_tabs(container: str, fence: str) -> None:
    close = fence[:3]
    text = f"# t\n\n{container}\n\n    说明。\n\n    {fence}\n    print(1)\n    {close}\n"
    assert silently_skipped(text) == [f"line 7: {fence}"]


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


def uncollected(text: str) -> tuple[list[int], list[int]]:
    """Python fences that pytest-codeblocks does not collect, and blocks it collects that are no python fence.

    Line numbers (1-based, of the opening fence). A fence right after ``<!--pytest-codeblocks:cont-->``
    is collected as part of the block before it, so it counts as collected.
    """
    lines = text.splitlines()
    fences = {f.start + 1 for f in parse_fences(text, "") if f.char == "`" and f.info == "python"}
    conts = set()
    for line in fences:
        k = line - 2
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and re.match(r"<!--[-\s]*pytest-codeblocks:\s*cont", lines[k].strip()):
            conts.add(line)
    blocks = {b.lineno for b in extract_from_buffer(io.StringIO(text)) if b.syntax == "python"}
    return sorted(fences - blocks - conts), sorted(blocks - fences)


def test_indented_fences_are_collected_and_counted() -> None:
    text = (
        '# t\n\n```python\nx = 1\n```\n\n??? note "检验"\n\n    ```python\n    assert x == 1\n    ```\n\n'
        '=== "A"\n\n    <!--pytest-codeblocks:cont-->\n\n    ```python\n    y = x\n    ```\n'
    )
    blocks = [b for b in extract_from_buffer(io.StringIO(text)) if b.syntax == "python"]
    assert [b.lineno for b in blocks] == [3, 9], "pytest-codeblocks collects the fence in the admonition"
    assert "y = x" in blocks[1].code, "and the cont marker in the tab continues it"
    assert uncollected(text) == ([], [])
    # A fence the tangler's parser sees but pytest-codeblocks would not (a python fence inside a ~~~ fence
    # is the other way round): the guard reports the difference by line.
    assert uncollected("# t\n\n~~~markdown\n```python\nx = 1\n```\n~~~\n") == ([], [4])


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_every_python_fence_is_collected(page: Path) -> None:
    """python fences (indented ones too) = collected python tests + blocks joined to them with `cont`, line by line."""
    missing, extra = uncollected(page.read_text(encoding="utf-8"))
    assert not missing, f"python fences at lines {missing} are not collected by pytest-codeblocks"
    assert not extra, f"pytest-codeblocks collects python blocks at lines {extra} that are no ```python fence"


def test_fence_counts_across_the_book() -> None:
    """The whole book: executed + explicitly skipped (CUDA-only) = python fences - continuations."""
    total = sum(1 for p in PAGES for f in parse_fences(p.read_text(encoding="utf-8"), "") if f.char == "`" and f.info == "python")
    blocks = [b for p in PAGES for b in extract_from_file(p) if b.syntax == "python"]
    skipped = [b for b in blocks if b.marks]
    assert total >= len(blocks) > 0
    assert all(b.marks == ["pytest.mark.cuda"] for b in skipped)


VARIES = {"zh": "# 输出因机器而异", "en": "# output varies by machine"}  # the comment in each edition


def prints(code: str) -> bool:
    """Whether a block writes to stdout: a ``print(`` call, or ``raises(...)`` of selfattn.testing without
    ``show=False`` (it prints the error's message)."""
    if "print(" in code:
        return True
    try:
        tree = ast.parse(code)
    except SyntaxError:  # the block's own test reports it
        return "raises(" in code and "show=False" not in code
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            owner = func.value if isinstance(func, ast.Attribute) else None
            if name != "raises" or (isinstance(owner, ast.Name) and owner.id == "pytest"):
                continue
            show = next((kw.value for kw in node.keywords if kw.arg == "show"), None)
            if not (isinstance(show, ast.Constant) and show.value is False):
                return True
    return False


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("print(1)", True),
        ('with raises(ValueError, "d_model"):\n    f()', True),
        ('with testing.raises(ValueError, "x (y)"):\n    f()', True),
        ('with raises(\n    ValueError,\n    "d_model",\n):\n    f()', True),
        ('with raises(ValueError, "d_model", show=False):\n    f()', False),
        ('with pytest.raises(ValueError):\n    f()', False),
        ("x = 1", False),
    ],
)
def test_the_print_detector(code: str, expected: bool) -> None:
    assert prints(code) is expected


@pytest.mark.parametrize("page", PAGES, ids=ids(PAGES))
def test_printed_output_is_shown_and_checked(page: Path) -> None:
    """A block that prints shows its output (expected-output), unless it says the output varies by machine."""
    unchecked = [
        b.lineno
        for b in extract_from_file(page)
        if b.syntax == "python"
        and prints(b.code)
        and b.expected_output is None
        and not any(v in b.code for v in VARIES.values())
        and not b.code.startswith("#| file:")  # module code: it defines functions, it prints nothing when run
    ]
    assert not unchecked, (
        f"{page.relative_to(ROOT)}: blocks at lines {unchecked} print (print or raises without show=False) but show "
        f"no checked output; add <!--pytest-codeblocks:expected-output--> and a text fence, or mark timings with the "
        f"comment {VARIES['en' if page.stem.endswith('.en') else 'zh']!r}"
    )
