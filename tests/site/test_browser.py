"""The built site, in a real browser: Chromium driven by Playwright against ``site/``.

Every page of the ``nav`` of ``mkdocs.yml`` (chapters, labs, reference) is opened from a local server and checked:
no console error, no request to any host but 127.0.0.1, every formula rendered by the vendored KaTeX (no error, no raw
control character in its TeX), the file title of every titled code block, a copy button on every code block, the lab
plots, the notebook download link of the chapters, the light/dark toggle, the language switcher, and accessibility:
axe-core's rules and the contrast of the figures' text, in both palettes (AXE: one page per template; in CI every
other page too, and its colors where they differ). Each page is loaded once and every check runs on that load (its
problems are reported together, each naming its check); the DOM is read in one round trip. In CI, or with
``SELFATTN_SCREENSHOTS=1``, the first 1280 x 900 screen of each page, that screen in the dark palette and whole pages
are written to ``reports/screenshots/`` (CI keeps it as an artifact): they are for people to look at and check
nothing (SHOTS). The search is checked too.
Timeouts are generous (60 s a page): on a busy machine a slow page is slow, not wrong.

Chromium is found as ``$SELFATTN_CHROMIUM``, ``chromium`` or ``chromium-browser`` on PATH.
Without it the tests are skipped with the reason, except in CI (``CI`` is set), where a
missing browser is a failure: the browser checks must not silently vanish there.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import pytest

from tools.measure.figure_text import FIGURE_TEXT, FIGURE_TEXT_MIN, SHOWN_SVG, measure_page
from tools.site.figures import find as find_figures
from tools.testing.browser import (
    FIGURE_MEASURES,
    FIGURE_TEXT_TEST,
    CONFIG,
    DOCS,
    EN,
    PREFIX,
    TABS,
    VIEWPORT,
    EmptySearchHandler,
    SiteHandler,
    chromium_path,
    launch,
    page_url,
    serve,
    source,
    visit,
)
from tools.book.tangle import MARKER, nav_entries, parse_fences

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "reports" / "screenshots"
CHAPTER = re.compile(r"^\d\d-[^/]*\.md$")
# Search terms, and a page each must find whatever else the book says (the only hard-coded page of this file).
# (edition, term, a page it must find): each edition searches its own index only.
SEARCHES = [("", "缩放点积", "03-qkv-formula/"), ("", "掩码", "05-implementation/"),  # 3: its title
            ("en/", "scaled dot-product", "en/05-implementation/")]
RESULTS_SHOWN = 10  # material renders the first 10 result pages, more on scrolling


def expected_titles(src: str) -> list[str]:
    """The file titles a page must show: the ``#| file:`` marker of each titled ```python block."""
    if not src.endswith(".md"):
        return []
    titles = []
    for fence in parse_fences(source(src).read_text(encoding="utf-8"), src):
        if fence.info == "python" and fence.char == "`" and fence.body:
            m = MARKER.match(fence.body[0].strip())
            if m:
                titles.append(m["path"])
    return titles


def fence_count(src: str) -> int:
    """How many fenced blocks the page's Markdown source has (each must become a code block with a copy button)."""
    return len(parse_fences(source(src).read_text(encoding="utf-8"), src)) if src.endswith(".md") else 0


def plots(src: str) -> bool:
    """A lab notebook that draws (plot.show, or matplotlib) must show its plots."""
    text = source(src).read_text(encoding="utf-8") if src.endswith((".py", ".ipynb")) else ""
    return "plot.show(" in text or "matplotlib" in text


# The pages of the nav in both editions: ``05-implementation.md`` and ``en/05-implementation.md``
# (the English page, built from docs/05-implementation.en.md at the URL en/05-implementation/; EN = "en/").
ZH_PAGES = nav_entries(CONFIG)
PAGES = ZH_PAGES + [EN + src for src in ZH_PAGES]
NOTEBOOK_LINK = {"zh": "下载本章 Jupyter 笔记本", "en": "Download this chapter as a Jupyter notebook"}


EN_SCREENSHOTS = {EN + "index.md", EN + "05-implementation.md"}  # English pages shot whole and in both palettes
# The screenshots are for people to look at (CI uploads them as an artifact); they check nothing, and they cost:
# the page checks took 148 CPU-seconds with them and 130 without (2 cores), a whole long chapter a second or more.
# So a local run takes them only when asked to.
SHOTS = bool(os.environ.get("CI") or os.environ.get("SELFATTN_SCREENSHOTS"))


def lang_of(src: str) -> str:
    return "en" if src.startswith(EN) else "zh"


# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium executable; skip (fail in CI) without it or without playwright."""
    path = chromium_path()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as err:  # pragma: no cover - playwright is a test dependency
        path, why = "", f"playwright is not installed ({err})"
    else:
        why = "Chromium not found (set SELFATTN_CHROMIUM, or run `make browser-deps`)"
    if not path:
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI is set, so the browser tests must run")
        pytest.skip(why)
    return path


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Any]:
    """A browser for the tests that run in the main thread (search, 404)."""
    with launch(chromium) as b:
        yield b


@pytest.fixture(scope="session")
def base_url(site_dir: Path) -> Iterator[str]:
    """The site, each edition's search index without its documents (see ``Tab`` in tools/testing/browser.py)."""
    with serve(site_dir, EmptySearchHandler) as url:
        yield url


@pytest.fixture(scope="session")
def search_url(site_dir: Path) -> Iterator[str]:
    """The site as built, with each edition's whole search index (test_search)."""
    with serve(site_dir, SiteHandler) as url:
        yield url


_STARTED: list[float] = []


@pytest.fixture(scope="session", autouse=True)
def _browser_clock() -> None:
    """Started before the session fixtures of this module (autouse comes first): the page checks count."""
    _STARTED.append(time.perf_counter())


@pytest.fixture(scope="module", autouse=True)
def _timing(_browser_clock: None) -> Iterator[None]:
    yield
    print(f"\nbrowser tests: {time.perf_counter() - _STARTED[0]:.1f} s"
          + (f" (axe: {len(_AXE_SECONDS)} page check(s), {sum(_AXE_SECONDS):.1f} s)" if _AXE_SECONDS else "")
          + (f" (at 390 px: {len(_PHONE_SECONDS)} page(s), {sum(_PHONE_SECONDS):.1f} s, axe included)"
             if _PHONE_SECONDS else ""))


MATH_DONE = """() => [...document.querySelectorAll('.arithmatex')].every((e) => e.querySelector('.katex'))"""

VISIBLE_PROSE = """() => {
  // The whole page (article, navigation and table of contents, footer), not only the article.
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, textarea, .katex, .clipboard-copy-txt, .md-clipboard, .md-code__nav, .md-search')
    .forEach((e) => e.remove());
  return clone.textContent;
}"""

RAW_MATH = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$[^$\n]{1,200}?\$")

CODE_BLOCKS = """() => [...document.querySelectorAll('article .highlight pre')]
  .filter((pre) => !pre.closest('.jupyter-wrapper'))
  .map((pre) => ({
    copy: !!(pre.querySelector('button.md-clipboard, .md-code__button[data-md-type=copy]')
             || pre.closest('.highlight').querySelector('button.md-clipboard, .md-code__button')),
    text: pre.textContent.slice(0, 60),
  }))"""

NOTEBOOK_CELLS = """() => [...document.querySelectorAll('.jupyter-wrapper .jp-CodeCell .jp-InputArea-editor')]
  .map((cell) => ({copy: !!cell.querySelector('clipboard-copy'), text: cell.textContent.trim().slice(0, 60)}))"""

TITLES = """() => [...document.querySelectorAll('article .highlight > .filename, article .highlight .filename')]
  .map((e) => ({text: e.textContent.trim(), visible: e.checkVisibility() || !!e.closest('details:not([open])')}))"""

