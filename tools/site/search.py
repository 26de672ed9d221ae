"""One search index per language: ``site/search/`` (Chinese, segmented by jieba) and ``site/en/search/``
(English, with English stop words); ``overrides/main.html`` points the English pages at theirs.

:func:`configure` gives each language's build its settings (``on_config``), :func:`remember` keeps
them, and :func:`split_index` splits the one index that mkdocs-static-i18n writes at the end.
:func:`forget_duplicates` keeps that index from doubling at each rebuild of ``make serve``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
