"""One search index per language: ``site/search/`` (Chinese, segmented by jieba) and ``site/en/search/``
(English, with English stop words); ``overrides/main.html`` points the English pages at theirs.

:func:`configure` gives each language's build its settings (``on_config``), :func:`remember` keeps
them, and :func:`split_index` splits the one index that mkdocs-static-i18n writes at the end.
:func:`forget_duplicates` keeps that index from doubling at each rebuild of ``make serve``.
:func:`keep_entries` reuses a page's entries from the last build when the page did not change, and
:func:`prune` drops those no page used.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from tools import atomic
from tools.site.hashing import prune_unused
from tools.site.languages import LANGUAGES, root_prefix

SEARCH_INDEX = "search/search_index.json"
SEARCH_KEYS = ("lang", "separator", "pipeline", "fields")
_SEARCH: dict[str, dict[str, Any]] = {}  # each language's search settings, as its build used them


def search_plugin(config: Any) -> Any:
    plugins = getattr(config, "plugins", {})
    return plugins.get("material/search") or plugins.get("search")


def configure(config: Any, lang: str) -> None:
    """The search settings of a language: material's defaults for it (jieba for Chinese)."""
    search = search_plugin(config)
    if search is not None:
        search.config["lang"] = [lang]
        search.config["separator"] = None  # material's default for the language
        search.config["pipeline"] = None


def remember(config: Any, lang: str) -> None:
    """Keep the settings a language's build uses (``on_pre_build``), to write its own index at the end."""
    search = search_plugin(config)
    if search is not None:
        _SEARCH[lang] = {key: search.config[key] for key in SEARCH_KEYS}


def split_index(config: Any) -> None:
    """At the end of the first build, mkdocs-static-i18n writes one index of every language to
    ``site/search/``. It is split here by location (``en/...`` is English, with locations then
    relative to ``en/``), each part with its language's settings. Entries are unique by location:
    under ``mkdocs serve`` i18n adds each rebuild's entries to the previous ones."""
    import json

    path = Path(config.site_dir) / SEARCH_INDEX
    if not path.exists():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for lang in LANGUAGES:
        prefix = root_prefix(lang)
        if prefix:
            docs = [{**d, "location": d["location"][len(prefix):]} for d in index["docs"] if d["location"].startswith(prefix)]
        else:
            docs = [d for d in index["docs"] if not re.match(r"^[a-z]{2}/", d["location"])]
        if not docs:
            continue
        unique = list({d["location"]: d for d in docs}.values())
        part = {"config": _SEARCH.get(lang, index["config"]), "docs": unique}
        target = Path(config.site_dir) / prefix / SEARCH_INDEX
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(part, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def forget_duplicates(config: Any) -> None:
    """Keep one entry per location in the index that material's search carries to the next rebuild.

    Under ``serve --dirty``, material keeps the last index it wrote and, at the next rebuild, replaces
    the saved page's entries in it. The last index it writes is mkdocs-static-i18n's: every entry of
    the Chinese build followed by every entry of the English build, each of which already held the
    carried index. So each rebuild about doubled the entries, and the time of the next rebuild with
    them: 1.3 s, 1.7, 1.9, 2.6, 3.9, 6.0, 10.6, 21.8 s over eight saves of one page. The last entry of
    a location is the newest (material appends a rebuilt page's entries at the end)."""
    search = search_plugin(config)
    entries = getattr(getattr(search, "search_index_prev", None), "entries", None)
    if not entries:
        return
    newest: dict[str, Any] = {}
    for entry in entries:
        newest.pop(entry["location"], None)
        newest[entry["location"]] = entry
    entries[:] = newest.values()


# ------------------------------------------------------------------------------- the entries of each page

SEARCH_CACHE = Path(".cache") / "search"
_CACHE: list[Path] = []  # the cache folder of the build under way (keep_entries)
_USED: set[str] = set()  # the cache files this build read or wrote


def _toc(items: Any) -> list[Any]:
    return [[item.id, item.url, item.title, _toc(item.children)] for item in items or []]


@functools.cache
def _versions() -> tuple[str, ...]:
    """The versions of material and (if material segments with it) jieba: read once, not once per page."""
    import importlib.metadata

    from material.plugins.search import plugin as material_search

    names = ("mkdocs-material", "jieba") if material_search.jieba is not None else ("mkdocs-material",)
    return tuple(importlib.metadata.version(name) for name in names)


def entries_key(index: Any, page: Any) -> str:
    """A hash of everything material's ``add_entry_from_context`` reads: the page's HTML, table of contents,
    URL, title and front matter, the index's settings, and the versions of material and jieba."""
    import hashlib
    import json

    parts = [list(_versions()), index.config, page.url, page.title, page.meta, _toc(page.toc), page.content]
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def keep_entries(root: Path) -> None:
    """Reuse the search entries of a page whose inputs did not change (``on_config``).

    material's search reads each page's HTML with Python's ``html.parser`` and segments its Chinese text
    with jieba: 8.2 of the 21.8 CPU-seconds of a build of this book. A page's entries depend only on what
    :func:`entries_key` hashes, so they are kept in ``.cache/search/<key>.json`` and read back when the
    key is the same; a page that changed is indexed by material, as before."""
    from material.plugins.search import plugin as material_search

    _CACHE[:] = [root / SEARCH_CACHE]
    index = material_search.SearchIndex
    if getattr(index.add_entry_from_context, "keeps_entries", False):
        return
    original = index.add_entry_from_context

    def add_entry_from_context(self: Any, page: Any) -> None:
        import json

        path = _CACHE[0] / f"{entries_key(self, page)}.json"
        _USED.add(path.name)
        if path.exists():
            self.entries.extend(json.loads(path.read_text(encoding="utf-8")))
            return
        start = len(self.entries)
        original(self, page)
        atomic.write_text(path, json.dumps(self.entries[start:], ensure_ascii=False))  # whole or absent

    add_entry_from_context.keeps_entries = True  # type: ignore[attr-defined]
    add_entry_from_context.original = original  # type: ignore[attr-defined]
    index.add_entry_from_context = add_entry_from_context


def prune(root: Path, dirty: bool) -> None:
    """After a full build (not under ``serve --dirty``), drop the kept entries it did not use."""
    prune_unused(root / SEARCH_CACHE, "*.json", _USED, dirty)
