"""The attention explorer (``docs/explorer.md``) in Chromium, against ``CharLM`` in PyTorch.

Its forward pass is a JavaScript twin of ``CharLM`` (``docs/javascripts/explorer-twin.js``) on the
float16 weights that ``tools/data/explorer_export.py`` exported from each edition's checkpoint. Each
edition's page is loaded once; one ``page.evaluate`` runs the twin on all the prompts (at least 20
per edition, lengths 1 to ``block_size``), and the logits and every layer's attention weights must
match PyTorch in float32 within ``TOL``. A failure names the layer where the two part. In the same
page: the KV-cache steps of "generate", top-k sampling, the float16 decoder, the scale selector, and
what the page itself shows after its own updates (scale, temperature, layer and head set through its
controls: its logits, each bar's percentage and each heatmap cell, against PyTorch at that scale and
temperature); the keyboard path through the controls, top-k's validation, the screen reader's live
regions, the presets, the layout at 1280 x 800 and 390 x 844, no console error and no request to
any other host. Also in the same load: the step view (the q, scores, scaled scores and weights behind
the selected row, against PyTorch within ``TOL``); chapter 3's worked example (every query, and the
page after edits of W_q and W_k, against PyTorch within ``EXAMPLE_TOL``, and what it prints against
what the chapter prints); and the onboarding (the first preset applied on opening, no unexplained
jargon on the first screen, no "left" or "right" in the intro, a guide that mentions tapping, a tapped
cell that shows its value, targets of at least 24 px at 390 px, a focus ring on the temperature
slider, the book's colormap). The Chinese page is reached from chapter 3's link, which opens the
worked example (the model is loaded only when the reader switches to it); the English page opens
on the model, and ``?mode=example`` is loaded once more at the end.

Each keystroke's update time is measured in the page (``performance.now()`` around the update)
and printed with the largest differences and the layout (``reports/explorer-report.json``); times are
never asserted. Screenshots of both editions at 1280 x 800 (and the whole page) and at 390 x 844
with the heatmap, the step view and the worked example in view go to
``reports/screenshots/explorer-*.jpg`` (in CI, or with ``SELFATTN_SCREENSHOTS=1``: tests/site/test_browser.py,
SHOTS).
"""

from __future__ import annotations

import contextlib

import base64
import json
import math
import random
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from selfattn import example, plot
from selfattn.functional import scaled_dot_product_attention
from selfattn.model import next_logits
from tests.site.test_browser import (EN, SCREENSHOTS, base_url, browser, check_accessibility, chromium,  # noqa: F401
                                shoot, visit)
from tools.book.tangle import parse_fences
from tools.data.explorer_book import CHAPTER, labels
from tools.data.explorer_export import CHECKPOINTS, load_model, sha256

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "explorer-report.json"
TOL = 1e-4  # float32, max abs difference, logits and attention weights (and the step view)
EXAMPLE_TOL = 1e-6  # chapter 3's worked example: every number the page computes, against PyTorch
N_PROMPTS = 22
EDITIONS = {"zh": "", "en": EN}
# Text for the prompts: each edition's chapters (only the characters of its vocabulary are kept).
SOURCES = {lang: sorted(p for p in (ROOT / "docs").glob("[0-9]*.md") if p.name.endswith(".en.md") == (lang == "en"))
           for lang in ("zh", "en")}
CONTROLS = ["ex-text", "ex-temp", "ex-topk", "ex-generate", "ex-tok", "ex-preset", "ex-layer", "ex-head", "ex-scale",
            "ex-zoom", "ex-describe"]
HEADER = 48  # material's header (2.4rem), over the top of the viewport
TARGET = 24  # px: the smallest touch target (WCAG 2.2, 2.5.8 target size, minimum)
# What the page shows after its own updates, read from the page: the logits it computed, each bar
# (its character and the percentage it prints) and the heatmap's cells (the canvas's pixels, RGBA).
SHOWN_JS = """() => {
  const page = window.explorerPage, v = page.heat, c = document.getElementById('ex-heat');
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height), d = v.dpr;
  const rgb = (x, y) => { const o = 4 * (Math.floor(y * d) * px.width + Math.floor(x * d)); return [...px.data.slice(o, o + 4)]; };
  const rows = [];  // per shown row: the "earlier" cell (or null), then one cell per shown key
  for (let r = 0; r < v.k; r++) {
    const y = v.y0 + r * v.rh + v.rh / 2;
    rows.push({earlier: v.earlier ? rgb(v.label + v.cw / 2, y) : null,
               cells: Array.from({length: v.k}, (_, j) => rgb(v.x0 + j * v.cw + v.cw / 2, y))});
  }
  const u = new Uint8Array(page.run.logits.buffer, page.run.logits.byteOffset, page.run.logits.byteLength);
  return {logits: btoa(String.fromCharCode(...u)), ids: page.ids, start: v.start, k: v.k, layer: v.layer, head: v.head,
          rows, bars: [...document.querySelectorAll('#ex-bars li')].map((li) => ({
            c: li.children[0].textContent, p: parseFloat(li.children[2].textContent)}))};
}"""
# The top, bottom, left and right of the page's parts, in the viewport.
RECTS_JS = """() => Object.fromEntries(['ex-text', 'ex-bars', 'ex-heat', 'ex-topk'].map((id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  return [id, {top: r.top, bottom: r.bottom, left: r.left, right: r.right}];
}).concat([['topk-label', (() => { const r = document.querySelector("label[for='ex-topk']").getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; })()]]))"""


def prompts(lang: str, chars: str, block_size: int) -> list[list[int]]:
    """N_PROMPTS id lists: lengths 1, 2, 3, block_size and others between, from the edition's pages,
    and one of random ids (rare characters too)."""
    index = {c: i for i, c in enumerate(chars)}
    text = "".join(p.read_text(encoding="utf-8") for p in SOURCES[lang])
    ids = [index[c] for c in text if c in index]
    rng = random.Random(0)
    lengths = [1, 2, 3, block_size, block_size - 1] + [rng.randint(4, 32) for _ in range(N_PROMPTS - 6)]
    out = []
    for n in lengths:
        s = rng.randrange(len(ids) - n)
        out.append(ids[s : s + n])
    out.append([rng.randrange(len(chars)) for _ in range(block_size)])
    return out


