"""Figures cannot drift: each figure block is executed at build time into the page (tools/site/figures.py).

The mechanism is tested on small synthetic pages in temporary folders, drawn with plain matplotlib:
a changed figure block changes the built figure (its content and its cache key), an unchanged one
is served from the cache without executing anything, ids are unique on a page of several figures,
``selfattn.plot.INK`` becomes ``currentColor``, the header lines never reach the shown code, the
captions are numbered by the figures' places, the ``{fig:LABEL}`` references read the numbers, and a failing figure block fails ``mkdocs build --strict`` naming the page
and the figure. The last tests check the real book: its numbering and references, and that every
figure block of both editions is in its built page and on the print page (trivially true while the
book has no figures).
"""

from __future__ import annotations

from html import escape

import io
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tools.site import figures, hashing
from tools.site.figures import Figure, FigureError
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]

LINE = """```python
#| label: {label}
#| caption: {caption}
#| alt: {alt}
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(2, 1.5))
ax.plot([0, 1], [0, {y}], color="#202124")
ax.set_title("{title}")
```
"""


def figure_block(label: str, y: int = 1, title: str = "t", caption: str = "A line.", alt: str = "A rising line.") -> str:
    return LINE.format(label=label, y=y, title=title, caption=caption, alt=alt)


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the figures executed (not served from the cache), in order."""
    monkeypatch.setitem(figures.STATE, "inputs", "")
    executed: list[str] = []
    real = figures.execute

    def counting(code: str, figure_id: str, root: Path, name: str = "<figure>", variant: str = "") -> str:
        executed.append(figure_id)
        return real(code, figure_id, root, name, variant)

    monkeypatch.setattr(figures, "execute", counting)
    return executed


@pytest.fixture
def book(tmp_path: Path, executed: list[str]) -> Path:
    """An empty book root, with its own src/ and .cache/."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("X = 1\n", encoding="utf-8")
    return tmp_path


def build(markdown: str, root: Path, lang: str = "zh", where: str = "docs/01-a.md") -> tuple[str, dict[str, str]]:
    """The page's Markdown as the build shows it, and each figure's HTML by id."""
    shown = figures.place(markdown, lang, root, where)
    ids = re.findall(r"^\s*sa-figure-placeholder:(fig-[\w-]+)$", shown, flags=re.M)
    page = "\n".join(f"<p>sa-figure-placeholder:{i}</p>" for i in ids)
    html = figures.inline(page, where)
    return shown, {m[1]: m[0] for m in re.finditer(r'<figure id="(fig-[\w-]+)".*?</figure>', html, flags=re.S)}


PAGE = "# 第 1 章\n\n" + figure_block("first") + "\nText.\n\n" + figure_block("second", y=2) + "\n"


def test_the_header_lines_never_reach_the_shown_code(book: Path) -> None:
    shown, built = build(PAGE, book)
    assert "#|" not in shown
    assert sorted(built) == ["fig-first", "fig-second"]
    code = [f.body for f in parse_fences(shown, "") if f.info == "python"]
    assert [body[0] for body in code] == ["import matplotlib.pyplot as plt"] * 2
    # The figure comes right after its block, before the text that follows.
    assert shown.index("sa-figure-placeholder:fig-first") < shown.index("Text.")


def test_captions_are_numbered_in_each_language_and_alt_is_the_label(book: Path) -> None:
    _, zh = build(PAGE, book)
    assert '<figcaption><span class="sa-figure-number">图 1.1</span>\u3000A line.</figcaption>' in zh["fig-first"]
    _, en = build(PAGE, book, lang="en", where="docs/01-a.en.md")
    assert '<figcaption><span class="sa-figure-number">Figure 1.2.</span> A line.</figcaption>' in en["fig-second"]
    assert re.search(r'<svg role="img" aria-label="A rising line\." ', en["fig-first"])
    assert re.match(r'<figure id="fig-first" class="sa-figure">', zh["fig-first"])


def test_two_equal_images_in_one_figure_get_two_ids() -> None:
    """matplotlib names an embedded image by its content: equal images would share an id."""
    from tools.site.figures import inline_svg

    svg = ('<svg><defs><clipPath id="p1"/></defs><image id="imageab" clip-path="url(#p1)"/>'
           '<image id="imageab" clip-path="url(#p1)"/></svg>')
    out = inline_svg(svg, "fig-4-2")
    ids = re.findall(r'\bid="([^"]+)"', out)
    assert ids == ["fig-4-2-p1", "fig-4-2-imageab", "fig-4-2-imageab-2"], ids
    assert out.count("url(#fig-4-2-p1)") == 2


