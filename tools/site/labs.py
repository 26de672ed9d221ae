"""The labs (``docs/labs/*.py``, jupytext scripts that mkdocs-jupyter executes into pages).

* The cache. :func:`use_cache` points mkdocs-jupyter's cache, for each lab's page, at
  ``.cache/labs/<key>/<lang>/`` (outside ``docs/``, git-ignored), where ``<key>`` (:func:`lab_key`)
  hashes everything the lab's output depends on besides its own text: the modules of the package
  that its code imports, directly or through them (``tools/site/hashing.py``, :func:`modules_imported`;
  importing ``selfattn.plot`` runs ``selfattn/__init__.py`` and what it imports), the data the labs read
  (:data:`LAB_DATA`: the corpus, the model checkpoints, the benchmark results; every file a lab names is
  matched, :func:`files_read_by_lab`), and the versions of Python, torch and the notebook tools.
  mkdocs-jupyter keys each entry by the lab's text, so a lab is executed again only when it, a module
  it imports, the data or a tool changed; an edit of a chapter that tangles to a module no lab imports
  re-executes none. A fresh clone (CI) has no cache and runs all.
* Once for both editions. A lab whose code cells match in both languages is executed once per
  build (:func:`execute_each_lab_once`).
* Ahead, two at a time. mkdocs-jupyter executes the labs one after another, in page order, and
  the English build starts only after the Chinese one. :func:`execute_ahead` starts, when the first
  edition's build begins, every lab that this build will execute (not in mkdocs-jupyter's cache),
  for both editions, in two kernels at a time, the largest lab first; the page then takes the
  outputs from there. Every lab kernel runs with one torch thread (:data:`LAB_THREADS`), ahead or
  not, so that two kernels share two cores without fighting and a lab's numbers do not depend on
  which way it ran.
* Their pages. mkdocs-static-i18n's ``on_files`` drops mkdocs-jupyter's wrappers: :func:`rewrap`
  makes the labs notebook pages again.
* Under ``serve --dirty``, when the package or the data changed, :func:`rebuild_pages_showing_src`
  also rebuilds the pages that show them (the labs, and pages with a mkdocstrings ``:::`` directive);
  a lab whose key did not change comes from the cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tools.site.hashing import inputs_hash, modules_imported
from tools.site.languages import DEFAULT_LANGUAGE, root_prefix

log = logging.getLogger("mkdocs.hooks.tangle")

LAB = re.compile(r"^labs/(?P<name>[^/]+)\.py$")  # docs/labs/scaling.py (jupytext percent format)
LAB_CACHE = ".cache/labs"
# Besides its own text (mkdocs-jupyter's key), what a lab's executed output depends on:
LAB_DATA = ("docs/labs/data/*.txt", "models/*.pt", "benchmarks/results/*.json")  # the files the labs read
LAB_INPUTS = ("src/**/*.py", *LAB_DATA)  # what the pages that show the package depend on (serve --dirty)
LAB_TOOLS = ("torch", "numpy", "matplotlib", "mkdocs-jupyter", "nbconvert", "nbclient", "jupytext", "ipykernel")
KEPT_CACHES = 4  # the newest cache folders kept besides those a build used (switching branches stays cheap)
AHEAD_WORKERS = 2  # lab kernels executing at once (one per core of the 2-core machine the budgets are measured on)
LAB_THREADS = "1"  # OMP_NUM_THREADS of every lab kernel: torch's intra-op threads

STATE = {"root": "", "key": ""}  # the book's root; the package key the last `serve --dirty` rebuild saw
_FOLDERS: set[str] = set()  # the cache folders (keys) this build used


def lab_inputs_key(root: Path) -> str:
    """A hash of all the package sources, the data and the tool versions: when it changes, a rebuild under
    ``serve --dirty`` rebuilds the pages that show the package (:func:`rebuild_pages_showing_src`)."""
    return inputs_hash(root, LAB_TOOLS, LAB_INPUTS)[:16]


def lab_code(nb: Any) -> str:
    """A lab's code cells, one after another (its magic and shell lines as written)."""
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def lab_key(nb: Any, root: Path) -> str:
    """A hash of what a lab's output depends on besides its text: the package modules its code imports
    (:func:`modules_imported`), the data the labs read and the versions of the tools it runs with."""
    try:
        modules = modules_imported(lab_code(nb), root)
    except SyntaxError:  # the kernel reports it; keyed by every module, to be safe
        modules = ["src/**/*.py"]
    return inputs_hash(root, LAB_TOOLS, (*modules, *LAB_DATA))[:16]


def lab_folder(path: Path, root: Path) -> Path:
    """The cache folder of a lab's page: ``.cache/labs/<lab_key>/<lang>/``."""
    return root / LAB_CACHE / lab_key(lab_notebook(path), root) / lang_of(path)


