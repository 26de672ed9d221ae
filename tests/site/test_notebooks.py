"""The notebooks that the site offers for download (``site/notebooks/``, ``site/en/notebooks/``, the labs').

``tools/site/notebooks.py`` writes one notebook per chapter after each build: the setup cell of
``tools/release/package.py``, then one code cell per ```` ```python ```` block of the chapter, in order.
That each chapter's notebook runs from top to bottom on the CPU ("Run all") is proved here
without running the chapter a second time, from four facts:

1. *Generated faithfully.* The notebook's code cells are the setup cell and then exactly the
   page's blocks, cell by cell; its markdown has no code and no test directive
   (``test_every_chapter_has_its_notebook``).
2. *The same programs.* Grouped by the ``cont`` chains of pytest-codeblocks
   (``tools/testing/codeblocks.py``, proved equal to what the plugin collects), the cells of each chain
   parse alone and make, statement for statement, the very program pytest-codeblocks runs from
   the page in this session (``tests/book/test_codeblocks.py`` proves the chains are the plugin's).
3. *The same inputs.* In the kernel a chain runs after the setup cell and every earlier cell; under
   pytest-codeblocks it runs alone, in a fresh namespace. The two are the same run when no name the
   chain reads without binding it (by the scopes of ``symtable``) is bound by an earlier cell
   (a GPU-only cell counts with every name it binds: on the CPU it stops part way), when the chain
   reads no name the kernel defines differently (``__name__``, ``In``, ``display``...) and no
   namespace dynamically (``globals()``), when a cell that ends in an expression shows ``None``
   or ends in a semicolon (IPython displays the last value, unless a semicolon follows it: the
   figure blocks end so), and when every process setting the chain changes
   (``torch.set_num_threads``, ``set_printoptions``, warning filters, module attributes) is set
   back in the same chain or only inside a ``with`` block (``test_each_notebook_runs_as_its_code_blocks``).
   A chain that fails a condition of the last kind is run in the kernel instead.
4. *The notebook glue.* What no code block runs, the setup cell, runs in a fresh kernel from the
   repository: it prints nothing and installs nothing, and ``selfattn`` then comes from ``src/``
   (``test_the_notebook_glue_runs_in_a_fresh_kernel``, with the chains of 3 that need a kernel).
   Outside the repository, a fresh environment runs chapter 5's notebook from the site in full
   (``tests/release/test_reader_route.py``).

pytest-codeblocks then runs every chain of both editions in the same pytest session, and the
session fails if one fails. When the session does not run a page's code blocks (``pytest
tests/site/test_notebooks.py`` alone, ``-k``, another working directory), the proof cannot lean on
them: the notebook is executed in a kernel instead, top to bottom, as before.

What neither run proves: a chain that draws random numbers before it seeds torch's generator
runs, in both, with whatever state the code before it left; each run checks one such state.
"""

from __future__ import annotations

import ast
import os
import re
import symtable
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from IPython.core.displayhook import DisplayHook

from tools.testing.codeblocks import Chain, chains, program_key
from tools.site import figures
from tools.site.labs import files_read_by_lab
from tools.site.notebooks import (
    LAB, NOTEBOOK_DIR, chapter_notebook, chapter_pages, data_cell, lab_ipynb, lab_notebook, notebook_name,
)
from tools.book.parity import english_path
from tools.release.package import package_version, setup_cell
from tools.book.tangle import load_config, nav_entries, parse_fences

ROOT = Path(__file__).resolve().parents[2]
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
    """The bodies of the chapter's ```python blocks (those pytest-codeblocks runs), in order, with their figure
    references resolved as the build resolves them ("{fig:LABEL}" -> "图 4.3" / "Figure 4.3")."""
    lang = "en" if root else "zh"
    text = figures.resolve(source(page, root).read_text(encoding="utf-8"), figures.numbering(ROOT, lang), lang)
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
    data = files_read_by_lab(source(lab, root), ROOT)
    if data:  # then the files the lab reads, carried by the notebook
        assert code[1] == data_cell(data, ROOT, lang(root)), f"{lab}: the data cell must come second"
    assert len(code) == 1 + bool(data) + len(code_markers), lab
    again = jupytext.writes(lab_ipynb(source(lab, root), ROOT, package_version(ROOT), lang(root)), fmt="ipynb")
    assert path.read_text(encoding="utf-8").rstrip("\n") == again.rstrip("\n"), "the same sources, the same notebook"
    page = (site_dir / root / lab_notebook(lab)).parent / "index.html"
    assert path.name in page.read_text(encoding="utf-8"), f"{page} does not link to {path.name}"
    assert (path.parent / Path(lab).name).read_text(encoding="utf-8") == text, "the lab's source, beside its page"


