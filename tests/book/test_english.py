"""No Chinese where an English reader reads code: ``tools/book/english.py`` counts the CJK
characters of the English pages, labs, notebooks and nav, by kind; every kind but the allowed
ones must count 0. ``python -m tools.book.english`` prints the counts.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

import pytest

from tools.book.english import all_counts, cjk, count_code, count_page, places, problems, report


@functools.lru_cache(maxsize=1)
def cached_counts() -> dict[str, Counter[str]]:
    return all_counts()


def test_every_place_is_counted() -> None:
    counts = cached_counts()
    print("\n" + report(counts))
    assert list(counts) == places()
    assert "glossary.en.md" in counts and "index.en.md" in counts and "labs/scaling.en.py" in counts
    notebooks = [name for name in counts if " (from " in name]
    assert "en/notebooks/05-implementation.ipynb (from 05-implementation.en.md)" in notebooks, notebooks
    assert "en/labs/scaling/scaling.ipynb (from labs/scaling.en.py)" in notebooks, notebooks
    assert all(re.fullmatch(r"en/\S+\.ipynb \(from \S+\.en\.(md|py)\)", name) for name in notebooks), notebooks
    assert sum(c["glossary"] for c in counts.values()) > 100, "the glossary's Chinese column is read"


@pytest.mark.parametrize("place", places())
def test_no_chinese_where_an_english_reader_reads(place: str) -> None:
    found = problems({place: cached_counts()[place]})
    assert not found, "\n".join(found)


SYNTHETIC = '''\
# Chapter 0: A page

The word "注意力" means "attention".

```python
#| file: src/selfattn/x.py
x = 1  # 注意力
```

<!--pytest-codeblocks:expected-output-->

```text
形状
```

```python
import matplotlib.pyplot as plt
plt.title("注意力权重")
prompt = "注意力"
```

这里是中文。
'''


def test_the_count_finds_chinese_in_each_kind_and_fails() -> None:
    counts = count_page(SYNTHETIC)
    assert counts == Counter(comment=3, output=2, plot=5, data=3, quoted=3, prose=6), counts
    assert len(problems({"synthetic.en.md": counts})) == 4
    glossary = count_page("| English | 中文 | Meaning |\n|---|---|---|\n| query | 查询 | 查 |\n", glossary=True)
    assert glossary == Counter(glossary=4, prose=1), glossary
    assert count_code("x = 1  # 中文\n%matplotlib inline\n") == Counter(comment=2)
    assert count_code("def f(:  # 中\n") == Counter(comment=1)  # not Python: counted, not skipped


@pytest.mark.parametrize("kind", ["comment", "output", "plot", "prose", "nav", "nb:comment", "nb:string"])
def test_each_kind_that_must_be_empty_fails(kind: str) -> None:
    assert problems({"page": Counter({kind: 1})}) == [f"page: 1 CJK characters in {kind}"]


def test_the_setup_cell_speaks_each_editions_language() -> None:
    """The same code in both editions (tools.release.package.setup_cell); the words in the edition's language."""
    from tools.book.parity import shape
    from tools.release.package import setup_cell

    zh, en = setup_cell("9.9.9", "zh"), setup_cell("9.9.9", "en")
    assert cjk(zh) > 0 and count_code(en) == Counter(), count_code(en)
    tree_zh, strings_zh, magics_zh = shape(zh)
    tree_en, strings_en, magics_en = shape(en)
    assert tree_zh == tree_en and magics_zh == magics_en == ['%pip install -q "{spec}"']
    differ = [(a, b) for a, b in zip(strings_zh, strings_en, strict=True) if a != b]
    assert differ == [("正在安装本书的配套包：{}", "Installing the book's package: {}")], differ
    assert 'SELFATTN_VERSION = "9.9.9"' in en and "selfattn==9.9.9" in en.splitlines()[0]
    assert "Installing the book's package" in en
    with pytest.raises(ValueError, match="lang"):
        setup_cell("9.9.9", "fr")

