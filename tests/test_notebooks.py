"""The chapter notebooks that the site offers for download (``site/notebooks/``).

``tools/mkdocs_hooks.py`` writes one notebook per chapter after each build. Each has one code
cell per ```` ```python ```` block of its chapter, and chapter 5's notebook, as downloaded from
the built site, runs from top to bottom on the CPU (and so does every other chapter's).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from tools.parity import english_path
from tools.build.notebooks import LAB, NOTEBOOK_DIR, chapter_pages, lab_notebook, notebook_name
from tools.release import package_version, setup_cell
from tools.tangle import load_config, nav_entries, parse_fences

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapter_pages(ROOT)
EXECUTED = "05-implementation.md"


# Each edition's notebooks: site/notebooks/ from the Chinese chapters, site/en/notebooks/ from the English ones.
EDITIONS = {"zh": "", "en": "en/"}


def lang(root: str) -> str:
    return "en" if root else "zh"


def source(page: str, root: str = "") -> Path:
    """``05-implementation.md`` in the edition at ``root`` (``en/``: ``docs/05-implementation.en.md``)."""
    path = ROOT / "docs" / page
    return english_path(path) if root else path


def python_fences(page: str, root: str = "") -> list[str]:
    """The bodies of the chapter's ```python blocks (those pytest-codeblocks runs), in order."""
    text = source(page, root).read_text(encoding="utf-8")
    return ["\n".join(f.body).rstrip("\n") for f in parse_fences(text, page) if f.info == "python" and f.char == "`"]


def read(site_dir: Path, page: str, root: str = "") -> nbformat.NotebookNode:
    return nbformat.read(site_dir / root / NOTEBOOK_DIR / notebook_name(page), as_version=4)


LABS = [entry for entry in nav_entries(load_config(ROOT)) if LAB.match(entry)]


@pytest.mark.parametrize("root", EDITIONS.values(), ids=EDITIONS.keys())
@pytest.mark.parametrize("lab", LABS)
def test_every_lab_has_its_notebook(site_dir: Path, lab: str, root: str) -> None:
    """Each lab (a jupytext percent script) is offered as an .ipynb beside its page, cell for cell, in each edition."""
    path = site_dir / root / lab_notebook(lab)
    assert path.exists(), f"{path} is missing: the on_post_build hook writes it"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    text = source(lab, root).read_text(encoding="utf-8")
    code_markers = [line for line in text.splitlines() if line.startswith("# %%") and "[markdown]" not in line]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code[0] == setup_cell(package_version(ROOT), lang(root)), f"{lab}: the setup cell must come first"
    assert len(code) == 1 + len(code_markers), lab
    page = (site_dir / root / lab_notebook(lab)).parent / "index.html"
    assert path.name in page.read_text(encoding="utf-8"), f"{page} does not link to {path.name}"
    assert (path.parent / Path(lab).name).read_text(encoding="utf-8") == text, "the lab's source, beside its page"


def test_the_chapters_are_found() -> None:
    assert EXECUTED in CHAPTERS and "index.md" not in CHAPTERS
    assert len(CHAPTERS) >= 9, CHAPTERS


@pytest.mark.parametrize("root", EDITIONS.values(), ids=EDITIONS.keys())
@pytest.mark.parametrize("page", CHAPTERS)
def test_every_chapter_has_its_notebook(site_dir: Path, page: str, root: str) -> None:
    path = site_dir / root / NOTEBOOK_DIR / notebook_name(page)
    assert path.exists(), f"{path} is missing: the on_post_build hook writes it"
    nb = read(site_dir, page, root)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code[0] == setup_cell(package_version(ROOT), lang(root)), f"{page}: the setup cell must come first"
    code = code[1:]
    fences = python_fences(page, root)
    assert len(code) == len(fences), f"{page}: {len(code)} code cells for {len(fences)} ```python blocks"
    assert code == fences, f"{page}: the code cells differ from the chapter's blocks"
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "```python" not in markdown and "pytest-codeblocks:" not in markdown


def _run(nb: nbformat.NotebookNode, monkeypatch: pytest.MonkeyPatch) -> list[nbformat.NotebookNode]:
    """Execute a notebook with nbclient on the CPU, as a reader would: from the repository root.
    Return the code cells that ran (those tagged ``raises-exception`` need a GPU and may fail)."""
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first failure
    ran = [c for c in nb.cells if c.cell_type == "code" and "raises-exception" not in c.metadata.get("tags", [])]
    assert not [o for c in ran for o in c.outputs if o.output_type == "error"]
    return ran


@pytest.mark.parametrize("root", EDITIONS.values(), ids=EDITIONS.keys())
def test_the_chapter_notebook_runs_in_a_fresh_kernel(site_dir: Path, root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chapter 5's notebook, the one the site's download must get right, in a kernel of its own."""
    nb = read(site_dir, EXECUTED, root)
    assert sum(c.cell_type == "code" for c in nb.cells) > 0
    ran = _run(nb, monkeypatch)
    assert ran[0].source == setup_cell(package_version(ROOT), lang(root)) and ran[0].outputs == [], (
        "inside the repository the setup cell installs nothing and prints nothing"
    )
    assert any(o.output_type == "stream" for c in ran for o in c.outputs), "chapter 5 prints shapes"


OTHERS = [p for p in CHAPTERS if p != EXECUTED]
HALVES = {"odd": OTHERS[0::2], "even": OTHERS[1::2]}  # alternate: the costly chapters 8 and 10 fall into both


@pytest.mark.parametrize("root", EDITIONS.values(), ids=EDITIONS.keys())
@pytest.mark.parametrize("half", HALVES, ids=HALVES.keys())
def test_every_chapter_notebook_runs(site_dir: Path, half: str, root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other chapter's notebook, top to bottom: one kernel per edition and half of the book, its namespace
    cleared (``%reset -f``) before each notebook, so that a kernel start and the torch import are paid once.
    A failing cell fails the test; the message names the cell's code."""
    from nbformat.v4 import new_code_cell, new_notebook

    cells = []
    for page in HALVES[half]:
        nb = read(site_dir, page, root)
        cells += [new_code_cell("%reset -f"), *nb.cells]
    ran = _run(new_notebook(cells=cells, metadata=nb.metadata), monkeypatch)
    setups = [c for c in ran if c.source == setup_cell(package_version(ROOT), lang(root))]
    assert len(setups) == len(HALVES[half]) and all(c.outputs == [] for c in setups)


def test_a_gpu_block_is_announced_and_does_not_stop_run_all() -> None:
    from tools.build.notebooks import chapter_notebook

    md = "# T\n\n<!--pytest.mark.cuda-->\n\n```python\nimport torch\ntorch.ones(1, device='cuda')\n```\n\n```python\nx = 1\n```\n"
    nb = chapter_notebook(md)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.metadata.get("tags", []) for c in code] == [["raises-exception"], []]
    assert "CUDA" in nb.cells[1].source and "pytest" not in "".join(
        c.source for c in nb.cells if c.cell_type == "markdown"
    )
