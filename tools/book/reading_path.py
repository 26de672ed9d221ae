"""The reading-path report: what a reader reads of each chapter page (issues 19, 30 and 38).

Short blocks in the reading path (issue 19 §4): a block that a reader is meant to read stays short; longer experiment code goes into a
collapsed ``??? note`` block or a lab. "In the reading path" means: a ```` ```python ````
fence that is not a titled package block (first line ``#| file: ...``) and is not inside a
collapsed ``???`` admonition. A fence inside an open ``!!!`` box or a content tab
(``===``) is shown to the reader, so it counts. A figure block's ``#|`` header lines are
removed from the shown code, so they are not counted.

The report gives, per chapter page and edition, the longest such block. Every chapter page
(chapters 1-10) must keep it within LIMIT lines (``tests/book/test_reading_path.py``).

The same pages have a size budget (issues 19 and 38) on what a reader reads: the page's UTF-8
bytes without its collapsed ``???`` notes, its titled package blocks (``#| file:``), its figure
code (blocks whose header starts ``#| label:``) and its HTML comments (:func:`reader_text`). The
limits are MAX_BYTES, per edition; the report prints the room left on each page.

The reading-path report (issue 30) adds, per chapter page and edition:

* ``tests/``: how often the prose names ``tests/`` (a test file or the folder). Prose is the
  Markdown outside fences and outside HTML comments; text in collapsed notes counts, since a
  reader who opens them reads it. The limit is MAX_TESTS_MENTIONS per page: prose says a claim
  is checked, and the reference page "How this book is built and checked" says where.
* ``classes``: the ``class X`` lines that a reader meets in uncollapsed blocks, in two groups:
  ``demo`` (reading-path blocks, as counted above) and ``package`` (uncollapsed titled
  ``#| file:`` blocks, reported separately because they are the package's source). Classes in
  collapsed blocks are not listed. Reported only, not limited.

``SELFATTN_DOCS=/path/to/docs`` measures another checkout's pages (for a before/after table);
``python -m tools.book.reading_path`` prints the report; ``tests/book/test_reading_path.py``
holds the pages to its limits.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
DOCS = Path(os.environ.get("SELFATTN_DOCS") or ROOT / "docs")
LIMIT = 25
CHAPTER = re.compile(r"^(?P<num>\d\d)-[\w-]+(?P<en>\.en)?\.md$")
LIMITED = set(range(1, 11))  # the chapters held to LIMIT: all of them
MAX_TESTS_MENTIONS = 1  # per chapter page, in the prose
TESTS_MENTION = re.compile(r"(?<![\w.-])tests/")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
CLASS = re.compile(r"^\s*class\s+(?P<name>\w+)")
MAX_BYTES = {"zh": 35 * 1024, "en": 40 * 1024}  # 35,840 and 40,960
ADMONITION = re.compile(r"^(?P<indent>[ \t]*)(?P<kind>\?\?\?\+?|!!!|===)\s")


def chapter_pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if CHAPTER.match(p.name))


def containers(lines: list[str], start: int, indent: str) -> list[str]:
    """The admonition/tab markers (``???``, ``!!!``, ``===``) that enclose line ``start``."""
    found = []
    depth = len(indent.expandtabs(4))
    for i in range(start - 1, -1, -1):
        if depth == 0:
            break
        line = lines[i]
        if not line.strip():
            continue
        own = len(line) - len(line.lstrip())
        if own < depth:
            m = ADMONITION.match(line)
            if m is not None:
                found.append(m["kind"])
            depth = own
    return found


def shown_fences(text: str) -> list[tuple[object, bool]]:
    """Every uncollapsed python fence, with True when it is a titled package block."""
    lines = text.splitlines()
    out = []
    for fence in parse_fences(text, ""):
        if fence.char != "`" or fence.info != "python":
            continue
        if any(kind.startswith("???") for kind in containers(lines, fence.start, fence.indent)):
            continue  # collapsed
        out.append((fence, bool(fence.body) and fence.body[0].startswith("#| file:")))
    return out


def reading_blocks(text: str) -> list[tuple[int, int]]:
    """(1-based line, number of shown lines) of every python block in the reading path."""
    out = []
    for fence, titled in shown_fences(text):
        if titled:
            continue  # a titled block: the package's source
        body = list(fence.body)
        while body and body[0].startswith("#|"):
            body.pop(0)  # a figure's header, not shown
        out.append((fence.start + 1, len(body)))
    return out


def longest(text: str) -> tuple[int, int]:
    """(lines, 1-based line) of the longest block in the reading path; (0, 0) if none."""
    return max(((n, line) for line, n in reading_blocks(text)), default=(0, 0))


def prose(text: str) -> str:
    """The page without its fenced blocks and HTML comments: what a reader reads as text."""
    lines = text.splitlines()
    for fence in parse_fences(text, ""):
        end = min(fence.start + len(fence.body) + 2, len(lines))
        for i in range(fence.start, end):
            lines[i] = ""
    return COMMENT.sub("", "\n".join(lines))


def reader_text(text: str) -> str:
    """What a reader reads of a page: no collapsed note, package block, figure code or comment."""
    lines = text.splitlines()
    drop: set[int] = set()
    for i, line in enumerate(lines):
        m = ADMONITION.match(line)
        if m is None or not m["kind"].startswith("???"):
            continue
        depth, j = len(m["indent"].expandtabs(4)), i + 1
        while j < len(lines) and (not lines[j].strip() or
                                  len(lines[j].expandtabs(4)) - len(lines[j].expandtabs(4).lstrip()) > depth):
            j += 1
        drop.update(range(i, j))
    for fence in parse_fences(text, ""):
        if fence.body and fence.body[0].startswith(("#| file:", "#| label:")):
            drop.update(range(fence.start, fence.start + len(fence.body) + 2))
    return COMMENT.sub("", "\n".join(line for i, line in enumerate(lines) if i not in drop))


def reader_bytes(text: str) -> int:
    return len(reader_text(text).encode())


def room(name: str, text: str) -> int:
    """Bytes left under the page's budget (negative: over it)."""
    return MAX_BYTES["en" if name.endswith(".en.md") else "zh"] - reader_bytes(text)


