"""MkDocs hooks of the book (registered under ``hooks:`` in ``mkdocs.yml``).

* ``on_pre_build`` re-tangles ``src/`` from the chapters on every ``mkdocs build``
  and every rebuild of ``mkdocs serve``. Only files whose text changed are
  written: rewriting an unchanged file would trigger another rebuild, forever.
* ``on_page_markdown`` turns a titled block's marker line into the block's
  title, so the reader sees ``src/selfattn/NAME.py`` above the code and never
  the ``#| file:`` line itself.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # so that `tools` imports under `mkdocs`
from tools.tangle import MARKER, TangleError, parse_fences, tangle, write

log = logging.getLogger("mkdocs.hooks.tangle")


def on_pre_build(config: Any) -> None:
    root = Path(config.config_file_path).parent
    try:
        changed = write(root, tangle(root))
    except TangleError as err:
        raise PluginError(f"tangle: {err}") from err
    if changed:
        log.info("tangle: wrote %s", ", ".join(changed))


def titleize(markdown: str) -> str:
    """Move each ``#| file:`` marker into the title of its ```` ```python ```` fence."""
    lines = markdown.splitlines(keepends=True)
    for fence in reversed(parse_fences(markdown, "")):
        if fence.info != "python" or fence.char != "`" or not fence.body or not MARKER.match(fence.body[0].strip()):
            continue
        path = MARKER.match(fence.body[0].strip())["path"]  # type: ignore[index]
        opening = lines[fence.start]
        end = "\n" if opening.endswith("\n") else ""
        lines[fence.start] = f'{opening.rstrip()} title="{path}"{end}'
        del lines[fence.start + 1]
    return "".join(lines)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return titleize(markdown)
