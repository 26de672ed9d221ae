"""Every link of the built site resolves (tools/book/linkcheck.py): each href and src to a file of the site as it is
served under /selfattn/, each #fragment to exactly one id of its page. And the build's repairs of the links that
did not (tools/site/labpages.py for the labs' pages; the print page's are in tests/site/test_build.py)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.book import linkcheck
from tools.site import labpages

ROOT = Path(__file__).resolve().parents[2]
SHOWN = 200  # broken references listed in a failure (all of them are counted)


def write(site: Path, rel: str, html: str) -> None:
    path = site / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")


PAGE_A = """<html><head><link rel="canonical" href="https://example.org/book/a/">
<link rel="stylesheet" href="../assets/s.css"></head><body>
<h1 id="top-heading">A</h1><h2 id="%E4%B8%AD">as written</h2><h2 id="中">中</h2>
<a href="#">top</a><a href="#top">top too</a><a href="#top-heading">ok</a><a href="#中">ok</a><a href="#%E4%B8%AD">ok</a>
<a href="../b/#b1">ok</a><a href="../b/">ok</a><a href="../b">ok, a folder</a><a href="/book/b/index.html#b1">ok</a>
<img src="../assets/p.png" srcset="../assets/p.png 1x, ../assets/missing.png 2x">
<svg><defs><path id="glyph"/></defs><use xlink:href="#glyph"/><use xlink:href="#no-glyph"/></svg>
<a href="https://elsewhere.example.com/x">another host</a><a href="mailto:a@b.c">mail</a>
<a href="#missing">1</a><a href="../b/#missing">2</a><a href="../b/#twice">3</a><a href="../c/">4</a>
<a href="../b/x.md">5</a><a href="../../outside/">6</a><a href="https://example.org/book/gone/">7</a>
<a href="../assets/s.css#x">8</a><script src=""></script></body></html>"""
PAGE_B = '<p id="b1">b</p><p id="twice"></p><span id="twice"></span><a name="named">n</a>'


@pytest.fixture
def tiny_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write(site, "a/index.html", PAGE_A)
    write(site, "b/index.html", PAGE_B)
    write(site, "c/notes.txt", "a folder without index.html")
    write(site, "assets/s.css", "p {}")
    write(site, "assets/p.png", "png")
    return site


def test_the_checker_names_each_broken_reference_and_passes_the_good_ones(tiny_site: Path) -> None:
    found = list(linkcheck.Site(tiny_site, "https://example.org/book/").broken())
    got = sorted((b.page, b.attribute, b.ref, b.why) for b in found)
    assert got == sorted([
        ("a/index.html", "srcset", "../assets/missing.png", "/book/assets/missing.png does not exist"),
        ("a/index.html", "href", "#no-glyph", "no id 'no-glyph' on this page"),
        ("a/index.html", "href", "#missing", "no id 'missing' on this page"),
        ("a/index.html", "href", "../b/#missing", "no id 'missing' on /book/b/"),
        ("a/index.html", "href", "../b/#twice", "id 'twice' is on 2 elements of /book/b/"),
        ("a/index.html", "href", "../c/", "/book/c/ does not exist"),
        ("a/index.html", "href", "../b/x.md", "/book/b/x.md does not exist"),
        ("a/index.html", "href", "../../outside/", "/outside/ does not exist (outside /book/)"),
        ("a/index.html", "href", "https://example.org/book/gone/", "/book/gone/ does not exist"),
        ("a/index.html", "href", "../assets/s.css#x", "#x: /book/assets/s.css is not an HTML page"),
        ("a/index.html", "src", "", "an empty reference"),
    ]), "\n".join(map(str, found))
    assert str(found[0]).startswith("a/index.html: ")


def test_a_named_anchor_is_a_target_and_a_page_without_links_has_none(tiny_site: Path) -> None:
    write(tiny_site, "d/index.html", '<a href="../b/#named">named</a>')
    write(tiny_site, "e/index.html", "")
    site = linkcheck.Site(tiny_site, "https://example.org/book/")
    assert list(site.broken([tiny_site / "d/index.html", tiny_site / "e/index.html"])) == []


def test_the_command_summarises_by_kind_and_fails_on_any(tiny_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tiny_site, "../mkdocs.yml", "site_url: https://example.org/book/\n")
    assert linkcheck.site_url(tiny_site.parent) == "https://example.org/book/"
    assert linkcheck.main([str(tiny_site)]) == 1
    out = capsys.readouterr().out
    assert "11 broken reference(s) in 2 HTML files" in out
    assert "a/index.html: href: no id '…' on PATH" in out  # the kind, with names blurred
    good = tiny_site.parent / "good"
    write(good, "index.html", '<a href="#x" id="x">x</a>')
    assert linkcheck.main([str(good)]) == 0


def test_every_link_of_the_built_site_resolves(site_dir: Path) -> None:
    """The whole built site, as served under site_url's path: every href, src and #fragment of every HTML file."""
    start = time.perf_counter()
    site = linkcheck.Site(site_dir, linkcheck.site_url(ROOT))
    found = list(site.broken())
    files = len(site.html_files())
    print(f"\nlink check: {files} HTML files in {time.perf_counter() - start:.1f} s")
    assert files > 50, f"only {files} HTML files in {site_dir}"
    listed = "\n  ".join(map(str, found[:SHOWN])) + (f"\n  ... and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    assert not found, f"{len(found)} broken reference(s) in the built site:\n  {listed}"


# --------------------------------------------------------------------------------- tools/site/labpages.py


def lab(src_uri: str, toc: list | None = None) -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri, url_relative_to=None), toc=toc or [])


