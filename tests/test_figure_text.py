"""The text of the book's figures as a reader sees it, in Chromium: its size, overlaps and contrast.

The figures are inline SVG drawn by matplotlib (``tools/build/figures.py``); their text is real text, which the page
shows at the figure's scale. Every page with a figure is loaded once per edition, and every figure on it is measured:

* at a 1280 px wide window, where a figure shows at its natural size up to the 748 px text column, the smallest text
  (computed font size times the scale of ``getScreenCTM``) is at least 11 px (``selfattn.plot`` writes 9 pt, 12 px,
  and 8.5 pt in cells);
* at a 390 px window (a phone) the column is 358 px, where a 7 in figure would shrink to about half: the page shows
  the figure's narrow variant instead (drawn by the build, ``tools/build/figures.py``), whose smallest text is at
  least 9 px there. The reader can tap it, and ``docs/assets/javascripts/figure-zoom.js`` opens it full screen,
  with its caption. There, in the enlarged state, its smallest text is at least 11 px, a narrow variant fits the
  screen's width (it does not pan sideways), and the dialog closes again;
* at both widths, inline and enlarged, no two text boxes of a figure overlap (by more than ``OVERLAP_PX`` in both
  directions), as "head 0head 1head 2" once did;
* at 1280, in the light and the dark palette, text on the page's background stands out from it by 4.5:1
  (``FIGURE_TEXT`` of tests/test_browser.py, which checks only the accessibility sample there);
* a Chinese caption is upright: Material sets captions in italic, which a CJK font lacks and the browser fakes.

A failure names the page, the figure, the width and the text. What was measured (per figure: the smallest text at
1280, inline at 390 and enlarged at 390) is written to ``build/figure-text.json``; ``python -m tests.test_figure_text
SITE`` measures any built site (one without the enlarging script reports the inline size at 390) and prints it.
The pages are visited in the session's browser tab (``visit``): a page costs one load. The labs' figures (drawn by
``selfattn.plot.show``) are measured as the chapters' are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_browser import (  # noqa: F401  (fixtures)
    AXE,
    SHOWN_SVG,
    AXE_IN_CI,
    AXE_RUN,
    EN,
    FIGURE_TEXT,
    FIGURE_TEXT_MIN,
    base_url,
    browser,
    chromium,
    axe_problems,
    page_url,
    source,
    visit,
)
from tools.build.figures import find
from tools.tangle import load_config, nav_entries

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "build" / "figure-text.json"
MIN_PX = {1280: 11.0, 390: 11.0, "390 inline": 9.0}  # 390: in the enlarged state
# A text box is the font's advance box, wider than the ink by the side bearings (about a pixel at 12 px, more for
# CJK, whose boxes are a full em): boxes that overlap by 2 px or less touch, their letters do not.
OVERLAP_PX = 2.0
PHONE = {"width": 390, "height": 844}


def figure_pages() -> list[str]:
    """The nav pages of both editions that hold a figure block (``03-qkv-formula.md``, ``en/03-qkv-formula.md``), and
    the labs that show a figure (``labs/scaling.py``)."""
    zh = nav_entries(load_config(ROOT))

    def has_figures(src: str) -> bool:
        text = source(src).read_text(encoding="utf-8")
        return bool(find(text)) if src.endswith(".md") else "plot.show(" in text

    return [p for p in zh + [EN + src for src in zh] if has_figures(p)]


# Per figure: the smallest text (px, and which text), the overlapping pairs of text boxes, the SVG's width.
MEASURE = """(overlapPx) => {
  const measure = (svg) => {
    const boxes = [];
    let min = Infinity, minText = '';
    for (const t of svg.querySelectorAll('text')) {
      const s = t.textContent.replace(/\\s+/g, ' ').trim();
      const ctm = t.getScreenCTM();
      if (!s || !ctm) continue;
      // matplotlib's math text ($W_q$, 2^6 on a log axis) is one <text> with a <tspan> per run, each its own size.
      for (const run of [t, ...t.querySelectorAll('tspan')]) {
        if (![...run.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const px = parseFloat(getComputedStyle(run).fontSize) * Math.hypot(ctm.a, ctm.b);
        if (px < min) { min = px; minText = s; }
      }
      const r = t.getBoundingClientRect();
      if (r.width && r.height) boxes.push([s, r.left, r.top, r.right, r.bottom]);
    }
    const overlaps = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i], boxes[j]];
        const w = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
        const h = Math.min(a[4], b[4]) - Math.max(a[2], b[2]);
        if (w > overlapPx && h > overlapPx) overlaps.push(`${a[0]} / ${b[0]} (${w.toFixed(1)} x ${h.toFixed(1)} px)`);
      }
    }
    return {min: Math.round(min * 10) / 10, minText: minText.slice(0, 30), overlaps: overlaps.slice(0, 5),
            width: Math.round(svg.getBoundingClientRect().width)};
  };
  window.__saMeasure = measure;
  const shown = (SHOWN_SVG);
  return [...document.querySelectorAll('figure.sa-figure')].map((f) => ({id: f.id, ...measure(shown(f)),
    captionStyle: getComputedStyle(f.querySelector('figcaption')).fontStyle}));
}"""

MEASURE = MEASURE.replace("(SHOWN_SVG)", f"({SHOWN_SVG})")

# Tap each figure's enlarge button, measure the SVG in the dialog, close it (its close button). Without the script:
# null for each figure.
ENLARGED = """async (overlapPx) => {
  const out = [];
  for (const f of document.querySelectorAll('figure.sa-figure')) {
    const button = f.querySelector('.sa-figure-zoom');
    if (!button) { out.push(null); continue; }
    button.click();
    const dialog = document.querySelector('dialog.sa-figure-dialog');
    const svg = dialog && dialog.open && dialog.querySelector('svg');
    if (!svg) { out.push({id: f.id, error: 'the button opened no dialog with the figure'}); continue; }
    const m = window.__saMeasure(svg);
    const pane = dialog.querySelector('.sa-figure-dialog__pane');
    m.pans = pane.scrollWidth > pane.clientWidth + 1;
    m.narrow = !!f.querySelector(':scope > svg.sa-figure__narrow');
    const caption = dialog.querySelector('.sa-figure-dialog__caption');
    m.caption = caption && caption.getClientRects().length ? caption.textContent.trim() : '';
    m.label = dialog.getAttribute('aria-label');
    dialog.querySelector('.sa-figure-dialog__close').click();
    await new Promise((r) => setTimeout(r, 20));
    m.closed = !dialog.open && document.activeElement === button;
    out.push({id: f.id, ...m});
  }
  return out;
}"""


# The palette is switched by its attribute (what material's toggle sets), with material's colour fade off: the colours
# read are the palette's at once, not a frame of the fade (the toggle itself is tested in tests/test_browser.py).
NO_FADE = """() => {
  const style = document.createElement('style');
  style.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';
  document.head.appendChild(style);
}"""


def measure_page(page: Any) -> dict[str, Any]:
    """One loaded page: its figures at 1280 (both palettes' contrast) and at 390 (inline and enlarged)."""
    page.evaluate("document.fonts.ready.then(() => true)")
    wide = page.evaluate(MEASURE, OVERLAP_PX)
    contrast = []
    page.evaluate(NO_FADE)
    for palette, scheme in (("light", "default"), ("dark", "slate")):
        page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
        contrast += [f"{palette} palette: {t['figure']} {t['text']!r} in {t['fill']} on {t['bg']}: {t['ratio']}:1"
                     for t in page.evaluate(FIGURE_TEXT, FIGURE_TEXT_MIN)["low"]]
    page.set_viewport_size(PHONE)
    narrow = page.evaluate(MEASURE, OVERLAP_PX)
    enlarged = page.evaluate(ENLARGED, OVERLAP_PX)
    return {"wide": wide, "narrow": narrow, "enlarged": enlarged, "contrast": contrast}


def problems_of(src: str, m: dict[str, Any]) -> list[str]:
    problems = list(m["contrast"])
    for f in m["wide"]:
        if not src.startswith(EN) and f["captionStyle"] != "normal":  # a CJK font has no italic: it would be faked
            problems.append(f"{f['id']}: the Chinese caption is set in {f['captionStyle']}, not upright")
        if f["min"] < MIN_PX[1280]:
            problems.append(f"{f['id']} at 1280 px: smallest text {f['min']} px ({f['minText']!r}), at least {MIN_PX[1280]}")
        problems += [f"{f['id']} at 1280 px: text overlaps: {o}" for o in f["overlaps"]]
    for f in m["narrow"]:
        if f["min"] < MIN_PX["390 inline"]:
            problems.append(f"{f['id']} at 390 px, inline: smallest text {f['min']} px ({f['minText']!r}), "
                            f"at least {MIN_PX['390 inline']}")
        problems += [f"{f['id']} at 390 px, inline: text overlaps: {o}" for o in f["overlaps"]]
    for f, inline in zip(m["enlarged"], m["narrow"], strict=True):
        if f is None:
            problems.append(f"{inline['id']} at 390 px: no enlarge button (inline its smallest text is {inline['min']} px)")
            continue
        if "error" in f:
            problems.append(f"{f['id']} at 390 px: {f['error']}")
            continue
        if f["min"] < MIN_PX[390]:
            problems.append(f"{f['id']} at 390 px, enlarged: smallest text {f['min']} px ({f['minText']!r}), "
                            f"at least {MIN_PX[390]}")
        problems += [f"{f['id']} at 390 px, enlarged: text overlaps: {o}" for o in f["overlaps"]]
        if not f["closed"]:
            problems.append(f"{f['id']} at 390 px: the dialog did not close, or the focus did not return to its button")
        if not (f["label"] or "").strip():
            problems.append(f"{f['id']} at 390 px: the dialog has no accessible name")
        if not f["caption"]:
            problems.append(f"{f['id']} at 390 px, enlarged: no caption under the figure")
        if f["narrow"] and f["pans"]:
            problems.append(f"{f['id']} at 390 px, enlarged: its narrow variant is wider than the screen")
    return problems


_MEASURED: dict[str, dict[str, Any]] = {}


def summary(measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per figure (``zh fig-3-2``, ``en fig-3-2``): its smallest text at 1280, inline at 390 and enlarged at 390."""
    rows = {}
    for src, m in measured.items():
        lang = "en" if src.startswith(EN) else "zh"
        for wide, narrow, big in zip(m["wide"], m["narrow"], m["enlarged"], strict=True):
            rows[f"{lang} {wide['id']}"] = {"1280": wide["min"], "390": narrow["min"],
                                            "390 enlarged": big["min"] if big and "min" in big else None}
    return rows


@pytest.mark.parametrize("src", figure_pages(), ids=lambda s: s.removesuffix(".md").replace("/", "-"))
def test_figure_text_is_large_enough_apart_and_legible(browser: Any, base_url: str, src: str) -> None:  # noqa: F811
    with visit(browser, base_url + page_url(src)) as (page, _):
        measured = _MEASURED[src] = measure_page(page)
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(json.dumps(summary(_MEASURED), indent=1, ensure_ascii=False), encoding="utf-8")
    problems = problems_of(src, measured)
    assert not problems, f"{src} ({page_url(src)}):\n  " + "\n  ".join(problems)


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
    page by the script, so the page checks of tests/test_browser.py never see it), Escape closes it, and so does the
    browser's back button, which leaves the reader's place as it was, at 390 and at 1280 px."""
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
            problems += axe_problems(page.evaluate(AXE_RUN), palette)
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


def test_figure_pages_are_the_chapters_with_figures() -> None:
    pages = figure_pages()
    assert "03-qkv-formula.md" in pages and EN + "10-capstone.md" in pages
    assert len(pages) % 2 == 0 and all(EN + p in pages for p in pages if not p.startswith(EN))


if __name__ == "__main__":  # python -m tests.test_figure_text [SITE]: measure a built site, print the table
    from tests.test_browser import _chromium, _EmptySearchHandler, launch, serve

    site = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "site").resolve()
    measured = {}
    with serve(site, _EmptySearchHandler) as url, launch(_chromium()) as b:
        for src in figure_pages():
            with visit(b, url + page_url(src)) as (page, _):
                measured[src] = measure_page(page)
            print(src, *problems_of(src, measured[src]), sep="\n  ", flush=True)
    rows = summary(measured)
    print(json.dumps(rows, indent=1, ensure_ascii=False))
    for key in ("1280", "390", "390 enlarged"):
        for lang in ("zh", "en"):
            vals = [(r[key], name) for name, r in rows.items() if name.startswith(lang) and r[key] is not None]
            if vals:
                print(f"{key:>12} {lang}: min {min(vals)[0]} px ({min(vals)[1]}), max {max(vals)[0]} px, "
                      f"worst: {', '.join(n.split()[1] + f' {v}' for v, n in sorted(vals)[:4])}")