def test_notebooks_are_deterministic_and_the_data_cell_writes_what_the_lab_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built twice from the same sources, a notebook is the same, cell ids included (nbformat draws
    random ones). Run in an empty folder, a lab's data cell writes, byte for byte, each file the lab
    names, at the path the lab reads it from; run again, or below a folder that has them (as in the
    repository), it writes nothing."""
    version = package_version(ROOT)
    lab = ROOT / "docs" / "labs" / "benchmarks.en.py"
    first, second = (lab_ipynb(lab, ROOT, version, "en") for _ in range(2))
    assert [c.id for c in first.cells] == [c.id for c in second.cells] and first == second
    assert len({c.id for c in first.cells}) == len(first.cells)
    page = "# A\n\n```python\nx = 1\n```\n\n```python\nx = 1\n```\n"
    ids = [[c.id for c in chapter_notebook(page, "a.md", "", version).cells] for _ in range(2)]
    assert ids[0] == ids[1] and len(set(ids[0])) == len(ids[0]) == 5, ids  # two equal cells
    data = files_read_by_lab(ROOT / "docs" / "labs" / "capstone.py", ROOT)
    # The Chinese lab also reads the English model's meta (its dictionary measure, chapter 10).
    assert data == ["docs/labs/data/book.txt", "models/charlm.en.pt", "models/charlm.pt"], data
    cell = data_cell(data, ROOT, "zh")
    monkeypatch.chdir(tmp_path)
    exec(cell, {})
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == data and all((tmp_path / n).read_bytes() == (ROOT / n).read_bytes() for n in data)
    (tmp_path / data[0]).write_text("the reader's own corpus", encoding="utf-8")
    exec(cell, {})
    assert (tmp_path / data[0]).read_text(encoding="utf-8") == "the reader's own corpus", "nothing overwritten"
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # the files are in a folder above, as in the repository
    exec(cell, {})
    assert not any((tmp_path / "sub").iterdir()), "where the lab finds its files, it writes nothing"


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
    # The cells "Run all" may see fail on a CPU are exactly the blocks pytest-codeblocks skips here.
    tagged = [("raises-exception" in c.metadata.get("tags", [])) for c in nb.cells if c.cell_type == "code"][1:]
    skipped = {s for c in page_chains(page, root) if c.marks for s in c.starts}
    heads = [f.start + 1 for f in parse_fences(source(page, root).read_text(encoding="utf-8"), page)
             if f.info == "python" and f.char == "`"]
    assert tagged == [h in skipped for h in heads], f"{page}: tagged raises-exception: {tagged}"


def page_chains(page: str, root: str = "") -> list[Chain]:
    path = source(page, root)
    return chains(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


# ------------------------------------------------------------------------------------- the proof

# Names whose value in a Jupyter kernel differs from pytest-codeblocks' fresh namespace
# (``exec(code, {"__MODULE__": "__main__"})``, where ``__name__`` is the builtins module's).
KERNEL_NAMES = {
    "__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__", "__MODULE__",
    "In", "Out", "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "get_ipython", "display", "exit", "quit",
}
DYNAMIC = {"globals", "locals", "vars", "eval", "exec", "dir", "__import__"}
# Process settings a chain may change only if it sets them back (or inside a ``with`` block).
SETTERS = {
    "set_num_threads", "set_num_interop_threads", "set_printoptions", "set_default_dtype", "set_default_device",
    "set_default_tensor_type", "set_warn_always", "use_deterministic_algorithms", "set_float32_matmul_precision",
    "set_flush_denormal", "set_grad_enabled", "set_detect_anomaly", "simplefilter", "filterwarnings",
    "resetwarnings", "seterr", "chdir", "putenv", "setrecursionlimit", "set_start_method", "use",
}
SHOWS_NONE = {"print", "set_num_threads", "set_printoptions", "show", "set_warn_always", "simplefilter"}


def bound_names(code: str) -> set[str]:
    """The names a program binds at module level (assignments, imports, definitions, loop targets...)."""
    table = symtable.symtable(code, "<cell>", "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}


def free_names(code: str) -> set[str]:
    """The global names a program reads but never binds itself, in the scopes that can run.

    A function or class defined at module level is *dormant* when nothing that runs refers to it: not
    the module's own code, not a lambda, not a function that runs. A dormant definition's body never
    runs in the program, in a kernel or not, so its reads do not count (a titled block that defines
    the package's functions refers to the package's other functions, defined by other blocks).
    """
    table = symtable.symtable(code, "<chain>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}

    def direct(u: symtable.SymbolTable) -> set[str]:
        return {s.get_name() for s in u.get_symbols() if s.is_referenced()
                and (u is table or s.is_global() or (u.get_type() == "class" and not s.is_local()))}

    def reads(t: symtable.SymbolTable) -> set[str]:
        found, todo = set(), [t]
        while todo:
            u = todo.pop()
            todo += u.get_children()
            found |= direct(u)
        return found

    # A class body runs where it is defined; its methods, like functions, only when something calls them.
    anonymous = ("lambda", "listcomp", "setcomp", "dictcomp", "genexpr")  # they run (or may) where they stand
    functions = {c.get_name(): [c] for c in table.get_children() if c.get_type() == "function"
                 and c.get_name() not in anonymous}
    classes = [c for c in table.get_children() if c.get_type() == "class"]
    for c in classes:
        functions.setdefault(c.get_name(), []).extend(c.get_children())
    running = [c for c in table.get_children() if c.get_type() == "function" and c.get_name() in anonymous]
    free = direct(table) | {n for c in classes for n in direct(c)} | {n for c in running for n in reads(c)}
    live, done = set(free), set()
    while todo := [n for n in live & functions.keys() if n not in done]:
        for n in todo:
            done.add(n)
            for c in functions[n]:
                live |= reads(c)
    return live - bound


def process_changes(code: str) -> list[str]:
    """The process settings a program changes and does not set back (outside ``with`` blocks)."""
    tree = ast.parse(code)
    inside_with = {id(n) for w in ast.walk(tree) if isinstance(w, (ast.With, ast.AsyncWith)) for n in ast.walk(w)}
    modules = {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    calls: dict[str, list[bool]] = {}  # setter -> for each call, whether it is inside a with block
    for node in ast.walk(tree):
        name = ""
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id
            name = name if name in SETTERS else ""
        elif isinstance(node, (ast.Assign, ast.AugAssign)):  # torch.backends.x = ..., os.environ["X"] = ...
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                base = t
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in modules and t is not base:
                    name = ast.unparse(t)
        if name:
            calls.setdefault(name, []).append(id(node) in inside_with)
    # set back: called again (set, then restore), or only ever inside with blocks (catch_warnings restores filters)
    return sorted(name for name, where in calls.items() if len(where) < 2 and not all(where))


def _cell_chains(page: str, root: str) -> list[tuple[Chain, list[str]]]:
    """Each chain of the page with the notebook cells (their sources) it is made of."""
    text = source(page, root).read_text(encoding="utf-8")
    cells = {f.start + 1: "\n".join(f.body).rstrip("\n") for f in parse_fences(text, page)
             if f.info == "python" and f.char == "`"}
    return [(c, [cells.get(s, "") for s in c.starts]) for c in page_chains(page, root)]


def solid(code: str) -> str:
    """pytest-codeblocks drops the blank lines of an indented (collapsed) block, also inside a
    docstring: the two programs are compared with blank lines dropped on both sides."""
    return "\n".join(line for line in code.splitlines() if line.strip())


def notebook_proof(page: str, root: str) -> tuple[list[str], list[tuple[Chain, list[str]]]]:
    """Conditions 2 and 3 of the module docstring, for one page: (what fails, the chains to run in a kernel,
    each with its cells)."""
    problems: list[str] = []
    kernel: list[tuple[Chain, list[str]]] = []
    text = source(page, root).read_text(encoding="utf-8")
    fences = [f.start + 1 for f in parse_fences(text, page) if f.info == "python" and f.char == "`"]
    grouped = _cell_chains(page, root)
    in_chains = [s for c, _ in grouped for s in c.starts]
    if in_chains != fences:
        problems.append(f"{page}: the python blocks at lines {sorted(set(fences) - set(in_chains))} are in no "
                        "python chain of pytest-codeblocks (a cont after a text block?): only the notebook runs them")
    earlier = bound_names(setup_cell(package_version()).replace("%pip", "pass  #"))
    for chain, cells in grouped:
        where = f"{chain.page}:{chain.line}"
        try:
            trees = [ast.parse(cell) for cell in cells]
        except SyntaxError as err:
            problems.append(f"{where}: a cell of the chain does not parse alone in the kernel: {err}")
            continue
        joined = ast.parse("\n".join(solid(cell) for cell in cells))
        if ast.dump(joined) != ast.dump(ast.parse(solid(chain.code))):
            problems.append(f"{where}: the cells do not make the program pytest-codeblocks runs")
        free = free_names(chain.code)
        if shadowed := sorted(free & earlier):
            problems.append(f"{where}: reads {shadowed} without binding them, and an earlier cell binds them")
        needs = sorted(free & (KERNEL_NAMES | DYNAMIC))
        for tree, cell in zip(trees, cells, strict=True):
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr) and not isinstance(last.value, ast.Constant):
                f = last.value.func if isinstance(last.value, ast.Call) else None
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called not in SHOWS_NONE and not DisplayHook.semicolon_at_end_of_expression(cell):
                    needs.append(f"the kernel displays {ast.unparse(last.value)[:40]}")
        if changes := process_changes(chain.code):
            problems.append(f"{where}: changes {changes} and does not set it back: later cells would run under it")
        if needs:
            kernel.append((chain, cells))
        earlier |= bound_names(chain.code)
    return problems, kernel


def _session_runs_code_blocks(request: pytest.FixtureRequest, page: str, root: str) -> bool:
    """Does this session run every python chain of the page with pytest-codeblocks, from the repository root?"""
    path = source(page, root)
    lines = sorted(
        int(i.name.removeprefix("line ")) for i in request.session.items
        if type(i).__name__ == "TestBlock" and Path(i.path) == path and getattr(i.obj, "syntax", "") == "python"
    )
    return Path.cwd().resolve() == ROOT and lines == sorted(c.line for c in page_chains(page, root))


PROOF_CASES = {  # (the page, whether the proof must fail, what must be named)
    "shadowed": ("```python\nx = 1\n```\n\n```python\nprint(len([x]))\n```\n", "reads ['x']"),
    "shadowed-in-function": ("```python\nn = 3\n```\n\n```python\ndef f():\n    return n\nf()\n```\n", "reads ['n']"),
    "called-indirectly": ("```python\nn = 3\n```\n\n```python\ndef f():\n    return n\ndef g():\n    return f()\n"
                          "print(list(map(lambda _: g(), [1])))\n```\n", "reads ['n']"),
    "comprehension": ("```python\nn = 3\n```\n\n```python\nprint([n for _ in range(2)])\n```\n", "reads ['n']"),
    "class-body": ("```python\nn = 3\n```\n\n```python\nclass A:\n    k = n\n```\n", "reads ['n']"),
    "gpu-cell-binds": ("<!--pytest.mark.cuda-->\n\n```python\ny = 2\n```\n\n```python\nprint(y)\n```\n", "reads ['y']"),
    "setup-binds": ("```python\nprint(repo)\n```\n", "reads ['repo']"),
    "threads": ("```python\nimport torch\ntorch.set_num_threads(1)\n```\n", "set_num_threads"),
    "module-attribute": ("```python\nimport torch\ntorch.backends.x = 1\n```\n", "torch.backends.x"),
    "cont-in-text": ("```text\nout\n```\n\n<!--pytest-codeblocks:cont-->\n\n```python\nx = 1\n```\n", "in no python chain"),
    "split-statement": ("```python\nif True:\n```\n\n<!--pytest-codeblocks:cont-->\n\n```python\n    x = 1\n```\n",
                        "does not parse alone"),
}
PROOF_KERNEL = {
    "__name__": "```python\nif __name__ == '__main__':\n    print(1)\n```\n",
    "globals": "```python\nprint(globals().get('x'))\n```\n",
    "display": "```python\nimport torch\ntorch.ones(2)\n```\n",
}
PROOF_PASSES = {
    "dormant": "```python\nclass Block:\n    pass\n```\n\n```python\nclass LM:\n    def f(self):\n        return Block()\n```\n",
    "cont": "```python\nx = 1\n```\n\n<!--pytest-codeblocks:cont-->\n\n```python\nprint(x)\n```\n",
    "rebinds": "```python\nx = 1\n```\n\n```python\nx = 2\nprint(x)\n```\n",
    "local": "```python\nx = 1\n```\n\n```python\ndef f(x):\n    return [x for x in range(x)]\nprint(f(2))\n```\n",
    "restored": "```python\nimport torch\nt = torch.get_num_threads()\ntorch.set_num_threads(1)\ntorch.set_num_threads(t)\n```\n",
    "with": "```python\nimport warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n```\n",
    "semicolon": "```python\nimport torch\ntorch.ones(2);  # IPython displays nothing\n```\n",
}


def _proof_of(text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[object]]:
    page = tmp_path / "docs" / "99-probe.md"
    page.parent.mkdir()
    page.write_text(text, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    return notebook_proof("99-probe.md", "")


@pytest.mark.parametrize(("text", "named"), PROOF_CASES.values(), ids=PROOF_CASES.keys())
def test_the_proof_fails_where_the_runs_could_differ(text: str, named: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    problems, _ = _proof_of(text, tmp_path, monkeypatch)
    assert any(named in p for p in problems), problems


@pytest.mark.parametrize("text", PROOF_KERNEL.values(), ids=PROOF_KERNEL.keys())
def test_the_proof_sends_what_it_cannot_see_to_the_kernel(text: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    problems, kernel = _proof_of(text, tmp_path, monkeypatch)
    assert not problems and len(kernel) == 1, (problems, kernel)


@pytest.mark.parametrize("text", PROOF_PASSES.values(), ids=PROOF_PASSES.keys())
def test_the_proof_passes_what_is_the_same_run(text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _proof_of(text, tmp_path, monkeypatch) == ([], [])


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
@pytest.mark.parametrize("page", CHAPTERS)
def test_each_notebook_runs_as_its_code_blocks(
    page: str, root: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"Run all" of the chapter's notebook is the code-block run of its page (module docstring, 2 and 3);
    if this session does not run the page's code blocks, the notebook runs here, top to bottom."""
    problems, _ = notebook_proof(page, root)
    assert not problems, "\n".join(problems)
    if not _session_runs_code_blocks(request, page, root):
        ran = _run(read(request.getfixturevalue("site_dir"), page, root), monkeypatch)
        assert ran[0].source == setup_cell(package_version(ROOT), lang(root)) and ran[0].outputs == []