def test_ids_are_unique_on_a_page_of_several_figures_and_ink_is_currentcolor(book: Path) -> None:
    _, built = build(PAGE, book)
    page = "\n".join(built.values())
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) > 20 and len(ids) == len(set(ids)), "every id once on the page"
    for fig_id, html in built.items():
        inner = re.findall(r'\bid="([^"]+)"', html)[1:]  # the <figure>'s own id first
        assert all(i.startswith(f"{fig_id}-") for i in inner), inner
        refs = re.findall(r'(?:href="#|url\(#)([^")]+)', html)
        assert refs and all(r in inner for r in refs), "every reference points into the same figure"
    assert "#202124" not in page.lower()
    assert all("stroke: currentColor" in html for html in built.values()), "the line drawn in INK follows the page"
    assert "<?xml" not in page and "<metadata>" not in page and "<style" not in page


WIDE = """```python
#| label: {label}
#| caption: Two panels.
#| alt: Two rising lines.
from selfattn import plot

fig, axes = {make}
for ax in axes:
    ax.plot([0, 1], [0, 1], color=plot.INK)
    ax.set_title("two panels")
```
"""


def test_a_figure_too_small_on_a_phone_gets_a_narrow_variant_drawn_with_the_flag(book: Path, executed: list[str]) -> None:
    """A figure whose text would be under 9 px in a phone's 358 px column is executed again with
    SELFATTN_FIGURE=narrow: plot.figure stacks its panels at most 3.8 in wide. Both SVGs go into the figure (a media
    query shows one), each an image with the alt text; the narrow one's ids have their own prefix; each variant has
    its own cache entry. A small figure gets none, and so does one whose code ignores the flag (nothing gained)."""
    page = ("# 第 1 章\n\n" + WIDE.format(label="wide", make="plot.figure(1, 2, size=(7, 3))")
            + "\n" + figure_block("small") + "\n"
            + WIDE.format(label="plain", make="__import__('matplotlib.pyplot').pyplot.subplots(1, 2, figsize=(7, 3))"))
    _, built = build(page, book)
    assert executed == ["fig-wide", "fig-wide_narrow", "fig-small", "fig-plain", "fig-plain_narrow"]
    wide = built["fig-wide"]
    svgs = re.findall(r"<svg [^>]*>", wide)
    assert len(svgs) == 2 and 'class="sa-figure__wide"' in svgs[0] and 'class="sa-figure__narrow"' in svgs[1]
    assert all('role="img" aria-label="Two rising lines."' in tag for tag in svgs)
    narrow = wide[wide.index('class="sa-figure__narrow"'):]
    inner = re.findall(r'\bid="([^"]+)"', narrow)
    assert inner and all(i.startswith("fig-wide_narrow-") for i in inner), inner[:3]
    assert figures.smallest_text_px(wide.split('class="sa-figure__narrow"')[0]) < figures.PHONE_MIN_PX
    assert figures.smallest_text_px(narrow) >= figures.PHONE_MIN_PX
    assert 'width="273.6pt"' in svgs[1], "3.8 in"
    # The book's font list is left to the stylesheet (a fifth of a chapter page's bytes were copies of it).
    assert "<text" in wide and "font-family" not in wide and "font-size" in wide
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert figures.FONT_LIST in " ".join(css.split()), "extra.css sets the list that the SVG leaves out"
    for name in ("fig-small", "fig-plain"):
        assert built[name].count("<svg ") == 1 and "sa-figure__" not in built[name], name
    assert len(list((book / ".cache" / "figures").glob("*.svg"))) == 5, "a cache entry per variant"
    _, warm = build(page, book)
    assert warm == built and len(executed) == 5, "a warm rebuild executes neither variant"


def test_smallest_text_px_reads_the_svg_at_the_column_width() -> None:
    svg = '<svg width="504pt" viewBox="0 0 504 200"><text style="font-size: 8.5px">a</text>' \
          '<text style="font: 9px x">b</text><tspan style="font-size: 12px">c</tspan></svg>'
    assert figures.smallest_text_px(svg) == pytest.approx(8.5 * 358 / 504)  # shrunk to the column
    assert figures.smallest_text_px(svg, column_px=1000) == pytest.approx(8.5 * 4 / 3)  # never beyond 1 pt = 4/3 px
    assert figures.smallest_text_px('<svg viewBox="0 0 10 10"></svg>') == float("inf")
    assert figures.cache_key("x", "fig-a", "i") != figures.cache_key("x", "fig-a", "i", figures.NARROW)


