"""Figures drawn by the book's own code: figure blocks executed at build time into inline SVG.

A figure block (the convention: CONTRIBUTING.md, "How the book becomes the package") is an ordinary ```` ```python ```` fence
whose first lines are a header of ``#|`` comments, then code that leaves one matplotlib figure
in ``fig``::

    #| label: weights-heatmap
    #| caption: 例句中每个查询对各个键的注意力权重。
    #| alt: 6×6 热力图……

The label names the figure; the build numbers it. Figures are numbered per chapter, in order down
the chapter's pages in nav order (:func:`edition`): the third figure of chapter 3 is figure 3.3,
whatever its label. Its anchor is ``fig-LABEL`` (``#fig-weights-heatmap``). Anywhere in a page's
Markdown (prose, admonition titles, captions, code comments), ``{fig:weights-heatmap}`` reads
"图 3.3" on a Chinese page and "Figure 3.3" on an English one (:func:`resolve`, at
``on_page_markdown``, before the page is rendered; the notebooks and the corpus resolve it too). A
link with no text, ``[](#fig-weights-heatmap)`` or ``[](03-qkv-formula.md#fig-x)`` to another page,
gets the figure's name as its text (``[{fig:x}](#fig-x)`` works too, at twice the bytes). Inserting
a figure then touches its own block and the sentences that cite it, and no number can go stale:
the book writes none.

For each page (:func:`place`, at ``on_page_markdown``):

* the code is the block, or the chain of blocks it continues with
  ``<!--pytest-codeblocks:cont-->``, cut exactly as pytest-codeblocks cuts it (its own parser,
  :func:`chain_code`), and executed as pytest-codeblocks executes it (``exec`` with the same
  globals), with matplotlib's Agg backend and ``svg.fonttype = "none"`` (text stays text);
* ``fig`` is saved as SVG, deterministic (``svg.hashsalt`` = the figure's id, no date, no
  metadata), every id in it prefixed with the figure's id (the print page holds every figure),
  ``selfattn.plot.INK`` replaced by ``currentColor`` (one render legible in the light and the dark
  palette);
* a figure whose smallest text would be under ``PHONE_MIN_PX`` (9 px) in a phone's column
  (``PHONE_COLUMN_PX``, 358 px at a 390 px screen) gets a *narrow variant*: the code is executed a
  second time with ``SELFATTN_FIGURE=narrow`` (:data:`NARROW`), which ``selfattn.plot.narrow()`` reads,
  and ``selfattn.plot.figure`` then stacks the panels in a figure at most 3.8 in wide; a figure that
  needs more reads ``plot.narrow()`` itself. Both SVGs go into the page, ``class="sa-figure__wide"`` and
  ``class="sa-figure__narrow"``, and a media query of ``docs/stylesheets/extra.css`` shows one (the narrow
  one's ids are prefixed ``fig-LABEL_narrow``). A narrow variant whose text is no larger than the wide
  one's is dropped, with a message that names the figure (the browser test of the figures' text fails on
  text under 9 px at 390 px: tests/site/test_figure_text.py);
* each SVG is cached in ``.cache/figures/`` under the hash of the chain's code, the figure's id, the variant,
  the modules of the package that the chain imports, directly or through them
  (``tools/site/hashing.py``, ``modules_imported``: importing ``selfattn.plot`` runs
  ``selfattn/__init__.py`` and what it imports), the data files figures read (:data:`INPUTS`: the
  model checkpoints of chapter 10; every file a figure names is matched), the versions of
  Python, matplotlib, torch and numpy, and this file (:func:`cache_key`): a warm rebuild executes
  nothing, editing one figure block renders that figure alone, with any later figure whose
  ``cont`` chain runs through the edited code (its caption and alt text are not part of the key:
  editing them renders nothing), and editing a module renders the figures that import it. A figure
  is never committed, and never served from a cache entry that another code, module or tool made:
  it cannot go stale;
* the header lines are removed from the shown code, and the figure is shown right after the
  block, or after the admonition (or content tab) that holds the block, as
  ``<figure id="fig-weights-heatmap" class="sa-figure">`` with ``<figcaption>`` "图 3.2　…" / "Figure 3.2. …",
  the SVG with ``role="img"`` and ``aria-label`` = the alt text. The page's Markdown gets a
  placeholder paragraph, which :func:`inline` replaces in the page's HTML (``on_page_content``);
  raw HTML would not survive inside an indented block.

A figure block that raises, leaves no figure in ``fig``, or has a bad header is an error that
names the page and the figure's label (``mkdocs build --strict`` fails; ``serve`` shows the error
in place of the figure). :func:`check_book` fails on a label used twice, a ``{fig:LABEL}`` that
no figure carries, a link to ``#fig-LABEL`` on a page that does not hold that figure, a label in
one edition and not in the other, and a written number ("图 3.2", "Figure 3.2", ``#fig-3-2``)
anywhere in a page, code comments included.

Why not markdown-exec (the library the issue prefers): it executes fences written
```` ```python exec="on" ````, which pytest-codeblocks 0.18 skips silently (it collects only the
exact info string ``python``), and so do the tangler, the parity check and the notebooks; each
would have to learn a second kind of block, and the figures would no longer be tested the way
every block is. It has no notion of ``<!--pytest-codeblocks:cont-->`` chains, and it caches
nothing: it executes every block on every build, which the 2 s budget of ``make serve`` does not
allow (measured: one SVG figure added 0.5-0.8 s to the build of a one-page site). The code here is small: it reuses
pytest-codeblocks' own parser for the chains and the tangler's fence parser for the pages.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import io
import logging
import re
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.site.hashing import inputs_hash, modules_imported, prune_unused
from tools.book.tangle import Fence, book_pages, parse_fences

log = logging.getLogger("mkdocs.hooks.figures")

HEADER = re.compile(r"^#\|\s*(?P<key>[\w-]+):\s*(?P<value>.*?)\s*$")
FIELDS = ("label", "caption", "alt")
LABEL = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")  # kebab-case: weights-heatmap
TOKEN = re.compile(r"\{fig:(?P<label>[^{}\s]*)\}")  # {fig:weights-heatmap}
EMPTY_LINK = re.compile(r"\[\]\((?P<target>[^)\s#]*#fig-(?P<label>[\w-]+))\)")  # [](#fig-weights-heatmap)
NAMES = {"zh": "图 {number}", "en": "Figure {number}"}  # what a token reads in each edition
WRITTEN = re.compile(r"图\s*\d+\.\d+|\bFigures?\s+\d+\.\d+|#fig-\d+-\d+\b")  # a number written by hand
PAGE_CHAPTER = re.compile(r"^(?P<chapter>\d\d)-")  # docs/08-engineering.md: chapter 8
INK = "#202124"  # selfattn.plot.INK: the colour that follows the page's text
FIGURE_CACHE = ".cache/figures"
NARROW = "narrow"  # SELFATTN_FIGURE while the build draws a narrow variant (selfattn.plot.narrow() reads it)
PHONE_COLUMN_PX = 358.0  # the text column at a 390 px wide screen (Material's margins: 16 px each side)
PHONE_MIN_PX = 9.0  # the smallest text a figure may show inline there; below it, a narrow variant is drawn
# matplotlib writes the whole font list into every <text> (about 200 bytes each, a fifth of a chapter's page);
# docs/stylesheets/extra.css sets the same list once for the figures' text. Other lists (monospace) stay.
FONT_LIST = ("'DejaVu Sans', 'WenQuanYi Micro Hei', 'Bitstream Vera Sans', 'Computer Modern Sans Serif', "
             "'Lucida Grande', 'Verdana', 'Geneva', 'Lucid', 'Arial', 'Helvetica', 'Avant Garde', sans-serif")
DEFAULT_FONT = re.compile(r"font-family: " + re.escape(FONT_LIST) + r";? ?")
FONT_SIZE = re.compile(r"font-size:\s*(?P<size>[\d.]+)px")  # matplotlib's SVG: sizes in user units (pt)
VIEW_BOX = re.compile(r'viewBox="[-\d.]+ [-\d.]+ (?P<width>[\d.]+) [\d.]+"')
INPUTS = ("models/*.pt", "models/*.json")  # the data figures read besides the modules they import (not benchmarks/)
TOOLS = ("matplotlib", "torch", "numpy")
CAPTIONS = {
    "zh": '<span class="sa-figure-number">图 {number}</span>\u3000{caption}',
    "en": '<span class="sa-figure-number">Figure {number}.</span> {caption}',
}
PLACEHOLDER = "sa-figure-placeholder:"
# The placeholder paragraph carries the figure's id (attr_list), so that mkdocs knows the anchor.
PLACEHOLDER_HTML = re.compile(r"<p[^>]*>sa-figure-placeholder:(?P<id>fig-[\w-]+)(?:\s*\{:[^}]*\})?</p>")
FIGURE_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<page>[^)\s#]*?)#(?P<id>fig-[\w-]+)\)")

STATE = {"inputs": "", "serve": False, "executed_with": "", "package": ""}  # this build's key of the data, tools
# and this file; under serve?; the package's key that the process last executed figures with; the package's key now
_USED: set[str] = set()  # the cache entries this build used (both languages); the rest is dropped
DRAW_ONLY: set[str] = set()  # a page build (tools/site/page_build.py): the pages whose figures it draws; empty: all
_PENDING: dict[str, dict[str, str]] = {}  # page source -> figure id -> its HTML, from Markdown to HTML


class FigureError(Exception):
    """A figure block that cannot be built; the message says why."""


@dataclass
class Figure:
    """A figure block of a page."""

    label: str  # "weights-heatmap"
    caption: str
    alt: str
    fence: Fence
    header: int  # how many header lines open the block (with the blank lines after them)
    number: str = ""  # "3.2": its place in its chapter (:func:`number`)

    @property
    def id(self) -> str:
        """``fig-weights-heatmap``: the anchor of the figure, and the prefix of every id in its SVG."""
        return "fig-" + self.label


def header(body: list[str]) -> tuple[dict[str, str], int]:
    """The ``#| key: value`` lines that open a block (not a ``#| file:`` title), and their count."""
    fields: dict[str, str] = {}
    count = 0
    for line in body:
        m = HEADER.match(line.strip())
        if m is None or m["key"] == "file":
            break
        if m["key"] in fields:
            raise FigureError(f"the header repeats {m['key']!r}")
        fields[m["key"]] = m["value"]
        count += 1
    return fields, count


