"""selfattn.chunked equals the explicit path (forward and gradients) and saves memory."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from selfattn.chunked import chunked_attention, keys_only_attention
from selfattn.functional import scaled_dot_product_attention

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


@st.composite
def attention_inputs(draw: st.DrawFn, dtype: torch.dtype) -> dict[str, object]:
    """Random shapes (lengths from 1), a random mask (with fully masked rows) and flags."""
    n_q, n_k = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    d_k, d_v = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    batch = draw(st.sampled_from([(), (2,), (2, 3)]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    q = torch.randn(*batch, n_q, d_k, generator=gen, dtype=dtype)  # (..., n_q, d_k)
    k = torch.randn(*batch, n_k, d_k, generator=gen, dtype=dtype)  # (..., n_k, d_k)
    v = torch.randn(*batch, n_k, d_v, generator=gen, dtype=dtype)  # (..., n_k, d_v)
    kind = draw(st.sampled_from(["none", "bool", "bool_rows", "float"]))
    mask: torch.Tensor | None = None
    if kind == "bool":
        mask = torch.rand(*batch, n_q, n_k, generator=gen) > draw(st.floats(0.0, 1.0))
    elif kind == "bool_rows":  # broadcast over the batch, some query rows fully masked
        mask = torch.rand(n_q, n_k, generator=gen) > 0.3
        mask[torch.rand(n_q, generator=gen) < 0.4] = False
    elif kind == "float":
        mask = torch.randn(n_q, n_k, generator=gen, dtype=dtype)
    return {
        "q": q, "k": k, "v": v, "attn_mask": mask,
        "is_causal": draw(st.booleans()),
        "block_q": draw(st.integers(1, 9)), "block_k": draw(st.integers(1, 9)),
    }


def _run(inp: dict[str, object]) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v, mask = inp["q"], inp["k"], inp["v"], inp["attn_mask"]
    kw = {"attn_mask": mask, "is_causal": inp["is_causal"]}
    out = chunked_attention(q, k, v, **kw, block_q=inp["block_q"], block_k=inp["block_k"])  # type: ignore[arg-type]
    ref, _ = scaled_dot_product_attention(q, k, v, **kw)  # type: ignore[arg-type]
    return out, ref


@SETTINGS
@given(attention_inputs(torch.float32))
def test_forward_float32(inp: dict[str, object]) -> None:
    out, ref = _run(inp)
    assert not out.isnan().any()
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


@SETTINGS
@given(attention_inputs(torch.float64))
def test_forward_and_grads_float64(inp: dict[str, object]) -> None:
    for name in ("q", "k", "v"):
        inp[name] = inp[name].clone().requires_grad_(True)  # type: ignore[union-attr]
    out, ref = _run(inp)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    g = torch.randn_like(out)
    leaves = tuple(inp[n] for n in ("q", "k", "v"))
    mine = torch.autograd.grad(out, leaves, g)  # type: ignore[arg-type]
    theirs = torch.autograd.grad(ref, leaves, g)  # type: ignore[arg-type]
    for a, b in zip(mine, theirs, strict=True):
        assert not a.isnan().any()
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"attn_mask": "rows"}])
def test_gradcheck(kw: dict[str, object]) -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 6, 3, dtype=torch.float64, requires_grad=True) for _ in range(3))
    if kw.get("attn_mask") == "rows":
        mask = torch.rand(2, 6, 6) > 0.3
        mask[0, 1] = False
        kw = {"attn_mask": mask}
    assert torch.autograd.gradcheck(lambda q, k, v: chunked_attention(q, k, v, block_q=4, block_k=4, **kw), (q, k, v))


def test_batch_broadcast_gradients() -> None:
    torch.manual_seed(0)
    q = torch.randn(1, 3, 5, 4, dtype=torch.float64, requires_grad=True)  # broadcast over B
    k = torch.randn(2, 3, 7, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 1, 7, 2, dtype=torch.float64, requires_grad=True)  # broadcast over h
    out = chunked_attention(q, k, v, block_q=2, block_k=3)
    ref, _ = scaled_dot_product_attention(q, k, v)
    g = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad(out, (q, k, v), g), torch.autograd.grad(ref, (q, k, v), g), strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_keys_only_matches() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 8), torch.randn(3, 1, 8), torch.randn(3, 1, 5)  # length 1
    torch.testing.assert_close(keys_only_attention(q, k, v), scaled_dot_product_attention(q, k, v)[0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 33, 16, dtype=dtype) for _ in range(3))
    out = chunked_attention(q, k, v, block_q=8, block_k=8)
    assert out.dtype == dtype
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


def test_errors_name_shapes_and_dtypes() -> None:
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"chunked_attention: q and k must have the same last dim d_k"):
        chunked_attention(x, torch.randn(2, 5, 4), torch.randn(2, 5, 4))
    with pytest.raises(TypeError, match=r"chunked_attention: q, k, v must share one dtype"):
        chunked_attention(x, x.double(), x)
    with pytest.raises(TypeError, match=r"attn_mask must be torch.bool"):
        chunked_attention(x, x, x, torch.ones(5, 5, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 5\) does not broadcast"):
        chunked_attention(x, x, x, torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"block_q must be a positive int, got 0"):
        chunked_attention(x, x, x, block_q=0)
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor"):
        chunked_attention([1.0], x, x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"keys_only_attention: k and v must have the same length n_k"):
        keys_only_attention(x, x, torch.randn(2, 4, 8))
    with pytest.raises(ValueError, match=r"keys_only_attention: block_k must be a positive int"):
        keys_only_attention(x, x, x, block_k=-1)


def test_forward_memory_ratio_at_8192() -> None:
    """Acceptance: at n = 8192, d = 64 the chunked forward needs at least 8x less extra memory."""
    from benchmarks.memory import peak_extra_mib

    explicit = peak_extra_mib("explicit", 8192, heads=1, d=64, mode="fwd")
    chunked = peak_extra_mib("chunked", 8192, heads=1, d=64, mode="fwd")
    assert explicit >= 8 * chunked, f"explicit {explicit:.1f} MiB vs chunked {chunked:.1f} MiB"


def test_training_memory_ratio() -> None:
    """The recomputing backward saves memory in training; autograd through the loop does not."""
    from benchmarks.memory import peak_extra_mib

    mib = {p: peak_extra_mib(p, 4096, heads=1, d=64, mode="fwd+bwd") for p in ("explicit", "keys_only", "chunked")}
    assert mib["explicit"] >= 8 * mib["chunked"], mib
    assert mib["keys_only"] > 0.5 * mib["explicit"], mib
