"""What the attention explorer takes from the book besides the model: ``explorer/book.json``.

The explorer (``docs/explorer.md``) reads one small JSON file per edition, written here at build time
from the package, never copied by hand:

* ``cmap``: the colormap of the book's attention weights, ``selfattn.plot.WEIGHTS_CMAP``, as
  matplotlib draws it: its ``name`` and ``colors``, 256 ``rrggbb`` hex colors for the weights
  0, 1/255, ..., 1 (the explorer colors a weight w with ``colors[round(255 w)]``).
* ``example``: chapter 3's worked example, from ``selfattn.example``: the embeddings ``x`` (6, 4)
  and the projections ``w_q``, ``w_k``, ``w_v`` (4, 4; row = an input feature), ``d_k`` (the
  columns of W_k), and the edition's ``tokens`` and ``features``. The package leaves the labels
  to the pages, so they are read from the chapter's own code: the first Python block of
  ``docs/03-qkv-formula.md`` (or ``.en.md``) that imports ``example`` assigns ``tokens = [...]``
  and ``features = [...]``.

``tools/site/explorer_hook.py`` calls :func:`cached`: the file is written once into
``.cache/explorer/book-<lang>-<key>.json`` and again only when one of :data:`SOURCES`, this file
or matplotlib's version changes (a warm build imports neither torch nor matplotlib).

Run ``python -m tools.data.explorer_book zh`` to print the Chinese edition's file.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tools.book.tangle import parse_fences

FORMAT = "selfattn.explorer-book/1"
NAME = "book.json"
CHAPTER = {"zh": "docs/03-qkv-formula.md", "en": "docs/03-qkv-formula.en.md"}
# What the file depends on (with the chapter of the edition): the example, the colormap's name.
SOURCES = ("src/selfattn/example.py", "src/selfattn/plot.py")
CACHE = ".cache/explorer"


def labels(page: Path) -> dict[str, list[str]]:
    """``tokens`` and ``features`` as the chapter's worked example assigns them (its first Python
    block that imports ``selfattn.example``)."""
    for fence in parse_fences(page.read_text(encoding="utf-8"), str(page)):
        code = "\n".join(fence.body)
        if fence.info != "python" or "from selfattn import example" not in code:
            continue
        found = {}
        for node in ast.parse(code).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id in ("tokens", "features"):
                    found[target.id] = ast.literal_eval(node.value)
        if found.keys() == {"tokens", "features"}:
            return found
    raise ValueError(f"explorer_book: no Python block of {page} imports selfattn.example and "
                     "assigns tokens = [...] and features = [...]")


def colors(name: str, n: int = 256) -> str:
    """The colormap ``name`` at n evenly spaced values from 0 to 1, as n ``rrggbb`` hex colors."""
    import matplotlib as mpl
    import numpy as np

    rgb = np.round(mpl.colormaps[name](np.linspace(0, 1, n))[:, :3] * 255).astype(int)
    return "".join(f"{r:02x}{g:02x}{b:02x}" for r, g, b in rgb.tolist())


def export(root: Path, lang: str) -> dict[str, Any]:
    """The edition's ``book.json`` (see the module docstring)."""
    from selfattn import example, plot

    x = example.embeddings()
    w_q, w_k, w_v = example.projections()
    names = labels(root / CHAPTER[lang])
    n, d = x.shape
    if len(names["tokens"]) != n or len(names["features"]) != d:
        raise ValueError(f"explorer_book: {CHAPTER[lang]} labels {len(names['tokens'])} tokens and "
                         f"{len(names['features'])} features; selfattn.example has X of shape {(n, d)}")
    return {
        "format": FORMAT,
        "cmap": {"name": plot.WEIGHTS_CMAP, "colors": colors(plot.WEIGHTS_CMAP)},
        "example": {
            "tokens": names["tokens"],
            "features": names["features"],
            "x": x.tolist(),
            "w_q": w_q.tolist(),
            "w_k": w_k.tolist(),
            "w_v": w_v.tolist(),
            "d_k": w_k.shape[1],
        },
    }


def cache_key(root: Path, lang: str) -> str:
    """The bytes the file depends on: SOURCES, the edition's chapter 3, this file, matplotlib."""
    h = hashlib.sha256()
    for rel in (*SOURCES, CHAPTER[lang]):
        h.update((root / rel).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(version("matplotlib").encode())
    return h.hexdigest()[:16]


def cached(root: Path, lang: str) -> Path:
    """The edition's ``book.json`` under ``.cache/explorer/``, exported only when missing; the
    edition's older files are removed."""
    base = root / CACHE
    path = base / f"book-{lang}-{cache_key(root, lang)}.json"
    if not path.is_file():
        base.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(export(root, lang), ensure_ascii=False, separators=(",", ":")),
                       encoding="utf-8")
        tmp.replace(path)  # complete or absent
    for stale in base.glob(f"book-{lang}-*.json"):
        if stale != path:
            stale.unlink(missing_ok=True)
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in CHAPTER:
        print("usage: python -m tools.data.explorer_book zh|en", file=sys.stderr)
        return 2
    print(json.dumps(export(Path(__file__).resolve().parents[2], argv[0]), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
