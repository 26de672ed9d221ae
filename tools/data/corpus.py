"""Chapter 10's corpus: the text of chapters 1-9 as a reader reads it, one file per edition.

``docs/labs/data/book.txt`` is built from the Chinese pages, ``docs/labs/data/book.en.txt``
from the English ones, in the order of the nav. :func:`clean` keeps what the rendered page
shows and drops the Markdown machinery around it:

* HTML comments (the test markers ``<!--pytest-codeblocks:...-->`` among them);
* fence lines (```` ```python ````, ```` ``` ````) and a block's ``#|`` option lines (its
  title, figure caption and alt text); the code inside a fence is kept;
* table rules (``|---|---|``) and the outer pipes of a table row;
* admonition syntax: ``??? note "Title"`` becomes ``Title``, and its body loses the four
  spaces of indentation;
* heading marks and anchors: ``## 10.1 Title {#corpus}`` becomes ``10.1 Title``;
* links and inline markup: ``[text](url)`` becomes ``text``; ``**``, inline backticks go;
* LaTeX: a display formula (``$$ ... $$``) is dropped, and inline math becomes the plain
  text the page shows: ``$QK^\\top / \\sqrt{d_k}$`` becomes ``QKᵀ / √d_k``.

Why not keep the LaTeX: a reader sees the rendered formula, never ``\\sqrt{d_k}`` or
``\\operatorname{softmax}\\!\\left(``. Kept, those commands would be a small third language
in the corpus that the model learns to imitate and that no reader writes. Inline math is
turned into text rather than dropped, because the prose reads on through it ("the scores
grow with d_k"); the 22 display formulas of the English edition are dropped whole, since
as plain text they are not readable either.

The result holds no CJK character in the English edition (``tests/book/test_corpus.py``). Usage::

    python -m tools.data.corpus           # rewrite both snapshots
    python -m tools.data.corpus --check   # exit 1 if a snapshot differs from today's pages

A snapshot is frozen on purpose: the committed models (``models/``) record its hash, so a
prose edit of chapters 1-9 does not force a retraining. ``make model`` refreshes the
snapshots from today's pages, then retrains the models on them. ``tests/book/test_corpus.py``
checks that each snapshot is the cleaned book (no Markdown machinery, the book's opening,
its size and words within a margin of today's), and ``tests/package/test_charlm.py`` that each
model was trained on the committed snapshot.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tools.site import figures

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("01-problem", "02-rnn-to-attention", "03-qkv-formula", "03-plot-source",
         "04-why-sqrt-dk", "05-implementation", "05-validation-source", "06-verification",
         "06-checks-source", "07-pitfalls", "08-multihead", "08-engineering", "08-long-sequences",
         "08-roadmap", "09-summary")
OUT = {"zh": ROOT / "docs/labs/data/book.txt", "en": ROOT / "docs/labs/data/book.en.txt"}

COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})")
ADMONITION = re.compile(r"^(\?\?\?\+?|!!!)\s+[\w-]+(\s+\"(?P<title>[^\"]*)\")?\s*$")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.*?)(\s*\{[^}]*\})?\s*$")
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\([^)]*\)")
CODE = re.compile(r"`([^`\n]+)`")
TABLE_RULE = re.compile(r"^\|[\s:|-]+\|?\s*$")
MATH = re.compile(r"(?<![\\$])\$(?!\$)(?P<tex>[^$\n]+?)\$")
# LaTeX commands and the character a rendered page shows for them.
SYMBOLS = {
    "top": "ᵀ", "infty": "∞", "times": "×", "cdot": "·", "ne": "≠", "neq": "≠", "le": "≤",
    "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "partial": "∂", "sum": "Σ", "in": "∈", "pm": "±", "odot": "⊙",
    "circ": "∘", "cup": "∪", "ll": "≪", "gg": "≫", "dots": "...", "ldots": "...",
    "cdots": "...", "alpha": "α", "beta": "β", "gamma": "γ", "sigma": "σ", "theta": "θ",
    "varepsilon": "ε", "epsilon": "ε", "lambda": "λ", "mu": "μ", "lVert": "‖", "rVert": "‖",
    "Vert": "‖", "%": "%", "_": "_", "{": "{", "}": "}", ",": " ", ";": " ", " ": " ",
    "!": "", "quad": " ", "qquad": " ", "left": "", "right": "",
}
SUPERSCRIPTS = {"2": "²", "3": "³", "\\top": "ᵀ", "T": "ᵀ"}
GROUP = r"\{(?P<arg>[^{}]*)\}"


def plain_math(tex: str) -> str:
    """Inline LaTeX as the plain text a reader sees: ``QK^\\top`` -> ``QKᵀ``."""
    for _ in range(3):  # nested groups, innermost first
        tex = re.sub(r"\\(?:text|mathrm|mathbf|mathit|mathbb|operatorname)\s*" + GROUP,
                     r"\g<arg>", tex)
        tex = re.sub(r"\\d?frac\s*\{(?P<a>[^{}]*)\}\s*\{(?P<b>[^{}]*)\}", r"\g<a>/\g<b>", tex)
        tex = re.sub(r"\\sqrt\s*" + GROUP,
                     lambda m: "√" + (m["arg"] if re.fullmatch(r"\w+", m["arg"])
                                      else f"({m['arg']})"), tex)
    tex = re.sub(r"\^(\\top\b|\{\\top\}|[23T](?![\w{]))",
                 lambda m: SUPERSCRIPTS[m[1].strip("{}")], tex)
    tex = re.sub(r"\^\{(?P<arg>[^{}]{2,})\}", r"^(\g<arg>)", tex)  # 10^{-13} -> 10^(-13)
    tex = re.sub(r"\\([A-Za-z]+|.)", lambda m: SYMBOLS.get(m[1], m[1]), tex)
    return re.sub(r" {2,}", " ", tex.replace("{", "").replace("}", "")).strip()


def inline(line: str) -> str:
    """Prose without links, bold marks, inline-code backticks and LaTeX."""
    line = MATH.sub(lambda m: plain_math(m["tex"]), LINK.sub(r"\g<text>", line))
    return CODE.sub(r"\1", line).replace("**", "")


def clean(markdown: str) -> str:
    """The text a reader reads on one page (see the module docstring)."""
    out: list[str] = []
    fence, body, math = "", False, False  # open fence ("" outside code); admonition; $$
    for raw in COMMENT.sub("", markdown).splitlines():
        if body and raw.strip() and not raw.startswith("    "):
            body = False  # the admonition's indented body ended
        line = raw[4:] if body else raw
        if fence:
            mark = line.strip()
            if mark.startswith(fence) and mark == mark[0] * len(mark):
                fence = ""
            elif not line.lstrip().startswith("#|"):  # not a block option (title, caption)
                out.append(line.rstrip())
            continue
        formula = line.strip()
        if math:  # inside a display formula: dropped up to its closing $$
            math = not formula.endswith("$$")
            continue
        if formula.startswith("$$"):  # opens one (unless it closes on the same line)
            math = len(formula) == 2 or not formula.endswith("$$")
            continue
        if (m := FENCE.match(line.strip())):
            fence = m["fence"]
            continue
        if (adm := ADMONITION.match(line.strip())):
            out.append(adm["title"] or "")
            body = True
            continue
        if (head := HEADING.match(line)):
            line = head["text"]
        if line.startswith("|"):  # a table row: its cells, or nothing for the |---| rule
            if TABLE_RULE.match(line):
                continue
            line = line.strip().strip("|").strip()
        out.append(inline(line).strip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
    return text + "\n"


def build(lang: str) -> str:
    """The snapshot of one edition: the cleaned pages in nav order, a blank line apart."""
    suffix = ".en.md" if lang == "en" else ".md"
    pages = [(ROOT / "docs" / name).with_suffix("").with_name(name + suffix) for name in PAGES]
    numbers = figures.numbering(ROOT, lang)  # {fig:LABEL} reads "图 3.2" / "Figure 3.2", as on the page
    return "\n".join(clean(figures.resolve(p.read_text(encoding="utf-8"), numbers, lang)) for p in pages)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    stale = []
    for lang, path in OUT.items():
        text = build(lang)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.relative_to(ROOT).as_posix())
        else:
            path.write_text(text, encoding="utf-8")
            print(f"{path.relative_to(ROOT)}: {len(text):,} characters")
    for name in stale:
        print(f"{name} is stale: run `make model` (or `python -m tools.data.corpus`)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