def find(markdown: str) -> list[Figure]:
    """The figure blocks of a page, in order. A bad header raises :class:`FigureError`."""
    figures = []
    for fence in parse_fences(markdown, ""):
        if fence.info != "python" or fence.char != "`":
            continue
        try:
            fields, count = header(fence.body)
        except FigureError as err:
            raise FigureError(f"line {fence.start + 1}: {err}") from err
        if "label" not in fields:
            if fields:  # `#| caption:` without a label, or a header of old (`#| figure: 3.2`)
                raise FigureError(f"line {fence.start + 1}: a figure block opens with `#| label: NAME`, "
                                  f"not {sorted(fields)}")
            continue
        where = f"line {fence.start + 1}: figure {fields['label'] or '?'}"
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise FigureError(f"{where}: unknown header line(s) {unknown}; a figure block has {list(FIELDS)}")
        if not LABEL.match(fields["label"]):
            raise FigureError(f"{where}: a label is kebab-case, as in weights-heatmap")
        missing = [name for name in FIELDS if not fields.get(name)]
        if missing:
            raise FigureError(f"{where}: no {' and no '.join(missing)} in the header")
        while count < len(fence.body) and not fence.body[count].strip():
            count += 1  # the shown code starts with code
        figures.append(Figure(fields["label"], fields["caption"], fields["alt"], fence, count))
    return figures