def test_an_unchanged_block_is_served_from_the_cache_and_a_changed_one_alone_is_rendered(
    book: Path, executed: list[str]
) -> None:
    _, first = build(PAGE, book)
    assert executed == ["fig-first", "fig-second"]
    cache = sorted((book / ".cache" / "figures").glob("*.svg"))
    assert len(cache) == 2
    _, warm = build(PAGE, book)
    assert executed == ["fig-first", "fig-second"], "a warm rebuild executes nothing"
    assert warm == first
    edited = PAGE.replace("[0, 2]", "[0, 3]")  # the second figure's data
    assert edited != PAGE
    _, after = build(edited, book)
    assert executed == ["fig-first", "fig-second", "fig-second"], "only the edited figure is rendered again"
    assert after["fig-first"] == first["fig-first"]
    assert after["fig-second"] != first["fig-second"], "the changed block changed the built figure"
    assert len(sorted((book / ".cache" / "figures").glob("*.svg"))) == 3, "under a new cache key"
    # A caption is not drawn: a new caption re-renders nothing.
    _, recaptioned = build(PAGE.replace("A line.", "Another line.", 1), book)
    assert len(executed) == 3 and "Another line." in recaptioned["fig-first"]


def test_the_cache_key_covers_the_code_the_id_the_modules_it_imports_and_the_tools(
    book: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = "import pkg\nx = 1"
    inputs = figures.inputs_key(book, code)
    assert figures.inputs_key(book, code) == inputs, "reproducible"
    keys = {figures.cache_key(code, "fig-first", inputs), figures.cache_key("import pkg\nx = 2", "fig-first", inputs)}
    keys.add(figures.cache_key(code, "fig-second", inputs))
    (book / "src" / "pkg" / "__init__.py").write_text("X = 2\n", encoding="utf-8")
    keys.add(figures.cache_key(code, "fig-first", figures.inputs_key(book, code)))
    real = hashing.importlib.metadata.version
    monkeypatch.setattr(hashing.importlib.metadata, "version", lambda n: "9.9" if n == "matplotlib" else real(n))
    keys.add(figures.cache_key(code, "fig-first", figures.inputs_key(book, code)))
    assert len(keys) == 5
    words = figures.cache_key("#| caption: One.\n#| alt: A.\nx = 1", "fig-first", inputs)
    assert words == figures.cache_key("#| caption: Two.\n#| alt: B.\nx = 1", "fig-first", inputs), "words draw nothing"


def test_the_cache_key_covers_every_file_a_figure_of_the_book_reads_and_no_other_data(tmp_path: Path) -> None:
    """Found from the figure blocks themselves (their chains, as the build runs them): each file a
    figure names (chapter 10's checkpoints), copied with the package into a bare book, moves the key
    when its bytes change; and each data pattern of ``INPUTS`` matches a file some figure reads."""
    import shutil

    from tools.site.hashing import files_read

    read = set()
    for page, figure in book_figures():
        read.update(files_read(figures.chain_code(page.read_text(encoding="utf-8"), figure.fence), ROOT))
    assert "models/charlm.en.pt" in read, sorted(read)
    for pattern in figures.INPUTS:
        assert any(Path(name).match(pattern) for name in read), f"INPUTS claims {pattern}, which no figure reads"
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in sorted(read):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
        before = figures.inputs_key(tmp_path)
        with (tmp_path / name).open("ab") as f:
            f.write(b"\n")
        assert figures.inputs_key(tmp_path) != before, f"{name}: read by a figure, not in its cache key"


def figure_importing(label: str, imports: str) -> str:
    """A figure block whose code imports ``imports`` (a line of Python) before drawing."""
    return figure_block(label).replace("import matplotlib.pyplot as plt\n", f"{imports}\nimport matplotlib.pyplot as plt\n")


def test_editing_a_module_renders_exactly_the_figures_that_import_it(book: Path, executed: list[str]) -> None:
    """A figure's key holds the modules of the package it imports, directly or through other modules (a relative
    import, an import inside a function), and the package's ``__init__.py``, which every import of the
    package runs: editing a module renders those figures again, and no other."""
    pkg = book / "src" / "pkg"
    modules = {
        "a.py": "from . import b\n\nA = 1\n",
        "b.py": "B = 1\n",
        "c.py": "def later():\n    from pkg.d import D\n    return D\n",
        "d.py": "D = 1\n",
        "e.py": "E = 1\n",  # imported by no figure
    }
    for name, text in modules.items():
        (pkg / name).write_text(text, encoding="utf-8")
    page = "# 第 1 章\n\n" + "\n".join([
        figure_importing("first", "import pkg.a"),
        figure_importing("second", "from pkg.c import later"),
        figure_importing("third", "import math"),
    ]) + "\n"
    build(page, book)
    assert executed == ["fig-first", "fig-second", "fig-third"]

    def edit(name: str) -> list[str]:
        """Append a line to a module of the package; the figures the next build draws again."""
        with (pkg / name).open("a", encoding="utf-8") as f:
            f.write("# edited\n")
        executed.clear()
        figures.begin(book)  # the next build
        build(page, book)
        return list(executed)

    assert edit("b.py") == ["fig-first"], "through a (a relative import)"
    assert edit("d.py") == ["fig-second"], "through c (an import inside a function)"
    assert edit("e.py") == [], "a module no figure imports"
    assert edit("__init__.py") == ["fig-first", "fig-second"], "every import of pkg runs its __init__.py"
    executed.clear()
    figures.begin(book)
    build(page, book)
    assert executed == [], "a warm rebuild draws nothing"


def test_the_modules_a_figure_or_lab_imports_are_found_as_python_imports_them(tmp_path: Path) -> None:
    """modules_imported: ``import``, ``from``, relative imports inside the package, a parent's ``__init__.py``,
    dotted names in strings and in a notebook's shell lines; modules outside ``src/`` are not the package's."""
    from tools.site.hashing import modules_imported

    pkg = tmp_path / "src" / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.core import f\n",
        "core.py": "from .util import g\n",
        "util.py": "",
        "cli.py": "",
        "plot.py": "",
        "sub/__init__.py": "",
        "sub/deep.py": "from ..util import g\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    core = ["src/pkg/__init__.py", "src/pkg/core.py", "src/pkg/util.py"]
    assert modules_imported("import math\nimport torch", tmp_path) == []
    assert modules_imported("import pkg", tmp_path) == core
    assert modules_imported("from pkg import plot", tmp_path) == sorted([*core, "src/pkg/plot.py"])
    assert modules_imported("import pkg.sub.deep", tmp_path) == sorted([*core, "src/pkg/sub/__init__.py", "src/pkg/sub/deep.py"])
    assert modules_imported("run(['python', '-m', 'pkg.cli'])", tmp_path) == sorted([*core, "src/pkg/cli.py"])
    assert modules_imported("!python -m pkg.cli train\nx = 1", tmp_path) == sorted([*core, "src/pkg/cli.py"])
    with pytest.raises(SyntaxError):
        modules_imported("def (", tmp_path)


def test_the_books_figures_import_the_plot_module_and_the_modules_they_name() -> None:
    """On the real book: every figure draws with selfattn.plot (so its key holds plot.py and, through
    selfattn/__init__.py, the modules it imports), and a figure's key holds the modules that selfattn/__init__.py
    does not import (charlm, the Triton kernel) exactly when its code names them."""
    from tools.site.hashing import modules_imported

    chains = [figures.chain_code(page.read_text(encoding="utf-8"), figure.fence) for page, figure in book_figures()]
    imported = [modules_imported(code, ROOT) for code in chains]
    assert imported and all("src/selfattn/plot.py" in m for m in imported), "a figure without selfattn.plot"
    for module in ("charlm", "triton_attention"):
        named = [f"selfattn.{module}" in code or f"from selfattn import {module}" in code for code in chains]
        keyed = [f"src/selfattn/{module}.py" in m for m in imported]
        assert keyed == named and 0 < sum(keyed) < len(chains) / 4, module


def test_the_svg_is_deterministic(book: Path) -> None:
    code = figures.chain_code(PAGE, figures.find(PAGE)[0].fence)
    one, two = (figures.execute(code, "fig-first", book) for _ in range(2))
    assert one == two
    assert "<dc:date>" not in one


def test_a_continued_block_runs_its_chain_exactly_as_pytest_codeblocks_does(book: Path, executed: list[str]) -> None:
    from pytest_codeblocks.main import extract_from_buffer

    page = (
        "# 第 1 章\n\n```python\nys = [0, 5]\n```\n\n<!--pytest-codeblocks:expected-output-->\n\n```text\n```\n\n"
        "<!--pytest-codeblocks:cont-->\n\n" + figure_block("first").replace("[0, 1]", "ys") + "\n"
        "<!--pytest-codeblocks:cont-->\n\n```python\nprint(ys)\n```\n"
    )
    fence = figures.find(page)[0].fence
    code = figures.chain_code(page, fence)
    assert code.startswith("ys = [0, 5]\n#| label: first") and "print(ys)" not in code
    whole = extract_from_buffer(io.StringIO(page))
    assert len(whole) == 1 and whole[0].code.startswith(code), "the chain pytest-codeblocks runs, up to the figure"
    _, built = build(page, book)
    assert "fig-first" in built
    # The first block is part of the figure: changing it renders the figure again.
    build(page.replace("ys = [0, 5]", "ys = [0, 6]"), book)
    assert executed == ["fig-first", "fig-first"]


def test_a_block_in_a_collapsed_admonition_gets_its_figure_after_the_admonition(book: Path) -> None:
    inner = "".join(f"    {line}\n" if line else "\n" for line in figure_block("first").splitlines())
    page = f'# 第 1 章\n\n??? note "{{fig:first}} 的代码"\n\n{inner}\n    More code notes.\n\nAfter the note.\n'
    shown, built = build(page, book)
    assert '??? note "图 1.1 的代码"' in shown
    assert "fig-first" in built
    lines = shown.splitlines()
    at = lines.index("sa-figure-placeholder:fig-first")  # not indented: outside the admonition
    assert lines.index("    More code notes.") < at < lines.index("After the note.")


def test_bad_headers_are_refused_with_the_line_and_label() -> None:
    with pytest.raises(FigureError, match=r"line 3: figure a-line: no alt"):
        figures.find("# A\n\n```python\n#| label: a-line\n#| caption: C.\nfig = 1\n```\n")
    with pytest.raises(FigureError, match="kebab-case"):
        figures.find("```python\n#| label: A_Line\n#| caption: C.\n#| alt: A.\nfig = 1\n```\n")
    with pytest.raises(FigureError, match="unknown header"):
        figures.find("```python\n#| label: a\n#| caption: C.\n#| alt: A.\n#| width: 3\nfig = 1\n```\n")
    with pytest.raises(FigureError, match="line 1: the header repeats 'caption'"):
        figures.find("```python\n#| label: a\n#| caption: C.\n#| caption: D.\n#| alt: A.\nfig = 1\n```\n")
    with pytest.raises(FigureError, match="opens with `#| label: NAME`"):  # a header of old, numbered by hand
        figures.find("```python\n#| figure: 1\n#| caption: C.\n#| alt: A.\nfig = 1\n```\n")
    assert figures.find("```python\n#| file: src/selfattn/x.py\nX = 1\n```\n") == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise ValueError('the canary 4711')", r"docs/01-a\.md: figure a: the block raised ValueError: the canary 4711 \(line 4"),
        ("fig = 'no figure'", r"docs/01-a\.md: figure a: the block leaves no matplotlib figure in `fig` \(found str\)"),
    ],
)
def test_a_failing_figure_block_is_an_error_naming_page_and_figure(
    book: Path, caplog: pytest.LogCaptureFixture, body: str, message: str
) -> None:
    page = "# 第 1 章\n\n```python\n#| label: a\n#| caption: C.\n#| alt: A.\n" + body + "\n```\n"
    with caplog.at_level("ERROR", logger="mkdocs.hooks.figures"):
        _, built = build(page, book)
    assert re.search(message, caplog.text), caplog.text
    assert "sa-figure-error" in built["fig-a"], "serve shows the error in place of the figure"
    assert not list((book / ".cache" / "figures").glob("*.svg")), "a failure is not cached"


