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


@pytest.mark.parametrize(("n_q", "n_k", "block_k"), [(7, 13, 5), (1, 1, 4), (64, 100, 32), (3, 0, 4)])
def test_keys_only_matches(n_q: int, n_k: int, block_k: int) -> None:
    """Batch dims, n_k not a multiple of block_k, length 1, and no key at all (output 0)."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, n_q, 8), torch.randn(2, 3, n_k, 8), torch.randn(2, 3, n_k, 5)
    out = keys_only_attention(q, k, v, block_k=block_k)
    assert out.shape == (2, 3, n_q, 5)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v)[0], atol=1e-6, rtol=0)


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
    with pytest.raises(ValueError, match=r"block_q must be positive, got 0"):
        chunked_attention(x, x, x, block_q=0)
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor"):
        chunked_attention([1.0], x, x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"keys_only_attention: k and v must have the same length n_k"):
        keys_only_attention(x, x, torch.randn(2, 4, 8))
    with pytest.raises(ValueError, match=r"keys_only_attention: block_k must be positive"):
        keys_only_attention(x, x, x, block_k=-1)


# The peak-memory ratios (forward and training, n = 4096) are asserted by the two blocks of
# docs/08-long-sequences.md § 8.3.6, which run in the same suite: not measured a second time here.


def _grads(out: torch.Tensor, leaves: tuple[torch.Tensor, ...], g: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad(out, leaves, g)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("mask_shape", [(2, 3, 7, 5), (7, 5)])
def test_float_mask_gets_its_gradient(is_causal: bool, mask_shape: tuple[int, ...]) -> None:
    """A float mask that requires grad gets dS, like autograd through the explicit path."""
    torch.manual_seed(0)
    f64 = {"dtype": torch.float64, "requires_grad": True}
    q, k, v = torch.randn(2, 3, 7, 4, **f64), torch.randn(2, 3, 5, 4, **f64), torch.randn(2, 3, 5, 2, **f64)
    mask = torch.randn(mask_shape, dtype=torch.float64)
    mask[..., 2, :] = float("-inf")  # one fully masked row
    mask.requires_grad_(True)
    kw = {"attn_mask": mask, "is_causal": is_causal}
    out = chunked_attention(q, k, v, block_q=3, block_k=2, **kw)  # type: ignore[arg-type]
    ref, _ = scaled_dot_product_attention(q, k, v, **kw)  # type: ignore[arg-type]
    g = torch.randn_like(out)
    mine = _grads(out, (q, k, v, mask), g)
    theirs = _grads(ref, (q, k, v, mask), g)
    assert mine[3].abs().sum() > 0
    for a, b in zip(mine, theirs, strict=True):
        assert a.isfinite().all()
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    if not is_causal:  # SDPA agrees too (it refuses attn_mask together with is_causal)
        sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(_grads(sdpa, (mask,), g)[0], mine[3], atol=1e-10, rtol=0)


def test_float_mask_gradcheck() -> None:
    torch.manual_seed(0)
    q, k, v, m = (torch.randn(2, 5, 5, dtype=torch.float64, requires_grad=True) for _ in range(4))
    assert torch.autograd.gradcheck(
        lambda q, k, v, m: chunked_attention(q, k, v, m, is_causal=True, block_q=2, block_k=3), (q, k, v, m)
    )


def test_float_mask_gradient_alone() -> None:
    """Only the mask requires grad: the custom backward still runs."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 6, 3, dtype=torch.float64) for _ in range(3))
    mask = torch.randn(6, 6, dtype=torch.float64, requires_grad=True)
    out = chunked_attention(q, k, v, mask, block_q=4, block_k=4)
    ref, _ = scaled_dot_product_attention(q, k, v, mask)
    g = torch.randn_like(out)
    torch.testing.assert_close(_grads(out, (mask,), g)[0], _grads(ref, (mask,), g)[0], atol=1e-10, rtol=0)


def test_keys_only_with_zero_keys_gives_zeros() -> None:
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 0, 4), torch.randn(2, 0, 5)
    for out in (keys_only_attention(q, k, v), chunked_attention(q, k, v)):
        assert out.shape == (2, 3, 5)
        assert torch.equal(out, torch.zeros(2, 3, 5))


def _fully_masked(kind: str, n_q: int, n_k: int, dtype: torch.dtype) -> dict[str, object]:
    """Masks in which query rows 1 and 4 have no finite score."""
    keep = torch.rand(n_q, n_k, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[:, 0] = True
    keep[[1, 4]] = False
    bias = torch.zeros(n_q, n_k, dtype=dtype)
    bias[[1, 4]] = float("-inf")
    if kind == "bool":
        return {"attn_mask": keep}
    if kind == "float":
        return {"attn_mask": bias}
    if kind == "float+causal":
        return {"attn_mask": bias, "is_causal": True}
    # bool + is_causal: rows 1 and 4 may only see keys j > i, which is_causal forbids
    keep = torch.ones(n_q, n_k, dtype=torch.bool)
    keep[1, :2] = False
    keep[4, :5] = False
    return {"attn_mask": keep, "is_causal": True}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", ["bool", "float", "float+causal", "bool+causal"])
@pytest.mark.parametrize("grad", [False, True])
def test_fully_masked_rows_give_zero_output_and_zero_grads(dtype: torch.dtype, kind: str, grad: bool) -> None:
    """The contract of 05-implementation.md#fully-masked-rows, on both paths and in every dtype."""
    torch.manual_seed(0)
    n_q, n_k = 7, 9
    q, k, v = (torch.randn(2, n, 4, dtype=dtype, requires_grad=grad) for n in (n_q, n_k, n_k))
    kw = _fully_masked(kind, n_q, n_k, dtype)
    if grad and kw["attn_mask"].is_floating_point():  # type: ignore[union-attr]
        kw["attn_mask"] = kw["attn_mask"].clone().requires_grad_(True)  # type: ignore[union-attr]
    out = chunked_attention(q, k, v, block_q=3, block_k=2, **kw)  # type: ignore[arg-type]
    assert out.dtype == dtype
    assert out.isfinite().all()
    assert torch.equal(out[:, [1, 4]], torch.zeros(2, 2, 4, dtype=dtype))
    if grad:
        leaves = [q, k, v] + ([kw["attn_mask"]] if kw["attn_mask"].requires_grad else [])  # type: ignore[union-attr]
        grads = torch.autograd.grad(out, leaves, torch.randn_like(out))
        assert all(t.isfinite().all() for t in grads)
        assert torch.equal(grads[0][:, [1, 4]], torch.zeros(2, 2, 4, dtype=dtype))
        if len(grads) == 4:
            assert torch.equal(grads[3][[1, 4]], torch.zeros(2, n_k, dtype=dtype))


def test_flags_and_block_sizes_are_type_checked() -> None:
    x = torch.randn(2, 5, 8)
    with pytest.raises(TypeError, match=r"chunked_attention: is_causal must be a bool, got Tensor"):
        chunked_attention(x, x, x, is_causal=torch.tensor(True))  # type: ignore[arg-type]
    for bad in (True, 2.0):
        with pytest.raises(TypeError, match=r"chunked_attention: block_q must be an int"):
            chunked_attention(x, x, x, block_q=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"keys_only_attention: block_k must be an int"):
            keys_only_attention(x, x, x, block_k=bad)  # type: ignore[arg-type]
