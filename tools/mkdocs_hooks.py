"""MkDocs hooks of the book (registered under ``hooks:`` in ``mkdocs.yml``).

* ``on_pre_build`` re-tangles ``src/`` from the chapters on every ``mkdocs build``
  and every rebuild of ``mkdocs serve``. Only files whose text changed are
  written: rewriting an unchanged file would trigger another rebuild, forever.
  Then it points mkdocs-jupyter's cache at ``.cache/labs/<key>/`` (outside
  ``docs/``, git-ignored), where ``<key>`` hashes everything a lab's output
  depends on besides its own text: the package sources ``src/**/*.py``, the
  benchmark results the labs read, and the versions of Python, torch and the
  notebook tools. mkdocs-jupyter keys each entry by the lab's text, so a lab is
  executed again only when it, the package, the data or a tool changed; an edit
  of a chapter re-executes nothing. A fresh clone (CI) has no cache and runs all.
* Under ``mkdocs serve --dirty`` (``make serve``) only the saved page is rebuilt:
  ``on_files`` also rebuilds the labs and the API page when ``src/`` changed,
  ``on_env`` keeps the compiled templates between rebuilds, ``on_config`` leaves
  out the print page, and ``on_post_build`` rewrites only the notebooks of saved
  chapters.
* ``on_page_markdown`` turns a titled block's marker line into the block's
  title, so the reader sees ``src/selfattn/NAME.py`` above the code and never
  the ``#| file:`` line itself.
* ``on_page_context`` marks each chapter page (a nav page ``NN-*.md``) with the
  address of its notebook, so ``overrides/main.html`` offers the download link.
* ``on_post_build`` writes one Jupyter notebook per chapter into the built site
  (``site/notebooks/NN-name.ipynb``): never into ``docs/``, so ``mkdocs serve``
  does not reload in a loop. Every notebook opens with the setup cell of
  ``tools/release.py``, pinned to the package's version.
* ``on_config`` shows that version in the footer; ``on_files`` adds the package's
  wheel (``site/dist/selfattn-VERSION-py3-none-any.whl``, built once per source
  hash under ``.cache/``) and ``on_page_markdown`` replaces ``{{ selfattn_version }}``
  in the pages, so the preface can link to the wheel.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache
from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # so that `tools` imports under `mkdocs`
from tools.release import build_wheel, package_version, setup_cell
from tools.tangle import MARKER, TangleError, book_pages, load_config, nav_entries, parse_fences, tangle, write

log = logging.getLogger("mkdocs.hooks.tangle")


LAB_CACHE = ".cache/labs"
# Besides its own text (mkdocs-jupyter's key), what a lab's executed output depends on:
LAB_INPUTS = ("src/**/*.py", "benchmarks/results/*.json")
LAB_TOOLS = ("torch", "numpy", "matplotlib", "mkdocs-jupyter", "nbconvert", "nbclient", "jupytext", "ipykernel")
KEPT_CACHES = 3  # the newest cache folders kept (switching branches back and forth stays cheap)


def lab_inputs_key(root: Path) -> str:
    """A hash of the package sources, the benchmark data and the tool versions the labs run with."""
    h = hashlib.sha256(f"python {sys.version}\n".encode())
    for name in LAB_TOOLS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{name} {version}\n".encode())
    for pattern in LAB_INPUTS:
        for path in sorted(root.glob(pattern)):
            if "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(root).as_posix()}\n".encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def use_lab_cache(config: Any, root: Path) -> None:
    """Point mkdocs-jupyter's ``cache_dir`` at ``.cache/labs/<key>/``; drop all but the newest few folders."""
    jupyter = getattr(config, "plugins", {}).get("mkdocs-jupyter")
    if jupyter is None or not jupyter.config.get("cache"):
        return
    base = root / LAB_CACHE
    folder = base / lab_inputs_key(root)
    jupyter.config["cache_dir"] = str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    folder.touch()  # newest first when pruning
    older = sorted((p for p in base.iterdir() if p.is_dir() and p != folder), key=lambda p: p.stat().st_mtime)
    for stale in older[: max(0, len(older) - (KEPT_CACHES - 1))]:
        shutil.rmtree(stale, ignore_errors=True)


_SERVE: dict[str, Any] = {"serve": False, "dirty": False, "key": ""}  # `mkdocs serve` keeps this module between rebuilds


class MemoryBytecodeCache(jinja2.BytecodeCache):
    """Compiled theme templates, kept between the rebuilds of ``mkdocs serve``.

    Every rebuild makes a new Jinja environment, which would parse and compile material's
    templates again (about 1 s on 2 cores). Jinja checks each entry against the checksum of
    the template's source, so an edited template (``overrides/``) is compiled again.
    """

    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.store[bucket.key] = bucket.bytecode_to_string()


TEMPLATES = MemoryBytecodeCache()


def on_startup(command: str, dirty: bool) -> None:
    _SERVE["serve"] = command == "serve"
    _SERVE["dirty"] = command == "serve" and dirty


