"""Code blocks highlighted once: each block's HTML from Pygments, kept in ``.cache/highlight/``.

pymdownx.highlight turns every fenced block into HTML with Pygments: about 750 blocks in a build of
both editions, a quarter of its time (the lexer and the HTML formatter, line by line). The HTML of a
block depends only on its code, on the arguments pymdownx passes (language, title, classes, line
numbers...), on the extension's settings and on the versions of Pygments and pymdownx. So
:func:`keep_highlighting` keeps it in ``.cache/highlight/<key>.html``, under a hash of all of those,
and reads it back when the key is the same; :func:`prune` drops, after a full build, what no block used.

Two kinds of calls go to pymdownx as before: inline code (``inline=True`` returns an element, not
HTML) and a block whose title is HTML (``title_mode: html`` stores the title in the page's own stash).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

from tools import atomic
from tools.site.hashing import prune_unused

HIGHLIGHT_CACHE = Path(".cache") / "highlight"
_CACHE: list[Path] = []  # the cache folder of the build under way (keep_highlighting)
_USED: set[str] = set()  # the cache files this build read or wrote


@functools.cache
def _versions() -> tuple[str, ...]:
    import importlib.metadata

    return tuple(importlib.metadata.version(name) for name in ("pygments", "pymdown-extensions"))


def block_key(highlighter: Any, arguments: dict[str, Any]) -> str:
    """A hash of what decides a block's HTML: the highlighter's settings (all its attributes but the Markdown
    instance), the arguments of the call, and the versions of Pygments and pymdownx."""
    settings = {name: value for name, value in vars(highlighter).items() if name != "md"}
    # In insertion order: the order of ``attrs`` is the order of the attributes in the HTML.
    text = json.dumps([list(_versions()), settings, arguments], ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def keep_highlighting(root: Path) -> None:
    """Reuse the HTML of a block whose inputs did not change (``on_config``); see the module's docstring."""
    from pymdownx.highlight import Highlight

    _CACHE[:] = [root / HIGHLIGHT_CACHE]
    if getattr(Highlight.highlight, "keeps_highlighting", False):
        return
    original = Highlight.highlight
    signature = inspect.signature(original)

    def highlight(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = signature.bind(self, *args, **kwargs)
        call.apply_defaults()
        arguments = {name: value for name, value in call.arguments.items() if name != "self"}
        if arguments["inline"] or (arguments["title"] and getattr(self, "title_mode", "text") == "html"):
            return original(self, *args, **kwargs)
        path = _CACHE[0] / f"{block_key(self, arguments)}.html"
        _USED.add(path.name)
        if path.exists():
            return path.read_text(encoding="utf-8")
        html = original(self, *args, **kwargs)
        atomic.write_text(path, html)  # whole or absent
        return html

    highlight.keeps_highlighting = True  # type: ignore[attr-defined]
    highlight.original = original  # type: ignore[attr-defined]
    Highlight.highlight = highlight


def prune(root: Path, dirty: bool) -> None:
    """After a full build (not under ``serve --dirty``), drop the kept blocks it did not use."""
    prune_unused(root / HIGHLIGHT_CACHE, "*.html", _USED, dirty)
