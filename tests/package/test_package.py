"""Bad input gets a clear error; fully masked rows give zeros, never NaN."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from selfattn.functional import scaled_dot_product_attention as sdpa
from selfattn.masks import causal_mask, padding_mask, to_mha_mask
from selfattn.self_attention import SelfAttention


def qkv(*batch: int, n_q: int = 4, n_k: int = 5, d_k: int = 8, d_v: int = 3, dtype: torch.dtype = torch.float32):
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(*batch, n_q, d_k, generator=g, dtype=dtype),
        torch.randn(*batch, n_k, d_k, generator=g, dtype=dtype),
        torch.randn(*batch, n_k, d_v, generator=g, dtype=dtype),
    )


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: sdpa(torch.randn(4), torch.randn(4, 8), torch.randn(4, 3)), ValueError, "q must have shape (..., n, d) with at least 2 dims, got (4)"),
        (lambda: sdpa(torch.randn(2, 4, 8), torch.randn(2, 5, 6), torch.randn(2, 5, 3)), ValueError, "q and k must have the same last dim d_k, got q (2, 4, 8) (d_k=8) and k (2, 5, 6) (d_k=6)"),
        (lambda: sdpa(torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 6, 3)), ValueError, "k and v must have the same length n_k, got k (2, 5, 8) (n_k=5) and v (2, 6, 3) (n_k=6)"),
        (lambda: sdpa(torch.randn(2, 4, 8), torch.randn(3, 5, 8), torch.randn(3, 5, 3)), ValueError, "the batch dims of q (2, 4, 8), k (3, 5, 8) and v (3, 5, 3) do not broadcast"),
        (lambda: sdpa(torch.ones(4, 8, dtype=torch.long), torch.randn(5, 8), torch.randn(5, 3)), TypeError, "q must have a floating dtype, got torch.int64"),
        (lambda: sdpa(torch.randn(4, 8), torch.randn(5, 8, dtype=torch.float64), torch.randn(5, 3)), TypeError, "q, k, v must share one dtype, got q torch.float32, k torch.float64, v torch.float32"),
        (lambda: sdpa([[1.0]], torch.randn(5, 8), torch.randn(5, 3)), TypeError, "q must be a torch.Tensor, got list"),
        (lambda: sdpa(*qkv(2), attn_mask=torch.ones(2, 4, 5, dtype=torch.int64)), TypeError, "attn_mask must be torch.bool (True = may attend) or the float dtype of q (torch.float32), got torch.int64"),
        (lambda: sdpa(*qkv(2), attn_mask=torch.ones(2, 4, 5, dtype=torch.float64)), TypeError, "got torch.float64"),
        (lambda: sdpa(*qkv(2), attn_mask=torch.ones(2, 5, 4, dtype=torch.bool)), ValueError, "attn_mask of shape (2, 5, 4) does not broadcast to the scores' shape (2, 4, 5)"),
        (lambda: sdpa(*qkv(2), attn_mask=torch.ones(3, 2, 4, 5, dtype=torch.bool)), ValueError, "attn_mask of shape (3, 2, 4, 5) does not broadcast"),
        (lambda: sdpa(*qkv(2), attn_mask="causal"), TypeError, "attn_mask must be a torch.Tensor, got str"),
    ],
)
def test_functional_bad_input(make, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as err:
        make()
    assert message in str(err.value)
    assert str(err.value).startswith("scaled_dot_product_attention: ")


@pytest.mark.parametrize(
    ("x", "mask", "error", "message"),
    [
        (torch.randn(5, 8), None, ValueError, "x must have shape (B, n, d_model) = (B, n, 8), got (5, 8); for one sequence use x.unsqueeze(0)"),
        (torch.randn(1, 2, 5, 8), None, ValueError, "x must have shape (B, n, d_model) = (B, n, 8), got (1, 2, 5, 8)"),
        (torch.randn(2, 5, 6), None, ValueError, "x.shape[-1] must be d_model=8, got x of shape (2, 5, 6)"),
        (torch.ones(2, 5, 8, dtype=torch.long), None, TypeError, "x must have a floating dtype, got torch.int64"),
        (torch.randn(2, 5, 8), torch.ones(5, 4, dtype=torch.bool), ValueError, "SelfAttention: mask of shape (5, 4) does not broadcast to the scores' shape (2, 5, 5)"),
        (torch.randn(2, 5, 8), torch.ones(5, 5, dtype=torch.uint8), TypeError, "SelfAttention: mask must be torch.bool (True = may attend) or the float dtype of x (torch.float32), got torch.uint8"),
        (torch.randn(2, 5, 8), torch.zeros(5, 5, dtype=torch.float64), TypeError, "SelfAttention: mask must be torch.bool (True = may attend) or the float dtype of x (torch.float32), got torch.float64"),
        (torch.randn(2, 5, 8, dtype=torch.float64), None, TypeError, "SelfAttention: x must have the module's dtype torch.float32, got torch.float64"),
    ],
)
def test_self_attention_bad_input(x: torch.Tensor, mask, error: type[Exception], message: str) -> None:
    attn = SelfAttention(8, 4)
    with pytest.raises(error) as err:
        attn(x, mask)
    assert message in str(err.value)


@pytest.mark.parametrize("args", [(0, 4), (8, -1), (8, 4, 0)])
def test_self_attention_bad_sizes(args: tuple) -> None:
    with pytest.raises(ValueError, match="SelfAttention: d_.* must be positive"):
        SelfAttention(*args)


@pytest.mark.parametrize("args", [(8.0, 4), (True, 4), (8, 4, 2.0)])
def test_self_attention_sizes_must_be_int(args: tuple) -> None:
    with pytest.raises(TypeError, match="SelfAttention: d_.* must be an int, got (float|bool)"):
        SelfAttention(*args)


@pytest.mark.parametrize("kwargs", [{"d_model": True, "d_k": 4}, {"d_model": 8, "d_k": 4, "d_v": True}])
def test_self_attention_bool_sizes_by_keyword(kwargs: dict) -> None:
    with pytest.raises(TypeError, match=r"SelfAttention: d_(model|v) must be an int, got bool True"):
        SelfAttention(**kwargs)


def test_module_dtype_mismatch_names_x_and_both_dtypes() -> None:
    """issue 10: float64 x into a float32 module gave a raw Linear error."""
    attn = SelfAttention(8, 4)
    with pytest.raises(TypeError) as err:
        attn(torch.randn(2, 5, 8, dtype=torch.float64))
    msg = str(err.value)
    assert msg.startswith("SelfAttention: x ") and "torch.float32" in msg and "torch.float64" in msg
    out, _ = attn.double()(torch.randn(2, 5, 8, dtype=torch.float64))  # converted module: fine
    assert out.dtype == torch.float64


@pytest.mark.parametrize("flag", [torch.tensor(True), torch.tensor(False), 1, 0, "yes", None])
def test_is_causal_must_be_a_bool(flag: object) -> None:
    """issue 10: a tensor is_causal was silently taken by ``if is_causal:``."""
    with pytest.raises(TypeError, match=r"^scaled_dot_product_attention: is_causal must be a bool, got \w+"):
        sdpa(*qkv(2), is_causal=flag)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^SelfAttention: is_causal must be a bool, got \w+"):
        SelfAttention(8, 4)(torch.randn(2, 5, 8), is_causal=flag)  # type: ignore[arg-type]


BAD_CALLS = [
    lambda: sdpa(torch.randn(4), torch.randn(4, 8), torch.randn(4, 3)),
    lambda: sdpa(*qkv(2), attn_mask=torch.ones(2, 4, 5, dtype=torch.int64)),
    lambda: sdpa(*qkv(2), attn_mask=torch.ones(2, 5, 4, dtype=torch.bool)),
    lambda: sdpa(*qkv(2), is_causal=torch.tensor(True)),
    lambda: SelfAttention(8, 4)(torch.randn(2, 5, 6)),
    lambda: SelfAttention(8, 4)(torch.randn(5, 8)),
    lambda: SelfAttention(8, 4)(torch.randn(2, 5, 8, dtype=torch.float64)),
    lambda: SelfAttention(8, 4)(torch.randn(2, 5, 8), torch.ones(5, 5, dtype=torch.long)),
    lambda: SelfAttention(d_model=True, d_k=4),
    lambda: SelfAttention(8, 0),
    lambda: causal_mask(0),
    lambda: padding_mask(torch.tensor([True]), 3),
    lambda: padding_mask(torch.tensor([4]), 3),
]


@pytest.mark.parametrize("call", BAD_CALLS)
def test_every_message_names_fn_argument_expected_and_got(call) -> None:
    """``fn: argument must ..., got ...`` or ``fn: argument of shape ... does not ...``."""
    with pytest.raises((TypeError, ValueError)) as err:
        call()
    fn = r"^(scaled_dot_product_attention|SelfAttention|causal_mask|padding_mask): "
    pattern = fn + r"\S+ (.*must .*, got |of shape \(.*\) does not broadcast to .*\(.*\))"
    assert re.match(pattern, str(err.value)), str(err.value)


def test_mask_helpers_bad_input() -> None:
    with pytest.raises(ValueError, match="causal_mask: n_q must be positive, got 0"):
        causal_mask(0, 3)
    with pytest.raises(ValueError, match="causal_mask: n_k must be positive, got -1"):
        causal_mask(2, -1)
    with pytest.raises(TypeError, match="causal_mask: n_q must be an int, got bool True"):
        causal_mask(True)
    with pytest.raises(ValueError, match="align must be 'top-left' or 'bottom-right', got 'left'"):
        causal_mask(3, align="left")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"lengths must be a 1-D integer tensor \(B,\), got torch.float32 tensor of shape \(2,\)"):
        padding_mask(torch.tensor([1.0, 2.0]), 3)
    with pytest.raises(TypeError, match=r"lengths must be a 1-D integer tensor \(B,\), got torch.bool tensor of shape \(2,\)"):
        padding_mask(torch.tensor([True, False]), 3)
    with pytest.raises(TypeError, match=r"padding_mask: n must be an int, got float 3.0"):
        padding_mask(torch.tensor([1, 2]), 3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"every length must be in \[0, n=3\], got \[1, 4\]"):
        padding_mask(torch.tensor([1, 4]), 3)
    with pytest.raises(TypeError, match="mask must be torch.bool or a float dtype, got torch.int64"):
        to_mha_mask(torch.ones(2, 2, dtype=torch.long))


def test_masks_values() -> None:
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    assert torch.equal(causal_mask(2, 3, align="bottom-right"), torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    # top-left is the default, also when n_q != n_k (as SDPA's is_causal)
    assert torch.equal(causal_mask(2, 3), torch.tensor([[1, 0, 0], [1, 1, 0]], dtype=torch.bool))
    assert torch.equal(causal_mask(3, 2), torch.tensor([[1, 0], [1, 1], [1, 1]], dtype=torch.bool))
    assert torch.equal(padding_mask(torch.tensor([0, 2]), 3), torch.tensor([[[0, 0, 0]], [[1, 1, 0]]], dtype=torch.bool))
    f = torch.randn(3, 3)
    assert to_mha_mask(f) is f


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("is_causal", [False, True])
def test_fully_masked_rows_give_zeros_and_no_nan(dtype: torch.dtype, is_causal: bool) -> None:
    q, k, v = (t.requires_grad_() for t in qkv(2, 3, n_q=4, n_k=4, dtype=dtype))
    mask = torch.ones(2, 3, 4, 4, dtype=torch.bool)
    mask[0, 1, 2] = False  # one query row sees nothing
    mask[1, :, :, :] = False  # a whole sequence sees nothing
    out, weights = sdpa(q, k, v, mask, is_causal=is_causal)
    assert not torch.isnan(out).any() and not torch.isnan(weights).any()
    assert torch.equal(out[0, 1, 2], torch.zeros_like(out[0, 1, 2])) and (out[1] == 0).all()
    assert (weights[0, 1, 2] == 0).all()
    (out.float().square().sum()).backward()
    for t in (q, k, v):
        assert t.grad is not None and not torch.isnan(t.grad).any()
    assert (q.grad[1] == 0).all(), "a query that sees nothing gets no gradient"
    ref = F.scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), attn_mask=mask & causal_mask(4) if is_causal else mask)
    tol = 1e-5 if dtype in (torch.float32, torch.float64) else 2e-2
    assert torch.allclose(out.detach(), ref, atol=tol)


def test_fully_masked_rows_through_the_module() -> None:
    torch.manual_seed(0)
    attn = SelfAttention(8, 4)
    x = torch.randn(2, 3, 8, requires_grad=True)
    keys = padding_mask(torch.tensor([3, 0]), 3)  # the second sequence is all padding
    out, weights = attn(x, keys)
    out.sum().backward()
    assert (out[1] == 0).all() and (weights[1] == 0).all()
    assert not torch.isnan(x.grad).any()
    assert torch.allclose(weights[0].sum(-1), torch.ones(3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_torch_sdpa(dtype: torch.dtype) -> None:
    q, k, v = qkv(2, 3, n_q=6, n_k=7, dtype=dtype)
    mask = torch.rand(2, 1, 6, 7, generator=torch.Generator().manual_seed(1)) > 0.4
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    for kwargs in ({}, {"attn_mask": mask}, {"is_causal": True}, {"scale": 0.3}):
        ours, weights = sdpa(q, k, v, **kwargs)
        ref = F.scaled_dot_product_attention(q, k, v, **kwargs)
        assert torch.allclose(ours, ref, atol=tol), kwargs
        assert weights.shape == (2, 3, 6, 7)


def test_dropout_changes_weights_only_when_asked() -> None:
    q, k, v = qkv(1, n_q=8, n_k=8)
    torch.manual_seed(0)
    _, w = sdpa(q, k, v, dropout_p=0.5)
    assert (w == 0).any() and not torch.allclose(w.sum(-1), torch.ones(1, 8))
    _, w = sdpa(q, k, v)
    assert torch.allclose(w.sum(-1), torch.ones(1, 8))


@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    q, k, v = qkv(2, 3, n_q=6, n_k=7)
    mask = torch.rand(2, 1, 6, 7, generator=torch.Generator().manual_seed(1)) > 0.4
    cpu, _ = sdpa(q, k, v, mask)
    gpu, _ = sdpa(q.cuda(), k.cuda(), v.cuda(), mask.cuda())
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-5)


def test_float16_large_activations_do_not_overflow() -> None:
    """q is scaled before q @ kᵀ: unscaled dot products of this size would overflow float16 (max 65504)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 8, 64, generator=g) * 80 for _ in range(3))
    assert (q @ k.transpose(-2, -1)).abs().max() > 65504, "the unscaled scores must exceed the float16 range"
    out, weights = sdpa(q.half(), k.half(), v.half())
    ref = F.scaled_dot_product_attention(q, k, v)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert torch.allclose(out.float(), ref, atol=0.5, rtol=2e-2)
