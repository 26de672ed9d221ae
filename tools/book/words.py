"""Words a reader reads: prose words per figure (chapters 1-5), and the fast route's reading time.

Issue 37 asks for about one figure per 400 words of prose in chapters 3-5, and for a fast route
through the book with a reading time for each step. Both are counts of the words a reader reads,
made by one rule, stated here:

* **What is read** of a page: the page without its collapsed ``???`` notes, its titled package
  blocks (``#| file:``), its figure code (``#| label:``) and its HTML comments, as the page budget
  counts it (:func:`tools.book.reading_path.reader_text`).
* **Prose** is what is read without code, math, tables, headings, admonition titles, HTML and
  link targets (:func:`tools.book.prose_stats.prose`).
* **Words.** English: runs of letters and digits (``don't``, ``float16`` and ``top-left`` are one
  word each). Chinese: the Han characters divided by :data:`HAN_PER_WORD` (1.5; an English word
  carries about as much as one and a half Chinese characters), plus each run of Latin letters and
  digits in the Chinese text as one word.
* **Figures**: the figure blocks of a page (``#| label:``).
* **Reading time**: the words of everything read (prose, tables, headings, the shown code and
  its printed output; math is left out) at :data:`WORDS_PER_MINUTE` (200, a slow rate for
  technical text), rounded to whole minutes.

Usage::

    python -m tools.book.words                 # words per figure, chapters 1-5, both editions
    python -m tools.book.words --route         # the fast route's reading time, both editions
    python -m tools.book.words --docs DIR ...  # measure another checkout's docs/ (before/after)
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.prose_stats import DISPLAY_MATH, INLINE_MATH, LINK, TAG, URL, WORD, prose
from tools.book.reading_path import reader_text
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
HAN_PER_WORD = 1.5
WORDS_PER_MINUTE = 200
GOAL = 400  # words of prose per figure, chapters 3-5 (issue 37)
CHAPTERS = (1, 2, 3, 4, 5)
# The fast route (the preface): (what the step is, the page, where the step ends on it: a heading, or None).
ROUTE = (
    ("opening", "01-problem.md", "## 1.1 "),
    ("chapter 3", "03-qkv-formula.md", None),
    ("chapter 5", "05-implementation.md", None),
    ("8.1", "08-multihead.md", None),
    ("explorer", "explorer.md", None),
)


def edition_file(name: str, lang: str) -> str:
    """``03-qkv-formula.md`` in ``lang``: itself in Chinese, ``03-qkv-formula.en.md`` in English."""
    return name if lang == "zh" else name.removesuffix(".md") + ".en.md"


def words(text: str, lang: str) -> float:
    """The words of ``text``: English words, or Chinese characters / HAN_PER_WORD plus Latin words."""
    if lang == "en":
        return float(len(WORD.findall(text)))
    return len(HAN.findall(text)) / HAN_PER_WORD + len(WORD.findall(HAN.sub(" ", text)))


def prose_words(text: str, lang: str) -> float:
    """Words of the prose a reader reads on a page."""
    return words(prose(reader_text(text)), lang)


def read_words(text: str, lang: str) -> float:
    """Words of everything a reader reads on a page (prose, tables, shown code and output), without math."""
    read = reader_text(text)
    for pattern, repl in ((DISPLAY_MATH, " "), (INLINE_MATH, " "), (LINK, lambda m: m[1] or m[2] or ""),
                          (URL, " "), (TAG, " ")):
        read = pattern.sub(repl, read)
    read = re.sub(r"^\s*(`{3,}|~{3,})\S*\s*$", " ", read, flags=re.M)  # the fences' own lines
    return words(read, lang)


def figures(text: str) -> int:
    """The figure blocks of a page (``#| label:``)."""
    return sum(1 for f in parse_fences(text, "") if f.body and f.body[0].startswith("#| label:"))


def chapter_pages(docs: Path) -> list[str]:
    """The Chinese file names of the pages of chapters 1-5 (``03-qkv-formula.md``, ``03-plot-source.md``)."""
    return sorted(p.name for p in docs.glob("0[1-5]-*.md") if not p.name.endswith(".en.md"))


def per_figure(docs: Path = DOCS) -> list[dict[str, object]]:
    """One row per page of chapters 1-5: its figures and prose words in each edition."""
    rows = []
    for name in chapter_pages(docs):
        row: dict[str, object] = {"page": name}
        for lang in ("zh", "en"):
            path = docs / edition_file(name, lang)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            row[f"figures {lang}"] = figures(text)
            row[f"words {lang}"] = prose_words(text, lang)
        rows.append(row)
    return rows


def ratio(w: float, f: int) -> str:
    return f"{w / f:.0f}" if f else "-"


def render_per_figure(rows: list[dict[str, object]]) -> str:
    head = (f"{'page':<28} {'figs':>4} {'words zh':>8} {'per fig':>7} {'figs':>4} {'words en':>8} {'per fig':>7}"
            f"  (words: Chinese = Han characters / {HAN_PER_WORD:g} + Latin words; goal in chapters 3-5: "
            f"<= {GOAL} per figure)")
    out = [head]
    for r in rows:
        fz, wz, fe, we = r["figures zh"], r["words zh"], r["figures en"], r["words en"]
        out.append(f"{r['page']:<28} {fz:>4} {wz:>8.0f} {ratio(wz, fz):>7} {fe:>4} {we:>8.0f} {ratio(we, fe):>7}")  # type: ignore[arg-type]
    return "\n".join(out)


def route_step_text(text: str, end: str | None) -> str:
    """The part of a page a step reads: up to the line that starts with ``end``, or all of it."""
    if end is None:
        return text
    lines = text.splitlines()
    stop = next((i for i, line in enumerate(lines) if line.startswith(end)), len(lines))
    return "\n".join(lines[:stop])


def minutes(n_words: float) -> int:
    """Whole minutes to read ``n_words`` at WORDS_PER_MINUTE (at least 1)."""
    return max(1, math.floor(n_words / WORDS_PER_MINUTE + 0.5))


def route(lang: str, docs: Path = DOCS) -> list[tuple[str, float, int]]:
    """The fast route in ``lang``: (step, words read, minutes) per step."""
    out = []
    for step, name, end in ROUTE:
        text = (docs / edition_file(name, lang)).read_text(encoding="utf-8")
        n = read_words(route_step_text(text, end), lang)
        out.append((step, n, minutes(n)))
    return out


def render_route(docs: Path = DOCS) -> str:
    out = [f"{'step':<10} {'words zh':>8} {'min':>4} {'words en':>8} {'min':>4}"
           f"  (everything read, math left out, at {WORDS_PER_MINUTE} words per minute)"]
    zh, en = route("zh", docs), route("en", docs)
    for (step, wz, mz), (_, we, me) in zip(zh, en, strict=True):
        out.append(f"{step:<10} {wz:>8.0f} {mz:>4} {we:>8.0f} {me:>4}")
    out.append(f"{'total':<10} {sum(r[1] for r in zh):>8.0f} {sum(r[2] for r in zh):>4} "
               f"{sum(r[1] for r in en):>8.0f} {sum(r[2] for r in en):>4}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book.words", description=__doc__.split("\n")[0])
    parser.add_argument("--route", action="store_true", help="the fast route's reading time per step")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs/ folder to measure")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print(render_route(args.docs) if args.route else render_per_figure(per_figure(args.docs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
