"""Property tests: selfattn against torch.nn.functional.scaled_dot_product_attention (SDPA).

Hypothesis draws batch sizes, lengths (including 1), d_k != d_v, masks, ``is_causal`` and
dtypes; every example is compared with SDPA. The masks are

- bool (True = may attend), sometimes with a fully masked query row;
- float: a finite bias plus -inf where a bool mask forbids (the float mask that
  ``selfattn.masks.from_mha_masks`` builds from a bool and a float mask), sometimes
  with a row that is -inf everywhere;

each alone or together with ``is_causal`` (then a row may be empty only in the union).
SDPA returns no weights, so the reference weights are SDPA's output with ``v = I``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from selfattn.functional import scaled_dot_product_attention
from selfattn.self_attention import SelfAttention

ATOL = {torch.float32: 1e-5, torch.float64: 1e-10, torch.bfloat16: 3e-2}


@dataclass
class Case:
    """One drawn example: shapes, mask and flags."""

    batch: tuple[int, ...]
    n_q: int
    n_k: int
    d_k: int
    d_v: int
    mask: Tensor | None  # bool (True = may attend) or float64 (0/bias/-inf), (*batch, n_q, n_k)
    is_causal: bool
    seed: int

    def mask_as(self, dtype: torch.dtype) -> Tensor | None:
        """The mask for inputs of ``dtype`` (a float mask must have q's dtype)."""
        if self.mask is None or self.mask.dtype == torch.bool:
            return self.mask
        return self.mask.to(dtype)


@st.composite
def cases(draw: st.DrawFn, self_attention: bool = False) -> Case:
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    n_q = draw(st.integers(1, 6))
    n_k = n_q if self_attention else draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 6))
    d_v = draw(st.integers(1, 6).filter(lambda d: d != d_k))
    seed = draw(st.integers(0, 2**31 - 1))
    kind = draw(st.sampled_from(["none", "bool", "float"]))
    mask = None
    if kind != "none":
        g = torch.Generator().manual_seed(seed + 1)
        density = draw(st.sampled_from([0.2, 0.5, 0.9]))
        keep = torch.rand(*batch, n_q, n_k, generator=g) < density
        if draw(st.booleans()):
            keep[..., draw(st.integers(0, n_q - 1)), :] = False  # one fully masked query row
        if kind == "bool":
            mask = keep
        else:
            bias = torch.randn(*batch, n_q, n_k, generator=g, dtype=torch.float64)
            mask = bias.masked_fill(~keep, -math.inf)
    return Case(batch, n_q, n_k, d_k, d_v, mask, draw(st.booleans()), seed)