def decode(b64: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4").reshape(shape)


@torch.no_grad()
def reference(model: Any, ids: list[int]) -> dict[str, Any]:
    """CharLM's logits (n, V), each layer's attention weights (h, n, n) and block output (n, d), and
    each layer's attention input (the output of LN1)."""
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    hooks = [b.attn.register_forward_pre_hook(lambda m, args: inputs.append(args[0])) for b in model.blocks]
    hooks += [b.register_forward_hook(lambda m, args, out: outputs.append(out)) for b in model.blocks]
    try:
        logits = model(torch.tensor([ids]))[0]
    finally:
        for h in hooks:
            h.remove()
    # The weights of the explicit path (need_weights=True) on the very inputs the model's attention saw.
    attn = [b.attn(x, is_causal=True, average_attn_weights=False)[1][0] for b, x in zip(model.blocks, inputs, strict=True)]
    return {"logits": logits, "attn": attn, "hidden": [o[0] for o in outputs], "inputs": inputs}


# Runs in the page: the twin on every prompt, the KV-cache steps, sampling and the scales.
TWIN_JS = """async ({prompts, steps, erfX}) => {
  const page = window.explorerPage, m = page.model, T = window.CharLMTwin;
  const b64 = (a) => {  // a Float32Array as base64 (little-endian: the machine's order, checked below)
    const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    let s = '';
    for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
    return btoa(s);
  };
  const runs = prompts.map((ids) => {
    const r = m.forward(ids);
    return {logits: b64(r.logits), attn: r.attn.map(b64), hidden: r.hidden.map(b64)};
  });
  // Teacher-forced KV-cache steps (as "generate" takes them), past block_size.
  let cache = null;
  const stepLogits = [];
  for (let t = steps.start; t <= steps.ids.length; t++) {
    const r = m.next(steps.ids.slice(0, t), cache);
    cache = r.cache;
    stepLogits.push(b64(r.logits));
  }
  // Typing prompt 3 character by character, then two backspaces and one other character: each
  // update reuses the rows that did not change (as the page does on each keystroke).
  const typed = prompts[3], edited = typed.slice(0, -2).concat(prompts[0]);
  let run = null;
  for (let i = 1; i <= typed.length; i++) run = m.update(run, typed.slice(0, i));
  run = m.update(m.update(run, typed.slice(0, -1)), typed.slice(0, -2));
  run = m.update(run, edited);
  const incremental = {ids: edited, logits: b64(run.logits), attn: run.attn.map(b64)};
  // Layer 1 at the three scales of the selector, on the first long prompt.
  const long = prompts[3], dh = m.dh;
  const scales = [1 / Math.sqrt(dh), 1, 1 / dh].map((s) => b64(m.forward(long, {scale: s}).attn[0]));
  // Top-k sampling at temperature 2 with k = 5, for 200 evenly spaced uniform numbers.
  const logits = m.forward(long, {lastOnly: true}).logits;
  const samples = [];
  for (let i = 0; i < 200; i++) samples.push(T.sample(logits, 2, 5, (i + 0.5) / 200));
  const half = b64(T.halfToFloat(Uint16Array.from({length: 65536}, (_, i) => i)));  // every float16
  return {runs, stepLogits, scales, samples, incremental, half, littleEndian: new Uint8Array(Uint16Array.of(1).buffer)[0] === 1,
          erf: erfX.map(T.erf), heads: m.heads, dh};
}"""


def tab_until(page: Any, want: str, limit: int) -> list[str]:
    """Press Tab until the focused element is ``want`` (an id, or ``ex-tok`` for a character); the ids seen."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = page.evaluate("() => { const e = document.activeElement; "
                            "return e.classList.contains('ex-tok') ? 'ex-tok' : e.id || e.tagName; }")
        seen.append(now)
        if now == want:
            return seen
    raise AssertionError(f"Tab never reached #{want} in {limit} presses: {seen}")


def part(ref: dict[str, Any], js: dict[str, Any]) -> list[tuple[str, float]]:
    """(stage, max abs difference) for each layer's attention weights and block output, in the
    order they are computed, then the logits: the first stage over TOL is where the two part."""
    rows = []
    for layer, (a, h) in enumerate(zip(ref["attn"], ref["hidden"], strict=True)):
        ja = decode(js["attn"][layer], tuple(a.shape))
        jh = decode(js["hidden"][layer], tuple(h.shape))
        rows.append((f"layer {layer + 1} attention weights", float(np.abs(ja - a.numpy()).max())))
        rows.append((f"layer {layer + 1} block output", float(np.abs(jh - h.numpy()).max())))
    jl = decode(js["logits"], tuple(ref["logits"].shape))
    rows.append(("logits", float(np.abs(jl - ref["logits"].numpy()).max())))
    return rows


@pytest.fixture(scope="module")
def explorer(browser: Any, base_url: str, site_dir: Path) -> dict[str, Any]:  # noqa: F811
    """Per edition: the model, the prompts, the twin's results and what the page did (one load each;
    the English page once more at ``?mode=example``).

    The session's browser (tests/site/test_browser.py): a second Playwright in the same thread fails."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    with contextlib.nullcontext(browser):
        for lang, prefix in EDITIONS.items():
            checkpoint = ROOT / CHECKPOINTS[lang]
            manifest = json.loads((site_dir / prefix / "explorer" / "charlm.json").read_text(encoding="utf-8"))
            assert manifest["checkpoint_sha256"] == sha256(checkpoint), (
                f"site/{prefix}explorer/ was exported from another checkpoint than {checkpoint.name}: "
                "rebuild the site (mkdocs build)")
            model, chars = load_model(checkpoint)
            bs = model.block_size
            ps = prompts(lang, chars, bs)
            steps = {"ids": ps[0] + ps[3][: bs + 4], "start": bs - 3}  # crosses block_size
            t0 = time.perf_counter()
            # Chinese: arrive from chapter 3's link, by material's instant navigation, in the worked
            # example; then switch to the model. English: open the page, on the model.
            first = "03-qkv-formula/" if lang == "zh" else "explorer/"
            with visit(browser, base_url + prefix + first) as (page, watch):
                if lang == "zh":
                    page.locator("article a[href$='explorer/?mode=example']").first.click()
                    page.wait_for_url("**/explorer/?mode=example")
                    page.wait_for_selector("#explorer[data-ready][data-mode=example]", timeout=20_000)
                    worked = use_example(page, lang)
                    page.locator("#ex-mode-model").check()
                page.wait_for_selector("#explorer[data-ready][data-mode=model]", timeout=20_000)
                opened = opening(page)
                t1 = time.perf_counter()
                erf_x = [i / 97 for i in range(-700, 701)]
                js = page.evaluate(TWIN_JS, {"prompts": ps, "steps": steps, "erfX": erf_x})
                t2 = time.perf_counter()
                ui = use_page(page, lang)
                if lang == "en":  # the switch, then the address that chapter 3 links to
                    page.set_viewport_size({"width": 1280, "height": 900})
                    page.locator("#ex-mode-example").check()
                    page.wait_for_selector("#explorer[data-ready][data-mode=example]")
                    worked = use_example(page, lang)
                    page.goto(base_url + prefix + "explorer/?mode=example", wait_until="load")
                    page.wait_for_selector("#explorer[data-ready][data-mode=example]", timeout=20_000)
                    worked["preloaded"] = preloaded(page)
                    page.set_viewport_size({"width": 390, "height": 844})  # (the page check runs axe at 1280, on the model)
                    worked["axe"] = check_accessibility(page)
            print(f"\nexplorer ({lang}): page ready {t1 - t0:.1f} s, twin on {len(ps)} prompts "
                  f"{t2 - t1:.1f} s, the page by keyboard {time.perf_counter() - t2:.1f} s")
            out[lang] = {"model": model, "chars": chars, "prompts": ps, "steps": steps, "js": js, "ui": ui,
                         "watch": watch, "erf": (erf_x, js["erf"]), "opened": opened, "example": worked}
    return out


# Whether the page in the worked example has loaded the model: it must not have (it waits for the switch).
PRELOADED_JS = """() => ({mode: document.getElementById('explorer').dataset.mode, model: window.explorerPage.model !== null,
  fetched: performance.getEntriesByType('resource').map((e) => e.name).filter((n) => /charlm\\.(json|bin)$/.test(n)),
  checked: document.querySelector("input[name='ex-mode']:checked").value, search: location.search})"""


def preloaded(page: Any) -> dict[str, Any]:
    return page.evaluate(PRELOADED_JS)


# The visible text of the page's content in the viewport (text nodes and the selects' chosen options).
FIRST_SCREEN_JS = """() => {
  const out = [], H = innerHeight, W = innerWidth, inView = (b) => b.width > 0 && b.bottom > 0 && b.top < H && b.right > 0 && b.left < W;
  const walker = document.createTreeWalker(document.querySelector('.md-content'), NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    if (!n.textContent.trim() || n.parentElement.closest('.ex-sr')) continue;
    const r = document.createRange();
    r.selectNodeContents(n);
    if ([...r.getClientRects()].some(inView)) out.push(n.textContent.trim());
  }
  document.querySelectorAll('.md-content select').forEach((s) => {
    if (s.selectedOptions[0] && inView(s.getBoundingClientRect())) out.push(s.selectedOptions[0].text);
  });
  return out.join(' ');
}"""


OPENING_JS = """() => ({preset: document.getElementById('ex-preset').value,
  note: document.getElementById('ex-preset-note').textContent, text: document.getElementById('ex-text').value,
  layer: +document.getElementById('ex-layer').value, head: +document.getElementById('ex-head').value,
  presets: window.explorerPage.presets, screen: (FIRST_SCREEN)(), status: document.getElementById('ex-status').textContent})
""".replace("FIRST_SCREEN", FIRST_SCREEN_JS)


def opening(page: Any) -> dict[str, Any]:
    """What the page shows when it opens on the model: the chosen preset, its note, the text, the
    layer and head, the presets, and the text of the first screen (1280 x 900, scrolled to the top)."""
    page.evaluate("() => window.scrollTo(0, 0)")
    return page.evaluate(OPENING_JS)


