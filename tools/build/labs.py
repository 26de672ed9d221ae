"""The labs (``docs/labs/*.py``, jupytext scripts that mkdocs-jupyter executes into pages).

* The cache. :func:`use_cache` points mkdocs-jupyter's cache at ``.cache/labs/<key>/<lang>/``
  (outside ``docs/``, git-ignored), where ``<key>`` (:func:`lab_inputs_key`) hashes everything a
  lab's output depends on besides its own text: the package sources ``src/**/*.py``, the benchmark
  results the labs read, and the versions of Python, torch and the notebook tools. mkdocs-jupyter
  keys each entry by the lab's text, so a lab is executed again only when it, the package, the data
  or a tool changed; an edit of a chapter re-executes nothing. A fresh clone (CI) has no cache and
  runs all.
* Once for both editions. A lab whose code cells match in both languages is executed once per
  build (:func:`execute_each_lab_once`).
* Their pages. mkdocs-static-i18n's ``on_files`` drops mkdocs-jupyter's wrappers: :func:`rewrap`
  makes the labs notebook pages again.
* Under ``serve --dirty``, when the package or the data changed, :func:`rebuild_pages_showing_src`
  also rebuilds the pages that show them (the labs, and pages with a mkdocstrings ``:::`` directive).
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from tools.build.hashing import inputs_hash
from tools.build.languages import root_prefix

log = logging.getLogger("mkdocs.hooks.tangle")

LAB = re.compile(r"^labs/(?P<name>[^/]+)\.py$")  # docs/labs/scaling.py (jupytext percent format)
LAB_CACHE = ".cache/labs"
# Besides its own text (mkdocs-jupyter's key), what a lab's executed output depends on:
LAB_INPUTS = ("src/**/*.py", "benchmarks/results/*.json")
LAB_TOOLS = ("torch", "numpy", "matplotlib", "mkdocs-jupyter", "nbconvert", "nbclient", "jupytext", "ipykernel")
KEPT_CACHES = 3  # the newest cache folders kept (switching branches back and forth stays cheap)

STATE = {"inputs": "", "key": ""}  # this build's inputs key; the key the last `serve --dirty` rebuild saw


def lab_inputs_key(root: Path) -> str:
    """A hash of the package sources, the benchmark data and the tool versions the labs run with."""
    return inputs_hash(root, LAB_TOOLS, LAB_INPUTS)[:16]


def use_cache(config: Any, root: Path, lang: str) -> None:
    """Point mkdocs-jupyter's ``cache_dir`` at ``.cache/labs/<key>/<lang>/``; drop all but the newest few keys.

    One folder per language: mkdocs-jupyter evicts the entries a build did not use, and each
    language's build uses only its own labs. Run after tangling: the key hashes the new src/."""
    STATE["inputs"] = lab_inputs_key(root)
    jupyter = getattr(config, "plugins", {}).get("mkdocs-jupyter")
    if jupyter is None or not jupyter.config.get("cache"):
        return
    base = root / LAB_CACHE
    folder = base / STATE["inputs"]
    jupyter.config["cache_dir"] = str(folder / lang)
    folder.mkdir(parents=True, exist_ok=True)
    folder.touch()  # newest first when pruning
    older = sorted((p for p in base.iterdir() if p.is_dir() and p != folder), key=lambda p: p.stat().st_mtime)
    for stale in older[: max(0, len(older) - (KEPT_CACHES - 1))]:
        shutil.rmtree(stale, ignore_errors=True)


def code_key(nb: Any) -> str:
    """What a lab's output depends on in the lab itself: its code cells, without comments and without
    the messages of ``assert`` (text that the English edition translates and that prints nothing)."""
    import ast

    h = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        magics = [line for line in cell.source.splitlines() if line.lstrip().startswith(("%", "!"))]
        body = "\n".join("" if line in magics else line for line in cell.source.splitlines())
        try:
            tree = ast.parse(body)
        except SyntaxError:
            h.update(cell.source.encode())
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                node.msg = None
        h.update(("\n".join(magics) + ast.dump(tree)).encode())
    return h.hexdigest()


