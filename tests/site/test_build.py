"""The modules of the site build (tools/site/), each on its own, without building the site.

Where the other tests cover a module: ``tangling`` in tests/book/test_tangle.py, ``labs`` in
tests/site/test_lab_build.py and tests/book/test_tangle.py (serve --dirty), ``notebooks`` in
tests/site/test_notebooks.py, ``figures`` in tests/site/test_figures.py, ``wheel`` in tests/release/test_release.py,
and all of them together in the built site (tests/site/test_site.py, tests/site/test_browser.py). The
wiring (tools/site/hooks.py) is checked here to call only these modules.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tools.site import languages, mode, printpage, search, switcher, templates, wheel

# print-site's own function, before any test here calls printpage.configure (which replaces it in this process).
PRINT_SITE_ANCHOR_IDS = __import__("mkdocs_print_site_plugin.urls").urls.update_anchor_ids

ROOT = Path(__file__).resolve().parents[2]


def config(lang: str = "zh", **extra: Any) -> Any:
    """A stand-in for mkdocs' config while i18n builds ``lang``."""
    i18n = SimpleNamespace(current_language=lang)
    plugins = {"i18n": i18n, "autorefs": SimpleNamespace(_primary_url_map={"x": 1}), **extra.pop("plugins", {})}
    return SimpleNamespace(plugins=plugins, theme={}, extra={}, site_url="https://example.org/book/", **extra)


def test_mode_notes_the_command() -> None:
    saved = dict(mode.SERVE)
    try:
        mode.start("serve", True)
        assert mode.serving() and mode.dirty()
        mode.start("build", True)  # --dirty means nothing to a build
        assert not mode.serving() and not mode.dirty()
    finally:
        mode.SERVE.update(saved)


def test_languages_name_the_edition_and_its_files(tmp_path: Path) -> None:
    assert languages.language(config("en")) == "en" and languages.language(SimpleNamespace()) == "zh"
    assert [languages.root_prefix(lang) for lang in ("zh", "en")] == ["", "en/"]
    assert languages.source_of("05-implementation.md", "en") == "05-implementation.en.md"
    assert languages.source_of("labs/scaling.py", "zh") == "labs/scaling.py"
    (tmp_path / "a.md").write_text("", encoding="utf-8")
    assert languages.source_of("a.md", "en", tmp_path) == "a.md", "i18n falls back to the Chinese page"


def test_languages_keep_the_stack_of_nested_builds() -> None:
    zh, en = config("zh"), config("en")
    assert languages.begin(zh) == "zh"
    assert zh.plugins["autorefs"]._primary_url_map == {}, "the other language's API anchors are forgotten"
    assert languages.begin(en) == "en"  # i18n builds English inside the Chinese build's on_post_build
    assert languages.current(zh) == "en"
    assert languages.end(en) == "en" and not languages.outermost()
    assert languages.end(zh) == "zh" and languages.outermost()


def test_switcher_leads_to_the_same_page_in_each_edition() -> None:
    assert switcher.counterpart_url("en/05-implementation/", "en", "zh") == "05-implementation/"
    assert switcher.counterpart_url("05-implementation/", "zh", "en") == "en/05-implementation/"
    cfg, context = config("en"), {}
    switcher.point(context, SimpleNamespace(url="en/labs/scaling/"), cfg, "en")
    assert cfg.extra["alternate"] == [
        {"name": "中文", "lang": "zh", "link": "labs/scaling/"},
        {"name": "English", "lang": "en", "link": "en/labs/scaling/"},
    ]
    assert context["lang_root"] == "en/"
    switcher.point(context, SimpleNamespace(url="."), config("zh"), "zh")  # the home page


