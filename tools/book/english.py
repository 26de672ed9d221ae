"""No Chinese where an English reader reads code: a count of CJK characters in the English edition.

The English pages (``docs/NAME.en.md``), the English labs (``docs/labs/NAME.en.py``), the English
notebooks the site offers (made here by the same functions that the build calls) and the English
nav (``nav_translations`` in ``mkdocs.yml``) are split into kinds, and the CJK characters of each
kind are counted:

* ``comment``: a comment in a Python block or a lab's code cell;
* ``plot``: a string passed to a matplotlib call (a label, a title, a legend);
* ``string``: any other string literal, unless it is data the code needs (``DATA``, the Chinese
  corpus's prompt);
* ``output``: a printed-output block (the ```` ```text ```` fence after an expected-output marker);
* ``fence``: any other fenced block (console sessions, text);
* ``prose``: the Markdown text outside fences, except what is quoted (``quoted``: inside
  quotation marks, 《》 or backticks, such as the source article's title or ``"注意力" means
  "attention"``) and the Chinese column of the glossary's tables (``glossary``);
* ``nav``: the English nav titles; every Chinese nav title must have one.

``quoted``, ``glossary`` and data strings are allowed; every other kind must count 0, in the pages,
in the labs and in the notebooks (``nb:`` before the kind). A notebook is named by the file a reader
downloads and by the English page or lab it is made from, the file to fix
(``en/notebooks/05-implementation.ipynb (from 05-implementation.en.md)``). ``python -m tools.book.english`` prints
the counts per page and per kind (``pytest -s`` on ``tests/book/test_english.py`` shows them too).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from pathlib import Path

from tools.book.tangle import load_config, nav_entries, parse_fences

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
EXPECTED = re.compile(r"^\s*<!--\s*pytest-codeblocks:expected-output\s*-->\s*$")
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|《[^》\n]*》|`[^`\n]*`")
MAGIC = re.compile(r"^\s*[%!]")
DATA = {"注意力"}  # chapter 10's prompt: the corpus is Chinese, so the prompt is too
PLOT_CALLS = {
    "plot", "scatter", "bar", "barh", "hist", "imshow", "text", "annotate", "legend", "title", "suptitle",
    "xlabel", "ylabel", "set_xlabel", "set_ylabel", "set_title", "set_xticklabels", "set_yticklabels",
    "set_label", "colorbar", "loglog", "semilogx", "semilogy", "fill_between", "axhline", "axvline",
    "errorbar", "set", "step", "savefig", "figure", "subplots",
}
ALLOWED = {"quoted", "glossary", "data"}


def cjk(text: str) -> int:
    return len(CJK.findall(text))


def count_code(code: str) -> Counter[str]:
    """CJK characters in one Python block, by kind: comment, plot, string, data."""
    counts: Counter[str] = Counter()
    body = "\n".join("" if MAGIC.match(line) else line for line in code.splitlines()) + "\n"
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(body).readline))
        tree = ast.parse(body)
    except (SyntaxError, tokenize.TokenError):  # not Python: every CJK character counts as a comment
        counts["comment"] += cjk(code)
        return counts
    counts["comment"] += sum(cjk(t.string) for t in tokens if t.type == tokenize.COMMENT)
    plotted: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in PLOT_CALLS:
                plotted.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Constant))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and cjk(node.value):
            kind = "plot" if id(node) in plotted else "data" if node.value in DATA else "string"
            counts[kind] += cjk(node.value)
    return counts


def count_prose(text: str, glossary: bool = False) -> Counter[str]:
    """CJK characters in Markdown text: quoted, glossary (the 中文 column of a table) or prose."""
    counts: Counter[str] = Counter()
    column = None  # the glossary column of the table being read
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else None
        if cells is None:
            column = None
        elif glossary and column is None and any(cjk(c) for c in cells):
            column = next(i for i, c in enumerate(cells) if cjk(c))  # the header row names the column
            counts["glossary"] += cjk(cells[column])
            cells[column] = ""
        elif glossary and column is not None and column < len(cells):
            counts["glossary"] += cjk(cells[column])
            cells[column] = ""
        rest = " | ".join(cells) if cells is not None else line
        counts["quoted"] += sum(cjk(m) for m in QUOTED.findall(rest))
        counts["prose"] += cjk(QUOTED.sub("", rest))
    return counts


def count_page(text: str, glossary: bool = False) -> Counter[str]:
    """One English Markdown page, by kind."""
    lines = text.splitlines()
    counts: Counter[str] = Counter()
    inside = [False] * len(lines)
    after_marker = False
    for fence in parse_fences(text, ""):
        end = min(fence.start + len(fence.body) + 2, len(lines))
        for i in range(fence.start, end):
            inside[i] = True
        above = [line for line in lines[max(0, fence.start - 3) : fence.start] if line.strip()]
        after_marker = bool(above) and bool(EXPECTED.match(above[-1]))
        body = "\n".join(fence.body)
        if fence.info == "python" or fence.info.startswith("python "):
            counts.update(count_code(body))
        else:
            counts["output" if after_marker else "fence"] += cjk(body)
    outside = "\n".join(line for i, line in enumerate(lines) if not inside[i])
    counts.update(count_prose(outside, glossary))
    return counts


def count_lab(text: str) -> Counter[str]:
    """One English lab (a jupytext percent script): Markdown cells as prose, code cells as code."""
    import jupytext

    counts: Counter[str] = Counter()
    for cell in jupytext.reads(text, fmt="py:percent").cells:
        counts.update(count_code(cell.source) if cell.cell_type == "code" else count_page(cell.source))
    return counts


def count_notebook(nb) -> Counter[str]:
    counts: Counter[str] = Counter()
    for cell in nb.cells:
        counts.update(count_code(cell.source) if cell.cell_type == "code" else count_page(cell.source))
    return Counter({f"nb:{k}": v for k, v in counts.items()})


def english_notebooks() -> dict[str, object]:
    """The English notebooks, made by the functions that write them into ``site/en/``."""
    import jupytext
    from nbformat.v4 import new_code_cell

    from tools.site import notebooks as hooks
    from tools.release.package import package_version, setup_cell

    version = package_version(ROOT)
    site_url = load_config(ROOT).get("site_url", "")
    notebooks: dict[str, object] = {}
    for page in hooks.chapter_pages(ROOT):
        source = DOCS / hooks.source_of(page, "en", DOCS)
        text = source.read_text(encoding="utf-8")
        notebooks[notebook_place(page)] = hooks.chapter_notebook(text, f"docs/{source.name}", site_url, version, "en")
    for lab in english_labs():
        nb = jupytext.read(DOCS / hooks.source_of(lab, "en", DOCS))
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first, new_code_cell(setup_cell(version, "en")))
        notebooks[notebook_place(lab)] = nb
    return notebooks


def english_labs() -> list[str]:
    from tools.site import notebooks as hooks

    return [e for e in nav_entries(load_config(ROOT)) if hooks.LAB.match(e)]


def notebook_place(src_uri: str) -> str:
    """How a failure names an English notebook: the file a reader downloads, then the English
    page or lab it is made from, which is the file to fix.

    ``05-implementation.md`` -> ``en/notebooks/05-implementation.ipynb (from 05-implementation.en.md)``;
    ``labs/scaling.py`` -> ``en/labs/scaling/scaling.ipynb (from labs/scaling.en.py)``.
    """
    from tools.site import notebooks as hooks

    if hooks.LAB.match(src_uri):
        notebook = hooks.lab_notebook(src_uri)
    else:
        notebook = f"{hooks.NOTEBOOK_DIR}/{hooks.notebook_name(src_uri)}"
    return f"en/{notebook} (from {hooks.source_of(src_uri, 'en', DOCS)})"


def nav_counts() -> Counter[str]:
    """The English nav: CJK in ``nav_translations``, and each Chinese nav title without a translation."""
    config = load_config(ROOT)
    languages = next(p["i18n"]["languages"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    english = next(lang for lang in languages if lang["locale"] == "en")
    translations = english.get("nav_translations", {})
    titles: list[str] = []

    def walk(items: list) -> None:
        for item in items:
            if isinstance(item, dict):
                for title, value in item.items():
                    titles.append(title)
                    if isinstance(value, list):
                        walk(value)

    walk(config["nav"])
    counts: Counter[str] = Counter()
    counts["nav"] += sum(cjk(str(v)) for v in translations.values())
    counts["nav"] += sum(cjk(t) for t in titles if t not in translations)
    return counts


def english_sources() -> dict[str, Counter[str]]:
    """Counts for every English page and lab, keyed by its path under docs/."""
    found: dict[str, Counter[str]] = {}
    for path in sorted(DOCS.rglob("*.en.md")):
        rel = path.relative_to(DOCS).as_posix()
        found[rel] = count_page(path.read_text(encoding="utf-8"), glossary=path.name == "glossary.en.md")
    for path in sorted((DOCS / "labs").glob("*.en.py")):
        found[path.relative_to(DOCS).as_posix()] = count_lab(path.read_text(encoding="utf-8"))
    return found


def all_counts() -> dict[str, Counter[str]]:
    counts = english_sources()
    counts.update({name: count_notebook(nb) for name, nb in english_notebooks().items()})
    counts["mkdocs.yml nav_translations"] = nav_counts()
    return counts


def problems(counts: dict[str, Counter[str]]) -> list[str]:
    """Every (place, kind) with CJK characters where an English reader should see none."""
    return [
        f"{name}: {n} CJK characters in {kind}"
        for name, c in counts.items()
        for kind, n in sorted(c.items())
        if n and kind.removeprefix("nb:") not in ALLOWED
    ]


def report(counts: dict[str, Counter[str]]) -> str:
    kinds = sorted({k for c in counts.values() for k in c})
    width = max(len(n) for n in counts)
    lines = [f"{'':{width}}  " + " ".join(f"{k:>10}" for k in kinds)]
    for name, c in counts.items():
        if any(c.values()):
            lines.append(f"{name:{width}}  " + " ".join(f"{c.get(k, 0):>10}" for k in kinds))
    total = sum(counts.values(), Counter())
    lines.append(f"{'total':{width}}  " + " ".join(f"{total.get(k, 0):>10}" for k in kinds))
    return "\n".join(lines)


def places() -> list[str]:
    """The names :func:`all_counts` reports, without counting (one test per page, lab, notebook, nav)."""
    from tools.site import notebooks as hooks

    names = [p.relative_to(DOCS).as_posix() for p in sorted(DOCS.rglob("*.en.md"))]
    names += [p.relative_to(DOCS).as_posix() for p in sorted((DOCS / "labs").glob("*.en.py"))]
    names += [notebook_place(page) for page in hooks.chapter_pages(ROOT)]
    names += [notebook_place(lab) for lab in english_labs()]
    return names + ["mkdocs.yml nav_translations"]


def main() -> int:
    counts = all_counts()
    print(report(counts))
    found = problems(counts)
    print(f"\n{len(found)} places with CJK where the English edition should have none")
    for p in found:
        print("  " + p)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
