"""The content hash that keys the build's caches (each lab's folder, each figure's SVG), and their pruning.

What a cached output depends on besides its own code: the Python version, the versions of the
tools that produce it, and the bytes of the files it reads, each named by its path: the modules
of the package that its code imports (:func:`modules_imported`), and the data; a module may add
its own text (``extra``), so that editing it renders again.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import re
import sys
from collections.abc import Iterable
from pathlib import Path


def inputs_hash(
    root: Path, tools: Iterable[str], patterns: Iterable[str], extra: bytes = b"", digests: dict[object, bytes] | None = None
) -> str:
    """sha256 (hex) of the Python version, each tool's version ("absent" if not installed), ``extra``, then
    the path and the sha256 of the bytes of each file under ``root`` matching ``patterns`` (sorted, without
    ``__pycache__``). ``digests``, if given, keeps each file's sha256 and each tool's version for the next call:
    for a build, in which they do not change (a figure's key hashes the same modules, checkpoints and tools as a
    hundred others; reading a version from the installed metadata takes milliseconds)."""
    h = hashlib.sha256(f"python {sys.version}\n".encode())
    for name in tools:
        if digests is None or name not in digests:
            try:
                version = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                version = "absent"
            if digests is None:
                h.update(f"{name} {version}\n".encode())
                continue
            digests[name] = version.encode()
        h.update(f"{name} ".encode() + digests[name] + b"\n")
    h.update(extra)
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if "__pycache__" not in path.parts and path.is_file():
                if digests is None or path not in digests:
                    digest = hashlib.sha256(path.read_bytes()).digest()
                    if digests is None:
                        h.update(f"{path.relative_to(root).as_posix()}\n".encode() + digest)
                        continue
                    digests[path] = digest
                h.update(f"{path.relative_to(root).as_posix()}\n".encode() + digests[path])
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


MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
WORD = re.compile(r"[A-Za-z_][\w.]*")


def module_file(name: str, src: Path) -> Path | None:
    """The file of module ``name`` (``selfattn.plot``) under ``src``: ``selfattn/plot.py`` or a package's ``__init__.py``."""
    base = src.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def names_imported(tree: ast.AST, module: str = "", is_package: bool = False) -> set[str]:
    """The module names a syntax tree imports, anywhere in it (in a function too), as written or resolved
    (``from . import x`` in ``module``), with ``from m import n`` also as ``m.n`` (``n`` may be a module), and
    every string that reads as a dotted name (``python -m selfattn.charlm``, ``import_module("selfattn.x")``)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level <= len(package) else []
                start = ".".join([*base, *([node.module] if node.module else [])])
            else:
                start = node.module or ""
            if start:
                names.add(start)
                names.update(f"{start}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.match(node.value):
            names.add(node.value)
    return names


@functools.lru_cache(maxsize=256)
def _module_names(text: str, module: str, is_package: bool) -> frozenset[str]:
    return frozenset(names_imported(ast.parse(text), module, is_package))


def modules_imported(code: str, root: Path) -> list[str]:
    """The files of the packages under ``root/src`` that Python ``code`` imports, directly or through other
    modules of those packages, sorted (``src/selfattn/__init__.py``, ``src/selfattn/plot.py``, ...).

    Importing ``selfattn.plot`` runs ``selfattn/__init__.py`` first: a package's ``__init__``, and what it imports,
    count for each of its modules. Shell and magic lines of a notebook (``!python -m selfattn.charlm``) count
    by the dotted names they hold. Raises ``SyntaxError`` for code that does not parse."""
    src = root / "src"
    lines = code.splitlines()
    magic = [line for line in lines if line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join("" if line in magic else line for line in lines))
    todo = names_imported(tree) | {word for line in magic for word in WORD.findall(line)}
    seen: set[str] = set()
    found: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # selfattn.a.b imports selfattn, then selfattn.a, then selfattn.a.b
            prefix = ".".join(parts[:i])
            if prefix in seen:
                continue
            seen.add(prefix)
            path = module_file(prefix, src)
            if path is None:
                break
            found[prefix] = path
            todo |= _module_names(path.read_text(encoding="utf-8"), prefix, path.name == "__init__.py")
    return sorted(path.relative_to(root).as_posix() for path in found.values())
