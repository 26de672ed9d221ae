"""Find the explorer's presets: heads of chapter 10's model that do one nameable thing.

A preset (``docs/explorer.md``) is a prompt, a layer and a head, with one sentence that says what
to look at. This script measures, for every head of each edition's committed model, how much of
each row's attention weight goes where a pattern says, over :data:`WINDOWS` windows of
``block_size`` characters spread evenly over the edition's corpus (the text the model was trained
on, ``models/train.py``):

* ``prev``: the previous character, position ``i - 1``;
* ``prev2``: the character before that, position ``i - 2``;
* ``first``: the first character of the window, position 0;
* ``self``: the character itself, position ``i``;
* ``gap``: the last gap before the current run of text, a space or a line break in English, a
  space, line break or punctuation mark in Chinese (rows where that gap lies at least two
  characters back, so that it is not simply the previous character);
* ``copy``: the characters that followed an earlier copy of the current character (positions
  ``j`` with ``ids[j - 1] == ids[i]``; rows that have one). A head that does this can continue a
  sequence it has seen before (an induction head).

Each measure is the mean over the rows it counts (queries ``i >= 1``), next to what a uniform row
(weight ``1 / (i + 1)`` on each allowed key) would put in the same places. For each pattern the
head with the largest share is kept if that share is at least :data:`LIFT` times the uniform one;
the kept ones (at most :data:`MAX_PRESETS`, one per head) become presets. Each gets the sentence
of the corpus (:func:`candidates`) on which that head shows its pattern most, as the prompt.

The presets, their measured numbers and the checkpoint they were measured on are written to
:data:`OUT`; ``tools/site/explorer_hook.py`` gives each edition's page its own part as
``explorer/presets.json``, and ``tests/site/test_explorer_presets.py`` measures again and checks
every sentence against the numbers. Run it again after retraining a model::

    python -m tools.data.explorer_presets            # both editions
    python -m tools.data.explorer_presets en         # one edition (the other is kept)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FILE = "models/explorer-presets.json"  # relative to the repository's root
OUT = ROOT / FILE
WINDOWS = 128  # windows of block_size characters, evenly spread over the corpus
LIFT = 3.0  # a pattern is kept if its head's share is at least this many times a uniform row's
PROMPT_LIFT = 2.0  # and on its prompt, at least this many times a uniform row's share
MAX_PRESETS = 5
PATTERNS = ("prev", "prev2", "gap", "copy", "first", "self")  # in the order the page lists them
GAPS = {"en": " \n\t", "zh": " \n\t，。、；：？！（）「」“”《》,.;:?!()"}

# The preset's name in the page's list, per edition and pattern.
LABELS = {
    "en": {"prev": "the previous character", "prev2": "two characters back",
           "gap": "the space before the word", "copy": "what followed an earlier copy",
           "first": "the first character", "self": "the character itself"},
    "zh": {"prev": "前一个字符", "prev2": "前面第二个字符", "gap": "前面最近的标点或空白",
           "copy": "早先同一字符的下一个", "first": "窗口的第一个字符", "self": "字符自己"},
}
# One sentence per pattern and edition; {l} and {h} count from 1, as the page's selectors do.
SENTENCES = {
    "en": {
        "prev": "Layer {l}, head {h} looks at the previous character. Over the corpus it puts "
                "{x} % of each row's weight there, more than any other head (a uniform row: {u} %).",
        "prev2": "Layer {l}, head {h} looks two characters back. Over the corpus it puts {x} % of "
                 "each row's weight there, more than any other head (a uniform row: {u} %).",
        "gap": "Layer {l}, head {h} looks back to the space or line break before the current word. "
               "Inside a word, {x} % of each row's weight lands there, more than any other head "
               "(a uniform row: {u} %).",
        "copy": "Layer {l}, head {h} finds an earlier copy of the current character and looks at "
                "the character that followed it: {x} % of such a row's weight, more than any other "
                "head (a uniform row: {u} %).",
        "first": "Layer {l}, head {h} parks its weight on the first character of the window: {x} % "
                 "of each row, more than any other head (a uniform row: {u} %).",
        "self": "Layer {l}, head {h} looks at the character itself: {x} % of each row's weight, "
                "more than any other head (a uniform row: {u} %).",
    },
    "zh": {
        "prev": "第 {l} 层第 {h} 个头看前一个字符：在语料上，每一行有 {x} % 的权重落在那里，"
                "比其他任何头都多（均匀的一行是 {u} %）。",
        "prev2": "第 {l} 层第 {h} 个头看前面第二个字符：在语料上，每一行有 {x} % 的权重落在那里，"
                 "比其他任何头都多（均匀的一行是 {u} %）。",
        "gap": "第 {l} 层第 {h} 个头回看前面最近的标点、空格或换行：在它离当前字符至少两格的行里，"
               "有 {x} % 的权重落在那里，比其他任何头都多（均匀的一行是 {u} %）。",
        "copy": "第 {l} 层第 {h} 个头找当前字符早先出现的地方，看紧跟在它后面的字符：这样的行有 {x} % 的权重"
                "落在那里，比其他任何头都多（均匀的一行是 {u} %）。",
        "first": "第 {l} 层第 {h} 个头把权重停在窗口的第一个字符上：每一行 {x} %，比其他任何头都多"
                 "（均匀的一行是 {u} %）。",
        "self": "第 {l} 层第 {h} 个头看字符自己：每一行 {x} % 的权重，比其他任何头都多（均匀的一行是 {u} %）。",
    },
}


def targets(ids: list[int], chars: str, lang: str) -> dict[str, Any]:
    """For each pattern, its keys as a bool ``(n, n)`` matrix: row ``i`` marks the keys ``j <= i``
    that pattern names for query ``i`` (a row with none is not counted)."""
    import torch

    return {p: m[0] for p, m in batch_targets(torch.tensor([ids]), chars, lang).items()}


def batch_targets(ids: Any, chars: str, lang: str) -> dict[str, Any]:
    """:func:`targets` for a batch of windows: ids ``(B, n)``, each pattern's keys ``(B, n, n)``."""
    import torch

    b, n = ids.shape
    i = torch.arange(n)[:, None]  # (n, 1): the query
    j = torch.arange(n)[None, :]  # (1, n): the key
    fixed = {"prev": j == i - 1, "prev2": j == i - 2, "first": (j == 0) & (i >= 1), "self": (j == i) & (i >= 1)}
    out = {p: m.expand(b, n, n) for p, m in fixed.items()}
    is_gap = torch.tensor([c in GAPS[lang] for c in chars])[ids]  # (B, n)
    marked = torch.where(is_gap, torch.arange(n), -1)
    last = torch.cat([torch.full((b, 1), -1), marked.cummax(1).values[:, :-1]], 1)  # last gap before i
    row = (last >= 0) & (last < torch.arange(n) - 1) & ~is_gap  # (B, n)
    out["gap"] = row[:, :, None] & (j == last[:, :, None])
    follows = torch.cat([torch.full((b, 1), -1), ids[:, :-1]], 1)  # (B, n): the id before key j
    out["copy"] = (follows[:, None, :] == ids[:, :, None]) & (j <= i - 1)  # an earlier copy of ids[i] before j
    return {p: out[p] for p in PATTERNS}