def test_search_settings_per_language_and_one_index_each(tmp_path: Path) -> None:
    plugin = SimpleNamespace(config={"lang": ["zh"], "separator": "x", "pipeline": ["y"], "fields": {}})
    cfg = config("en", plugins={"search": plugin}, site_dir=str(tmp_path))
    search.configure(cfg, "en")
    assert plugin.config["lang"] == ["en"] and plugin.config["separator"] is None
    search.remember(cfg, "en")
    index = tmp_path / "search" / "search_index.json"
    index.parent.mkdir()
    docs = [{"location": "a/", "title": "甲"}, {"location": "en/a/", "title": "A"}, {"location": "en/a/", "title": "A"}]
    index.write_text(json.dumps({"config": {"lang": ["zh"]}, "docs": docs}), encoding="utf-8")
    search.split_index(cfg)
    zh = json.loads(index.read_text(encoding="utf-8"))
    en = json.loads((tmp_path / "en" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert [d["title"] for d in zh["docs"]] == ["甲"]
    assert en["docs"] == [{"location": "a/", "title": "A"}], "relative to en/, each location once"
    assert en["config"]["lang"] == ["en"]


def test_each_language_keeps_its_404_and_sitemap(tmp_path: Path) -> None:
    sitemap = "<urlset>\n<url><loc>https://example.org/book/a/</loc></url>\n<url><loc>https://example.org/book/en/a/</loc></url>\n</urlset>"
    for lang in ("zh", "en"):
        templates.keep_rendering(f"404 {lang}", "404.html", lang)
        templates.keep_rendering(sitemap, "sitemap.xml", lang)
    templates.write_static_pages(config(site_dir=str(tmp_path)))
    assert (tmp_path / "en" / "404.html").read_text(encoding="utf-8") == "404 en"
    en = (tmp_path / "en" / "sitemap.xml").read_text(encoding="utf-8")
    assert "/book/en/a/" in en and "/book/a/" not in en
    assert "/book/en/a/" not in (tmp_path / "sitemap.xml").read_text(encoding="utf-8")
    assert gzip.decompress((tmp_path / "en" / "sitemap.xml.gz").read_bytes()).decode() == en


def test_the_print_page_per_language_and_its_links_to_figures(tmp_path: Path) -> None:
    printer = SimpleNamespace(config={"enabled": True})
    printpage.configure(config(plugins={"print-site": printer}), "en", dirty=False)
    assert printer.config["print_page_basename"] == "en/print_page" and printer.config["enabled"]
    printpage.configure(config(plugins={"print-site": printer}), "zh", dirty=True)
    assert printer.config["toc_title"] == "目录" and not printer.config["enabled"]
    page = tmp_path / "en" / "print_page" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<a href="#en-03-qkv-formula-fig-weights-heatmap">Figure 3.3</a><a href="#en-03-qkv-formula-x">x</a>', encoding="utf-8")
    printpage.finish(SimpleNamespace(site_dir=str(tmp_path)))
    assert page.read_text(encoding="utf-8") == '<a href="#fig-weights-heatmap">Figure 3.3</a><a href="#en-03-qkv-formula-x">x</a>'


def test_the_print_pages_links_that_print_site_got_wrong_are_mended() -> None:
    """Links to files one folder deeper on en/print_page/, ``#.`` (the preface), the print page's link to itself, and
    a section whose key an element of its page also has (the explorer's <div id="explorer">), and a label print-site
    prefixed for a control it did not (the explorer's <textarea>), and a link to a page with a query (chapter 3's
    link to the explorer's worked example)."""
    head = '<link href="../assets/a.css" rel="stylesheet"><a href="../">home</a>'
    zh = (head + '<section class="print-page" id="index"><a href="#print_page">全书</a><a href="#explorer">探索器</a>'
          '<a href="#explorer-?mode=example">例句</a><a href="../dist/w.whl">wheel</a></section><section class="print-page" id="reference-errata">'
          '<a href="#.">前言</a><a href="#.-x">x</a><img src="../labs/p.png"></section>'
          '<section class="print-page" id="explorer"><div id="explorer"></div><a href="#explorer-notes">n</a>'
          '<label for="explorer-ex-text">t</label><textarea id="ex-text"></textarea>'
          '<label for="explorer-ex-k">k</label><input id="explorer-ex-k"><label for="explorer-gone">g</label></section>')
    assert printpage.fix_links(zh, "print_page") == (
        head + '<section class="print-page" id="index"><a href="#print-site-page">全书</a><a href="#explorer-page">探索器</a>'
        '<a href="#explorer-page">例句</a><a href="../dist/w.whl">wheel</a></section><section class="print-page" id="reference-errata">'
        '<a href="#index">前言</a><a href="#index-x">x</a><img src="../labs/p.png"></section>'
        '<section class="print-page" id="explorer-page"><div id="explorer"></div><a href="#explorer-notes">n</a>'
        '<label for="ex-text">t</label><textarea id="ex-text"></textarea>'
        '<label for="explorer-ex-k">k</label><input id="explorer-ex-k"><label for="explorer-gone">g</label></section>')
    en = (head + '<section class="print-page" id="en"><a href="#en-print_page">book</a><a href="../dist/w.whl">wheel</a>'
          '<a class="x" href="../en/labs/s/s.ipynb">nb</a><img alt="" src="../en/labs/p.png"><a href="#en-01">1</a>'
          '<a href="#en-explorer-?mode=example">example</a></section>')
    assert printpage.fix_links(en, "en/print_page") == (
        head + '<section class="print-page" id="en"><a href="#print-site-page">book</a><a href="../../dist/w.whl">wheel</a>'
        '<a class="x" href="../../en/labs/s/s.ipynb">nb</a><img alt="" src="../../en/labs/p.png"><a href="#en-01">1</a>'
        '<a href="#en-explorer">example</a></section>')
    assert printpage.fix_links(head, "en/print_page") == head  # no print page sections: nothing to mend


A, B = "<style>.a { color: red }</style>", '<style type="text/css">.a { color: blue }</style>'
LINK = '<link rel="stylesheet" href="x.css">'


@pytest.mark.parametrize("html, kept", [
    (f"<p>1</p>{A}{B}<p>2</p>{A}{B}<p>3</p>{A}{B}", f"<p>1</p>{A}{B}<p>2</p><p>3</p>"),  # a lab's sheets, per lab
    (f"{LINK}{A}<p>1</p>{B}{A}", f"{LINK}{A}<p>1</p>{B}{A}"),  # A acts after B (its last copy): kept twice
    (f"{A}{LINK}{A}", f"{A}{LINK}{A}"),  # the last A overrides x.css: kept
    (f"{LINK}{A}{B}{LINK}{A}{B}", f"{LINK}{A}{B}{LINK}{A}{B}"),  # A and B act after the second link: kept
    (f"{LINK}{A}{LINK}", f"{LINK}{A}{LINK}"),  # a link is never dropped
    (f"{A}{LINK}{B}{A}{B}", f"{A}{LINK}{B}{A}{B}"),  # the last A overrides x.css: kept
    (f"{LINK}{A}<p>1</p>{A}", f"{LINK}{A}<p>1</p>"),
    (f"{A}{B}{B}{A}", f"{A}{B}{B}{A}"),  # A acts after B (its last copy): kept
    (f"{A}{B}", f"{A}{B}"),
])
def test_repeated_style_sheets_are_dropped_where_the_cascade_stays(html: str, kept: str) -> None:
    assert printpage.drop_repeated_styles(html) == kept


def test_the_print_pages_carry_each_style_sheet_once(site_dir: Path) -> None:
    """The labs' JupyterLab style sheets (mkdocs-jupyter puts them in each lab's page) come once per print page."""
    for edition in ("", "en/"):
        html = (site_dir / edition / "print_page" / "index.html").read_text(encoding="utf-8")
        styles = [m.group(0) for m in printpage.STYLESHEET.finditer(html) if m.group(0).startswith("<style")]
        labs = html.count('class="jupyter-wrapper"')
        assert labs >= 2, f"{edition}print_page: {labs} labs"
        assert len(styles) == len(set(styles)), f"{edition}print_page: {len(styles) - len(set(styles))} repeated <style>"


ANCHOR_HTML = """<h1 id="title">Title</h1>
<h2 id="x-1"><a href="#x-1">x</a> (see <code>id="x-1"</code>)</h2>
<p>Text<sup id="fnref:1"><a class="footnote-ref" href="#fn:1">1</a></sup> and <span id="not-changed">s</span></p>
<div class="highlight"><pre><span></span><code><span class="n">a</span> <span class="o">=</span> <span class="mi">1</span>
</code></pre></div>
<svg id="fig-1-1"><g id="fig-1-1-axes"><clipPath id="fig-1-1-p1"><rect/></clipPath></g></svg>
<div class="footnote">
<ol>
<li id="fn:1"><p>A note.</p></li>
</ol>
</div>
<H3 ID="upper">H</H3><h4 class="a"
  id="split">line</h4><li>none</li>
"""


def test_the_print_pages_anchor_ids_are_print_sites(site_dir: Path) -> None:
    """Our update_anchor_ids makes print-site's edits, quirks included (on a sample of each kind of tag, and on built
    pages), and is the one print-site calls after configure()."""
    from mkdocs_print_site_plugin import urls

    original = PRINT_SITE_ANCHOR_IDS
    assert original is not printpage.update_anchor_ids
    printpage.configure(config(plugins={"print-site": SimpleNamespace(config={"enabled": True})}), "zh", dirty=False)
    assert urls.update_anchor_ids is printpage.update_anchor_ids
    expected = original(ANCHOR_HTML, "p")
    assert 'id="p-title"' in expected and 'id="p-fn:1"' in expected and 'id="split"' in expected
    assert 'id="fnref:1"' in expected  # print-site's match of <p> reaches into the <sup> and leaves it as it is
    assert printpage.update_anchor_ids(ANCHOR_HTML, "p") == expected
    for page in ("glossary", "en/08-roadmap"):
        html = (site_dir / page / "index.html").read_text(encoding="utf-8")
        assert printpage.update_anchor_ids(html, "k") == original(html, "k"), page
    # print-site's bug, which ours has not: an id found in the tag's own name (the slug of "第 1 章 ……" is "1").
    clash = '<h1 id="1">第 1 章</h1>\n<h3 id="3">3</h3>\n<li class="md-nav" id="nav">x</li>\n'
    assert original(clash, "ch") == '<hch-1 id="ch-1">第 1 章</h1>\n<hch-3 id="ch-3">3</h3>\n<li class="md-ch-nav" id="ch-nav">x</li>\n'
    assert printpage.update_anchor_ids(clash, "ch") == '<h1 id="ch-1">第 1 章</h1>\n<h3 id="ch-3">3</h3>\n<li class="md-nav" id="ch-nav">x</li>\n'
    for edition in ("", "en/"):  # and no such tag is left in the print pages
        html = (site_dir / edition / "print_page" / "index.html").read_text(encoding="utf-8")
        assert not (bad := re.findall(r"<h\d[^\s>]+", html)), f"{edition}print_page: {bad}"


AUTOREF = re.compile(r'<a class="autorefs autorefs-internal"[^>]*href="#([^"]+)"[^>]*>')


def test_the_print_pages_cross_references_are_the_api_pages(site_dir: Path) -> None:
    """print-site resolves the print page's cross-references itself: each must go where the API page's goes (print-site
    prefixes the anchor with the page), to an anchor of the print page; what the API page leaves as text (a type
    from outside the book: int, torch.Tensor) stays text. print-site guessed a target by a part of its name."""
    for edition in ("", "en/"):
        api = (site_dir / edition / "reference" / "api" / "index.html").read_text(encoding="utf-8")
        html = (site_dir / edition / "print_page" / "index.html").read_text(encoding="utf-8")
        prefix = ("en-" if edition else "") + "reference-api-"
        assert AUTOREF.findall(api), f"{edition}reference/api: no cross-reference left to compare"
        assert sorted(AUTOREF.findall(html)) == sorted(prefix + a for a in AUTOREF.findall(api)), edition
        ids = set(re.findall(r'\bid="([^"]+)"', html))
        assert not [a for a in AUTOREF.findall(html) if a not in ids], f"{edition}print_page: links to no anchor"


def test_wheel_version_in_the_pages_and_the_footer() -> None:
    cfg = SimpleNamespace(extra={}, config_file_path=str(ROOT / "mkdocs.yml"), copyright="MIT")
    wheel.set_version(cfg)
    version = cfg.extra["selfattn_version"]
    assert wheel.substitute("pip install selfattn=={{ selfattn_version }}", cfg) == f"pip install selfattn=={version}"
    wheel.footer(cfg)
    wheel.footer(cfg)  # once only
    assert cfg.copyright == f"selfattn {version} · MIT"


HOOKS = ROOT / "tools" / "site" / "hooks.py"
# The modules the hooks wire: every module of tools/site/ but the two hook files themselves.
BUILD_MODULES = sorted(p.stem for p in (ROOT / "tools" / "site").glob("*.py") if p.stem not in {"hooks", "explorer_hook"})


def test_the_wiring_is_thin_and_calls_only_the_build_modules() -> None:
    """tools/site/hooks.py reads as the table of contents of a build: each event calls the modules."""
    tree = ast.parse(HOOKS.read_text(encoding="utf-8"))
    events = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("on_")]
    assert {f.name for f in events} >= {"on_config", "on_pre_build", "on_files", "on_page_markdown", "on_post_build"}
    modules = set(BUILD_MODULES) - {"__init__"}
    for event in events:
        assert len(event.body) <= 16, f"{event.name} is no longer thin"
        for node in ast.walk(event):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                assert node.func.value.id in modules, ast.unparse(node)
    assert len(HOOKS.read_text(encoding="utf-8").splitlines()) < 150


@pytest.mark.parametrize("module", BUILD_MODULES)
def test_each_build_module_says_what_it_does(module: str) -> None:
    text = (ROOT / "tools" / "site" / f"{module}.py").read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(text)), f"tools/site/{module}.py has no module docstring"


def test_the_search_index_carried_between_rebuilds_keeps_one_entry_per_location() -> None:
    """`make serve`: material carries its last index to the next rebuild; i18n's last index is each
    edition's entries one after the other, each already holding the carried index. Without
    `forget_duplicates` the entries doubled at each rebuild (and so did the rebuild's time)."""
    from types import SimpleNamespace

    from tools.site import search

    old = [{"location": "03/", "text": "old"}, {"location": "en/03/", "text": "old"}]
    zh = [{"location": "en/03/", "text": "old"}, {"location": "03/", "text": "new"}]
    en = [{"location": "03/", "text": "new"}, {"location": "en/03/", "text": "new"}]
    prev = SimpleNamespace(entries=old + zh + en)
    config = SimpleNamespace(plugins={"material/search": SimpleNamespace(search_index_prev=prev)})
    search.forget_duplicates(config)
    assert prev.entries == en, "one entry per location, the newest"
    search.forget_duplicates(SimpleNamespace(plugins={}))  # no search plugin: nothing to do