SCROLLING_CODE = """() => {
  // Open every collapsed block (??? note) first: a closed block is not laid out and cannot be measured.
  document.querySelectorAll('article details').forEach((d) => { d.open = true; });
  return [...document.querySelectorAll('article pre, article pre > code, article .highlight')]
    .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth)
    .map((e) => ({
      text: e.textContent.trim().split('\\n')[0].slice(0, 60),
      scroll: e.scrollWidth,
      client: e.clientWidth,
    }));
}"""

IMAGES = """() => [...document.querySelectorAll('.jupyter-wrapper .jp-OutputArea img, .jupyter-wrapper figure.sa-figure')]
  .map((e) => e.localName === 'img' ? {src: e.src.slice(0, 22), width: e.naturalWidth}
       : {src: 'figure', width: e.getBoundingClientRect().width})"""


FIGURES = """() => [...document.querySelectorAll('figure.sa-figure')].map((f) => {
  const svg = (SHOWN_SVG)(f);
  return {id: f.id, caption: (f.querySelector('figcaption') || {}).textContent || '',
          role: svg && svg.getAttribute('role'), label: svg && svg.getAttribute('aria-label'),
          width: svg ? svg.getBoundingClientRect().width : 0,
          column: f.parentElement.getBoundingClientRect().width,
          ink: svg ? getComputedStyle(svg).color : ''};
})"""
FIGURE_CAPTION = re.compile(r"^(图 |Figure )(?P<n>\d+(?:\.\d+)?)")  # 图 3.2 in a chapter, 图 2 in a lab
# The chapters whose first figure is shot in both palettes (issue: chapters 3, 4, 5 and 8.3).
FIGURE_SHOTS = {"03-qkv-formula.md", "04-why-sqrt-dk.md", "05-implementation.md", "08-long-sequences.md"}
# The pages whose palette toggle is clicked (light -> dark -> light), with a screenshot of each palette: one page of
# each template (a Markdown page, a lab notebook, each edition's preface) and a chapter of each edition with figures,
# whose ink must change with it; with the screenshots (SHOTS), every chapter of FIGURE_SHOTS, to shoot its figure.
# A toggle costs about a second on a long page; on every other page the template is one of these, and the
# figures' ink is currentColor (tests/site/test_figures.py checks every built figure).
TOGGLED = {"index.md", "labs/scaling.py", *(FIGURE_SHOTS if SHOTS else {"03-qkv-formula.md"})} | EN_SCREENSHOTS
# The pages whose language switcher is used, after their checks (page -> the switcher's target language): one of each
# template (a chapter, a lab, a preface), each way. Each lands on the same page in the other language.
SWITCHES = {"05-implementation.md": "en", EN + "labs/scaling.py": "zh", EN + "index.md": "zh"}


# Accessibility: axe-core (npm, pinned in tools/npm/axe/, installed by `make test` where node and npm are) runs in the page,
# and any serious or critical violation is a problem of the page. AXE_SAMPLE holds one page of each template: a chapter
# with code, titled blocks, math, figures, notes and an admonition (08-engineering, a fifth of the bytes of chapter 3, on
# which axe took 32 CPU-seconds of Chromium), a lab, each edition's preface, the explorer and the API page. axe checks
# it in the light and the dark palette, at 1280 and again at 390 px. In CI every other page is checked too, at 1280 (check_content):
# axe's rules on the whole page but COLOR_RULES, and COLOR_RULES, in both palettes, on what its article shows that no
# page of the sample does (color_checks). The figures' text, which axe cannot read, is checked with axe on the sample
# (both palettes, 1280 and 390 px), and on every page with a figure in both palettes by tests/site/test_figure_text.py.
AXE = ROOT / "tools" / "npm" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_IN_CI = bool(os.environ.get("CI"))
AXE_SAMPLE = {"08-engineering.md", "labs/scaling.py", "index.md", EN + "index.md", EN + "explorer.md", EN + "reference/api.md"}
AXE_FAILING = ("serious", "critical")
AXE_NODES_SHOWN = 3
# axe's run (all its rules), reduced to what a failure names; color transitions off first, so that the colors it
# reads are the palette's and not a frame of material's fade from one palette to the other. The print page's sections
# are rendered too: extra.css skips the layout of the sections out of view (content-visibility: auto, each a
# placeholder 8000 px high), so axe, which reads positions, found the API page's make_inputs heading on top of the
# footer (1.15:1, #030303 on #171717) where the reader, who scrolls there, sees it on the page's background.
AXE_RUN = """async (args) => {
  const [context, options] = args || [];
  if (!document.getElementById('axe-no-transitions')) {
    const style = document.createElement('style');
    style.id = 'axe-no-transitions';
    style.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }'
      + ' #print-site-page section.print-page { content-visibility: visible !important; }';
    document.head.appendChild(style);
  }
  const result = await axe.run(context || document, {resultTypes: ['violations'], ...(options || {})});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.join(' '), summary: (n.failureSummary || '').replace(/\\s+/g, ' ')}))}));
}"""


# axe's rules that read colors off the laid-out page. A page's colors are its stylesheets' (material's and extra.css,
# the same on every page of a template) on the classes of its content. So outside the sample they run only on the
# elements of a class that no page of the sample has, on the first page of the nav that has it, and on the whole
# article of a page where an element has a style of its own (color_checks). They cost three quarters of axe's time on a
# chapter (2.6 of 3.4 CPU-seconds of Chromium on 07-pitfalls), and axe on the 58 pages outside the sample took about 200
# of the 500 CPU-seconds that Chromium spent in a CI run.
COLOR_RULES = ["color-contrast", "link-in-text-block"]
OWN_COLORS = "data-sa-own-colors"
MARK_OWN_COLORS = """(classes) => {
  // The article's elements outside the figures' SVG with one of ``classes`` (all of them if ``classes`` is null).
  const own = [...document.querySelectorAll('article *')].filter((e) => !e.closest('svg')
    && (classes === null || classes.some((c) => e.classList.contains(c))));
  own.forEach((e) => e.setAttribute('OWN', ''));
  return own.length;
}""".replace("OWN", OWN_COLORS)


def article_classes(html: str) -> tuple[set[str], bool]:
    """The classes of the elements of a built page's article, outside its figures' SVG, and whether one of them has a
    style attribute (what the build wrote; the templates' scripts add the same on every page)."""
    import lxml.html

    classes: set[str] = set()
    styled = False
    stack = list(lxml.html.fromstring(html).iter("article"))
    while stack:
        el = stack.pop()
        if el.tag == "svg":
            continue
        classes.update((el.get("class") or "").split())
        styled = styled or el.get("style") is not None
        stack.extend(child for child in el if isinstance(child.tag, str))
    return classes, styled


def color_checks(built: dict[str, tuple[set[str], bool]], sample: set[str]) -> dict[str, list[str] | None]:
    """Where COLOR_RULES look outside the sample, from each page's ``article_classes`` in nav order: page -> the
    classes to check there (each class that no page of ``sample`` has, on the first page that has it), or None for
    the whole article of a page with a style of its own. Pages with nothing to check are left out."""
    seen = set().union(*(built[src][0] for src in sample))
    checks: dict[str, list[str] | None] = {}
    for src, (classes, styled) in built.items():
        if src in sample:
            continue
        if styled:
            checks[src] = None
        elif new := sorted(classes - seen):
            checks[src] = new
        seen |= classes
    return checks


@functools.cache
def color_checks_of_the_site(site_dir: Path) -> dict[str, list[str] | None]:
    """color_checks of the built site's pages (read once per process)."""
    built = {src: article_classes((site_dir / page_url(src) / "index.html").read_text(encoding="utf-8"))
             for src in PAGES}
    return color_checks(built, AXE_SAMPLE)


_AXE_SECONDS: list[float] = []  # each accessibility check of a page (axe), for the timing line
_PHONE_SECONDS: list[float] = []  # each page's checks at 390 px (phone_problems), for the timing line


