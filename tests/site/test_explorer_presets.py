"""The explorer's presets (``models/explorer-presets.json``, written by ``tools/data/explorer_presets.py``):
each sentence stays true for the committed model.

For each edition the test measures again, on the committed checkpoint and corpus, what the script
measured, and checks each preset's sentence against the new numbers: the head it names has the
largest share of all heads on its pattern, that share and the uniform row's are the numbers the
sentence prints, the share is at least LIFT times the uniform one, and the preset's prompt shows
the pattern too (PROMPT_LIFT). A retrained model fails here until ``python -m tools.data.explorer_presets`` is run
again (the site build warns as well: tools/site/explorer_hook.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from models.train import EDITIONS
from tools.data import explorer_presets as ep
from tools.data.explorer_export import CHECKPOINTS, load_model, sha256

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """Per edition: the committed presets, and the model, vocabulary and measures recomputed now."""
    data = json.loads(ep.OUT.read_text(encoding="utf-8"))
    out = {}
    for lang in ("zh", "en"):
        model, chars = load_model(ROOT / CHECKPOINTS[lang])
        text = (ROOT / EDITIONS[lang][0]).read_text(encoding="utf-8")
        out[lang] = {"saved": data[lang], "model": model, "chars": chars,
                     "now": ep.measure(model, chars, text, lang)}
    return out


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_presets_were_measured_on_the_committed_model(measured: dict[str, Any], lang: str) -> None:
    saved = measured[lang]["saved"]
    assert saved["checkpoint_sha256"] == sha256(ROOT / CHECKPOINTS[lang]), (
        f"{lang}: the presets were measured on another checkpoint: run `python -m tools.data.explorer_presets {lang}`")
    assert saved["corpus_sha256"] == sha256(ROOT / EDITIONS[lang][0])
    assert 3 <= len(saved["presets"]) <= ep.MAX_PRESETS
    assert len({(p["layer"], p["head"]) for p in saved["presets"]}) == len(saved["presets"])  # one per head


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_each_sentence_holds(measured: dict[str, Any], lang: str) -> None:
    e = measured[lang]
    for p in e["saved"]["presets"]:
        now = e["now"][p["pattern"]]
        share = now["share"]
        layer, head = p["layer"], p["head"]
        x, u = share[layer][head], now["uniform"]
        others = [share[a][b] for a in range(len(share)) for b in range(len(share[0])) if (a, b) != (layer, head)]
        assert x > max(others), f"{lang} {p['pattern']}: layer {layer + 1} head {head + 1} is not the strongest"
        assert x >= ep.LIFT * u, f"{lang} {p['pattern']}: {x:.3f} < {ep.LIFT} x {u:.3f}"
        assert abs(x - p["share"]) < 1e-6 and abs(u - p["uniform"]) < 1e-6, (p["pattern"], x, u)
        # The sentence prints the numbers measured now, and names the head (counted from 1).
        assert p["sentence"] == ep.sentence(lang, p["pattern"], layer, head, e["now"])
        assert ep.percent(x) in p["sentence"] and f"{layer + 1}" in p["sentence"]
        # The prompt shows the pattern: on it, the head beats a uniform row PROMPT_LIFT times over.
        index = {c: i for i, c in enumerate(e["chars"])}
        ids = [index[c] for c in p["prompt"]]
        keys = ep.targets(ids, e["chars"], lang)[p["pattern"]]
        s, uni, rows = ep.shares(ep.attention(e["model"], torch.tensor([ids])), keys[None])
        assert rows >= 4 and float(s[layer, head]) >= ep.PROMPT_LIFT * uni, (p["prompt"], float(s[layer, head]), uni)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_committed_presets_are_what_the_script_writes_now(measured: dict[str, Any], lang: str) -> None:
    """The committed file is checked above against the measures; here against ``presets()`` itself, run
    again (on the measures of the fixture, which are ``measure()``'s): the same heads, in the same order,
    with the same labels, prompts and sentences. A script that would now pick or write another head (or
    that no longer writes what was committed) fails here, not at the next retraining."""
    e = measured[lang]
    now, saved = ep.presets(lang, measured=e["now"]), e["saved"]
    assert {k: now[k] for k in ("checkpoint_sha256", "corpus_sha256", "windows")} == {
        k: saved[k] for k in ("checkpoint_sha256", "corpus_sha256", "windows")}
    exact = ("pattern", "layer", "head", "label", "prompt", "sentence")
    assert [{k: p[k] for k in exact} for p in now["presets"]] == [{k: p[k] for k in exact} for p in saved["presets"]]
    for p, q in zip(now["presets"], saved["presets"], strict=True):
        assert sorted(p) == sorted(q) and abs(p["share"] - q["share"]) < 1e-6 and abs(p["uniform"] - q["uniform"]) < 1e-6
    for pattern, m in saved["measured"].items():  # every head's share, as committed
        torch.testing.assert_close(torch.tensor(now["measured"][pattern]["share"], dtype=torch.float64),
                                   torch.tensor(m["share"], dtype=torch.float64), rtol=0, atol=1e-6)
        assert now["measured"][pattern]["rows"] == m["rows"], pattern


def test_the_patterns_name_the_right_keys() -> None:
    """The keys of each pattern on a small text: 'ab ab' in English."""
    chars = "ab "
    ids = [0, 1, 2, 0, 1]  # a b ␣ a b
    keys = {p: [(i, j) for i, j in m.nonzero().tolist()] for p, m in ep.targets(ids, chars, "en").items()}
    assert keys["prev"] == [(1, 0), (2, 1), (3, 2), (4, 3)]
    assert keys["prev2"] == [(2, 0), (3, 1), (4, 2)]
    assert keys["self"] == [(1, 1), (2, 2), (3, 3), (4, 4)] and keys["first"] == [(1, 0), (2, 0), (3, 0), (4, 0)]
    assert keys["gap"] == [(4, 2)]  # 'b' inside the second word: the space two back; 'a' right after it is prev
    assert keys["copy"] == [(3, 1), (4, 2)]  # 'a' again: what followed the first 'a' was 'b' (1); 'b': ' ' (2)