MKDOCS_YML = """site_name: t
docs_dir: docs
theme: {name: mkdocs}
hooks: [hooks.py]
markdown_extensions: [admonition, attr_list, pymdownx.details, pymdownx.superfences]
nav: [01-a.md, 01-b.md]
"""
HOOKS = """import sys
from pathlib import Path
sys.path.insert(0, {tools!r})
from tools.site import figures
ROOT = Path(__file__).parent

def on_pre_build(config):
    figures.begin(ROOT)
    figures.check(ROOT, "zh")

def on_page_markdown(markdown, page, config, **kwargs):
    return figures.place(markdown, "zh", ROOT, "docs/" + page.file.src_uri)

def on_page_content(html, page, config, **kwargs):
    return figures.inline(html, "docs/" + page.file.src_uri)
"""


def mkdocs_build(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=root, env=env, capture_output=True, text=True
    )


def small_site(root: Path, a: str, b: str) -> Path:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    (root / "hooks.py").write_text(HOOKS.format(tools=str(ROOT)), encoding="utf-8")
    (root / "docs" / "01-a.md").write_text(a, encoding="utf-8")
    (root / "docs" / "01-b.md").write_text(b, encoding="utf-8")
    return root


@pytest.mark.slow  # two nested `mkdocs build` runs
def test_the_strict_build_shows_the_figures_and_fails_on_a_failing_block_naming_page_and_figure(tmp_path: Path) -> None:
    inner = "".join(f"    {line}\n" if line else "\n" for line in figure_block("second").splitlines())
    a = "# A\n\n" + figure_block("first") + f'\n如[](#fig-second)所示。\n\n??? note "{{fig:second}} 的代码"\n\n{inner}\nAfter.\n'
    b = "# B\n\n见{fig:first}。\n\n" + figure_block("third", y=3) + "\n"
    root = small_site(tmp_path, a, b)
    run = mkdocs_build(root)
    assert run.returncode == 0, run.stderr
    assert "no such anchor" not in run.stderr, "mkdocs knows the figures' anchors"
    html = (root / "site" / "01-a" / "index.html").read_text(encoding="utf-8")
    assert html.count('class="sa-figure"') == 2 and "#|" not in html and "sa-figure-placeholder" not in html
    assert html.index("</details>") < html.index('<figure id="fig-second"'), "after the collapsed admonition"
    assert '如<a href="#fig-second">图 1.2</a>所示' in html and "<summary>图 1.2 的代码</summary>" in html
    other = (root / "site" / "01-b" / "index.html").read_text(encoding="utf-8")
    assert '<figure id="fig-third"' in other and "见图 1.1。" in other and ">图 1.3</span>" in other, "numbered across the pages"
    # Warm: nothing executed, the same pages.
    again = mkdocs_build(root)
    assert again.returncode == 0 and "figures: rendered" not in again.stderr
    assert (root / "site" / "01-a" / "index.html").read_text(encoding="utf-8") == html
    # A block that raises fails the strict build, and the message names the page and the figure.
    (root / "docs" / "01-b.md").write_text(b.replace("ax.set_title", "1 / 0\nax.set_title"), encoding="utf-8")
    failed = mkdocs_build(root)
    assert failed.returncode != 0
    assert re.search(r"docs/01-b\.md: figure third: the block raised ZeroDivisionError", failed.stderr), failed.stderr


