"""tools/book/prose_stats.py measures the English prose only: its sentences, colons and semicolons."""

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
    assert out[0].split()[:6] == ["page", "words", "sents", "w/sent", "short%", "runs"]
    assert out[-1].startswith("total")
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
    assert text.splitlines()[3].startswith("A cell") and text.splitlines()[9] == "Second cell."  # line numbers kept
    s = stats(text)
    assert (s.colons, s.semicolons, s.parens, s.bold) == (1, 1, 1, 1), s


def test_captions_and_alt_texts_are_measured_apart() -> None:
    from tools.book.prose_stats import captions

    page = '```python\n#| label: a\n#| caption: One; two.\n#| alt: Three: four.\nx = 1\n```\n'
    assert captions(page) == "\n\nOne; two.\nThree: four.\n\n"  # line i is the page's line i
    assert stats(page).words == 0  # a figure block is code on the page
    # A caption and its alt text are two paragraphs: two short sentences in each are no run.
    page = '```python\n#| caption: One. Two.\n#| alt: Three. Four.\nx = 1\n```\n'
    assert stats(captions(page), per_line=True).runs == 0
    assert stats(captions(page)).runs == 1  # read as one paragraph, they would be one


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


def test_sentences_end_at_a_full_stop_before_a_capital() -> None:
    from tools.book.prose_stats import sentences

    para = ("Vaswani et al. (2017) scale the scores, e.g. by X. It works! Does it? "
            '"Yes." The value 2.13 is a version, and X is code.')
    assert sentences(para) == [
        "Vaswani et al. (2017) scale the scores, e.g. by X.", "It works!", "Does it?", '"Yes."',
        "The value 2.13 is a version, and X is code.",
    ]


def test_paragraphs_keep_their_line_numbers_and_list_items_stand_alone() -> None:
    from tools.book.prose_stats import paragraphs

    page = ("# Title\n\nOne `code` line\ngoes on $d_k$ here.\n\n```python\nx = 1\n```\n\n"
            "Three items:\n\n- first item\n- second\n  continued\n\n??? note \"T\"\n\n    Body.\n")
    assert paragraphs(prose(page, "X")) == [
        (3, "One X line goes on X here."), (10, "Three items:"), (12, "first item"),
        (13, "second continued"), (18, "Body."),
    ]


def test_runs_of_short_sentences_in_one_paragraph() -> None:
    from tools.book.prose_stats import choppy_runs

    assert choppy_runs([12, 3, 5, 7]) == [(0, 4)]
    assert choppy_runs([3, 4, 5, 13, 1, 2, 3, 4, 5, 20]) == [(4, 5)]
    assert choppy_runs([13, 3, 4, 5]) == []
    short = "It is short. So is this. And this one. Here is four.\n\nA new paragraph starts here now."
    s = stats(short)
    assert (s.sentences, s.short, s.runs) == (5, 5, 1), s
    assert (s.sentence_words, s.mean_sentence(), s.short_share()) == (18, 3.6, 100.0)
    # Split by a paragraph break, four short sentences are no run.
    assert stats(short.replace("And this one. ", "And this one.\n\n")).runs == 0
    # Inline code and math are a word each; a figure citation reads "Figure 4.1".
    s = stats("Take `x` and $d_k$ and [](#fig-a) and {fig:b} here.")
    assert (s.sentences, s.sentence_words) == (1, 11), s


def test_another_checkout_is_measured_with_root(tmp_path, capsys) -> None:
    (tmp_path / "docs/labs").mkdir(parents=True)
    (tmp_path / "docs/01-a.en.md").write_text("One two three. Four five six.\n", encoding="utf-8")
    (tmp_path / "docs/01-a.md").write_text("中文页。\n", encoding="utf-8")
    for name in ("README.md", "CONTRIBUTING.md"):
        (tmp_path / name).write_text("Read me.\n", encoding="utf-8")
    assert main(["--root", str(tmp_path)]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["chapters"][:2] == ["6", "2"] and rows["pages"][:2] == ["4", "2"], rows


def test_the_chinese_edition_has_the_same_parts() -> None:
    from tools.book.prose_stats import edition, figure_pages, labs, pages

    assert edition(chapters()[0]) == "en" and all(edition(p) == "zh" for p in chapters(lang="zh"))
    assert len(chapters(lang="zh")) == len(chapters()) and len(labs(lang="zh")) == len(labs())
    assert not any(p.name.startswith(("README", "CONTRIBUTING")) for p in pages(lang="zh"))
    assert len(figure_pages(lang="zh")) == len(figure_pages())


def test_every_english_chapter_reads_as_english() -> None:
    """Issue 41's rhythm, held: a mean of about 16 to 20 words per sentence (21 at most), fewer than 10% under
    8 words and no run of 4 short sentences, in every chapter page of the English edition."""
    from tools.book.prose_stats import chapters, measure_file

    off = []
    for path in chapters():
        s = measure_file(path, "chapters")
        if not (16 <= s.mean_sentence() <= 21 and s.short_share() < 10 and s.runs == 0):
            off.append(f"{path.name}: {s.mean_sentence():.1f} words a sentence, {s.short_share():.1f}% short, "
                       f"{s.runs} runs")
    assert len(chapters()) >= 20 and not off, "\n".join(off)
