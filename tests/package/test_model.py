"""selfattn.model (chapter 10): the block equals nn.TransformerEncoderLayer, the KV cache
equals full recomputation, generate() samples as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import selfattn.model as model_mod
from selfattn.model import Block, CharLM, block_step, generate, next_logits

# nn.TransformerEncoderLayer name -> Block name
NAMES = {
    "self_attn.in_proj_weight": "attn.in_proj.weight",
    "self_attn.in_proj_bias": "attn.in_proj.bias",
    "self_attn.out_proj.weight": "attn.out_proj.weight",
    "self_attn.out_proj.bias": "attn.out_proj.bias",
    "linear1.weight": "ff.0.weight",
    "linear1.bias": "ff.0.bias",
    "linear2.weight": "ff.3.weight",
    "linear2.bias": "ff.3.bias",
    "norm1.weight": "ln1.weight",
    "norm1.bias": "ln1.bias",
    "norm2.weight": "ln2.weight",
    "norm2.bias": "ln2.bias",
}


def pair(d: int = 32, h: int = 4, d_ff: int = 64) -> tuple[nn.TransformerEncoderLayer, Block]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, activation="gelu",
                                       norm_first=True, batch_first=True)
    with torch.no_grad():  # non-trivial LayerNorm parameters, so that a swapped norm is caught
        for p in (layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias):
            p.add_(torch.randn_like(p) * 0.3)
    return layer, Block.from_torch(layer)


@pytest.mark.parametrize("train", [True, False])
def test_block_equals_transformer_encoder_layer(train: bool) -> None:
    layer, block = pair()
    layer.train(train), block.train(train)
    assert block.training is train
    assert set(NAMES.values()) == {n for n, _ in block.named_parameters()}
    x = torch.randn(3, 10, 32, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(10)
    ref, out = layer(x, src_mask=mask, is_causal=True), block(x)
    assert torch.equal(ref, out)
    theirs, ours = dict(layer.named_parameters()), dict(block.named_parameters())
    g = torch.randn_like(ref)
    g_ref = torch.autograd.grad(ref, [x, *(theirs[k] for k in NAMES)], g)
    g_out = torch.autograd.grad(out, [x, *(ours[v] for v in NAMES.values())], g)
    for name, a, b in zip(["x", *NAMES], g_ref, g_out, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


def test_block_equals_layer_in_inference_fast_path() -> None:
    """Under no_grad in eval mode PyTorch takes its fused encoder kernel: equal up to rounding."""
    layer, block = pair()
    layer.eval(), block.eval()
    x = torch.randn(2, 7, 32)
    with torch.no_grad():
        ref = layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(7), is_causal=True)
        torch.testing.assert_close(block(x), ref, rtol=1e-5, atol=1e-5)


def test_block_is_causal_and_mask_replaces_it() -> None:
    _, block = pair()
    x = torch.randn(1, 6, 32)
    y = x.clone()
    y[:, 4:] = torch.randn(1, 2, 32)  # change the future
    assert torch.allclose(block(x)[:, :4], block(y)[:, :4])
    full = torch.ones(6, 6, dtype=torch.bool)  # an explicit mask replaces the causal one
    assert not torch.allclose(block(x, full)[:, :4], block(y, full)[:, :4])


def test_from_torch_copies_dropout() -> None:
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.25, activation="gelu",
                                       norm_first=True, batch_first=True)
    block = Block.from_torch(layer)
    ps = {m.p for m in block.modules() if isinstance(m, nn.Dropout)}
    assert ps == {0.25} and block.attn.dropout == 0.25


def lm(vocab: int = 50, block_size: int = 16) -> CharLM:
    torch.manual_seed(1)
    return CharLM(vocab, block_size, d_model=32, num_heads=4, num_layers=2).eval()


def test_lm_shape_and_causality() -> None:
    model = lm()
    idx = torch.randint(0, 50, (2, 12))
    out = model(idx)
    assert out.shape == (2, 12, 50)
    idx2 = idx.clone()
    idx2[:, 8:] = (idx2[:, 8:] + 1) % 50
    assert torch.allclose(model(idx2)[:, :8], out[:, :8])
    assert not torch.allclose(model(idx2)[:, 8:], out[:, 8:])


def test_lm_refuses_positions_beyond_block_size_and_bad_sizes() -> None:
    with pytest.raises(ValueError, match="block_size=16"):
        lm()(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        CharLM(0, 8)
    with pytest.raises(TypeError, match="block_size"):
        CharLM(10, 8.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("batch", [1, 3])
def test_kv_cache_logits_equal_full_recomputation(batch: int) -> None:
    model = lm()
    idx = torch.randint(0, 50, (batch, 40))  # beyond block_size = 16: the window slides
    cache = None
    with torch.no_grad():
        for t in range(1, 41):
            logits, cache = next_logits(model, idx[:, :t], cache)
            full = model(idx[:, max(0, t - 16) : t])[:, -1]
            torch.testing.assert_close(logits, full, rtol=1e-5, atol=1e-5)
            assert cache[0][0].shape == (batch, 4, min(t, 16), 8)


def test_kv_cache_prefill_of_several_tokens_then_steps() -> None:
    """block_step with t > 1 new tokens after a cache (bottom-right alignment, not only t = 1)."""
    model = lm()
    block = model.blocks[0]
    x = torch.randn(2, 9, 32)
    with torch.no_grad():
        full = block(x)
        head, cache = block_step(block, x[:, :4], None)  # type: ignore[arg-type]
        tail, _ = block_step(block, x[:, 4:], cache)  # type: ignore[arg-type]
    torch.testing.assert_close(torch.cat([head, tail], dim=1), full, rtol=1e-5, atol=1e-5)


def test_kv_cache_with_top_left_alignment_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: SDPA's top-left is_causal alignment in the cache step; the equality must fail."""
    real = model_mod.causal_mask
    monkeypatch.setattr(model_mod, "causal_mask",
                        lambda n_q, n_k, align, device=None: real(n_q, n_k, device=device))
    model = lm()
    idx = torch.randint(0, 50, (1, 10))
    with torch.no_grad():
        _, cache = next_logits(model, idx[:, :9], None)
        logits, _ = next_logits(model, idx, cache)
        assert not torch.allclose(logits, model(idx)[:, -1], atol=1e-3)


