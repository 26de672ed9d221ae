"""Second witnesses: behaviours that only one test pinned, each pinned again by an independent test.

Mutation testing of the project's own tests found mutants that exactly one test killed, one
refactor of that test away from surviving. Each test here kills one of them by another route
than the first test (named in its docstring): it checks a consequence of the behaviour, not the
same computation. The sixth such mutant, a lab cache key without the benchmark results, is caught
by ``tests/site/test_lab_build.py`` twice (the key of a synthetic repository, and every file the real
labs read).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from selfattn.model import Block, CharLM, generate, next_logits

ROOT = Path(__file__).resolve().parents[2]


def test_the_final_layer_norm_sets_the_logits() -> None:
    """Mutant: ``CharLM`` skips its final LayerNorm (first witness: tests/package/test_model.py recomputes
    the logits by hand). With the LayerNorm's weight at 0 and its bias at b, every position of every
    sequence, on the full path and on the KV-cache path, must give the logits of b alone."""
    torch.manual_seed(1)
    model = CharLM(30, 16, d_model=32, num_heads=4, num_layers=2).eval()
    bias = torch.randn(32)
    with torch.no_grad():
        model.ln.weight.zero_()
        model.ln.bias.copy_(bias)
        idx = torch.randint(0, 30, (3, 10))
        want = model.head(bias).expand(3, 10, 30)
        torch.testing.assert_close(model(idx), want, rtol=0, atol=1e-6)
        cached, _ = next_logits(model, idx, None)
        torch.testing.assert_close(cached, want[:, -1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("activation", ["relu", F.relu, nn.ReLU(), nn.GELU(approximate="tanh"), "gelu", F.gelu])
def test_from_torch_refuses_or_computes_the_same(activation: object) -> None:
    """Mutant: ``Block.from_torch`` accepts relu as GELU (first witness: tests/package/test_model.py expects
    the refusal's message). Whatever the activation, the copy either is refused with ValueError or
    computes what the layer computes: never a block that silently differs."""
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation=activation,  # type: ignore[arg-type]
                                       norm_first=True, batch_first=True).eval()
    x = torch.randn(2, 6, 16) * 3  # large enough that relu and GELU differ
    try:
        block = Block.from_torch(layer).eval()
    except ValueError:
        return
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        torch.testing.assert_close(block(x), layer(x, src_mask=mask, is_causal=True), rtol=1e-5, atol=1e-5)


def test_top_k_bounds_what_one_step_can_draw() -> None:
    """Mutant: ``generate`` ignores ``top_k`` (first witness: tests/package/test_model.py checks each sampled
    token against the top 3 of its step). Here, 400 sequences draw one token each, hot (temperature
    5): with ``top_k=2`` only the two most likely tokens appear, both of them; without it, many more."""
    torch.manual_seed(3)
    model = CharLM(40, 16, d_model=32, num_heads=4, num_layers=1).eval()
    start = torch.tensor([[5, 6, 7]]).expand(400, 3)
    with torch.no_grad():
        top2 = set(model(start[:1])[0, -1].topk(2).indices.tolist())
    drawn = {k: set(generate(model, start, 1, temperature=5.0, top_k=k,
                             generator=torch.Generator().manual_seed(0))[:, -1].tolist())
             for k in (2, None)}
    assert drawn[2] == top2, drawn[2]
    assert len(drawn[None]) > 10, drawn[None]


def test_a_link_to_a_figure_on_another_page_is_resolved_on_that_page(tmp_path: Path) -> None:
    """Mutant: ``check_book`` looks for the figure of ``[..](01-b.md#fig-second)`` on the linking page
    (first witness: tests/site/test_figures.py expects a broken cross-page link to be reported). Here the
    links are right, across pages and on the same page: nothing is reported; the same link on the
    page that holds the figure, written as a cross-page link to the other page, is reported."""
    from tests.site.test_figures import figure_block, small_site
    from tools.site import figures

    a = "# A\n\n" + figure_block("first") + "\n[{fig:second}](01-b.md#fig-second)；[{fig:first}](#fig-first)。\n"
    b = "# B\n\n" + figure_block("second") + "\n[{fig:first}](01-a.md#fig-first)。\n"
    root = small_site(tmp_path, a, b)
    assert figures.check_book(root, ("zh",)) == []
    (root / "docs" / "01-b.md").write_text(b.replace("01-a.md#fig-first", "01-a.md#fig-second"), encoding="utf-8")
    assert figures.check_book(root, ("zh",)) == ["docs/01-b.md: a link to 01-a.md#fig-second, which holds no such figure"]


def test_every_built_page_offers_the_same_page_in_each_language(site_dir: Path) -> None:
    """Mutant: the switcher points to the page's own language (first witness: tests/site/test_build.py
    checks ``switcher.point``'s list). Read from the built site: each page's ``hreflang`` link of each
    language leads to a built page whose ``<html lang>`` is that language."""
    from tools.site.languages import LANGUAGES

    pages = sorted(site_dir.glob("**/index.html"))
    checked = 0
    for page in pages:
        head = page.read_text(encoding="utf-8").split("</head>", 1)[0]
        links = dict(re.findall(r'<link rel="alternate" href="([^"]*)" hreflang="([^"]+)"', head))
        if not links:
            continue
        assert sorted(links.values()) == sorted(LANGUAGES), f"{page}: hreflang links {links}"
        for href, lang in links.items():
            target = (page.parent / href).resolve() / "index.html"
            assert target.is_file(), f"{page}: hreflang {lang} -> {href}, which is not built"
            html = target.read_text(encoding="utf-8")[:2000]
            assert re.search(rf'<html[^>]* lang="{lang}"', html), f"{page}: hreflang {lang} -> {target}"
        checked += 1
    assert checked > 40, f"only {checked} pages have hreflang links"