def use_page(page: Any, lang: str) -> dict[str, Any]:
    """Drive the page as a reader would, by keyboard; return what was seen (checked by the tests)."""
    ui: dict[str, Any] = {}
    page.locator("article a[href*='10-capstone']").first.focus()  # the link just above the explorer
    ui["tabs"] = tab_until(page, "ex-text", 5)
    page.keyboard.press("End")
    seen = []
    for want in CONTROLS[1:]:
        seen += tab_until(page, want, 12)
        if want == "ex-temp":  # reached by the keyboard: its focus ring
            ui["focus_ring"] = page.evaluate(FOCUS_RING_JS)
    ui["order"] = [s for s in seen if s in CONTROLS]
    summary = page.locator("#ex-summary").text_content()
    detail = page.locator("#ex-detail").text_content()
    page.locator(".ex-tok[tabindex='0']").focus()
    page.keyboard.press("ArrowLeft")  # the focused character: move the query one to the left
    ui["query_moved"] = page.evaluate("""() => {
      const e = document.activeElement, toks = [...document.querySelectorAll('.ex-tok')];
      return {focused: toks.indexOf(e), query: window.explorerPage.query, n: toks.length,
              selected: e.classList.contains('ex-query'), shaded: toks.filter((t) => +t.style.getPropertyValue('--w') > 0).length};
    }""")
    ui["detail_changed"] = page.locator("#ex-detail").text_content() != detail
    page.locator("#ex-scale").focus()
    page.keyboard.press("ArrowDown")  # scale: 1/sqrt(d_k) -> 1
    ui["scale"] = page.locator("#ex-scale").input_value()
    ui["summary_changed"] = page.locator("#ex-summary").text_content() != summary
    page.keyboard.press("ArrowUp")
    page.locator("#ex-temp").focus()
    page.keyboard.press("ArrowRight")
    ui["temp"] = page.locator("#ex-temp-value").text_content()
    ui["shown"] = shown(page)
    ui["steps"] = use_steps(page)
    ui["cmap"] = page.evaluate(CMAP_JS)
    ui["topk"] = use_topk(page)
    ui["announce"] = announce(page)
    ui["presets"] = use_presets(page)
    # Typing: one update per keystroke, each timed by the page.
    box = page.locator("#ex-text")
    box.focus()
    page.keyboard.press("End")
    before = page.evaluate("() => window.explorerPage.timings.length")
    typed = "的注意力权重" if lang == "zh" else " of a query"
    page.keyboard.type(typed)
    ui["timings"] = page.evaluate("() => window.explorerPage.timings")[before:]
    ui["typed"] = len(typed)
    # Past block_size the window moves with each keystroke: every position changes, all is recomputed.
    box.fill(typed * 12)
    page.keyboard.press("End")
    before = page.evaluate("() => window.explorerPage.timings.length")
    page.keyboard.type(typed[:3])
    ui["timings_moving_window"] = page.evaluate("() => window.explorerPage.timings")[before:]
    # Generate, by keyboard, from a short text (so that every step goes through the KV cache).
    box.fill(box.input_value()[:4])
    page.locator("#ex-generate").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => !window.explorerPage.generating")
    ui["generated"] = page.evaluate("() => [...document.getElementById('ex-text').value].length") - 4
    ui["focus_after_generate"] = page.evaluate("() => document.activeElement.id")
    page.select_option("#ex-preset", "0")  # the shots: as it opens
    page.set_viewport_size({"width": 1280, "height": 800})
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(200)  # the heatmap redraws on resize
    ui["wide"] = page.evaluate(RECTS_JS)
    shoot(page, f"explorer-{lang}-1280x800", full_page=False)
    shoot(page, f"explorer-{lang}-1280-full")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    page.evaluate("() => document.getElementById('ex-heat').scrollIntoView({block: 'end'})")
    page.wait_for_timeout(100)
    ui["narrow"] = page.evaluate("""() => ({scroll: document.documentElement.scrollWidth,
      client: document.documentElement.clientWidth, height: window.innerHeight, cell: window.explorerPage.heat.cw,
      labels: window.explorerPage.heat.cw >= 9,
      heat: document.getElementById('ex-heat').getBoundingClientRect().right})""")
    ui["narrow_rects"] = page.evaluate(RECTS_JS)
    ui["targets"] = page.evaluate(TARGETS_JS)
    ui["tap"] = tap_cell(page)
    shoot(page, f"explorer-{lang}-390x844", full_page=False)
    page.evaluate("() => document.getElementById('ex-steps').scrollIntoView({block: 'start'})")
    page.evaluate("() => window.scrollBy(0, -160)")  # under the header and the sticky text box
    page.wait_for_function("() => window.explorerPage.stepsPainted")
    shoot(page, f"explorer-{lang}-390-steps", full_page=False)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(100)
    ui["first_screen_390"] = page.evaluate(FIRST_SCREEN_JS)
    ui["intro"] = page.evaluate("() => document.querySelector('.md-content h1 + p').textContent")
    ui["guide"] = page.evaluate("""() => { let text = '';
      for (let e = document.getElementById('guide').nextElementSibling; e; e = e.nextElementSibling) text += e.textContent + ' ';
      return text; }""")
    return ui


# The page's colormap for weights, and the color of the character it colors most (with its weight).
CMAP_JS = """() => { const p = window.explorerPage, toks = [...document.querySelectorAll('.ex-tok')].filter((t) => t.style.backgroundColor);
  const w = (t) => +t.style.getPropertyValue('--w'), top = toks.reduce((a, b) => (w(b) > w(a) ? b : a));
  return {name: p.cmap.name, rgb: p.cmap.rgb, token: [getComputedStyle(top).backgroundColor.match(/[0-9.]+/g).slice(0, 3).map(Number), w(top)]}; }"""

# The focused element's outline (its focus ring), and the page's background behind it.
FOCUS_RING_JS = """() => { const e = document.activeElement, s = getComputedStyle(e);
  return {id: e.id, visible: e.matches(':focus-visible'), style: s.outlineStyle, width: parseFloat(s.outlineWidth),
          color: s.outlineColor, background: getComputedStyle(document.body).backgroundColor}; }"""

# The size of what a finger taps at 390 px: each character, each label of the mode switch, each row of
# the heatmap (its row height in CSS px, and the canvas drawn at 1:1).
TARGETS_JS = """() => {
  const size = (e) => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const v = window.explorerPage.heat, c = document.getElementById('ex-heat'), r = c.getBoundingClientRect();
  return {tokens: [...document.querySelectorAll('.ex-tok')].map(size), modes: [...document.querySelectorAll('.ex-mode label')].map(size),
          row: v.rh, rows: v.k, canvas: [r.width, r.height], drawn: [parseFloat(c.style.width), parseFloat(c.style.height)],
          expected: v.y0 + v.k * v.rh + 16};
}"""


