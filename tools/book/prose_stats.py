"""Sentence shape of the English edition: sentence length, short sentences, and the punctuation.

An English translated from Chinese gives itself away by its rhythm: strings of short flat
statements ("They are ...", "This is checked."). This script measures, per part of the edition:

* ``sents``, ``w/sent``: the sentences and their mean length in words (inline code and inline math
  count as one word of their sentence; a figure citation as "Figure 4.1");
* ``short%``: the share of sentences of fewer than ``SHORT`` (8) words;
* ``runs``: the runs of ``RUN`` (4) or more consecutive sentences of at most ``CHOPPY`` (12) words
  within one paragraph.

It also prints colons, semicolons, parentheses and bold spans per 1,000 words. These are not a
target (a colon before a list is good English), but a sudden rise is worth a look. And it counts
the sentences that open with "This book" or "The book" (column ``book``): the book is not the
subject of its own sentences.

A sentence ends at ".", "!" or "?" before a word that does not start in lower case (not after
"e.g.", "i.e." or "et al."), and at the end of a paragraph, a list item, a caption or an alt text.

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
    python -m tools.book.prose_stats --root DIR      # the book in another checkout (an older commit's)

``tools/book/tics.py`` counts the calques and tics of the same parts, ``tools/book/prose_zh.py`` measures
the Chinese edition.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = re.compile(r"^\d\d-.*\.md$")  # a chapter page of either edition

HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]", re.DOTALL)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]+?(?<![\\\s])\$")
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
URL = re.compile(r"<https?://[^>]*>|https?://\S+")
TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
FIGURE_REF = re.compile(r"\{fig:[^}\s]+\}")  # a figure citation, {fig:weights-heatmap}
ATTRS = re.compile(r"\{:?\s*[#.][^}\n]*\}")  # attribute lists: {#id}, {.class}
SKIP_LINE = re.compile(
    r"^\s*(?:#{1,6}\s|\||(?:\?\?\?\+?|!!!|===)\s|\*\[[^\]]*\]:|:::\s)"
    # heading, table, admonition/tab title, abbreviation, mkdocstrings directive (``::: selfattn.masks``)
)
WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)
# A sentence whose subject is the book: "This book shows ...", "The book's ..." is not one.
BOOK = re.compile(r"(?:^|[.!?:]\s+|\n[ \t]*[-*]?[ \t]*)(?:\*\*)?(?:This|The) book\b(?!['’]s)")
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
    sentences: int = 0
    sentence_words: int = 0  # the words of the sentences, inline code and math one word each
    short: int = 0  # sentences of fewer than SHORT words
    runs: int = 0  # runs of RUN or more sentences of at most CHOPPY words, in one paragraph

    def __add__(self, other: Stats) -> Stats:
        return Stats(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def per_1000(self) -> tuple[float, float]:
        """(colons, semicolons) per 1,000 words."""
        return self.rate(self.colons), self.rate(self.semicolons)

    def rate(self, count: int) -> float:
        """``count`` per 1,000 words (0 for no words)."""
        return 1000 * count / self.words if self.words else 0.0

    def mean_sentence(self) -> float:
        """The mean sentence length in words (0 for no sentence)."""
        return self.sentence_words / self.sentences if self.sentences else 0.0

    def short_share(self) -> float:
        """The share of sentences under ``SHORT`` words, in percent (0 for no sentence)."""
        return 100 * self.short / self.sentences if self.sentences else 0.0


def _keep_lines(repl: str | Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """A replacement that keeps the newlines of what it replaces, so that line numbers survive."""
    def sub(m: re.Match[str]) -> str:
        return (repl if isinstance(repl, str) else repl(m)) + "\n" * m[0].count("\n")
    return sub


def prose(text: str, placeholder: str = " ", figure: str = "Figure X", tags: bool = False) -> str:
    """The prose of a Markdown page: what remains once code, math, tables, headings, admonition
    titles, HTML and link targets are taken out.

    Line ``i`` of the result is line ``i`` of the page (a line taken out is left empty), so that a
    paragraph found in the prose has the page's line number. Inline code and inline math become
    ``placeholder``: a space for counting words, a word (``"X"``) for measuring sentences, where
    ``$d_k$`` is read as one word. A figure citation, ``{fig:NAME}`` or ``[](#fig-NAME)``, becomes
    ``figure``, the words the reader reads ("Figure 4.1"). ``tags``: keep HTML tags, whose
    attributes may hold strings a reader reads (the explorer's)."""
    lines = text.splitlines()
    drop = set()
    for fence in parse_fences(text, ""):
        drop.update(range(fence.start, min(fence.start + len(fence.body) + 2, len(lines))))
    kept = "\n".join("" if i in drop or SKIP_LINE.match(line) else line for i, line in enumerate(lines))

    def link(m: re.Match[str]) -> str:
        return (m[1] if m[1] is not None else m[2]) or figure

    for pattern, repl in (
        (HTML_COMMENT, " "), (INLINE_CODE, placeholder), (DISPLAY_MATH, " "), (INLINE_MATH, placeholder),
        (IMAGE, " "), (LINK, link), (URL, " "), (TAG, " "), (FIGURE_REF, figure), (ATTRS, " "),
    ):
        if pattern is not TAG or not tags:
            kept = pattern.sub(_keep_lines(repl), kept)
    return kept


# A paragraph starts after a blank line or at a list item; its list marker and the indentation
# of an admonition's body are not prose.
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A sentence ends at ".", "!" or "?" (with closing quotes or brackets) before a space and a word
# that does not start in lower case: "e.g. the" goes on. So does an abbreviation before a
# capital: "Vaswani et al. (2017)".
SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]*_]*\s+(?=[^a-z\s])")
ABBREVIATIONS = re.compile(r"(?:\b(?:al|e\.g|i\.e|vs|cf|Fig|Eq|Eqs|No|approx|resp)\.)$")


