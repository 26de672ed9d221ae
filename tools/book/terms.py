"""One term per concept in the English edition: the variants of each chosen term, found in the prose.

``TERMS`` maps each concept's chosen term to the variants the English edition must not use for
it. :func:`all_hits` scans the prose of every English page (``docs/**/*.en.md``), the Markdown cells of
every English lab (``docs/labs/*.en.py``), the figures' captions and alt texts (``#| caption:``,
``#| alt:``) and the README, and gives one ``file:line: variant -> chosen term`` per hit
(``tests/book/test_terms.py`` fails on any).

Code is not prose: fenced blocks (except the caption and alt lines of a figure block), inline
code, math, link targets, URLs and HTML comments are taken out before the scan, so an identifier
such as ``fp16`` in code is not a hit. So is Chinese in fullwidth parentheses (the glossary's
中文 column writes ``前馈网络（FFN）``, the Chinese edition's term).

``python -m tools.book.terms`` prints the hits without failing.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.book.prose_stats import ATTRS, CAPTION, CELL, HTML_COMMENT, INLINE_CODE, INLINE_MATH, URL
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]

# chosen term: the variants that name the same thing (regular expressions)
TERMS: dict[str, list[str]] = {
    "fully masked row": [
        r"\bempty rows?\b", r"\b(?:whole|entire) rows? (?:\w+ ){0,2}masked\b",
        r"\bfully masked quer(?:y|ies)\b", r"\b(?:fully|all)-masked\b", r"\brows? all masked\b",
        r"\brows? (?:\w+ ){0,3}(?:is|are) empty\b",
    ],
    "bit for bit": [
        r"\bbitwise\b(?! (?:not|NOT|negation|inversion|complement|and|or))",
        r"\bbit-(?:for-bit|exact|identical)\b",
    ],
    "LayerNorm": [r"(?<![-\w])LN\b", r"\b[Ll]ayer[ -][Nn]orm\w*", r"\b[Ll]ayernorm\b"],
    "Pre-LN": [r"\bpre-LN\b", r"\bpost-LN\b", r"\b[Pp](?:re|ost)-?norm(?:ali[sz]ation)?\b"],
    "feed-forward network": [r"\bFFNs?\b", r"\bMLPs?\b", r"\b[Ff]eed ?forward\b"],
    "boolean mask": [r"\b[Bb]ool(?:-| )masks?\b", r"\b[Bb]ool\b(?![ -]masks?\b)"],
    "explicit implementation": [r"\bexplicit (?:code )?(?:path|version|variant)s?\b"],
    "weighted sum": [r"\bweighted[ -](?:average|mean)s?\b", r"\bweight-averaged\b"],
    "float16": [r"\b[Ff][Pp]16\b"],
    "heatmap": [r"\b[Hh]eat[ -]maps?\b"],
    "example sentence": [r"\bworked example\b"],
}
PATTERNS = [(re.compile(p), term) for term, variants in TERMS.items() for p in variants]

# What prose is not, line by line (the patterns tools/book/prose_stats.py measures the prose with)
REMOVE = [
    HTML_COMMENT,
    INLINE_CODE,
    re.compile(r"\$\$.*?\$\$"),  # display math on one line
    INLINE_MATH,
    re.compile(r"\]\([^)]*\)"),  # link targets (the link's text stays)
    URL,
    ATTRS,  # attribute lists {#id}
    re.compile(r"（[^）]*）"),  # Chinese in fullwidth parentheses
]


def clean(line: str) -> str:
    for pattern in REMOVE:
        line = pattern.sub(" ", line)
    return line


def markdown_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, prose) for every line of a Markdown page outside fences, and for the
    caption and alt lines of its figure blocks."""
    lines = text.splitlines()
    out: dict[int, str] = {}
    code: set[int] = set()
    for fence in parse_fences(text, ""):
        span = range(fence.start, min(fence.start + len(fence.body) + 2, len(lines)))
        code.update(span)
        for i in span:
            if m := CAPTION.match(lines[i]):
                out[i] = m[1]
    in_math = False
    for i, line in enumerate(lines):
        if i in code:
            continue
        if line.strip() == "$$":  # display math over several lines
            in_math = not in_math
            continue
        if not in_math:
            out[i] = line
    return [(i + 1, clean(out[i])) for i in sorted(out)]


def lab_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, prose) for the Markdown cells of a jupytext percent lab."""
    out = []
    markdown = False
    for i, line in enumerate(text.splitlines()):
        if cell := CELL.match(line):
            markdown = "[markdown]" in cell[1]
        elif markdown:
            out.append((i + 1, clean(line[2:] if line.startswith("# ") else line.lstrip("#"))))
    return out


def files(root: Path = ROOT) -> list[Path]:
    """The English pages, the English labs and the README."""
    docs = root / "docs"
    return [*sorted(docs.rglob("*.en.md")), *sorted((docs / "labs").glob("*.en.py")), root / "README.md"]


def hits(path: Path, text: str | None = None) -> list[str]:
    """``file:line: variant -> chosen term`` for every variant in the prose of one file."""
    text = path.read_text(encoding="utf-8") if text is None else text
    lines = lab_lines(text) if path.suffix == ".py" else markdown_lines(text)
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = sorted((n, m.start(), m[0], term)
                   for n, line in lines for pattern, term in PATTERNS for m in pattern.finditer(line))
    return [f"{name}:{n}: {variant!r} -> {term!r}" for n, _, variant, term in found]


def all_hits(root: Path = ROOT) -> list[str]:
    return [h for path in files(root) for h in hits(path)]


def main() -> None:
    print("\n".join(all_hits()) or "no variants")


if __name__ == "__main__":
    main()