def touch(page: Any, x: float, y: float) -> None:
    """A tap with a finger at (x, y) in the viewport: touch events, which the browser turns into a click."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    finally:
        cdp.detach()


def tap_cell(page: Any) -> dict[str, Any]:
    """Tap a cell of the heatmap (at 390 px: the second-to-last row, two columns left of its diagonal):
    which cell the page took, and what it shows."""
    page.evaluate("() => document.getElementById('ex-heat').scrollIntoView({block: 'end'})")
    page.wait_for_timeout(100)
    where = page.evaluate("""() => { const v = window.explorerPage.heat, r = document.getElementById('ex-heat').getBoundingClientRect();
      const row = v.k - 2, col = v.k - 4;
      return {x: r.left + v.x0 + (col + 0.5) * v.cw, y: r.top + v.y0 + (row + 0.5) * v.rh, i: v.start + row, j: v.start + col,
              layer: v.layer, head: v.head, ids: window.explorerPage.ids, scale: window.explorerPage.run.scale}; }""")
    touch(page, where["x"], where["y"])
    page.wait_for_function("() => window.explorerPage.cell !== null")
    return {**where, "cell": page.evaluate("() => window.explorerPage.cell"),
            "text": page.locator("#ex-cell").text_content(), "query": page.evaluate("() => window.explorerPage.query")}


# The page's controls in three settings: (scale, temperature, layer, head), as the selectors' values.
SETTINGS = [("sqrt", "1.5", "1", "2"), ("d", "0.7", "0", "1"), ("one", "1", "2", "3")]


def shown(page: Any) -> list[dict[str, Any]]:
    """Set the scale, the temperature, the layer and the head through the page's controls, and read
    what the page then shows (SHOWN_JS), for each of SETTINGS; then back to the defaults."""
    out = []
    for scale, temp, layer, head in SETTINGS:
        page.select_option("#ex-scale", scale)
        page.locator("#ex-temp").fill(temp)
        page.select_option("#ex-layer", layer)
        page.select_option("#ex-head", head)
        out.append({"scale": scale, "temp": float(temp), **page.evaluate(SHOWN_JS)})
    page.select_option("#ex-scale", "sqrt")
    page.locator("#ex-temp").fill("1")
    return out


# The step view in three settings: (scale, layer, head, how many characters before the last the query is).
STEP_SETTINGS = [("sqrt", "0", "3", 0), ("one", "2", "1", 5), ("d", "1", "2", 20)]
# What the step view shows: the numbers it holds (state.step), its title, q and the rows of its table.
STEPS_JS = """() => {
  const cells = (tr) => [...tr.children].map((c) => c.textContent.trim());
  return {step: window.explorerPage.step, ids: window.explorerPage.ids,
          title: document.getElementById('ex-steps-title').textContent,
          q: [...document.querySelectorAll('#ex-steps-vecs .ex-nums span')].map((e) => e.textContent),
          vecs: [...document.querySelectorAll('#ex-steps-vecs tbody tr')].map(cells),
          rows: [...document.querySelectorAll('#ex-steps-table tbody tr')].map(cells),
          bold: [...document.querySelectorAll('#ex-steps-table tbody tr')].map((tr) => tr.classList.contains('ex-best')),
          out: [...document.querySelectorAll('#ex-steps-out tbody tr')].map(cells),
          head: [...document.querySelectorAll('#ex-steps-table thead th')].filter((e) => e.offsetParent).map((e) => e.textContent)};
}"""


def read_steps(page: Any) -> dict[str, Any]:
    """STEPS_JS, with the step view scrolled into view (the page writes its table only there)."""
    page.evaluate("() => document.getElementById('ex-steps').scrollIntoView({block: 'nearest'})")
    page.wait_for_function("() => window.explorerPage.stepsPainted")
    return page.evaluate(STEPS_JS)


def use_steps(page: Any) -> list[dict[str, Any]]:
    """Set the scale, layer and head through the page's controls, click a character (the query), and
    read the step view, for each of STEP_SETTINGS; then back to the trained scale."""
    out = []
    for scale, layer, head, back in STEP_SETTINGS:
        page.select_option("#ex-scale", value=scale)
        page.select_option("#ex-layer", index=int(layer))  # (a value "2" would also match the label "2", layer 1's)
        page.select_option("#ex-head", index=int(head))
        toks = page.locator("#ex-tokens .ex-tok")
        toks.nth(max(0, toks.count() - 1 - back)).click()
        out.append({"scale": scale, **read_steps(page)})
    page.select_option("#ex-scale", "sqrt")
    return out


# Edits of the worked example, one after the other: (matrix, row, column, what is typed). The first
# lowers what "pronoun" looks for in "animal" (the guide: "it" then attends less to "cat").
EDITS = [("wq", 3, 0, "2"), ("wk", 3, 3, "1"), ("wq", 1, 1, "-1.5")]
EXAMPLE_JS = """() => { const e = window.explorerPage.ex;
  return {A: Array.from(e.A), wq: e.wq, wk: e.wk, tokens: e.tokens, features: e.features, n: e.n, dk: e.dk,
          inputs: [...document.querySelectorAll('#ex-wq input, #ex-wk input')].map((i) => [i.dataset.m, +i.dataset.r, +i.dataset.c, i.value]),
          query: window.explorerPage.query, detail: document.getElementById('ex-detail').textContent}; }"""


def example_queries(page: Any) -> list[dict[str, Any]]:
    """Click each token of the worked example (the query) and read the step view and the weights."""
    out = []
    toks = page.locator("#ex-tokens .ex-tok")
    for i in range(toks.count()):
        toks.nth(i).click()
        out.append({**read_steps(page), **page.evaluate(EXAMPLE_JS)})
    return out


def use_example(page: Any, lang: str) -> dict[str, Any]:
    """The worked example as a reader uses it: every query; the edits of EDITS through the inputs of
    W_q and W_k (every query after each); an entry that is not a number; "Chapter 3's values"; a tapped
    cell; the sizes of its inputs. Before any of it, what it opened with."""
    ex: dict[str, Any] = {"opened": {**preloaded(page), **page.evaluate(EXAMPLE_JS)},
                          "status": page.locator("#ex-status").text_content()}
    ex["tokens"] = page.locator("#ex-tokens .ex-tok").all_text_contents()
    ex["queries"] = example_queries(page)
    ex["edits"] = []
    for m, r, c, value in EDITS:
        page.locator(f"#ex-{m} input[data-r='{r}'][data-c='{c}']").fill(value)
        ex["edits"].append({"edit": (m, r, c, value), "queries": example_queries(page)})
    box = page.locator("#ex-wq input[data-r='0'][data-c='0']")
    before = page.evaluate(EXAMPLE_JS)["A"]
    box.fill("")
    ex["invalid"] = {"aria": box.get_attribute("aria-invalid"), "same": page.evaluate(EXAMPLE_JS)["A"] == before}
    page.locator("#ex-reset").click()
    ex["reset"] = page.evaluate(EXAMPLE_JS)
    ex["inputs"] = page.evaluate("""() => [...document.querySelectorAll('#ex-wq input, #ex-wk input')].map((i) => {
      const r = i.getBoundingClientRect(); return [r.width, r.height]; })""")
    page.evaluate("() => document.getElementById('ex-heat').scrollIntoView({block: 'center'})")
    where = page.evaluate("""() => { const v = window.explorerPage.heat, r = document.getElementById('ex-heat').getBoundingClientRect();
      return {x: r.left + v.x0 + 1.5 * v.cw, y: r.top + v.y0 + 3.5 * v.rh}; }""")  # row 3, column 1
    page.mouse.click(where["x"], where["y"])
    ex["tap"] = {"cell": page.evaluate("() => window.explorerPage.cell"), "text": page.locator("#ex-cell").text_content(),
                 "A": page.evaluate(EXAMPLE_JS)["A"]}
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    page.evaluate("() => document.getElementById('ex-steps').scrollIntoView({block: 'start'})")
    page.evaluate("() => window.scrollBy(0, -60)")
    page.wait_for_function("() => window.explorerPage.stepsPainted")
    shoot(page, f"explorer-{lang}-390-example", full_page=False)
    page.set_viewport_size(size)
    return ex


def use_topk(page: Any) -> dict[str, Any]:
    """Each value typed into top-k: its message and aria-invalid; and whether "generate" ran on 2.5."""
    out: dict[str, Any] = {}
    box = page.locator("#ex-topk")
    vocab = page.evaluate("() => window.explorerPage.model.chars.length")
    for value in ["2.5", "0", "-1", "", "1.5", str(vocab + 1), "1", str(vocab), "10"]:
        box.fill(value)
        out[value] = {"message": page.locator("#ex-topk-error").text_content(),
                      "invalid": box.get_attribute("aria-invalid")}
    box.fill("2.5")
    before = page.locator("#ex-text").input_value()
    page.locator("#ex-generate").click()
    page.wait_for_timeout(100)
    out["generated_on_2.5"] = page.locator("#ex-text").input_value() != before
    box.fill("10")
    return {"vocab": vocab, "values": out}


def announce(page: Any) -> dict[str, Any]:
    """The live regions of the explorer, what the reader's own live region holds after hovering,
    and after pressing "read out"."""
    live = page.evaluate("""() => [...document.querySelectorAll('#explorer [aria-live], #explorer [role=status],'
      + ' #explorer [role=alert], #explorer [role=log]')].map((e) => e.id)""")
    page.hover(".ex-tok >> nth=0")
    quiet = page.locator("#ex-live").text_content()
    page.locator("#ex-describe").click()
    page.wait_for_function("() => document.getElementById('ex-live').textContent.length > 0")
    return {"live": sorted(live), "quiet": quiet, "said": page.locator("#ex-live").text_content(),
            "summary": page.locator("#ex-summary").text_content(), "detail": page.locator("#ex-detail").text_content()}


def use_presets(page: Any) -> dict[str, Any]:
    """Choose each preset in the page's list; what the text, layer, head and note then are."""
    seen = []
    for i, _ in enumerate(page.evaluate("() => window.explorerPage.presets")):
        page.select_option("#ex-preset", str(i))
        seen.append({"text": page.locator("#ex-text").input_value(), "layer": int(page.locator("#ex-layer").input_value()),
                     "head": int(page.locator("#ex-head").input_value()),
                     "note": page.locator("#ex-preset-note").text_content()})
    return {"seen": seen}


def reference_at(model: Any, ids: list[int], scale: float) -> dict[str, Any]:
    """CharLM's logits ``(n, V)`` and each layer's attention weights ``(h, n, n)`` with q k^T multiplied
    by ``scale`` in every layer (the page's scale selector), computed by chapter 5's explicit path."""
    with torch.no_grad():
        x = model.embed(torch.tensor([ids]))
        n, attn = len(ids), []
        for b in model.blocks:
            h, dh = b.attn.num_heads, b.attn.d_head
            q, k, v = b.attn.in_proj(b.ln1(x)).view(1, n, 3, h, dh).permute(2, 0, 3, 1, 4)
            out, w = scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
            x = x + b.attn.out_proj(out.transpose(1, 2).reshape(1, n, h * dh))
            x = x + b.ff(b.ln2(x))
            attn.append(w[0])
        return {"logits": model.head(model.ln(x))[0], "attn": attn}


