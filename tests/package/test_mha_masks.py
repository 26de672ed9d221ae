"""The mask converters between this book's convention and nn.MultiheadAttention's."""

from __future__ import annotations

import torch
from torch import nn

from selfattn.functional import scaled_dot_product_attention
from selfattn.masks import causal_mask, combine_masks, from_mha_masks, to_mha_mask


def test_to_mha_mask_inverts_bool() -> None:
    allowed = causal_mask(4)
    got = to_mha_mask(allowed)
    assert got.dtype == torch.bool
    assert torch.equal(got, ~allowed), "True = may attend must become True = may not"
    assert not torch.equal(got, allowed)
    assert torch.equal(to_mha_mask(got), allowed), "its own inverse (moved from chapter 5)"


def test_to_mha_mask_against_mha() -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 1, batch_first=True, bias=False).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(4).repeat(3, 1))  # q = k = v = x
        mha.out_proj.weight.copy_(torch.eye(4))
    x = torch.randn(1, 5, 4)
    allowed = causal_mask(5)
    with torch.no_grad():
        ref, _ = scaled_dot_product_attention(x, x, x, allowed)
        out, _ = mha(x, x, x, attn_mask=to_mha_mask(allowed))
    assert torch.allclose(out, ref, atol=1e-6)


def test_from_mha_masks_bool_polarity_and_shape() -> None:
    attn = ~causal_mask(3)  # MHA: True = may not
    kpm = torch.tensor([[False, False, True]])  # MHA: True = padding
    got = from_mha_masks(attn, kpm)
    assert got is not None and got.dtype == torch.bool and got.shape == (1, 1, 3, 3)
    want = causal_mask(3) & torch.tensor([True, True, False])
    assert torch.equal(got[0, 0], want)


def test_from_mha_masks_per_head_order() -> None:
    b, h, n = 2, 3, 4
    attn = torch.rand(b * h, n, n) > 0.5  # MHA stores (B·h): batch-major
    got = from_mha_masks(attn, num_heads=h)
    assert got is not None and got.shape == (b, h, n, n)
    for i in range(b):
        for j in range(h):
            assert torch.equal(got[i, j], ~attn[i * h + j])


def test_from_mha_masks_mixed_is_float() -> None:
    attn = torch.randn(3, 3)
    kpm = torch.tensor([[False, True, False]])
    got = from_mha_masks(attn, kpm)
    assert got is not None and got.dtype == torch.float32
    assert torch.equal(got[0, 0, :, 0], attn[:, 0])
    assert (got[0, 0, :, 1] == float("-inf")).all()


def test_combine_masks_is_and() -> None:
    a = torch.tensor([[True, False], [True, True]])
    b = torch.tensor([[True, True], [False, True]])
    got = combine_masks(a, None, b)
    assert got is not None and torch.equal(got, torch.tensor([[True, False], [False, True]]))
