"""The site on a phone and on a desktop, measured in Chromium: the table of issue 39.

``python -m tools.measure.phone [SITE] [--lang zh|en] [--pages PAGE ...]`` serves a built site (``site/`` by
default) the way the browser tests do (under ``/selfattn/``, with the real search index), and loads each page
cold (a new browser context: empty cache) at 390 x 844 (touch) and at 1280 x 900. For each it prints:

* **fig in** / **fig big**: the smallest text of the page's figures in CSS pixels, inline and enlarged (each
  figure's Enlarge button, then the text in the dialog). A lab plot drawn as a PNG (before the labs drew SVG
  figures) has no text to measure: it is estimated from the rule of ``selfattn.plot.show`` of then (text of
  11 px in a 676 px column) and marked ``~``;
* **math**: display formulas wider than their box (they scroll), then, in brackets, those of them without a
  scroll cue (a fade: a CSS mask at the edge) or not reachable by keyboard: the ones clipped silently;
* **code**: code blocks and tables (collapsed blocks opened) that scroll sideways without a cue, of those that
  scroll, of all;
* **axe**: axe-core's serious and critical nodes, light / dark palette (the collapsed blocks open, as the
  browser tests run it);
* **KB**: the bytes of the cold load (every response's body as this server sends it, uncompressed), and
  ``gz``: the same with each text response gzipped (level 6), as GitHub Pages would send it;
* **ms**: the load event, from navigation start. It depends on the machine's load: the table prints
  ``os.getloadavg()`` with it. Compare times only within one run.

``SCROLLERS`` is what ``tests/site/test_browser.py`` asserts on at 390 px, and ``SHOWN_SVG`` is the figure test's
(``tools/measure/figure_text.py``). The rows are written to ``reports/phone.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "tools" / "npm" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
# The pages of the acceptance table: the preface, chapters 1, 3, 4, 5, 8.3, 8.5 and 10, a lab and the explorer.
PAGES = ["index.md", "01-problem.md", "03-qkv-formula.md", "04-why-sqrt-dk.md", "05-implementation.md",
         "08-long-sequences.md", "08-triton.md", "10-capstone.md", "labs/scaling.py", "explorer.md"]
SHORT = {"index.md": "preface", "01-problem.md": "ch1", "03-qkv-formula.md": "ch3", "04-why-sqrt-dk.md": "ch4",
         "05-implementation.md": "ch5", "08-long-sequences.md": "8.3", "08-triton.md": "8.5",
         "10-capstone.md": "ch10", "labs/scaling.py": "lab (scaling)", "explorer.md": "explorer"}
TEXT_TYPES = ("text/", "application/json", "application/javascript", "image/svg+xml", "application/xml")
PNG_RULE = (11.0, 676.0)  # selfattn.plot.show before SVG: text of 11 px when the PNG is shown 676 px wide

# The smallest text of an SVG on screen, in CSS pixels: each <text> (and each <tspan> of matplotlib's math text) at
# its computed font size times the scale of its screen transform.
SVG_MIN_TEXT = """(svg) => {
  let min = Infinity, minText = '';
  for (const t of svg.querySelectorAll('text')) {
    const s = t.textContent.replace(/\\s+/g, ' ').trim();
    const ctm = t.getScreenCTM();
    if (!s || !ctm) continue;
    for (const run of [t, ...t.querySelectorAll('tspan')]) {
      if (![...run.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      const px = parseFloat(getComputedStyle(run).fontSize) * Math.hypot(ctm.a, ctm.b);
      if (px < min) { min = px; minText = s; }
    }
  }
  return {min: min === Infinity ? null : Math.round(min * 10) / 10, text: minText.slice(0, 30)};
}"""

# Per figure on the page: its id, the smallest text of the SVG shown inline, and whether a PNG (a lab plot of old).
FIGURES_INLINE = """() => {
  const shown = (SHOWN_SVG), minText = (SVG_MIN_TEXT);
  const out = [];
  for (const f of document.querySelectorAll('figure.sa-figure')) {
    const svg = shown(f);
    out.push({id: f.id, ...(svg ? minText(svg) : {min: null, text: ''}),
              width: svg ? Math.round(svg.getBoundingClientRect().width) : 0});
  }
  for (const img of document.querySelectorAll('.jupyter-wrapper .jp-OutputArea img[src^="data:image/png"]')) {
    if (img.closest('figure.sa-figure')) continue;
    const shownWidth = img.getBoundingClientRect().width;
    const natural = parseFloat(img.getAttribute('width')) || img.naturalWidth / 2;
    out.push({id: 'png', png: true, width: Math.round(shownWidth),
              min: Math.round(PNG_RULE_PX * shownWidth / Math.min(natural, PNG_RULE_COLUMN) * 10) / 10});
  }
  return out;
}"""

# Each figure's Enlarge button in turn: the smallest text of the SVG in the dialog, whether the dialog shows the
# figure's caption, whether the figure fits the screen's width (no panning sideways), then the dialog closed.
FIGURES_ENLARGED = """async () => {
  const minText = (SVG_MIN_TEXT);
  const out = [];
  for (const f of document.querySelectorAll('figure.sa-figure')) {
    const button = f.querySelector('.sa-figure-zoom');
    if (!button) { out.push({id: f.id, min: null, error: 'no Enlarge button'}); continue; }
    button.click();
    const dialog = document.querySelector('dialog.sa-figure-dialog');
    const svg = dialog && dialog.open && dialog.querySelector('svg');
    if (!svg) { out.push({id: f.id, min: null, error: 'no dialog with the figure'}); continue; }
    const pane = dialog.querySelector('.sa-figure-dialog__pane');
    const caption = dialog.querySelector('.sa-figure-dialog__caption');
    out.push({id: f.id, ...minText(svg), pans: pane.scrollWidth > pane.clientWidth + 1,
              caption: !!(caption && caption.textContent.trim() && caption.getClientRects().length),
              width: Math.round(svg.getBoundingClientRect().width)});
    dialog.querySelector('.sa-figure-dialog__close').click();
    await new Promise((r) => setTimeout(r, 20));
  }
  return out;
}"""

# The display formulas, the code blocks and the tables (collapsed blocks opened first) that scroll sideways: for each, whether
# it has a cue (a CSS mask at its edge, as assets/javascripts/scroll-cue.js sets) and whether it takes focus.
SCROLLERS = """() => {
  document.querySelectorAll('article details').forEach((d) => { d.open = true; });
  const cue = (e) => { const s = getComputedStyle(e);
    return [s.maskImage, s.webkitMaskImage].some((m) => m && m !== 'none'); };
  const row = (e) => ({text: e.textContent.trim().split('\\n')[0].slice(0, 50), scroll: e.scrollWidth,
                       client: e.clientWidth, cue: cue(e), focusable: e.tabIndex >= 0});
  const over = (e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1;
  const math = [...document.querySelectorAll('article div.arithmatex')];
  const code = [...document.querySelectorAll('article pre > code, article .jupyter-wrapper pre')];
  const tables = [...document.querySelectorAll('article .md-typeset__scrollwrap')];
  return {math: math.length, mathOver: math.filter(over).map(row),
          code: code.length, codeOver: code.filter(over).map(row),
          tables: tables.length, tableOver: tables.filter(over).map(row)};
}"""

MATH_DONE = """() => [...document.querySelectorAll('.arithmatex')].every((e) => e.querySelector('.katex'))"""
# axe-core's serious and critical violations (all its rules), colour transitions off first.
AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' '))}));
}"""

NO_FADE = """() => {
  if (document.getElementById('sa-no-fade')) return;
  const style = document.createElement('style');
  style.id = 'sa-no-fade';
  style.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';
  document.head.appendChild(style);
}"""


def js(snippet: str) -> str:
    """A snippet with the shared pieces (``(SHOWN_SVG)``, ``(SVG_MIN_TEXT)``, the PNG rule) filled in."""
    from tools.measure.figure_text import SHOWN_SVG

    return (snippet.replace("(SHOWN_SVG)", f"({SHOWN_SVG})").replace("(SVG_MIN_TEXT)", f"({SVG_MIN_TEXT})")
            .replace("PNG_RULE_PX", str(PNG_RULE[0])).replace("PNG_RULE_COLUMN", str(PNG_RULE[1])))


def serious_nodes(violations: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """axe's serious and critical nodes: their count, and the rules with their counts."""
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    return sum(len(v["nodes"]) for v in bad), [f"{v['id']} {len(v['nodes'])}" for v in bad]


def measure(browser: Any, url: str, viewport: dict[str, int], axe: Path | None) -> dict[str, Any]:
    """One cold load of ``url`` at ``viewport``, and everything the table prints about it."""
    phone = viewport["width"] < 600
    context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, device_scale_factor=1,
                                  color_scheme="light", locale="zh-CN")
    page = context.new_page()
    responses: list[Any] = []
    context.on("response", lambda r: responses.append(r))  # the workers' requests too
    started = time.perf_counter()
    page.goto(url, wait_until="load", timeout=120_000)
    try:
        page.wait_for_load_state("networkidle", timeout=15_000)  # what the page loads after its load event
    except Exception:  # a page that keeps loading is measured as it is
        pass
    wall = time.perf_counter() - started
    load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    raw = gz = 0
    files = []
    for r in responses:
        try:
            body = r.body()
        except Exception:  # a redirect or an aborted request has no body
            continue
        kind = r.headers.get("content-type", "")
        packed = len(gzip.compress(body, 6)) if kind.startswith(TEXT_TYPES) else len(body)
        raw, gz = raw + len(body), gz + packed
        files.append((len(body), r.url.split("/selfattn/", 1)[-1]))
    page.wait_for_function(MATH_DONE, timeout=60_000)
    page.evaluate("document.fonts.ready.then(() => true)")
    row: dict[str, Any] = {"width": viewport["width"], "load_ms": round(load_ms), "wall_s": round(wall, 2),
                           "bytes": raw, "gzip": gz, "largest": sorted(files, reverse=True)[:3]}
    inline = page.evaluate(js(FIGURES_INLINE))
    enlarged = page.evaluate(js(FIGURES_ENLARGED))
    row["figures"] = len(inline)
    row["fig_inline"] = min((f["min"] for f in inline if f["min"] is not None), default=None)
    row["fig_inline_png"] = any(f.get("png") for f in inline)
    row["fig_enlarged"] = min((f["min"] for f in enlarged if f["min"] is not None), default=None)
    row["fig_rows"] = [{"id": f["id"], "inline": f["min"], "enlarged": e.get("min") if e else None,
                        "pans": e.get("pans") if e else None, "caption": e.get("caption") if e else None}
                       for f, e in zip(inline, enlarged + [None] * (len(inline) - len(enlarged)), strict=True)]
    scroll = page.evaluate(SCROLLERS)
    row["math"], row["math_over"] = scroll["math"], len(scroll["mathOver"])
    row["math_silent"] = sum(not (m["cue"] and m["focusable"]) for m in scroll["mathOver"])
    blocks = scroll["codeOver"] + scroll["tableOver"]  # code blocks and tables
    row["code"], row["code_over"] = scroll["code"] + scroll["tables"], len(blocks)
    row["code_silent"] = sum(not m["cue"] for m in blocks)
    row["code_unfocusable"] = sum(not m["focusable"] for m in blocks)
    if axe is not None:
        page.add_script_tag(path=str(axe))
        page.evaluate(NO_FADE)
        for palette, scheme in (("light", "default"), ("dark", "slate")):
            page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
            row[f"axe_{palette}"], row[f"axe_{palette}_rules"] = serious_nodes(page.evaluate(AXE_RUN))
    context.close()
    return row


def cell(value: Any, png: bool = False) -> str:
    if value is None:
        return "–"
    return f"~{value}" if png else str(value)


def table(rows: dict[str, list[dict[str, Any]]]) -> str:
    """The Markdown table: one line per page and width."""
    head = ("| page | width | fig in (px) | fig big (px) | math over (silent) | code no cue / scrolling "
            "| axe light / dark | KB (gz) | load ms |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for src, measured in rows.items():
        for r in measured:
            axe = f"{r.get('axe_light', '–')} / {r.get('axe_dark', '–')}"
            lines.append(
                f"| {SHORT.get(src, src)} | {r['width']} | {cell(r['fig_inline'], r['fig_inline_png'])} "
                f"| {cell(r['fig_enlarged'])} | {r['math_over']}/{r['math']} ({r['math_silent']}) "
                f"| {r['code_silent']} / {r['code_over']} of {r['code']} | {axe} "
                f"| {r['bytes'] // 1024} ({r['gzip'] // 1024}) | {r['load_ms']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from tools.testing.browser import SiteHandler, chromium_path, launch, page_url, serve

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "site"))
    parser.add_argument("--lang", choices=("zh", "en"), default="zh")
    parser.add_argument("--pages", nargs="*", default=PAGES)
    parser.add_argument("--no-axe", action="store_true", help="leave axe-core out (it takes seconds a page)")
    parser.add_argument("--json", default=str(ROOT / "reports" / "phone.json"))
    parser.add_argument("--table", help="print the table of an earlier run's JSON, and measure nothing")
    args = parser.parse_args(argv)
    if args.table:
        earlier = json.loads(Path(args.table).read_text(encoding="utf-8"))
        print(f"site {earlier['site']}, edition {earlier['lang']}; load average {earlier['loadavg'][0][0]:.2f} before, "
              f"{earlier['loadavg'][1][0]:.2f} after\n")
        print(table(earlier["rows"]))
        return 0
    site = Path(args.site).resolve()
    axe = None if args.no_axe or not AXE.exists() else AXE
    prefix = "en/" if args.lang == "en" else ""
    rows: dict[str, list[dict[str, Any]]] = {}
    load = os.getloadavg()
    with serve(site, SiteHandler) as url, launch(chromium_path()) as browser:
        for src in args.pages:
            rows[src] = [measure(browser, url + page_url(prefix + src), vp, axe) for vp in (PHONE, DESKTOP)]
            print(f"{src}: measured", file=sys.stderr, flush=True)
    after = os.getloadavg()
    print(f"site {site}, edition {args.lang}; load average {load[0]:.2f} before, {after[0]:.2f} after "
          f"(1 min; {os.cpu_count()} CPUs)\n")
    print(table(rows))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"site": str(site), "lang": args.lang, "loadavg": [load, after], "rows": rows},
                              indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
