"""One term per concept in the Chinese edition, and its punctuation: the twin of ``terms.py``.

``TERMS`` maps each chosen term of the Chinese edition to the variants it must not use, and
``PUNCTUATION`` the punctuation errors to what the house writes. :func:`all_hits` scans the prose of
every Chinese page (``docs/**/*.md`` but ``*.en.md``), the Markdown cells of every Chinese lab
(``docs/labs/*.py`` but ``*.en.py``) and the figures' captions and alt texts, and gives one
``file:line: variant -> chosen term`` per hit (``tests/book/test_terms_zh.py`` fails on any).

What is not prose is taken out first, as in ``terms.py``: fenced blocks (but a figure's caption and
alt lines), inline code, math, HTML comments, link targets and URLs. Unlike the English scan, text
in full-width parentheses stays, since it is Chinese prose here, and so do HTML tags, whose
attributes hold the explorer's strings. An English gloss right after
its Chinese term is allowed (独热（one-hot）, 损失（loss）), as d2l-zh writes a term the first time.
A quotation keeps its words (:func:`unquoted`): text in “…”, a blockquote, the source's claim quoted
on Common Claims, Corrected, and a table cell without Chinese (the glossary's English column). The
punctuation rules read the quotations too.

``REPORTS`` are the choices that need a reader's judgment, counted until the prose is rewritten:
加权平均 is right only where the text means a weighted average (the output of attention is a
加权和). The report also lists the Chinese variants found in code (a lab's plot titles, a block's
comments): code is rewritten by hand, with its page's parity and output in view.

``python -m tools.book.terms_zh`` prints the hits, then a count per rule; ``--reports`` lists
the places of the report rules; ``--root DIR`` scans another checkout.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.prose_stats import TAG
from tools.book.terms import REMOVE, code_lines, lab_lines, markdown_lines

ROOT = Path(__file__).resolve().parents[2]

# chosen term: the variants that name the same thing (regular expressions)
TERMS: dict[str, list[str]] = {
    "得分": [r"分数"],
    "热力图": [r"热图"],
    "掩蔽": [r"屏蔽"],
    "独热": [r"(?<!独热（)\b[Oo]ne[- ]hot\b"],
    "损失": [r"(?<!损失（)\b[Ll]oss(?:es)?\b"],
    # 空行 reads as "a blank line" to a Chinese reader.
    "整行被掩蔽的行": [r"空行", r"全被掩蔽"],
    "并行计算、顺序计算": [r"并行依赖", r"顺序依赖"],
    # The source tutorial the book corrects is 原教程; a paper is 原论文.
    "原教程": [r"原文"],
    "nat": [r"\bnats\b"],
    # A citation: "Vaswani 等人，2017", "Press 和 Wolf"; not "et al.", "&" or a bare 等.
    "等人，A 和 B": [r"\bet al\b\.?", r"(?<=[A-Za-z]) & (?=[A-Z])",
                   r"\b[A-Z][a-z]+ 等(?!人)(?=\s*[，,（(]?\s*\d{4}|的)"],
    "一元基准": [r"一元熵"],
    # The glossary pairs 加权和 with "weighted sum".
    "加权和 | weighted sum": [r"加权平均\s*\|\s*weighted sum"],
}
PUNCTUATION: dict[str, str] = {
    "ASCII comma in （）": r"（[^（）]*(?:(?<!\d),|,(?!\d{3}))[^（）]*）",
    "“” not 「」": r"[「」]",
    "no space in 0.1%": r"\d\s+%",
}
PATTERNS = [(re.compile(p), term) for term, variants in TERMS.items() for p in variants]
PATTERNS += [(re.compile(p), name) for name, p in PUNCTUATION.items()]
REPORTS: dict[str, str] = {"加权平均 (only for a weighted average)": r"加权平均"}
# Rules that read the whole line, quotations and English cells too.
WHOLE_LINE = {*PUNCTUATION, "加权和 | weighted sum"}
# The English scan drops Chinese in full-width parentheses; here it is the prose. HTML tags stay
# too: the explorer's strings (``data-i18n``) are Chinese a reader reads.
REMOVE_ZH = [p for p in REMOVE if p.pattern != r"（[^）]*）" and p is not TAG]


def files(root: Path = ROOT) -> list[Path]:
    """The Chinese pages and labs."""
    docs = root / "docs"
    return [*sorted(p for p in docs.rglob("*.md") if not p.name.endswith(".en.md")),
            *sorted(p for p in (docs / "labs").glob("*.py") if not p.name.endswith(".en.py"))]


def prose_lines(path: Path, text: str) -> list[tuple[int, str]]:
    """(1-based line number, prose) of a Chinese page or lab, Chinese parentheses kept."""
    lines = lab_lines(text, REMOVE_ZH) if path.suffix == ".py" else markdown_lines(text, REMOVE_ZH)
    return lines


def pad(text: str, width: int) -> str:
    """``text`` padded to ``width`` columns, a CJK character taking 2."""
    return text + " " * (width - sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text))


def _name(path: Path, root: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


# A quotation keeps its words: text in “…”, a blockquote, and the source's claim after **原文：** or
# **原教程：** on Common Claims, Corrected. So does a table cell without Chinese (the glossary's
# English column).
QUOTED = re.compile(r"“[^”]*”")
QUOTE_LINE = re.compile(r"^\s*(?:>|\*\*原(?:文|教程)：\*\*)")
CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


def unquoted(line: str) -> str:
    """A line of Chinese prose without its quotations and its table cells that hold no Chinese."""
    if QUOTE_LINE.match(line):
        return ""
    if line.lstrip().startswith("|"):
        line = "|".join(cell if CJK_CHAR.search(cell) else " " * len(cell) for cell in line.split("|"))
    return QUOTED.sub(lambda m: " " * len(m[0]), line)


def hits(path: Path, text: str | None = None, root: Path = ROOT) -> list[str]:
    """``file:line: variant -> chosen term`` for every variant (outside quotations, see
    :func:`unquoted`) and every punctuation error in one file."""
    text = path.read_text(encoding="utf-8") if text is None else text
    found = sorted((n, m.start(), m[0], term) for n, line in prose_lines(path, text)
                   for pattern, term in PATTERNS
                   for m in pattern.finditer(line if term in WHOLE_LINE else unquoted(line)))
    return [f"{_name(path, root)}:{n}: {variant!r} -> {term!r}" for n, _, variant, term in found]


def all_hits(root: Path = ROOT) -> list[str]:
    return [h for path in files(root) for h in hits(path, root=root)]


# The Chinese variants of TERMS, also looked for in code: a lab's plot titles and a block's comments
# are read too, but code is rewritten by hand, not by a term replacement.
CODE_VARIANTS = [(re.compile(p), term) for term, variants in TERMS.items() for p in variants
                 if re.match(r"[\u4e00-\u9fff]", p) and "|" not in p]


def all_reports(root: Path = ROOT) -> dict[str, list[str]]:
    """Every place each report rule finds, with the line around it, then the Chinese variants of
    ``TERMS`` in the code of the pages and labs (comments and strings)."""
    out: dict[str, list[str]] = {}
    texts = {path: path.read_text(encoding="utf-8") for path in files(root)}
    for name, pattern in REPORTS.items():
        out[name] = [f"{_name(path, root)}:{n}: {line[max(0, m.start() - 12):m.end() + 12].strip()!r}"
                     for path, text in texts.items() for n, line in prose_lines(path, text)
                     for m in re.finditer(pattern, line)]
    out["variants in code (comments, strings)"] = [
        f"{_name(path, root)}:{n}: {m[0]!r} -> {term!r}: {line.strip()[:60]!r}"
        for path, text in texts.items() for n, line in code_lines(path, text)
        for pattern, term in CODE_VARIANTS for m in pattern.finditer(line)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book.terms_zh", description=__doc__.split("\n")[0])
    parser.add_argument("--reports", action="store_true", help="list each place a report rule finds")
    parser.add_argument("--root", type=Path, default=ROOT, help="scan this checkout instead")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = args.root.resolve()
    found = all_hits(root)
    print("\n".join(found) or "no variants")
    reports = all_reports(root)
    if args.reports:
        for name, places in reports.items():
            print(f"\n{name}: {len(places)}")
            print("\n".join(f"  {p}" for p in places))
    print(f"\n{pad('rule', 40)}  count  kind")
    for term in [*TERMS, *PUNCTUATION]:
        n = sum(h.endswith(f"-> {term!r}") for h in found)
        print(f"{pad(term, 40)}  {n:>5}  fails")
    for name, places in reports.items():
        print(f"{pad(name, 40)}  {len(places):>5}  report")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