def test_labels_are_numbered_in_order_across_a_chapters_pages_and_references_read_the_numbers(tmp_path: Path) -> None:
    a = "# A\n\n" + figure_block("first") + figure_block("second") + "\n如{fig:third}所示，[](01-b.md#fig-third)。\n"
    b = "# B\n\n" + figure_block("third") + "\n```python\n# {fig:first}\n```\n"
    root = small_site(tmp_path, a, b)
    assert figures.check_book(root) == []
    assert figures.numbering(root, "zh") == {"first": "1.1", "second": "1.2", "third": "1.3"}
    assert figures.resolve(b, figures.numbering(root, "en"), "en").endswith("# Figure 1.1\n```\n")
    # A figure inserted at the top of the chapter: the others move down, and their references with them.
    (root / "docs" / "01-a.md").write_text("# A\n\n" + figure_block("zeroth") + a.removeprefix("# A\n\n"), encoding="utf-8")
    assert figures.numbering(root, "zh") == {"zeroth": "1.1", "first": "1.2", "second": "1.3", "third": "1.4"}
    shown = figures.place(a, "zh", root, "docs/01-a.md")
    assert "如图 1.4所示，[图 1.4](01-b.md#fig-third)。" in shown
    assert figures.check_book(root) == []


def test_unknown_labels_labels_used_twice_wrong_links_and_written_numbers_are_refused(tmp_path: Path) -> None:
    a = ("# A\n\n" + figure_block("first") + figure_block("second")
         + "\n见{fig:missing}；[{fig:second}](#fig-second)；[{fig:third}](01-b.md#fig-third)；"
         + "[{fig:first}](01-b.md#fig-first)；[{fig:first}](#fig-second)。\n")
    b = "# B\n\n" + figure_block("third") + figure_block("first") + "\n```python\nx = 1  # 图 1.2\n```\n\nAs Figure 1.1 shows.\n"
    root = small_site(tmp_path, a, b)
    assert figures.check_book(root, ("zh",)) == [
        "docs/01-b.md: figure first: the label is used twice",
        "docs/01-a.md: {fig:missing} names no figure",
        "docs/01-a.md: the link [{fig:first}](#fig-second) names another figure than it points at",
        "docs/01-b.md: line 25: '图 1.2' is written by hand; write {fig:LABEL}",
        "docs/01-b.md: line 28: 'Figure 1.1' is written by hand; write {fig:LABEL}",
    ]
    (root / "docs" / "01-b.md").write_text("# B\n\n" + figure_block("third") + "\n[link](#fig-1-2)\n", encoding="utf-8")
    assert figures.check_book(root, ("zh",)) == [
        "docs/01-a.md: {fig:missing} names no figure",
        "docs/01-a.md: a link to 01-b.md#fig-first, which holds no such figure",
        "docs/01-a.md: the link [{fig:first}](#fig-second) names another figure than it points at",
        "docs/01-b.md: a link to 01-b.md#fig-1-2, which holds no such figure",
        "docs/01-b.md: line 14: '#fig-1-2' is written by hand; write {fig:LABEL}",
    ]


