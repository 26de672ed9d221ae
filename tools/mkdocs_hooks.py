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
* Two editions (mkdocs-static-i18n, ``NAME.md`` and ``NAME.en.md``): i18n builds the
  Chinese site into ``site/``, then the English one into ``site/en/`` from inside the first
  build's ``on_post_build``; every hook runs once per language (``language()``). Per
  language: the search settings (``on_config``) and one index each (``split_search_index``),
  the print page, the notebooks, ``404.html`` and ``sitemap.xml`` (``on_post_template``).
  ``on_files`` makes the labs notebook pages again after i18n's own ``on_files``;
  ``on_page_context`` points the language switcher (and material's ``hreflang`` links) at
  the same page in the other language. A lab whose code cells match in both languages is
  executed once per build (``execute_each_lab_once``).
* ``on_pre_build`` shows the version in the footer; ``on_files`` adds the package's
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
from mkdocs.plugins import event_priority

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # so that `tools` imports under `mkdocs`
from tools.release import build_wheel, package_version, setup_cell
from tools.tangle import (
    MARKER,
    TEST_DIRECTIVE,
    TangleError,
    book_pages,
    directives_above,
    load_config,
    nav_entries,
    parse_fences,
    tangle,
    write,
)

log = logging.getLogger("mkdocs.hooks.tangle")

DEFAULT_LANGUAGE = "zh"  # at today's URLs; every other language of the i18n plugin lives under /<lang>/


def language(config: Any) -> str:
    """The language being built: mkdocs-static-i18n builds the default one first, then each other one."""
    i18n = getattr(config, "plugins", {}).get("i18n")
    return getattr(i18n, "current_language", None) or DEFAULT_LANGUAGE


def root_prefix(lang: str) -> str:
    """Where a language's pages live in site/: ``""`` for Chinese, ``"en/"`` for English."""
    return "" if lang == DEFAULT_LANGUAGE else f"{lang}/"


def source_of(src_uri: str, lang: str, docs: Path | None = None) -> str:
    """``05-implementation.md`` -> ``05-implementation.en.md`` in English (the file the page is built from;
    with ``docs``, the Chinese page when there is no English one: i18n falls back to it)."""
    if lang == DEFAULT_LANGUAGE:
        return src_uri
    stem, dot, ext = src_uri.rpartition(".")
    translated = f"{stem}.{lang}.{ext}"
    return src_uri if docs is not None and not (docs / translated).exists() else translated


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
    """Point mkdocs-jupyter's ``cache_dir`` at ``.cache/labs/<key>/<lang>/``; drop all but the newest few keys.

    One folder per language: mkdocs-jupyter evicts the entries a build did not use, and each
    language's build uses only its own labs."""
    jupyter = getattr(config, "plugins", {}).get("mkdocs-jupyter")
    if jupyter is None or not jupyter.config.get("cache"):
        return
    base = root / LAB_CACHE
    folder = base / lab_inputs_key(root)
    jupyter.config["cache_dir"] = str(folder / language(config))
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
        key = f"{_SERVE['inputs']}:{code_key(nb)}"
        cells = [c for c in nb.cells if c.cell_type == "code"]
        title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown" and c.source), "?")
        if key in _EXECUTED:
            for cell, (outputs, count) in zip(cells, _EXECUTED[key], strict=True):
                cell.outputs, cell.execution_count = copy.deepcopy(outputs), count
            log.info("labs: reused for %r the outputs of the same code, executed in this build", title)
            return nb, resources
        nb, resources = original(self, nb, resources, km)
        log.info("labs: executed %r", title)
        for stale in [k for k in _EXECUTED if not k.startswith(f"{_SERVE['inputs']}:")]:
            del _EXECUTED[stale]
        _EXECUTED[key] = [(copy.deepcopy(c.outputs), c.get("execution_count")) for c in cells]
        return nb, resources

    preprocess.selfattn_once = True  # type: ignore[attr-defined]
    ExecutePreprocessor.preprocess = preprocess


_SERVE: dict[str, Any] = {"serve": False, "dirty": False, "key": "", "inputs": ""}  # `mkdocs serve` keeps this module between rebuilds


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


PRINT_PAGE = {  # per language: the print page of the English edition is en/print_page/
    "zh": {"print_page_title": "全书（打印版）", "toc_title": "目录", "print_page_basename": "print_page"},
    "en": {"print_page_title": "The Whole Book (Print Version)", "toc_title": "Contents", "print_page_basename": "en/print_page"},
}


def search_plugin(config: Any) -> Any:
    plugins = getattr(config, "plugins", {})
    return plugins.get("material/search") or plugins.get("search")


@event_priority(100)  # before the search plugin reads its options (and before i18n's own on_config)
def on_config(config: Any) -> Any:
    """Per language: the search index (jieba-segmented Chinese, or plain English with its stop words) and
    the print page's titles. The package's version goes into ``{{ selfattn_version }}``. Under
    ``serve --dirty`` the print page (every page in one) could only show the pages rebuilt: it is left
    out there (``make site`` builds it)."""
    lang = language(config)
    config.theme["language"] = lang  # the search plugin takes its separator and pipeline from it
    search = search_plugin(config)
    if search is not None:
        search.config["lang"] = [lang]
        search.config["separator"] = None  # material's default for the language
        search.config["pipeline"] = None
    config.extra["selfattn_version"] = package_version(Path(config.config_file_path).parent)
    printer = config.plugins.get("print-site")
    if printer is not None:
        printer.config.update(PRINT_PAGE.get(lang, PRINT_PAGE["en"]))
        if _SERVE["dirty"]:
            printer.config["enabled"] = False
    return config


def on_env(env: Any, config: Any, files: Any) -> Any:
    if _SERVE["serve"]:
        env.bytecode_cache = TEMPLATES
    return env


def start_language_build(config: Any) -> None:
    """Note which language is being built and with which search settings; put the version into its footer."""
    lang = language(config)
    _BUILDS.append(lang)
    search = search_plugin(config)
    if search is not None:
        _SEARCH[lang] = {key: search.config[key] for key in SEARCH_KEYS}
    # The footer: the version, in front of the language's copyright line (set by i18n's on_config).
    version = config.extra["selfattn_version"]
    if not (config.copyright or "").startswith("selfattn "):
        config.copyright = f"selfattn {version} · {config.copyright or ''}".rstrip(" ·")
    # Each language is a build of its own: forget the other language's API anchors (mkdocs-autorefs
    # keeps them between builds and would see every object twice).
    autorefs = config.plugins.get("autorefs")
    for name in ("_primary_url_map", "_secondary_url_map", "_title_map", "_breadcrumbs_map"):
        getattr(autorefs, name, {}).clear()


def on_pre_build(config: Any) -> None:
    root = Path(config.config_file_path).parent
    try:
        changed = write(root, tangle(root))
    except TangleError as err:
        raise PluginError(f"tangle: {err}") from err
    if changed:
        log.info("tangle: wrote %s", ", ".join(changed))
    if not hasattr(config, "plugins"):  # tests/test_tangle.py calls this with a bare config
        return
    start_language_build(config)
    use_lab_cache(config, root)  # after tangling: the key hashes the new src/
    _SERVE["inputs"] = lab_inputs_key(root)
    execute_each_lab_once()


def offer_wheel(files: Any, config: Any, root: Path) -> None:
    from mkdocs.structure.files import File

    wheel = build_wheel(root, stale_ok=_SERVE["serve"])
    files.append(File.generated(config, f"dist/{wheel.name}", abs_src_path=str(wheel)))


def rewrap_labs(files: Any, config: Any) -> Any:
    """Make the labs notebook pages again. mkdocs-jupyter wraps each ``labs/*.py`` as a page at
    ``on_files``; mkdocs-static-i18n then replaces every file by a copy of its own (in English,
    ``labs/scaling.py`` is built from ``labs/scaling.en.py``), which drops the wrapper: the lab would be
    copied as raw text, without an error even under ``--strict``. The files stay in i18n's own
    ``Files``, which finds ``labs/scaling.en.py`` when the nav says ``labs/scaling.py``."""
    from mkdocs_jupyter.plugin import NotebookFile

    jupyter = getattr(config, "plugins", {}).get("mkdocs-jupyter")
    if jupyter is None:
        return files
    prefix = root_prefix(language(config))
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


@event_priority(-200)  # after mkdocs-static-i18n (-100)
def on_files(files: Any, config: Any) -> Any:
    """Offer the package's wheel at ``dist/`` (built from src/, cached by the hash of its sources; under
    ``serve`` the newest cached wheel will do, so that saving a chapter does not rebuild it).

    Under ``serve --dirty`` only saved pages are rebuilt; when the package or the data changed, also
    rebuild the pages that show them (the labs, and pages with a mkdocstrings ``:::`` directive)."""
    root = Path(config.config_file_path).parent
    files = rewrap_labs(files, config)
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


def absolute_links(markdown: str, site_url: str, prefix: str = "") -> str:
    """Point the links between chapters (``](index.md#x)``) at the published site, for use outside it."""
    if not site_url:
        return markdown
    site_url = site_url.rstrip("/") + "/" + prefix

    def url(m: re.Match[str]) -> str:
        path = m["path"].removeprefix("./")
        path = "" if path == "index" else (path.removesuffix("/index") + "/")
        return f"]({site_url.rstrip('/')}/{path}{m['anchor'] or ''})"

    return MD_LINK.sub(url, markdown)


def chapter_notebook(markdown: str, page: str = "", site_url: str = "", version: str = "", lang: str = DEFAULT_LANGUAGE) -> Any:
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
    cells = [new_markdown_cell(NOTEBOOK_INTROS.get(lang, NOTEBOOK_INTROS["en"]).format(page=page))] if page else []
    if version:
        cells.append(new_code_cell(setup_cell(version, lang)))
    done = 0

    def flush_markdown(upto: int) -> None:
        text = "\n".join(line for line in lines[done:upto] if not TEST_DIRECTIVE.match(line)).strip("\n")
        if text.strip():
            cells.append(new_markdown_cell(absolute_links(text, site_url, root_prefix(lang))))

    for fence in parse_fences(markdown, ""):
        if fence.info != "python" or fence.char != "`":
            continue
        flush_markdown(fence.start)
        cell = new_code_cell("\n".join(fence.body).rstrip("\n"))
        directives = directives_above(lines, fence.start)
        if any("cuda" in d or "skip" in d for d in directives):
            # The book runs this block only where it can (a GPU) or not at all: here the reader is told, and
            # "Run all" goes on past an error in it (Jupyter and nbclient honour the raises-exception tag).
            cuda, other, note = SKIP_NOTES.get(lang, SKIP_NOTES["en"])
            need = cuda if any("cuda" in d for d in directives) else other
            cells.append(new_markdown_cell(note.format(need=need)))
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


LANGUAGES = {"zh": "中文", "en": "English"}  # the switcher's entries, in this order
LABELS = {
    "zh": {"chapter": "下载本章 Jupyter 笔记本", "lab": "下载这个实验的 Jupyter 笔记本"},
    "en": {"chapter": "Download this chapter as a Jupyter notebook", "lab": "Download this lab as a Jupyter notebook"},
}


def counterpart_url(url: str, lang: str, other: str) -> str:
    """The same page in another language: ``en/05-implementation/`` <-> ``05-implementation/``."""
    return root_prefix(other) + url.removeprefix(root_prefix(lang))


def on_page_context(context: Any, page: Any, config: Any, **kwargs: Any) -> Any:
    """The download link of a chapter's or lab's notebook, and the language switcher of the page.

    The switcher (``extra.alternate``, which material also writes as ``<link rel="alternate"
    hreflang>`` into the head) leads to the same page in each language; every page exists in both
    (``tests/test_parity.py``)."""
    lang = language(config)
    src = getattr(page.file, "norm_src_uri", page.file.src_uri)  # 05-implementation.md, also in English
    labels = LABELS.get(lang, LABELS["en"])
    if CHAPTER.match(src):
        page.meta["notebook"] = f"{root_prefix(lang)}{NOTEBOOK_DIR}/{notebook_name(src)}"
        page.meta["notebook_label"] = labels["chapter"]
    elif LAB.match(src):
        page.meta["notebook"] = root_prefix(lang) + lab_notebook(src)
        page.meta["notebook_label"] = labels["lab"]
    url = page.url if page.url not in (".", "./") else ""
    config.extra["alternate"] = [
        {"name": name, "lang": code, "link": counterpart_url(url, lang, code) or "./"}
        for code, name in LANGUAGES.items()
    ]
    config.extra["language_roots"] = [root_prefix(code) or "./" for code in LANGUAGES]
    context["lang_root"] = root_prefix(lang)  # overrides/main.html: where this language's search index is
    return context


NOTEBOOK_CACHE = ".cache/notebooks"
_NOTEBOOKS_USED: set[str] = set()  # the cached notebooks this build used (both languages); the rest is dropped


NOTEBOOK_INTROS = {
    "zh": NOTEBOOK_INTRO,
    "en": (
        "> This notebook was generated from the book's `{page}`: its code cells are the chapter's Python"
        " blocks; run them in order. The first code cell sets up the environment: it installs the book's"
        " `selfattn` package when needed and does nothing when it is already installed."
    ),
}
SKIP_NOTES = {
    "zh": ("CUDA（一块 GPU）", "特定的环境", "> 下一个代码单元需要{need}；条件不满足时它会报错，可以跳过。"),
    "en": ("CUDA (a GPU)", "a particular environment", "> The next code cell needs {need}; without it, it fails and can be skipped."),
}


def write_notebooks(config: Any, lang: str) -> None:
    """The chapter notebooks (``site/[en/]notebooks/``) and the lab notebooks, of one language."""
    import jupytext
    from nbformat.v4 import new_code_cell

    root = Path(config.config_file_path).parent
    docs = Path(config.docs_dir)
    site = Path(config.site_dir) / root_prefix(lang)
    out = site / NOTEBOOK_DIR
    out.mkdir(parents=True, exist_ok=True)
    version = config.extra["selfattn_version"]
    pages = chapter_pages(root)

    def fresh(source: Path, target: Path) -> bool:  # only under `serve --dirty` does site/ survive a rebuild
        return _SERVE["dirty"] and target.exists() and target.stat().st_mtime_ns > source.stat().st_mtime_ns

    cache = root / NOTEBOOK_CACHE
    cache.mkdir(parents=True, exist_ok=True)
    used = set()
    for page in pages:
        source = docs / source_of(page, lang, docs)
        target = out / notebook_name(page)
        if fresh(source, target):
            continue
        text = source.read_text(encoding="utf-8")
        # The notebook is a function of these and of this file's code: keep it under their hash (.cache/notebooks/).
        inputs = [text, page, lang, config.site_url or "", version, Path(__file__).read_text(encoding="utf-8")]
        cached = cache / (hashlib.sha256("\0".join(inputs).encode()).hexdigest()[:20] + ".ipynb")
        used.add(cached.name)
        if not cached.exists():
            nb = chapter_notebook(text, f"docs/{source_of(page, lang, docs)}", config.site_url or "", version, lang)
            jupytext.write(nb, cached, fmt="ipynb")
        shutil.copyfile(cached, target)
    _NOTEBOOKS_USED.update(used)
    labs = [entry for entry in nav_entries(load_config(root)) if LAB.match(entry)]
    for lab in labs:  # the labs are jupytext percent scripts: convert each to .ipynb beside its page
        source = docs / source_of(lab, lang, docs)
        target = site / lab_notebook(lab)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not fresh(source, target):
            nb = jupytext.read(source)
            first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
            nb.cells.insert(first, new_code_cell(setup_cell(version, lang)))
            jupytext.write(nb, target, fmt="ipynb")
        if lang != DEFAULT_LANGUAGE:  # mkdocs-jupyter copied scaling.en.py; the lab links to scaling.py
            copied = target.parent / Path(source_of(lab, lang, docs)).name
            shutil.copyfile(source, target.parent / Path(lab).name)
            if copied.name != Path(lab).name:
                copied.unlink(missing_ok=True)
    log.info("notebooks (%s): wrote %d chapter notebooks to %s and %d lab notebooks", lang, len(pages), out, len(labs))


SEARCH_INDEX = "search/search_index.json"
SEARCH_KEYS = ("lang", "separator", "pipeline", "fields")
_BUILDS: list[str] = []  # the languages being built: i18n builds the others inside the first one's on_post_build
_SEARCH: dict[str, dict[str, Any]] = {}  # each language's search settings, as its build used them
_STATIC: dict[tuple[str, str], str] = {}  # (language, template) -> 404.html and sitemap.xml as rendered


def split_search_index(config: Any) -> None:
    """One search index per language: ``site/search/`` (Chinese, segmented by jieba) and
    ``site/en/search/`` (English, with English stop words); ``overrides/main.html`` points the
    English pages at theirs.

    At the end of the first build, mkdocs-static-i18n writes one index of every language to
    ``site/search/``. It is split here by location (``en/...`` is English, with locations then
    relative to ``en/``), each part with its language's settings. Entries are unique by location:
    under ``mkdocs serve`` i18n adds each rebuild's entries to the previous ones."""
    import json

    path = Path(config.site_dir) / SEARCH_INDEX
    if not path.exists():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for lang in LANGUAGES:
        prefix = root_prefix(lang)
        if prefix:
            docs = [{**d, "location": d["location"][len(prefix):]} for d in index["docs"] if d["location"].startswith(prefix)]
        else:
            docs = [d for d in index["docs"] if not re.match(r"^[a-z]{2}/", d["location"])]
        if not docs:
            continue
        unique = list({d["location"]: d for d in docs}.values())
        part = {"config": _SEARCH.get(lang, index["config"]), "docs": unique}
        target = Path(config.site_dir) / prefix / SEARCH_INDEX
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(part, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def on_post_template(output: str, template_name: str, config: Any) -> str:
    """Each language renders ``404.html`` and ``sitemap.xml`` into the root of site/, the later
    language over the earlier: keep each rendering, to write it under its own root at the end."""
    _STATIC[(_BUILDS[-1] if _BUILDS else language(config), template_name)] = output
    return output


def in_language(entry: str, lang: str, config: Any) -> bool:
    """Whether a sitemap entry (``<url><loc>https://.../selfattn/en/05-implementation/</loc>...``) is of ``lang``."""
    from urllib.parse import urlparse

    loc = re.search(r"<loc>(.*?)</loc>", entry)
    base = urlparse(config.site_url or "/").path
    path = urlparse(loc[1]).path.removeprefix(base) if loc else ""
    page_lang = next((code for code in LANGUAGES if root_prefix(code) and path.startswith(root_prefix(code))), DEFAULT_LANGUAGE)
    return page_lang == lang


def write_static_pages(config: Any) -> None:
    import gzip

    for (lang, name), output in _STATIC.items():
        if name == "sitemap.xml":  # only this language's pages: a link to the other one is a full page load
            entries = re.findall(r"\s*<url>.*?</url>", output, flags=re.S)
            for entry in entries:
                if not in_language(entry, lang, config):
                    output = output.replace(entry, "", 1)
        target = Path(config.site_dir) / root_prefix(lang) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(output, encoding="utf-8")
        if name == "sitemap.xml":
            with gzip.GzipFile(target.with_suffix(".xml.gz"), "wb", mtime=0) as gz:
                gz.write(output.encode("utf-8"))


@event_priority(-200)  # after mkdocs-static-i18n (-100), which builds the other languages in its on_post_build
def on_post_build(config: Any) -> None:
    lang = _BUILDS.pop() if _BUILDS else language(config)
    write_notebooks(config, lang)
    if not _BUILDS:  # the first build, after all the others
        split_search_index(config)
        write_static_pages(config)
        _STATIC.clear()
        if not _SERVE["dirty"]:  # a full build used every notebook it needs: drop the stale ones
            cache = Path(config.config_file_path).parent / NOTEBOOK_CACHE
            for stale in cache.glob("*.ipynb"):
                if stale.name not in _NOTEBOOKS_USED:
                    stale.unlink()
        _NOTEBOOKS_USED.clear()
