"""The contract of chapter 5 (docs/05-implementation.md#fully-masked-rows).

A query row with no finite score, whether it comes from a bool mask, a float mask with
-inf, both (a float mask built from a bool one), or any of these with ``is_causal``,
gives a zero output row, a zero weight row and finite zero gradients (with respect to
q, k, v, x and a float mask), in float32, float64, float16 and bfloat16, through
``selfattn.functional`` and ``SelfAttention``. The other rows equal SDPA's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from selfattn.functional import scaled_dot_product_attention as sdpa
from selfattn.masks import causal_mask, from_mha_masks
from selfattn.self_attention import SelfAttention

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.float64: 1e-10, torch.float16: 2e-2, torch.bfloat16: 5e-2}
N = 4
INF = math.inf


def float_alone(dtype: torch.dtype) -> tuple[Tensor, bool]:
    """A float mask whose row 1 is all -inf; row 0 has one -inf among finite scores."""
    m = torch.randn(N, N).to(dtype)
    m[1] = -INF
    m[0, 2] = -INF
    return m, False


def float_with_causal(dtype: torch.dtype) -> tuple[Tensor, bool]:
    """Row 0 is empty only in the union: the float mask hides key 0, causality the rest."""
    m = torch.zeros(N, N, dtype=dtype)
    m[0, 0] = -INF
    m[2, 1] = -INF
    return m, True


def bool_and_float(dtype: torch.dtype) -> tuple[Tensor, bool]:
    """nn.MultiheadAttention's bool attn_mask + float key_padding_mask, as one float mask.

    Row 3 is empty in the union only: the bool mask hides keys 0-1, the padding 2-3.
    """
    forbid = torch.zeros(N, N, dtype=torch.bool)  # MHA: True = may not attend
    forbid[3, :2] = True
    padding = torch.zeros(1, N, dtype=dtype)
    padding[0, 2:] = -INF
    padding[0, 1] = -0.5  # a finite float bias as well
    m = from_mha_masks(forbid, padding)
    assert m is not None and m.dtype == dtype
    return m[0, 0].clone(), False  # (n_q, n_k)


def bool_with_causal(dtype: torch.dtype) -> tuple[Tensor, bool]:
    m = torch.ones(N, N, dtype=torch.bool)
    m[0, 0] = False  # row 0: causal hides keys 1-3, the mask key 0
    return m, True


CASES: dict[str, Callable[[torch.dtype], tuple[Tensor, bool]]] = {
    "float": float_alone,
    "float+causal": float_with_causal,
    "bool+float": bool_and_float,
    "bool+causal": bool_with_causal,
}


def allowed(mask: Tensor, is_causal: bool) -> Tensor:
    """(n_q, n_k) bool: True where the score is finite."""
    ok = mask if mask.dtype == torch.bool else mask != -INF
    return ok & causal_mask(N) if is_causal else ok


def reference_mask(mask: Tensor, is_causal: bool) -> Tensor:
    """One mask for SDPA (which refuses attn_mask together with is_causal)."""
    if not is_causal:
        return mask
    if mask.dtype == torch.bool:
        return mask & causal_mask(N)
    return mask.masked_fill(~causal_mask(N), -INF)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_functional(case: str, dtype: torch.dtype) -> None:
    mask, is_causal = CASES[case](dtype)
    empty = ~allowed(mask, is_causal).any(dim=-1)  # (n_q,)
    assert empty.any() and not empty.all(), "the case must have empty and non-empty rows"
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, N, 3, generator=g).to(dtype).requires_grad_() for _ in "qkv")
    if mask.is_floating_point():
        mask.requires_grad_()

    out, weights = sdpa(q, k, v, mask, is_causal=is_causal)
    assert (out[:, empty] == 0).all() and (weights[:, empty] == 0).all()
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    ones = torch.ones(2, int((~empty).sum()), dtype=dtype)
    assert torch.allclose(weights[:, ~empty].sum(-1), ones, atol=TOL[dtype])
    assert (weights[:, ~allowed(mask, is_causal)] == 0).all(), "masked weights are exact 0"

    upstream = torch.randn(out.shape, generator=g).to(dtype)
    leaves = [q, k, v] + ([mask] if mask.requires_grad else [])
    grads = torch.autograd.grad((out * upstream).sum(), leaves)
    assert all(torch.isfinite(t).all() for t in grads), "finite gradients"
    assert (grads[0][:, empty] == 0).all(), "an empty query row gets a zero gradient"
    if mask.requires_grad:
        assert (grads[3][empty] == 0).all(), "an empty mask row gets a zero gradient"

    # The other rows, and every gradient, equal SDPA's (which gives 0 on empty rows).
    ref_leaves = [t.detach().requires_grad_() for t in leaves]
    ref_mask = reference_mask(ref_leaves[3] if mask.requires_grad else mask, is_causal)
    ref = F.scaled_dot_product_attention(*ref_leaves[:3], attn_mask=ref_mask)
    ref_grads = torch.autograd.grad((ref * upstream).sum(), ref_leaves)
    assert torch.allclose(out, ref, atol=TOL[dtype], rtol=TOL[dtype])
    for name, ours, theirs in zip("qkvm", grads, ref_grads, strict=False):
        err = (ours.float() - theirs.float()).abs().max().item()
        assert torch.allclose(ours, theirs, atol=4 * TOL[dtype], rtol=TOL[dtype]), (name, err)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_self_attention(case: str, dtype: torch.dtype) -> None:
    mask, is_causal = CASES[case](dtype)
    empty = ~allowed(mask, is_causal).any(dim=-1)  # (n,)
    torch.manual_seed(0)
    attn = SelfAttention(8, 4, 3, bias=True).to(dtype)
    x = torch.randn(2, N, 8).to(dtype).requires_grad_()
    if mask.is_floating_point():
        mask.requires_grad_()
    out, weights = attn(x, mask, is_causal=is_causal)
    assert (out[:, empty] == 0).all() and (weights[:, empty] == 0).all()
    assert torch.isfinite(out).all()
    leaves = [x, *attn.parameters()] + ([mask] if mask.requires_grad else [])
    grads = torch.autograd.grad(out.float().square().sum(), leaves)
    assert all(torch.isfinite(t).all() for t in grads), "finite gradients"
    if mask.requires_grad:
        assert (grads[-1][empty] == 0).all(), "an empty mask row gets a zero gradient"
    ref = F.scaled_dot_product_attention(
        attn.w_q(x), attn.w_k(x), attn.w_v(x), attn_mask=reference_mask(mask, is_causal)
    )
    assert torch.allclose(out, ref, atol=TOL[dtype], rtol=TOL[dtype])


def test_the_issue_example() -> None:
    """issue 10: q = k = v = randn(1, 3, 4); m = zeros(3, 3); m[1] = -inf gave NaN."""
    torch.manual_seed(0)
    q = torch.randn(1, 3, 4)
    m = torch.zeros(3, 3)
    m[1] = -INF
    out, weights = sdpa(q, q, q, m)
    assert torch.equal(out[0, 1], torch.zeros(4)) and torch.equal(weights[0, 1], torch.zeros(3))
    ref = F.scaled_dot_product_attention(q, q, q, attn_mask=m)
    assert torch.allclose(out, ref, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_minus_inf_beside_finite_scores_is_exact(dtype: torch.dtype) -> None:
    """A -inf in a row that keeps finite scores: exact 0 there, the rest is the softmax
    of the finite scores alone (the empty-row fill must not touch such a row)."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(3, 5, 4, generator=g, dtype=dtype) for _ in "qkv")
    m = torch.zeros(5, 5, dtype=dtype)
    m[:, 3] = -INF  # key 3 hidden from every query
    _, weights = sdpa(q, k, v, m)
    assert (weights[..., 3] == 0).all()
    keep = [0, 1, 2, 4]
    scores = (q / 2.0) @ k[:, keep].transpose(-2, -1)  # d_k = 4: scale 1/2 is exact
    by_hand = scores.softmax(dim=-1)
    assert torch.allclose(weights[..., keep], by_hand, atol=0, rtol=4 * torch.finfo(dtype).eps)


def test_very_negative_finite_scores_are_not_empty() -> None:
    """A row of finite, very negative scores is a softmax, not an empty row."""
    q, k, v = torch.ones(1, 2, 2), torch.ones(1, 3, 2), torch.randn(1, 3, 2)
    m = torch.full((2, 3), -1e30)
    out, weights = sdpa(q, k, v, m)
    assert torch.allclose(weights, torch.full((1, 2, 3), 1 / 3))
    assert torch.allclose(out, v.mean(dim=1, keepdim=True).expand(1, 2, 2))
