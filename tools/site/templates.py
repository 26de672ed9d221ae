"""The templates that each language renders into the root of the site: ``404.html`` and ``sitemap.xml``.

Each language renders ``404.html`` and ``sitemap.xml`` into the root of ``site/``, the later
language over the earlier: :func:`keep_rendering` keeps each rendering and
:func:`write_static_pages` writes it under its own language's root at the end.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tools.site.languages import DEFAULT_LANGUAGE, LANGUAGES, root_prefix

_STATIC: dict[tuple[str, str], str] = {}  # (language, template) -> 404.html and sitemap.xml as rendered


def keep_rendering(output: str, template_name: str, lang: str) -> str:
    """Keep a language's ``404.html`` or ``sitemap.xml`` as rendered (``on_post_template``)."""
    _STATIC[(lang, template_name)] = output
    return output


def in_language(entry: str, lang: str, config: Any) -> bool:
    """Whether a sitemap entry (``<url><loc>https://.../selfattn/en/05-implementation/</loc>...``) is of ``lang``."""
    from urllib.parse import urlparse

    loc = re.search(r"<loc>(.*?)</loc>", entry)
    base = urlparse(config.site_url or "/").path
    path = urlparse(loc[1]).path.removeprefix(base) if loc else ""
    page_lang = next((code for code in LANGUAGES if root_prefix(code) and path.startswith(root_prefix(code))), DEFAULT_LANGUAGE)
    return page_lang == lang


def write_static_pages(config: Any) -> None:
    """Each language's ``404.html`` and ``sitemap.xml`` (with its ``.gz``) under its own root."""
    import gzip

    for (lang, name), output in _STATIC.items():
        if name == "sitemap.xml":  # only this language's pages: a link to the other one is a full page load
            entries = re.findall(r"\s*<url>.*?</url>", output, flags=re.S)
            for entry in entries:
                if not in_language(entry, lang, config):
                    output = output.replace(entry, "", 1)
        target = Path(config.site_dir) / root_prefix(lang) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(output, encoding="utf-8")
        if name == "sitemap.xml":
            with gzip.GzipFile(target.with_suffix(".xml.gz"), "wb", mtime=0) as gz:
                gz.write(output.encode("utf-8"))
    _STATIC.clear()