def attention(model: Any, batch: Any) -> Any:
    """Every layer's attention weights, ``(L, B, h, n, n)``, for ids ``(B, n)``: the blocks of
    ``model`` run in eval mode with the explicit path of their attention (``need_weights=True``),
    which returns the weights; its output equals the fast path's up to rounding."""
    import torch

    weights = []
    with torch.no_grad():
        x = model.embed(batch)
        for b in model.blocks:
            a, w = b.attn(b.ln1(x), is_causal=True, average_attn_weights=False)
            x = x + a
            x = x + b.ff(b.ln2(x))
            weights.append(w)
    return torch.stack(weights)


def shares(weights: Any, keys: Any) -> tuple[Any, float, int]:
    """Each head's mean share on the keys over the counted rows ``(L, h)``, a uniform row's mean
    share, and the number of rows; weights ``(L, B, h, n, n)``, keys ``(B, n, n)`` bool."""
    import torch

    rows = keys.any(-1)  # (B, n)
    count = int(rows.sum())
    total = weights.transpose(1, 2)[:, :, keys].double().sum(-1)  # (L, h): the marked cells only
    allowed = torch.arange(1, keys.shape[-1] + 1, dtype=torch.float64)  # row i sees i + 1 keys
    uniform = float((keys.sum(-1) / allowed).sum())
    return total / max(count, 1), uniform / max(count, 1), count


def windows(data: list[int], block_size: int) -> list[int]:
    """The start of each of the WINDOWS windows, evenly spread over the corpus."""
    last = len(data) - block_size
    return sorted({round(k * last / (WINDOWS - 1)) for k in range(WINDOWS)})


def measure(model: Any, chars: str, text: str, lang: str) -> dict[str, Any]:
    """For each pattern: each head's share (``[[layer 1's heads], ...]``), a uniform row's share
    and the number of rows counted, over WINDOWS windows of the corpus ``text``."""
    import torch

    index = {c: i for i, c in enumerate(chars)}
    data = [index[c] for c in text if c in index]  # (the corpus the model was trained on: all of it)
    bs = model.block_size
    starts = windows(data, bs)
    batch = torch.tensor([data[s : s + bs] for s in starts])
    weights = attention(model, batch)  # (L, B, h, n, n)
    keys = batch_targets(batch, chars, lang)
    out = {}
    for p in PATTERNS:
        share, uniform, count = shares(weights, keys[p])
        out[p] = {"share": share.tolist(), "uniform": uniform, "rows": count}
    return out


