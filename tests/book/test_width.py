"""No line of a book code block is wider than 88 columns, so no code block scrolls sideways.

Checked: every ```` ```python ```` fence of ``docs/`` (also those indented inside admonitions
and tabs), the expected-output ```` ```text ```` fence that follows it, and the code cells of
the lab notebooks (``docs/labs/*.py``, jupytext percent format). Width is counted in
columns of a monospace font: a wide or full-width character (CJK) counts 2
(``unicodedata.east_asian_width`` in "W" or "F"), as in a terminal and in ruff.
At 1280 px the page's code font shows 88 such columns; tests/site/test_browser.py checks that
in Chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.book.tangle import LINE_WIDTH, parse_fences, width

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
LABS = sorted((ROOT / "docs" / "labs").glob("*.py"))
EXPECTED = re.compile(r"^\s*<!--\s*pytest-codeblocks:\s*expected-output\s*-->\s*$")
# A figure block's caption and alt lines (FIGURES.md) are removed from the code the reader sees.
FIGURE_WORDS = re.compile(r"^\s*#\|\s*(?:caption|alt):")


def book_code_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, line) for every line of a python fence and of its expected output."""
    lines = text.splitlines()
    found = []
    for fence in parse_fences(text, ""):
        k = fence.start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        expected = k >= 0 and bool(EXPECTED.match(lines[k]))
        if (fence.char == "`" and fence.info == "python") or expected:
            kind = "output" if expected else "python"
            found += [
                (fence.start + 2 + i, kind, line)
                for i, line in enumerate(fence.body)
                if not (kind == "python" and FIGURE_WORDS.match(line))
            ]
    return found


def lab_code_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, "lab code", line) for every line of a code cell of a jupytext percent script."""
    found, code = [], False
    for n, line in enumerate(text.splitlines(), start=1):
        if line.startswith("# %%"):
            code = "[markdown]" not in line
        elif code:
            found.append((n, "lab code", line))
    return found


def too_wide(text: str, lab: bool = False) -> list[str]:
    return [
        f"line {n} ({kind}, {width(line)} columns): {line.strip()[:60]}"
        for n, kind, line in (lab_code_lines(text) if lab else book_code_lines(text))
        if width(line) > LINE_WIDTH
    ]


def test_lab_cells_are_told_apart() -> None:
    text = "# %% [markdown]\n# " + "说" * 60 + "\n\n# %%\nx = 1\n" + "y" * 89 + "\n"
    assert [line.split(" (")[0] for line in too_wide(text, lab=True)] == ["line 6"]


def test_width_counts_cjk_as_two_columns() -> None:
    assert width("abc") == 3
    assert width("注意力") == 6
    assert width("ｑ") == 2  # full-width
    assert width("é·→") == 3  # narrow and ambiguous characters count 1


def test_the_detector_finds_wide_lines_in_code_output_and_admonitions() -> None:
    ok, code_wide, cjk_wide = "x" * 88, "x" * 89, "# " + "注" * 44
    text = (
        f"# t\n\n```python\n{ok}\n{code_wide}\n```\n\n<!--pytest-codeblocks:expected-output-->\n\n"
        f"```text\n{cjk_wide}\n```\n\n??? note \"检验\"\n\n    ```python\n    {code_wide}\n    ```\n\n"
        f"```console\n{code_wide}\n```\n"
    )
    found = too_wide(text)
    assert [f.split(" (")[0] for f in found] == ["line 5", "line 11", "line 17"], found
    assert "output, 90 columns" in found[1]
    figure = f"```python\n#| label: a\n#| caption: {code_wide}\n#| alt: {code_wide}\n#| other: {code_wide}\n```\n"
    assert [f.split(" (")[0] for f in too_wide(figure)] == ["line 5"]  # caption and alt are not shown


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_no_code_line_is_wider_than_88_columns(page: Path) -> None:
    wide = too_wide(page.read_text(encoding="utf-8"))
    assert not wide, f"{page.relative_to(ROOT)}: {len(wide)} code line(s) wider than {LINE_WIDTH} columns:\n  " + "\n  ".join(
        wide
    )


@pytest.mark.parametrize("lab", LABS, ids=[p.relative_to(ROOT).as_posix() for p in LABS])
def test_no_lab_code_line_is_wider_than_88_columns(lab: Path) -> None:
    wide = too_wide(lab.read_text(encoding="utf-8"), lab=True)
    assert not wide, f"{lab.relative_to(ROOT)}: {len(wide)} code line(s) wider than {LINE_WIDTH} columns:\n  " + "\n  ".join(wide)
