"""Sentence shape of the English edition: colons, semicolons, parentheses and bold per 1,000 words.

Chinese prose joins clauses with "：" and "；"; carried into English, they make long sentences
that English readers stop at. This script measures how many remain in the English edition's
prose, so that the edit that splits them has a number to aim at (fewer than 12 colons and 5
semicolons per 1,000 words), and how many parentheses and bold spans interrupt it. It also counts
the sentences that open with "This book" or "The book" (column ``book``): the book is not the
subject of its own sentences.

The edition is measured in parts (``PARTS``):

* ``chapters``: the chapter pages, ``docs/NN-*.en.md``;
* ``labs``: the Markdown cells of the English labs, ``docs/labs/*.en.py`` (jupytext percent format);
* ``pages``: the other English pages (preface, glossary, explorer, ``docs/reference/*.en.md``), the
  README and CONTRIBUTING;
* ``captions``: the captions and alt texts of the figures (``#| caption:``, ``#| alt:`` lines).

What counts as prose: the Markdown text, with these taken out first:

* fenced blocks of any kind (code, expected output, consoles), also those indented in admonitions;
* inline code (```` `...` ````), display math (``$$ ... $$``) and inline math (``$ ... $``);
* headings, table rows, admonition and content-tab title lines (``??? note "..."``, ``=== "..."``),
  mkdocstrings directives (``::: selfattn.masks``), HTML comments and tags;
* link targets and bare URLs (the link text stays).

Words are runs of letters and digits (``don't``, ``float16`` and ``top-left`` are one word each).

Usage::

    python -m tools.book.prose_stats                 # one row per part, then the total
    python -m tools.book.prose_stats --pages         # one row per file of every part
    python -m tools.book.prose_stats --part labs     # one row per file of one part
    python -m tools.book.prose_stats docs/07-pitfalls.en.md ...   # these files (labs: .en.py)
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
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
    r"^\s*(?:#{1,6}\s|\||(?:\?\?\?\+?|!!!|===)\s|\*\[[^\]]*\]:|:::\s)"
    # heading, table, admonition/tab title, abbreviation, mkdocstrings directive (``::: selfattn.masks``)
)
WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)
# A sentence whose subject is the book: "This book shows ...", "The book's ..." is not one.
BOOK = re.compile(r"(?:^|[.!?:]\s+|\n\s*[-*]?\s*)(?:\*\*)?(?:This|The) book\b(?!['’]s)")
# A figure's caption and alt text, in a figure block of a page (``#| caption: ...``).
CAPTION = re.compile(r"^\s*#\|\s*(?:caption|alt):\s*(.*)$", re.MULTILINE)
# The start of a cell in a jupytext percent file; Markdown cells are ``# %% [markdown]``.
CELL = re.compile(r"^# %%(.*)$")


@dataclass
class Stats:
    words: int = 0
    colons: int = 0
    semicolons: int = 0
    parens: int = 0
    bold: int = 0
    book: int = 0  # sentences that open with "This book" / "The book"

    def __add__(self, other: Stats) -> Stats:
        return Stats(self.words + other.words, self.colons + other.colons,
                     self.semicolons + other.semicolons, self.parens + other.parens,
                     self.bold + other.bold, self.book + other.book)

    def per_1000(self) -> tuple[float, float]:
        """(colons, semicolons) per 1,000 words."""
        return self.rate(self.colons), self.rate(self.semicolons)

    def rate(self, count: int) -> float:
        """``count`` per 1,000 words (0 for no words)."""
        return 1000 * count / self.words if self.words else 0.0


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
    """Words, colons, semicolons, opening parentheses and bold spans in the prose of one
    Markdown text."""
    body = prose(text)
    return Stats(len(WORD.findall(body)), body.count(":"), body.count(";"), body.count("("),
                 len(BOLD.findall(body)), len(BOOK.findall(body)))


def lab_markdown(text: str) -> str:
    """The Markdown cells of a jupytext percent file, joined, with their ``# `` prefix removed."""
    out: list[str] = []
    markdown = False
    for line in text.splitlines():
        if cell := CELL.match(line):
            markdown = "[markdown]" in cell[1]
            out.append("")
        elif markdown:
            out.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return "\n".join(out)