def test_a_label_is_in_both_editions(tmp_path: Path) -> None:
    root = small_site(tmp_path, "# A\n\n" + figure_block("first") + figure_block("second"), "# B\n")
    (root / "docs" / "01-a.en.md").write_text("# A\n\n" + figure_block("first") + figure_block("other"), encoding="utf-8")
    assert figures.check_book(root) == [
        "docs/01-a.md: figure second: the other edition has no figure labelled so",
        "docs/01-a.en.md: figure other: the other edition has no figure labelled so",
    ]


def test_figure_line_of_a_nested_block() -> None:
    page = '=== "A"\n\n    ??? note "x"\n\n        ```python\n        fig = 1\n        ```\n\n    more\n\n=== "B"\n'
    fence = parse_fences(page, "")[0]
    at, indent = figures.figure_line(page.splitlines(keepends=True), fence)
    assert (at, indent) == (8, "    "), "after the admonition, inside the tab"


# The real book: passes trivially while it holds no figure block, and checks every one once it does.

BOOK_PAGES = sorted(p for p in (ROOT / "docs").glob("*.md"))


def book_figures() -> list[tuple[Path, Figure]]:
    """Each figure of each page, as the build reads it: its captions and alt text with their references resolved."""
    found = []
    for page in BOOK_PAGES:
        lang = "en" if page.name.endswith(".en.md") else "zh"
        text = figures.resolve(page.read_text(encoding="utf-8"), figures.numbering(ROOT, lang), lang)
        found += [(page, f) for f in figures.find(text)]
    return found