def number(figures: list[Figure], chapter: int | None, last: dict[int | None, int]) -> None:
    """Number a page's figures in order, continuing the chapter's count in ``last`` (chapter -> its last K)."""
    for figure in figures:
        last[chapter] = last.get(chapter, 0) + 1
        figure.number = f"{chapter if chapter is not None else '?'}.{last[chapter]}"


def resolve(markdown: str, numbers: dict[str, str], lang: str) -> str:
    """``{fig:LABEL}`` -> "图 3.2" / "Figure 3.2", and ``[](#fig-LABEL)`` -> ``[图 3.2](#fig-LABEL)`` (an unknown
    label stays as written: :func:`check_book` names it)."""
    name = NAMES.get(lang, NAMES["en"])
    markdown = EMPTY_LINK.sub(lambda m: f"[{{fig:{m['label']}}}]({m['target']})", markdown)
    return TOKEN.sub(lambda m: name.format(number=numbers[m["label"]]) if m["label"] in numbers else m[0], markdown)


def chain_code(markdown: str, fence: Fence) -> str:
    """The code pytest-codeblocks runs up to the end of ``fence``: the block, or the chain of
    blocks it continues (``<!--pytest-codeblocks:cont-->``), cut by pytest-codeblocks' own parser."""
    from pytest_codeblocks.main import extract_from_buffer

    lines = markdown.splitlines(keepends=True)
    upto = "".join(lines[: fence.start + len(fence.body) + 2])  # through the closing fence
    blocks = extract_from_buffer(io.StringIO(upto))
    if not blocks or blocks[-1].syntax != "python" or fence.body[-1].strip() not in blocks[-1].code:
        raise FigureError("pytest-codeblocks does not run this block (a skipped page, or a chain that is not Python)")
    if blocks[-1].marks:
        raise FigureError(f"a figure block runs everywhere, like the build: no test marks ({blocks[-1].marks})")
    return blocks[-1].code


