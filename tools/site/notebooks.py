"""One Jupyter notebook per chapter and per lab, and the download link on each page.

:func:`write` puts, after each language's build, one notebook per chapter into the built site
(``site/[en/]notebooks/NN-name.ipynb``): never into ``docs/``, so ``mkdocs serve`` does not reload
in a loop. Under ``serve --dirty`` only the notebooks of saved chapters are rewritten, and a build of a
few pages (``tools/site/page_build.py``) writes theirs. Every notebook opens with the setup cell of
``tools/release/package.py``, pinned to the package's version. The labs (jupytext scripts) become ``site/[en/]labs/NAME/NAME.ipynb``; a lab that
reads files of the repository (the corpus, a checkpoint, the benchmark results) carries them in a
second cell (:func:`data_cell`), so that its notebook, like a chapter's, runs in an empty folder
with only the package. Every cell's id is derived from its content (:func:`stable_ids`): the same
sources build the same notebooks. :func:`link` marks each chapter and lab page with the address of its notebook, so
``overrides/main.html`` offers the download link.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from tools.site import figures
from tools.site.labs import LAB, files_read_by_lab
from tools.site.languages import DEFAULT_LANGUAGE, root_prefix, source_of
from tools.release.package import setup_cell
from tools.book.tangle import TEST_DIRECTIVE, book_pages, directives_above, nav_entries, parse_fences

log = logging.getLogger("mkdocs.hooks.tangle")

CHAPTER = re.compile(r"^\d\d-[^/]*\.md$")  # docs/05-implementation.md, not docs/index.md or labs
NOTEBOOK_DIR = "notebooks"
NOTEBOOK_INTROS = {
    "zh": (
        "> 本笔记本由本书的 `{page}` 自动生成：代码单元就是这一章的 Python 代码块，请按顺序运行。"
        "第一个代码单元准备环境：需要时安装本书配套的 `selfattn` 包，已经装好时什么也不做。"
    ),
    "en": (
        "> This notebook was generated from the book's `{page}`: its code cells are the chapter's Python"
        " blocks; run them in order. The first code cell sets up the environment: it installs the book's"
        " `selfattn` package when needed and does nothing when it is already installed."
    ),
}
NOTEBOOK_INTRO = NOTEBOOK_INTROS["zh"]
SKIP_NOTES = {
    "zh": ("CUDA（一块 GPU）", "特定的环境", "> 下一个代码单元需要{need}；条件不满足时它会报错，可以跳过。"),
    "en": ("CUDA (a GPU)", "a particular environment", "> The next code cell needs {need}; without it, it fails and can be skipped."),
}
DATA_NOTES = {
    "zh": (
        "# 数据：这个实验读取本书仓库中的 {names}。\n"
        "# 网站构建时把它们嵌进了本单元（zip 压缩后的 base64）。在仓库之外，本单元把缺少的文件\n"
        "# 写到当前文件夹下的同一相对路径，后面的代码就能找到它们；在仓库中它什么也不做。"
    ),
    "en": (
        "# Data: this lab reads {names} of the book's repository.\n"
        "# The site's build embedded them in this cell (a zip archive, in base64). Outside the\n"
        "# repository, this cell writes the missing ones under the same relative paths in the\n"
        "# current folder, where the code below finds them; inside the repository it does nothing."
    ),
}
DATA_CELL = """\
{note}
import base64
import io
import zipfile
from pathlib import Path

LAB_DATA = \"\"\"
{payload}\"\"\"
with zipfile.ZipFile(io.BytesIO(base64.b64decode(LAB_DATA))) as archive:
    for name in archive.namelist():
        if not any((d / name).is_file() for d in [Path.cwd(), *Path.cwd().parents]):
            archive.extract(name)"""
LABELS = {
    "zh": {"chapter": "下载本章 Jupyter 笔记本", "lab": "下载这个实验的 Jupyter 笔记本"},
    "en": {"chapter": "Download this chapter as a Jupyter notebook", "lab": "Download this lab as a Jupyter notebook"},
}


def chapter_pages(root: Path) -> list[str]:
    """The chapters of the book (``NN-*.md`` in the nav), relative to ``docs/``, in nav order."""
    pages = [p.split("/", 1)[1] for p in book_pages(root)]
    return [p for p in pages if CHAPTER.match(p)]


def notebook_name(src_uri: str) -> str:
    """``05-implementation.md`` -> ``05-implementation.ipynb``."""
    return src_uri[: -len(".md")] + ".ipynb"


def lab_notebook(src_uri: str) -> str:
    """``labs/scaling.py`` -> ``labs/scaling/scaling.ipynb``, beside the lab's page and its ``.py`` source."""
    name = LAB.match(src_uri)["name"]  # type: ignore[index]
    return f"labs/{name}/{name}.ipynb"


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
    to other pages point at ``site_url``. With ``version``, the setup cell of ``tools/release/package.py``
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
    return stable_ids(jupytext.reads(jupytext.writes(nb, fmt="ipynb"), fmt="ipynb"))