def test_the_books_figures_are_numbered_and_referenced_consistently() -> None:
    assert figures.check_book(ROOT) == []


def test_every_figure_block_of_the_book_is_in_its_built_page_and_on_the_print_page(site_dir: Path) -> None:
    prints = {
        "zh": (site_dir / "print_page" / "index.html").read_text(encoding="utf-8"),
        "en": (site_dir / "en" / "print_page" / "index.html").read_text(encoding="utf-8"),
    }
    for page, figure in book_figures():
        lang = "en" if page.name.endswith(".en.md") else "zh"
        stem = page.name.removesuffix(".en.md").removesuffix(".md")
        built = (site_dir / ("en/" if lang == "en" else "") / stem / "index.html").read_text(encoding="utf-8")
        for html in (built, prints[lang]):
            element = re.search(rf'<figure id="{figure.id}" class="sa-figure">.*?</figure>', html, flags=re.S)
            assert element, f"{page.name}: figure {figure.label} is not in the built page / print page"
            assert f'aria-label="{escape(figure.alt, quote=True)}"' in element[0], f"{page.name}: {figure.id}'s alt text"
            assert "#|" not in built
            # The ink follows the palette (tests/site/test_browser.py toggles it on a chapter of each edition): the
            # colour selfattn.plot.INK became currentColor (tests/package/test_plot.py: text, axes and lines are drawn in INK).
            svg = element[0].lower()
            assert "currentcolor" in svg and "#202124" not in svg, f"{page.name}: {figure.id}'s ink is fixed"
    for lang, html in prints.items():
        counts = Counter(re.findall(r'\bid="(fig-[^"]+)"', html))
        twice = sorted(i for i, n in counts.items() if n > 1)
        assert not twice, f"{lang} print page: ids used twice: {twice[:5]}"


# A figure with a narrow variant stacks its panels on a phone (selfattn.plot.figure): what was left is on top, so its
# caption and alt text name a panel by its letter, (a), (b) (plot.figure(letters=True)), or by its title, never by its
# place. A place inside a panel ("the sum on the right of each row", "对角线左边一格") is the same in both variants.
PANEL_PLACE = {
    "zh": re.compile(r"[左右中]图|[左右]：|左、中|（[左右]）|[左右]边(?:是|三|四|的头)"),
    "en": re.compile(r"\b(?:Left|Right|Middle)(?:,| and\b)|\bOn the (?:left|right)\b"
                     r"|\b(?:left|right|middle) (?:panel|plot|chart|one|heatmap|grid)s?\b|\bThe (?:left|right) one\b"),
}


