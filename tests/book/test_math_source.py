"""No raw control character in the math of any page: the source-level twin of the browser check.

A Python string written without ``r`` turns ``\\t``, ``\\f``, ``\\b``, ``\\r``, ``\\a`` or ``\\v`` into
a control character, and an edit made that way once replaced the ``\\t`` of ``$d_\\text{model}$``
with a TAB. KaTeX reads the TAB as a space and renders "d" with the subscript "e", then "xt": no
error span shows it, so ``tests/site/test_browser.py`` also reads the TeX of every rendered
formula. This test finds the same in the sources, in a second and without a build: every
``$...$`` and ``$$...$$`` of every page of both editions (outside code blocks) and of the labs'
Markdown cells. (``\\n`` turns into a newline, which math may hold; that corruption is out of reach.)
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.book.prose_stats import lab_markdown
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # every control character but the newline
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
INLINE = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")


def shown(tex: str) -> str:
    """TeX with each control character written as its code: ``d_<U+0009>ext{model}``."""
    return CONTROL.sub(lambda c: f"<U+{ord(c[0]):04X}>", tex)


def math_problems(text: str, name: str) -> list[str]:
    """``name:line: U+XXXX in math: '...'`` for each control character in the math of a Markdown
    text (code blocks left out)."""
    lines = text.split("\n")  # not splitlines(): it also breaks at a form feed
    for fence in parse_fences(CONTROL.sub(" ", text), name):
        for i in range(fence.start, min(fence.start + len(fence.body) + 2, len(lines))):
            lines[i] = ""
    text = "\n".join(lines)
    spans = [(text.count("\n", 0, m.start(1)), m[1]) for m in DISPLAY.finditer(text)]
    rest = DISPLAY.sub(lambda m: "\n" * m[0].count("\n"), text)  # the lines stay where they were
    spans += [(rest.count("\n", 0, m.start(1)), m[1]) for m in INLINE.finditer(rest)]
    found = sorted((line + tex.count("\n", 0, c.start()) + 1, f"U+{ord(c[0]):04X} in math: {shown(tex)[:60]!r}")
                   for line, tex in spans for c in CONTROL.finditer(tex))
    return [f"{name}:{line}: {what}" for line, what in found]


def sources() -> dict[str, str]:
    """The Markdown of every page of both editions, and of every lab's Markdown cells."""
    docs = ROOT / "docs"
    out = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(docs.rglob("*.md"))}
    out |= {str(p.relative_to(ROOT)): lab_markdown(p.read_text(encoding="utf-8"))
            for p in sorted((docs / "labs").glob("*.py"))}
    return out


def test_no_control_character_in_math() -> None:
    pages = sources()
    assert len(pages) > 40 and any(name.endswith(".en.py") for name in pages)
    found = [p for name, text in pages.items() for p in math_problems(text, name)]
    assert not found, "raw control characters in math (a Python string without r?):\n" + "\n".join(found)


def test_the_check_finds_a_tab_a_form_feed_and_a_backspace() -> None:
    page = ("A $d_\text{model}$ and $$\n\frac{a}{b}\n$$ and $\beta$.\n\n"
            "```python\nprint('$\t$')\n```\n\nFine: $d_\\text{model}$, $$\n\\frac{a}{b}\n$$, 10 $ and 20 $.\n")
    assert math_problems(page, "x.md") == [
        "x.md:1: U+0009 in math: 'd_<U+0009>ext{model}'",
        "x.md:2: U+000C in math: '\\n<U+000C>rac{a}{b}\\n'",
        "x.md:3: U+0008 in math: '<U+0008>eta'",
    ]