def inputs_key(root: Path, code: str = "", digests: dict[object, bytes] | None = None) -> str:
    """A hash of what a figure depends on besides its code: the modules of the package that ``code`` imports,
    the data figures read, the tools, this file (``digests``: the files' hashes and the versions, kept for a build)."""
    try:
        modules = modules_imported(code, root)
    except SyntaxError:  # the figure fails when it runs; keyed by every module, to be safe
        modules = ["src/**/*.py"]
    return inputs_hash(root, TOOLS, (*modules, *INPUTS), extra=Path(__file__).read_bytes(), digests=digests)


def begin(root: Path, serving: bool = False) -> None:
    """A build starts (``on_pre_build``): forget the keys of the last one; note the package as it is now."""
    _KEYS.clear()
    _DIGESTS.clear()
    STATE["inputs"] = "begun"
    STATE["package"] = inputs_hash(root, (), ("src/**/*.py",))
    STATE["serve"] = serving


_KEYS: dict[tuple[str, str], str] = {}  # (root, the chain's code) -> inputs_key, for this build
_DIGESTS: dict[object, bytes] = {}  # each file's sha256 and each tool's version, for this build


WORDS = re.compile(r"^[ \t]*#\|[ \t]*(?:caption|alt):.*$", re.M)  # header lines that draw nothing


def cache_key(code: str, figure_id: str, inputs: str, variant: str = "") -> str:
    """The name of a figure's SVG in ``.cache/figures/``: its code without the caption and alt lines
    (comments that draw nothing), its id, its inputs (:func:`inputs_key`) and the variant (``""`` or :data:`NARROW`)."""
    parts = [inputs, figure_id, WORDS.sub("", code)] + ([variant] if variant else [])
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def smallest_text_px(svg: str, column_px: float = PHONE_COLUMN_PX) -> float:
    """The smallest text of a figure's SVG in CSS pixels, where a column ``column_px`` wide shows it (no wider
    than its natural size: 1 pt = 4/3 px); infinity for a figure without text."""
    sizes = [float(m["size"]) for m in FONT_SIZE.finditer(svg)]
    box = VIEW_BOX.search(svg)
    if not sizes or box is None:
        return float("inf")
    width = float(box["width"])  # user units: pt
    return min(sizes) * min(column_px, width * 4 / 3) / width