@pytest.mark.parametrize("lang", EDITIONS)
def test_twin_computes_what_charlm_computes(explorer: dict[str, Any], lang: str) -> None:
    """Logits and every layer's attention weights, all prompts: max abs difference <= TOL in float32.
    Each block's output is held to TOL too, so that a failure names the layer where the two part."""
    e = explorer[lang]
    assert e["js"]["littleEndian"]
    assert len(e["prompts"]) >= 20
    worst: dict[str, float] = {}
    for p, (ids, js) in enumerate(zip(e["prompts"], e["js"]["runs"], strict=True)):
        rows = part(reference(e["model"], ids), js)
        for stage, diff in rows:
            worst[stage] = max(worst.get(stage, 0.0), diff)
        bad = [(stage, diff) for stage, diff in rows if diff > TOL]
        if bad:
            text = "".join(e["chars"][i] for i in ids)
            table = "\n  ".join(f"{s}: {d:.2e}" for s, d in rows)
            pytest.fail(f"{lang}: JS and PyTorch part at {bad[0][0]} (max abs difference {bad[0][1]:.2e} > "
                        f"{TOL:g}) on prompt {p} ({len(ids)} characters, {text[:40]!r}):\n  {table}")
    record(lang, "max_abs_difference", worst)


@pytest.mark.parametrize("lang", EDITIONS)
def test_keystrokes_reuse_the_rows_that_did_not_change(explorer: dict[str, Any], lang: str) -> None:
    """The page's update (typing, backspace, typing again) gives what CharLM gives on the final text."""
    e = explorer[lang]
    inc = e["js"]["incremental"]
    ref = reference(e["model"], inc["ids"])
    diffs = [float(np.abs(decode(b64, tuple(a.shape)) - a.numpy()).max())
             for b64, a in zip(inc["attn"], ref["attn"], strict=True)]
    diffs.append(float(np.abs(decode(inc["logits"], (len(e["chars"]),)) - ref["logits"][-1].numpy()).max()))
    assert max(diffs) <= TOL, f"{lang}: attention per layer, then the logits: {diffs}"


def test_float16_decoder_of_the_twin(explorer: dict[str, Any]) -> None:
    """The page reads float16 weights: each of the 65,536 bit patterns decodes as numpy's float16
    (zeros, subnormals, infinities and NaN included), exactly."""
    js = decode(explorer["zh"]["js"]["half"], (65536,))
    want = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    assert np.array_equal(js, want, equal_nan=True)
    real = ~np.isnan(want)
    assert np.array_equal(np.signbit(js[real]), np.signbit(want[real]))  # -0.0 too


def test_erf_of_the_twin(explorer: dict[str, Any]) -> None:
    """The twin's erf (GELU needs it; JavaScript has none) against Python's math.erf."""
    xs, ys = explorer["zh"]["erf"]  # interpolated: far below float32's resolution (6e-8 near 1)
    assert max(abs(y - math.erf(x)) for x, y in zip(xs, ys, strict=True)) < 1e-8


@pytest.mark.parametrize("lang", EDITIONS)
def test_generate_steps_through_the_kv_cache(explorer: dict[str, Any], lang: str) -> None:
    """The twin's cached steps give PyTorch's ``next_logits`` (also past block_size), and top-k
    sampling only draws from the k most likely ids."""
    e, model = explorer[lang], explorer[lang]["model"]
    ids, start = e["steps"]["ids"], e["steps"]["start"]
    cache, diffs = None, []
    with torch.no_grad():
        for t, b64 in zip(range(start, len(ids) + 1), e["js"]["stepLogits"], strict=True):
            logits, cache = next_logits(model, torch.tensor([ids[:t]]), cache)
            diffs.append(float(np.abs(decode(b64, (len(e["chars"]),)) - logits[0].numpy()).max()))
    assert len(diffs) > 4 and start + len(diffs) - 1 > model.block_size
    assert max(diffs) <= TOL, f"{lang}: cached step logits differ by {max(diffs):.2e} (per step: {diffs})"
    with torch.no_grad():
        top = model(torch.tensor([e["prompts"][3]]))[0, -1].topk(5)
    p = (top.values / 2).softmax(-1).tolist()  # temperature 2 over the 5 most likely ids
    samples = e["js"]["samples"]  # for u = (i + 0.5) / 200: id j about 200 p_j times
    counts = [samples.count(i) for i in top.indices.tolist()]
    assert sum(counts) == len(samples) == 200, (set(samples), top.indices)
    assert all(abs(c - 200 * q) <= 1 for c, q in zip(counts, p, strict=True)), (counts, p)
    record(lang, "kv_cache_steps_max_abs_difference", max(diffs))


@pytest.mark.parametrize("lang", EDITIONS)
def test_scale_selector(explorer: dict[str, Any], lang: str) -> None:
    """Layer 1 at 1/sqrt(d_k), 1 and 1/d_k equals PyTorch at that scale, and each row's entropy
    obeys no scaling <= 1/sqrt(d_k) <= 1/d_k (the same scores times a larger factor)."""
    e, model = explorer[lang], explorer[lang]["model"]
    ids = e["prompts"][3]
    x = reference(model, ids)["inputs"][0]
    attn, h, dh = model.blocks[0].attn, e["js"]["heads"], e["js"]["dh"]
    q, k, v = attn.in_proj(x).detach().view(1, len(ids), 3, h, dh).permute(2, 0, 3, 1, 4)
    entropies = []
    for s, b64 in zip((1 / math.sqrt(dh), 1.0, 1 / dh), e["js"]["scales"], strict=True):
        w = scaled_dot_product_attention(q, k, v, is_causal=True, scale=s)[1][0].numpy()
        js = decode(b64, w.shape)
        assert np.abs(js - w).max() <= TOL, f"{lang}: scale {s:g}: {np.abs(js - w).max():.2e}"
        entropies.append(-(js * np.log(np.where(js > 0, js, 1))).sum(-1))  # (h, n)
    trained, one, over_d = entropies
    assert (one <= trained + 1e-5).all() and (trained <= over_d + 1e-5).all()
    assert one.mean() < trained.mean() < over_d.mean()
    record(lang, "layer1_mean_row_entropy", {"1": float(one.mean()), "1/sqrt(d_k)": float(trained.mean()),
                                             "1/d_k": float(over_d.mean())})


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_page_is_usable(explorer: dict[str, Any], lang: str) -> None:
    """By keyboard (tab to every control, arrows on a character, Enter on generate), at 390 px wide,
    with no console error and no request to another host; each keystroke's update time is reported."""
    e = explorer[lang]
    ui, watch = e["ui"], e["watch"]
    assert ui["order"] == CONTROLS[1:], ui["order"]
    moved = ui["query_moved"]
    assert moved["focused"] == moved["query"] == moved["n"] - 2 and moved["selected"], moved
    assert moved["shaded"] >= 1 and ui["detail_changed"]
    assert ui["scale"] == "one" and ui["summary_changed"]
    assert ui["temp"] == "1.05"
    assert len(ui["timings"]) == ui["typed"], (len(ui["timings"]), ui["typed"])
    assert ui["generated"] == 60 and ui["focus_after_generate"] == "ex-generate"
    narrow = ui["narrow"]
    assert narrow["scroll"] <= narrow["client"] and narrow["heat"] <= narrow["client"], narrow
    assert not watch.errors, watch.errors
    assert not watch.external, watch.external
    assert not watch.failed, watch.failed
    assert len(ui["timings_moving_window"]) == 3
    for key in ("timings", "timings_moving_window"):
        t = ui[key]
        summary = {"keystrokes": len(t), "median_ms": round(statistics.median(t), 2), "max_ms": round(max(t), 2),
                   "load_average": os.getloadavg()[0]}
        record(lang, f"keystroke_update_{key.removeprefix('timings').strip('_') or 'within_window'}", summary)


def show(c: str) -> str:
    return {" ": "␣", "\n": "↵", "\t": "⇥"}.get(c, c)


def colormap() -> np.ndarray:
    """The book's colormap for weights (selfattn.plot.WEIGHTS_CMAP) at 0, 1/255, ..., 1, as matplotlib
    draws it: (256, 3) RGB from 0 to 255."""
    import matplotlib as mpl

    return np.round(mpl.colormaps[plot.WEIGHTS_CMAP](np.linspace(0, 1, 256))[:, :3] * 255)


