"""The two editions cannot drift: every page has an English edition that runs the same code.

tools/book/parity.py compares, page by page, the Python blocks of the Chinese page and of its English
edition (``NAME.en.md``, ``labs/NAME.en.py``). The tests below run it on the book, and show on
copies that it fails on a one-token change, names the page and the block, and lets only
human-language text differ.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools.book.parity import check, compare, english_path, source_pages

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = source_pages(DOCS)


def test_every_page_and_lab_has_an_english_edition() -> None:
    assert len(PAGES) >= 20, PAGES
    missing = [p.relative_to(ROOT).as_posix() for p in PAGES if not english_path(p).exists()]
    assert not missing, f"pages without an English edition: {missing}"
    orphans = [
        p.relative_to(ROOT).as_posix()
        for p in [*DOCS.rglob("*.en.md"), *DOCS.glob("labs/*.en.py")]
        if not p.with_name(p.name.replace(".en.", ".")).exists()
    ]
    assert not orphans, f"English pages without a Chinese page: {orphans}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_english_edition_runs_the_same_code(page: Path) -> None:
    problems = check([page], ROOT)
    assert not problems, "\n".join(problems)


def test_a_one_token_change_fails_and_names_the_page_and_block(tmp_path: Path) -> None:
    """In a temporary copy of chapter 5, change one token of the English edition's code."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("05-implementation.md", "05-implementation.en.md"):
        shutil.copy(DOCS / name, docs / name)
    assert check([docs / "05-implementation.md"], tmp_path) == []
    en = docs / "05-implementation.en.md"
    text = en.read_text(encoding="utf-8")
    assert "softmax(dim=-1)" in text
    en.write_text(text.replace("softmax(dim=-1)", "softmax(dim=-2)", 1), encoding="utf-8")
    problems = check([docs / "05-implementation.md"], tmp_path)
    assert len(problems) == 1, problems
    assert problems[0].startswith("docs/05-implementation.md: block ")
    assert "the code differs" in problems[0]


TITLED = '# A\n\n```python\n#| file: src/selfattn/x.py\ndef f():\n    """Doc."""\n    return "x"  # 一\n```\n'


def test_a_titled_block_may_differ_only_in_comments() -> None:
    assert compare(TITLED, TITLED, "a.md") == []
    assert compare(TITLED, TITLED.replace("# 一", "# one"), "a.md") == []


@pytest.mark.parametrize(
    "old, new",
    [
        ('"""Doc."""', '"""Docs."""'),  # a docstring
        ('return "x"', 'return "y"'),  # a string (the package's strings are English in both)
        ("return", "yield"),  # code
        ("x.py", "y.py"),  # the title
    ],
)
def test_a_changed_titled_block_fails(old: str, new: str) -> None:
    problems = compare(TITLED, TITLED.replace(old, new, 1), "a.md")
    assert problems == [
        "a.md: block 1 (zh line 3, en line 3): a titled block must have the same title, code and strings (comments may differ)"
    ]


ZH = '''# 标题 {#title}

```python
x = 3  # 注释
print(f"结果：{x:.2f}", "ok")
assert x > 0, "必须为正"
```
<!--pytest-codeblocks:expected-output-->
```text
结果：3.00 ok
```
'''


@pytest.mark.parametrize(
    "en, ok",
    [
        (ZH.replace("# 注释", "# a comment").replace("结果：", "result: ").replace("必须为正", "must be positive"), True),
        (ZH.replace("标题", "Title"), True),  # prose
        (ZH.replace('"ok"', '"OK"'), False),  # an ASCII string is code (a regex, a dtype, "-inf")
        (ZH.replace('"ok"', '"d/a.txt"'), False),
        (ZH.replace('"ok"', '"d/a.en.txt"'), False),  # the Chinese path is "ok", not "d/a.txt"
        (ZH.replace("{x:.2f}", "{x:.3f}"), False),  # a format spec changes what is printed
        (ZH.replace("{x:.2f}", "{x + 1:.2f}"), False),  # the expression inside an f-string is code
        (ZH.replace("x = 3", "x = 4"), False),
        (ZH.replace("<!--pytest-codeblocks:expected-output-->\n", ""), False),  # markers
        (ZH.replace("{#title}", "{#other}"), False),  # anchors that links land on
        (ZH + "\n```python\nprint(1)\n```\n", False),  # one block more
    ],
)
def test_only_human_language_text_may_differ(en: str, ok: bool) -> None:
    assert (compare(ZH, en, "a.md") == []) is ok, compare(ZH, en, "a.md")


def test_an_edition_reads_its_own_data_file() -> None:
    """A path may take the ``.en`` suffix (``book.txt`` -> ``book.en.txt``), nothing else."""
    zh = ZH.replace('"ok"', '"data/book.txt"')
    assert compare(zh, zh.replace("book.txt", "book.en.txt"), "a.md") == []
    assert compare(zh, zh.replace("book.txt", "book.fr.txt"), "a.md") != []
    assert compare(zh, zh.replace("book.txt", "book.txt.en"), "a.md") != []


def test_labs_compare_code_cells(tmp_path: Path) -> None:
    zh = "# %% [markdown]\n# 中文\n\n# %%\n# %matplotlib inline\nx = 1  # 注释\nassert x, '中文'\n"
    en = "# %% [markdown]\n# English\n\n# %%\n# %matplotlib inline\nx = 1  # a comment\nassert x, 'English'\n"
    assert compare(zh, en, "lab.py", lab=True) == []
    assert compare(zh, en.replace("x = 1", "x = 2"), "lab.py", lab=True) != []


FIGURE_ZH = """# 标题

```python
x = 1
```

??? note "{fig:weights} 的代码"

    ```python
    #| label: weights
    #| caption: 每一行之和为 1。
    #| alt: 6×6 热力图。
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("注意力权重")
    ```
"""
FIGURE_EN = (
    FIGURE_ZH.replace("{fig:weights} 的代码", "Code for {fig:weights}")
    .replace("每一行之和为 1。", "Each row sums to 1.")
    .replace("6×6 热力图。", "A 6×6 heatmap.")
    .replace("注意力权重", "attention weights")
)


@pytest.mark.parametrize(
    "en, problem",
    [
        (FIGURE_EN, None),
        (FIGURE_EN.replace("label: weights", "label: scores"), "figure labels differ: weights vs scores"),
        (FIGURE_EN.replace("    #| label: weights\n", ""), "figure labels differ: weights vs no figure"),
        (FIGURE_EN.replace("```python\nx = 1", "```python\n#| label: x\n#| caption: C.\n#| alt: A.\nx = 1"), "figure labels differ: no figure vs x"),
        (FIGURE_EN.replace("    #| alt: A 6×6 heatmap.\n", ""), "figure weights: no alt in the English edition"),
        (FIGURE_EN.replace("Each row sums to 1.", "每一行之和为 1。"), "figure weights: the English caption holds Chinese text"),
        (FIGURE_EN.replace("attention weights", "注意力权重"), "figure weights: the English figure's strings hold Chinese text: ['注意力权重']"),
    ],
)
def test_figure_blocks_have_the_same_label_in_both_editions_and_english_words_in_english(
    en: str, problem: str | None
) -> None:
    """The header lines are comments, which the code comparison ignores: the figure check reads them."""
    problems = compare(FIGURE_ZH, en, "a.md")
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith("a.md: block ") and problems[0].endswith(problem), problems
