"""The two editions (mkdocs-static-i18n: ``NAME.md`` in Chinese, ``NAME.en.md`` in English).

i18n builds the Chinese site into ``site/``, then the English one into ``site/en/`` from inside
the first build's ``on_post_build``: every hook runs once per language. :func:`begin` and
:func:`end` keep the stack of languages being built, so that the first build's
``on_post_build`` knows it comes after all the others (:func:`outermost`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_LANGUAGE = "zh"  # at today's URLs; every other language of the i18n plugin lives under /<lang>/
LANGUAGES = {"zh": "中文", "en": "English"}  # the editions, in the switcher's order

_BUILDS: list[str] = []  # the languages being built: i18n builds the others inside the first one's on_post_build


def language(config: Any) -> str:
    """The language being built: mkdocs-static-i18n builds the default one first, then each other one."""
    i18n = getattr(config, "plugins", {}).get("i18n")
    return getattr(i18n, "current_language", None) or DEFAULT_LANGUAGE


def root_prefix(lang: str) -> str:
    """Where a language's pages live in site/: ``""`` for Chinese, ``"en/"`` for English."""
    return "" if lang == DEFAULT_LANGUAGE else f"{lang}/"


def source_of(src_uri: str, lang: str, docs: Path | None = None) -> str:
    """``05-implementation.md`` -> ``05-implementation.en.md`` in English (the file the page is built from;
    with ``docs``, the Chinese page when there is no English one: i18n falls back to it)."""
    if lang == DEFAULT_LANGUAGE:
        return src_uri
    stem, dot, ext = src_uri.rpartition(".")
    translated = f"{stem}.{lang}.{ext}"
    return src_uri if docs is not None and not (docs / translated).exists() else translated


def configure(config: Any) -> str:
    """Set the theme's language to the one being built (``on_config``); return it."""
    lang = language(config)
    config.theme["language"] = lang  # the search plugin takes its separator and pipeline from it
    return lang


def begin(config: Any) -> str:
    """A language's build starts (``on_pre_build``): note it, and forget the other language's API anchors
    (mkdocs-autorefs keeps them between builds and would see every object twice)."""
    lang = language(config)
    _BUILDS.append(lang)
    autorefs = config.plugins.get("autorefs")
    for name in ("_primary_url_map", "_secondary_url_map", "_title_map", "_breadcrumbs_map"):
        getattr(autorefs, name, {}).clear()
    return lang


def current(config: Any) -> str:
    """The language of the build under way (also at ``on_post_template``, where i18n has moved on)."""
    return _BUILDS[-1] if _BUILDS else language(config)


def end(config: Any) -> str:
    """A language's build ends (``on_post_build``); return its language."""
    return _BUILDS.pop() if _BUILDS else language(config)


def nested() -> bool:
    """Whether a build is already under way (``on_pre_build`` of the English build, inside the Chinese one)."""
    return bool(_BUILDS)


def reset() -> None:
    """Forget the builds under way (``on_build_error``: a failed build never reaches its ``on_post_build``)."""
    _BUILDS.clear()


def outermost() -> bool:
    """Whether the build that just ended is the first one, which ends after all the others."""
    return not _BUILDS
