// The attention explorer (docs/explorer.md): the page around the twin of explorer-twin.js.
//
// Two modes, chosen by a switch (and by ?mode=example in the address, so that chapter 3 can link
// to the second one):
// * "model": every keystroke runs the twin of chapter 10's model on the typed text (its last
//   block_size characters) and shows the next character's distribution, one layer's and one
//   head's attention weights as a heatmap (the last few characters, labeled, with each row's
//   entropy), and the characters themselves: focusing, hovering or tapping one shows what it
//   attends to. Presets (presets.json, written by tools/data/explorer_presets.py) set a prompt, a layer
//   and a head; the page opens with the first one. The model is loaded only in this mode.
// * "example": chapter 3's worked example (book.json, exported from selfattn.example by
//   tools/data/explorer_book.py): six tokens, d = 4, the chapter's W_q, W_k and W_v, computed by the
//   twin's attention(); the reader picks a query and edits W_q and W_k.
// In both, the step view shows the numbers behind the selected query's row of the heatmap: its q,
// the scores q.k, the scaled scores and the softmax as bars; a tapped (or pointed) cell of the
// heatmap shows its value. Weights are colored with the book's colormap (selfattn.plot.WEIGHTS_CMAP,
// from book.json). The page's own words are in the Markdown of each edition; the messages below
// come from the data-i18n attribute of #explorer.
// `document$` is mkdocs-material's observable: it fires on the first load and after each instant
// navigation, so the explorer starts whichever way the reader arrives.
"use strict";
(function () {
  const models = new Map(); // url -> Promise<CharLM>: loaded once per page session
  const $ = (id) => document.getElementById(id);
  const fmt = (s, v) => s.replace(/\{(\w+)\}/g, (_, k) => v[k]);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const SCALES = { sqrt: (dh) => 1 / Math.sqrt(dh), one: () => 1, d: (dh) => 1 / dh };
  const SCALED = { sqrt: "q·k/√d<sub>k</sub>", one: "q·k × 1", d: "q·k/d<sub>k</sub>" }; // the step view's column
  const GENERATE = 60; // characters per click of "generate"
  // Numbers as the page prints them: a minus sign, and (example) whole numbers without decimals.
  const num = (v, digits) => (v < 0 && v.toFixed(digits) !== (0).toFixed(digits) ? "−" : "") + Math.abs(v).toFixed(digits);
  const whole = (v) => (Math.abs(v - Math.round(v)) < 1e-9 ? num(Math.round(v), 0) : num(v, 2));

  function init(root) {
    root.dataset.started = "1";
    const t = JSON.parse(root.dataset.i18n);
    const el = {};
    for (const id of ["status", "text", "temp", "temp-value", "topk", "topk-error", "generate", "bars", "layer",
      "head", "scale", "zoom", "preset", "preset-note", "summary", "tokens", "detail", "heat", "skipped",
      "describe", "live", "cell", "example", "wq", "wk", "reset", "steps", "steps-title", "steps-vecs",
      "steps-table", "steps-scaled", "steps-out", "ramp"]) el[id] = $("ex-" + id);
    el.modes = [...root.querySelectorAll("input[name='ex-mode']")];
    const here = (u) => new URL(u, location.href).href;
    const url = here(root.dataset.model);
    const state = {
      mode: null, model: null, ids: [], run: null, query: -1, timings: [], presets: [], heat: null,
      ex: null, step: null, cell: null, cmap: null,
    };
    window.explorerPage = state; // read by tests/site/test_explorer.py
    const ex = () => state.mode === "example";

    // How a character is shown: spaces and line breaks get a visible sign.
    const show = (c) => (c === " " ? "␣" : c === "\n" ? "↵" : c === "\t" ? "⇥" : c);
    const name = (c) => (c === " " ? t.space : c === "\n" ? t.newline : c);
    // Token i of what is shown: its label (drawn) and its name (read out).
    const label = (i) => (ex() ? state.ex.tokens[i] : show(state.model.chars[state.ids[i]]));
    const nameOf = (i) => (ex() ? state.ex.tokens[i] : name(state.model.chars[state.ids[i]]));
    // A weight as the page prints it: a percentage (model), two decimals as chapter 3 prints A (example).
    const weight = (p) => (ex() ? p.toFixed(2) : `${(100 * p).toFixed(1)}%`);

    // The book's colormap for weights (book.json): colors[round(255 w)], and the text color (black or
    // white, whichever contrasts more) on each.
    function colormap(hex) {
      const rgb = Array.from({ length: hex.length / 6 }, (_, i) => [0, 2, 4].map((o) => parseInt(hex.substr(6 * i + o, 2), 16)));
      const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
      return { rgb, css: rgb.map((c) => `rgb(${c.join(", ")})`),
        ink: rgb.map((c) => ((lum(c) + 0.05) / 0.05 >= 1.05 / (lum(c) + 0.05) ? "#000" : "#fff")) };
    }
    const at = (p) => Math.max(0, Math.min(state.cmap.css.length - 1, Math.round(p * (state.cmap.css.length - 1))));
    const color = (p) => state.cmap.css[at(p)];
    const ink = (p) => state.cmap.ink[at(p)];

    // ------------------------------------------------------------------ the model (chapter 10)

    // Run the model on the text and redraw everything; the time it takes is recorded.
    function update() {
      const t0 = performance.now();
      const m = state.model, { ids, unknown } = m.encode(el.text.value);
      el.skipped.textContent = unknown.length ? fmt(t.skipped, { chars: unknown.map(name).join(" ") }) : "";
      state.ids = ids.slice(-m.config.block_size);
      state.cell = null;
      if (!state.ids.length) {
        state.run = null;
        el.bars.replaceChildren();
        el.tokens.replaceChildren();
        el.summary.textContent = t.empty;
        el.detail.textContent = "";
        drawHeat();
        drawSteps();
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
        li.children[2].textContent = `${(100 * p[i]).toFixed(1)}%`;
        li.setAttribute("aria-label", `${name(m.chars[i])}: ${(100 * p[i]).toFixed(1)}%`);
        return li;
      }));
    }

    // The tokens as buttons (the window's characters, or the example's words); one tab stop, arrow
    // keys move (a roving tabindex).
    function drawTokens() {
      const n = ex() ? state.ex.n : state.ids.length;
      el.tokens.setAttribute("aria-label", ex() ? t.tokens : el.tokens.dataset.label);
      el.tokens.replaceChildren(...Array.from({ length: n }, (_, i) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "ex-tok";
        b.textContent = label(i);
        b.dataset.i = i;
        b.tabIndex = i === state.query ? 0 : -1;
        b.setAttribute("aria-label", fmt(t.token, { i, c: nameOf(i) }));
        return b;
      }));
    }

    // The weights shown (n, n), each row's entropy, and whether the mask is causal: the chosen
    // layer's and head's from the last run, or the example's A.
    function weights() {
      if (ex()) {
        const n = state.ex.n, w = state.ex.A;
        return { n, w, H: CharLMTwin.entropy(w, n, n), causal: false };
      }
      if (!state.run) return null;
      const n = state.ids.length, l = +el.layer.value, h = +el.head.value;
      const w = state.run.attn[l].subarray(h * n * n, (h + 1) * n * n);
      return { n, w, H: CharLMTwin.entropy(w, n, n), causal: true };
    }

    function drawAttention() {
      if (!ex()) {
        const { n, H } = weights();
        let mean = 0, uniform = 0;
        for (let i = 0; i < n; i++) { mean += H[i] / n; uniform += Math.log(i + 1) / n; }
        el.summary.textContent = fmt(t.summary, {
          l: +el.layer.value + 1, h: +el.head.value + 1, e: mean.toFixed(3), u: uniform.toFixed(3),
        });
      }
      select(state.query, false);
    }

    // Highlight what query i attends to: its row of the heatmap, each token it may see colored by its
    // weight, and its steps. With focus, the button of token i takes the keyboard focus too.
    function select(i, focus) {
      const W = weights();
      if (!W) return;
      const { n, w, H, causal } = W;
      state.query = i;
      if (state.cell && state.cell.i !== i) state.cell = null;
      [...el.tokens.children].forEach((b, j) => {
        const seen = !causal || j <= i, p = seen ? w[i * n + j] : 0;
        b.style.setProperty("--w", p.toFixed(3));
        b.style.backgroundColor = seen ? color(p) : "";
        b.style.color = seen ? ink(p) : "";
        b.classList.toggle("ex-query", j === i);
        b.tabIndex = j === i ? 0 : -1;
        b.title = seen ? weight(p) : "";
      });
      if (focus) el.tokens.children[i].focus();
      let best = 0;
      for (let j = 1; j <= (causal ? i : n - 1); j++) if (w[i * n + j] > w[i * n + best]) best = j;
      el.detail.textContent = fmt(ex() ? t.exDetail : t.detail, {
        c: nameOf(i), i, m: nameOf(best), p: weight(w[i * n + best]), e: H[i].toFixed(3), u: Math.log(causal ? i + 1 : n).toFixed(3),
      });
      drawHeat();
      drawCell();
      drawSteps();
    }

    // The heatmap's width, colors and (example) label column, read once and again only on resize or a
    // palette change: reading them after each keystroke's changes would make the browser lay out the page first.
    const look = {};
    function measure() {
      look.width = el.heat.parentElement.clientWidth;
      look.fg = getComputedStyle(document.body).color;
      look.bg = getComputedStyle(document.body).backgroundColor;
      look.font = getComputedStyle(document.body).fontFamily;
      if (state.ex) { // the widest token label at 13 px
        const ctx = el.heat.getContext("2d");
        ctx.font = `13px ${look.font}`;
        look.widest = Math.max(...state.ex.tokens.map((s) => ctx.measureText(s).width));
      }
    }

    // The heatmap's layout: label column, top labels, the "earlier" column, the cells, the entropy bars.
    // Rows are at least ROW px tall (a touch target, WCAG 2.2) unless more than TALL / ROW are shown.
    const LABEL = 18, TOP = 18, GAP = 8, ENT = 56, BOTTOM = 16, MIN_CELL = 14, MAX_CELL = 24, ROW = 24;
    const MAX_HEIGHT = 400, TALL = 768, EX_CELL = 56;
    function view() {
      const causal = !ex(), n = causal ? state.ids.length : state.ex.n, z = causal ? el.zoom.value : "all";
      const label = causal ? LABEL : Math.min(Math.ceil(look.widest) + 8, Math.floor(look.width / 4));
      const room = look.width - label - 2 * GAP - ENT;
      const fit = Math.min(Math.floor(room / MIN_CELL) - 1, Math.floor(MAX_HEIGHT / ROW));
      const k = Math.max(1, Math.min(n, z === "all" ? n : z === "auto" ? fit : +z));
      const start = n - k, earlier = start > 0 ? 1 : 0;
      const cw = Math.max(4, Math.min(causal ? MAX_CELL : EX_CELL, Math.floor(room / (k + earlier))));
      const rh = Math.max(cw, Math.min(ROW, Math.floor(TALL / k)));
      const x0 = label + earlier * (cw + 3); // the first shown key's column
      return { n, k, start, earlier, cw, rh, label, causal, x0, y0: TOP, ent: x0 + k * cw + GAP };
    }

    // The heatmap: row i = query i, column j = key j, colored by weight with the book's colormap; masked
    // cells (j > i, model only) stay empty. Only the last k characters are drawn (view); the "earlier"
    // column left of them holds each row's weight on the characters before those. Right of each row,
    // a bar of its entropy on a scale from 0 to ln n (a uniform row over the whole window), marked below.
    function drawHeat() {
      const c = el.heat, ctx = c.getContext("2d"), dpr = window.devicePixelRatio || 1;
      const { fg, bg, font } = look;
      const W = weights();
      if (!W) { c.width = 0; c.height = 0; state.heat = null; return; }
      const { n, w, H } = W, v = view(), { k, start, cw, rh, x0, y0, ent } = v;
      const css = { w: ent + ENT + 2, h: y0 + k * rh + BOTTOM };
      c.width = css.w * dpr;
      c.height = css.h * dpr;
      c.style.width = css.w + "px";
      c.style.height = css.h + "px";
      ctx.scale(dpr, dpr);
      const size = v.causal ? Math.min(13, cw - 1) : Math.min(13, Math.floor((13 * (cw - 4)) / look.widest), Math.floor((13 * (v.label - 6)) / look.widest));
      ctx.font = `${size}px ${font}`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillStyle = fg;
      const labels = cw >= 9;
      if (v.earlier) ctx.fillText("…", v.label + cw / 2, y0 / 2);
      for (let j = 0; j < k && labels; j++) ctx.fillText(label(start + j), x0 + j * cw + cw / 2, y0 / 2);
      const full = Math.log(n) || 1;
      for (let r = 0; r < k; r++) {
        const i = start + r, y = y0 + r * rh, last = v.causal ? i : n - 1;
        ctx.fillStyle = fg;
        ctx.textAlign = v.causal ? "center" : "right";
        if (labels) ctx.fillText(label(i), v.causal ? v.label / 2 : v.label - 4, y + rh / 2); // the query
        ctx.textAlign = "center";
        if (v.earlier) {
          let before = 0;
          for (let j = 0; j < start; j++) before += w[i * n + j];
          ctx.fillStyle = color(before);
          ctx.fillRect(v.label, y, cw, rh);
        }
        for (let j = start; j <= last; j++) {
          ctx.fillStyle = color(w[i * n + j]);
          ctx.fillRect(x0 + (j - start) * cw, y, cw, rh);
        }
        if (!v.causal && cw >= 30) { // the example's cells print their weights, as figure 3.3 does
          ctx.font = `11px ${font}`;
          for (let j = 0; j < n; j++) {
            ctx.fillStyle = ink(w[i * n + j]);
            ctx.fillText(w[i * n + j].toFixed(2), x0 + j * cw + cw / 2, y + rh / 2);
          }
          ctx.font = `${size}px ${font}`;
        }
        ctx.fillStyle = "rgba(230, 81, 0, 0.85)"; // orange: the row's entropy
        ctx.fillRect(ent, y + 1, (ENT * H[i]) / full, Math.max(1, rh - 2));
      }
      ctx.strokeStyle = fg; // the scale of the entropy bars: 0 .. ln n
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(ent, y0 + k * rh + 2);
      ctx.lineTo(ent + ENT, y0 + k * rh + 2);
      ctx.stroke();
      ctx.font = `11px ${font}`;
      ctx.fillStyle = fg;
      ctx.textAlign = "left";
      ctx.fillText("0", ent, y0 + k * rh + 10);
      ctx.textAlign = "right";
      ctx.fillText(full.toFixed(2), ent + ENT, y0 + k * rh + 10);
      ctx.textAlign = "center";
      ctx.fillText(`${t.entropy}`, ent + ENT / 2, y0 / 2);
      // The selected query's row, and the tapped cell: a line in the text color on a halo of the background.
      const halo = (x, y, wd, ht) => {
        ctx.lineWidth = 4; ctx.strokeStyle = bg; ctx.strokeRect(x, y, wd, ht);
        ctx.lineWidth = 2; ctx.strokeStyle = fg; ctx.strokeRect(x, y, wd, ht);
      };
      const q = state.query;
      if (q >= start) halo(v.label, y0 + (q - start) * rh, x0 - v.label + k * cw, rh);
      const cell = state.cell;
      if (cell && cell.i >= start) {
        const x = cell.j < 0 ? v.label : cell.j >= start ? x0 + (cell.j - start) * cw : null;
        if (x !== null) halo(x, y0 + (cell.i - start) * rh, cw, rh);
      }
      state.heat = { ...v, layer: ex() ? null : +el.layer.value, head: ex() ? null : +el.head.value, dpr };
      c.setAttribute("aria-label", ex() ? t.exHeat : fmt(t.heat, { n: k, l: +el.layer.value + 1, h: +el.head.value + 1 }));
    }

    // The cell under a pointer or a tap: { i, j } (j = -1: the "earlier" column; null: no cell).
    function hit(e) {
      const v = state.heat;
      if (!v) return null;
      const r = el.heat.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      const row = Math.floor((y - v.y0) / v.rh);
      if (row < 0 || row >= v.k) return null;
      const i = v.start + row;
      if (v.earlier && x >= v.label && x < v.label + v.cw) return { i, j: -1 };
      const col = Math.floor((x - v.x0) / v.cw), j = v.start + col;
      return { i, j: x >= v.x0 && col < v.k && (!v.causal || j <= i) ? j : null };
    }

    // The value of the tapped (or pointed) cell, or how to get one.
    function drawCell() {
      const c = state.cell, W = weights();
      if (!c || !W) { el.cell.textContent = W ? t.cellHint : ""; return; }
      let p = 0;
      if (c.j < 0) for (let j = 0; j < state.heat.start; j++) p += W.w[c.i * W.n + j];
      else p = W.w[c.i * W.n + c.j];
      el.cell.textContent = fmt(t.cell, { q: nameOf(c.i), k: c.j < 0 ? t.earlier : nameOf(c.j), p: weight(p) });
    }

    function pointAt(e, tap) {
      const h = hit(e);
      if (!h) return;
      const cell = h.j === null ? null : { i: h.i, j: h.j };
      const same = (a, b) => (a && b ? a.i === b.i && a.j === b.j : a === b);
      if (!tap && h.i === state.query && (!cell || same(cell, state.cell))) return; // nothing new under the pointer
      if (cell || tap) state.cell = cell;
      if (h.i !== state.query || tap) select(h.i, false); else { drawHeat(); drawCell(); }
    }

    // The steps behind the selected query's row: q, the scores q.k of the keys it may see, the scaled
    // scores and the softmax (the row of the heatmap) as bars; for the example also x, each key's k
    // and the output o. state.step holds the numbers (read by tests/site/test_explorer.py), computed at
    // once; the table is written only while the step view is on the screen (or as soon as it comes
    // into view): below the heatmap, it would otherwise double the work of each keystroke.
    let stepsSeen = false, paintSteps = null;
    function drawSteps() {
      const i = state.query;
      if (!ex() && !state.run) { el.steps.hidden = true; state.step = null; paintSteps = null; return; }
      el.steps.hidden = false;
      let s, title, vecs, out = "", scaled, rows = [];
      if (ex()) {
        const e = state.ex;
        s = { mode: "example", query: i, x: e.x[i], q: e.q[i], k: e.k, scores: e.s[i], scaled: e.scaled[i],
          weights: e.a[i], o: e.o[i] };
        title = fmt(t.exSteps, { c: nameOf(i) });
        const vec = (head, xs, f) => `<tr><th scope="row">${head}</th>${xs.map((z) => `<td>${f(z)}</td>`).join("")}</tr>`;
        const thead = `<thead><tr><td></td>${e.features.map((f) => `<th scope="col">${esc(f)}</th>`).join("")}</tr></thead>`;
        vecs = `<table class="ex-vec">${thead}<tbody>${vec("x", s.x, whole)}${vec("q = xW<sub>q</sub>", s.q, whole)}</tbody></table>`;
        out = `<table class="ex-vec">${thead}<tbody>${vec("o = Σ<sub>j</sub> a<sub>j</sub>v<sub>j</sub>", s.o, (z) => num(z, 2))}</tbody></table>`;
        scaled = SCALED.sqrt;
        for (let j = 0; j < e.n; j++) rows.push({ j, label: label(j), key: e.k[j].map(whole).join(" "), s: whole(s.scores[j]), sc: whole(s.scaled[j]), w: s.weights[j] });
      } else {
        const m = state.model, l = +el.layer.value, h = +el.head.value, r = m.steps(state.run, l, h, i);
        s = { mode: "model", layer: l, head: h, query: i, scale: state.run.scale, q: [...r.q], scores: [...r.scores],
          scaled: [...r.scaled], weights: [...r.weights] };
        title = fmt(t.steps, { c: nameOf(i), i, l: l + 1, h: h + 1 });
        vecs = `<p>${fmt(t.stepsQ, { h: h + 1, dh: m.dh })}</p><p class="ex-nums">${s.q.map((z) => `<span>${num(z, 2)}</span>`).join("")}</p>`;
        scaled = SCALED[el.scale.value];
        for (let j = 0; j <= i; j++) rows.push({ j, label: label(j), key: "", s: num(s.scores[j], 2), sc: num(s.scaled[j], 2), w: s.weights[j] });
      }
      state.step = s;
      // The largest weights in bold (all of them, where several tie; none in a uniform row).
      const top = Math.max(...rows.map((r) => r.w)), low = Math.min(...rows.map((r) => r.w));
      const best = (r) => rows.length > 1 && top - low > 1e-9 && top - r.w < 1e-9;
      paintSteps = () => {
        el["steps-title"].textContent = title;
        el["steps-vecs"].innerHTML = vecs;
        el["steps-out"].innerHTML = out;
        el["steps-scaled"].innerHTML = scaled;
        el["steps-table"].tBodies[0].innerHTML = rows.map((r) => `<tr${best(r) ? ' class="ex-best"' : ""}>`
          + `<th scope="row"><span class="ex-pos">${r.j}</span> ${esc(r.label)}</th><td class="ex-k">${r.key}</td>`
          + `<td>${r.s}</td><td>${r.sc}</td><td class="ex-w"><span class="ex-sbar"><span style="width: ${(100 * r.w).toFixed(2)}%; `
          + `background: ${color(r.w)}"></span></span><span class="ex-wv">${weight(r.w)}</span></td></tr>`).join("");
      };
      if (stepsSeen) flushSteps();
    }
    function flushSteps() {
      if (paintSteps) paintSteps();
      paintSteps = null;
    }
    new IntersectionObserver((entries) => {
      stepsSeen = entries[entries.length - 1].isIntersecting;
      if (stepsSeen) flushSteps();
    }).observe(el.steps);
    Object.defineProperty(state, "stepsPainted", { get: () => paintSteps === null }); // (for the tests)

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
      const said = ex() ? el.detail.textContent : `${el.summary.textContent} ${el.detail.textContent}`;
      setTimeout(() => { el.live.textContent = said; }, 50);
    }

    // ------------------------------------------------------------------ the example (chapter 3)

    // The example's matrices W_q and W_k as tables of number inputs (row = an input feature).
    function drawMatrices() {
      const e = state.ex;
      for (const [key, box] of [["wq", el.wq], ["wk", el.wk]]) {
        const head = `<thead><tr><td></td>${e.features.map((f) => `<th scope="col">${esc(f)}</th>`).join("")}</tr></thead>`;
        const body = e[key].map((row, r) => `<tr><th scope="row">${esc(e.features[r])}</th>${row.map((v, c) =>
          `<td><input type="number" step="any" inputmode="decimal" value="${v}" data-m="${key}" data-r="${r}" data-c="${c}" `
          + `aria-label="${esc(fmt(t.entry, { m: t[key], r: e.features[r], c: e.features[c] }))}"></td>`).join("")}</tr>`).join("");
        const table = box.querySelector("table"); // its caption stays
        table.querySelectorAll("thead, tbody").forEach((e) => e.remove());
        table.insertAdjacentHTML("beforeend", head + `<tbody>${body}</tbody>`);
      }
    }

    function computeExample() {
      const e = state.ex;
      Object.assign(e, CharLMTwin.attention(e.x, e.wq, e.wk, e.wv));
      e.A = Float64Array.from(e.a.flat());
    }

    function editEntry(input) { // a typed entry of W_q or W_k: a number recomputes everything
      const v = input.value.trim() === "" ? NaN : Number(input.value);
      input.setAttribute("aria-invalid", Number.isFinite(v) ? "false" : "true");
      if (!Number.isFinite(v)) return;
      state.ex[input.dataset.m][+input.dataset.r][+input.dataset.c] = v;
      computeExample();
      drawAttention();
    }

    function resetExample() {
      const b = state.ex.book;
      state.ex.wq = b.w_q.map((r) => [...r]);
      state.ex.wk = b.w_k.map((r) => [...r]);
      drawMatrices();
      computeExample();
      drawAttention();
    }

    // ------------------------------------------------------------------ the two modes

    const bookUrl = here(root.dataset.book);
    const book = fetch(bookUrl).then((r) => {
      if (!r.ok) throw new Error(`${root.dataset.book}: HTTP ${r.status}`);
      return r.json();
    });
    let modelSetUp = null; // Promise: the model and the presets, loaded once, the first time "model" is chosen

    function failed(err) {
      el.status.textContent = fmt(t.failed, { error: err.message });
      console.error(err);
    }

    function setMode(mode, remember) {
      state.mode = mode;
      root.dataset.mode = mode;
      delete root.dataset.ready;
      el.modes.forEach((r) => { r.checked = r.value === mode; });
      if (remember) { // the address says which mode is shown (chapter 3 links to ?mode=example)
        const u = new URL(location.href);
        if (mode === "example") u.searchParams.set("mode", "example"); else u.searchParams.delete("mode");
        history.replaceState(history.state, "", u);
      }
      state.cell = null;
      if (mode === "example") {
        el.status.textContent = t.exReady;
        state.query = state.ex.start;
        measure();
        drawTokens();
        drawAttention();
        root.dataset.ready = "1";
        return;
      }
      el.status.textContent = t.loading;
      modelSetUp = modelSetUp || setUpModel();
      modelSetUp.then(() => {
        if (state.mode !== "model") return;
        const c = state.model.config;
        el.status.textContent = fmt(t.ready, { layers: c.num_layers, heads: c.num_heads, V: c.vocab_size, bs: c.block_size });
        measure();
        if (state.run) { state.query = state.ids.length - 1; drawTokens(); drawAttention(); } else update();
        state.timings.length = 0; // the first run is not a keystroke
        root.dataset.ready = "1";
      }).catch(failed);
    }

    // The model's controls, filled and enabled once; the page opens with the first preset.
    function setUpModel() {
      if (!models.has(url)) models.set(url, CharLMTwin.load(url));
      const presetsUrl = root.dataset.presets && here(root.dataset.presets);
      const presets = presetsUrl ? fetch(presetsUrl).then((r) => (r.ok ? r.json() : { presets: [] })) : Promise.resolve({ presets: [] });
      return Promise.all([models.get(url), presets]).then(([m, ps]) => {
        state.model = m;
        state.presets = ps.presets || [];
        const c = m.config;
        el.layer.replaceChildren(...Array.from({ length: c.num_layers }, (_, i) => new Option(`${i + 1}`, i)));
        el.head.replaceChildren(...Array.from({ length: c.num_heads }, (_, i) => new Option(`${i + 1}`, i)));
        el.preset.append(...state.presets.map((p, i) => new Option(`${p.layer + 1}.${p.head + 1} · ${p.label}`, i)));
        el.topk.max = c.vocab_size;
        [el.text, el.temp, el.topk, el.generate, el.layer, el.head, el.scale, el.zoom, el.preset]
          .forEach((e) => { e.disabled = false; });
        el.preset.disabled = !state.presets.length;
        el.text.value = root.dataset.prompt;
        if (state.presets.length) el.preset.value = "0"; // opens with the first preset and its sentence
        const p = chosen();
        el["preset-note"].textContent = p ? fmt(t.preset, { s: p.sentence }) : "";
        if (p) { el.text.value = p.prompt; el.layer.value = p.layer; el.head.value = p.head; }
      });
    }

    const whenModel = (f) => (...a) => { if (!ex() && state.model) f(...a); };
    el.temp.addEventListener("input", () => {
      el["temp-value"].value = (+el.temp.value).toFixed(2);
      if (state.run) drawBars();
    });
    el.text.addEventListener("input", whenModel(update));
    el.scale.addEventListener("change", whenModel(update));
    el.layer.addEventListener("change", whenModel(() => { leavePreset(); if (state.run) drawAttention(); }));
    el.head.addEventListener("change", whenModel(() => { leavePreset(); if (state.run) drawAttention(); }));
    el.zoom.addEventListener("change", whenModel(() => state.run && drawHeat()));
    el.preset.addEventListener("change", whenModel(applyPreset));
    el.topk.addEventListener("input", whenModel(topK));
    el.generate.addEventListener("click", whenModel(generate));
    el.describe.addEventListener("click", describe);
    const pick = (e) => e.target.dataset && e.target.dataset.i !== undefined && +e.target.dataset.i;
    el.tokens.addEventListener("mouseover", (e) => { const i = pick(e); if (i !== false && i !== state.query) select(i, false); });
    el.tokens.addEventListener("focusin", (e) => { const i = pick(e); if (i !== false && i !== state.query) select(i, false); });
    el.tokens.addEventListener("click", (e) => { const i = pick(e); if (i !== false) select(i, false); });
    el.tokens.addEventListener("keydown", (e) => {
      const step = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1 }[e.key];
      const n = el.tokens.children.length;
      const to = e.key === "Home" ? 0 : e.key === "End" ? n - 1 : state.query + (step || 0);
      if (!step && e.key !== "Home" && e.key !== "End") return;
      e.preventDefault();
      select(Math.max(0, Math.min(n - 1, to)), true);
    });
    el.heat.addEventListener("mousemove", (e) => pointAt(e, false)); // the row and cell under the pointer
    el.heat.addEventListener("click", (e) => pointAt(e, true)); // a tap (or click): that cell's value
    el.wq.addEventListener("input", (e) => editEntry(e.target));
    el.wk.addEventListener("input", (e) => editEntry(e.target));
    el.reset.addEventListener("click", resetExample);
    el.modes.forEach((r) => r.addEventListener("change", () => { if (r.checked) setMode(r.value, true); }));
    const redraw = () => { measure(); if (state.mode && weights()) drawHeat(); };
    window.addEventListener("resize", redraw);
    new MutationObserver(redraw) // the light/dark toggle
      .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });

    book.then((b) => {
      state.cmap = { name: b.cmap.name, ...colormap(b.cmap.colors) };
      const stops = Array.from({ length: 11 }, (_, i) => color(i / 10)).join(", ");
      el.ramp.style.background = `linear-gradient(to right, ${stops})`;
      [...el.ramp.children].forEach((s) => { s.style.color = ink(+s.textContent); });
      const e = b.example;
      state.ex = { book: e, tokens: e.tokens, features: e.features, x: e.x, wv: e.w_v, n: e.x.length, wq: null, wk: null };
      state.ex.wq = e.w_q.map((r) => [...r]);
      state.ex.wk = e.w_k.map((r) => [...r]);
      computeExample();
      // The example opens on the query with the clearest pick: the largest weight of any row.
      state.ex.start = state.ex.a.reduce((best, r, i, a) => (Math.max(...r) > Math.max(...a[best]) ? i : best), 0);
      drawMatrices();
      el.modes.forEach((r) => { r.disabled = false; });
      el.reset.disabled = false;
      setMode(new URLSearchParams(location.search).get("mode") === "example" ? "example" : "model", false);
    }).catch(failed);
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