GLUE_PROBE = "import selfattn\nprint(selfattn.__file__, selfattn.__version__)"
# Deletes every name the cells before bound, but for names that start with "_" (which the proof already covers:
# a chain that reads a name an earlier cell binds fails it). ``%reset -f`` also runs two full garbage
# collections: about half a second per reset in this kernel, with torch loaded, 27 resets here.
CLEAR = "%reset_selective -f ."


def test_the_notebook_glue_runs_in_a_fresh_kernel(site_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The setup cell (the same in every notebook: test_every_chapter_has_its_notebook) in a fresh kernel in the
    repository: it prints and installs nothing, and selfattn then comes from src/ at the book's version. Then each
    chain the proof could not judge, after CLEAR (by the proof, no earlier cell feeds it); a chain whose program
    (``tools.testing.codeblocks.program_key``) is the other edition's runs once."""
    from nbformat.v4 import new_code_cell, new_notebook

    nb = read(site_dir, EXECUTED)
    en = read(site_dir, EXECUTED, EDITIONS["en"])  # each edition's setup cell: same code, its own language
    first = [c.cell_type for c in nb.cells].index("code")
    cells = [nb.cells[first], en.cells[[c.cell_type for c in en.cells].index("code")], new_code_cell(GLUE_PROBE)]
    judged, runs = [], set()
    for page in CHAPTERS:
        for root in EDITIONS.values():
            for chain, sources in notebook_proof(page, root)[1]:
                judged.append(f"{chain.page}:{chain.line}")
                if (key := program_key(chain)) in runs:  # the other edition's chain, the same program: one run
                    continue
                runs.add(key)
                cells += [new_code_cell(CLEAR), *(new_code_cell(c) for c in sources)]
    ran = _run(new_notebook(cells=cells, metadata=nb.metadata), monkeypatch)
    for i, language in enumerate(("zh", "en")):
        assert ran[i].source == setup_cell(package_version(ROOT), language) and ran[i].outputs == [], (
            f"inside the repository the {language} setup cell installs nothing and prints nothing"
        )
    where, version = "".join(o.get("text", "") for o in ran[2].outputs).split()
    assert Path(where).resolve().is_relative_to(ROOT / "src") and version == package_version(ROOT), (where, version)
    assert judged, "expected at least chapter 10's command-line guard (__name__) to need the kernel"


def test_a_gpu_block_is_announced_and_does_not_stop_run_all() -> None:
    from tools.site.notebooks import chapter_notebook

    md = "# T\n\n<!--pytest.mark.cuda-->\n\n```python\nimport torch\ntorch.ones(1, device='cuda')\n```\n\n```python\nx = 1\n```\n"
    nb = chapter_notebook(md)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.metadata.get("tags", []) for c in code] == [["raises-exception"], []]
    assert "CUDA" in nb.cells[1].source and "pytest" not in "".join(
        c.source for c in nb.cells if c.cell_type == "markdown"
    )


