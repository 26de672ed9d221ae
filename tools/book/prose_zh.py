"""The Chinese edition's prose, measured: density, meta-parentheticals, translationese, punctuation.

The Chinese pages read as good Chinese; what holds them back is density and talk about the book's
own checks. This script counts, per part of the edition (the parts of ``tools/book/prose_stats.py``:
chapters, the labs' Markdown cells, the other pages, the captions and alt texts):

* ``sentences`` and their mean length in characters (``chars/sent``; whitespace not counted,
  inline code and math one character each), and the sentences over ``LONG`` characters;
* paragraphs that hold ``COLONS`` or more full-width colons (a colon chain: a list or short
  sentences read better);
* meta-parentheticals: remarks about the book's asserts and tests inside the prose, such as
  "（断言）", "（每个种子都断言）", "，这已检验", "有测试检验", "代码断言了", and 守卫/守护 used of
  checks (``META``). The reference page says how the book is checked; a claim need not say it;
* translationese: 进行, 对于;
* the punctuation errors of ``tools/book/terms_zh.py``'s ``PUNCTUATION`` (ASCII commas inside
  Chinese parentheses, 「」, "0.1 %"), and en dashes between Chinese words, also in the strings
  of HTML attributes (the explorer's).

Sentences end at 。！？ (with closing quotes or brackets); a paragraph, a list item, a caption
and an alt text end one too. A sentence without a Chinese character (an English quotation) is left
out.

Usage::

    python -m tools.book.prose_zh              # one row per measure, one column per part
    python -m tools.book.prose_zh --where      # then every place, as file:line: excerpt
    python -m tools.book.prose_zh --root DIR   # the book in another checkout (an older commit's)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.prose_stats import PARTS, ROOT, paragraphs, prose
from tools.book.terms_zh import PUNCTUATION, pad

LONG = 150  # characters: a sentence longer than this is hard to hold in mind
COLONS = 3  # full-width colons in one paragraph
SENTENCE_END = re.compile(r"[。！？]+[”’」』）)]*")
CJK = r"[\u4e00-\u9fff]"

# Remarks about the book's own checks: a parenthetical that names an assert (断言), a check (检验,
# 有检查) or the tests (测试里, 测试中, 测试检查), then the same remarks as clauses.
META = {
    "（…断言/检验/测试…）": r"（[^（）]*(?:断言|检验|有检查|测试(?:里|中|检查))[^（）]*）",
    "有测试检验": r"(?:都|也|同样)?(?:逐条)?(?:有|由)(?:包的)?测试(?:检验|检查|断言)",
    "代码断言了": r"(?:代码|测试|笔记本)(?:最后一行)?断言了",
    "已检验": r"(?:这)?已(?:经)?检验(?:过)?",
    "守卫/守护": r"守卫|守护",
}
TRANSLATIONESE = {"进行": r"进行", "对于": r"对于"}
EN_DASH = re.compile(rf"{CJK}\s*–\s*{CJK}")


def sentences(paragraph: str) -> list[str]:
    """The sentences of one Chinese paragraph."""
    out, start = [], 0
    for m in SENTENCE_END.finditer(paragraph):
        out.append(paragraph[start:m.end()].strip())
        start = m.end()
    out.append(paragraph[start:].strip())
    return [s for s in out if re.search(CJK, s)]  # an English quotation is no Chinese sentence


def length(sentence: str) -> int:
    """Characters of a sentence, whitespace not counted."""
    return len(re.sub(r"\s", "", sentence))


def _patterns() -> dict[str, re.Pattern[str]]:
    rows = {f"meta: {k}": v for k, v in META.items()}
    rows |= {f"translationese: {k}": v for k, v in TRANSLATIONESE.items()}
    rows |= {f"punctuation: {k}": v for k, v in PUNCTUATION.items()}
    return {k: re.compile(v) for k, v in rows.items()} | {"punctuation: en dash between Chinese": EN_DASH}


PATTERNS = _patterns()
MEASURES = ("sentences", "chars/sent", f"sentences > {LONG} chars", f"paragraphs >= {COLONS} colons")


def _meta_free(para: str) -> str:
    """A paragraph with its meta-parentheticals taken out, so that a clause inside one is not
    counted twice."""
    return re.sub(META["（…断言/检验/测试…）"], "（）", para)


def places(path: Path, part: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """(measure, ``file:line: excerpt``) for every long sentence, colon-heavy paragraph, meta
    remark, translationese word and punctuation error of one Chinese file."""
    spec = PARTS[part]
    text = spec.text(path.read_text(encoding="utf-8"))
    name = path.relative_to(root) if path.is_relative_to(root) else path
    out = []
    for line, para in paragraphs(prose(text, "X", figure="图 X"), spec.per_line):
        out += [(MEASURES[2], f"{name}:{line}: {length(s)} chars: {s[:30]!r}")
                for s in sentences(para) if length(s) > LONG]
        if para.count("：") >= COLONS:
            out.append((MEASURES[3], f"{name}:{line}: {para.count('：')} colons: {para[:30]!r}"))
        for key, pattern in PATTERNS.items():
            if key.startswith(("meta:", "translationese:")):
                plain = _meta_free(para) if "（" not in key else para
                out += [(key, f"{name}:{line}: {plain[max(0, m.start() - 12):m.end() + 12]!r}")
                        for m in pattern.finditer(plain)]
    # Punctuation also in HTML attributes: the explorer's strings are read too.
    for line, para in paragraphs(prose(text, "X", figure="图 X", tags=True), spec.per_line):
        for key, pattern in PATTERNS.items():
            if key.startswith("punctuation:"):
                out += [(key, f"{name}:{line}: {para[max(0, m.start() - 12):m.end() + 12]!r}")
                        for m in pattern.finditer(para)]
    return out


def count(root: Path = ROOT) -> tuple[dict[str, dict[str, float]], list[tuple[str, str]]]:
    """Each measure per part of the Chinese edition, and every place found."""
    rows = [*MEASURES, *PATTERNS]
    table: dict[str, dict[str, float]] = {r: dict.fromkeys(PARTS, 0) for r in [*rows, "chars"]}
    found: list[tuple[str, str]] = []
    for part, spec in PARTS.items():
        for path in spec.files(root, lang="zh"):
            body = prose(spec.text(path.read_text(encoding="utf-8")), "X", figure="图 X")
            for _, para in paragraphs(body, spec.per_line):
                lengths = [length(s) for s in sentences(para)]
                table["sentences"][part] += len(lengths)
                table["chars"][part] += sum(lengths)
            for key, where in places(path, part, root):
                table[key][part] += 1
                found.append((key, where))
    for part in PARTS:
        n = table["sentences"][part]
        table["chars/sent"][part] = table["chars"][part] / n if n else 0.0
    return table, found


def render(table: dict[str, dict[str, float]]) -> str:
    parts = list(PARTS)
    width = max(len(pad(r, 0)) for r in table) + 6
    out = [pad("measure", width) + "  " + "  ".join(f"{p:>8}" for p in [*parts, "total"])]
    for name, row in table.items():
        if name == "chars":
            continue
        if name == "chars/sent":
            n, c = sum(table["sentences"].values()), sum(table["chars"].values())
            cells = [f"{row[p]:.1f}" for p in parts] + [f"{c / n if n else 0:.1f}"]
        else:
            cells = [f"{row[p]:.0f}" for p in parts] + [f"{sum(row.values()):.0f}"]
        out.append(pad(name, width) + "  " + "  ".join(f"{c:>8}" for c in cells))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book.prose_zh", description=__doc__.split("\n")[0])
    parser.add_argument("--where", action="store_true", help="list every place found")
    parser.add_argument("--root", type=Path, default=ROOT, help="measure the book in this checkout instead")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    table, found = count(args.root.resolve())
    print(render(table))
    if args.where:
        for name in table:
            if where := [w for t, w in found if t == name]:
                print(f"\n{name}: {len(where)}")
                print("\n".join(f"  {w}" for w in where))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