def on_config(config: Any) -> Any:
    """The package's version goes into the footer and ``{{ selfattn_version }}``. Under ``serve --dirty``
    the print page (every page in one) could only show the pages rebuilt: it is left out there
    (``make site`` builds it)."""
    version = package_version(Path(config.config_file_path).parent)
    config.extra["selfattn_version"] = version
    config.copyright = f"selfattn {version} · {config.copyright or ''}".rstrip(" ·")
    printer = config.plugins.get("print-site")
    if _SERVE["dirty"] and printer is not None:
        printer.config["enabled"] = False
    return config


def on_env(env: Any, config: Any, files: Any) -> Any:
    if _SERVE["serve"]:
        env.bytecode_cache = TEMPLATES
    return env


def on_pre_build(config: Any) -> None:
    root = Path(config.config_file_path).parent
    try:
        changed = write(root, tangle(root))
    except TangleError as err:
        raise PluginError(f"tangle: {err}") from err
    if changed:
        log.info("tangle: wrote %s", ", ".join(changed))
    use_lab_cache(config, root)  # after tangling: the key hashes the new src/


def offer_wheel(files: Any, config: Any, root: Path) -> None:
    from mkdocs.structure.files import File

    wheel = build_wheel(root, stale_ok=_SERVE["serve"])
    files.append(File.generated(config, f"dist/{wheel.name}", abs_src_path=str(wheel)))


def on_files(files: Any, config: Any) -> Any:
    """Offer the package's wheel at ``dist/`` (built from src/, cached by the hash of its sources; under
    ``serve`` the newest cached wheel will do, so that saving a chapter does not rebuild it).

    Under ``serve --dirty`` only saved pages are rebuilt; when the package or the data changed, also
    rebuild the pages that show them (the labs, and pages with a mkdocstrings ``:::`` directive)."""
    root = Path(config.config_file_path).parent
    offer_wheel(files, config, root)
    if not _SERVE["dirty"]:
        return files
    key = lab_inputs_key(root)
    if _SERVE["key"] and key != _SERVE["key"]:
        for file in files:
            src = Path(file.abs_src_path or "")
            shows_src = LAB.match(file.src_uri) or (
                src.suffix == ".md" and src.is_file() and "\n::: " in src.read_text(encoding="utf-8")
            )
            if shows_src and Path(file.abs_dest_path).exists():
                Path(file.abs_dest_path).unlink()  # is_modified() is now true: rebuilt in this round
    _SERVE["key"] = key
    return files


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


VERSION_TAG = "{{ selfattn_version }}"


def on_page_markdown(markdown: str, config: Any, **kwargs: Any) -> str:
    return titleize(markdown.replace(VERSION_TAG, config.extra["selfattn_version"]))


CHAPTER = re.compile(r"^\d\d-[^/]*\.md$")  # docs/05-implementation.md, not docs/index.md or labs
LAB = re.compile(r"^labs/(?P<name>[^/]+)\.py$")  # docs/labs/scaling.py (jupytext percent format)
NOTEBOOK_DIR = "notebooks"
TEST_DIRECTIVE = re.compile(r"^\s*<!--\s*pytest[-.][^>]*-->\s*$")  # <!--pytest-codeblocks:...-->, <!--pytest.mark...-->
NOTEBOOK_INTRO = (
    "> 本笔记本由本书的 `{page}` 自动生成：代码单元就是这一章的 Python 代码块，请按顺序运行。"
    "第一个代码单元准备环境：需要时安装本书配套的 `selfattn` 包，已经装好时什么也不做。"
)


def chapter_pages(root: Path) -> list[str]:
    """The chapters of the book (``NN-*.md`` in the nav), relative to ``docs/``, in nav order."""
    pages = [p.split("/", 1)[1] for p in book_pages(root)]
    return [p for p in pages if CHAPTER.match(p)]


def notebook_name(src_uri: str) -> str:
    """``05-implementation.md`` -> ``05-implementation.ipynb``."""
    return src_uri[: -len(".md")] + ".ipynb"


MD_LINK = re.compile(r"\]\((?![a-z]+:)(?P<path>[^)\s#]+?)\.md(?P<anchor>#[^)\s]*)?\)")


def absolute_links(markdown: str, site_url: str) -> str:
    """Point the links between chapters (``](index.md#x)``) at the published site, for use outside it."""
    if not site_url:
        return markdown

    def url(m: re.Match[str]) -> str:
        path = m["path"].removeprefix("./")
        path = "" if path == "index" else (path.removesuffix("/index") + "/")
        return f"]({site_url.rstrip('/')}/{path}{m['anchor'] or ''})"

    return MD_LINK.sub(url, markdown)


def directives_above(lines: list[str], start: int) -> list[str]:
    """The test directives (``<!--pytest.mark.cuda-->``, ``<!--pytest-codeblocks:skip-->``) right above a fence."""
    found = []
    i = start - 1
    while i >= 0 and (not lines[i].strip() or TEST_DIRECTIVE.match(lines[i])):
        if lines[i].strip():
            found.append(lines[i].strip())
        i -= 1
    return found