def captions(text: str) -> str:
    """The captions and alt texts of a page's figures, one paragraph each."""
    return "\n\n".join(CAPTION.findall(text))


def chapters(root: Path = ROOT) -> list[Path]:
    """The English chapter pages, ``docs/NN-*.en.md``, in file order."""
    return sorted(p for p in (root / "docs").iterdir() if CHAPTER.match(p.name))


def labs(root: Path = ROOT) -> list[Path]:
    """The English labs, ``docs/labs/*.en.py``."""
    return sorted((root / "docs/labs").glob("*.en.py"))


def pages(root: Path = ROOT) -> list[Path]:
    """The English pages that are not chapters, then the README and CONTRIBUTING."""
    others = [p for p in sorted((root / "docs").rglob("*.en.md")) if not CHAPTER.match(p.name)]
    return others + [root / "README.md", root / "CONTRIBUTING.md"]


def figure_pages(root: Path = ROOT) -> list[Path]:
    """Every English page, for its figures' captions and alt texts."""
    return sorted((root / "docs").rglob("*.en.md"))


# Each part of the edition: the files it reads, and what of a file's text is its prose.
PARTS = {
    "chapters": (chapters, lambda text: text),
    "labs": (labs, lab_markdown),
    "pages": (pages, lambda text: text),
    "captions": (figure_pages, captions),
}


def measure_file(path: Path, part: str | None = None) -> Stats:
    """The stats of one file: a lab's Markdown cells, a page's prose, or (``captions``) a
    page's captions and alt texts."""
    text = path.read_text(encoding="utf-8")
    if part is None:
        part = "labs" if path.suffix == ".py" else "chapters"
    return stats(PARTS[part][1](text))


def measure_parts(root: Path = ROOT) -> dict[str, Stats]:
    """One row per part of the edition (see ``PARTS``)."""
    rows = {}
    for part, (files, _) in PARTS.items():
        total = Stats()
        for path in files(root):
            total = total + measure_file(path, part)
        rows[part] = total
    return rows


def row(name: str, s: Stats, width: int) -> str:
    rates = "  ".join(f"{s.rate(n):>{len(h)}.1f}" for n, h in
                      zip((s.colons, s.semicolons, s.parens, s.bold), RATES, strict=True))
    return f"{name:{width}}  {s.words:>6}  {s.colons:>6}  {s.semicolons:>6}  {rates}  {s.book:>4}"


RATES = ("colons/1k", "semis/1k", "parens/1k", "bold/1k")


def table(rows: dict[str, Stats]) -> str:
    width = max([len(n) for n in rows] + [5])
    head = f"{'page':{width}}  {'words':>6}  {'colons':>6}  {'semis':>6}  " + "  ".join(RATES) + "  book"
    out = [head]
    total = Stats()
    for name, s in rows.items():
        total = total + s
        out.append(row(name, s, width))
    out.append(row("total", total, width))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.book.prose_stats",
        description="Colons, semicolons, parentheses and bold per 1,000 words of the English "
                    "edition's prose, and the sentences that open with 'This book' or 'The book' "
                    "(book): one row per part (chapters, labs, other pages, captions).")
    parser.add_argument("files", nargs="*", type=Path,
                        help="measure these files instead (a .py file is read as a lab)")
    parser.add_argument("--pages", action="store_true", help="one row per file of every part")
    parser.add_argument("--part", choices=list(PARTS), help="one row per file of this part")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.files:
        rows = {p.name: measure_file(p) for p in args.files}
    elif args.part:
        files, _ = PARTS[args.part]
        rows = {str(p.relative_to(ROOT)): measure_file(p, args.part) for p in files(ROOT)}
    elif args.pages:
        rows = {f"{part}: {p.relative_to(ROOT)}": measure_file(p, part)
                for part, (files, _) in PARTS.items() for p in files(ROOT)}
    else:
        rows = measure_parts()
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
