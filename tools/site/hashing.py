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


def files_read(code: str, root: Path) -> list[str]:
    """The files of ``root`` that Python ``code`` names by a constant path, sorted: a string
    (``"models/charlm.pt"``) or a chain of constant parts joined with ``/`` after any start
    (``root / "docs/labs/data/book.txt"``, ``Path("benchmarks") / "results" / "cpu.json"``).

    What the labs and the figures read besides the package: the files their cache keys must hash,
    and the files a lab's downloadable notebook must carry (``tools/site/notebooks.py``)."""
    import ast

    def parts(node: ast.AST) -> list[str]:
        """The constant tail of a ``/`` chain; an unknown start (a variable) contributes nothing."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return parts(node.left) + parts(node.right)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            return parts(node.args[0])  # Path("benchmarks")
        return []

    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            tail = parts(node)
            candidates = ["/".join(tail[i:]) for i in range(len(tail))]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            candidates = [node.value]
        else:
            continue
        for name in candidates:
            if name and "\n" not in name and len(name) < 200 and not name.startswith(("/", ".")):
                try:
                    if (root / name).is_file():
                        found.add(Path(name).as_posix())
                except OSError:
                    continue
    return sorted(found)
