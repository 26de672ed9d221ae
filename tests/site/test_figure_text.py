"""The text of the book's figures as a reader sees it, in Chromium: at least MIN_PX, no overlaps, contrast.

``tools/measure/figure_text.py`` measures it (its docstring says what and how); each page with a figure, in each
edition, fails with one line per problem. What was measured is written to ``reports/figure-text.json``.
``python -m tools.measure.figure_text SITE`` measures any built site and prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.site.test_browser import (  # noqa: F401  (fixtures)
    AXE,
    AXE_IN_CI,
    AXE_RUN,
    base_url,
    browser,
    chromium,
    axe_problems,
)
from tools.measure.figure_text import PHONE, figure_pages, measure_page, problems_of, summary
from tools.testing.browser import EN, FIGURE_MEASURES, FIGURE_TEXT_TEST, PAGE_TEST, page_url, visit

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "figure-text.json"
_MEASURED: dict[str, dict[str, Any]] = {}


@pytest.mark.parametrize("src", figure_pages(), ids=lambda s: s.removesuffix(".md").replace("/", "-"))
def test_figure_text_is_large_enough_apart_and_legible(browser: Any, base_url: str, src: str) -> None:  # noqa: F811
    measured = FIGURE_MEASURES.pop(src, None)  # taken by test_page's load of the page, which ran just before
    if measured is None:  # test_page of this page ran in the other worker, or is not selected
        with visit(browser, base_url + page_url(src)) as (page, _):
            measured = measure_page(page)
    _MEASURED[src] = measured
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(json.dumps(summary(_MEASURED), indent=1, ensure_ascii=False), encoding="utf-8")
    problems = problems_of(src, measured)
    assert not problems, f"{src} ({page_url(src)}):\n  " + "\n  ".join(problems)


def test_a_label_faint_in_one_palette_is_named_in_that_palette(browser: Any, base_url: str) -> None:  # noqa: F811
    """measure_page reads each palette's colors: a label that is faint in the dark palette only, or in the light one
    only, is named with that palette (the dark pass measures the texts that the light pass found on the background)."""
    with visit(browser, base_url + page_url(EN + "08-engineering.md")) as (page, _):
        label = page.evaluate("""() => {
          const texts = [...document.querySelectorAll('figure.sa-figure svg.sa-figure__wide text')]
            .filter((t) => t.textContent.trim().length > 2);
          texts[0].classList.add('sa-dark-faint'); texts[1].classList.add('sa-light-faint');
          const style = document.createElement('style');
          style.textContent = '[data-md-color-scheme=slate] .sa-dark-faint { fill: #333333 !important }'
            + ' [data-md-color-scheme=default] .sa-light-faint { fill: #dddddd !important }';
          document.head.appendChild(style);
          return [texts[0].textContent.trim().slice(0, 30), texts[1].textContent.trim().slice(0, 30)];
        }""")
        contrast = measure_page(page)["contrast"]
    assert [c for c in contrast if repr(label[0]) in c] and all(c.startswith("dark palette") for c in contrast
                                                                if repr(label[0]) in c), contrast
    assert [c for c in contrast if repr(label[1]) in c] and all(c.startswith("light palette") for c in contrast
                                                                if repr(label[1]) in c), contrast


# Before Back: the second figure in the middle of the screen; the page and its article marked. After: what stayed.
BACK_BEFORE = """() => {
  document.querySelectorAll('figure.sa-figure')[1].scrollIntoView({block: 'center'});
  window.__stay = 1;
  window.__article = document.querySelector('article');
  return {y: Math.round(scrollY)};
}"""
BACK_AFTER = """() => ({after: Math.round(scrollY), sameArticle: window.__article === document.querySelector('article'),
                 stayed: window.__stay === 1, path: location.pathname})"""


def test_the_enlarged_figure_is_accessible(browser: Any, base_url: str) -> None:  # noqa: F811
    """axe-core on a page with a figure open full screen at 390 px, in both palettes (the dialog is added to the
    page by the script, so the page checks of tests/site/test_browser.py never see it), Escape closes it, and so does
    the browser's back button, which leaves the reader's place as it was, at 390 and at 1280 px."""
    if not AXE.exists():
        if AXE_IN_CI:
            pytest.fail("axe-core is not installed (make axe)")
        pytest.skip("axe-core is not installed (make axe)")
    with visit(browser, base_url + page_url(EN + "08-multihead.md")) as (page, watch):
        page.set_viewport_size(PHONE)
        page.add_script_tag(path=str(AXE))
        page.locator("figure.sa-figure .sa-figure-zoom").first.click()
        page.wait_for_function("document.querySelector('dialog.sa-figure-dialog').open")
        problems = []
        for palette, scheme in (("light", "default"), ("dark", "slate")):
            page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
            # The dialog alone: test_page checks the page under it (axe on all of en/08-multihead: 3-4 s a palette).
            problems += axe_problems(page.evaluate(AXE_RUN, [{"include": [["dialog.sa-figure-dialog"]]}, None]), palette)
        focused = page.evaluate("document.activeElement.className")
        page.keyboard.press("Escape")
        page.wait_for_function("!document.querySelector('dialog.sa-figure-dialog').open")
        back = page.evaluate("document.activeElement.className")
        # The browser's back button closes it too, and the reader stays where they were, at both widths: the same
        # scroll position, the same page (no new load) and the same article (material's instant navigation, whose
        # listener ran first, rendered the page again from the top: 5,961 px to 0 at 390).
        backs = {}
        for size in (PHONE, {"width": 1280, "height": 900}):
            page.set_viewport_size(size)
            backs[size["width"]] = page.evaluate(BACK_BEFORE)
            page.locator("figure.sa-figure .sa-figure-zoom").nth(1).click()
            page.wait_for_function("document.querySelector('dialog.sa-figure-dialog').open")
            page.go_back()
            page.wait_for_function("!document.querySelector('dialog.sa-figure-dialog').open")
            page.wait_for_timeout(300)
            backs[size["width"]] |= page.evaluate(BACK_AFTER)
        assert not problems and not watch.errors, problems + watch.errors
        assert "sa-figure-dialog__close" in focused and back.split()[0] == "sa-figure-zoom", (focused, back)
        for width, b in backs.items():
            assert b["y"] > 500 and b["after"] == b["y"], (width, b)
            assert b["sameArticle"] and b["stayed"] and b["path"].endswith("/en/08-multihead/"), (width, b)


def test_the_page_test_knows_this_test_by_its_node_id() -> None:
    """test_page measures the figures for this test, and the root conftest.py runs the two tests of a page one after
    the other, by the node ids of tools/testing/browser.py: they must be these tests' ids (whatever a run selects)."""
    from tests.site import test_browser

    this = test_figure_text_is_large_enough_apart_and_legible.__name__
    assert FIGURE_TEXT_TEST == f"tests/site/test_figure_text.py::{this}["
    assert PAGE_TEST == f"tests/site/test_browser.py::{test_browser.test_page.__name__}["
    assert Path(test_browser.__file__).resolve() == ROOT / "tests" / "site" / "test_browser.py"


def test_figure_pages_are_the_chapters_with_figures() -> None:
    pages = figure_pages()
    assert "03-qkv-formula.md" in pages and EN + "10-capstone.md" in pages
    assert len(pages) % 2 == 0 and all(EN + p in pages for p in pages if not p.startswith(EN))
