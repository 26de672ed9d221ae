"""Which command runs the build: ``mkdocs build``, ``mkdocs serve`` or ``mkdocs serve --dirty``.

``mkdocs serve`` keeps the Python modules between its rebuilds, so what is noted here at
``on_startup`` holds for every rebuild. Under ``serve --dirty`` (``make serve``) only the saved
page is rebuilt, and a page build (``make check``) builds a few pages: the other modules skip or
narrow their work there.
"""

from __future__ import annotations

SERVE = {"serve": False, "dirty": False, "partial": False}


def start(command: str, dirty: bool) -> None:
    """Note the command (``on_startup``)."""
    SERVE["serve"] = command == "serve"
    SERVE["dirty"] = command == "serve" and dirty
    SERVE["partial"] = False


def build_some_pages() -> None:
    """This build builds some pages of the book only (``tools/site/page_build.py``), after ``on_startup``."""
    SERVE["partial"] = True


def serving() -> bool:
    return SERVE["serve"]


def dirty() -> bool:
    return SERVE["dirty"]


def partial() -> bool:
    """Whether this build renders some pages only (``serve --dirty``, or a page build): it must not drop the
    cache entries of the pages it did not render."""
    return SERVE["dirty"] or SERVE["partial"]
