"""Measure the text of the book's figures as a reader sees it, in Chromium: its size, overlaps and contrast.

The figures are inline SVG drawn by matplotlib (``tools/site/figures.py``); their text is real text, which the page
shows at the figure's scale. Every page with a figure is loaded once per edition, and every figure on it is measured
(``tests/site/test_figure_text.py`` fails on any problem):

* at a 1280 px wide window, where a figure shows at its natural size up to the 748 px text column, the smallest text
  (computed font size times the scale of ``getScreenCTM``) is at least 11 px (``selfattn.plot`` writes 9 pt, 12 px,
  and 8.5 pt in cells);
* at a 390 px window (a phone) the column is 358 px, where a 7 in figure would shrink to about half: the page shows
  the figure's narrow variant instead (drawn by the build, ``tools/site/figures.py``), whose smallest text is at
  least 9 px there. The reader can tap it, and ``docs/assets/javascripts/figure-zoom.js`` opens it full screen,
  with its caption. There, in the enlarged state, its smallest text is at least 11 px, a narrow variant that fits the
  screen's width at its natural size (a stacked figure, 3.8 in, as figure 3.3) does not pan sideways, and the dialog
  closes again;
* at both widths, inline and enlarged, no two text boxes of a figure overlap (by more than ``OVERLAP_PX`` in both
  directions), as "head 0head 1head 2" once did;
* at 1280, in the light and the dark palette, text on the page's background stands out from it by 4.5:1
  (``FIGURE_TEXT``, which tests/site/test_browser.py runs on the accessibility sample too);
* a Chinese caption is upright: Material sets captions in italic, which a CJK font lacks and the browser fakes.

A failure names the page, the figure, the width and the text. What was measured (per figure: the smallest text at
1280, inline at 390 and enlarged at 390) is written to ``reports/figure-text.json`` by the test;
``python -m tools.measure.figure_text SITE`` measures any built site (one without the enlarging script reports the
inline size at 390) and prints it.
The pages are visited in the browser's one tab (``visit`` of ``tools/testing/browser.py``): a page costs one load.
The labs' figures (drawn by ``selfattn.plot.show``) are measured as the chapters' are. Of a figure's variants, the
one on screen is measured (``SHOWN_SVG``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tools.book.tangle import load_config, nav_entries
from tools.site.figures import find
from tools.testing.browser import EN, ROOT, EmptySearchHandler, chromium_path, launch, page_url, serve, source, visit

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


# The SVG a reader sees of a figure: of its variants (wide, narrow), the one its media query shows.
SHOWN_SVG = """(f) => [...f.querySelectorAll(':scope > svg')].find((s) => s.getClientRects().length)
  || f.querySelector('svg')"""


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
    const shown = f.querySelector(':scope > svg.sa-figure__narrow');
    m.fits = !!shown && shown.width.baseVal.value <= pane.clientWidth - 16;  // its natural size fits the screen
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


# The text of the figures (inline SVG drawn by matplotlib; axe does not read it): each <text> that no shape of its
# figure lies under is on the page's background, and must stand out from it by 4.5:1 in either palette. Text in the
# book's ink (selfattn.plot.INK, drawn as currentColor) is the page's text colour; a label in a colour of its own
# (a head's colour) was 3.1:1 in the light palette and 3.6:1 in the dark one. Text on a cell of a heatmap is black or
# white, whichever stands out more (selfattn.plot.text_color), and is counted, not measured. Which text lies on the
# background does not change with the palette: with ``again``, the texts found by the last call are measured in the
# palette now shown, without scrolling and hit-testing every text again (half of the call on a chapter with 10 figures).
FIGURE_TEXT = """([min, again]) => {
  const rgba = (c) => { const m = (c || '').match(/[\\d.]+/g); if (!m) return null;
    const v = m.map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const lin = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const over = (fg, a, bg) => fg.slice(0, 3).map((x, i) => a * x + (1 - a) * bg[i]);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  let bg = rgba(getComputedStyle(document.body).backgroundColor);
  if (!bg || bg[3] === 0) bg = [255, 255, 255, 1];
  if (!again || !window.__saOnBackground) {
    const found = {texts: [], onShapes: 0};
    for (const figure of document.querySelectorAll('figure.sa-figure')) {
      const svg = (SHOWN_SVG)(figure);
      if (!svg) continue;
      figure.scrollIntoView({block: 'center'});
      for (const text of svg.querySelectorAll('text')) {
        let r = text.getBoundingClientRect();
        if (!r.width || !r.height) continue;
        if (r.top < 0 || r.bottom > innerHeight) {  // a figure taller than the screen: what lies under is found on screen
          window.scrollBy(0, r.top - innerHeight / 2);
          r = text.getBoundingClientRect();
        }
        const under = document.elementsFromPoint(r.x + r.width / 2, r.y + r.height / 2)
          .filter((e) => e !== text && !text.contains(e) && svg.contains(e) && e !== svg
                  && !['g', 'text', 'tspan', 'defs', 'clipPath'].includes(e.localName));
        if (under.length) found.onShapes++;
        else found.texts.push([figure.id, text]);
      }
    }
    window.scrollTo(0, 0);
    window.__saOnBackground = found;
  }
  const found = window.__saOnBackground;
  const out = {checked: 0, onShapes: found.onShapes, low: []};
  for (const [figure, text] of found.texts) {
    const style = getComputedStyle(text);
    const fill = rgba(style.fill);
    if (!fill) continue;
    const alpha = fill[3] * Number(style.fillOpacity || 1) * Number(style.opacity || 1);
    const c = ratio(over(fill, alpha, bg), bg);
    out.checked++;
    if (c < min) out.low.push({figure, text: text.textContent.trim().slice(0, 30), fill: style.fill,
                               bg: `rgb(${bg.slice(0, 3).join(', ')})`, ratio: Math.round(c * 100) / 100});
  }
  return out;
}"""
FIGURE_TEXT_MIN = 4.5
MEASURE = MEASURE.replace("(SHOWN_SVG)", f"({SHOWN_SVG})")
FIGURE_TEXT = FIGURE_TEXT.replace("(SHOWN_SVG)", f"({SHOWN_SVG})")


# The palette is switched by its attribute (what material's toggle sets), with material's colour fade off: the colours
# read are the palette's at once, not a frame of the fade (the toggle itself is tested in tests/site/test_browser.py).
NO_FADE = """() => {
  const style = document.createElement('style');
  style.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';
  document.head.appendChild(style);
}"""


def measure_page(page: Any) -> dict[str, Any]:
    """One loaded page: its figures at 1280 (both palettes' contrast) and at 390 (inline and enlarged). The page is
    left at 390 px, in the light palette."""
    page.evaluate("document.fonts.ready.then(() => true)")
    wide = page.evaluate(MEASURE, OVERLAP_PX)
    contrast = []
    page.evaluate(NO_FADE)
    for palette, scheme in (("light", "default"), ("dark", "slate")):
        page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
        contrast += [f"{palette} palette: {t['figure']} {t['text']!r} in {t['fill']} on {t['bg']}: {t['ratio']}:1"
                     for t in page.evaluate(FIGURE_TEXT, [FIGURE_TEXT_MIN, scheme == "slate"])["low"]]
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'default')")  # the light palette again
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
        if f["narrow"] and f["fits"] and f["pans"]:
            problems.append(f"{f['id']} at 390 px, enlarged: its narrow variant pans, though it fits the screen")
    return problems


def summary(measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per figure (``zh fig-3-2``, ``en fig-3-2``): its smallest text at 1280, inline at 390 and enlarged at 390."""
    rows = {}
    for src, m in measured.items():
        lang = "en" if src.startswith(EN) else "zh"
        for wide, narrow, big in zip(m["wide"], m["narrow"], m["enlarged"], strict=True):
            rows[f"{lang} {wide['id']}"] = {"1280": wide["min"], "390": narrow["min"],
                                            "390 enlarged": big["min"] if big and "min" in big else None}
    return rows


def main() -> None:
    """python -m tools.measure.figure_text [SITE]: measure a built site, print the table."""
    site = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "site").resolve()
    measured = {}
    with serve(site, EmptySearchHandler) as url, launch(chromium_path()) as b:
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


if __name__ == "__main__":
    main()