def paragraphs(body: str, per_line: bool = False) -> list[tuple[int, str]]:
    """(1-based line number, text) of each paragraph of ``prose()`` output: the lines between
    blank lines, each list item on its own. ``per_line``: every non-empty line is a paragraph (a
    figure's caption and its alt text)."""
    out: list[tuple[int, list[str]]] = []
    fresh = True
    for i, line in enumerate(body.splitlines(), 1):
        text = line.strip()
        if not text:
            fresh = True
            continue
        item = LIST_ITEM.match(line)
        if fresh or item or per_line:
            out.append((i, []))
        out[-1][1].append(LIST_ITEM.sub("", line, count=1).strip() if item else text)
        fresh = False
    return [(n, " ".join(ls)) for n, ls in out if re.search(r"\w", " ".join(ls))]


def sentences(paragraph: str) -> list[str]:
    """The sentences of one English paragraph (see ``SENTENCE_END``); those without a word are left
    out."""
    out, start = [], 0
    for m in SENTENCE_END.finditer(paragraph):
        if ABBREVIATIONS.search(paragraph[start:m.start() + 1]):
            continue
        out.append(paragraph[start:m.end()].strip())
        start = m.end()
    out.append(paragraph[start:].strip())
    return [s for s in out if WORD.search(s)]


def choppy_runs(lengths: list[int]) -> list[tuple[int, int]]:
    """(first index, length) of each run of at least ``RUN`` consecutive sentences of at most
    ``CHOPPY`` words, in one paragraph's sentence lengths."""
    found, start = [], None
    for i, n in enumerate([*lengths, CHOPPY + 1]):
        if n <= CHOPPY and start is None:
            start = i
        elif n > CHOPPY and start is not None:
            if i - start >= RUN:
                found.append((start, i - start))
            start = None
    return found


SHORT = 8  # a sentence of fewer words is short
CHOPPY = 12  # a run of RUN or more sentences of at most CHOPPY words reads as a list of statements
RUN = 4


def stats(text: str, per_line: bool = False) -> Stats:
    """Words, colons, semicolons, opening parentheses and bold spans in the prose of one Markdown
    text, and the shape of its sentences (inline code and math count as one word of a sentence)."""
    body = prose(text)
    s = Stats(len(WORD.findall(body)), body.count(":"), body.count(";"), body.count("("),
              len(BOLD.findall(body)), len(BOOK.findall(body)))
    for _, para in paragraphs(prose(text, "X"), per_line):
        lengths = [len(WORD.findall(x)) for x in sentences(para)]
        s.sentences += len(lengths)
        s.sentence_words += sum(lengths)
        s.short += sum(n < SHORT for n in lengths)
        s.runs += len(choppy_runs(lengths))
    return s


def lab_markdown(text: str) -> str:
    """The Markdown cells of a jupytext percent file, with their ``# `` prefix removed. Line ``i``
    is line ``i`` of the file: a line of a code cell, or a cell marker, is left empty."""
    out: list[str] = []
    markdown = False
    for line in text.splitlines():
        if cell := CELL.match(line):
            markdown = "[markdown]" in cell[1]
            out.append("")
        elif markdown:
            out.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        else:
            out.append("")
    return "\n".join(out)


def captions(text: str) -> str:
    """The captions and alt texts of a page's figures. Line ``i`` is line ``i`` of the page: the
    text of a ``#| caption:`` or ``#| alt:`` line, or empty."""
    return "\n".join(m[1] if (m := CAPTION.match(line)) else "" for line in text.splitlines())


def edition(path: Path) -> str:
    """``"en"`` for an English page or lab (``NAME.en.md``, ``NAME.en.py``), else ``"zh"``."""
    return "en" if path.suffixes[-2:-1] == [".en"] else "zh"


