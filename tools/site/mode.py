"""Which command runs the build: ``mkdocs build``, ``mkdocs serve`` or ``mkdocs serve --dirty``.

``mkdocs serve`` keeps the Python modules between its rebuilds, so what is noted here at
``on_startup`` holds for every rebuild. Under ``serve --dirty`` (``make serve``) only the saved
page is rebuilt: the other modules skip or narrow their work there.
"""

from __future__ import annotations

SERVE = {"serve": False, "dirty": False}


def start(command: str, dirty: bool) -> None:
    """Note the command (``on_startup``)."""
    SERVE["serve"] = command == "serve"
    SERVE["dirty"] = command == "serve" and dirty


def serving() -> bool:
    return SERVE["serve"]


def dirty() -> bool:
    return SERVE["dirty"]
