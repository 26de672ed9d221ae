"""The content hash that keys the build's caches (the labs' folder, each figure's SVG), and their pruning.

What a cached output depends on besides its own code: the Python version, the versions of the
tools that produce it, and the bytes of the files it reads (the package sources, the data), each
named by its path; a module may add its own text (``extra``), so that editing it renders again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
from collections.abc import Iterable
from pathlib import Path


def inputs_hash(root: Path, tools: Iterable[str], patterns: Iterable[str], extra: bytes = b"") -> str:
    """sha256 (hex) of the Python version, each tool's version ("absent" if not installed), ``extra``, then
    the path and bytes of each file under ``root`` matching ``patterns`` (sorted, without ``__pycache__``)."""
    h = hashlib.sha256(f"python {sys.version}\n".encode())
    for name in tools:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{name} {version}\n".encode())
    h.update(extra)
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(root).as_posix()}\n".encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def prune_unused(folder: Path, pattern: str, used: set[str], dirty: bool) -> None:
    """After a full build (not under ``serve --dirty``, which rebuilds some pages only) that used some of the
    cached files in ``folder``, drop those matching ``pattern`` that it did not use; then forget ``used``."""
    if not dirty and used:
        for stale in folder.glob(pattern):
            if stale.name not in used:
                stale.unlink()
    used.clear()