LAB_FIGURE = re.compile(r'<figure id="(?P<id>[^"]*)" class="sa-figure">(?P<svgs>.*?)<figcaption>(?P<caption>.*?)'
                        r"</figcaption>", flags=re.DOTALL)
LAB_NUMBER = {"zh": '<span class="sa-figure-number">图 {n}</span>\u3000',
              "en": '<span class="sa-figure-number">Figure {n}.</span> '}


@pytest.mark.parametrize("root", EDITIONS.values(), ids=EDITIONS.keys())
@pytest.mark.parametrize("lab", LABS)
def test_every_lab_plot_is_a_numbered_figure_with_alt_text_and_a_caption(site_dir: Path, lab: str, root: str) -> None:
    """Each plot of a lab page is a figure like the chapters' (the labs' plot.show, numbered by the build): an inline
    SVG image with alt text, and its narrow variant, with a caption numbered 1, 2, ... down the page, and an id
    unique in the book (the print page holds every lab). No plot is a
    PNG any more (a bare plt.show() would give one, without alt text or caption)."""
    page = (site_dir / root / lab_notebook(lab)).parent / "index.html"
    html = page.read_text(encoding="utf-8")
    lang = "en" if root else "zh"
    found = list(LAB_FIGURE.finditer(html))
    assert found, f"{page}: no figure found"
    assert not re.search(r'<img [^>]*src="data:image/png', html), f"{page}: a plot drawn as a PNG"
    bad = []
    for n, m in enumerate(found, start=1):
        svgs = re.findall(r"<svg [^>]*>", m["svgs"])
        labels = [re.search(r'aria-label="([^"]*)"', tag) for tag in svgs]
        if m["id"] != f"fig-{Path(lab).stem}-{n}" or len(svgs) != 2 or not all(a and a[1].strip() and 'role="img"' in t
                                                              for a, t in zip(labels, svgs, strict=True)):
            bad.append((m["id"], len(svgs)))
        caption = m["caption"]
        if not caption.startswith(LAB_NUMBER[lang].format(n=n)) or not caption[len(LAB_NUMBER[lang].format(n=n)):]:
            bad.append((m["id"], caption[:60]))
    assert not bad, f"{page}: {len(bad)} of {len(found)} figures without a number, alt text or caption: {bad[:3]}"
