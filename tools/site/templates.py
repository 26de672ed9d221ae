"""The templates: compiled once, kept in ``.cache/templates/``; ``404.html`` and ``sitemap.xml`` per language.

Each build of a language, and every rebuild of ``mkdocs serve``, makes a new Jinja environment,
which would parse and compile material's templates again (about 1 s on 2 cores, each time), and so
does mkdocstrings for the API page: :data:`TEMPLATES` keeps the compiled ones in memory, and on disk
for the next build.
Each language renders ``404.html`` and ``sitemap.xml`` into the root of ``site/``, the later
language over the earlier: :func:`keep_rendering` keeps each rendering and
:func:`write_static_pages` writes it under its own language's root at the end.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache

from tools.site.languages import DEFAULT_LANGUAGE, LANGUAGES, root_prefix


class CompiledTemplates(jinja2.BytecodeCache):
    """Compiled theme templates, kept in memory between the languages of a build and the rebuilds of
    ``mkdocs serve``, and in a directory (``.cache/templates/``) between builds.

    Jinja checks each entry against the checksum of the template's source and against the Python
    version, so an edited template (``overrides/``) or a new interpreter compiles it again.
    """

    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}
        self.disk: jinja2.FileSystemBytecodeCache | None = None

    def use_directory(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.disk = jinja2.FileSystemBytecodeCache(str(directory))

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])
        elif self.disk is not None:
            self.disk.load_bytecode(bucket)  # leaves bucket.code None when stale or missing
            if bucket.code is not None:
                self.store[bucket.key] = bucket.bytecode_to_string()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.store[bucket.key] = bucket.bytecode_to_string()
        if self.disk is not None:
            self.disk.dump_bytecode(bucket)


TEMPLATES = CompiledTemplates()
_STATIC: dict[tuple[str, str], str] = {}  # (language, template) -> 404.html and sitemap.xml as rendered


def keep_compiled(env: Any) -> Any:
    """Give a Jinja environment the compiled templates of the earlier builds (on disk once
    :func:`keep_compiled_everywhere` has named the folder)."""
    env.bytecode_cache = TEMPLATES
    return env


def keep_compiled_everywhere(config: Any, root: Path) -> None:
    """Every environment the theme makes keeps its compiled templates (``on_config``): the build's, and the
    ones print-site makes for the print page and material's search for its words (each compiled about 40 of
    material's templates again in each language's build)."""
    TEMPLATES.use_directory(root / ".cache" / "templates")
    theme = config.theme
    if not getattr(theme.get_env, "keeps_compiled", False):
        make = theme.get_env

        def get_env() -> Any:
            return keep_compiled(make())

        get_env.keeps_compiled = True  # type: ignore[attr-defined]
        theme.get_env = get_env


def keep_compiled_api(config: Any) -> None:
    """The same for mkdocstrings' templates, which render the API page (``on_pre_build``, before the pages
    are rendered): its handler's own environment compiled about 33 of them again in each language's build."""
    plugin = config.plugins.get("mkdocstrings") if hasattr(config, "plugins") else None
    if plugin is not None:
        keep_compiled(plugin.handlers.get_handler("python").env)


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