def execute(code: str, figure_id: str, root: Path, name: str = "<figure>", variant: str = "") -> str:
    """Run a figure's code as pytest-codeblocks would, and return ``fig`` as an SVG document;
    ``variant`` :data:`NARROW` runs it with ``SELFATTN_FIGURE=narrow``."""
    import os
    import traceback

    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.figure
    import matplotlib.pyplot as plt

    if STATE["serve"] and STATE["executed_with"] not in ("", STATE["package"]):
        # `mkdocs serve` keeps its process between rebuilds: import the package as tangled now. Its bytecode
        # goes too: Python trusts a .pyc whose source kept its size and its modification time in whole
        # seconds, as a one-character edit saved within a second does. (src/ is not watched: no rebuild loop.)
        for module in [m for m in sys.modules if m == "selfattn" or m.startswith("selfattn.")]:
            del sys.modules[module]
        for pyc in (root / "src" / "selfattn" / "__pycache__").glob("*.pyc"):
            pyc.unlink(missing_ok=True)
        importlib.invalidate_caches()
    STATE["executed_with"] = STATE["package"]
    src = str(root / "src")
    added = src not in sys.path
    if added:
        sys.path.insert(0, src)  # as PYTHONPATH=src does for the tests
    printed = io.StringIO()
    settings = {"svg.fonttype": "none", "svg.hashsalt": figure_id}  # text stays text; ids fixed per figure
    before = os.environ.pop("SELFATTN_FIGURE", None)
    if variant:
        os.environ["SELFATTN_FIGURE"] = variant
    try:
        with matplotlib.rc_context(settings), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            namespace: dict[str, Any] = {"__MODULE__": "__main__"}  # pytest-codeblocks' globals
            try:
                with redirect_stdout(printed), redirect_stderr(printed):
                    exec(compile(code, name, "exec"), namespace)  # the book's own code, as the tests run it
            except Exception as err:
                lines = [f.lineno for f in traceback.extract_tb(err.__traceback__) if f.filename == name]
                at = f" (line {lines[-1]} of its code)" if lines else ""
                raise FigureError(f"the block raised {type(err).__name__}: {err}{at}") from err
            fig = namespace.get("fig")
            if not isinstance(fig, matplotlib.figure.Figure):
                raise FigureError(f"the block leaves no matplotlib figure in `fig` (found {type(fig).__name__})")
            out = io.StringIO()
            # Constrained layout settles in a second pass: in the first, a figure without a canvas of its own
            # placed a column of heatmaps too far left for its longest labels (cut at the edge of a narrow variant).
            fig.savefig(io.StringIO(), format="svg", metadata={"Date": None}, transparent=True)
            fig.savefig(out, format="svg", metadata={"Date": None}, transparent=True)
    finally:
        plt.close("all")
        os.environ.pop("SELFATTN_FIGURE", None)
        if before is not None:
            os.environ["SELFATTN_FIGURE"] = before
        if added:
            sys.path.remove(src)
    if caught:  # e.g. a glyph missing from matplotlib's font: the browser draws the text (fonttype "none")
        first = str(caught[0].message).splitlines()[0]
        log.info("figures: %s: %d warning(s), the first: %s", name, len(caught), first)
    return out.getvalue()


