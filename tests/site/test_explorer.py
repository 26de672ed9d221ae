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
any other host.

Each keystroke's update time is measured in the page (``performance.now()`` around the update)
and printed with the largest differences and the layout (``reports/explorer-report.json``); times are
never asserted. Screenshots of both editions at 1280 x 800 (and the whole page) and at 390 x 844
with the heatmap in view go to ``reports/screenshots/explorer-*.jpg`` (in CI, or with
``SELFATTN_SCREENSHOTS=1``: tests/site/test_browser.py, SHOTS).
"""

from __future__ import annotations

import contextlib

import base64
import json
import math
import random
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from selfattn.functional import scaled_dot_product_attention
from selfattn.model import next_logits
from tests.site.test_browser import EN, SCREENSHOTS, base_url, browser, chromium, shoot, visit  # noqa: F401
from tools.data.explorer_export import CHECKPOINTS, load_model, sha256

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "explorer-report.json"
TOL = 1e-4  # float32, max abs difference, logits and attention weights
N_PROMPTS = 22
EDITIONS = {"zh": "", "en": EN}
# Text for the prompts: each edition's chapters (only the characters of its vocabulary are kept).
SOURCES = {lang: sorted(p for p in (ROOT / "docs").glob("[0-9]*.md") if p.name.endswith(".en.md") == (lang == "en"))
           for lang in ("zh", "en")}
CONTROLS = ["ex-text", "ex-temp", "ex-topk", "ex-generate", "ex-tok", "ex-preset", "ex-layer", "ex-head", "ex-scale",
            "ex-zoom", "ex-describe"]
HEADER = 48  # material's header (2.4rem), over the top of the viewport
# What the page shows after its own updates, read from the page: the logits it computed, each bar
# (its character and the percentage it prints) and the heatmap's cells (the canvas's pixels).
SHOWN_JS = """() => {
  const page = window.explorerPage, v = page.heat, c = document.getElementById('ex-heat');
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height), d = v.dpr;
  const alpha = (x, y) => px.data[4 * (Math.floor(y * d) * px.width + Math.floor(x * d)) + 3] / 255;
  const rows = [];  // per shown row: the "earlier" cell (or null), then one cell per shown key
  for (let r = 0; r < v.k; r++) {
    const y = v.y0 + r * v.cell + v.cell / 2;
    rows.push({earlier: v.earlier ? alpha(18 + v.cell / 2, y) : null,
               cells: Array.from({length: v.k}, (_, j) => alpha(v.x0 + j * v.cell + v.cell / 2, y))});
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
    """Per edition: the model, the prompts, the twin's results and what the page did (one load each).

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
            # Chinese: arrive from the preface, by its link (material's instant navigation).
            first = "" if lang == "zh" else "explorer/"
            with visit(browser, base_url + prefix + first) as (page, watch):
                if lang == "zh":
                    page.locator("article a[href$='explorer/']").first.click()
                    page.wait_for_url("**/explorer/")
                page.wait_for_selector("#explorer[data-ready]", timeout=20_000)
                t1 = time.perf_counter()
                erf_x = [i / 97 for i in range(-700, 701)]
                js = page.evaluate(TWIN_JS, {"prompts": ps, "steps": steps, "erfX": erf_x})
                t2 = time.perf_counter()
                ui = use_page(page, lang)
            print(f"\nexplorer ({lang}): page ready {t1 - t0:.1f} s, twin on {len(ps)} prompts "
                  f"{t2 - t1:.1f} s, the page by keyboard {time.perf_counter() - t2:.1f} s")
            out[lang] = {"model": model, "chars": chars, "prompts": ps, "steps": steps, "js": js, "ui": ui,
                         "watch": watch, "erf": (erf_x, js["erf"])}
    return out


def use_page(page: Any, lang: str) -> dict[str, Any]:
    """Drive the page as a reader would, by keyboard; return what was seen (checked by the tests)."""
    ui: dict[str, Any] = {}
    page.locator("article a[href*='10-capstone']").first.focus()  # the link just above the explorer
    ui["tabs"] = tab_until(page, "ex-text", 5)
    page.keyboard.press("End")
    seen = []
    for want in CONTROLS[1:]:
        seen += tab_until(page, want, 12)
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
    box.fill(page.evaluate("() => document.getElementById('explorer').dataset.prompt"))  # the shots: as it opens
    page.select_option("#ex-preset", "")
    page.select_option("#ex-layer", "0")
    page.select_option("#ex-head", "0")
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
      client: document.documentElement.clientWidth, height: window.innerHeight, cell: window.explorerPage.heat.cell,
      labels: window.explorerPage.heat.cell >= 9,
      heat: document.getElementById('ex-heat').getBoundingClientRect().right})""")
    ui["narrow_rects"] = page.evaluate(RECTS_JS)
    shoot(page, f"explorer-{lang}-390x844", full_page=False)
    return ui


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


@pytest.mark.parametrize("lang", EDITIONS)
def test_what_the_page_shows_is_what_pytorch_computes(explorer: dict[str, Any], lang: str) -> None:
    """After the page's own updates (scale, temperature, layer and head set through its controls): its
    logits equal PyTorch's at the selected scale (1/sqrt(d_head), 1/d_head or 1) within TOL; each bar
    prints PyTorch's probability at the selected temperature (to the 0.1 % it shows), for the 10 most
    likely characters; and each cell of the heatmap has PyTorch's weight as its opacity (to 1/255, the
    canvas's resolution), the "earlier" column the sum over the keys left out."""
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
            want_row = [float(w[i, start + j]) if start + j <= i else 0.0 for j in range(k)]
            diff = max(abs(a - b) for a, b in zip(row["cells"], want_row, strict=True))
            if start:
                diff = max(diff, abs(row["earlier"] - float(w[i, :start].sum())))
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


def record(lang: str, key: str, value: Any) -> None:
    """Add a measurement to reports/explorer-report.json (and print it: times are reported, never asserted)."""
    report = json.loads(REPORT.read_text(encoding="utf-8")) if REPORT.exists() else {}
    report.setdefault(lang, {})[key] = value
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nexplorer ({lang}) {key}: {value}")
