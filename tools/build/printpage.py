"""The print page (mkdocs-print-site: the whole book on one page, for print or PDF), per language.

Each language has its own (``print_page/`` and ``en/print_page/``) with titles in its language.
Under ``serve --dirty`` it could only show the pages rebuilt: it is left out there (``make site``
builds it). print-site makes the anchors of headings unique by prefixing them with the page
(``#03-qkv-formula-fig-3-2``), but not the ids of figures, which are unique in the whole book
already: :func:`fix_figure_links` points the links to figures back at them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tools.build.languages import LANGUAGES, root_prefix

PRINT_PAGE = {  # per language: the print page of the English edition is en/print_page/
    "zh": {"print_page_title": "全书（打印版）", "toc_title": "目录", "print_page_basename": "print_page"},
    "en": {"print_page_title": "The Whole Book (Print Version)", "toc_title": "Contents", "print_page_basename": "en/print_page"},
}
FIGURE_LINK = re.compile(r'href="#[\w.-]*?-(fig-\d+-\d+)"')


def configure(config: Any, lang: str, dirty: bool) -> None:
    """The print page's titles in the language being built; off under ``serve --dirty``."""
    printer = config.plugins.get("print-site")
    if printer is not None:
        printer.config.update(PRINT_PAGE.get(lang, PRINT_PAGE["en"]))
        if dirty:
            printer.config["enabled"] = False


def fix_figure_links(config: Any) -> None:
    """On each language's print page, point ``#PAGE-fig-3-2`` (print-site's rewrite) at ``#fig-3-2``."""
    for lang in LANGUAGES:
        page = Path(config.site_dir) / root_prefix(lang) / "print_page" / "index.html"
        if page.exists():
            html = page.read_text(encoding="utf-8")
            fixed = FIGURE_LINK.sub(r'href="#\1"', html)
            if fixed != html:
                page.write_text(fixed, encoding="utf-8")
