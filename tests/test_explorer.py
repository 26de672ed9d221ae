"""The attention explorer (``docs/explorer.md``) in Chromium, against ``CharLM`` in PyTorch.

Its forward pass is a JavaScript twin of ``CharLM`` (``docs/javascripts/explorer-twin.js``) on the
weights that ``tools/explorer_export.py`` exported from each edition's checkpoint. Each edition's
page is loaded once; one ``page.evaluate`` runs the twin on all the prompts (at least 20 per
edition, lengths 1 to ``block_size``), and the logits and every layer's attention weights must
match PyTorch in float32 within ``TOL``. A failure names the layer where the two part. In the same
page: the KV-cache steps of "generate", top-k sampling, the scale selector, the keyboard path
through the controls, the layout at 390 px, no console error and no request to any other host.

Each keystroke's update time is measured in the page (``performance.now()`` around the update)
and printed with the largest differences (``build/explorer-report.json``); times are never
asserted. Screenshots of both editions at 1280 x 900 and at 390 px wide go to
``build/screenshots/explorer-*.jpg`` (in CI, or with ``SELFATTN_SCREENSHOTS=1``: tests/test_browser.py, SHOTS).
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
from tests.test_browser import EN, SCREENSHOTS, base_url, browser, chromium, shoot, visit  # noqa: F401
from tools.explorer_export import CHECKPOINTS, load_model, sha256

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "build" / "explorer-report.json"
TOL = 1e-4  # float32, max abs difference, logits and attention weights
N_PROMPTS = 22
EDITIONS = {"zh": "", "en": EN}
# Text for the prompts: each edition's chapters (only the characters of its vocabulary are kept).
SOURCES = {lang: sorted(p for p in (ROOT / "docs").glob("[0-9]*.md") if p.name.endswith(".en.md") == (lang == "en"))
           for lang in ("zh", "en")}
CONTROLS = ["ex-text", "ex-temp", "ex-topk", "ex-generate", "ex-layer", "ex-head", "ex-scale", "ex-tok"]


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

    The session's browser (tests/test_browser.py): a second Playwright in the same thread fails."""
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
    for name, target in (("1280x900", "explorer"), ("1280x900-attention", "attention")):
        page.evaluate(f"() => document.getElementById('{target}').scrollIntoView()")
        shoot(page, f"explorer-{lang}-{name}", full_page=False)
    page.evaluate("() => window.scrollTo(0, 0)")  # else the sticky header lands mid-page in a full shot
    shoot(page, f"explorer-{lang}-1280-full")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)  # the heatmap redraws on resize
    ui["narrow"] = page.evaluate("""() => ({scroll: document.documentElement.scrollWidth,
      client: document.documentElement.clientWidth,
      heat: document.getElementById('ex-heat').getBoundingClientRect().right})""")
    shoot(page, f"explorer-{lang}-390")
    return ui


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


def record(lang: str, key: str, value: Any) -> None:
    """Add a measurement to build/explorer-report.json (and print it: times are reported, never asserted)."""
    report = json.loads(REPORT.read_text(encoding="utf-8")) if REPORT.exists() else {}
    report.setdefault(lang, {})[key] = value
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nexplorer ({lang}) {key}: {value}")
