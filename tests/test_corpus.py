"""tools/corpus.py: chapter 10's corpus is the text a reader reads, one snapshot per edition."""

from __future__ import annotations

import pytest

from tools.corpus import OUT, build, clean

PAGE = '''# 5.1 Title {#title}

Prose with a [link](x.md#a), **bold** and `code`, and math $QK^\\top$.

<!--pytest-codeblocks:cont-->

```python
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

Prose with a link, bold and code, and math $QK^\\top$.

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
def test_snapshot_is_current(lang: str) -> None:
    """Chapters 1-9 changed since the snapshot: `make model` rebuilds it and the models."""
    path = OUT[lang]
    assert path.read_text(encoding="utf-8") == build(lang), (
        f"{path.name} differs from chapters 1-9: run `make model` "
        "(python -m tools.corpus, then python -m models.train)")