COLORS = colormap()


def shade(rgba: list[int]) -> float | None:
    """The weight that a pixel of the heatmap shows: None for an empty (transparent) one, else k/255
    for the k-th color of the book's colormap, which the pixel must be exactly."""
    if rgba[3] == 0:
        return None
    distance = np.abs(COLORS - np.array(rgba[:3])).sum(-1)
    assert distance.min() == 0 and rgba[3] == 255, f"{rgba} is no color of {plot.WEIGHTS_CMAP}"
    return float(distance.argmin()) / 255


@pytest.mark.parametrize("lang", EDITIONS)
def test_what_the_page_shows_is_what_pytorch_computes(explorer: dict[str, Any], lang: str) -> None:
    """After the page's own updates (scale, temperature, layer and head set through its controls): its
    logits equal PyTorch's at the selected scale (1/sqrt(d_head), 1/d_head or 1) within TOL; each bar
    prints PyTorch's probability at the selected temperature (to the 0.1 % it shows), for the 10 most
    likely characters; and each cell of the heatmap has the color of PyTorch's weight in the book's
    colormap (to 1/255, its resolution), the "earlier" column the sum over the keys left out, and the
    masked cells none."""
    e, model = explorer[lang], explorer[lang]["model"]
    dh = model.blocks[0].attn.d_head
    scales = {"sqrt": 1 / math.sqrt(dh), "d": 1 / dh, "one": 1.0}
    ids = e["ui"]["shown"][0]["ids"]
    plain = reference_at(model, ids, scales["sqrt"])  # the reference itself: CharLM at the trained scale
    assert (plain["logits"] - reference(model, ids)["logits"]).abs().max() <= TOL
    worst = {"logits": 0.0, "bars": 0.0, "heatmap": 0.0}
    for view in e["ui"]["shown"]:
        assert view["ids"] == ids
        ref = reference_at(model, ids, scales[view["scale"]])
        z = ref["logits"][-1]
        logits = decode(view["logits"], tuple(z.shape))
        worst["logits"] = max(worst["logits"], float(np.abs(logits - z.numpy()).max()))
        assert worst["logits"] <= TOL, f"{lang} {view['scale']}: logits {worst['logits']:.2e}"
        p = (z.double() / view["temp"]).softmax(-1)
        top = p.topk(11)
        want = [(show(e["chars"][i]), 100 * float(q)) for q, i in zip(top.values[:10], top.indices[:10], strict=True)]
        got = [(b["c"], b["p"]) for b in view["bars"]]
        assert [c for c, _ in got] == [c for c, _ in want] or float(top.values[9] - top.values[10]) < 1e-6, (got, want)
        for (c, shown_p), (_, q) in zip(got, want, strict=True):
            worst["bars"] = max(worst["bars"], abs(shown_p - q))
            assert abs(shown_p - q) <= 0.05 + 1e-6, f"{lang} T={view['temp']}: {c!r} shows {shown_p} %, PyTorch {q:.3f} %"
        w = ref["attn"][view["layer"]][view["head"]].numpy()  # (n, n)
        start, k = view["start"], view["k"]
        assert len(view["rows"]) == k == min(len(ids), k) and start == len(ids) - k
        for r, row in enumerate(view["rows"]):
            i = start + r
            cells = [shade(c) for c in row["cells"]]
            assert all((c is None) == (start + j > i) for j, c in enumerate(cells)), (i, cells)  # masked: empty
            want_row = [float(w[i, start + j]) for j in range(k) if start + j <= i]
            diff = max(abs(a - b) for a, b in zip([c for c in cells if c is not None], want_row, strict=True))
            if start:
                diff = max(diff, abs(shade(row["earlier"]) - float(w[i, :start].sum())))
            worst["heatmap"] = max(worst["heatmap"], diff)
            assert diff <= 1 / 255 + 1e-6, f"{lang} layer {view['layer'] + 1} head {view['head'] + 1} row {i}: {diff:.4f}"
    record(lang, "page_against_pytorch_max_abs_difference", worst)


@pytest.mark.parametrize("lang", EDITIONS)
def test_top_k_accepts_whole_numbers_from_1_to_the_vocabulary(explorer: dict[str, Any], lang: str) -> None:
    topk = explorer[lang]["ui"]["topk"]
    vocab, values = topk["vocab"], topk["values"]
    for value in ["2.5", "0", "-1", "", "1.5", str(vocab + 1)]:
        assert values[value]["invalid"] == "true" and str(vocab) in values[value]["message"], (value, values[value])
    for value in ["1", str(vocab), "10"]:
        assert values[value] == {"invalid": "false", "message": ""}, (value, values[value])
    assert not values["generated_on_2.5"]


@pytest.mark.parametrize("lang", EDITIONS)
def test_a_screen_reader_hears_the_summary_on_request_only(explorer: dict[str, Any], lang: str) -> None:
    """Neither the summary nor the detail is a live region (each keystroke and hover would be read
    out); the reader's own live region stays empty until "read out" is pressed."""
    a = explorer[lang]["ui"]["announce"]
    assert a["live"] == ["ex-live", "ex-status", "ex-topk-error"], a["live"]
    assert a["quiet"] == ""
    assert a["said"] == f"{a['summary']} {a['detail']}" and a["summary"] and a["detail"]


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_presets_set_prompt_layer_and_head(explorer: dict[str, Any], lang: str) -> None:
    from tools.data.explorer_presets import OUT

    saved = json.loads(OUT.read_text(encoding="utf-8"))[lang]["presets"]
    seen = explorer[lang]["ui"]["presets"]["seen"]
    assert len(seen) == len(saved) >= 3
    for p, s in zip(saved, seen, strict=True):
        assert (s["text"], s["layer"], s["head"]) == (p["prompt"], p["layer"], p["head"])
        assert p["sentence"] in s["note"]


@pytest.mark.parametrize("lang", EDITIONS)
def test_one_screen(explorer: dict[str, Any], lang: str) -> None:
    """At 1280 x 800 the text box, the bars and the heatmap are all in the viewport, under the header.
    At 390 x 844, with the heatmap scrolled into view, the text box is still in view above it, the
    heatmap's cells are large enough for their labels, and the top-k label sits beside its input."""
    ui = explorer[lang]["ui"]
    wide, narrow = ui["wide"], ui["narrow_rects"]
    for part in ("ex-text", "ex-bars", "ex-heat"):
        assert wide[part]["top"] >= HEADER and wide[part]["bottom"] <= 800, (part, wide[part])
    assert narrow["ex-text"]["top"] >= HEADER - 1 and narrow["ex-text"]["bottom"] <= narrow["ex-heat"]["top"], narrow
    assert narrow["ex-heat"]["top"] >= 0 and narrow["ex-heat"]["bottom"] <= 844 + 1, narrow["ex-heat"]  # (subpixels)
    assert ui["narrow"]["cell"] >= 14 and ui["narrow"]["labels"]
    label, box = narrow["topk-label"], narrow["ex-topk"]
    middle = (label["top"] + label["bottom"]) / 2
    assert box["top"] <= middle <= box["bottom"] and 0 <= box["left"] - label["right"] <= 20, (label, box)
    record(lang, "layout_y", {size: {part: [round(r[part]["top"]), round(r[part]["bottom"])]
                                     for part in ("ex-text", "ex-bars", "ex-heat")}
                              for size, r in (("1280x800", wide), ("390x844 (heatmap scrolled into view)", narrow))})


def number(text: str) -> float:
    """A number as the page prints it (a minus sign, maybe a percent sign)."""
    return float(text.replace("−", "-").replace("%", "").strip())


