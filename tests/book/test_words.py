"""tools/book/words.py: prose words per figure (chapters 1-5) and the fast route's reading time (issue 37)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.book import words
from tools.site import figures

ROOT = Path(__file__).resolve().parents[2]

PAGE = '''\
# 第 0 章 标题不算

猫喝了牛奶 and milk。$x^2$ 不算，`code` 也不算。

??? note "折叠的不算"

    折叠的正文不算。

    ```python
    folded = 1
    ```

```python
#| label: one
#| caption: 图注不算
#| alt: 替代文字不算
shown_figure_code = 1
```

```python
#| file: src/selfattn/x.py
package = 1
```

```python
print("读者读的代码")
```

<!-- 注释不算 -->
'''


def test_prose_words_count_what_a_reader_reads_by_the_stated_rule() -> None:
    # 8 Han characters of prose ("猫喝了牛奶", "不算", "也不算" minus the heading and the code): counted by hand
    kept = words.prose(words.reader_text(PAGE))
    assert re.findall(words.HAN, kept) == list("猫喝了牛奶不算也不算")
    assert words.prose_words(PAGE, "zh") == pytest.approx(10 / 1.5 + 2)  # + "and", "milk"
    assert words.figures(PAGE) == 1
    for gone in ("折叠", "folded", "shown_figure_code", "package", "注释", "图注"):
        assert gone not in words.reader_text(PAGE), gone


def test_english_words_are_runs_of_letters_and_digits() -> None:
    assert words.words("Don't split top-left float16, x_1.", "en") == 6  # x_1 is two
    assert words.words("猫喝了 3 times", "zh") == pytest.approx(2 + 2)


def test_read_words_add_the_shown_code_and_leave_out_math() -> None:
    read = words.read_words(PAGE, "zh")
    assert read > words.prose_words(PAGE, "zh")  # the heading and the shown code are read too
    assert words.read_words("$$\nQK^\\top\n$$\n\nword", "en") == 1


def test_figures_are_the_builds_figure_blocks() -> None:
    for name in words.chapter_pages(words.DOCS):
        text = (words.DOCS / name).read_text(encoding="utf-8")
        assert words.figures(text) == len(figures.find(text)), name


def test_per_figure_report_covers_chapters_1_to_5_in_both_editions(capsys: pytest.CaptureFixture[str]) -> None:
    rows = words.per_figure()
    assert [r["page"] for r in rows][:2] == ["01-problem.md", "02-rnn-to-attention.md"]
    assert all(r["figures zh"] == r["figures en"] for r in rows)  # parity: the same figures
    assert words.main([]) == 0
    out = capsys.readouterr().out
    assert "03-qkv-formula.md" in out and "per fig" in out


def test_minutes_round_to_the_nearest_whole_minute() -> None:
    assert [words.minutes(n) for n in (0, 299, 300, 2000)] == [1, 1, 2, 10]


def route_minutes(lang: str) -> list[int]:
    """The minutes the preface states for the fast route's steps, in order."""
    text = (ROOT / "docs" / words.edition_file("index.md", lang)).read_text(encoding="utf-8")
    block = text[text.index("{#fast-route}"):]
    unit = "分钟" if lang == "zh" else "min"
    return [int(m) for m in re.findall(rf"(\d+) {unit}", block.split("\n#")[0])]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_preface_states_the_fast_routes_reading_time(lang: str) -> None:
    measured = [m for _, _, m in words.route(lang)]
    stated = route_minutes(lang)
    assert stated == measured + [sum(measured)], (
        f"the preface's fast route says {stated} minutes, the pages now read {measured} "
        f"(total {sum(measured)}): update docs/{words.edition_file('index.md', lang)} "
        "(python -m tools.book.words --route)")
