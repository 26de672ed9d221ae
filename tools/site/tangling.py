"""The literate program: ``src/`` re-tangled before every build, and each titled block's file as its title.

:func:`retangle` runs on every ``mkdocs build`` and every rebuild of ``mkdocs serve``. Only files
whose text changed are written: rewriting an unchanged file would trigger another rebuild, forever.
:func:`titleize` turns a titled block's marker line into the block's title, so the reader sees
``src/selfattn/NAME.py`` above the code and never the ``#| file:`` line itself.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tools.book.tangle import MARKER, TangleError, parse_fences, tangle, write

log = logging.getLogger("mkdocs.hooks.tangle")


def retangle(root: Path) -> None:
    """Write the package's files that the chapters changed (a bad chapter fails the build)."""
    from mkdocs.exceptions import PluginError

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