def files_read_by_lab(path: Path, root: Path) -> list[str]:
    """The files of ``root`` that the lab at ``path`` names in its code (:func:`files_read`), sorted:
    what its cache key must hash and what its downloadable notebook must carry."""
    from tools.site.hashing import files_read

    found: set[str] = set()
    for cell in lab_notebook(path).cells:
        if cell.cell_type == "code":
            lines = cell.source.splitlines()
            code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
            try:
                found.update(files_read(code, root))
            except SyntaxError:
                continue
    return sorted(found)


def jupyter_plugin(config: Any) -> Any:
    """The mkdocs-jupyter plugin of this build, or None (a bare config in the tests has no plugins)."""
    return getattr(config, "plugins", {}).get("mkdocs-jupyter")


def use_cache(config: Any, root: Path, lang: str) -> None:
    """Note the book's root for :func:`point_cache` (``on_pre_build``, after tangling: the keys hash the new src/)."""
    STATE["root"] = str(root)


def point_cache(page: Any, config: Any) -> None:
    """Point mkdocs-jupyter's ``cache_dir`` at the folder of the lab about to be rendered (``on_pre_page``,
    before mkdocs-jupyter's own, which reads it). mkdocs-jupyter keys the entry in it by the lab's text."""
    jupyter = jupyter_plugin(config)
    if jupyter is None or not jupyter.config.get("cache") or not LAB.match(page.file.src_uri):
        return
    folder = lab_folder(Path(page.file.abs_src_path), Path(STATE["root"]))
    folder.mkdir(parents=True, exist_ok=True)
    jupyter.config["cache_dir"] = str(folder)
    _FOLDERS.add(folder.parent.name)


def prune(root: Path, dirty: bool) -> None:
    """After a full build (not under ``serve --dirty``), drop the cache folders it did not use, all but the
    newest :data:`KEPT_CACHES` (``on_post_build``)."""
    base = root / LAB_CACHE
    if not dirty and _FOLDERS and base.is_dir():
        for folder in _FOLDERS:
            (base / folder).touch()  # newest first
        unused = sorted((p for p in base.iterdir() if p.is_dir() and p.name not in _FOLDERS), key=lambda p: p.stat().st_mtime)
        for stale in unused[: max(0, len(unused) - KEPT_CACHES)]:
            shutil.rmtree(stale, ignore_errors=True)
    _FOLDERS.clear()


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
_AHEAD: dict[str, Any] = {}  # inputs key + code key -> the Future of a lab executing ahead
_POOL: list[Any] = []  # the one ThreadPoolExecutor of this process, once started


def _outputs(nb: Any) -> list[tuple[Any, Any]]:
    import copy

    return [(copy.deepcopy(c.outputs), c.get("execution_count")) for c in nb.cells if c.cell_type == "code"]


def _execute(nb: Any, kernel_name: str) -> list[tuple[Any, Any]]:
    """Execute a lab notebook as mkdocs-jupyter configures nbconvert (``allow_errors`` false, its kernel)."""
    from nbconvert.preprocessors import ExecutePreprocessor

    preprocess = ExecutePreprocessor.preprocess
    preprocess = getattr(preprocess, "original", preprocess)  # not the wrapper below, which would wait for this run
    preprocess(ExecutePreprocessor(kernel_name=kernel_name, allow_errors=False, store_widget_state=True), nb, {})
    return _outputs(nb)


def lab_notebook(path: Path) -> Any:
    """A lab as mkdocs-jupyter reads it: jupytext, then the ``ipynb`` text nbconvert parses."""
    import io

    import jupytext
    import nbformat

    return nbformat.read(io.StringIO(jupytext.writes(jupytext.read(path), fmt="ipynb")), as_version=4)


def lang_of(path: Path) -> str:
    """The edition of a lab file: ``scaling.en.py`` is English, ``scaling.py`` Chinese."""
    return path.suffixes[0][1:] if len(path.suffixes) > 1 else DEFAULT_LANGUAGE


def labs_to_execute(jupyter: Any, root: Path) -> list[Path]:
    """The labs of both editions whose page is not in mkdocs-jupyter's cache (``.cache/labs/<key>/<lang>/``,
    the entry mkdocs-jupyter itself looks up): the Chinese ones first, as the Chinese edition is built
    first, each edition's largest first (a proxy for the longest)."""
    from pathlib import PurePath

    from mkdocs_jupyter.plugin import _compute_cache_key, _get_cache_path

    def order(path: Path) -> tuple[bool, int, str]:  # the first edition's labs first (its pages wait for them)
        return (lang_of(path) != DEFAULT_LANGUAGE, -path.stat().st_size, path.name)

    todo = []
    for path in sorted((root / "docs/labs").glob("*.py"), key=order):
        if any(PurePath(path).match(pattern) for pattern in jupyter.config.get("execute_ignore") or []):
            continue
        folder = lab_folder(path, root)
        cached = jupyter.config.get("cache") and _get_cache_path(folder, _compute_cache_key(path, jupyter.config, True)).exists()
        if not cached:
            todo.append(path)
    return todo