def inline_svg(svg: str, figure_id: str) -> str:
    """An SVG document as an element to inline in a page: no XML prologue, no metadata, no global
    style, every id prefixed with ``figure_id``, ``INK`` as ``currentColor``, matplotlib's default font list
    left to the page's stylesheet (:data:`FONT_LIST`)."""
    svg = re.sub(r"^\s*<\?xml[^>]*>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg)
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s*<style type="text/css">[^<]*</style>', "", svg)  # *{stroke-linejoin...}: in extra.css
    svg = re.sub(r"\s*<defs>\s*</defs>", "", svg)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    seen: dict[str, int] = {}

    def unique(m: re.Match[str]) -> str:
        # matplotlib names an image by its content: two equal images share an id. References
        # keep pointing at the first; a later copy gets a suffix, so every id is used once.
        seen[m[1]] = seen.get(m[1], 0) + 1
        suffix = f"-{seen[m[1]]}" if seen[m[1]] > 1 else ""
        return f'id="{figure_id}-{m[1]}{suffix}"'

    svg = re.sub(r'\bid="([^"]+)"', unique, svg)
    svg = re.sub(
        r'(href="#|url\(#)([^")]+)', lambda m: f"{m[1]}{figure_id}-{m[2]}" if m[2] in ids else m[0], svg
    )
    svg = re.sub(re.escape(INK), "currentColor", svg, flags=re.I)
    svg = DEFAULT_FONT.sub("", svg)  # the font list is extra.css's
    svg = "\n".join(line for line in svg.splitlines() if line.strip())  # no blank line inside the HTML
    return svg.strip()


def render_variant(code: str, figure: Figure, root: Path, name: str, variant: str = "") -> str:
    """One variant of the figure as inline SVG, from ``.cache/figures/`` or executed (and then cached)."""
    if not STATE["inputs"]:
        begin(root)
    prefix = f"{figure.id}_{variant}" if variant else figure.id
    if (str(root), code) not in _KEYS:
        _KEYS[(str(root), code)] = inputs_key(root, code, _DIGESTS)
    key = cache_key(code, figure.id, _KEYS[(str(root), code)], variant)
    cached = root / FIGURE_CACHE / f"{key}.svg"
    _USED.add(cached.name)
    if cached.exists():
        return cached.read_text(encoding="utf-8")
    svg = inline_svg(execute(code, prefix, root, name, variant), prefix)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(svg, encoding="utf-8")
    tmp.replace(cached)
    log.info("figures: rendered %s figure %s%s", name.split(":")[0], figure.label, f" ({variant})" if variant else "")
    return svg


def render(code: str, figure: Figure, root: Path, name: str) -> tuple[str, str | None]:
    """The figure's inline SVG, and its narrow variant where the wide one's text would be under
    ``PHONE_MIN_PX`` in a phone's column (else None)."""
    wide = render_variant(code, figure, root, name)
    small = smallest_text_px(wide)
    if small >= PHONE_MIN_PX:
        return wide, None
    narrow = render_variant(code, figure, root, name, NARROW)
    if smallest_text_px(narrow) <= small:
        log.info("figures: %s: the narrow variant's text is no larger than the wide one's (%.1f px at %.0f px): "
                    "draw it with selfattn.plot.figure, or read plot.narrow()", name, small, PHONE_COLUMN_PX)
        return wide, None
    if smallest_text_px(narrow) < PHONE_MIN_PX:
        log.info("figures: %s: its narrow variant's smallest text is %.1f px at %.0f px", name,
                 smallest_text_px(narrow), PHONE_COLUMN_PX)
    return wide, narrow


def wrap(svg: str | tuple[str, str | None], figure: Figure, lang: str) -> str:
    """The ``<figure>`` element: the SVG as an image with the alt text (its wide and narrow variants, if it has
    two), and the numbered caption."""
    wide, narrow = svg if isinstance(svg, tuple) else (svg, None)
    label = f'role="img" aria-label="{html.escape(figure.alt, quote=True)}" data-search-exclude="true"'
    caption = CAPTIONS.get(lang, CAPTIONS["en"]).format(number=figure.number, caption=html.escape(figure.caption))
    if narrow is None:
        svgs = wide.replace("<svg ", f"<svg {label} ", 1)
    else:
        svgs = (wide.replace("<svg ", f'<svg class="sa-figure__wide" {label} ', 1) + "\n"
                + narrow.replace("<svg ", f'<svg class="sa-figure__narrow" {label} ', 1))
    return f'<figure id="{figure.id}" class="sa-figure">\n{svgs}\n<figcaption>{caption}</figcaption>\n</figure>'


def failed(figure: Figure, message: str) -> str:
    """What ``serve`` shows in place of a figure that could not be built."""
    return (
        f'<figure id="{figure.id}" class="sa-figure sa-figure-error"><pre>{html.escape(message)}</pre>'
        f"<figcaption>{figure.number}</figcaption></figure>"
    )


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def figure_line(lines: list[str], fence: Fence) -> tuple[int, str]:
    """Where a figure goes, and its indentation: right after its block, or, for a block inside an
    admonition or content tab (an indented fence), after that container."""
    after = fence.start + len(fence.body) + 2
    depth = len(fence.indent)
    if depth == 0:
        return after, ""
    opener = next((lines[i] for i in range(fence.start - 1, -1, -1) if lines[i].strip() and indent_of(lines[i]) < depth), "")
    outer = indent_of(opener)
    end = next((i for i in range(after, len(lines)) if lines[i].strip() and indent_of(lines[i]) < depth), len(lines))
    return end, " " * outer


def chapter_of(src_uri: str) -> int | None:
    """``08-engineering.md`` -> 8; pages that are not chapters -> None."""
    m = PAGE_CHAPTER.match(Path(src_uri).name)
    return int(m["chapter"]) if m else None


def place(markdown: str, lang: str, root: Path, where: str) -> str:
    """Render a page's figures (``on_page_markdown``): the Markdown without the header lines and with a
    placeholder where each figure goes; the figures wait in ``_PENDING[where]`` for :func:`inline`.
    ``where`` names the page's file (``docs/03-qkv-formula.en.md``) in messages. The figures' numbers
    and the ``{fig:LABEL}`` references are the book's (:func:`numbering`); a page outside the nav numbers
    its own figures. The references are checked for the whole book, at the start of the build
    (:func:`check_book`)."""
    _PENDING.pop(where, None)
    numbers = numbering(root, lang)
    try:
        figures = find(markdown)
        number(figures, chapter_of(where), {})
        numbers = {**{f.label: f.number for f in figures}, **numbers}
        markdown = resolve(markdown, numbers, lang)
        figures = find(markdown)  # again: a caption or the code may hold a reference
    except FigureError as err:
        log.error("%s: %s", where, err)
        return resolve(markdown, numbers, lang)
    for figure in figures:
        figure.number = numbers[figure.label]
    if not figures:
        return markdown
    lines = markdown.splitlines(keepends=True)
    drop: set[int] = set()
    at: dict[int, list[str]] = {}
    pending = {}
    for figure in figures:
        name = f"{where}: figure {figure.label}"
        try:
            if DRAW_ONLY and where not in DRAW_ONLY:  # a neighbour of the page a page build checks: its anchor only
                pending[figure.id] = f'<figure id="{figure.id}" class="sa-figure"><figcaption>{figure.number}</figcaption></figure>'
            else:
                pending[figure.id] = wrap(render(chain_code(markdown, figure.fence), figure, root, name), figure, lang)
        except FigureError as err:
            log.error("%s: %s", name, err)
            pending[figure.id] = failed(figure, f"{name}: {err}")
        drop.update(range(figure.fence.start + 1, figure.fence.start + 1 + figure.header))
        line, indent = figure_line(lines, figure.fence)
        at.setdefault(line, []).append(f"\n{indent}{PLACEHOLDER}{figure.id}\n{indent}{{: #{figure.id} }}\n\n")
    _PENDING[where] = pending
    out = []
    for i, line in enumerate(lines):
        out += at.get(i, [])
        if i not in drop:
            out.append(line)
    out += at.get(len(lines), [])
    return "".join(out)


def inline(html_text: str, where: str) -> str:
    """Put the page's figures in place of their placeholders (``on_page_content``)."""
    pending = _PENDING.pop(where, {})
    if not pending:
        return html_text

    def figure(m: re.Match[str]) -> str:
        return pending.pop(m["id"], m[0])

    html_text = PLACEHOLDER_HTML.sub(figure, html_text)
    for figure_id in pending:
        log.error("%s: the placeholder of %s was lost in the page's HTML", where, figure_id)
    return html_text


def prune(root: Path, dirty: bool) -> None:
    """After a full build (not under ``serve --dirty``), drop the cached figures it did not use."""
    prune_unused(root / FIGURE_CACHE, "*.svg", _USED, dirty)


_CHECKED: dict[tuple[Path, str, str], tuple[object, Any]] = {}  # (root, edition, what) -> (the pages' stamp, the result)


def stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Each Markdown file's size and modification time, and mkdocs.yml's: the pages changed when this does."""
    files = [root / "mkdocs.yml", *sorted((root / "docs").rglob("*.md"))]
    stats = [(str(f), f.stat()) for f in files if f.exists()]
    return tuple((name, st.st_mtime_ns, st.st_size) for name, st in stats)


def cached(root: Path, lang: str, what: str, compute: Any) -> Any:
    """``compute()``, or its result from the last call if no page and not the nav changed since (``make serve``)."""
    now = stamp(root)
    if _CHECKED.get((root, lang, what), (None, None))[0] != now:
        _CHECKED[(root, lang, what)] = (now, compute())
    return _CHECKED[(root, lang, what)][1]


def check(root: Path, lang: str) -> None:
    """Log each problem of :func:`check_book` in one edition as an error (``on_pre_build``).

    The check reads every page; a rebuild of ``make serve`` in which no page and not the nav changed
    logs the problems found last time without reading them again."""
    for problem in cached(root, lang, "problems", lambda: check_book(root, (lang,))):
        log.error(problem)


def numbering(root: Path, lang: str) -> dict[str, str]:
    """Every figure label of one edition -> its number ("3.2"); empty outside a book (no mkdocs.yml)."""
    if not (root / "mkdocs.yml").exists():
        return {}

    def compute() -> dict[str, str]:
        return {f.label: f.number for figures in edition(root, lang)[1].values() for f in figures}

    return cached(root, lang, "numbers", compute)


def edition(root: Path, lang: str) -> tuple[dict[str, tuple[str, str]], dict[str, list[Figure]], list[str]]:
    """One edition's pages in nav order (page -> its file's name and its text), their figures, numbered
    per chapter across the chapter's pages, and the figure blocks that are not well formed."""
    from tools.site.languages import source_of

    docs = root / "docs"
    texts, found, problems = {}, {}, []
    for page in (p.split("/", 1)[1] for p in book_pages(root)):
        path = docs / source_of(page, lang, docs)
        if path.exists():
            texts[page] = (f"docs/{source_of(page, lang, docs)}", path.read_text(encoding="utf-8"))
    last: dict[int | None, int] = {}
    for page, (name, text) in texts.items():
        try:
            found[page] = find(text)
        except FigureError as err:
            problems.append(f"{name}: {err}")
            found[page] = []
        number(found[page], chapter_of(page), last)
    return texts, found, problems