def test_generate_same_tokens_with_and_without_cache() -> None:
    model = lm()
    start = torch.randint(0, 50, (2, 3))
    a, b = (generate(model, start, 30, top_k=7, use_cache=c,
                     generator=torch.Generator().manual_seed(3)) for c in (True, False))
    assert a.shape == (2, 33) and torch.equal(a, b) and torch.equal(a[:, :3], start)


def test_generate_top_k_temperature_and_mode() -> None:
    model = lm().train()
    start = torch.randint(0, 50, (1, 5))
    greedy = generate(model, start, 10, temperature=0)
    assert model.training, "generate restores the training mode"
    model.eval()
    with torch.no_grad():
        expect = model(greedy[:, :-1])[0, 4:].argmax(dim=-1)
    assert torch.equal(greedy[0, 5:], expect)
    assert torch.equal(generate(model, start, 10, top_k=1), greedy)
    # top_k = 3: every sampled token is among the 3 most likely at its step
    out = generate(model, start, 10, top_k=3, temperature=2.0,
                   generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        top3 = model(out[:, :-1])[0, 4:].topk(3).indices
    assert (top3 == out[0, 5:, None]).any(dim=-1).all()
    with pytest.raises(ValueError, match="temperature"):
        generate(model, start, 1, temperature=-1.0)


def test_model_benchmark_runs_at_tiny_sizes(tmp_path: Path) -> None:
    """benchmarks/model.py cannot rot: the quick run writes complete JSON (not the real numbers)."""
    from benchmarks.model import main

    threads = torch.get_num_threads()
    try:
        main(["--quick", "--threads", "1", "--out", str(tmp_path / "m.json")])
    finally:
        torch.set_num_threads(threads)
    saved = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert {(r["case"], r["path"]) for r in saved["time"]} == {
        ("train", "selfattn"), ("train", "nn_mha"), ("generate", "cache"), ("generate", "recompute")}
    assert 0 < saved["train_speed"]["min"] <= saved["train_speed"]["median"] <= saved["train_speed"]["max"]
    assert [t["goal"] for t in saved["targets"]] == [">= 0.95", "report"]


def test_from_torch_of_a_float64_layer_is_float64_and_exact() -> None:
    """The block is built in the layer's dtype (and device): exactly equal in float64."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu",
                                       norm_first=True, batch_first=True).double()
    block = Block.from_torch(layer)
    assert {p.dtype for p in block.parameters()} == {torch.float64}
    assert {p.device for p in block.parameters()} == {layer.linear1.weight.device}
    x = torch.randn(2, 6, 16, dtype=torch.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    ref, out = layer(x, src_mask=mask, is_causal=True), block(x)
    assert out.dtype == torch.float64 and torch.equal(ref, out)
    (g_ref,) = torch.autograd.grad(ref.sum(), x)
    (g_out,) = torch.autograd.grad(out.sum(), x)
    torch.testing.assert_close(g_out, g_ref, rtol=1e-12, atol=1e-12)


def encoder_layer(**kwargs: object) -> nn.TransformerEncoderLayer:
    settings = {"dropout": 0.0, "activation": "gelu", "norm_first": True, "batch_first": True}
    return nn.TransformerEncoderLayer(16, 2, 32, **{**settings, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"activation": "relu"}, "activation"),
        ({"activation": nn.ReLU()}, "activation"),
        ({"activation": nn.GELU(approximate="tanh")}, "tanh GELU"),
        ({"norm_first": False}, "norm_first=False"),
        ({"layer_norm_eps": 1e-3}, "layer_norm_eps"),
        ({"bias": False}, "bias=False"),
        ({"batch_first": False}, "batch_first=False"),
    ],
)
def test_from_torch_refuses_a_setting_it_does_not_compute(kwargs: dict[str, object],
                                                          named: str) -> None:
    with pytest.raises(ValueError, match=f"Block.from_torch: not supported: .*{named}"):
        Block.from_torch(encoder_layer(**kwargs))


def test_from_torch_accepts_exact_gelu_as_a_module_and_refuses_other_types() -> None:
    layer = encoder_layer(activation=nn.GELU())
    x = torch.randn(1, 5, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    assert torch.equal(Block.from_torch(layer)(x), layer(x, src_mask=mask, is_causal=True))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        Block.from_torch(nn.Linear(4, 4))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("idx", "kwargs", "error", "match"),
    [
        (torch.zeros(1, 0, dtype=torch.long), {}, ValueError, "non-empty"),
        (torch.zeros(3, dtype=torch.long), {}, ValueError, r"\(B, n\)"),
        (torch.zeros(1, 2), {}, ValueError, "int64"),
        (torch.tensor([[1, 50]]), {}, ValueError, r"\[0, 50\)"),
        (torch.tensor([[-1, 2]]), {}, ValueError, r"\[0, 50\)"),
        (torch.tensor([[1]]), {"top_k": 0}, ValueError, "top_k"),
        (torch.tensor([[1]]), {"top_k": -1}, ValueError, "top_k"),
        (torch.tensor([[1]]), {"top_k": 2.0}, TypeError, "top_k"),
        (torch.tensor([[1]]), {"temperature": float("nan")}, ValueError, "temperature"),
        (torch.tensor([[1]]), {"temperature": -0.5}, ValueError, "temperature"),
        (torch.tensor([[1]]), {"temperature": float("inf")}, ValueError, "temperature"),
        (torch.tensor([[1]]), {"max_new_tokens": -1}, ValueError, "max_new_tokens"),
        (torch.tensor([[1]]), {"max_new_tokens": 2.0}, TypeError, "max_new_tokens"),
    ],
)
def test_generate_validates_its_inputs(idx: torch.Tensor, kwargs: dict[str, object],
                                       error: type[Exception], match: str) -> None:
    args = {"max_new_tokens": 3, **kwargs}
    with pytest.raises(error, match=f"generate: .*{match}"):
        generate(lm(), idx, **args)  # type: ignore[arg-type]


def test_generate_zero_new_tokens_returns_the_prompt() -> None:
    start = torch.tensor([[3, 4]])
    assert torch.equal(generate(lm(), start, 0), start)


def test_lm_applies_its_final_layer_norm() -> None:
    """logits = head(LN(blocks(embed(idx)))): removing the final LayerNorm fails here."""
    model = lm()
    assert isinstance(model.ln, nn.LayerNorm)
    with torch.no_grad():
        model.ln.weight.uniform_(0.5, 2.0), model.ln.bias.uniform_(-1.0, 1.0)
        idx = torch.randint(0, 50, (2, 9))
        h = model.embed(idx)
        for block in model.blocks:
            h = block(h)
        ref = model.head(nn.functional.layer_norm(h, (32,), model.ln.weight, model.ln.bias))
        torch.testing.assert_close(model(idx), ref, rtol=0, atol=0)
        assert not torch.allclose(model.head(h), ref, atol=1e-2)
        cached, _ = next_logits(model, idx, None)  # the KV-cache path applies it too
        torch.testing.assert_close(cached, ref[:, -1], rtol=1e-5, atol=1e-5)


def test_weight_tying_one_matrix_for_embedding_and_output() -> None:
    model = lm()
    assert model.head.weight is model.tok.weight
    assert sum(p is model.tok.weight for p in model.parameters()) == 1
    copy = CharLM(50, 16, d_model=32, num_heads=4, num_layers=2)
    copy.load_state_dict(model.state_dict())
    assert copy.head.weight is copy.tok.weight  # loading keeps the tie
    with torch.no_grad():
        copy.tok.weight[7] += 1.0
    assert torch.equal(copy.head.weight[7], copy.tok.weight[7])
    # the gradient of the shared matrix collects both uses: as embedding and as output
    x = torch.randint(0, 50, (1, 8))
    copy(x).logsumexp(-1).sum().backward()
    rows_used = torch.zeros(50, dtype=torch.bool)
    rows_used[x[0]] = True
    assert copy.tok.weight.grad is not None and (copy.tok.weight.grad[~rows_used] != 0).any()
    std = model.tok.weight.std().item()
    assert 0.015 < std < 0.025, std  # GPT-2's N(0, 0.02): tied logits start small


# Moved from chapter 10's page (10.2 and 10.3), where they guarded printed claims.
@pytest.mark.parametrize("train", [True, False])
def test_page_block_equals_layer_within_tolerance(train: bool) -> None:
    """10.2's exact setting: equal within a tolerance on any platform."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 128, dropout=0.0, activation="gelu",
                                       norm_first=True, batch_first=True)
    block = Block.from_torch(layer)
    x = torch.randn(3, 10, 32, requires_grad=True)
    causal = nn.Transformer.generate_square_subsequent_mask(10)
    layer.train(train), block.train(train)
    ref, out = layer(x, src_mask=causal, is_causal=True), block(x)
    g_ref = torch.autograd.grad(ref.square().sum(), [x, layer.linear1.weight])
    g_out = torch.autograd.grad(out.square().sum(), [x, block.ff[0].weight])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    assert max((a - b).abs().max().item() for a, b in zip(g_ref, g_out, strict=True)) < 1e-5


@pytest.mark.parametrize("book", ["book.txt", "book.en.txt"])
def test_page_initial_loss_tying_and_block_size(book: str) -> None:
    """10.3: the loss at initialization is about ln V, the output layer is the token
    embedding, and a block has about 12 d_model^2 parameters."""
    import math

    import torch.nn.functional as F

    from selfattn.charlm import load_corpus

    root = Path(__file__).resolve().parents[2]
    vocab, train_data, _ = load_corpus(root / "docs" / "labs" / "data" / book)
    torch.manual_seed(0)
    model = CharLM(len(vocab.chars), block_size=32, d_model=64, num_heads=4, num_layers=2)
    x, y = train_data[:32][None], train_data[1:33][None]  # (1, 32)
    loss0 = F.cross_entropy(model(x)[0], y[0]).item()
    assert abs(loss0 - math.log(len(vocab.chars))) < 0.1, loss0
    assert model.head.weight is model.tok.weight
    block_params = sum(p.numel() for p in model.blocks[0].parameters())
    assert abs(block_params / (12 * 64**2) - 1) < 0.05, block_params
