// A JavaScript twin of selfattn.model.CharLM (docs/10-capstone.md), for the explorer page.
//
// It computes what CharLM computes, step by step and in the same order, on the same float32
// weights: token + position embeddings, then per block x + Attn(LN1(x)) and x + FFN(LN2(x))
// (Pre-LN, causal, GELU with erf), then the final LayerNorm and the head. Sums run in float64
// (JavaScript numbers); each step's result is stored in a Float32Array, as PyTorch stores it.
// tests/site/test_explorer.py runs it in Chromium and compares the logits and every layer's
// attention weights with CharLM in PyTorch (float32, max abs difference <= 1e-4), and the steps
// behind one row of weights (steps: q, the scores q.k, the scaled scores) too.
//
// attention() is chapter 3's formula on the worked example (selfattn.example, exported by
// tools/data/explorer_book.py), in float64: the explorer's second mode.
//
// The weights come from tools/data/explorer_export.py: charlm.json (config, vocabulary, and for each
// tensor of the state dict its offset and shape) and charlm.bin (float16, little-endian), turned
// into float32 here (halfToFloat), as selfattn.charlm.load turns the float16 checkpoint.
"use strict";
(function (root) {
  const EPS = 1e-5; // nn.LayerNorm's default eps

  // erf(x) in float64 (JavaScript has none). erfSlow sums a Taylor series for |x| < 2.5 and a
  // continued fraction for erfc beyond: accurate, but too slow for every activation. erf
  // interpolates a table of it (step 1/64 on [0, 6], cubic Hermite with the exact derivative
  // 2/sqrt(pi) exp(-x^2)); tests/site/test_explorer.py compares it with Python's math.erf.
  function erfSlow(x) {
    const a = Math.abs(x);
    if (a < 2.5) { // 2/sqrt(pi) sum_k (-1)^k x^(2k+1) / (k! (2k+1))
      let term = a, sum = a;
      for (let k = 1; Math.abs(term) > 1e-17 * sum; k++) {
        term *= -a * a / k;
        sum += term / (2 * k + 1);
      }
      return Math.sign(x) * sum * 2 / Math.sqrt(Math.PI);
    }
    let f = a; // erfc(a) = exp(-a^2) / sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
    for (let k = 60; k >= 1; k--) f = a + (k / 2) / f;
    return Math.sign(x) * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / f);
  }
  const STEPS = 64, XMAX = 6; // erf(6) = 1 - 2e-17: 1 in float64
  const TABLE = Float64Array.from({ length: STEPS * XMAX + 2 }, (_, i) => erfSlow(i / STEPS));
  const SLOPE = Float64Array.from(TABLE, (_, i) => (2 / Math.sqrt(Math.PI)) * Math.exp(-((i / STEPS) ** 2)) / STEPS);
  function erf(x) {
    const a = Math.abs(x);
    if (!(a < XMAX)) return Number.isNaN(x) ? x : Math.sign(x);
    const u = a * STEPS, i = Math.floor(u), t = u - i, s = 1 - t;
    const y = (1 + 2 * t) * s * s * TABLE[i] + t * s * s * SLOPE[i]
      + t * t * (3 - 2 * t) * TABLE[i + 1] - t * t * s * SLOPE[i + 1];
    return Math.sign(x) * y;
  }
  const gelu = (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)); // nn.GELU(): the exact form

  // y = x W^T + b for n rows: x (n, i), W (o, i) as nn.Linear stores it, b (o,) or null.
  // For speed, four rows at a time share each weight they load, and a single row (a new token)
  // keeps four running sums: the same float64 sums, added in another order.
  function linear(x, n, lin) {
    const [o, i] = lin.w.shape, w = lin.w.data, b = lin.b && lin.b.data;
    const y = new Float32Array(n * o);
    let r = 0;
    for (; r + 3 < n; r += 4) {
      for (let c = 0; c < o; c++) {
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let k = 0, x0 = r * i, wo = c * i; k < i; k++) {
          const wk = w[wo + k];
          s0 += x[x0 + k] * wk;
          s1 += x[x0 + i + k] * wk;
          s2 += x[x0 + 2 * i + k] * wk;
          s3 += x[x0 + 3 * i + k] * wk;
        }
        const bc = b ? b[c] : 0;
        y[r * o + c] = bc + s0;
        y[(r + 1) * o + c] = bc + s1;
        y[(r + 2) * o + c] = bc + s2;
        y[(r + 3) * o + c] = bc + s3;
      }
    }
    for (; r < n; r++) {
      for (let c = 0; c < o; c++) {
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0, k = 0;
        const xo = r * i, wo = c * i;
        for (; k + 3 < i; k += 4) {
          s0 += x[xo + k] * w[wo + k];
          s1 += x[xo + k + 1] * w[wo + k + 1];
          s2 += x[xo + k + 2] * w[wo + k + 2];
          s3 += x[xo + k + 3] * w[wo + k + 3];
        }
        for (; k < i; k++) s0 += x[xo + k] * w[wo + k];
        y[r * o + c] = (b ? b[c] : 0) + (s0 + s1 + s2 + s3);
      }
    }
    return y;
  }

  // LayerNorm over the last dimension (biased variance, eps inside the square root).
  function layerNorm(x, n, ln) {
    const g = ln.w.data, b = ln.b.data, d = g.length, y = new Float32Array(n * d);
    for (let r = 0; r < n; r++) {
      let mean = 0, v = 0;
      for (let k = 0; k < d; k++) mean += x[r * d + k];
      mean /= d;
      for (let k = 0; k < d; k++) v += (x[r * d + k] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / d + EPS);
      for (let k = 0; k < d; k++) y[r * d + k] = (x[r * d + k] - mean) * inv * g[k] + b[k];
    }
    return y;
  }

  // One layer's attention for t new queries against T cached keys and values (T >= t, the new
  // rows are the last t of the cache): query i sees keys 0 .. T - t + i (causal, bottom-right).
  // q: (t, d); cache.k, cache.v: (T, d) with head h in columns h*dh .. (h+1)*dh - 1.
  // Returns the heads' outputs concatenated (t, d) and the weights (h, t, T).
  function attend(q, t, cache, T, heads, scale) {
    const d = q.length / t, dh = d / heads;
    const out = new Float32Array(t * d), wts = new Float32Array(heads * t * T);
    const s = new Float64Array(T), qs = new Float32Array(dh);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < t; i++) {
        const last = T - t + i; // the newest key query i may see
        for (let c = 0; c < dh; c++) qs[c] = q[i * d + h * dh + c] * scale; // (q * scale) @ k^T
        let max = -Infinity;
        for (let j = 0; j <= last; j++) {
          let dot = 0;
          for (let c = 0; c < dh; c++) dot += qs[c] * cache.k[j * d + h * dh + c];
          s[j] = Math.fround(dot);
          if (s[j] > max) max = s[j];
        }
        let sum = 0;
        for (let j = 0; j <= last; j++) sum += (s[j] = Math.exp(s[j] - max));
        const row = (h * t + i) * T;
        for (let j = 0; j <= last; j++) wts[row + j] = s[j] / sum; // softmax; masked keys stay 0
        for (let c = 0; c < dh; c++) {
          let acc = 0;
          for (let j = 0; j <= last; j++) acc += wts[row + j] * cache.v[j * d + h * dh + c];
          out[i * d + h * dh + c] = acc;
        }
      }
    }
    return { out, wts };
  }

  class CharLM {
    // manifest: the parsed charlm.json; data: the values of charlm.bin, as a Float32Array.
    constructor(manifest, data) {
      const c = manifest.config;
      this.config = c;
      this.chars = [...manifest.chars];
      this.index = new Map(this.chars.map((ch, i) => [ch, i]));
      this.d = c.d_model;
      this.heads = c.num_heads;
      this.dh = c.d_model / c.num_heads;
      const t = (name) => {
        const e = manifest.tensors[name];
        if (!e) return null;
        const size = e.shape.reduce((a, b) => a * b, 1);
        return { data: data.subarray(e.offset, e.offset + size), shape: e.shape };
      };
      const lin = (p) => ({ w: t(p + ".weight"), b: t(p + ".bias") });
      this.tok = t("tok.weight");
      this.pos = t("pos.weight");
      this.blocks = [];
      for (let l = 0; l < c.num_layers; l++) {
        const p = `blocks.${l}.`;
        this.blocks.push({
          ln1: lin(p + "ln1"), inProj: lin(p + "attn.in_proj"), outProj: lin(p + "attn.out_proj"),
          ln2: lin(p + "ln2"), ff1: lin(p + "ff.0"), ff2: lin(p + "ff.3"),
        });
      }
      this.ln = lin("ln");
      this.head = lin("head");
    }

    // The ids of a text; characters outside the vocabulary are left out (and listed).
    encode(text) {
      const ids = [], unknown = new Set();
      for (const ch of text) {
        if (this.index.has(ch)) ids.push(this.index.get(ch)); else unknown.add(ch);
      }
      return { ids, unknown: [...unknown] };
    }

    // Token plus position embeddings of ids at positions start, start + 1, ...  -> (n, d)
    embed(ids, start) {
      const d = this.d, x = new Float32Array(ids.length * d);
      ids.forEach((id, r) => {
        for (let k = 0; k < d; k++) x[r * d + k] = this.tok.data[id * d + k] + this.pos.data[(start + r) * d + k];
      });
      return x;
    }

    // The blocks on x (t new tokens), given each layer's cache of queries, keys and values (which
    // grows by t rows; the queries only for the step view). Returns the new x, each layer's
    // attention weights (h, t, T) and block output.
    blocksOn(x, t, caches, scale) {
      const d = this.d, attn = [], hidden = [];
      this.blocks.forEach((b, l) => {
        const qkv = linear(layerNorm(x, t, b.ln1), t, b.inProj); // (t, 3d): q | k | v
        const c = caches[l], T = c.length + t, q = new Float32Array(t * d);
        for (let i = 0; i < t; i++) {
          q.set(qkv.subarray(i * 3 * d, i * 3 * d + d), i * d);
          c.q.set(qkv.subarray(i * 3 * d, i * 3 * d + d), (c.length + i) * d);
          c.k.set(qkv.subarray(i * 3 * d + d, i * 3 * d + 2 * d), (c.length + i) * d);
          c.v.set(qkv.subarray(i * 3 * d + 2 * d, i * 3 * d + 3 * d), (c.length + i) * d);
        }
        c.length = T;
        const { out, wts } = attend(q, t, c, T, this.heads, scale);
        const a = linear(out, t, b.outProj);
        const x1 = new Float32Array(t * d);
        for (let k = 0; k < t * d; k++) x1[k] = x[k] + a[k]; // residual
        const f = linear(layerNorm(x1, t, b.ln2), t, b.ff1);
        for (let k = 0; k < f.length; k++) f[k] = gelu(f[k]);
        const f2 = linear(f, t, b.ff2);
        x = new Float32Array(t * d);
        for (let k = 0; k < t * d; k++) x[k] = x1[k] + f2[k];
        attn.push(wts);
        hidden.push(x);
      });
      return { x, attn, hidden };
    }

    newCache() {
      const size = this.config.block_size * this.d;
      return this.blocks.map(() => ({
        q: new Float32Array(size), k: new Float32Array(size), v: new Float32Array(size), length: 0,
      }));
    }

    // The numbers behind row i of the weights of layer l's head h in a run (forward or update):
    // the query q_i of that head (dh), the scores q_i . k_j of the keys j <= i, the scores times
    // the run's scale, and the weights themselves, as the heatmap shows them (the run's row).
    steps(run, l, h, i) {
      const c = run.cache[l], d = this.d, dh = this.dh, n = run.ids.length, o = h * dh;
      const q = c.q.slice(i * d + o, i * d + o + dh);
      const scores = new Float32Array(i + 1), scaled = new Float32Array(i + 1);
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let k = 0; k < dh; k++) dot += q[k] * c.k[j * d + o + k];
        scores[j] = Math.fround(dot);
        scaled[j] = Math.fround(scores[j] * run.scale);
      }
      const weights = run.attn[l].slice((h * n + i) * n, (h * n + i) * n + i + 1);
      return { q, scores, scaled, weights };
    }

    // The whole window: ids (n <= block_size). Returns logits (n, V) (or only the last row,
    // with lastOnly), attention weights per layer (h, n, n), each block's output (n, d) and
    // the filled key/value cache. scale multiplies q k^T (default 1/sqrt(d_k), as trained).
    forward(ids, { scale = 1 / Math.sqrt(this.dh), lastOnly = false } = {}) {
      const n = ids.length;
      if (n < 1 || n > this.config.block_size) throw new RangeError(`forward: ${n} ids, block_size ${this.config.block_size}`);
      const cache = this.newCache();
      const r = this.blocksOn(this.embed(ids, 0), n, cache, scale);
      const rows = lastOnly ? r.x.subarray((n - 1) * this.d) : r.x;
      const logits = linear(layerNorm(rows, lastOnly ? 1 : n, this.ln), lastOnly ? 1 : n, this.head);
      return { ids, scale, logits, attn: r.attn, hidden: r.hidden, cache };
    }

    // forward(ids, { scale, lastOnly: true }) after an earlier result prev of that scale (whose
    // cache it takes over). The mask is causal, so the rows of the characters that ids shares
    // with prev.ids from the start are unchanged: only the rest goes through the blocks, as in
    // the KV cache of section 10.4. Typing a character computes one new row per layer.
    update(prev, ids, scale = 1 / Math.sqrt(this.dh)) {
      const n = ids.length;
      let p = 0;
      if (prev && prev.scale === scale) while (p < prev.ids.length && p < n && prev.ids[p] === ids[p]) p++;
      if (p === 0) return this.forward(ids, { scale, lastOnly: true });
      p = Math.min(p, n - 1); // at least the last character: its logits are shown
      const m = prev.ids.length, t = n - p, cache = prev.cache, h = this.heads;
      cache.forEach((c) => { c.length = p; });
      const r = this.blocksOn(this.embed(ids.slice(p), p), t, cache, scale);
      const attn = r.attn.map((w, l) => { // old rows from prev (h, m, m), new rows from w (h, t, n)
        const a = new Float32Array(h * n * n), old = prev.attn[l];
        for (let hh = 0; hh < h; hh++) {
          for (let i = 0; i < p; i++) a.set(old.subarray((hh * m + i) * m, (hh * m + i) * m + i + 1), (hh * n + i) * n);
          a.set(w.subarray(hh * t * n, (hh + 1) * t * n), (hh * n + p) * n);
        }
        return a;
      });
      const logits = linear(layerNorm(r.x.subarray((t - 1) * this.d), 1, this.ln), 1, this.head);
      return { ids, scale, logits, attn, hidden: null, cache };
    }

    // Logits for the token after ids, as selfattn.model.next_logits computes them: with a cache
    // holding ids[:-1], only the newest token goes through the blocks; past block_size the window
    // moves, every position changes, and the window is computed again. Returns { logits, cache }.
    next(ids, cache, scale = 1 / Math.sqrt(this.dh)) {
      const n = ids.length, bs = this.config.block_size;
      if (cache && n <= bs && cache[0].length === n - 1) {
        const r = this.blocksOn(this.embed(ids.slice(-1), n - 1), 1, cache, scale);
        return { logits: linear(layerNorm(r.x, 1, this.ln), 1, this.head), cache };
      }
      const r = this.forward(ids.slice(-bs), { scale, lastOnly: true });
      return { logits: r.logits, cache: r.cache };
    }
  }

  // Scaled dot-product attention as chapter 3 writes it, on small matrices given as arrays of rows,
  // in float64: Q = X W_q, K = X W_k, V = X W_v (W: row = an input feature), S = Q K^T, the scaled
  // scores S / sqrt(d_k), A = softmax of each row (no mask), O = A V.
  function attention(x, wq, wk, wv) {
    const mm = (a, b) => a.map((r) => b[0].map((_, c) => r.reduce((s, v, k) => s + v * b[k][c], 0)));
    const q = mm(x, wq), k = mm(x, wk), v = mm(x, wv), dk = wk[0].length;
    const s = q.map((qi) => k.map((kj) => qi.reduce((acc, v, c) => acc + v * kj[c], 0)));
    const scaled = s.map((r) => r.map((z) => z / Math.sqrt(dk)));
    const a = scaled.map((r) => Array.from(softmax(r)));
    return { q, k, v, s, scaled, a, o: mm(a, v), dk };
  }

  // softmax(logits / temperature) as float64 probabilities.
  function softmax(logits, temperature = 1) {
    let max = -Infinity;
    for (const z of logits) max = Math.max(max, z / temperature);
    const p = Float64Array.from(logits, (z) => Math.exp(z / temperature - max));
    const sum = p.reduce((a, b) => a + b, 0);
    return p.map((x) => x / sum);
  }

  // Sample an id from softmax(logits / temperature) over the top_k most likely ids (ties at the
  // k-th logit stay in, as in selfattn.model.generate); u is a uniform number in [0, 1).
  function sample(logits, temperature, topK, u) {
    const kth = Float32Array.from(logits).sort().reverse()[Math.min(topK, logits.length) - 1];
    const p = softmax(logits.map((z) => (z < kth ? -Infinity : z)), temperature);
    let acc = 0;
    for (let i = 0; i < p.length; i++) if (p[i] > 0 && (acc += p[i]) > u) return i;
    return p.findLastIndex((x) => x > 0);
  }

  // Entropy in nats of each row of weights (rows, T); zeros count as 0 log 0 = 0.
  function entropy(w, rows, T) {
    const h = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < T; j++) { const p = w[r * T + j]; if (p > 0) h[r] -= p * Math.log(p); }
    }
    return h;
  }

  // float16 (IEEE half precision, as 16-bit integers) to float32: sign, 5 exponent bits (bias 15),
  // 10 fraction bits; exponent 0 holds zero and the subnormals, 31 the infinities and NaN. Every
  // float16 is exact in float32, so the twin computes on the very numbers of the checkpoint.
  function halfToFloat(bits) {
    const out = new Float32Array(bits.length);
    for (let i = 0; i < bits.length; i++) {
      const h = bits[i], sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
      out[i] = e === 0 ? sign * f * 2 ** -24
        : e === 31 ? (f ? NaN : sign * Infinity)
        : sign * (1024 + f) * 2 ** (e - 25);
    }
    return out;
  }

  // Fetch charlm.json and the float16 weights it names; resolves to a CharLM.
  async function load(url) {
    const manifest = await (await fetch(url)).json();
    const res = await fetch(new URL(manifest.weights, new URL(url, location.href)));
    if (!res.ok) throw new Error(`${manifest.weights}: HTTP ${res.status}`);
    const buf = await res.arrayBuffer();
    if (manifest.dtype !== "float16") throw new Error(`${manifest.weights}: dtype ${manifest.dtype}, expected float16`);
    if (buf.byteLength !== manifest.bytes) throw new Error(`${manifest.weights}: ${buf.byteLength} bytes, expected ${manifest.bytes}`);
    const view = new DataView(buf); // little-endian on every machine
    const bits = Uint16Array.from({ length: buf.byteLength / 2 }, (_, i) => view.getUint16(2 * i, true));
    return new CharLM(manifest, halfToFloat(bits));
  }

  root.CharLMTwin = { CharLM, load, halfToFloat, softmax, sample, entropy, erf, erfSlow, gelu, attention };
})(window);
