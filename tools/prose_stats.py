"""Sentence shape of the English edition: colons and semicolons per 1,000 words of prose.

Chinese prose joins clauses with "：" and "；"; carried into English, they make long sentences
that English readers stop at. This script measures how many remain in the chapters' English prose,
so that the edit that splits them has a number to aim at (issue 21: fewer than 12 colons and 5
semicolons per 1,000 words).

What counts as prose: the Markdown text of each English chapter page (``docs/NN-*.en.md``), with
these taken out first:

* fenced blocks of any kind (code, expected output, consoles), also those indented in admonitions;
* inline code (```` `...` ````), display math (``$$ ... $$``) and inline math (``$ ... $``);
* headings, table rows, admonition and content-tab title lines (``??? note "..."``, ``=== "..."``),
  HTML comments and tags;
* link targets and bare URLs (the link text stays).

Words are runs of letters and digits (``don't``, ``float16`` and ``top-left`` are one word each).

Usage::

    python -m tools.prose_stats                 # every English chapter, then the total
    python -m tools.prose_stats docs/07-pitfalls.en.md ...

Prints one row per page (words, colons, semicolons, and both per 1,000 words) and a total row.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, too
from tools.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = re.compile(r"^\d\d-.*\.en\.md$")

HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]", re.DOTALL)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]+?(?<![\\\s])\$")
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
URL = re.compile(r"<https?://[^>]*>|https?://\S+")
TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
ATTRS = re.compile(r"\{:?\s*[#.][^}\n]*\}")  # attribute lists: {#id}, {.class}
SKIP_LINE = re.compile(
    r"^\s*(?:#{1,6}\s|\||(?:\?\?\?\+?|!!!|===)\s|\*\[[^\]]*\]:)"  # heading, table, admonition/tab title, abbr
)
WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")


@dataclass
class Stats:
    words: int = 0
    colons: int = 0
    semicolons: int = 0

    def __add__(self, other: Stats) -> Stats:
        return Stats(self.words + other.words, self.colons + other.colons, self.semicolons + other.semicolons)

    def per_1000(self) -> tuple[float, float]:
        """(colons, semicolons) per 1,000 words."""
        if not self.words:
            return 0.0, 0.0
        return 1000 * self.colons / self.words, 1000 * self.semicolons / self.words


def prose(text: str) -> str:
    """The prose of a Markdown page: what remains once code, math, tables, headings, admonition
    titles, HTML and link targets are taken out."""
    lines = text.splitlines()
    drop = set()
    for fence in parse_fences(text, ""):
        drop.update(range(fence.start, min(fence.start + len(fence.body) + 2, len(lines))))
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop and not SKIP_LINE.match(line))
    for pattern, repl in (
        (HTML_COMMENT, " "), (INLINE_CODE, " "), (DISPLAY_MATH, " "), (INLINE_MATH, " "),
        (IMAGE, " "), (LINK, lambda m: m[1] if m[1] is not None else m[2]), (URL, " "), (TAG, " "), (ATTRS, " "),
    ):
        kept = pattern.sub(repl, kept)
    return kept


def stats(text: str) -> Stats:
    """Words, colons and semicolons in the prose of one Markdown page."""
    body = prose(text)
    return Stats(len(WORD.findall(body)), body.count(":"), body.count(";"))


def chapters(root: Path = ROOT) -> list[Path]:
    """The English chapter pages, ``docs/NN-*.en.md``, in file order."""
    return sorted(p for p in (root / "docs").iterdir() if CHAPTER.match(p.name))


def table(rows: dict[str, Stats]) -> str:
    width = max([len(n) for n in rows] + [5])
    head = f"{'page':{width}}  {'words':>6}  {'colons':>6}  {'semis':>6}  {'colons/1k':>9}  {'semis/1k':>8}"
    out = [head]
    total = Stats()
    for name, s in rows.items():
        total = total + s
        c, sc = s.per_1000()
        out.append(f"{name:{width}}  {s.words:>6}  {s.colons:>6}  {s.semicolons:>6}  {c:>9.1f}  {sc:>8.1f}")
    c, sc = total.per_1000()
    out.append(f"{'total':{width}}  {total.words:>6}  {total.colons:>6}  {total.semicolons:>6}  {c:>9.1f}  {sc:>8.1f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    pages = [Path(a) for a in args] if args else chapters()
    rows = {p.name: stats(p.read_text(encoding="utf-8")) for p in pages}
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