def entry(level: int, anchor: str, *children: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(level=level, id=anchor, children=list(children))


NB_HTML = ('<h1 id="">标题<a class="anchor-link" href="#">¶</a></h1><p>x</p>'
           '<h2 id="n">时间与 $n$<a class="anchor-link" href="#n">¶</a></h2>'
           '<h2 id="n">内存与 $n$<a class="anchor-link" href="#n">¶</a></h2>'
           '<h3 id="the-model-make-model">The model (<code>make model</code>)<a class="anchor-link" href="#the-model-make-model">¶</a></h3>')


def test_a_labs_headings_take_the_ids_of_its_table_of_contents() -> None:
    toc = [entry(1, "_1", entry(2, "n"), entry(2, "n_1", entry(3, "the-model")))]
    assert labpages.toc_anchors(toc) == [(1, "_1"), (2, "n"), (2, "n_1"), (3, "the-model")]
    fixed = labpages.match_toc(NB_HTML, labpages.toc_anchors(toc))
    assert fixed == ('<h1 id="_1">标题<a class="anchor-link" href="#_1">¶</a></h1><p>x</p>'
                     '<h2 id="n">时间与 $n$<a class="anchor-link" href="#n">¶</a></h2>'
                     '<h2 id="n_1">内存与 $n$<a class="anchor-link" href="#n_1">¶</a></h2>'
                     '<h3 id="the-model">The model (<code>make model</code>)<a class="anchor-link" href="#the-model">¶</a></h3>')
    # Headings and table that do not agree (a level differs, or one is missing): nothing is guessed.
    assert labpages.match_toc(NB_HTML, [(1, "_1"), (2, "n"), (3, "n_1"), (3, "m")]) == NB_HTML
    assert labpages.match_toc(NB_HTML, [(1, "_1")]) == NB_HTML


def test_a_labs_links_to_markdown_pages_become_their_addresses(caplog: pytest.LogCaptureFixture) -> None:
    target = SimpleNamespace(url_relative_to=lambda page: "../../reference/benchmarks/")
    known = {"reference/benchmarks.md": target, "reference/benchmarks.en.md": target}
    files = SimpleNamespace(get_file_from_path=known.get)
    html = ('<a href="../reference/benchmarks.md">b</a> <a href="../reference/benchmarks.md#ratio">r</a> '
            '<a href="https://example.com/x.md">away</a> <a href="../nowhere.md">none</a>'
            '<script src=""> </script>\n')
    for src in ("labs/benchmarks.py", "labs/benchmarks.en.py"):
        out = labpages.fix(html, lab(src), files)
        assert out == ('<a href="../../reference/benchmarks/">b</a> <a href="../../reference/benchmarks/#ratio">r</a> '
                       '<a href="https://example.com/x.md">away</a> <a href="../nowhere.md">none</a>'), src
    assert "labs/benchmarks.py links to ../nowhere.md, which is not a page of the book" in caplog.text
    chapter = lab("05-implementation.md")
    assert labpages.fix(html, chapter, files) == html  # a Markdown page: mkdocs did all this already
