"""The links and anchors of a lab's page (mkdocs-jupyter renders ``docs/labs/*.py`` into HTML), made to resolve.

mkdocs-jupyter makes a lab's page in two ways at once: the table of contents from the notebook converted to
Markdown (python-markdown's ``toc``: ``_1``, ``_2`` for a Chinese heading, whose letters the slug drops, and
``n_1`` for a second "n"), and the headings' ids from its own slug (``id=""``, the same ``id="n"`` twice,
``the-committed-model-make-model`` where the table says ``the-committed-model``). So the table's links, the
search's and material's, and the skip link missed. :func:`fix` gives each heading, in page order, the id
that the table of contents has for it (when the two list the same headings at the same levels), so that
every anchor of the page is the one its table, its search entries and the print page use.

It numbers the lab's figures (``selfattn.plot.show`` draws each as ``<figure class="sa-figure">``, an inline SVG
with its alt text and its caption, as the chapters' figures are): in page order, "图 1" / "Figure 1.", with the ids
``fig-scaling-1``, ``fig-scaling-2`` (unique on the print page, which holds every lab), so that a tap enlarges them like any figure of the book (``figure-zoom.js``); matplotlib's
font list leaves their text, as it leaves the chapters' figures (``tools/site/figures.py``).

It also converts a relative link to a Markdown page (``../reference/benchmarks.md``, as a chapter writes it)
into that page's address, as mkdocs does on the Markdown pages and mkdocs-jupyter does not, and drops the
``<script src="">`` that mkdocs-jupyter writes for MathJax when ``custom_mathjax_url`` is empty (the book's
KaTeX renders the labs' formulas).
"""

from __future__ import annotations

import logging
import posixpath
import re
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("mkdocs.hooks.labpages")

# A heading as nbconvert renders it through mkdocs-jupyter (convert.add_anchor_lower_id).
HEADING = re.compile(r'<h(?P<level>[1-6]) id="(?P<id>[^"]*)">(?P<text>.*?)<a class="anchor-link" href="#(?P=id)">',
                     flags=re.DOTALL)
MD_LINK = re.compile(r'(?P<before><a\b[^>]*?\bhref=")(?P<href>[^"#:]+\.md)(?P<fragment>#[^"]*)?"')
EMPTY_SCRIPT = re.compile(r'<script src="">\s*</script>\n?')
LAB_FIGURE = re.compile(r'<figure class="sa-figure">(?P<body>.*?)<figcaption>', flags=re.DOTALL)


def is_lab(page: Any) -> bool:
    return page.file.src_uri.startswith("labs/") and page.file.src_uri.endswith(".py")


def toc_anchors(toc: Any) -> list[tuple[int, str]]:
    """The table of contents, flattened in page order: (level, id) of each entry."""
    out: list[tuple[int, str]] = []
    for item in toc:
        out.append((item.level, item.id))
        out += toc_anchors(item.children)
    return out


def match_toc(html: str, anchors: list[tuple[int, str]]) -> str:
    """Each heading's id (and its ¶ link) set to the table of contents' id for it; unchanged if the headings and
    the table do not list the same levels in the same order (then the link check names what is left broken)."""
    headings = list(HEADING.finditer(html))
    if [int(m["level"]) for m in headings] != [level for level, _ in anchors]:
        return html
    parts, pos = [], 0
    for m, (level, anchor) in zip(headings, anchors, strict=True):
        parts += [html[pos : m.start()], f'<h{level} id="{anchor}">{m["text"]}<a class="anchor-link" href="#{anchor}">']
        pos = m.end()
    return "".join(parts) + html[pos:]


def _page_file(files: Any, src_uri: str, lang_suffix: str) -> Any:
    """The page built from ``src_uri`` (``reference/benchmarks.md``), or from its translation
    (``reference/benchmarks.en.md``) in an edition that has one."""
    candidates = [src_uri]
    if lang_suffix:
        stem, dot, ext = src_uri.rpartition(".")
        candidates.insert(0, f"{stem}.{lang_suffix}.{ext}")
    for candidate in candidates:
        if (file := files.get_file_from_path(candidate)) is not None:
            return file
    return None


def convert_md_links(html: str, page: Any, files: Any) -> str:
    """``href="../reference/benchmarks.md#x"`` -> ``href="../../reference/benchmarks/#x"``, relative to the page."""
    here = posixpath.dirname(page.file.src_uri)
    suffix = page.file.src_uri.rsplit(".", 2)[1] if page.file.src_uri.count(".") >= 2 else ""

    def convert(m: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(here, m["href"]))
        file = _page_file(files, target, suffix)
        if file is None or urlsplit(m["href"]).scheme:
            log.warning("%s links to %s, which is not a page of the book", page.file.src_uri, m["href"])
            return m.group(0)
        return f'{m["before"]}{file.url_relative_to(page.file)}{m["fragment"] or ""}"'

    return MD_LINK.sub(convert, html)


def number_figures(html: str, lang: str, lab: str = "lab") -> str:
    """Each ``<figure class="sa-figure">`` of a lab, in page order: the id ``fig-LAB-N`` and the number in its
    caption."""
    from tools.site.figures import CAPTIONS, DEFAULT_FONT

    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        number = CAPTIONS.get(lang, CAPTIONS["en"]).format(number=count, caption="")
        body = DEFAULT_FONT.sub("", m["body"])  # the font list is extra.css's, as for the chapters' figures
        return f'<figure id="fig-{lab}-{count}" class="sa-figure">{body}<figcaption>{number}'

    return LAB_FIGURE.sub(one, html)


def fix(html: str, page: Any, files: Any, lang: str = "zh") -> str:
    """A lab's page: ids as in its table of contents, Markdown links converted, no empty script, its figures
    numbered. Other pages are returned as they are."""
    if not is_lab(page):
        return html
    html = match_toc(html, toc_anchors(page.toc))
    html = convert_md_links(html, page, files)
    html = number_figures(html, lang, page.file.src_uri.removeprefix("labs/").split(".")[0])
    return EMPTY_SCRIPT.sub("", html)