def execute_ahead(config: Any, root: Path) -> None:
    """Start executing, :data:`AHEAD_WORKERS` at a time, each lab this build will execute (both editions,
    each code once); :func:`execute_each_lab_once` waits for its outputs when the page asks for them.
    A lab that fails ahead is executed again in place, so that its error is reported as before."""
    from concurrent.futures import ThreadPoolExecutor

    jupyter = jupyter_plugin(config)
    if jupyter is None or not jupyter.config.get("execute"):
        return
    os.environ["OMP_NUM_THREADS"] = LAB_THREADS  # every lab kernel started from now on, ahead or in place
    for path in labs_to_execute(jupyter, root):
        nb = lab_notebook(path)
        key = f"{lab_key(nb, root)}:{code_key(nb)}"
        if key in _EXECUTED or key in _AHEAD:
            continue
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(AHEAD_WORKERS, thread_name_prefix="lab"))
        _AHEAD[key] = _POOL[0].submit(_execute, nb, jupyter.config.get("kernel_name") or "")
        log.info("labs: executing %s ahead", path.relative_to(root))


def cancel_ahead() -> None:
    """Drop the labs not yet started ahead (a failed build need not wait for them)."""
    for future in _AHEAD.values():
        future.cancel()
    _AHEAD.clear()


def execute_each_lab_once() -> None:
    """Run a lab once per build for both languages: the English lab's code cells are the Chinese ones
    apart from comments and assert messages (``tests/book/test_parity.py``), so its outputs are the same.

    mkdocs-jupyter executes each lab page through nbconvert's ``ExecutePreprocessor``; wrapped here,
    it reuses the outputs of a lab already executed in this process with the same modules, data and
    code (``lab_key``, ``code_key``), and executes anything else as before."""
    import copy

    from nbconvert.preprocessors import ExecutePreprocessor

    original = ExecutePreprocessor.preprocess
    if getattr(original, "selfattn_once", False):
        return

    def preprocess(self: Any, nb: Any, resources: Any = None, km: Any = None) -> Any:
        key = f"{lab_key(nb, Path(STATE['root']))}:{code_key(nb)}"
        cells = [c for c in nb.cells if c.cell_type == "code"]
        title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown" and c.source), "?")
        if key not in _EXECUTED and key in _AHEAD:
            try:
                outputs = _AHEAD.pop(key).result()
            except Exception as error:  # executed again below: mkdocs-jupyter reports the failing cell
                log.info("labs: %r failed ahead (%s); executing it in place", title, type(error).__name__)
            else:
                for cell, (out, count) in zip(cells, outputs, strict=True):
                    cell.outputs, cell.execution_count = out, count
                log.info("labs: executed %r (ahead)", title)
                _EXECUTED[key] = _outputs(nb)
                return nb, resources
        if key in _EXECUTED:
            for cell, (outputs, count) in zip(cells, _EXECUTED[key], strict=True):
                cell.outputs, cell.execution_count = copy.deepcopy(outputs), count
            log.info("labs: reused for %r the outputs of the same code, executed in this build", title)
            return nb, resources
        nb, resources = original(self, nb, resources, km)
        log.info("labs: executed %r", title)
        for stale in [k for k in _EXECUTED if k.endswith(key.partition(":")[2]) and k != key]:
            del _EXECUTED[stale]  # the same code run with other modules: out of date
        _EXECUTED[key] = _outputs(nb)
        return nb, resources

    preprocess.selfattn_once = True  # type: ignore[attr-defined]
    preprocess.original = original  # type: ignore[attr-defined]
    ExecutePreprocessor.preprocess = preprocess


def rewrap(files: Any, config: Any, lang: str) -> Any:
    """Make the labs notebook pages again. mkdocs-jupyter wraps each ``labs/*.py`` as a page at
    ``on_files``; mkdocs-static-i18n then replaces every file by a copy of its own (in English,
    ``labs/scaling.py`` is built from ``labs/scaling.en.py``), which drops the wrapper: the lab would be
    copied as raw text, without an error even under ``--strict``. The files stay in i18n's own
    ``Files``, which finds ``labs/scaling.en.py`` when the nav says ``labs/scaling.py``."""
    from mkdocs_jupyter.plugin import NotebookFile

    jupyter = jupyter_plugin(config)
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


def keep_cache_when_dirty(config: Any) -> None:
    """Under ``serve --dirty``, keep every entry of this language's lab cache.

    After each build, mkdocs-jupyter (0.26, ``on_post_build``) deletes the cache entries that the
    build did not look up. A dirty rebuild renders only the saved page, so it looks up no lab, and
    every entry would go: the next ``make serve`` or ``make test`` would execute every lab again.
    Marked as looked up, they stay; the next full build drops what is stale."""
    jupyter = jupyter_plugin(config)
    used = getattr(jupyter, "_used_cache_paths", None)
    if jupyter is None or not jupyter.config.get("cache") or not isinstance(used, set):
        return
    used.update(Path(jupyter.config["cache_dir"]).glob("*.json"))
    if STATE["root"]:
        used.update((Path(STATE["root"]) / LAB_CACHE).glob("*/*/*.json"))  # every lab's folder


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