def test_panel_place_words_are_found_where_they_name_a_panel() -> None:
    assert PANEL_PLACE["zh"].search("左图是平均最大权重") and PANEL_PLACE["zh"].search("左：不缩放")
    assert PANEL_PLACE["en"].search("Left, unscaled.") and PANEL_PLACE["en"].search("as the right panel shows")
    assert PANEL_PLACE["en"].search("On the left, three curves") and PANEL_PLACE["en"].search("The right one has 5 rows")
    for inside in ("答案格在对角线右边一格", "右侧是每一行的和", "（a）不缩放"):
        assert not PANEL_PLACE["zh"].search(inside), inside
    for inside in ("with each row's sum on the right", "the right implementation", "numbered from 0 at the left",
                   "(a) Unscaled", "in the leftmost bin"):
        assert not PANEL_PLACE["en"].search(inside), inside


def test_a_stacked_figure_names_its_panels_by_letter_not_by_place(site_dir: Path) -> None:
    pages = [p for p in site_dir.glob("**/index.html") if "print_page" not in p.parts]
    found, stacked = [], 0
    for page in pages:
        lang = "en" if page.relative_to(site_dir).parts[0] == "en" else "zh"
        html = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<figure id="(fig-[^"]+)" class="sa-figure">(.*?)</figure>', html, flags=re.S):
            if 'class="sa-figure__narrow"' not in m[2]:
                continue
            stacked += 1
            caption = re.sub(r"<[^>]+>", "", re.search(r"<figcaption>(.*?)</figcaption>", m[2], flags=re.S)[1])
            alt = re.search(r'aria-label="([^"]*)"', m[2])[1]
            for what, text in (("caption", caption), ("alt text", alt)):
                if hit := PANEL_PLACE[lang].search(text):
                    found.append(f"{page.relative_to(site_dir).parent} {m[1]} {what}: {hit[0]!r} in {text[:80]!r}")
    assert stacked >= 30, f"only {stacked} figures with a narrow variant found: is the site built?"
    assert not found, "\n".join(found)


SERVE_SCRIPT = """
import os
import sys
from pathlib import Path
sys.path.insert(0, {tools!r})
from tools.site import figures
root = Path({root!r})
page = '''```python
#| label: a
#| caption: C.
#| alt: A.
import matplotlib.pyplot as plt
import selfattn
fig, ax = plt.subplots()
ax.set_title(f"value {{selfattn.VALUE}}")
```
'''
for value in (1, 2):  # two rebuilds of one `mkdocs serve` process; src/ changed in between
    init = root / "src" / "selfattn" / "__init__.py"
    init.write_text(f"VALUE = {{value}}\\n", encoding="utf-8")
    os.utime(init, (1_700_000_000, 1_700_000_000))  # the same size and second: as an edit saved within a second
    figures.begin(root, serving=True)
    figures.place(page, "en", root, "docs/01-a.md")
    html = figures.inline("<p>sa-figure-placeholder:fig-a</p>", "docs/01-a.md")
    print("value", value, "drawn:", f"value {{value}}" in html)
"""


def test_under_serve_a_changed_package_is_imported_again(tmp_path: Path) -> None:
    """`mkdocs serve` keeps one process: after src/ changed, a figure must see the package as it is now, even when
    the new source has the old one's size and modification second (Python would trust the old bytecode)."""
    (tmp_path / "src" / "selfattn").mkdir(parents=True)
    script = SERVE_SCRIPT.format(tools=str(ROOT), root=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["value 1 drawn: True", "value 2 drawn: True"], run.stdout + run.stderr


def test_check_reads_the_pages_again_only_when_one_changed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`figures.check` runs at every rebuild of `make serve`: unchanged pages are not read again, but their
    problems are logged every time (a strict build must fail on each), and a changed page is read again."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("nav: [01-a.md]\n", encoding="utf-8")
    page = tmp_path / "docs" / "01-a.md"
    page.write_text("# A\n\n见图 1.9。\n", encoding="utf-8")
    reads = []
    real = figures.check_book
    monkeypatch.setattr(figures, "check_book", lambda *args: reads.append(args) or real(*args))
    monkeypatch.setattr(figures, "_CHECKED", {})
    for _ in range(2):
        caplog.clear()
        figures.check(tmp_path, "zh")
        assert [r.levelname for r in caplog.records] == ["ERROR"] and "1.9" in caplog.text, caplog.text
    assert len(reads) == 1, "the second check did not read the unchanged pages"
    page.write_text("# A\n\n没有图。\n", encoding="utf-8")
    caplog.clear()
    figures.check(tmp_path, "zh")
    assert len(reads) == 2 and not caplog.records, caplog.text
