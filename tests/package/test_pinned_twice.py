"""Second witnesses: behaviours that only one test pinned, each pinned again by an independent test.

Mutation testing of the project's own tests found mutants that exactly one test killed, one
refactor of that test away from surviving. Each test here kills one of them by another route
than the first test (named in its docstring): it checks a consequence of the behaviour, not the
same computation. Those of the package and its test harness are here; those of the site build
are in ``tests/site/test_site_pinned_twice.py``. The lab cache key without the benchmark results
is caught by ``tests/site/test_lab_build.py`` twice (the key of a synthetic repository, and every
file the real labs read).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from selfattn.functional import scaled_dot_product_attention
from selfattn.model import Block, CharLM, generate, next_logits
from tools.testing.fake_cuda import fake_cuda, to_cpu


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


def test_a_tensor_left_on_the_cpu_fails_the_package_under_the_fake_device() -> None:
    """Mutant: the fake device lets a CPU tensor meet a device tensor (first witness:
    tests/package/test_device.py tries single aten ops on it). Here the package, as a user calls it: q, k and
    v on the device with the mask left on the CPU fail (a boolean matrix, or a float bias per key, 1-D), and
    so does sampling with a CPU generator, each with the error a GPU gives; the same calls with everything
    on the device run, with the CPU's results."""
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 4, 3, generator=g) for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    bias = torch.tensor([0.0, -1.0, 0.5, 0.0])  # (n_k,): one additive bias per key
    want = [scaled_dot_product_attention(q, k, v, attn_mask=m) for m in (mask, bias)]
    torch.manual_seed(5)
    model = CharLM(11, 8, d_model=16, num_heads=2, num_layers=1).eval()
    idx = torch.zeros(1, 3, dtype=torch.long)
    with fake_cuda():
        qc, kc, vc = q.cuda(), k.cuda(), v.cuda()
        for m in (mask, bias):
            with pytest.raises(RuntimeError, match="same device.*and cpu"):
                scaled_dot_product_attention(qc, kc, vc, attn_mask=m)
        got = [scaled_dot_product_attention(qc, kc, vc, attn_mask=m.cuda()) for m in (mask, bias)]
        model.cuda()
        with pytest.raises(RuntimeError, match="'cuda' device type for generator"):
            generate(model, idx.cuda(), 2, generator=torch.Generator().manual_seed(0))
        sampled = generate(model, idx.cuda(), 2)
    for g_out, w_out in zip(got, want, strict=True):
        assert all(torch.equal(to_cpu(a), b) for a, b in zip(g_out, w_out, strict=True))
    assert to_cpu(sampled).shape == (1, 5)
