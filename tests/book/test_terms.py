"""One term per concept in the English edition (``tools/book/terms.py`` scans for the variants), and
the house rules that need a sentence rewritten rather than a word replaced (``REPORTS``).

``python -m tools.book.terms`` prints the hits without failing, then a count per rule.
"""

from __future__ import annotations

from pathlib import Path

from tools.book.terms import all_hits, files, hits

ROOT = Path(__file__).resolve().parents[2]


def test_one_term_per_concept() -> None:
    found = all_hits()
    assert not found, f"{len(found)} variants; use the chosen term:\n" + "\n".join(found)


def test_every_house_rule_holds() -> None:
    from tools.book.terms import all_reports

    broken = {rule: places for rule, places in all_reports().items() if places}
    assert not broken, "\n".join(f"{rule}: {len(places)}\n  " + "\n  ".join(places) for rule, places in broken.items())


def test_the_scan_skips_code_and_finds_variants_in_prose_and_captions() -> None:
    page = (
        "An empty row gives NaN; `fp16 = x` is code, and so is $LN(x)$.\n"
        "See [the heatmap](a/heat-map.md).\n"
        "\n"
        "```python\n"
        "#| label: a-heatmap\n"
        "#| caption: A heat map in fp16.\n"
        "fp16 = 1  # a bitwise copy\n"
        "```\n"
        "\n"
        "    ```text\n"
        "    the explicit path\n"
        "    ```\n"
        "| feed-forward network | 前馈网络（FFN） | the bitwise NOT of a mask |\n"
    )
    found = hits(ROOT / "x.en.md", page)
    assert found == [
        "x.en.md:1: 'empty row' -> 'fully masked row'",
        "x.en.md:6: 'heat map' -> 'heatmap'",
        "x.en.md:6: 'fp16' -> 'float16'",
    ], found
    lab = "# %% [markdown]\n# Pre-normalization, or pre-LN.\n\n# %%\nffn = MLP()\n"
    assert hits(ROOT / "x.en.py", lab) == [
        "x.en.py:2: 'Pre-normalization' -> 'Pre-LN'", "x.en.py:2: 'pre-LN' -> 'Pre-LN'",
    ]


def test_every_english_page_and_lab_is_scanned() -> None:
    scanned = files()
    assert any(p.name == "07-pitfalls.en.md" for p in scanned)
    assert any(p.suffix == ".py" for p in scanned) and ROOT / "README.md" in scanned
    assert not any(p.name.endswith(".md") and not p.name.endswith(".en.md") and p.name != "README.md"
                   for p in scanned)  # CONTRIBUTING names the variants in its style table



# One sentence per chosen term of TERMS that breaks it, and the sentence the house writes instead.
VIOLATIONS = {
    "Common Claims, Corrected": ("See the errata, or erratum 8.", "See Common Claims, Corrected, claim 8."),
    "claim N": ("As common claim 4 says.", "As claim 4 of Common Claims, Corrected says."),
    "collapsed": ("The experiment is folded away below.", "The experiment is collapsed below; log2(e) is folded into it."),
    "top-left, bottom-right": ("It aligns to the bottom right.", "It is aligned bottom-right, not top-left."),
    "PyTorch X.Y": ("With torch 2.13 on the CPU.", "With PyTorch 2.13 on the CPU (`torch==2.13`)."),
    "pytorch/pytorch#N": ("Since pytorch#133882.", "Since pytorch/pytorch#133882."),
    "score matrix": ("One scores matrix per head.", "One score matrix per head; the scores."),
    "plot module": ("The drawing module draws it.", "The plot module draws it."),
    "elementwise": ("It matches element for element.", "It matches elementwise."),
    "nonnegative": ("Weights are non-negative.", "Weights are nonnegative."),
    "American spelling": ("Its neighbours in the batch.", "Its neighbors, in `aria-labelledby` order."),
    "A and B (A et al.)": ("As Press & Wolf show.", "As Press and Wolf show, and Vaswani et al."),
    "Exercise N, Misconception N": ("See exercise 3 and misconception 2.", "See Exercise 3 and Misconception 2."),
    'straight quotes ("...")': ("The word “need”.", 'The word "need", the model\'s.'),
    "unigram baseline": ("Below the unigram entropy.", "Below the unigram baseline."),
}


def test_every_chosen_term_has_a_case_that_breaks_it() -> None:
    from tools.book.terms import TERMS

    assert set(VIOLATIONS) <= set(TERMS)
    for term, (bad, good) in VIOLATIONS.items():
        found = hits(ROOT / "x.en.md", bad + "\n")
        assert found and all(h.endswith(f"-> {term!r}") for h in found), (term, found)
        assert hits(ROOT / "x.en.md", good + "\n") == [], (term, hits(ROOT / "x.en.md", good + "\n"))


def test_admonition_titles_and_html_text_are_prose_but_tags_are_not() -> None:
    page = ('!!! note "“Heads” differ"\n\n<div data-i18n=\'{"a": "“{c}”"}\'></div>\n'
            "<button>Chapter 3’s values</button>\n")
    assert [h.split(": ", 1)[0] for h in hits(ROOT / "x.en.md", page)] == ["x.en.md:1", "x.en.md:1", "x.en.md:4"]


def test_british_spellings_in_the_code_of_a_page_are_found() -> None:
    from tools.book.terms import spelling_hits

    page = '```python\ndef f(x):\n    """Its neighbours; colours."""\n```\n\nNeighbors.\n'
    assert spelling_hits(ROOT / "x.en.md", page) == [
        "x.en.md:3: 'neighbour' -> 'American spelling' (in code)",
        "x.en.md:3: 'colour' -> 'American spelling' (in code)",
    ]
    lab = "# %% [markdown]\n# A behaviour in prose is hits()'s.\n\n# %%\nx = 1  # normalised\n"
    assert spelling_hits(ROOT / "x.en.py", lab) == ["x.en.py:5: 'normalise' -> 'American spelling' (in code)"]