def count_tests_mentions(text: str) -> int:
    """How often the prose names ``tests/`` (``tests/test_x.py``, ``tests/``)."""
    return len(TESTS_MENTION.findall(prose(text)))


def classes(text: str) -> tuple[list[str], list[str]]:
    """The classes defined in uncollapsed blocks: (reading-path demo blocks, titled package blocks)."""
    demo: list[str] = []
    package: list[str] = []
    for fence, titled in shown_fences(text):
        found = [m["name"] for m in map(CLASS.match, fence.body) if m is not None]
        (package if titled else demo).extend(found)
    return demo, package


def report_rows() -> dict[str, dict[str, object]]:
    """Per chapter page: the longest reading block, the tests/ mentions, the classes shown."""
    rows: dict[str, dict[str, object]] = {}
    for p in chapter_pages():
        text = p.read_text(encoding="utf-8")
        n, line = longest(text)
        demo, package = classes(text)
        rows[p.name] = {"lines": n, "at": line, "tests": count_tests_mentions(text),
                        "room": room(p.name, text), "demo": demo, "package": package}
    return rows


def render_report(rows: dict[str, dict[str, object]]) -> str:
    head = (f"{'page':<26} {'block':>5} {'at':>5} {'tests/':>6} {'room':>6}  classes: demo | package"
            f"  (limits: block {LIMIT}, tests/ {MAX_TESTS_MENTIONS}, reader bytes {MAX_BYTES})")
    out = [head]
    for name, r in rows.items():
        limited = int(name[:2]) in LIMITED
        flag = " *" if limited and (r["lines"] > LIMIT or r["tests"] > MAX_TESTS_MENTIONS
                                    or r["room"] < 0) else ""  # type: ignore[operator]
        demo = ", ".join(r["demo"]) or "-"  # type: ignore[arg-type]
        package = ", ".join(r["package"]) or "-"  # type: ignore[arg-type]
        out.append(f"{name:<26} {r['lines']:>5} {r['at']:>5} {r['tests']:>6} {r['room']:>6}  "
                   f"{demo} | {package}{flag}")
    return "\n".join(out)


def main() -> None:
    print(render_report(report_rows()))


if __name__ == "__main__":
    main()