def chapters(root: Path = ROOT, lang: str = "en") -> list[Path]:
    """The chapter pages of an edition, ``docs/NN-*.en.md`` or ``docs/NN-*.md``, in file order."""
    return sorted(p for p in (root / "docs").iterdir() if CHAPTER.match(p.name) and edition(p) == lang)


def labs(root: Path = ROOT, lang: str = "en") -> list[Path]:
    """The labs of an edition, ``docs/labs/*.en.py`` or ``docs/labs/*.py``."""
    return sorted(p for p in (root / "docs/labs").glob("*.py") if edition(p) == lang)


def pages(root: Path = ROOT, lang: str = "en") -> list[Path]:
    """The pages of an edition that are not chapters; for English, then the README and
    CONTRIBUTING."""
    others = [p for p in sorted((root / "docs").rglob("*.md"))
              if edition(p) == lang and not CHAPTER.match(p.name)]
    return others + ([root / "README.md", root / "CONTRIBUTING.md"] if lang == "en" else [])


def figure_pages(root: Path = ROOT, lang: str = "en") -> list[Path]:
    """Every page of an edition, for its figures' captions and alt texts."""
    return sorted(p for p in (root / "docs").rglob("*.md") if edition(p) == lang)


@dataclass(frozen=True)
class Part:
    """A part of an edition: the files it reads, and what of a file's text is its prose
    (line-aligned with the file); ``per_line``: each line of that prose is a paragraph."""

    files: Callable[..., list[Path]]
    text: Callable[[str], str]
    per_line: bool = False


def _page(text: str) -> str:
    return text


PARTS = {
    "chapters": Part(chapters, _page),
    "labs": Part(labs, lab_markdown),
    "pages": Part(pages, _page),
    "captions": Part(figure_pages, captions, per_line=True),
}


def measure_file(path: Path, part: str | None = None) -> Stats:
    """The stats of one file: a lab's Markdown cells, a page's prose, or (``captions``) a
    page's captions and alt texts."""
    text = path.read_text(encoding="utf-8")
    if part is None:
        part = "labs" if path.suffix == ".py" else "chapters"
    return stats(PARTS[part].text(text), PARTS[part].per_line)


def measure_parts(root: Path = ROOT) -> dict[str, Stats]:
    """One row per part of the edition (see ``PARTS``)."""
    rows = {}
    for name, part in PARTS.items():
        total = Stats()
        for path in part.files(root):
            total = total + measure_file(path, name)
        rows[name] = total
    return rows


COLUMNS = ("words", "sents", "w/sent", "short%", "runs", "colons/1k", "semis/1k", "parens/1k",
           "bold/1k", "book")


def row(name: str, s: Stats, width: int) -> str:
    values = (s.words, s.sentences, f"{s.mean_sentence():.1f}", f"{s.short_share():.1f}", s.runs,
              *(f"{s.rate(n):.1f}" for n in (s.colons, s.semicolons, s.parens, s.bold)), s.book)
    return f"{name:{width}}  " + "  ".join(f"{v:>{max(len(h), 6)}}" for v, h in zip(values, COLUMNS, strict=True))


def table(rows: dict[str, Stats]) -> str:
    width = max([len(n) for n in rows] + [5])
    out = [f"{'page':{width}}  " + "  ".join(f"{h:>{max(len(h), 6)}}" for h in COLUMNS)]
    total = Stats()
    for name, s in rows.items():
        total = total + s
        out.append(row(name, s, width))
    out.append(row("total", total, width))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.book.prose_stats",
        description="The sentence shape of the English edition's prose: words, sentences, the mean "
                    f"sentence length in words (w/sent), the share of sentences under {SHORT} words "
                    f"(short%%), the runs of {RUN} or more sentences of at most {CHOPPY} words in one "
                    "paragraph (runs); colons, semicolons, parentheses and bold per 1,000 words; the "
                    "sentences that open with 'This book' or 'The book' (book). One row per part "
                    "(chapters, labs, other pages, captions).")
    parser.add_argument("files", nargs="*", type=Path,
                        help="measure these files instead (a .py file is read as a lab)")
    parser.add_argument("--pages", action="store_true", help="one row per file of every part")
    parser.add_argument("--part", choices=list(PARTS), help="one row per file of this part")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="measure the book in this checkout (e.g. an older commit's) instead")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = args.root.resolve()
    if args.files:
        rows = {p.name: measure_file(p) for p in args.files}
    elif args.part:
        rows = {str(p.relative_to(root)): measure_file(p, args.part) for p in PARTS[args.part].files(root)}
    elif args.pages:
        rows = {f"{name}: {p.relative_to(root)}": measure_file(p, name)
                for name, part in PARTS.items() for p in part.files(root)}
    else:
        rows = measure_parts(root)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