def test_title_case() -> None:
    from tools.book.terms import title_case_problems

    assert title_case_problems("How This Book Is Built and Checked") == []
    assert title_case_problems("8.5 The Online Softmax as a Fused Kernel, in Triton") == []
    assert title_case_problems("Chapter 4: Why Divide by √d_k") == []
    assert title_case_problems("How this book is built and checked") == ["this", "book", "is", "built", "checked"]
    assert title_case_problems("10.7 Appendix: The Code of the charlm Command") == ["charlm"]
    assert title_case_problems("Appendix: the Code Of Multi-head And `selfattn.plot` Today") == [
        "the", "Of", "head", "And"]


def _book(tmp_path: Path, pages: dict[str, str]) -> Path:
    (tmp_path / "docs/labs").mkdir(parents=True)
    (tmp_path / "mkdocs.yml").write_text(
        "plugins:\n  - i18n:\n      languages:\n        - locale: en\n          nav_translations:\n"
        "            第 1 章 问题: \"Chapter 1: The Problem\"\n            前言: Preface\n"
        "nav:\n  - 前言: index.md\n  - 第 1 章 问题:\n      - 1.1–1.3 问题: 01-a.md\n", encoding="utf-8")
    for name, text in pages.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    for name in ("README.md", "CONTRIBUTING.md"):
        (tmp_path / name).write_text("Read me.\n", encoding="utf-8")
    return tmp_path


def test_heading_reports(tmp_path: Path) -> None:
    from tools.book.terms import heading_reports

    chapter = ("# Chapter 1: The problem we solve\n\n## 1.1 Numbered\n\n## Not numbered\n\n## Summary\n\n"
               "## Exercises\n\n1. A listed exercise.\n\n### Exercise 2: no answer\n\nText.\n\n"
               "### Exercise 3: answered\n\n??? success \"Answer\"\n\n    Yes.\n")
    root = _book(tmp_path, {"01-a.en.md": chapter, "index.en.md": "# Preface\n"})
    found = heading_reports(root)
    assert found == {
        "title case": ["docs/01-a.en.md:1: H1 'Chapter 1: The problem we solve': ['problem', 'we', 'solve']"],
        "H1 = nav": ["docs/01-a.en.md:1: H1 'Chapter 1: The problem we solve', nav 'Chapter 1: The Problem'"],
        "numbered sections": ["docs/01-a.en.md:5: '## Not numbered'"],
        "### Exercise N": ["docs/01-a.en.md:11: in a numbered list: '1. A listed exercise.'",
                           "docs/01-a.en.md:13: no answer under '### Exercise 2: no answer'"],
    }, found


def test_line_reports_each_find_what_they_must(tmp_path: Path) -> None:
    from tools.book.terms import REPORTS, line_reports

    page = ("See in 4.4 and section 4.4; it grows to 4.8 times.\n"
            "We draw 2000 pairs, not 2,000 or 20,000; in 2017 Vaswani et al., see #133882.\n"
            "It is 0.1 % and 92.9%.\n"
            "Use 1e-5 or $10^{-5}$; `eps=1e-5` is code.\n"
            "Take $n$ = 1024, or $n = 1024$.\n"
            "Call chunked_attention() or `chunked_attention()`; d_k is math, nn.Linear is code.\n"
            "With B = 1 and $h = 8$.\n"
            "```python\n#| caption: Weights of keys_only() for d_k = 4.\nx = 1\n```\n")
    found = line_reports(tmp_path / "x.en.md", page, tmp_path, numbers={"4.4", "4.8"})
    assert {k: [h.split(": ", 1)[1] for h in v] for k, v in found.items()} == {
        "section N.N": ["'in 4.4'", "'to 4.8'"],
        "2,000": ["'1024'", "'2000'"],
        "92.9%": ["'1 %'"],
        "$10^{-5}$ in prose": ["'1e-5'"],
        "no half-math": ["'$n$ = 1024,'"],
        "backticks": ["'chunked_attention()'", "'nn.Linear'", "'chunked_attention'"],
        "math in $...$": ["'B = 1'"],
    }, found
    assert set(found) == set(REPORTS)


def test_a_glossary_term_no_chapter_uses_is_reported(tmp_path: Path) -> None:
    from tools.book.terms import glossary_hits

    glossary = ("| English | 中文 | Meaning | See |\n|---|---|---|---|\n"
                "| attention weight | 注意力权重 | w | s |\n| unigram entropy | 一元熵 | u | s |\n"
                "| feed-forward network (FFN) | 前馈网络 | f | s |\n")
    root = _book(tmp_path, {"glossary.en.md": glossary,
                            "01-a.en.md": "The attention weights of a feed-forward network.\n"})
    assert glossary_hits(root) == ["docs/glossary.en.md:4: 'unigram entropy'"]


def test_main_prints_a_count_per_rule_and_the_reports(capsys) -> None:
    from tools.book.terms import REPORTS, TERMS, main

    assert main(["--reports"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("\nrule "):].splitlines()[2:]
    assert [line[:40].strip() for line in table] == [*TERMS, "title case", "H1 = nav", "numbered sections",
                                                      "### Exercise N", *REPORTS, "glossary terms in the chapters"]
    assert all(line.split()[-1] == "fails" for line in table)
    assert all(line.split()[-2] == "0" for line in table if line.endswith("fails")), table
