"""tools/book/prose_stats.py counts colons and semicolons in English prose only."""

from __future__ import annotations

from tools.book.prose_stats import Stats, chapters, main, prose, stats

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

::: selfattn.masks
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


def test_help_prints_usage_and_is_not_read_as_a_path(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


LAB = '''\
# %% [markdown]
# # Lab title: not prose
#
# A cell: one colon; one semicolon (and a parenthesis) with **bold**.

# %%
x = {"a": 1}; print("code: not prose")

# %% [markdown]
# Second cell.
'''


def test_a_labs_markdown_cells_are_its_prose() -> None:
    from tools.book.prose_stats import lab_markdown

    text = lab_markdown(LAB)
    assert "A cell: one colon" in text and "Second cell." in text and "code: not" not in text
    s = stats(text)
    assert (s.colons, s.semicolons, s.parens, s.bold) == (1, 1, 1, 1), s


def test_captions_and_alt_texts_are_measured_apart() -> None:
    from tools.book.prose_stats import captions

    page = '```python\n#| label: a\n#| caption: One; two.\n#| alt: Three: four.\nx = 1\n```\n'
    assert captions(page) == "One; two.\n\nThree: four."
    assert stats(page).words == 0  # a figure block is code on the page


def test_every_part_of_the_edition_is_measured(capsys) -> None:
    from tools.book.prose_stats import PARTS, measure_parts

    rows = measure_parts()
    assert list(rows) == list(PARTS) == ["chapters", "labs", "pages", "captions"]
    assert all(s.words > 500 for s in rows.values()), rows
    assert main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:]] == [*PARTS, "total"]


def test_sentences_whose_subject_is_the_book_are_counted() -> None:
    text = ("This book starts here. The book's code runs. Read the book. It is\nthe book we wrote.\n\n"
            "- The book ends. A short book.\n")
    assert stats(text).book == 2, stats(text)  # "This book starts", "The book ends"


def test_one_part_file_by_file(capsys) -> None:
    assert main(["--part", "pages"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in out[1:-1]]
    assert "docs/reference/errata.en.md" in names and "README.md" in names, names
    assert not any(n.startswith("docs/0") for n in names), names
