"""The print page (mkdocs-print-site: the whole book on one page, for print or PDF), per language.

Each language has its own (``print_page/`` and ``en/print_page/``) with titles in its language.
Under ``serve --dirty`` it could only show the pages rebuilt: it is left out there (``make site``
builds it). print-site makes the anchors of headings unique by prefixing them with the page
(``#03-qkv-formula-fig-weights-heatmap``), but not the ids of figures, which are unique in the whole book
already: :func:`finish` points the links to figures back at them.

mkdocs-jupyter puts JupyterLab's stylesheets (four ``<style>`` elements, about 575 KB) into the page of
every lab, so the print page, which holds every lab, carried them once per lab: 2.3 MB of its 7.3 MB.
:func:`drop_repeated_styles` keeps one copy of each, where that cannot change the cascade.

print-site 2.9 finds those anchors with a regular expression tried at every tag of every page, each try
reaching the end of its line: about 13 s of a 34 s build of this book. :func:`update_anchor_ids` makes
the same edits, trying the expression only on the lines that have an ``id`` and without print-site's bug
of renaming the tag itself, and :func:`configure` puts it in print-site's place (``tests/site/test_build.py``
compares the two).

print-site also writes links that lead nowhere (``python -m tools.book.linkcheck`` found them; :func:`fix_links` mends
them): it assumes the print page sits one folder below the site's root, so on ``en/print_page/`` the links to
files (a lab's notebook, the wheel) climbed one folder too few (``../en/labs/…`` was ``/en/en/labs/…``); a link
to the preface from a page two folders deep became ``#.``; the preface's link to the print page became
``#print_page``, an anchor of no page; and a page whose key is also an id of its own content (the explorer's
``<div id="explorer">`` in the section ``explorer``) gave the print page that id twice; the labels of the
explorer's ``<select>`` and ``<textarea>`` named nothing (print-site prefixes a label's ``for=``, and an
``<input>``'s id, but not theirs); and a link to a page with a query (chapter 3's ``explorer.md?mode=example``)
became ``#explorer-?mode=example``, an anchor of no page.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from tools.site.languages import LANGUAGES, root_prefix

PRINT_PAGE = {  # per language: the print page of the English edition is en/print_page/
    "zh": {"print_page_title": "全书（打印版）", "toc_title": "目录", "print_page_basename": "print_page"},
    "en": {"print_page_title": "The Whole Book (Print Version)", "toc_title": "Contents", "print_page_basename": "en/print_page"},
}
FIGURE_LINK = re.compile(r'href="#[\w.-]*?-(fig-[\w-]+)"')
# A <style> element, or a <link> to a stylesheet: the sources of rules, in the order the cascade reads them.
PRINT_PAGE_TOP = "print-site-page"  # the id of print-site's element around the whole print page
SECTION = re.compile(r'<section class="print-page" id="([^"]+)"')
# A link to a file (not a page) that print-site made relative to print_page/ (one folder below the root): <a href>, <img src>.
FILE_LINK = re.compile(r'(<(?:a|img)\b[^>]*?\s(?:href|src)=")\.\./')
STYLESHEET = re.compile(r"<style\b[^>]*>.*?</style\s*>|<link\b[^>]*\brel=[\"']?stylesheet[^>]*>",
                        flags=re.IGNORECASE | re.DOTALL)


TAG_WITH_ID = re.compile(r'<([^\s]+).*?id="([^"]*?)".*?>', flags=re.IGNORECASE)  # print-site 2.9's
ID_ATTRIBUTE = re.compile(r'id="', flags=re.IGNORECASE)
ANCHOR_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6", "sup", "li")


def tags_with_ids(html: str) -> Iterator[re.Match[str]]:
    """``TAG_WITH_ID.finditer(html)``, trying only the lines that have an ``id="``.

    A match starts at a ``<`` followed, on the same line, by ``id="`` (neither ``[^\\s]`` nor ``.`` crosses a
    newline), so no match starts on a line without one; on the others each ``<`` is tried in turn, as finditer does."""
    pos = 0
    while hit := ID_ATTRIBUTE.search(html, pos):
        line_end = html.find("\n", hit.start())
        line_end = len(html) if line_end < 0 else line_end
        q = max(pos, html.rfind("\n", 0, hit.start()) + 1)
        while (q := html.find("<", q, line_end)) >= 0:
            if m := TAG_WITH_ID.match(html, q):
                yield m
                pos = m.end()
                break
            q += 1
        else:
            pos = line_end + 1


def update_anchor_ids(page_html: str, page_key: str) -> str:
    """print-site 2.9's ``urls.update_anchor_ids``: prefix the id of each h1-h6, sup and li tag that its pattern
    finds with ``page_key``; the matches come from :func:`tags_with_ids`.

    Edit for edit, but for one bug: print-site replaces the id's text wherever it occurs in the tag, so
    ``<h1 id="1">`` (the slug of "第 1 章 ……", whose Chinese letters the slug drops) became
    ``<h01-problem-1 id="01-problem-1">``, an element the browser does not know, and the chapter's title was
    no heading on the print page. Here only the id's value is prefixed."""
    for m in tags_with_ids(page_html):
        if m[1] in ANCHOR_TAGS:
            at = m.start(2) - m.start()
            page_html = page_html.replace(m.group(), f"{m.group()[:at]}{page_key}-{m.group()[at:]}")
    return page_html


