"""The reading path (``tools/book/reading_path.py`` measures it): every chapter page keeps its
longest reading block within LIMIT lines, names ``tests/`` at most MAX_TESTS_MENTIONS times in its
prose, and keeps what a reader reads within MAX_BYTES.

The test prints the report (``pytest -s`` shows it; the assertion message repeats it). The pages
listed in OVER_LIMIT are known to be longer today: the list may only shrink, and a listed page
that already meets the limit makes the test fail, so that it is taken off the list.
``python -m tools.book.reading_path`` prints the report without running the tests.
"""

from __future__ import annotations

from tools.book.reading_path import (
    LIMIT,
    LIMITED,
    MAX_BYTES,
    MAX_TESTS_MENTIONS,
    chapter_pages,
    classes,
    count_tests_mentions,
    longest,
    reader_text,
    reading_blocks,
    render_report,
    report_rows,
    room,
)

# Chapter pages longer than LIMIT today. Only shrinks: remove a page once it fits.
OVER_LIMIT: set[str] = set()  # every chapter fits today


def test_counter_sees_what_a_reader_sees() -> None:
    page = "\n".join([
        "```python", "a = 1", "b = 2", "```",                       # 2 lines, read
        '??? note "code"', "", "    ```python", *["    x = 1"] * 9, "    ```",  # collapsed
        '!!! tip "boxed"', "", "    ```python", *["    y = 1"] * 4, "    ```",  # shown
        '=== "tab"', "", "    ```python", *["    z = 1"] * 3, "    ```",      # shown
        "```python", "#| file: src/selfattn/x.py", *["w = 1"] * 30, "```",   # package
        "```python", "#| label: a", "#| caption: c", "fig = 1", "```",   # 1 shown line
        "```text", *["t"] * 40, "```",                              # not python
        '??? note "outer"', "", '    !!! tip "inner"', "",
        "        ```python", *["        u = 1"] * 7, "        ```",  # inside a collapsed box
    ])
    assert reading_blocks(page) == [(1, 2), (20, 4), (28, 3), (66, 1)]
    assert longest(page) == (4, 20)


def test_report_counts_what_a_reader_reads() -> None:
    page = "\n".join([
        "See `tests/test_a.py` and tests/.", "<!-- tests/test_hidden.py -->",
        "```python", "# tests/test_in_code.py", "class Shown:", "    pass", "```",
        '??? note "c"', "", "    Prose in a note: tests/test_b.py.", "",
        "    ```python", "    class Collapsed:", "        pass", "    ```",
        "```python", "#| file: src/selfattn/x.py", "class Package:", "    pass", "```",
        "A mytests/ folder and selfattn.tests/ are not the project's tests/ folder.",
    ])
    assert count_tests_mentions(page) == 4
    assert classes(page) == (["Shown"], ["Package"])


def test_reading_path_report() -> None:
    """Issue 30: print the report; at most MAX_TESTS_MENTIONS of tests/ in each chapter's prose."""
    rows = report_rows()
    text = render_report(rows)
    print("\n" + text)
    assert {"01-problem.md", "01-problem.en.md"} <= set(rows), sorted(rows)
    over = sorted(name for name, r in rows.items()
                  if int(name[:2]) in LIMITED and r["tests"] > MAX_TESTS_MENTIONS)  # type: ignore[operator]
    assert not over, f"the prose names tests/ more than {MAX_TESTS_MENTIONS} time(s): {over}\n{text}"


def test_longest_reading_block_per_chapter() -> None:
    rows = report_rows()
    text = render_report(rows)
    assert {"01-problem.md", "01-problem.en.md"} <= set(rows), sorted(rows)
    limited = {name: r["lines"] for name, r in rows.items() if int(name[:2]) in LIMITED}
    over = {name for name, n in limited.items() if n > LIMIT}
    new = sorted(over - OVER_LIMIT)
    assert not new, f"over {LIMIT} lines in the reading path: {new}\n{text}"
    fixed = sorted(OVER_LIMIT - over)
    assert not fixed, f"now within {LIMIT} lines: take {fixed} off OVER_LIMIT\n{text}"


def test_reader_text_leaves_out_what_is_not_read() -> None:
    page = ("Intro.\n\n??? note \"Code\"\n\n    ```python\n    x = 1\n    ```\n\n    More.\n\n"
            "Shown.\n\n```python\n#| file: src/selfattn/x.py\ny = 2\n```\n\n```python\n"
            "#| label: f\nz = 3\n```\n\n```python\nw = 4\n```\n<!-- hidden -->\n")
    kept = reader_text(page)
    assert "Intro." in kept and "Shown." in kept and "w = 4" in kept, kept
    for gone in ("x = 1", "More.", "y = 2", "z = 3", "hidden"):
        assert gone not in kept, (gone, kept)


def test_chapter_pages_within_their_size() -> None:
    rooms = {p.name: room(p.name, p.read_text(encoding="utf-8")) for p in chapter_pages()}
    print("\n" + "\n".join(f"{name:<28} room {n:>6}" for name, n in rooms.items()))
    over = {name: -n for name, n in rooms.items() if n < 0}
    assert not over, f"reader bytes over {MAX_BYTES} by: {over}"