def axe_problems(violations: list[dict[str, Any]], palette: str) -> list[str]:
    """One problem per serious or critical violation: the palette, the rule, how many nodes, and the first ones."""
    problems = []
    for v in violations:
        if v["impact"] in AXE_FAILING:
            nodes = "; ".join(f"{n['target']} ({n['summary'][:160]})" for n in v["nodes"][:AXE_NODES_SHOWN])
            problems.append(f"axe, {palette} palette: {v['id']} ({v['impact']}: {v['help']}), {len(v['nodes'])} "
                            f"node(s): {nodes}")
    return problems


def check_accessibility(page: Any) -> list[str]:
    """axe-core and the figures' text on the page as it is, in the light palette, then in the dark palette (the palette
    toggle), then light again. Without axe installed: a problem in CI, nothing locally (test_axe_is_installed says
    why it is skipped)."""
    if not AXE.exists():
        return ["axe-core is not installed (make axe)"] if AXE_IN_CI else []
    start = time.perf_counter()
    page.add_script_tag(path=str(AXE))
    problems = []
    for palette, scheme in (("light", "default"), ("dark", "slate")):
        if page.evaluate("document.body.getAttribute('data-md-color-scheme')") != scheme:
            page.evaluate(TOGGLE)
            try:
                page.wait_for_function(f"document.body.dataset.mdColorScheme === '{scheme}'", timeout=30_000)
            except Exception:  # reported as a problem of the page
                problems.append(f"axe: the palette toggle did not reach {scheme!r}")
                continue
        problems += axe_problems(page.evaluate(AXE_RUN), palette)
        problems += [f"figure text, {palette} palette: {t['figure']} {t['text']!r} in {t['fill']} on {t['bg']}: "
                     f"{t['ratio']}:1 (at least {FIGURE_TEXT_MIN}:1)"
                     for t in page.evaluate(FIGURE_TEXT, [FIGURE_TEXT_MIN, palette == "dark"])["low"]]
    page.evaluate(TOGGLE)
    with contextlib.suppress(Exception):
        page.wait_for_function("document.body.dataset.mdColorScheme === 'default'", timeout=30_000)
    _AXE_SECONDS.append(time.perf_counter() - start)
    return problems


def check_content(page: Any, own: list[str] | None) -> list[str]:
    """axe-core on a page outside the sample, at 1280 in the light palette: every rule but COLOR_RULES on the whole
    page, then COLOR_RULES in both palettes on the elements of its article with a class in ``own``, or on all of them
    if ``own`` is None (color_checks; nothing if ``own`` is empty). Without axe installed: as check_accessibility."""
    if not AXE.exists():
        return ["axe-core is not installed (make axe)"] if AXE_IN_CI else []
    start = time.perf_counter()
    page.add_script_tag(path=str(AXE))
    rest = {"rules": {rule: {"enabled": False} for rule in COLOR_RULES}}
    problems = axe_problems(page.evaluate(AXE_RUN, [None, rest]), "light")
    if own != [] and page.evaluate(MARK_OWN_COLORS, own):
        for palette, scheme in (("light", "default"), ("dark", "slate")):
            page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
            context = {"include": [[f"[{OWN_COLORS}]"]]}
            problems += axe_problems(page.evaluate(AXE_RUN, [context, {"runOnly": COLOR_RULES}]), palette)
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'default')")
    _AXE_SECONDS.append(time.perf_counter() - start)
    return problems


def figure_problems(figures: list[dict[str, Any]]) -> list[str]:
    """Each figure drawn by the build: an inline SVG image with alt text, a numbered caption (the figures
    of a page numbered one after the other in one chapter: 3.2, 3.3; in a lab: 1, 2), and within the text column."""
    problems = []
    numbers = []
    for f in figures:
        m = FIGURE_CAPTION.match(f["caption"].strip())
        numbers.append(tuple(int(n) for n in m["n"].split(".")) if m else None)
        if not m:
            problems.append(f"figure {f['id']!r}: caption {f['caption'][:40]!r} is not numbered")
    for one, two, f in zip(numbers, numbers[1:], figures[1:], strict=False):
        if one and two and two != (*one[:-1], one[-1] + 1):
            problems.append(f"figure {f['id']!r}: numbered {two} after {one} on the same page")
    for f in figures:
        if f["role"] != "img" or not (f["label"] or "").strip():
            problems.append(f"figure {f['id']}: the SVG has no role=img with alt text")
        if not 0 < f["width"] <= f["column"] + 1:
            problems.append(f"figure {f['id']}: {f['width']:.0f} px wide in a {f['column']:.0f} px column")
    return problems


PHONE = {"width": 390, "height": 844}
FRAMES = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def phone_problems(page: Any, axe: bool) -> list[str]:
    """The page at 390 x 844 (the viewport is left there): each display formula and code block that scrolls sideways
    has a cue and takes the focus; with ``axe``, axe-core's serious and critical violations in both palettes."""
    from tools.measure.phone import SCROLLERS

    start = time.perf_counter()
    page.set_viewport_size(PHONE)
    page.evaluate(FRAMES)  # the layout at 390, then scroll-cue.js's ResizeObserver
    found = page.evaluate(SCROLLERS)
    problems = [f"390 px: {kind} scrolls sideways ({b['scroll']} > {b['client']} px) without "
                f"{' and '.join(w for w, ok in (('a cue', b['cue']), ('the focus', b['focusable'])) if not ok)}: "
                f"{b['text']!r}"
                for kind, key in (("a formula", "mathOver"), ("a code block", "codeOver"), ("a table", "tableOver"))
                for b in found[key] if not (b["cue"] and b["focusable"])]
    if axe:
        problems += [f"390 px: {p}" for p in check_accessibility(page)]
    _PHONE_SECONDS.append(time.perf_counter() - start)
    return problems


def switch_problems(page: Any, base_url: str, src: str, target: str) -> list[str]:
    """The head has an hreflang link per language, and the switcher in the header leads to the same page in
    the other language (javascripts/language-switch.js); what fails to load on the way is in the visit's watch."""
    from playwright.sync_api import Error as PlaywrightError

    problems = []
    other = (EN + src) if target == "en" else src.removeprefix(EN)
    hreflang = dict(page.eval_on_selector_all("link[rel=alternate][hreflang]", "els => els.map((e) => [e.hreflang, e.href])"))
    want = {"zh": base_url + page_url(src.removeprefix(EN)), "en": base_url + page_url(EN + src.removeprefix(EN))}
    if hreflang != want:
        problems.append(f"hreflang links {hreflang}, expected {want}")
    try:
        page.locator(".md-header__option .md-select").hover()
        page.locator(f"a.md-select__link[hreflang={target}]").click()
        page.wait_for_url(base_url + page_url(other))
        page.wait_for_load_state("load")
    except PlaywrightError as err:
        return [*problems, f"the language switcher did not lead to {base_url + page_url(other)} (at {page.url}): {err}"]
    if (lang := page.locator("html").get_attribute("lang")) != target:
        problems.append(f"the switcher landed on {page.url}, whose language is {lang!r}, expected {target!r}")
    return problems


def shoot(page: Any, name: str, full_page: bool = True) -> None:
    """A screenshot in reports/screenshots/ (JPEG: half the time of PNG on the long chapters), if SHOTS."""
    if SHOTS:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.jpg"), full_page=full_page, type="jpeg", quality=85)


def _slug(src: str) -> str:
    return page_url(src).strip("/").replace("/", "-") or "index"


# ------------------------------------------------------------------------------------------------ tests