def candidates(text: str, lang: str, block_size: int) -> list[str]:
    """Sentences of the corpus that make good prompts: 32 to block_size characters, mostly
    letters (English) or CJK characters (Chinese), with no Markdown or code; each once, in order."""
    import re

    out: list[str] = []
    end = r"(?<=[.!?])\s+" if lang == "en" else r"(?<=[。！？])"
    for line in text.splitlines():
        for sentence in re.split(end, line.strip()):
            sentence = sentence.strip()
            if not 32 <= len(sentence) <= block_size or sentence in out:
                continue
            if any(c in sentence for c in "`$#|*_=<>[]{}\\/"):
                continue
            if lang == "en":  # a capital, words of letters, a full stop
                ok = (sentence[0].isupper() and sentence.endswith(".") and "  " not in sentence
                      and all(w[1:] == w[1:].lower() for w in sentence.split())  # no CamelCase names
                      and sum(c.isascii() and (c.isalpha() or c == " ") for c in sentence) >= 0.9 * len(sentence))
            else:  # Chinese characters, from the first, with a full stop
                ok = "\u4e00" <= sentence[0] <= "\u9fff" and sentence.endswith("。") and sum("\u4e00" <= c <= "\u9fff" for c in sentence) >= 0.7 * len(sentence)
            if ok:
                out.append(sentence)
    return out


def best_prompt(model: Any, chars: str, lines: list[str], lang: str, pattern: str, layer: int,
                head: int, used: list[str], cache: dict[str, Any] | None = None) -> str:
    """The sentence on which the head's share on its pattern's keys is the largest multiple of a
    uniform row's (a sentence with fewer than 4 such rows, or one an earlier preset took, is
    passed over). ``cache`` keeps each sentence's attention weights for the next preset."""
    import torch

    index = {c: i for i, c in enumerate(chars)}
    cache = {} if cache is None else cache
    best, score = lines[0], -1.0
    for line in lines:
        ids = [index[c] for c in line if c in index]
        keys = targets(ids, chars, lang)[pattern]
        if int(keys.any(-1).sum()) < 4 or line in used:
            continue
        if line not in cache:
            cache[line] = attention(model, torch.tensor([ids]))
        share, uniform, _ = shares(cache[line], keys[None])
        if (s := float(share[layer, head]) / uniform) > score:
            best, score = line, s
    return best


def percent(x: float) -> str:
    return f"{100 * x:.0f}" if x >= 0.1 else f"{100 * x:.1f}"


def choose(measured: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(pattern, layer, head) of the presets: each pattern's strongest head, if it beats a uniform
    row LIFT times over, one preset per head, at most MAX_PRESETS."""
    out: list[tuple[str, int, int]] = []
    for p in PATTERNS:
        share = measured[p]["share"]
        layer, head = max(((a, b) for a in range(len(share)) for b in range(len(share[0]))),
                          key=lambda lh: share[lh[0]][lh[1]])
        if share[layer][head] >= LIFT * measured[p]["uniform"] and (layer, head) not in [o[1:] for o in out]:
            out.append((p, layer, head))
    return out[:MAX_PRESETS]


def sentence(lang: str, pattern: str, layer: int, head: int, measured: dict[str, Any]) -> str:
    m = measured[pattern]
    return SENTENCES[lang][pattern].format(l=layer + 1, h=head + 1, x=percent(m["share"][layer][head]),
                                           u=percent(m["uniform"]))


def presets(lang: str, measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The edition's presets and everything measured, as written to OUT (``measured``: what
    :func:`measure` gives for the edition's model and corpus, if it was measured already)."""
    from models.train import EDITIONS
    from tools.data.explorer_export import CHECKPOINTS, load_model, sha256

    corpus, _, _ = EDITIONS[lang]
    text = (ROOT / corpus).read_text(encoding="utf-8")
    model, chars = load_model(ROOT / CHECKPOINTS[lang])
    if measured is None:
        measured = measure(model, chars, text, lang)
    lines = candidates(text, lang, model.block_size)
    out: list[dict[str, Any]] = []
    cache: dict[str, Any] = {}  # each sentence's attention weights, computed once for all presets
    for pattern, layer, head in choose(measured):
        out.append({"pattern": pattern, "layer": layer, "head": head, "label": LABELS[lang][pattern],
                    "share": measured[pattern]["share"][layer][head], "uniform": measured[pattern]["uniform"],
                    "prompt": best_prompt(model, chars, lines, lang, pattern, layer, head,
                                          [o["prompt"] for o in out], cache),
                    "sentence": sentence(lang, pattern, layer, head, measured)})
    return {"checkpoint_sha256": sha256(ROOT / CHECKPOINTS[lang]), "corpus_sha256": sha256(ROOT / corpus),
            "windows": WINDOWS, "presets": out, "measured": measured}


def main(argv: list[str]) -> int:
    langs = argv or ["zh", "en"]
    if not set(langs) <= {"zh", "en"}:
        print("usage: python -m tools.data.explorer_presets [zh] [en]", file=sys.stderr)
        return 2
    data = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {}
    for lang in langs:
        data[lang] = presets(lang)
        for p in data[lang]["presets"]:
            print(f"{lang} {p['pattern']}: layer {p['layer'] + 1}, head {p['head'] + 1}, "
                  f"{100 * p['share']:.1f} % (uniform {100 * p['uniform']:.1f} %), prompt {p['prompt']!r}")
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