def chapter_notebook(markdown: str, page: str = "", site_url: str = "", version: str = "") -> Any:
    """A chapter as a Jupyter notebook: each ```` ```python ```` fence is a code cell, the rest Markdown.

    Fences are found with the tangler's parser, so fences indented inside admonitions
    and content tabs count too, exactly like the blocks pytest-codeblocks runs. Other fences
    (expected output, shell sessions) stay in the Markdown cells, without the test directives
    (``<!--pytest-codeblocks:...-->``). A ``#| file:`` marker stays in its cell as a comment that
    says where the code lives in the package. A block the book runs only on a GPU
    (``<!--pytest.mark.cuda-->``) or skips is announced and tagged ``raises-exception``, so that
    "Run all" does not stop there on a CPU. ``page`` names the chapter in an opening note; links
    to other pages point at ``site_url``. With ``version``, the setup cell of ``tools/release.py``
    comes first.
    """
    import jupytext
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    lines = markdown.splitlines()
    cells = [new_markdown_cell(NOTEBOOK_INTRO.format(page=page))] if page else []
    if version:
        cells.append(new_code_cell(setup_cell(version)))
    done = 0

    def flush_markdown(upto: int) -> None:
        text = "\n".join(line for line in lines[done:upto] if not TEST_DIRECTIVE.match(line)).strip("\n")
        if text.strip():
            cells.append(new_markdown_cell(absolute_links(text, site_url)))

    for fence in parse_fences(markdown, ""):
        if fence.info != "python" or fence.char != "`":
            continue
        flush_markdown(fence.start)
        cell = new_code_cell("\n".join(fence.body).rstrip("\n"))
        directives = directives_above(lines, fence.start)
        if any("cuda" in d or "skip" in d for d in directives):
            # The book runs this block only where it can (a GPU) or not at all: here the reader is told, and
            # "Run all" goes on past an error in it (Jupyter and nbclient honour the raises-exception tag).
            need = "CUDA（一块 GPU）" if any("cuda" in d for d in directives) else "特定的环境"
            cells.append(new_markdown_cell(f"> 下一个代码单元需要{need}；条件不满足时它会报错，可以跳过。"))
            cell.metadata["tags"] = ["raises-exception"]
        cells.append(cell)
        done = fence.start + len(fence.body) + 2
    flush_markdown(len(lines))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    # A round trip through jupytext gives the notebook its canonical, reproducible form.
    return jupytext.reads(jupytext.writes(nb, fmt="ipynb"), fmt="ipynb")


def lab_notebook(src_uri: str) -> str:
    """``labs/scaling.py`` -> ``labs/scaling/scaling.ipynb``, beside the lab's page and its ``.py`` source."""
    name = LAB.match(src_uri)["name"]  # type: ignore[index]
    return f"labs/{name}/{name}.ipynb"


def on_page_context(context: Any, page: Any, config: Any, **kwargs: Any) -> Any:
    if CHAPTER.match(page.file.src_uri):
        page.meta["notebook"] = f"{NOTEBOOK_DIR}/{notebook_name(page.file.src_uri)}"
        page.meta["notebook_label"] = "下载本章 Jupyter 笔记本"
    elif LAB.match(page.file.src_uri):
        page.meta["notebook"] = lab_notebook(page.file.src_uri)
        page.meta["notebook_label"] = "下载这个实验的 Jupyter 笔记本"
    return context


def on_post_build(config: Any) -> None:
    import jupytext

    root = Path(config.config_file_path).parent
    docs = Path(config.docs_dir)
    out = Path(config.site_dir) / NOTEBOOK_DIR
    out.mkdir(parents=True, exist_ok=True)
    from nbformat.v4 import new_code_cell

    version = config.extra["selfattn_version"]
    pages = chapter_pages(root)
    def fresh(source: Path, target: Path) -> bool:  # only under `serve --dirty` does site/ survive a rebuild
        return _SERVE["dirty"] and target.exists() and target.stat().st_mtime_ns > source.stat().st_mtime_ns

    for page in pages:
        if not fresh(docs / page, out / notebook_name(page)):
            text = (docs / page).read_text(encoding="utf-8")
            nb = chapter_notebook(text, f"docs/{page}", config.site_url or "", version)
            jupytext.write(nb, out / notebook_name(page), fmt="ipynb")
    labs = [entry for entry in nav_entries(load_config(root)) if LAB.match(entry)]
    for lab in labs:  # the labs are jupytext percent scripts: convert each to .ipynb beside its page
        target = Path(config.site_dir) / lab_notebook(lab)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not fresh(docs / lab, target):
            nb = jupytext.read(docs / lab)
            first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
            nb.cells.insert(first, new_code_cell(setup_cell(version)))
            jupytext.write(nb, target, fmt="ipynb")
    log.info("notebooks: wrote %d chapter notebooks to %s/ and %d lab notebooks", len(pages), NOTEBOOK_DIR, len(labs))