_EXECUTED: dict[str, list[tuple[Any, Any]]] = {}  # inputs key + code key -> each code cell's (outputs, count)


def execute_each_lab_once() -> None:
    """Run a lab once per build for both languages: the English lab's code cells are the Chinese ones
    apart from comments and assert messages (``tests/test_parity.py``), so its outputs are the same.

    mkdocs-jupyter executes each lab page through nbconvert's ``ExecutePreprocessor``; wrapped here,
    it reuses the outputs of a lab already executed in this process with the same package, data and
    code (``code_key``), and executes anything else as before."""
    import copy

    from nbconvert.preprocessors import ExecutePreprocessor

    original = ExecutePreprocessor.preprocess
    if getattr(original, "selfattn_once", False):
        return

    def preprocess(self: Any, nb: Any, resources: Any = None, km: Any = None) -> Any:
        key = f"{STATE['inputs']}:{code_key(nb)}"
        cells = [c for c in nb.cells if c.cell_type == "code"]
        title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown" and c.source), "?")
        if key in _EXECUTED:
            for cell, (outputs, count) in zip(cells, _EXECUTED[key], strict=True):
                cell.outputs, cell.execution_count = copy.deepcopy(outputs), count
            log.info("labs: reused for %r the outputs of the same code, executed in this build", title)
            return nb, resources
        nb, resources = original(self, nb, resources, km)
        log.info("labs: executed %r", title)
        for stale in [k for k in _EXECUTED if not k.startswith(f"{STATE['inputs']}:")]:
            del _EXECUTED[stale]
        _EXECUTED[key] = [(copy.deepcopy(c.outputs), c.get("execution_count")) for c in cells]
        return nb, resources

    preprocess.selfattn_once = True  # type: ignore[attr-defined]
    ExecutePreprocessor.preprocess = preprocess


def rewrap(files: Any, config: Any, lang: str) -> Any:
    """Make the labs notebook pages again. mkdocs-jupyter wraps each ``labs/*.py`` as a page at
    ``on_files``; mkdocs-static-i18n then replaces every file by a copy of its own (in English,
    ``labs/scaling.py`` is built from ``labs/scaling.en.py``), which drops the wrapper: the lab would be
    copied as raw text, without an error even under ``--strict``. The files stay in i18n's own
    ``Files``, which finds ``labs/scaling.en.py`` when the nav says ``labs/scaling.py``."""
    from mkdocs_jupyter.plugin import NotebookFile

    jupyter = getattr(config, "plugins", {}).get("mkdocs-jupyter")
    if jupyter is None:
        return files
    prefix = root_prefix(lang)
    for file in list(files):
        if isinstance(file, NotebookFile) or not jupyter.should_include(file):
            continue
        page = NotebookFile(file, **config)
        stem = getattr(file, "norm_src_uri", file.src_uri).rsplit(".", 1)[0]  # labs/scaling
        page.dest_path = f"{prefix}{stem}/index.html" if config.use_directory_urls else f"{prefix}{stem}.html"
        page.abs_dest_path = str(Path(config.site_dir) / page.dest_path)
        page.url = f"{prefix}{stem}/" if config.use_directory_urls else page.dest_path
        files.remove(file)
        files.append(page)
    return files


def rebuild_pages_showing_src(files: Any, root: Path) -> None:
    """Under ``serve --dirty`` only saved pages are rebuilt; when the package or the data changed, also
    rebuild the pages that show them (the labs, and pages with a mkdocstrings ``:::`` directive)."""
    key = lab_inputs_key(root)
    if STATE["key"] and key != STATE["key"]:
        for file in files:
            src = Path(file.abs_src_path or "")
            shows_src = LAB.match(file.src_uri) or (
                src.suffix == ".md" and src.is_file() and "\n::: " in src.read_text(encoding="utf-8")
            )
            if shows_src and Path(file.abs_dest_path).exists():
                Path(file.abs_dest_path).unlink()  # is_modified() is now true: rebuilt in this round
    STATE["key"] = key

