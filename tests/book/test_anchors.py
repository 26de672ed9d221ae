"""Links between pages and to their anchors resolve, in both editions, read from the Markdown sources
(tools/book/anchors.py): a renamed heading that other pages link to fails here, without a build.

The built site is checked too (tests/site/test_links.py crawls it; ``mkdocs build --strict`` fails on a
missing anchor, ``validation: anchors: warn``); the last test here holds this check to what the build makes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools.book import anchors

ROOT = Path(__file__).resolve().parents[2]


def test_every_link_of_the_book_resolves() -> None:
    problems = anchors.check()
    assert not problems, "\n".join(map(str, problems))


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """The real pages and mkdocs.yml, copied: the check reads nothing else."""
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("assets", "javascripts", "stylesheets"))
    return tmp_path


def test_a_renamed_heading_fails_naming_each_link_to_it(book: Path) -> None:
    """05-implementation.md's heading {#mask-polarity} renamed in the Chinese edition: each Chinese link to it, on
    every page, fails with its page and line; the English edition, whose heading kept its id, passes."""
    page = book / "docs" / "05-implementation.md"
    text = page.read_text(encoding="utf-8")
    assert text.count("{#mask-polarity}") == 1
    page.write_text(text.replace("{#mask-polarity}", "{#mask-polarity-renamed}"), encoding="utf-8")
    links = sum(p.read_text(encoding="utf-8").count("05-implementation.md#mask-polarity)")
                for p in (book / "docs").rglob("*.md") if not p.name.endswith(".en.md"))
    links += text.count("(#mask-polarity)")
    problems = anchors.check(root=book)
    assert len(problems) == links > 2, problems
    assert all(p.why == "no id 'mask-polarity' in docs/05-implementation.md" for p in problems), problems
    assert all(not p.source.endswith(".en.md") for p in problems)
    first = problems[0]
    line = (book / first.source).read_text(encoding="utf-8").splitlines()[first.line - 1]
    assert first.target in line, (first, line)


def test_a_missing_page_and_a_missing_figure_anchor_fail_and_code_is_not_read(book: Path) -> None:
    page = book / "docs" / "09-summary.en.md"
    extra = ("\nSee [the lost chapter](11-lost.md), [a figure](04-why-sqrt-dk.md#fig-none) and "
             "[a real one](04-why-sqrt-dk.md#fig-query-gradients).\n\n"
             "```python\nprint('[not a link](12-nowhere.md)')\n```\n\nAnd `[code](13-nowhere.md)` neither.\n")
    page.write_text(page.read_text(encoding="utf-8") + extra, encoding="utf-8")
    problems = [str(p).split(": ", 1)[1] for p in anchors.check(["09-summary.md"], root=book)]
    assert problems == ["(11-lost.md): no page docs/11-lost.md",
                        "(04-why-sqrt-dk.md#fig-none): no id 'fig-none' in docs/04-why-sqrt-dk.en.md"], problems


def test_the_command_checks_one_page_in_both_editions(capsys: pytest.CaptureFixture[str]) -> None:
    assert anchors.main(["docs/04-why-sqrt-dk.md"]) == 0
    assert "0 broken link(s) in 1 page(s), both editions" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="not a page of the nav"):
        anchors.main(["docs/99-none.md"])


def test_the_ids_read_from_the_sources_are_ids_of_the_built_pages(site_dir: Path) -> None:
    """Every id the check reads from a page's Markdown is an id of the page mkdocs built, in both editions: it
    accepts no anchor that the site lacks (headings with and without {#id}, math in a heading, figures)."""
    import lxml.html

    from tools.book.tangle import load_config, nav_entries

    missing, count = [], 0
    for page in nav_entries(load_config(ROOT)):
        if not page.endswith(".md"):
            continue
        for lang, prefix in (("zh", ""), ("en", "en/")):
            built = lxml.html.parse(str(site_dir / prefix / page.replace(".md", "/index.html").replace("index/", ""))).getroot()
            site_ids = {e.get("id") for e in built.iter() if e.get("id")}
            found = anchors.ids(anchors.source_file(page, lang, ROOT / "docs"))
            count += len(found)
            missing += [f"{prefix}{page}#{i}" for i in sorted(found - site_ids)]
    assert count > 300 and not missing, missing
