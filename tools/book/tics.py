"""Calques and tics of the English edition: phrases that read as translated, counted per part.

A reader of the English edition meets the Chinese source in a few fixed phrases: "one by one"
(逐个), "check with a pen" (用笔验算), "takes out" (取出), "need" as a noun (需求), a clause put
in front ("The appendix explains under [X] how ..."), and the announcement that a claim "is
checked". Each is fine once; repeated, they give the translation away. ``TICS`` holds one
pattern per phrase; the counts come with three measures of the same habit:

* ``only`` per 1,000 words (仅/只 rendered every time);
* sentences that start with "So" (所以);
* paragraphs of 200 words or more (a reference-manual paragraph, where a list or a table reads
  better).

The parts and what counts as prose are those of ``tools/book/prose_stats.py`` (chapters, the labs'
Markdown cells, the other pages with the README and CONTRIBUTING, the captions and alt texts);
inline code and math read as one word ("What `x` is shown in" is found).

Usage::

    python -m tools.book.tics                # one row per tic, one column per part
    python -m tools.book.tics --where        # then every place, as file:line: tic: excerpt
    python -m tools.book.tics --root DIR     # the book in another checkout (an older commit's)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.book.prose_stats import PARTS, ROOT, WORD, paragraphs, prose, sentences

# tic: the pattern that finds it in a paragraph of prose
TICS: dict[str, str] = {
    "one by one": r"\b[Oo]ne by one\b",
    "item by item": r"\b[Ii]tem by item\b",
    "case by case": r"\b[Cc]ase by case\b",
    "word for word": r"\b[Ww]ord for word\b",
    "check with a pen": r"\bwith (?:a )?pen\b",
    "takes out": r"\b[Tt]ak(?:e|es|ing|en) out\b",
    "need as a noun": r"\b(?:[Aa]|[Tt]he|[Tt]his)(?: concrete)? need\b(?! to\b| for\b)",
    "First the head of": r"\bFirst the head of\b",
    # "The appendix explains under [X] how ...", "... shows with code when it does, under [X]."
    "explains under": r"\b(?:[Tt]he appendix|[Aa]n appendix) (?:explains|shows|lists|describes)\b[^.]{0,120}?\bunder\b",
    "What ... is shown in": r"\bWhat\b[^.?!]{1,80}?\b(?:is|are) shown in\b",
    "is told on": r"\b(?:is|are) told (?:on|in)\b",
    "This is checked": (
        r"\b(?:[Tt]his|[Tt]hese|[Tt]hat|[Ii]t|[Bb]oth(?: facts)?|[Aa]ll(?: of this| three)?)"
        r" (?:is|are) (?:checked|asserted|tested)\b"
        r"|\b(?:is|are) checked\.|\b(?:is|are) asserted (?:to|on)\b"),
    "which is asserted": r"\bwhich (?:is|are) (?:asserted|checked)\b",
}
PATTERNS = {name: re.compile(p) for name, p in TICS.items()}
ONLY = re.compile(r"\b[Oo]nly\b")
SO = re.compile(r"^[\"'(*_]*So\b")  # "So the ...", "So, ..."
LONG = 200  # words: a paragraph this long reads as a reference manual
MEASURES = ("only /1k words", "sentences opening So", f"paragraphs >= {LONG} words")


def places(path: Path, part: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """(tic or measure, ``file:line: excerpt``) for every tic of one file, every sentence that
    opens with "So" and every paragraph of ``LONG`` words or more (``only`` is counted by
    :func:`count`)."""
    spec = PARTS[part]
    body = prose(spec.text(path.read_text(encoding="utf-8")), "X")
    name = path.relative_to(root) if path.is_relative_to(root) else path
    out = []
    for line, para in paragraphs(body, spec.per_line):
        for tic, pattern in PATTERNS.items():
            out += [(tic, f"{name}:{line}: {para[max(0, m.start() - 30):m.end() + 30]!r}")
                    for m in pattern.finditer(para)]
        out += [(MEASURES[1], f"{name}:{line}: {s[:60]!r}") for s in sentences(para) if SO.match(s)]
        if (n := len(WORD.findall(para))) >= LONG:
            out.append((MEASURES[2], f"{name}:{line}: {n} words: {para[:50]!r}"))
    return out


def count(root: Path = ROOT) -> tuple[dict[str, dict[str, int]], list[tuple[str, str]]]:
    """The count of each tic and measure per part (``only`` as a count, with the part's words in
    the row ``words``), and every place found."""
    table: dict[str, dict[str, int]] = {t: dict.fromkeys(PARTS, 0) for t in [*TICS, *MEASURES, "words"]}
    found: list[tuple[str, str]] = []
    for part, spec in PARTS.items():
        for path in spec.files(root):
            text = prose(spec.text(path.read_text(encoding="utf-8")))
            table["words"][part] += len(WORD.findall(text))
            table[MEASURES[0]][part] += len(ONLY.findall(text))
            for tic, where in places(path, part, root):
                table[tic][part] += 1
                found.append((tic, where))
    return table, found


def render(table: dict[str, dict[str, int]]) -> str:
    parts = list(PARTS)
    width = max(len(t) for t in table)
    out = [f"{'tic':{width}}  " + "  ".join(f"{p:>8}" for p in [*parts, "total"])]
    words = table["words"]
    for tic, row in table.items():
        if tic == "words":
            continue
        cells = [row[p] for p in parts] + [sum(row.values())]
        if tic == MEASURES[0]:  # a rate: per 1,000 words of the part
            totals = [*[words[p] for p in parts], sum(words.values())]
            out.append(f"{tic:{width}}  " + "  ".join(f"{1000 * c / w if w else 0:>8.1f}"
                                                      for c, w in zip(cells, totals, strict=True)))
        else:
            out.append(f"{tic:{width}}  " + "  ".join(f"{c:>8}" for c in cells))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book.tics", description=__doc__.split("\n")[0])
    parser.add_argument("--where", action="store_true", help="list every place found")
    parser.add_argument("--root", type=Path, default=ROOT, help="count the book in this checkout instead")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    table, found = count(args.root.resolve())
    print(render(table))
    if args.where:
        for tic in table:
            if where := [w for t, w in found if t == tic]:
                print(f"\n{tic}: {len(where)}")
                print("\n".join(f"  {w}" for w in where))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