PAGE_FACTS = """(labels) => {
  // Everything the page check reads from the DOM, in one round trip.
  const links = (label) => [...document.querySelectorAll('a[href], [role=link]')]
    .filter((a) => (a.getAttribute('aria-label') || a.textContent).trim().toLowerCase()
                   .includes(label.toLowerCase()))
    .map((a) => a.href);
  return {
    katexErrors: document.querySelectorAll('.katex-error').length,
    pending: [...document.querySelectorAll('.arithmatex')].filter((e) => !e.querySelector('.katex')).length,
    // The TeX of each formula as KaTeX read it (its MathML annotation), when it holds a raw control
    // character: a TAB where the "\\t" of "\\text" was meant renders wrong, and with no KaTeX error.
    mathControl: [...document.querySelectorAll('.arithmatex annotation[encoding="application/x-tex"]')]
      .map((a) => a.textContent).filter((tex) => /[\\u0000-\\u0009\\u000b-\\u001f\\u007f]/.test(tex)),
    prose: (VISIBLE_PROSE)(),
    titles: (TITLES)(),
    blocks: [...(CODE_BLOCKS)(), ...(NOTEBOOK_CELLS)()],
    images: (IMAGES)(),
    notebookLinks: links(labels.notebook),
    edit: [...document.querySelectorAll('a.md-content__button[rel=edit]')].map((a) => a.getAttribute('href') || ''),
    scheme: document.body.getAttribute('data-md-color-scheme'),
  };
}"""
FIGURES = FIGURES.replace("(SHOWN_SVG)", f"({SHOWN_SVG})")
for _name, _js in (("VISIBLE_PROSE", VISIBLE_PROSE), ("TITLES", TITLES), ("CODE_BLOCKS", CODE_BLOCKS),
                   ("NOTEBOOK_CELLS", NOTEBOOK_CELLS), ("IMAGES", IMAGES)):
    PAGE_FACTS = PAGE_FACTS.replace(f"({_name})", f"({_js})")

TOGGLE = """() => {
  // Click the palette toggle's visible label (material shows the one that leads to the other scheme).
  const labels = [...document.querySelectorAll('form[data-md-component=palette] label')];
  const shown = labels.filter((l) => l.checkVisibility());
  if (shown.length !== 1) return shown.length;
  shown[0].click();
  return 1;
}"""


def check_page(browser: Any, base_url: str, site_dir: Path, src: str, measure_figures: bool = False) -> list[str]:
    """Open one page of the nav, check it, screenshot it in both palettes; return the problems found.

    One page load; the DOM is read in one round trip (PAGE_FACTS), then the notebook is fetched, the
    screenshots taken and the palette toggled. Each problem names its check. With ``measure_figures``, the
    figures' text is measured on the same load, into FIGURE_MEASURES."""
    with visit(browser, base_url + page_url(src)) as (page, watch):
        with contextlib.suppress(Exception):  # a timeout is reported precisely by the checks below
            page.wait_for_function(MATH_DONE, timeout=30_000)
        problems: list[str] = []
        facts = page.evaluate(PAGE_FACTS, {"notebook": NOTEBOOK_LINK[lang_of(src)]})

        # Math: rendered by KaTeX, no error, no TeX left in the prose.
        if n := facts["katexErrors"]:
            problems.append(f"{n} formula(s) with a KaTeX error")
        if pending := facts["pending"]:
            problems.append(f"{pending} .arithmatex element(s) not rendered by KaTeX")
        raw = sorted({m.group(0)[:60] for m in RAW_MATH.finditer(facts["prose"])})
        if raw:
            problems.append(f"raw TeX in the visible text: {raw}")
        if control := facts["mathControl"]:  # each control character shown by its code: <U+0009>
            shown = [re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", lambda c: f"<U+{ord(c[0]):04X}>", tex)[:60]
                     for tex in control]
            problems.append(f"{len(control)} formula(s) with a raw control character in the TeX: {shown}")

        # File titles of the titled blocks, in page order, visible.
        titles = facts["titles"]
        want = expected_titles(src)
        if [t["text"] for t in titles] != want:
            problems.append(f"file titles {[t['text'] for t in titles]}, expected {want}")
        problems += [f"file title {t['text']!r} is not visible" for t in titles if not t["visible"]]
        problems += [
            f"file title {t['text']!r} is not under src/selfattn/"
            for t in titles
            if not t["text"].startswith("src/selfattn/")
        ]

        # A copy button on every code block (material's on Markdown pages, mkdocs-jupyter's in notebooks).
        # material 9.8 renders it as <button class="md-code__button" data-md-type="copy">.
        blocks = facts["blocks"]
        problems += [f"no copy button on the code block {b['text']!r}" for b in blocks if not b["copy"]]
        if len(blocks) < (fences := fence_count(src)):
            problems.append(f"{len(blocks)} code blocks on the page for {fences} fences in its source")

        # The lab plots.
        if plots(src):
            images = facts["images"]
            if not any(i["src"].startswith(("data:image/", "figure")) and i["width"] > 0 for i in images):
                problems.append(f"the lab draws but shows no plot (images: {images})")

        # Chapters: the notebook download link, and the notebook is served.
        if CHAPTER.match(src.removeprefix(EN)):
            label = NOTEBOOK_LINK[lang_of(src)]
            hrefs = facts["notebookLinks"]
            if len(hrefs) != 1:
                problems.append(f"{len(hrefs)} links 「{label}」, expected 1")
            else:
                href = hrefs[0]
                if not href.endswith(f"{EN if src.startswith(EN) else ''}notebooks/{src.removeprefix(EN)[:-3]}.ipynb"):
                    problems.append(f"the notebook link points to {href}")
                r = page.request.get(href)
                if not r.ok or json.loads(r.body()).get("nbformat") != 4:
                    problems.append(f"the notebook {href} is not served ({r.status})")
        # Every Markdown page offers "edit this page".
        if src.endswith(".md"):
            edited = source(src).relative_to(DOCS).as_posix()
            if len(facts["edit"]) != 1 or not facts["edit"][0].endswith(f"edit/main/docs/{edited}"):
                problems.append("no 'edit this page' button pointing at the page's source")

        # Screenshots: every page's first screen; the whole page of the sample of the templates and of the chapters of
        # FIGURE_SHOTS (a whole long page costs 1.5-2 s; every other page is one of these templates).
        if src in AXE_SAMPLE | FIGURE_SHOTS | EN_SCREENSHOTS:
            shoot(page, f"{_slug(src)}-light")
        shoot(page, f"{_slug(src)}-light-1280x900", full_page=False)  # what a reader sees first

        # Figures: numbered, with alt text, within the column; their ink follows the palette (below).
        figures = page.evaluate(FIGURES)
        problems += figure_problems(figures)
        if src.endswith(".md"):
            blocks = [f.id for f in find_figures(source(src).read_text(encoding="utf-8"))]
            if [f["id"] for f in figures] != blocks:
                problems.append(f"figures built {[f['id'] for f in figures]}, figure blocks {blocks}")

        # The palette toggle: light -> dark and back (the pages of TOGGLED).
        if src in TOGGLED:
            scheme = facts["scheme"]
            if (shown := page.evaluate(TOGGLE)) != 1:  # a click on the label, without Playwright's scrolling
                problems.append(f"{shown} visible palette toggles, expected 1")
            with contextlib.suppress(Exception):  # reported below
                page.wait_for_function("document.body.dataset.mdColorScheme === 'slate'", timeout=30_000)
            dark = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
            if (scheme, dark) != ("default", "slate"):
                problems.append(f"the palette toggle went from {scheme!r} to {dark!r}, expected 'default' -> 'slate'")
            shoot(page, f"{_slug(src)}-dark", full_page=False)  # the palette: the first screen is enough
            if figures:  # currentColor: the figures' text and axes change with the palette
                ink_dark = page.evaluate(FIGURES)[0]["ink"]
                if ink_dark == figures[0]["ink"]:
                    problems.append(f"figure ink stays {ink_dark} in the dark palette")
            if src in FIGURE_SHOTS and figures and SHOTS:  # the first figure in view, dark then light
                page.evaluate("document.querySelector('figure.sa-figure').scrollIntoView({block: 'center'})")
                shoot(page, f"{_slug(src)}-figure-dark-1280x900", full_page=False)
            page.evaluate(TOGGLE)
            with contextlib.suppress(Exception):
                page.wait_for_function("document.body.dataset.mdColorScheme === 'default'", timeout=30_000)
            back = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
            if back != "default":
                problems.append(f"the palette toggle did not come back to 'default' ({back!r})")
            if src in FIGURE_SHOTS and figures and SHOTS:
                shoot(page, f"{_slug(src)}-figure-light-1280x900", full_page=False)
                page.evaluate("window.scrollTo(0, 0)")

        # No code block scrolls sideways at 1280 x 900 (the collapsed blocks opened for the measurement).
        problems += [
            f"code block scrolls sideways ({b['scroll']} > {b['client']} px): {b['text']!r}"
            for b in page.evaluate(SCROLLING_CODE)
        ]

        # Accessibility (axe-core): with the collapsed blocks open (SCROLLING_CODE opened them); in both palettes on
        # the sample of the templates, and in CI on every other page what its content adds to its template.
        if src in AXE_SAMPLE:
            problems += check_accessibility(page)
        elif AXE_IN_CI:
            problems += check_content(page, color_checks_of_the_site(site_dir).get(src, []))

        # The figures' text for tests/site/test_figure_text.py, on this load: at 1280, then at 390 px, where the
        # phone's checks go on; in both palettes, then the light one again (measure_page).
        if measure_figures:
            FIGURE_MEASURES[src] = measure_page(page)

        # On a phone, 390 px wide: no display formula and no code block scrolls sideways without a cue (a fade at
        # the edge it hides more at) and the keyboard focus (assets/javascripts/scroll-cue.js); axe-core again, in
        # both palettes, on the sample of the templates. Then back to 1280 for the switcher.
        problems += phone_problems(page, src in AXE_SAMPLE)
        if src in SWITCHES:  # else the next visit resets the viewport, on a blank page
            page.set_viewport_size(VIEWPORT)

        # Last, as it leaves the page: the language switcher (the pages of SWITCHES).
        if src in SWITCHES:
            problems += switch_problems(page, base_url, src, SWITCHES[src])

        problems += watch.errors
        problems += [f"request to a non-local host: {u}" for u in dict.fromkeys(watch.external)]
        problems += [f"failed to load: {u}" for u in watch.failed]
        return problems


