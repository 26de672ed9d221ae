"""Write a file whole or not at all: another process reads the old file, the new one, or none, never a part.

The site build, the tests' processes and ``mkdocs serve`` share caches (``.cache/``) and status files.
Each write goes to a partial file beside the target, named after the writing process, then replaces the
target in one step (``os.replace``, atomic on POSIX and on Windows within one file system).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (its folder is made if missing), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in UTF-8, whole or not at all."""
    write_bytes(path, text.encode("utf-8"))