def steps_reference(model: Any, ids: list[int], scale: float, layer: int, head: int, i: int) -> dict[str, np.ndarray]:
    """Row i of layer ``layer``'s head ``head`` step by step, with q k^T times ``scale`` in every layer:
    the query q_i, the scores q_i . k_j (j <= i), the scaled scores and their softmax."""
    with torch.no_grad():
        x = model.embed(torch.tensor([ids]))
        n = len(ids)
        for b in model.blocks[: layer + 1]:
            h, dh = b.attn.num_heads, b.attn.d_head
            q, k, v = b.attn.in_proj(b.ln1(x)).view(1, n, 3, h, dh).permute(2, 0, 3, 1, 4)
            out, _ = scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
            x = x + b.attn.out_proj(out.transpose(1, 2).reshape(1, n, h * dh))
            x = x + b.ff(b.ln2(x))
        qi, keys = q[0, head, i], k[0, head, : i + 1]  # the last block's: layer `layer`
        scores = keys @ qi  # (i + 1,)
        scaled = scores * scale
        return {"q": qi.numpy(), "scores": scores.numpy(), "scaled": scaled.numpy(), "weights": scaled.softmax(-1).numpy()}


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_step_view_is_what_pytorch_computes(explorer: dict[str, Any], lang: str) -> None:
    """For a query clicked on the page at each of STEP_SETTINGS (scale, layer and head set through its
    controls): the step view's q, scores q.k, scaled scores and weights equal PyTorch's within TOL; what
    it prints (q and scores to 2 decimals, weights to 0.1 %) is PyTorch's, rounded; its weights are the
    heatmap's row (the twin's attention weights), and each key is labeled with its character."""
    e, model = explorer[lang], explorer[lang]["model"]
    dh = model.blocks[0].attn.d_head
    scales = {"sqrt": 1 / math.sqrt(dh), "d": 1 / dh, "one": 1.0}
    worst = {"q": 0.0, "scores": 0.0, "scaled": 0.0, "weights": 0.0}
    for view in e["ui"]["steps"]:
        s, ids = view["step"], view["ids"]
        layer, head, i = s["layer"], s["head"], s["query"]
        lay, hd, back = next((lay, hd, back) for sc, lay, hd, back in STEP_SETTINGS if sc == view["scale"])
        assert (str(layer), str(head), i) == (lay, hd, max(0, len(ids) - 1 - back)), view["scale"]
        assert s["mode"] == "model" and math.isclose(s["scale"], scales[view["scale"]], rel_tol=1e-12)
        ref = steps_reference(model, ids, scales[view["scale"]], layer, head, i)
        for key in worst:
            got = np.array(s[key], dtype=np.float64)
            assert got.shape == ref[key].shape, (key, got.shape, ref[key].shape)
            diff = float(np.abs(got - ref[key]).max())
            worst[key] = max(worst[key], diff)
            assert diff <= TOL, f"{lang} {view['scale']} layer {layer + 1} head {head + 1} query {i}: {key} {diff:.2e}"
        heat = reference_at(model, ids, scales[view["scale"]])["attn"][layer][head, i, : i + 1].numpy()
        assert np.abs(np.array(s["weights"]) - heat).max() <= TOL  # the heatmap's row
        assert f"{i}" in view["title"] and f"{layer + 1}" in view["title"] and f"{head + 1}" in view["title"]
        assert len(view["q"]) == dh and all(abs(number(t) - q) <= 0.005 + 1e-6 for t, q in zip(view["q"], ref["q"], strict=True))
        assert len(view["rows"]) == i + 1
        for j, row in enumerate(view["rows"]):
            label, _, score, scaled, weight = row
            assert label == f"{j} {show(e['chars'][ids[j]])}", (j, label)
            assert abs(number(score) - ref["scores"][j]) <= 0.005 + 1e-5, (j, score, ref["scores"][j])
            assert abs(number(scaled) - ref["scaled"][j]) <= 0.005 + 1e-5, (j, scaled, ref["scaled"][j])
            assert weight.endswith("%") and abs(number(weight) - 100 * ref["weights"][j]) <= 0.05 + 1e-4, (j, weight)
    record(lang, "step_view_max_abs_difference", worst)


def example_reference(w_q: Any, w_k: Any) -> dict[str, np.ndarray]:
    """Chapter 3's worked example in PyTorch (float32, as the chapter computes it), with these W_q, W_k."""
    x = example.embeddings()
    _, _, w_v = example.projections()
    w_q, w_k = torch.tensor(w_q, dtype=torch.float32), torch.tensor(w_k, dtype=torch.float32)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ k.T
    scaled = s / w_k.shape[1] ** 0.5
    a = scaled.softmax(dim=-1)
    return {name: t.numpy() for name, t in (("x", x), ("q", q), ("k", k), ("s", s), ("scaled", scaled), ("a", a), ("o", a @ v))}


def example_differences(query: dict[str, Any], ref: dict[str, np.ndarray]) -> dict[str, float]:
    """The page's numbers for one query (and its whole matrix A) against the reference."""
    s, i = query["step"], query["query"]
    pairs = {"x": (s["x"], ref["x"][i]), "q": (s["q"], ref["q"][i]), "k": (s["k"], ref["k"]),
             "scores": (s["scores"], ref["s"][i]), "scaled": (s["scaled"], ref["scaled"][i]),
             "weights": (s["weights"], ref["a"][i]), "o": (s["o"], ref["o"][i]),
             "A": (np.reshape(query["A"], ref["a"].shape), ref["a"])}
    out = {}
    for key, (got, want) in pairs.items():
        got = np.array(got, dtype=np.float64)
        assert got.shape == want.shape, (key, got.shape, want.shape)
        out[key] = float(np.abs(got - want).max())
    return out


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_worked_example_is_what_pytorch_computes(explorer: dict[str, Any], lang: str) -> None:
    """Chapter 3's worked example on the page, for every query token, before and after each of EDITS
    (typed into the inputs of W_q and W_k): its x, q, each k, the scores, the scaled scores, the weights,
    the output o and the whole A match PyTorch within EXAMPLE_TOL; the page's W_q and W_k are the
    chapter's with the edits made. The first edit makes "it" attend less to "cat", as the guide says.
    "Chapter 3's values" restores the chapter's matrices and weights."""
    ex = explorer[lang]["example"]
    w_q, w_k, _ = example.projections()
    want = {"wq": w_q.tolist(), "wk": w_k.tolist()}
    runs = [(want, ex["queries"])]
    for edit in ex["edits"]:
        m, r, c, value = edit["edit"]
        want = {**want, m: [row[:] for row in want[m]]}
        want[m][r][c] = float(value)
        runs.append((want, edit["queries"]))
    worst: dict[str, float] = {}
    n = example.embeddings().shape[0]
    for w, queries in runs:
        ref = example_reference(w["wq"], w["wk"])
        assert [q["query"] for q in queries] == list(range(n))
        for query in queries:
            assert query["wq"] == w["wq"] and query["wk"] == w["wk"]
            for key, diff in example_differences(query, ref).items():
                worst[key] = max(worst.get(key, 0.0), diff)
                assert diff <= EXAMPLE_TOL, f"{lang}: query {query['query']}, W {w}: {key} {diff:.2e}"
    it, cat = 4, 0  # "it" and "cat": the tokens of the guide's sentence (checked against the chapter's labels)
    assert labels(ROOT / CHAPTER["en"])["tokens"][it] == "it" and labels(ROOT / CHAPTER["en"])["tokens"][cat] == "cat"
    before, after = ex["queries"][it]["step"]["weights"][cat], ex["edits"][0]["queries"][it]["step"]["weights"][cat]
    assert ex["edits"][0]["edit"][:3] == ("wq", 3, 0) and after < before, (before, after)
    reset, chapter = ex["reset"], example_reference(w_q.tolist(), w_k.tolist())
    assert reset["wq"] == w_q.tolist() and reset["wk"] == w_k.tolist()
    assert np.abs(np.reshape(reset["A"], (n, n)) - chapter["a"]).max() <= EXAMPLE_TOL
    assert all(float(v) == (w_q if m == "wq" else w_k)[r, c] for m, r, c, v in reset["inputs"])
    record(lang, "worked_example_max_abs_difference", worst)