FIT = """(text) => {
  // Put ``text`` into the first code block of the article and into the first one of a collapsed block;
  // return whether each scrolls sideways.
  document.querySelectorAll('article details').forEach((d) => { d.open = true; });
  const blocks = [document.querySelector('article > .highlight code, article > div > .highlight code'),
                  document.querySelector('article details .highlight code')];
  return blocks.map((code) => { code.textContent = text; return code.scrollWidth > code.clientWidth; });
}"""


FIT_LAB = """(text) => {
  const code = document.querySelector('.jupyter-wrapper .highlight-ipynb pre');
  code.textContent = text;
  return code.scrollWidth > code.clientWidth;
}"""


FIT_LINES = [("x" * 88, False), ("注" * 44, False), ("x" * 120, True)]  # (a line, whether it must scroll)


def test_a_crashed_page_is_reported_and_the_next_visit_gets_a_new_tab(browser: Any, base_url: str) -> None:
    """The pages share one tab (Tab): a renderer crash is an error of the page it happened on, and the
    next visit opens a new tab instead of failing on the dead one."""
    from playwright.sync_api import Error as PlaywrightError

    light = base_url + "assets/logo.svg"  # a page that costs nothing to load: the tab is what is tested
    # (Chromium asks an image shown as a page for /favicon.ico, outside the site: a 404, as on GitHub Pages.)
    with visit(browser, light) as (page, watch):
        crashed = TABS[id(browser)]
        with contextlib.suppress(PlaywrightError):  # chrome://crash kills the renderer; the calls then fail
            page.goto("chrome://crash", timeout=10_000)
        for _ in range(200):  # until the crash event arrives (each wait fails at once when it has)
            if crashed.crashed:
                break
            with contextlib.suppress(PlaywrightError):
                page.wait_for_timeout(50)
        assert "the page crashed" in watch.errors
    with visit(browser, light) as (page, watch):
        assert TABS[id(browser)] is not crashed
        errors = [e for e in watch.errors if "/favicon.ico" not in e]
        assert page.locator("svg").count() == 1 and not errors, errors


def test_a_request_to_another_host_is_recorded_and_fails(browser: Any, base_url: str) -> None:
    """Every page check asserts that Watch.external is empty: a request to another host must land there,
    and must not leave the machine (``LAUNCH_ARGS`` of tools/testing/browser.py sends it to a proxy at a closed port)."""
    urls = ["http://203.0.113.9/probe.js", "https://example.com/probe.png"]  # an address, and a name
    with visit(browser, base_url + "assets/logo.svg") as (page, watch):
        got = page.evaluate("""(urls) => Promise.all(urls.map((u) => fetch(u, {mode: 'no-cors'})
          .then(() => 'answered', () => 'failed')))""", urls)
        assert got == ["failed", "failed"], got
        assert watch.external == urls, watch.external


def test_base_url_serves_the_search_index_without_documents(base_url: str, search_url: str, site_dir: Path) -> None:
    """What the page checks get (Tab), and that test_search gets the index as built."""
    import urllib.request

    for edition in ("", EN):
        built = json.loads((site_dir / edition / "search" / "search_index.json").read_text(encoding="utf-8"))
        with urllib.request.urlopen(f"{base_url}{edition}search/search_index.json") as r:
            assert json.load(r) == {**built, "docs": []}
            assert r.headers["Cache-Control"] == "max-age=600"
        with urllib.request.urlopen(f"{search_url}{edition}search/search_index.json") as r:
            assert json.load(r) == built and built["docs"]


def test_the_toggled_pages_are_pages_of_the_nav() -> None:
    """A page renamed out of TOGGLED or SWITCHES would silently lose its palette or switcher check."""
    assert TOGGLED <= set(PAGES), sorted(TOGGLED - set(PAGES))
    assert set(SWITCHES) <= set(PAGES), sorted(set(SWITCHES) - set(PAGES))
    assert {lang_of(src) for src in SWITCHES} == {"zh", "en"} and all(lang_of(s) != t for s, t in SWITCHES.items())


def test_88_columns_fit_in_a_lab_cell(browser: Any, base_url: str) -> None:
    """The same in a code cell of a lab notebook (mkdocs-jupyter's own styles): one page load, each line in turn."""
    src = next(s for s in PAGES if s.endswith(".py"))
    with visit(browser, base_url + page_url(src)) as (page, _):
        got = [(len(line), page.evaluate(FIT_LAB, line)) for line, _ in FIT_LINES]
        want = [(len(line), scrolls) for line, scrolls in FIT_LINES]
        assert got == want, f"{src}: (characters, scrolls) {got}, expected {want}"


def test_88_columns_fit_at_1280_px(browser: Any, base_url: str) -> None:
    """The stylesheet makes an 88-column line (CJK counting 2) fit, in the text and in a collapsed block
    (``??? note``, ``??? success``: a fence indented under it); 120 columns do not. One page load, each line in turn."""
    src = next(s for s in PAGES if CHAPTER.match(s) and any(f.indent for f in parse_fences((DOCS / s).read_text("utf-8"), s)))
    with visit(browser, base_url + page_url(src)) as (page, _):
        for line, scrolls in FIT_LINES:
            assert page.evaluate(FIT, line) == [scrolls, scrolls], f"{src}: {len(line)} characters"
            if scrolls:  # and the page check reports such a block
                assert page.evaluate(SCROLLING_CODE), "SCROLLING_CODE misses a block that scrolls"


PRINT_PAGE = "print_page/"