def qkv(c: Case, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(c.seed)
    q = torch.randn(*c.batch, c.n_q, c.d_k, generator=g)
    k = torch.randn(*c.batch, c.n_k, c.d_k, generator=g)
    v = torch.randn(*c.batch, c.n_k, c.d_v, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def sdpa_mask(mask: Tensor | None, c: Case) -> tuple[Tensor | None, bool]:
    """SDPA refuses attn_mask together with is_causal: fold the causal mask in."""
    if mask is None or not c.is_causal:
        return mask, c.is_causal
    causal = torch.ones(c.n_q, c.n_k, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        return mask & causal, False
    return mask.masked_fill(~causal, -math.inf), False


def reference(q: Tensor, k: Tensor, v: Tensor, c: Case) -> tuple[Tensor, Tensor]:
    """SDPA's output and weights (the output for v = I)."""
    mask, causal = sdpa_mask(c.mask_as(q.dtype), c)
    eye = torch.eye(c.n_k, dtype=q.dtype).expand(*c.batch, c.n_k, c.n_k)  # (..., n_k, n_k)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask, is_causal=causal)
    return out, weights


def empty_rows(c: Case) -> Tensor:
    """(..., n_q): True where a query row has no finite score."""
    allowed = torch.ones(*c.batch, c.n_q, c.n_k, dtype=torch.bool)
    if c.mask is not None:
        allowed = allowed & (c.mask if c.mask.dtype == torch.bool else c.mask != -math.inf)
    if c.is_causal:
        allowed = allowed & torch.ones(c.n_q, c.n_k, dtype=torch.bool).tril()
    return ~allowed.any(dim=-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@settings(max_examples=30, deadline=None)
@given(c=cases())
def test_functional_matches_sdpa(c: Case, dtype: torch.dtype) -> None:
    q, k, v = qkv(c, dtype)
    out, weights = scaled_dot_product_attention(q, k, v, c.mask_as(dtype), is_causal=c.is_causal)
    ref_out, ref_w = reference(q, k, v, c)
    atol = ATOL[dtype]
    assert out.shape == (*c.batch, c.n_q, c.d_v) and weights.shape == (*c.batch, c.n_q, c.n_k)
    assert torch.allclose(out, ref_out, atol=atol, rtol=0), f"out: max |diff| {(out - ref_out).abs().max():.3g}"
    assert torch.allclose(weights, ref_w, atol=atol, rtol=0), f"weights: max |diff| {(weights - ref_w).abs().max():.3g}"


@settings(max_examples=25, deadline=None)
@given(c=cases())
def test_functional_matches_sdpa_bfloat16(c: Case) -> None:
    q, k, v = qkv(c, torch.bfloat16)
    out, weights = scaled_dot_product_attention(q, k, v, c.mask_as(torch.bfloat16), is_causal=c.is_causal)
    ref_out, ref_w = reference(q, k, v, c)
    assert out.dtype == weights.dtype == torch.bfloat16
    tol = ATOL[torch.bfloat16]
    assert torch.allclose(out.float(), ref_out.float(), atol=tol, rtol=tol), (out.float() - ref_out.float()).abs().max()
    assert torch.allclose(weights.float(), ref_w.float(), atol=tol, rtol=tol)
    assert (out[empty_rows(c)] == 0).all() and (weights[empty_rows(c)] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@settings(max_examples=30, deadline=None)
@given(c=cases())
def test_fully_masked_rows_give_zeros_and_finite_grads(c: Case, dtype: torch.dtype) -> None:
    """Zero rows; gradients (w.r.t. q, k, v and a float mask) finite and equal to SDPA's."""
    q, k, v = (t.requires_grad_() for t in qkv(c, dtype))
    mask = c.mask_as(dtype)
    leaves = [q, k, v]
    if mask is not None and mask.is_floating_point():
        mask = mask.detach().requires_grad_()
        leaves.append(mask)
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal=c.is_causal)
    empty = empty_rows(c)  # (..., n_q)
    assert (out[empty] == 0).all() and (weights[empty] == 0).all(), "fully masked rows must be exactly 0"
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(c.seed + 2)).to(dtype)
    grads = torch.autograd.grad((out * upstream).sum(), leaves)
    assert all(torch.isfinite(g).all() for g in grads), "no NaN/inf in the gradients"
    assert (grads[0][empty] == 0).all(), "a query row that sees nothing gets a zero gradient"

    ref_leaves = [t.detach().requires_grad_() for t in leaves]
    ref_mask, causal = sdpa_mask(ref_leaves[3] if len(leaves) == 4 else mask, c)
    ref_out = F.scaled_dot_product_attention(*ref_leaves[:3], attn_mask=ref_mask, is_causal=causal)
    assert (ref_out[empty] == 0).all(), "SDPA also gives zeros there"
    ref_grads = torch.autograd.grad((ref_out * upstream).sum(), ref_leaves)
    atol = 10 * ATOL[dtype]
    for name, g, r in zip(["q", "k", "v", "mask"], grads, ref_grads, strict=False):
        assert torch.allclose(g, r, atol=atol, rtol=0), f"d{name}: max |diff| {(g - r).abs().max():.3g}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@settings(max_examples=25, deadline=None)
@given(c=cases(self_attention=True), d_model=st.integers(1, 8), bias=st.booleans())
def test_module_matches_sdpa(c: Case, dtype: torch.dtype, d_model: int, bias: bool) -> None:
    torch.manual_seed(c.seed)
    attn = SelfAttention(d_model, c.d_k, c.d_v, bias=bias).to(dtype)
    x = torch.randn(c.batch[0], c.n_q, d_model, generator=torch.Generator().manual_seed(c.seed)).to(dtype)
    full = c.mask_as(dtype)
    mask = None if full is None else full.reshape(-1, c.n_q, c.n_k)[: c.batch[0]]  # (B, n, n)
    out, weights = attn(x, mask, is_causal=c.is_causal)
    ref_mask, causal = sdpa_mask(mask, c)
    ref = F.scaled_dot_product_attention(attn.w_q(x), attn.w_k(x), attn.w_v(x), attn_mask=ref_mask, is_causal=causal)
    assert out.shape == (c.batch[0], c.n_q, c.d_v) and weights.shape == (c.batch[0], c.n_q, c.n_q)
    assert torch.allclose(out, ref, atol=ATOL[dtype], rtol=0), f"max |diff| {(out - ref).abs().max():.3g}"
    assert torch.allclose(out, weights @ attn.w_v(x), atol=ATOL[dtype], rtol=0), "out == weights @ w_v(x)"
