"""The language switcher: every page leads to the same page in the other edition.

``extra.alternate`` is the switcher of material's header, which material also writes as
``<link rel="alternate" hreflang>`` into the head; every page exists in both editions
(``tests/book/test_parity.py``). ``lang_root`` tells ``overrides/main.html`` where this language's
search index is.
"""

from __future__ import annotations

from typing import Any

from tools.site.languages import LANGUAGES, root_prefix


def counterpart_url(url: str, lang: str, other: str) -> str:
    """The same page in another language: ``en/05-implementation/`` <-> ``05-implementation/``."""
    return root_prefix(other) + url.removeprefix(root_prefix(lang))


def point(context: Any, page: Any, config: Any, lang: str) -> Any:
    """Point the switcher of a page at its counterparts (``on_page_context``)."""
    url = page.url if page.url not in (".", "./") else ""
    config.extra["alternate"] = [
        {"name": name, "lang": code, "link": counterpart_url(url, lang, code) or "./"}
        for code, name in LANGUAGES.items()
    ]
    config.extra["language_roots"] = [root_prefix(code) or "./" for code in LANGUAGES]
    context["lang_root"] = root_prefix(lang)  # overrides/main.html: where this language's search index is
    return context