def h1_text(src: str) -> str:
    """The text a reader sees of a page's H1: without its attribute list ({#id}) and code spans' backticks."""
    h1 = next(line for line in source(src).read_text(encoding="utf-8").splitlines() if line.startswith("# "))
    return re.sub(r"`([^`]*)`", r"\1", re.sub(r"\s*\{[^}]*\}\s*$", "", h1[2:])).strip()


def test_english_print_page_has_the_whole_book(site_dir: Path) -> None:
    """The English edition's print page (en/print_page/): built from the English pages, every chapter in it,
    linked from the English preface. Its rendering (KaTeX, no remote request) is the Chinese one's, checked below."""
    page = site_dir / EN / PRINT_PAGE / "index.html"
    html = page.read_text(encoding="utf-8")
    assert '<html lang="en"' in html
    assert 'href="print_page/"' in (site_dir / EN / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)  # a title's code span is <code>...</code> there
    for src in ZH_PAGES:
        if CHAPTER.match(src):
            title = h1_text(EN + src)
            assert title in text, f"{EN}{src}: {title!r} is missing from the English print page"
    assert html.count('class="arithmatex"') > 100


# The titles (of ``titles``) that no visible <h1> of the print page's chapters contains. Visible as checkVisibility
# says: not hidden by CSS; a chapter that content-visibility: auto has not laid out yet (far from the view) counts
# as visible, as it is to find-in-page (innerText would leave its text out).
PRINT_TITLES_MISSING = """(titles) => {
  const shown = [...document.querySelectorAll('section.print-page h1')].filter((h) => h.checkVisibility())
    .map((h) => h.textContent);
  return titles.filter((t) => !shown.some((h) => h.includes(t)));
}"""
# The media of the style rules that set content-visibility: auto on the print page's chapters (expected: screen only,
# so that printing lays out every chapter), after checking that the chapters have it on screen.
LAID_OUT_NEAR_THE_VIEW = """() => {
  const sections = [...document.querySelectorAll('section.print-page[id]')];
  if (!sections.length || sections.some((s) => getComputedStyle(s).contentVisibility !== 'auto')) return ['not on screen'];
  const rules = [...document.styleSheets].flatMap((s) => { try { return [...s.cssRules]; } catch (e) { return []; } });
  const media = (list, within) => list.flatMap((r) => r instanceof CSSMediaRule ? media([...r.cssRules], r.media.mediaText)
    : (r.style && r.style.contentVisibility === 'auto' ? [within] : []));
  return media(rules, 'all');
}"""


# What a print page adds to the pages it repeats: its own template (the sections of the nav, the page around them,
# the table of contents, shown only on paper) and a chapter as that template shows it. The other pages' sections are
# taken out of the document before axe runs: test_page checks each of them on its own page. axe on a whole print page
# took 90-100 s per palette (374 s of a CI run's 558): it lays out all of the 6 MB page, even for a context that
# excludes most of it (30 s a run). The order, the math and the links of the whole print page are the tests above and
# tests/site/test_links.py.
# The kept chapter: code, a titled block, math, figures, collapsed notes and an admonition (the chapter of AXE_SAMPLE).
# Chapter 3, five times its bytes, took 13 s of this test's 24 in axe.
PRINT_CHAPTER = "08-engineering"
PRINT_TOC = "#print-page-toc"  # display: none on screen, laid out on paper
PRINT_KEEP = """(kept) => {
  const others = [...document.querySelectorAll('#print-site-page section.print-page[id]:not(.md-section)')]
    .filter((e) => e.id !== kept);
  others.forEach((e) => e.remove());
  return others.length;
}"""
# Images without alt text (axe's image-alt, critical): in a section heading of the nav (the template), in the kept
# chapter and in the table of contents. On screen axe must find the first two (the third is hidden there); on paper
# the table of contents' check must find the third.
PRINT_WITNESSES = """([kept, toc]) => {
  const places = [document.querySelector('#print-site-page section.print-page.md-section'),
                  document.getElementById(kept), document.querySelector(toc)];
  places.forEach((place, i) => { const img = document.createElement('img'); img.className = 'sa-witness-' + i;
    img.src = 'data:image/gif;base64,R0lGODlhAQABAAAAACw='; place.appendChild(img); });
}"""


def witnesses(found: list[dict[str, Any]]) -> list[str]:
    """The witnesses (PRINT_WITNESSES) that axe's violations name."""
    targets = " ".join(n["target"] for v in found for n in v["nodes"])
    return sorted(set(re.findall(r"sa-witness-\d", targets)))


@pytest.mark.parametrize("root", ["", EN], ids=["zh", "en"])
def test_print_page(browser: Any, base_url: str, site_dir: Path, root: str) -> None:
    """The whole book in one page (mkdocs-print-site-plugin): every nav page, math by KaTeX, nothing remote. Then, in
    CI, on the same load, axe-core and the figures' text on what the page adds (PRINT_KEEP): on screen in both
    palettes, and its table of contents on paper. Locally the Chinese page alone, without axe (as every page outside
    the sample)."""
    if root and not AXE_IN_CI:
        pytest.skip("CI only: the English print page is the Chinese one's template, which the run checks locally")
    assert (site_dir / root / PRINT_PAGE / "index.html").exists(), "the print page was not built"
    home = (site_dir / root / "index.html").read_text(encoding="utf-8")
    assert 'href="print_page/"' in home, "the preface links to the print page"
    kept = f"{root.replace('/', '-')}{PRINT_CHAPTER}"
    with visit(browser, base_url + root + PRINT_PAGE, timeout_ms=180_000) as (page, watch):  # about 6 MB, 1400+ formulas
        page.wait_for_function(MATH_DONE, timeout=180_000)
        page.set_default_timeout(600_000)
        assert page.locator(".katex-error").count() == 0
        formulas = page.locator(".arithmatex").count()
        assert formulas > 100 and page.locator(".arithmatex .katex").count() == formulas
        sections = page.eval_on_selector_all("section.print-page", "els => els.map((e) => e.id)")
        assert len(sections) >= len(ZH_PAGES), f"{len(sections)} pages in the print page for {len(ZH_PAGES)} in the nav"
        titles = []
        for src in ZH_PAGES:  # each chapter's first heading is a visible heading of the print page
            if CHAPTER.match(src):
                titles.append(h1_text(root + src))
        missing = page.evaluate(PRINT_TITLES_MISSING, titles)
        assert not missing, f"chapter titles missing from the print page's visible headings: {missing}"
        # On screen, the chapters far from the view are not laid out (content-visibility, extra.css); on paper they are.
        assert page.evaluate(LAID_OUT_NEAR_THE_VIEW) == ["screen"]
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shoot(page, f"{root.replace('/', '-')}print_page-light", full_page=False)
        assert not watch.errors, watch.errors
        assert not watch.external, watch.external
        assert not watch.failed, watch.failed
        if not AXE_IN_CI:
            return
        assert page.locator(f'[id="{kept}"]').count() == 1, f"{kept} is not a section of the print page"
        removed = page.evaluate(PRINT_KEEP, kept)
        problems = check_accessibility(page)
        page.emulate_media(media="print")
        problems += axe_problems(page.evaluate(AXE_RUN, [{"include": [[PRINT_TOC]]}, None]), "print")
        page.evaluate(PRINT_WITNESSES, [kept, PRINT_TOC])
        on_paper = witnesses(page.evaluate(AXE_RUN, [{"include": [[PRINT_TOC]]}, {"runOnly": ["image-alt"]}]))
        page.emulate_media(media="screen")
        on_screen = witnesses(page.evaluate(AXE_RUN, [None, {"runOnly": ["image-alt"]}]))
    assert removed >= len(ZH_PAGES) - 2, f"only {removed} pages' sections taken out of the print page"
    assert not problems, f"{root}{PRINT_PAGE}:\n  " + "\n  ".join(problems)
    assert on_screen == ["sa-witness-0", "sa-witness-1"], f"axe on screen finds the witnesses {on_screen}"
    assert on_paper == ["sa-witness-2"], f"the table of contents' check on paper finds {on_paper}"