def configure(config: Any, lang: str, dirty: bool) -> None:
    """The print page's titles in the language being built; off under ``serve --dirty``; our update_anchor_ids;
    its cross-references resolved as on the pages (:func:`resolve_as_the_pages`)."""
    printer = config.plugins.get("print-site")
    if printer is not None:
        from mkdocs_print_site_plugin import urls

        urls.update_anchor_ids = update_anchor_ids
        resolve_as_the_pages(config.plugins.get("autorefs"))
        printer.config.update(PRINT_PAGE.get(lang, PRINT_PAGE["en"]))
        if dirty:
            printer.config["enabled"] = False


def resolve_as_the_pages(autorefs: Any) -> None:
    """print-site resolves the print page's cross-references itself (``fix_refs`` with its own URL mapper), and
    where autorefs finds no target it guesses one: any anchor whose name contains the identifier, or the other
    way round. So ``int`` in the API's tables linked to ``#print-site-page``, ``#print-page-toc`` or
    ``#07-pitfalls-repeat-repeat_interleave``, whichever came first in a set, and ``torch.Tensor`` to an anchor
    that does not exist. Here a reference autorefs cannot resolve stays unresolved, as on the API page: an
    optional one (a type from outside the book) is plain text, and any other fails the strict build."""
    from mkdocs_autorefs._internal import references

    fix_refs = getattr(references.fix_refs, "original", references.fix_refs)
    if autorefs is None:
        references.fix_refs = fix_refs
        return

    def fix_refs_as_the_pages(html: str, url_mapper: Any, **kwargs: Any) -> Any:
        def mapper(identifier: str, from_url: str | None = None) -> Any:
            autorefs.get_item_url(identifier, from_url)  # KeyError: autorefs has no target for it
            return url_mapper(identifier, from_url)

        return fix_refs(html, mapper, **kwargs)

    fix_refs_as_the_pages.original = fix_refs  # type: ignore[attr-defined]
    references.fix_refs = fix_refs_as_the_pages  # print-site imports it when it builds the page; autorefs has its own


