"""tools/prose_stats.py counts colons and semicolons in English prose only."""

from __future__ import annotations

from tools.prose_stats import Stats, chapters, main, prose, stats

PAGE = '''\
# Chapter 0: Headings do not count; nor their colons

One sentence: with a colon; and a semicolon. See [the link: text](https://example.org/a:b).

| table: row | cell; two |
|---|---|

Inline `code: x; y` and math $a: b; c$ and a URL <https://example.org:8000/x> are left out.

$$
f(x): x; y
$$

```python
x = {"a": 1}; y = 2
```

??? note "Title: not prose"

    Body text: it counts.

    ```text
    out: put; here
    ```

<!-- a comment: with; punctuation -->
'''


def test_only_prose_counts() -> None:
    body = prose(PAGE)
    for gone in ("Headings", "table: row", "code: x", "a: b", "f(x)", "example", "Title", "out: put", "a comment", "x = {"):
        assert gone not in body, (gone, body)
    assert "the link: text" in body and "Body text: it counts." in body
    s = stats(PAGE)
    assert (s.colons, s.semicolons) == (3, 1), s  # "sentence:", "link:", "text:"; "colon;"
    words = "One sentence with a colon and a semicolon See the link text Inline and math and a URL are left out "
    words += "Body text it counts"
    assert s.words == len(words.split()), (s.words, body)


def test_rates_per_1000_words() -> None:
    assert Stats(2000, 24, 10).per_1000() == (12.0, 5.0)
    assert Stats(0, 0, 0).per_1000() == (0.0, 0.0)
    assert (Stats(10, 1, 2) + Stats(5, 3, 4)) == Stats(15, 4, 6)


def test_the_chapters_are_measured(capsys) -> None:
    pages = chapters()
    assert pages and all(p.name.endswith(".en.md") and p.name[:2].isdigit() for p in pages)
    assert main([str(pages[0])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["page", "words", "colons", "semis"] and out[-1].startswith("total")
    assert int(out[-1].split()[1]) > 100  # a chapter has prose