def chapter_tables(lang: str) -> dict[str, list[list[str]]]:
    """What chapter 3 prints for the worked example (its expected output): for each table (X, Q,
    S/√d_k, A, O = AV) the printed numbers of each row, as text."""
    fences = parse_fences((ROOT / CHAPTER[lang]).read_text(encoding="utf-8"), CHAPTER[lang])
    code = next(k for k, f in enumerate(fences) if f.info == "python" and "from selfattn import example" in
                "\n".join(f.body) and "print(example.table(" in "\n".join(f.body))
    lines = next(f for f in fences[code + 1 :] if f.info == "text").body
    tables: dict[str, list[list[str]]] = {}
    k = 0
    while k < len(lines):
        name, cols = lines[k].strip(), len(lines[k + 1].split())
        tables[name] = [line.split()[-cols:] for line in lines[k + 2 : k + 8]]
        k += 8
    assert list(tables) == ["X", "Q", "S/√d_k", "A", "O = AV"], list(tables)
    return tables


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_worked_example_prints_what_chapter_3_prints(explorer: dict[str, Any], lang: str) -> None:
    """For each query token, the step view prints the chapter's numbers: its row of X and of Q, each
    scaled score (its row of S/√d_k), each weight (its row of A) and its output (its row of O), as the
    chapter's expected output prints them; the tokens and features are the chapter's labels."""
    ex, printed = explorer[lang]["example"], chapter_tables(lang)
    names = labels(ROOT / CHAPTER[lang])
    assert ex["tokens"] == names["tokens"] and ex["opened"]["features"] == names["features"]
    for i, query in enumerate(ex["queries"]):
        assert names["tokens"][i] in query["title"]
        (x_head, *x), (q_head, *q) = query["vecs"]
        assert (x_head, x) == ("x", printed["X"][i]) and (q_head, q) == ("q = xWq", printed["Q"][i]), query["vecs"]
        assert [row[0] for row in query["rows"]] == [f"{j} {t}" for j, t in enumerate(names["tokens"])]
        assert [row[3] for row in query["rows"]] == printed["S/√d_k"][i]
        assert [row[4] for row in query["rows"]] == printed["A"][i]
        assert query["out"][0][1:] == printed["O = AV"][i], query["out"]
        a = np.array(query["step"]["weights"])  # the largest weights in bold, none in a uniform row
        assert query["bold"] == ([False] * len(a) if np.ptp(a) < 1e-9 else list(a.max() - a < 1e-9)), query["bold"]
    assert ex["opened"]["n"] == 6 and len(names["features"]) == 4 and ex["opened"]["dk"] == 4  # the guide's numbers


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_worked_example_opens_by_its_address_without_the_model(explorer: dict[str, Any], lang: str) -> None:
    """``explorer/?mode=example`` (chapter 3's link) opens the worked example with its switch set, and
    the model is not fetched for it; choosing the example with the switch puts ``?mode=example`` in the
    address. It opens on the query whose row has the largest weight. An entry that is not a number is
    marked invalid and changes nothing; a tapped cell shows its weight; its inputs are touch-sized."""
    ex = explorer[lang]["example"]
    opened = ex["opened"]
    assert opened["mode"] == "example" and opened["checked"] == "example" and opened["search"] == "?mode=example"
    a = np.reshape(opened["A"], (opened["n"], opened["n"]))
    assert opened["query"] == int(a.max(-1).argmax())
    if lang == "zh":  # arrived from chapter 3, before switching to the model
        assert not opened["model"] and not opened["fetched"], opened
    else:  # loaded at its address
        p = ex["preloaded"]
        assert p["mode"] == "example" and p["checked"] == "example" and not p["model"] and not p["fetched"], p
    assert ex["invalid"] == {"aria": "true", "same": True}
    cell, text = ex["tap"]["cell"], ex["tap"]["text"]
    assert cell == {"i": 3, "j": 1}, cell
    assert f"{ex['tap']['A'][3 * opened['n'] + 1]:.2f}" in text and ex["tokens"][1] in text, text
    assert all(w >= TARGET and h >= TARGET for w, h in ex["inputs"]), ex["inputs"]


def test_the_worked_example_is_accessible_at_390(explorer: dict[str, Any]) -> None:
    """axe-core (tests/site/test_browser.py's check, in both palettes) on the English worked example as its
    address opens it, at 390 px: no serious or critical problem. The page check of tests/site/test_browser.py
    runs it on the page as it opens, on the model."""
    problems = explorer["en"]["example"]["axe"]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_page_opens_with_the_first_preset(explorer: dict[str, Any], lang: str) -> None:
    """Opened on the model (English: at its address; Chinese: switched to from the example), the page
    shows the first preset: its prompt, layer and head, and its sentence."""
    o = explorer[lang]["opened"]
    first = o["presets"][0]
    assert o["preset"] == "0" and first["sentence"] in o["note"], o["note"]
    assert (o["text"], o["layer"], o["head"]) == (first["prompt"], first["layer"], first["head"])


JARGON = re.compile(r"d_?model|\bnats?\b|logit", re.IGNORECASE)  # terms the first screen does not explain
SIDES = {"en": re.compile(r"\b(left|right)\b", re.IGNORECASE), "zh": re.compile(r"[左右]")}
TAP = {"en": "tap", "zh": "点按"}


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_first_screen_speaks_plainly(explorer: dict[str, Any], lang: str) -> None:
    """The first screen (1280 x 900 and 390 x 844) uses no unexplained jargon (JARGON); the intro does
    not place the panels left or right (at 390 px they are stacked); the guide mentions tapping."""
    e = explorer[lang]
    for screen in (e["opened"]["screen"], e["ui"]["first_screen_390"]):
        assert e["opened"]["status"] in screen or e["opened"]["status"][:20] in screen
        assert not JARGON.search(screen), JARGON.search(screen)
    assert not SIDES[lang].search(e["ui"]["intro"]), e["ui"]["intro"]
    assert TAP[lang] in e["ui"]["guide"].lower()


@pytest.mark.parametrize("lang", EDITIONS)
def test_a_tapped_cell_shows_its_weight(explorer: dict[str, Any], lang: str) -> None:
    """At 390 px a finger taps a cell of the heatmap: the page selects that cell and its row's query,
    and prints the cell's weight, PyTorch's to the 0.1 % it shows."""
    e = explorer[lang]
    tap = e["ui"]["tap"]
    assert tap["cell"] == {"i": tap["i"], "j": tap["j"]} and tap["query"] == tap["i"], tap
    w = reference_at(e["model"], tap["ids"], tap["scale"])["attn"][tap["layer"]][tap["head"], tap["i"], tap["j"]]
    shown = re.search(r"([0-9.]+)%", tap["text"])  # no space before %, as the prose writes it
    assert shown and abs(float(shown[1]) - 100 * float(w)) <= 0.05 + 1e-4, (tap["text"], float(w))
    chars = e["chars"]
    assert show(chars[tap["ids"][tap["i"]]]) in tap["text"] or chars[tap["ids"][tap["i"]]] in tap["text"]


@pytest.mark.parametrize("lang", EDITIONS)
def test_touch_targets_at_390(explorer: dict[str, Any], lang: str) -> None:
    """At 390 px every character button and each label of the mode switch is at least TARGET px wide
    and tall, and each row of the heatmap at least TARGET px tall (the canvas is drawn at 1:1)."""
    t = explorer[lang]["ui"]["targets"]
    assert t["tokens"] and all(w >= TARGET and h >= TARGET for w, h in t["tokens"]), min(t["tokens"])
    assert all(h >= TARGET for _, h in t["modes"]), t["modes"]
    assert t["row"] >= TARGET and t["canvas"] == t["drawn"] and abs(t["canvas"][1] - t["expected"]) < 0.5, t


def contrast(a: str, b: str) -> float:
    """The WCAG contrast ratio of two CSS colors rgb(...)/rgba(...) (alpha ignored)."""
    def lum(css: str) -> float:
        r, g, b = (float(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
        lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_temperature_slider_has_a_focus_ring(explorer: dict[str, Any], lang: str) -> None:
    """Reached by Tab, the temperature slider shows a solid outline of at least 2 px that contrasts
    with the page by at least 3:1 (WCAG 2.2, 1.4.11)."""
    ring = explorer[lang]["ui"]["focus_ring"]
    assert ring["id"] == "ex-temp" and ring["visible"], ring
    assert ring["style"] not in ("none", "hidden") and ring["width"] >= 2, ring
    assert contrast(ring["color"], ring["background"]) >= 3, ring


@pytest.mark.parametrize("lang", EDITIONS)
def test_the_weights_use_the_books_colormap(explorer: dict[str, Any], lang: str) -> None:
    """The page's colors for weights are the book's figures' (selfattn.plot.WEIGHTS_CMAP, as matplotlib
    draws it), exactly: the table it colors with (from book.json), and every cell of the heatmap
    (test_what_the_page_shows_is_what_pytorch_computes reads them back through this colormap)."""
    cmap = explorer[lang]["ui"]["cmap"]
    assert cmap["name"] == plot.WEIGHTS_CMAP
    assert np.array_equal(np.array(cmap["rgb"]), COLORS)
    token, weight = cmap["token"]  # the weight as the page rounds it (3 decimals): within one color
    k = round(255 * weight)
    assert any(token == [int(v) for v in COLORS[j]] for j in (k - 1, k, k + 1) if 0 <= j < 256), cmap["token"]


def record(lang: str, key: str, value: Any) -> None:
    """Add a measurement to reports/explorer-report.json (and print it: times are reported, never asserted)."""
    report = json.loads(REPORT.read_text(encoding="utf-8")) if REPORT.exists() else {}
    report.setdefault(lang, {})[key] = value
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nexplorer ({lang}) {key}: {value}")