def check_book(root: Path, langs: tuple[str, ...] = ("zh", "en")) -> list[str]:
    """The figures of the whole book, per edition: every figure block well formed, on a chapter page
    (NN-*.md), its label used once and in both editions; every ``{fig:LABEL}`` naming a figure, every
    link to ``#fig-LABEL`` pointing at the page that holds it, and no number written by hand."""
    problems = []
    for lang in langs:
        texts, found, bad = edition(root, lang)
        problems += bad
        other = numbering(root, "en" if lang == "zh" else "zh")  # the other edition's labels (cached per stamp)
        where = {f.label: page for page, figures in found.items() for f in figures}
        seen: set[str] = set()
        for page, figures in found.items():
            for figure in figures:
                at = f"{texts[page][0]}: figure {figure.label}"
                if chapter_of(page) is None:
                    problems.append(f"{at}: figures belong to the chapter pages (NN-*.md)")
                if figure.label in seen:
                    problems.append(f"{at}: the label is used twice")
                seen.add(figure.label)
                if figure.label not in other:
                    problems.append(f"{at}: the other edition has no figure labelled so")
        for page, (name, text) in texts.items():
            for m in TOKEN.finditer(text):
                if m["label"] not in where:
                    problems.append(f"{name}: {m[0]} names no figure")
            for m in FIGURE_LINK.finditer(text):
                target = m["page"].removeprefix("./") or page
                label = m["id"].removeprefix("fig-")
                if where.get(label) != target:
                    problems.append(f"{name}: a link to {target}#{m['id']}, which holds no such figure")
                elif TOKEN.fullmatch(m["text"]) and m["text"] != f"{{fig:{label}}}":
                    problems.append(f"{name}: the link {m[0]} names another figure than it points at")
            for m in WRITTEN.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{name}: line {line}: {m[0]!r} is written by hand; write {{fig:LABEL}}")
    return problems