def data_cell(files: list[str], root: Path, lang: str = DEFAULT_LANGUAGE) -> str:
    """The source of a lab notebook's data cell: the bytes of ``files`` (paths relative to ``root``) in a
    zip archive with fixed dates (the same files make the same cell), in base64, and the code that
    writes each file that neither the current folder nor a folder above it holds (where the lab looks)."""
    import base64
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            archive.writestr(info, (root / name).read_bytes())
    note = DATA_NOTES.get(lang, DATA_NOTES["en"]).format(names=", ".join(files))
    return DATA_CELL.format(note=note, payload=base64.encodebytes(buffer.getvalue()).decode("ascii"))


def stable_ids(nb: Any) -> Any:
    """Give every cell an id derived from its type and source (nbformat makes random ones), so that
    the same sources build the same notebook; a repeated cell gets a numbered suffix."""
    seen: dict[str, int] = {}
    for cell in nb.cells:
        base = hashlib.sha256(f"{cell.cell_type}\0{cell.source}".encode()).hexdigest()[:12]
        seen[base] = seen.get(base, 0) + 1
        cell["id"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
    return nb


def lab_ipynb(source: Path, root: Path, version: str, lang: str = DEFAULT_LANGUAGE) -> Any:
    """A lab (a jupytext percent script) as the notebook the site offers: the setup cell before its
    first code cell, then, if the lab reads files of ``root``, the data cell that carries them (its
    source hidden in Jupyter), every cell with a stable id."""
    import jupytext
    from nbformat.v4 import new_code_cell

    nb = jupytext.read(source)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    cells = [new_code_cell(setup_cell(version, lang))]
    data = files_read_by_lab(source, root)  # outside the repository, the notebook brings them
    if data:
        hidden = {"jupyter": {"source_hidden": True}}
        cells.append(new_code_cell(data_cell(data, root, lang), metadata=hidden))
    nb.cells[first:first] = cells
    return stable_ids(nb)


def link(page: Any, lang: str) -> None:
    """The download link of a chapter's or lab's notebook (``page.meta``, read by ``overrides/main.html``)."""
    src = getattr(page.file, "norm_src_uri", page.file.src_uri)  # 05-implementation.md, also in English
    labels = LABELS.get(lang, LABELS["en"])
    if CHAPTER.match(src):
        page.meta["notebook"] = f"{root_prefix(lang)}{NOTEBOOK_DIR}/{notebook_name(src)}"
        page.meta["notebook_label"] = labels["chapter"]
    elif LAB.match(src):
        page.meta["notebook"] = root_prefix(lang) + lab_notebook(src)
        page.meta["notebook_label"] = labels["lab"]


def write(config: Any, lang: str, dirty: bool) -> None:
    """The chapter notebooks (``site/[en/]notebooks/``) and the lab notebooks, of one language."""
    import jupytext

    root = Path(config.config_file_path).parent
    docs = Path(config.docs_dir)
    site = Path(config.site_dir) / root_prefix(lang)
    out = site / NOTEBOOK_DIR
    out.mkdir(parents=True, exist_ok=True)
    version = config.extra["selfattn_version"]
    entries = nav_entries({"nav": config.nav})  # the pages this build builds (tools/site/page_build.py: a few)
    pages = [p for p in chapter_pages(root) if p in entries]

    def fresh(source: Path, target: Path) -> bool:  # only under `serve --dirty` does site/ survive a rebuild
        return dirty and target.exists() and target.stat().st_mtime_ns > source.stat().st_mtime_ns

    for page in pages:
        source = docs / source_of(page, lang, docs)
        target = out / notebook_name(page)
        if fresh(source, target):
            continue
        text = figures.resolve(source.read_text(encoding="utf-8"), figures.numbering(root, lang), lang)  # {fig:LABEL}
        nb = chapter_notebook(text, f"docs/{source_of(page, lang, docs)}", config.site_url or "", version, lang)
        jupytext.write(nb, target, fmt="ipynb")
    labs = [entry for entry in entries if LAB.match(entry)]
    for lab in labs:  # the labs are jupytext percent scripts: convert each to .ipynb beside its page
        source = docs / source_of(lab, lang, docs)
        target = site / lab_notebook(lab)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = files_read_by_lab(source, root)
        if not (fresh(source, target) and all(fresh(root / name, target) for name in data)):
            jupytext.write(lab_ipynb(source, root, version, lang), target, fmt="ipynb")
        if lang != DEFAULT_LANGUAGE:  # mkdocs-jupyter copied scaling.en.py; the lab links to scaling.py
            copied = target.parent / Path(source_of(lab, lang, docs)).name
            shutil.copyfile(source, target.parent / Path(lab).name)
            if copied.name != Path(lab).name:
                copied.unlink(missing_ok=True)
    log.info("notebooks (%s): wrote %d chapter notebooks to %s and %d lab notebooks", lang, len(pages), out, len(labs))
