// The attention explorer (docs/explorer.md): the page around the twin of explorer-twin.js.
//
// Every keystroke runs the twin on the typed text (its last block_size characters) and shows
// the next character's distribution, one layer's and one head's attention weights as a heatmap
// (the last few characters, labeled, with each row's entropy), and the characters themselves:
// focusing or hovering one shows what it attends to. Presets (presets.json, written by
// tools/data/explorer_presets.py) set a prompt, a layer and a head. The page's own words (labels, messages) are in the Markdown of each edition; the
// messages below come from the data-i18n attribute of #explorer.
// `document$` is mkdocs-material's observable: it fires on the first load and after each instant
// navigation, so the explorer starts whichever way the reader arrives.
"use strict";
(function () {
  const models = new Map(); // url -> Promise<CharLM>: loaded once per page session
  const $ = (id) => document.getElementById(id);
  const fmt = (s, v) => s.replace(/\{(\w+)\}/g, (_, k) => v[k]);
  const SCALES = { sqrt: (dh) => 1 / Math.sqrt(dh), one: () => 1, d: (dh) => 1 / dh };
  const GENERATE = 60; // characters per click of "generate"

  function init(root) {
    root.dataset.started = "1";
    const t = JSON.parse(root.dataset.i18n);
    const el = {};
    for (const id of ["status", "text", "temp", "temp-value", "topk", "topk-error", "generate", "bars", "layer",
      "head", "scale", "zoom", "preset", "preset-note", "summary", "tokens", "detail", "heat", "skipped",
      "describe", "live"]) el[id] = $("ex-" + id);
    const url = new URL(root.dataset.model, location.href).href;
    if (!models.has(url)) models.set(url, CharLMTwin.load(url));
    const state = { model: null, ids: [], run: null, query: -1, timings: [], presets: [], heat: null };
    window.explorerPage = state; // read by tests/site/test_explorer.py

    // How a character is shown: spaces and line breaks get a visible sign.
    const show = (c) => (c === " " ? "␣" : c === "\n" ? "↵" : c === "\t" ? "⇥" : c);
    const name = (c) => (c === " " ? t.space : c === "\n" ? t.newline : c);

    // Run the model on the text and redraw everything; the time it takes is recorded.
    function update() {
      const t0 = performance.now();
      const m = state.model, { ids, unknown } = m.encode(el.text.value);
      el.skipped.textContent = unknown.length ? fmt(t.skipped, { chars: unknown.map(name).join(" ") }) : "";
      state.ids = ids.slice(-m.config.block_size);
      if (!state.ids.length) {
        state.run = null;
        el.bars.replaceChildren();
        el.tokens.replaceChildren();
        el.summary.textContent = t.empty;
        el.detail.textContent = "";
        drawHeat();
        return;
      }
      state.run = m.update(state.run, state.ids, SCALES[el.scale.value](m.dh)); // reuses unchanged rows
      state.query = state.ids.length - 1; // the last character: the one that predicts the next
      drawBars();
      drawTokens();
      drawAttention();
      state.timings.push(performance.now() - t0);
    }

    // The next character's distribution at the chosen temperature: the 10 most likely, as bars.
    function drawBars() {
      const m = state.model, p = CharLMTwin.softmax(state.run.logits, +el.temp.value);
      const top = [...p.keys()].sort((a, b) => p[b] - p[a]).slice(0, 10);
      el.bars.replaceChildren(...top.map((i) => {
        const li = document.createElement("li");
        li.innerHTML = `<span class="ex-char"></span><span class="ex-bar"><span></span></span><span class="ex-p"></span>`;
        li.children[0].textContent = show(m.chars[i]);
        li.children[1].firstChild.style.width = `${(100 * p[i]) / p[top[0]]}%`;
        li.children[2].textContent = `${(100 * p[i]).toFixed(1)} %`;
        li.setAttribute("aria-label", `${name(m.chars[i])}: ${(100 * p[i]).toFixed(1)} %`);
        return li;
      }));
    }

    // The window's characters as buttons; one tab stop, arrow keys move (a roving tabindex).
    function drawTokens() {
      const m = state.model;
      el.tokens.replaceChildren(...state.ids.map((id, i) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "ex-tok";
        b.textContent = show(m.chars[id]);
        b.dataset.i = i;
        b.tabIndex = i === state.query ? 0 : -1;
        b.setAttribute("aria-label", fmt(t.token, { i, c: name(m.chars[id]) }));
        return b;
      }));
    }

    // The chosen layer's and head's weights (n, n) from the last run, and each row's entropy.
    function weights() {
      const n = state.ids.length, l = +el.layer.value, h = +el.head.value;
      const w = state.run.attn[l].subarray(h * n * n, (h + 1) * n * n);
      return { n, w, H: CharLMTwin.entropy(w, n, n) };
    }

    function drawAttention() {
      const { n, H } = weights();
      let mean = 0, uniform = 0;
      for (let i = 0; i < n; i++) { mean += H[i] / n; uniform += Math.log(i + 1) / n; }
      el.summary.textContent = fmt(t.summary, {
        l: +el.layer.value + 1, h: +el.head.value + 1, e: mean.toFixed(3), u: uniform.toFixed(3),
      });
      select(state.query, false);
    }

    // Highlight what query i attends to: its row of the heatmap, and each earlier character shaded
    // by its weight. With focus, the button of character i takes the keyboard focus too.
    function select(i, focus) {
      if (!state.run) return;
      const { n, w, H } = weights(), m = state.model;
      state.query = i;
      [...el.tokens.children].forEach((b, j) => {
        const p = j <= i ? w[i * n + j] : 0;
        b.style.setProperty("--w", p.toFixed(3));
        b.classList.toggle("ex-query", j === i);
        b.tabIndex = j === i ? 0 : -1;
        b.title = j <= i ? `${(100 * p).toFixed(1)} %` : "";
      });
      if (focus) el.tokens.children[i].focus();
      let best = 0;
      for (let j = 1; j <= i; j++) if (w[i * n + j] > w[i * n + best]) best = j;
      el.detail.textContent = fmt(t.detail, {
        c: name(m.chars[state.ids[i]]), i, m: name(m.chars[state.ids[best]]),
        p: `${(100 * w[i * n + best]).toFixed(1)} %`, e: H[i].toFixed(3), u: Math.log(i + 1).toFixed(3),
      });
      drawHeat();
    }

    // The heatmap's width and colors, read once and again only on resize or a palette change:
    // reading them after each keystroke's changes would make the browser lay out the page first.
    const look = {};
    function measure() {
      look.width = el.heat.parentElement.clientWidth;
      look.fg = getComputedStyle(document.body).color;
      look.rgb = getComputedStyle(el.tokens).getPropertyValue("--ex-rgb").trim() || "63, 81, 181";
      look.font = getComputedStyle(document.body).fontFamily;
    }

    // The heatmap's layout: label column, top labels, the "earlier" column, the cells, the entropy bars.
    const LABEL = 18, TOP = 18, GAP = 8, ENT = 56, BOTTOM = 16, MIN_CELL = 14, MAX_CELL = 22, MAX_HEIGHT = 400;
    function view() {
      const n = state.ids.length, z = el.zoom.value;
      const fit = Math.floor(Math.min(look.width - LABEL - 2 * GAP - ENT, MAX_HEIGHT) / MIN_CELL) - 1;
      const k = Math.max(1, Math.min(n, z === "all" ? n : z === "auto" ? fit : +z));
      const start = n - k, earlier = start > 0 ? 1 : 0;
      const cell = Math.max(4, Math.min(MAX_CELL, Math.floor((look.width - LABEL - 2 * GAP - ENT) / (k + earlier)),
        Math.floor(MAX_HEIGHT / k)));
      const x0 = LABEL + earlier * (cell + 3); // the first shown key's column
      return { n, k, start, earlier, cell, x0, y0: TOP, ent: x0 + k * cell + GAP };
    }

    // The heatmap: row i = query i, column j = key j, darker = more weight; masked cells (j > i)
    // stay empty. Only the last k characters are drawn (view); the "earlier" column left of them
    // holds each row's weight on the characters before those. Right of each row, a bar of its
    // entropy on a scale from 0 to ln n (a uniform row over the whole window), marked below.
    function drawHeat() {
      const c = el.heat, ctx = c.getContext("2d"), dpr = window.devicePixelRatio || 1;
      const { fg, rgb, font } = look;
      if (!state.run) { c.width = 0; c.height = 0; state.heat = null; return; }
      const { n, w, H } = weights(), m = state.model, v = view(), { k, start, cell, x0, y0, ent } = v;
      const css = { w: ent + ENT + 2, h: y0 + k * cell + BOTTOM };
      c.width = css.w * dpr;
      c.height = css.h * dpr;
      c.style.width = css.w + "px";
      c.style.height = css.h + "px";
      ctx.scale(dpr, dpr);
      const size = Math.min(13, cell - 1);
      ctx.font = `${size}px ${font}`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillStyle = fg;
      if (v.earlier) ctx.fillText("…", LABEL + cell / 2, y0 / 2);
      for (let j = 0; j < k && cell >= 9; j++) ctx.fillText(show(m.chars[state.ids[start + j]]), x0 + j * cell + cell / 2, y0 / 2);
      const full = Math.log(n) || 1;
      for (let r = 0; r < k; r++) {
        const i = start + r, y = y0 + r * cell;
        ctx.fillStyle = fg;
        if (cell >= 9) ctx.fillText(show(m.chars[state.ids[i]]), LABEL / 2, y + cell / 2); // the query
        if (v.earlier) {
          let before = 0;
          for (let j = 0; j < start; j++) before += w[i * n + j];
          ctx.fillStyle = `rgba(${rgb}, ${before})`;
          ctx.fillRect(LABEL, y, cell, cell);
        }
        for (let j = start; j <= i; j++) {
          ctx.fillStyle = `rgba(${rgb}, ${w[i * n + j]})`; // alpha = weight
          ctx.fillRect(x0 + (j - start) * cell, y, cell, cell);
        }
        ctx.fillStyle = "rgba(230, 81, 0, 0.85)"; // orange: the row's entropy
        ctx.fillRect(ent, y + 1, (ENT * H[i]) / full, Math.max(1, cell - 2));
      }
      ctx.strokeStyle = fg; // the scale of the entropy bars: 0 .. ln n
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(ent, y0 + k * cell + 2);
      ctx.lineTo(ent + ENT, y0 + k * cell + 2);
      ctx.stroke();
      ctx.font = `11px ${font}`;
      ctx.fillStyle = fg;
      ctx.textAlign = "left";
      ctx.fillText("0", ent, y0 + k * cell + 10);
      ctx.textAlign = "right";
      ctx.fillText(full.toFixed(2), ent + ENT, y0 + k * cell + 10);
      ctx.textAlign = "center";
      ctx.fillText(`${t.entropy}`, ent + ENT / 2, y0 / 2);
      const q = state.query;
      if (q >= start) {
        ctx.lineWidth = 1.5;
        ctx.strokeRect(LABEL, y0 + (q - start) * cell, x0 - LABEL + k * cell, cell); // the selected query's row
      }
      state.heat = { ...v, layer: +el.layer.value, head: +el.head.value, dpr };
      c.setAttribute("aria-label", fmt(t.heat, { n: k, l: +el.layer.value + 1, h: +el.head.value + 1 }));
    }

    // top-k: a whole number from 1 to the vocabulary's size, or null (and a message says why).
    function topK() {
      const raw = el.topk.value.trim(), V = state.model.chars.length, k = Number(raw);
      const ok = /^[0-9]+$/.test(raw) && k >= 1 && k <= V;
      el["topk-error"].textContent = ok ? "" : fmt(t.topk, { V, v: el.topk.value || raw });
      el.topk.setAttribute("aria-invalid", ok ? "false" : "true");
      return ok ? k : null;
    }

    // Generate: sample GENERATE characters with top-k at the chosen temperature, one new token
    // per step through the twin's key/value cache, each appended to the text as it comes (one
    // step per task, so the page stays responsive); then update the page once.
    function generate() {
      const m = state.model, k = topK();
      let ids = m.encode(el.text.value).ids, cache = null, s = 0;
      if (k === null || !ids.length || state.generating) return;
      const scale = SCALES[el.scale.value](m.dh);
      state.generating = true; // (a disabled button would lose the keyboard focus)
      const step = () => {
        const r = m.next(ids, cache, scale);
        cache = r.cache;
        const id = CharLMTwin.sample(r.logits, +el.temp.value, k, Math.random());
        ids = [...ids, id];
        el.text.value += m.chars[id];
        if (++s < GENERATE) return setTimeout(step, 0);
        state.generating = false;
        update();
      };
      step();
    }

    // A preset: its prompt, layer and head, and the sentence that says what to look at.
    const chosen = () => (el.preset.value === "" ? null : state.presets[+el.preset.value]);
    function applyPreset() {
      const p = chosen();
      el["preset-note"].textContent = p ? fmt(t.preset, { s: p.sentence }) : "";
      if (!p) return;
      el.text.value = p.prompt;
      el.layer.value = p.layer;
      el.head.value = p.head;
      update();
    }
    function leavePreset() { // the reader picked another layer or head
      const p = chosen();
      if (p && (p.layer !== +el.layer.value || p.head !== +el.head.value)) {
        el.preset.value = "";
        el["preset-note"].textContent = "";
      }
    }

    // The screen reader hears the summary on request only (not at every keystroke or hover).
    function describe() {
      el.live.textContent = "";
      setTimeout(() => { el.live.textContent = `${el.summary.textContent} ${el.detail.textContent}`; }, 50);
    }

    const presetsUrl = root.dataset.presets && new URL(root.dataset.presets, location.href).href;
    const presets = presetsUrl ? fetch(presetsUrl).then((r) => (r.ok ? r.json() : { presets: [] })) : Promise.resolve({ presets: [] });
    Promise.all([models.get(url), presets]).then(([m, ps]) => {
      state.model = m;
      state.presets = ps.presets || [];
      const c = m.config;
      el.layer.replaceChildren(...Array.from({ length: c.num_layers }, (_, i) => new Option(`${i + 1}`, i)));
      el.head.replaceChildren(...Array.from({ length: c.num_heads }, (_, i) => new Option(`${i + 1}`, i)));
      el.preset.append(...state.presets.map((p, i) => new Option(`${p.layer + 1}.${p.head + 1} · ${p.label}`, i)));
      el.topk.max = c.vocab_size;
      el.status.textContent = fmt(t.ready, {
        layers: c.num_layers, heads: c.num_heads, d: c.d_model, V: c.vocab_size, bs: c.block_size,
      });
      el.text.value = root.dataset.prompt;
      measure();
      el.temp.addEventListener("input", () => {
        el["temp-value"].value = (+el.temp.value).toFixed(2);
        if (state.run) drawBars();
      });
      el.text.addEventListener("input", update);
      el.scale.addEventListener("change", update);
      el.layer.addEventListener("change", () => { leavePreset(); if (state.run) drawAttention(); });
      el.head.addEventListener("change", () => { leavePreset(); if (state.run) drawAttention(); });
      el.zoom.addEventListener("change", () => state.run && drawHeat());
      el.preset.addEventListener("change", applyPreset);
      el.topk.addEventListener("input", topK);
      el.generate.addEventListener("click", generate);
      el.describe.addEventListener("click", describe);
      const pick = (e) => e.target.dataset && e.target.dataset.i !== undefined && +e.target.dataset.i;
      el.tokens.addEventListener("mouseover", (e) => { const i = pick(e); if (i !== false) select(i, false); });
      el.tokens.addEventListener("focusin", (e) => { const i = pick(e); if (i !== false && i !== state.query) select(i, false); });
      el.tokens.addEventListener("keydown", (e) => {
        const step = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1 }[e.key];
        const to = e.key === "Home" ? 0 : e.key === "End" ? state.ids.length - 1 : state.query + (step || 0);
        if (!step && e.key !== "Home" && e.key !== "End") return;
        e.preventDefault();
        select(Math.max(0, Math.min(state.ids.length - 1, to)), true);
      });
      el.heat.addEventListener("mousemove", (e) => { // the row under the pointer
        const v = state.heat, r = el.heat.getBoundingClientRect();
        if (!v) return;
        const i = v.start + Math.floor((e.clientY - r.top - v.y0) / v.cell);
        if (i >= v.start && i < v.n && i !== state.query) select(i, false);
      });
      window.addEventListener("resize", () => { measure(); if (state.run) drawHeat(); });
      new MutationObserver(() => { measure(); if (state.run) drawHeat(); }) // the light/dark toggle
        .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
      [el.text, el.temp, el.topk, el.generate, el.layer, el.head, el.scale, el.zoom, el.preset]
        .forEach((e) => { e.disabled = false; });
      el.preset.disabled = !state.presets.length;
      update();
      state.timings.length = 0; // the first run is not a keystroke
      root.dataset.ready = "1";
    }).catch((err) => {
      el.status.textContent = fmt(t.failed, { error: err.message });
      console.error(err);
    });
  }

  function start() {
    const root = document.querySelector("div#explorer[data-model]"); // (chapter 10 has an #explorer heading)
    // The print page holds the explorer's text, not the explorer: its model path is relative to explorer/.
    if (document.getElementById("print-site-page")) return;
    if (root && !root.dataset.started && window.CharLMTwin) init(root);
  }
  if (typeof document$ !== "undefined") document$.subscribe(start);
  else document.addEventListener("DOMContentLoaded", start);
})();