WORKERS = int(os.environ.get("SELFATTN_BROWSER_WORKERS", min(4, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def page_problems(chromium: str, base_url: str, site_dir: Path, request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """Check the selected pages of the nav, in WORKERS threads with a browser each; map each page to its problems."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[str]] = {}
    if os.environ.get("PYTEST_XDIST_WORKER"):  # under xdist the workers share the pages: test_page checks its own
        return results
    selected = {
        i.callspec.params["src"] for i in request.session.items if getattr(i, "originalname", "") == "test_page"
    }
    pages = [src for src in PAGES if src in selected] or PAGES
    measured = figure_text_pages(request)

    from playwright.sync_api import Error as PlaywrightError

    def work(share: list[str]) -> None:
        with launch(chromium) as b:
            for src in share:
                try:
                    results[src] = check_page(b, base_url, site_dir, src, src in measured)
                except (PlaywrightError, ValueError, KeyError, TypeError, OSError):  # reported by that page's test
                    results[src] = [traceback.format_exc()]

    n = max(1, min(WORKERS, len(pages)))
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(work, [pages[i::n] for i in range(n)]))
    return results


def figure_text_pages(request: pytest.FixtureRequest) -> set[str]:
    """The pages whose figure text test (tests/site/test_figure_text.py) is selected in this run."""
    return {i.callspec.params["src"] for i in request.session.items if i.nodeid.startswith(FIGURE_TEXT_TEST)}


@pytest.mark.parametrize("src", PAGES, ids=_slug)
def test_page(page_problems: dict[str, list[str]], base_url: str, site_dir: Path, src: str,
              request: pytest.FixtureRequest) -> None:
    """No console error, no non-local request, math rendered, titles, copy buttons, plots, toggle, links, switcher."""
    if src not in page_problems:  # under xdist: this worker's browser checks this page now
        page_problems[src] = check_page(request.getfixturevalue("browser"), base_url, site_dir, src,
                                        src in figure_text_pages(request))
    problems = page_problems[src]
    assert not problems, f"{src} ({base_url}{page_url(src)}):\n  " + "\n  ".join(problems)


def pages_containing(term: str) -> list[str]:
    """The URLs of the nav pages whose source contains ``term``."""
    return [page_url(src) for src in PAGES if term.lower() in source(src).read_text(encoding="utf-8").lower()]


INDEX_REQUESTS = """performance.getEntriesByType('resource')
  .filter((e) => e.name.endsWith('/search/search_index.json')).length"""
# The explorer's scripts and stylesheet (about 62 KB): requested only by the explorer's pages (overrides/main.html).
EXPLORER_ASSETS = r"""performance.getEntriesByType('resource').map((e) => e.name)
  .filter((n) => /\/(javascripts\/explorer(-twin)?\.js|stylesheets\/explorer\.css)(\?|$)/.test(n))"""


@pytest.mark.parametrize("root", sorted({r for r, _, _ in SEARCHES}), ids=lambda r: r.rstrip("/") or "zh")
def test_search(browser: Any, search_url: str, root: str) -> None:
    """Each edition's search finds its own pages: Chinese words through an index segmented by jieba at
    build time, English words through the English index (site/en/search/), and nothing of the other language.

    For each term of SEARCHES in this edition, typed in turn into the search box of one page load (the
    search worker builds the edition's index once): its pinned chapter, and at least one result whose source
    contains the term.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with visit(browser, search_url + root) as (page, watch):  # the real index (see Tab)
        box = page.locator("input.md-search__input")
        items = page.locator(".md-search-result__item")
        # The index (about 0.9 MB) is loaded on first use of the search, not with every page (overrides/main.html).
        page.wait_for_load_state("networkidle")
        assert page.evaluate(INDEX_REQUESTS) == 0, "the search index was requested before anyone searched"
        assert page.evaluate(EXPLORER_ASSETS) == [], "the explorer's assets were loaded by a page without the explorer"
        box.click()  # at 1280 px the search box is in the header (the magnifier label is for narrow screens)
        for query, chapter in [(q, c) for r, q, c in SEARCHES if r == root]:
            containing = [u for u in pages_containing(query) if u.startswith(root)]
            assert containing, f"no page of the book contains {query!r}"
            box.fill("")  # the results of the term before are gone before the next one is typed
            box.dispatch_event("keyup")
            page.wait_for_function("() => !document.querySelector('.md-search-result__item')", timeout=60_000)
            box.fill(query)
            box.dispatch_event("keyup")
            # The ranking decides which pages make the first RESULTS_SHOWN results, so only the pinned chapter
            # is required, plus at least one page whose source has the exact term (jieba also matches its parts).
            try:
                items.first.wait_for(timeout=60_000)
            except PlaywrightTimeout:
                meta = page.locator(".md-search-result__meta").text_content()
                pytest.fail(f"search for {query!r} returned nothing ({meta!r}); is the index segmented (lang: zh, jieba)?")
            hrefs = page.eval_on_selector_all(".md-search-result__item > a", "els => els.map((a) => a.href)")
            found = {urlparse(h).path[len(PREFIX) :] for h in hrefs}
            assert chapter in found, f"search for {query!r} found {sorted(found)}; missing {chapter}"
            assert found & set(containing), f"search for {query!r} found {sorted(found)}, none of {containing}"
            other = sorted(u for u in found if u.startswith(EN) != bool(root))
            assert not other, f"search for {query!r} in {root or 'zh/'} found pages of the other edition: {other}"
        assert page.evaluate(INDEX_REQUESTS) == 1, "one request for the index, at first use"
        assert not watch.errors and not watch.external, (watch.errors, watch.external)
        assert not watch.failed, watch.failed


SKIP = """() => {
  // The skip link, activated as a keyboard does (Enter on the focused link is a click): where the focus lands.
  const skip = document.querySelector('a.md-skip');
  skip.focus();
  skip.click();
  const active = document.activeElement;
  return {inArticle: !!active.closest('article'), tag: active.localName, id: active.id};
}"""


def test_notebook_download_and_instant_navigation(browser: Any, base_url: str) -> None:
    """The download link really downloads, and after an instant (XHR) navigation math and link are there, and the
    skip link moves the focus to the chapter's first heading (before the fix, it stayed in the navigation)."""
    chapter = next(src for src in PAGES if CHAPTER.match(src) and expected_titles(src))
    with visit(browser, base_url) as (page, watch):
        page.locator(f".md-nav--primary a[href$='{page_url(chapter)}']").first.click()
        page.wait_for_url(f"**/{page_url(chapter)}")
        page.wait_for_function(MATH_DONE, timeout=60_000)
        skipped = page.evaluate(SKIP)
        assert skipped["inArticle"] and skipped["tag"] == "h1", skipped
        page.keyboard.press("Tab")  # the next stop is in the text, not in the navigation
        assert page.evaluate("!!document.activeElement.closest('article')"), page.evaluate(
            "document.activeElement.outerHTML.slice(0, 120)")
        with page.expect_download() as download:
            page.get_by_role("link", name="下载本章 Jupyter 笔记本").click()
        assert download.value.suggested_filename == f"{chapter[:-3]}.ipynb"
        assert json.loads(Path(download.value.path()).read_text(encoding="utf-8"))["nbformat"] == 4
        assert not watch.errors and not watch.external, (watch.errors, watch.external)


def test_search_index_is_segmented(site_dir: Path) -> None:
    """Without jieba the build still succeeds, silently, with an unsegmented index: catch that here too."""
    index = json.loads((site_dir / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert "zh" in index["config"]["lang"], index["config"]
    text = next(d["text"] for d in index["docs"] if d["location"] == "05-implementation/")
    assert "\u200b" in text, "the search index is not segmented into words: is jieba installed?"


def test_each_edition_has_its_own_search_index(site_dir: Path) -> None:
    """site/search/ holds the Chinese pages only, site/en/search/ the English ones (locations relative to en/)."""
    zh = json.loads((site_dir / "search" / "search_index.json").read_text(encoding="utf-8"))
    en = json.loads((site_dir / EN / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert zh["config"]["lang"] == ["zh"] and en["config"]["lang"] == ["en"], (zh["config"], en["config"])
    assert not [d["location"] for d in zh["docs"] if d["location"].startswith(EN)]
    pages = {d["location"].split("#")[0] for d in en["docs"]}
    assert {page_url(src) for src in ZH_PAGES if src.endswith(".md")} <= pages, pages
    title = next(d["title"] for d in en["docs"] if d["location"] == "05-implementation/")
    assert not re.search(r"[\u4e00-\u9fff]", title), title


def test_404_page_renders_offline(browser: Any, base_url: str, site_dir: Path) -> None:
    assert (site_dir / "404.html").exists(), "material writes site/404.html"
    with visit(browser, base_url + "no-such-page/") as (page, watch):
        assert page.locator("article h1").text_content().strip() == "404 - Not found"
        assert page.locator("link[rel=icon]").count() == 1 and page.locator("img[alt=logo]").first.is_visible()
        shoot(page, "404-light")
        assert not watch.external, watch.external
        errors = [e for e in watch.errors if "404" not in e]  # the page itself is a 404, by design
        assert not errors, errors
        assert watch.failed == [f"404 {base_url}no-such-page/"], watch.failed
        if AXE_IN_CI:  # every page in CI (a page of the chapters' template: the sample covers it locally)
            assert not (problems := check_accessibility(page)), problems
        # It speaks both languages and leads to both prefaces.
        for name in ("中文版的前言", "preface of the English edition"):
            href = page.get_by_role("link", name=name).get_attribute("href") or ""
            assert urljoin(page.url, href) in (base_url, base_url + EN), (name, href)


def test_english_404_page_renders_offline(browser: Any, base_url: str, site_dir: Path) -> None:
    """The English edition's own 404 page (site/en/404.html): English first, offline, nothing fails."""
    assert (site_dir / EN / "404.html").exists()
    with visit(browser, base_url + EN + "404.html") as (page, watch):
        assert page.locator("html").get_attribute("lang") == "en"
        assert page.locator("article p").first.get_attribute("lang") == "en"
        assert page.locator("img[alt=logo]").first.is_visible()
        if AXE_IN_CI:
            assert not (problems := check_accessibility(page)), problems
        assert not watch.errors and not watch.external and not watch.failed


def test_every_nav_page_was_built(site_dir: Path) -> None:
    missing = [src for src in PAGES if not (site_dir / page_url(src) / "index.html").exists()]
    assert not missing, f"pages of the nav missing from site/: {missing}"


def test_axe_is_installed() -> None:
    """axe-core is where check_page injects it (``make test`` runs ``npm ci`` in tools/npm/axe/ when node and npm are
    there). Locally without it the accessibility checks are skipped, with this reason; in CI it fails."""
    if not AXE.exists():
        why = f"{AXE.relative_to(ROOT)} is missing: run `make axe` (needs node and npm)"
        if AXE_IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    lock = json.loads((ROOT / "tools" / "npm" / "axe" / "package-lock.json").read_text(encoding="utf-8"))
    installed = json.loads((AXE.parent / "package.json").read_text(encoding="utf-8"))["version"]
    assert installed == lock["packages"]["node_modules/axe-core"]["version"], "run `make axe`: the lock file changed"


def test_axe_sample_is_pages_of_the_nav_one_per_template() -> None:
    """A page renamed out of the sample would silently lose its check; the sample has a chapter, a lab, a preface of
    each edition, the explorer and the API page."""
    assert AXE_SAMPLE <= set(PAGES), sorted(AXE_SAMPLE - set(PAGES))
    assert any(CHAPTER.match(s) for s in AXE_SAMPLE) and any(s.endswith(".py") for s in AXE_SAMPLE)
    assert {lang_of(s) for s in AXE_SAMPLE} == {"zh", "en"}


def test_axe_finds_what_it_must(browser: Any, base_url: str) -> None:
    """The check can fail: on a page made worse (a light grey paragraph, an unnamed dialog, a light grey label in a
    figure), check_accessibility names the rule, the palette and the node."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed (test_axe_is_installed)")
    with visit(browser, base_url + EN) as (page, _):
        page.evaluate("""() => {
          const p = document.createElement('p');
          p.id = 'faint'; p.textContent = 'Faint text'; p.style.color = '#bbbbbb';
          document.querySelector('article').prepend(p);
          document.querySelector('.md-search').removeAttribute('aria-label');
          const figure = document.createElement('figure');
          figure.className = 'sa-figure'; figure.id = 'fig-0-1';
          figure.innerHTML = '<svg width="200" height="40"><text x="10" y="25" style="fill: #bbbbbb">faint label</text></svg>';
          document.querySelector('article').prepend(figure);
        }""")
        problems = check_accessibility(page)
    assert any(p.startswith("axe, light palette: color-contrast (serious") and "#faint" in p for p in problems), problems
    assert any(p.startswith("axe, dark palette: aria-dialog-name (serious") for p in problems), problems
    assert any(p.startswith("figure text, light palette: fig-0-1 'faint label' in rgb(187, 187, 187)") for p in problems), problems


def test_check_content_finds_what_it_must(browser: Any, base_url: str) -> None:
    """On a page outside the sample, axe's other rules run on the whole page and COLOR_RULES on the elements of the
    classes given, in both palettes: an image without alt text anywhere, and a faint class that is dark-on-dark in the
    dark palette only, are named; the same faint text under a class not given is left to the sample's check."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed (test_axe_is_installed)")
    with visit(browser, base_url + page_url(EN + "01-problem.md")) as (page, _):
        page.evaluate("""() => {
          const style = document.createElement('style');
          style.textContent = '[data-md-color-scheme=slate] .sa-faint, .sa-sampled { color: #333333 }';
          document.head.appendChild(style);
          const article = document.querySelector('article');
          for (const name of ['sa-faint', 'sa-sampled']) {
            const p = document.createElement('p'); p.className = name; p.textContent = name + ' text';
            article.prepend(p);
          }
          const img = document.createElement('img'); img.src = 'data:image/gif;base64,R0lGODlhAQABAAAAACw=';
          img.id = 'no-alt'; article.append(img);
        }""")
        problems = check_content(page, ["sa-faint"])
    assert any(p.startswith("axe, light palette: image-alt (critical") and "#no-alt" in p for p in problems), problems
    assert any(p.startswith("axe, dark palette: color-contrast (serious") and ".sa-faint" in p for p in problems), problems
    assert not any("sa-sampled" in p or "light palette: color-contrast" in p for p in problems), problems


def test_color_rules_look_at_each_class_the_sample_lacks_once() -> None:
    """color_checks: a class of no sample page is checked on the first page that has it, and only there; a page with
    a style of its own gets the whole article checked; the rest need nothing. article_classes reads the article only,
    and no figure's SVG."""
    html = ('<html><body><nav class="md-nav"></nav><article class="md-content__inner">'
            '<div class="admonition warning"><p class="admonition-title">Note</p></div>'
            '<svg class="sa-plot"><text class="tick" style="fill: red">1</text></svg></article></body></html>')
    assert article_classes(html) == ({"md-content__inner", "admonition", "warning", "admonition-title"}, False)
    assert article_classes(html.replace("<p class", '<p style="color: red" class'))[1] is True
    built = {"sample.md": ({"highlight", "k"}, False), "a.md": ({"highlight", "k", "vm"}, False),
             "b.md": ({"k", "vm", "go", "nd"}, False), "c.md": ({"k"}, True), "d.md": ({"nd"}, False)}
    assert color_checks(built, {"sample.md"}) == {"a.md": ["vm"], "b.md": ["go", "nd"], "c.md": None}