def drop_repeated_styles(html: str) -> str:
    """Keep the first of identical ``<style>`` elements and drop the others, when that cannot change the cascade.

    Of two rules that apply alike, the later one in the document wins. So a style sheet that comes several
    times acts from its last copy, and keeping only the first copy of each ``<style>`` changes nothing if the
    sheets keep their order: a ``<style>`` at its first copy, a stylesheet ``<link>`` (never dropped) at its last,
    must come in the order of their last copies. On a page where they would not, nothing is dropped.
    """
    sheets = [m.group(0) for m in STYLESHEET.finditer(html)]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, sheet in enumerate(sheets):
        first.setdefault(sheet, i)
        last[sheet] = i
    if len(first) == len(sheets):
        return html  # no repeats
    kept = {sheet: first[sheet] if sheet.lower().startswith("<style") else last[sheet] for sheet in first}
    if sorted(first, key=kept.__getitem__) != sorted(last, key=last.__getitem__):
        return html  # the sheets left would come in another order: they would decide differently
    seen: set[str] = set()

    def keep(m: re.Match[str]) -> str:
        if not m.group(0).lower().startswith("<style") or m.group(0) not in seen:
            seen.add(m.group(0))
            return m.group(0)
        return ""

    return STYLESHEET.sub(keep, html)


def fix_links(html: str, basename: str) -> str:
    """The links print-site got wrong on the print page at ``basename`` (``print_page`` or ``en/print_page``), in the
    sections that hold the book's pages (the page's own head and header are mkdocs' and right):

    * a link to a file, ``../X``, made for a print page one folder deep, climbs as many folders as ``basename`` has;
    * ``#.`` (the preface, linked from a page two folders deep) is the preface's section (``#index``);
    * a link to the print page itself (``#print_page``, ``#en-print_page``) goes to its top;
    * a link to a page with a query, ``#KEY-?QUERY``, goes to that page's section, ``#KEY``;
    * a section whose id some element of its page also has is renamed ``ID-page``, and so are the links to it;
    * a label whose ``for=`` print-site prefixed, where its control's id it did not, names that control again."""
    start = html.find('<section class="print-page"')
    if start < 0:
        return html
    head, body = html[:start], html[start:]
    depth = basename.count("/") + 1
    if depth > 1:
        body = FILE_LINK.sub(lambda m: m.group(1) + "../" * depth, body)
    index = basename.rsplit("/", 1)[0] if "/" in basename else "index"  # the preface's key: en/ -> en
    body = re.sub(r'href="#\.(-[^"]*)?"', lambda m: f'href="#{index}{m.group(1) or ""}"', body)
    body = body.replace(f'href="#{basename.replace("/", "-")}"', f'href="#{PRINT_PAGE_TOP}"')
    body = re.sub(r'href="#([^"?]+)-\?[^"]*"', r'href="#\1"', body)  # (before the sections are renamed)
    ids = collections.Counter(re.findall(r'\sid="([^"]*)"', html))
    for key in SECTION.findall(body):
        if ids[key] > 1:
            body = body.replace(f'<section class="print-page" id="{key}"', f'<section class="print-page" id="{key}-page"')
            body = body.replace(f'href="#{key}"', f'href="#{key}-page"')
        # print-site prefixes the for= of every <label> and the id of every <input>, not a <select>'s or a
        # <textarea>'s: such a label (the explorer's) names nothing. It names its control again.
        def unprefixed(m: re.Match[str], key: str = key) -> str:
            named = m.group(2)
            return m.group(0) if ids[f"{key}-{named}"] or not ids[named] else f'{m.group(1)}{named}"'

        body = re.sub(rf'(<label\b[^>]*\bfor="){re.escape(key)}-([^"]+)"', unprefixed, body)
    return head + body


def finish(config: Any) -> None:
    """Each language's print page: ``#PAGE-fig-LABEL`` (print-site's rewrite) points at ``#fig-LABEL`` again, the other
    links print-site got wrong are mended (:func:`fix_links`), and the labs' style sheets come once
    (:func:`drop_repeated_styles`). Written only if that changed it."""
    for lang in LANGUAGES:
        basename = PRINT_PAGE.get(lang, PRINT_PAGE["en"])["print_page_basename"]
        page = Path(config.site_dir) / root_prefix(lang) / "print_page" / "index.html"
        if page.exists():
            html = page.read_text(encoding="utf-8")
            fixed = drop_repeated_styles(fix_links(FIGURE_LINK.sub(r'href="#\1"', html), basename))
            if fixed != html:
                page.write_text(fixed, encoding="utf-8")
