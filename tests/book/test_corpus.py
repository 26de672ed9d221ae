"""tools/data/corpus.py: chapter 10's corpus is the text a reader reads, one snapshot per edition."""

from __future__ import annotations

import re

import pytest

from tools.data.corpus import OUT, build, clean, plain_math

CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")

PAGE = '''# 5.1 Title {#title}

Prose with a [link](x.md#a), **bold** and `code`, and math $QK^\\top/\\sqrt{d_k}$.

$$
\\operatorname{softmax}(x)_i = \\frac{e^{x_i}}{\\sum_j e^{x_j}}
$$

| Question | Chapter |
|---|:-:|
| Why $\\sqrt{d_k}$? | 4 |

<!--pytest-codeblocks:cont-->

```python
#| file: src/selfattn/x.py
# a comment, not a heading
print("hi")
```

<!--pytest-codeblocks:expected-output-->

```text
hi
```

??? success "Answer"

    Indented prose.

    ```python
    def f():
        return 1
    ```

After.
'''

CLEAN = '''5.1 Title

Prose with a link, bold and code, and math QKᵀ/√d_k.

Question | Chapter
Why √d_k? | 4

# a comment, not a heading
print("hi")

hi

Answer

Indented prose.

def f():
    return 1

After.
'''


def test_clean_keeps_what_a_reader_reads() -> None:
    assert clean(PAGE) == CLEAN


@pytest.mark.parametrize("lang", sorted(OUT))
def test_snapshot_holds_no_markdown_machinery(lang: str) -> None:
    text = OUT[lang].read_text(encoding="utf-8")
    for machinery in ("<!--", "pytest-codeblocks", "```", "\n??? ", "\n!!! ", "{#"):
        assert machinery not in text, machinery
    assert len(text) > 200_000


@pytest.mark.parametrize("lang", sorted(OUT))
def test_snapshot_is_the_cleaned_book_when_it_was_taken(lang: str) -> None:
    """The snapshot is frozen: it is what the models were trained on (their recorded hash,
    tests/package/test_charlm.py), and a prose edit of chapters 1-9 must not force `make model`.
    It holds the book's chapters in nav order as the cleaner writes them: its opening matches what
    `python -m tools.data.corpus` builds from today's pages, it holds the title line of each of
    chapters 1-7 and 9 in order (chapter 8's pages open with their section titles) (a truncated snapshot fails), it is not larger than today's cleaned book
    by more than a margin, and 90% of its words are in today's book (a snapshot of some other text,
    or of raw Markdown, fails). The book may grow after a snapshot (issue 37 added about 30%: new
    figures and their prose), so no lower bound on its size relative to today's book holds."""
    text, now = OUT[lang].read_text(encoding="utf-8"), build(lang)
    assert text.split("\n", 1)[0].replace(":", "") == now.split("\n", 1)[0].replace(":", "")
    title = "第 {} 章 " if lang == "zh" else "Chapter {}: "
    lines = text.split("\n")
    at = [next((i for i, line in enumerate(lines) if line.startswith(title.format(n))), -1)
          for n in (1, 2, 3, 4, 5, 6, 7, 9)]
    assert -1 not in at and at == sorted(at), f"{OUT[lang].name}: chapter title lines at {at}"
    assert len(text) / len(now) < 1.25, (len(text), len(now))
    words_now = set(now.split())
    share = sum(w in words_now for w in text.split()) / len(text.split())
    assert share > 0.9, f"{OUT[lang].name}: only {share:.0%} of its words are in today's book"


@pytest.mark.parametrize(("tex", "text"), [
    ("d_\\text{model}", "d_model"), ("1/\\sqrt{d_k}", "1/√d_k"), ("n^2", "n²"),
    ("\\sqrt{d_k + 1}", "√(d_k + 1)"), ("10^{-13}", "10^(-13)"), ("-\\infty", "-∞"),
    ("\\operatorname{softmax}(\\frac{QK^\\top}{\\sqrt{d_k}})V", "softmax(QKᵀ/√d_k)V"),
    ("d_k \\ne d_v", "d_k ≠ d_v"), ("\\lVert x \\rVert", "‖ x ‖"),
])
def test_inline_math_becomes_the_text_a_page_shows(tex: str, text: str) -> None:
    assert plain_math(tex) == text


@pytest.mark.parametrize("lang", sorted(OUT))
def test_snapshot_holds_no_latex_and_the_english_one_no_cjk(lang: str) -> None:
    text = OUT[lang].read_text(encoding="utf-8")
    prose = "\n".join(line for line in text.splitlines() if "$" not in line)  # code: f"${x}$"
    for command in ("\\sqrt", "\\frac", "\\text{", "\\top", "\\operatorname", "$$"):
        assert command not in prose, command
    if lang == "en":
        cjk = CJK.findall(text)
        assert not cjk, f"{len(cjk)} CJK characters, the first {''.join(cjk[:20])!r}"
    else:
        assert len(CJK.findall(text)) > 30_000  # the check sees CJK where there is some
