"""MultiHeadSelfAttention against nn.MultiheadAttention, its two paths, and its errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from selfattn.masks import causal_mask, combine_masks, from_mha_masks, padding_mask
from selfattn.multihead import MultiHeadSelfAttention

D, H, B, N = 512, 8, 2, 9
ATOL = 1e-5


@pytest.fixture(scope="module")
def pair() -> tuple[nn.MultiheadAttention, MultiHeadSelfAttention]:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(D, H, batch_first=True)
    with torch.no_grad():  # the default biases are zero; random ones catch a missing copy
        assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    return mha.eval(), MultiHeadSelfAttention.from_torch(mha).eval()


@pytest.fixture(scope="module")
def x() -> torch.Tensor:
    return torch.randn(B, N, D, generator=torch.Generator().manual_seed(1))


def _masks() -> dict[str, dict[str, torch.Tensor]]:
    kpm = torch.zeros(B, N, dtype=torch.bool)
    kpm[1, 6:] = True  # MHA convention: True = padding
    float_attn = torch.randn(N, N, generator=torch.Generator().manual_seed(2))
    per_head = torch.rand(B * H, N, N, generator=torch.Generator().manual_seed(3)) > 0.5
    per_head[..., 0] = False  # every query keeps key 0
    return {
        "none": {},
        "causal attn_mask": {"attn_mask": ~causal_mask(N)},
        "key_padding_mask": {"key_padding_mask": kpm},
        "causal + padding": {"attn_mask": ~causal_mask(N), "key_padding_mask": kpm},
        "float attn_mask": {"attn_mask": float_attn},
        "per-head (B*h, n, n) attn_mask + padding": {"attn_mask": per_head, "key_padding_mask": kpm},
    }


MASKS = _masks()


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("average", [True, False])
def test_matches_torch(pair, x, name: str, average: bool) -> None:
    mha, ours = pair
    kw = MASKS[name]
    with torch.no_grad():
        ref_out, ref_w = mha(x, x, x, average_attn_weights=average, **kw)
        mask = from_mha_masks(kw.get("attn_mask"), kw.get("key_padding_mask"), num_heads=H)
        out, w = ours(x, mask, average_weights=average)
    assert w is not None and ref_w is not None
    assert w.shape == ((B, N, N) if average else (B, H, N, N)), tuple(w.shape)
    assert w.shape == ref_w.shape
    assert _max_diff(out, ref_out) < ATOL, f"{name}: output differs by {_max_diff(out, ref_out):.2e}"
    assert _max_diff(w, ref_w) < ATOL, f"{name}: weights differ by {_max_diff(w, ref_w):.2e}"


@pytest.mark.parametrize("name", list(MASKS))
def test_fast_path_equals_explicit(pair, x, name: str) -> None:
    _, ours = pair
    kw = MASKS[name]
    mask = from_mha_masks(kw.get("attn_mask"), kw.get("key_padding_mask"), num_heads=H)
    with torch.no_grad():
        explicit, _ = ours(x, mask)
        fast, none = ours(x, mask, need_weights=False)
    assert none is None
    assert _max_diff(fast, explicit) < ATOL, f"{name}: {_max_diff(fast, explicit):.2e}"


def test_is_causal_both_paths(pair, x) -> None:
    mha, ours = pair
    pad = padding_mask(torch.tensor([N, 5]), N).unsqueeze(1)  # (B, 1, 1, N)
    with torch.no_grad():
        ref, _ = mha(x, x, x, attn_mask=~causal_mask(N), key_padding_mask=~pad[:, 0, 0])
        explicit, _ = ours(x, pad, is_causal=True)
        fast, _ = ours(x, pad, is_causal=True, need_weights=False)
        combined, _ = ours(x, combine_masks(pad, causal_mask(N)))
    for got in (explicit, fast, combined):
        assert _max_diff(got, ref) < ATOL


def test_training_mode_dropout_zero_matches(pair, x) -> None:
    mha, ours = pair
    mha.train()
    ours.train()
    try:
        xg = x.clone().requires_grad_()
        ref_out, ref_w = mha(xg, xg, xg)
        out, w = ours(xg)
        assert _max_diff(out, ref_out) < ATOL and _max_diff(w, ref_w) < ATOL
        out.sum().backward()
        assert xg.grad is not None and torch.isfinite(xg.grad).all()
    finally:
        mha.eval()
        ours.eval()


def test_from_torch_copies_mode_dropout_and_no_bias() -> None:
    mha = nn.MultiheadAttention(16, 4, dropout=0.25, bias=False, batch_first=True)
    ours = MultiHeadSelfAttention.from_torch(mha)
    assert ours.training and ours.dropout == 0.25 and ours.in_proj.bias is None
    assert torch.equal(ours.in_proj.weight, mha.in_proj_weight)
    assert ours.in_proj.weight.data_ptr() != mha.in_proj_weight.data_ptr(), "copied, not shared"
    x = torch.randn(2, 5, 16)
    mha.eval()
    ours.eval()
    with torch.no_grad():
        assert _max_diff(ours(x)[0], mha(x, x, x)[0]) < ATOL


def test_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    m = MultiHeadSelfAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 6, 16)
    m.eval()
    _, w_eval = m(x, average_weights=False)
    m.train()
    _, w_train = m(x, average_weights=False)
    assert w_eval is not None and w_train is not None
    assert (w_eval > 0).all() and (w_train == 0).any()
    keep = w_train != 0
    assert torch.allclose(w_train[keep], 2 * w_eval[keep])


def test_fully_masked_row_is_zero_not_nan() -> None:
    torch.manual_seed(0)
    m = MultiHeadSelfAttention(8, 2)
    x = torch.randn(1, 3, 8, requires_grad=True)
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., 2, :] = False  # query 2 may attend to nothing
    for need in (True, False):
        out, _ = m(x, mask, need_weights=need)
        assert torch.allclose(out[0, 2], m.out_proj.bias), "attention result 0: output is the bias"
        out.sum().backward()
        assert x.grad is not None and torch.isfinite(x.grad).all()


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"d_model": 10, "num_heads": 4}, "d_model=10 must be divisible by num_heads=4"),
        ({"d_model": 0, "num_heads": 1}, "d_model must be a positive int"),
        ({"d_model": 8, "num_heads": 2.0}, "num_heads must be a positive int"),
        ({"d_model": 8, "num_heads": 2, "dropout": 1.0}, "dropout must be in [0, 1)"),
    ],
)
def test_bad_construction(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError) as info:
        MultiHeadSelfAttention(**kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("x_shape", "mask", "error", "needles"),
    [
        ((5, 8), None, ValueError, ["(B, n, d_model) = (B, n, 8)", "got (5, 8)", "unsqueeze(0)"]),
        ((1, 2, 5, 8), None, ValueError, ["got (1, 2, 5, 8)"]),
        ((2, 5, 6), None, ValueError, ["d_model=8", "(2, 5, 6)"]),
        ((2, 5, 8), torch.ones(2, 5, 5, dtype=torch.bool), ValueError, ["3-D mask (2, 5, 5)", "unsqueeze(1)"]),
        ((2, 5, 8), torch.ones(3, 1, 5, 5, dtype=torch.bool), ValueError, ["(3, 1, 5, 5)", "(2, 2, 5, 5)"]),
        ((2, 5, 8), torch.ones(4, 4, dtype=torch.bool), ValueError, ["(4, 4)", "(2, 2, 5, 5)"]),
        ((2, 5, 8), torch.ones(5, 5, dtype=torch.int64), TypeError, ["torch.bool", "torch.int64"]),
        ((2, 5, 8), torch.zeros(5, 5, dtype=torch.float64), TypeError, ["torch.float32", "torch.float64"]),
    ],
)
def test_bad_input(x_shape, mask, error, needles) -> None:
    m = MultiHeadSelfAttention(8, 2)
    with pytest.raises(error) as info:
        m(torch.randn(*x_shape), mask)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"
    with pytest.raises(error):  # the fast path checks the same things
        m(torch.randn(*x_shape), mask, need_weights=False)


def test_bad_x_type_and_dtype() -> None:
    m = MultiHeadSelfAttention(8, 2)
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        m([[1.0] * 8])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="floating dtype, got torch.int64"):
        m(torch.ones(1, 2, 8, dtype=torch.int64))


def test_from_torch_rejects_unsupported() -> None:
    with pytest.raises(TypeError, match="nn.MultiheadAttention, got Linear"):
        MultiHeadSelfAttention.from_torch(nn.Linear(4, 4))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kdim=6"):
        MultiHeadSelfAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=6, vdim=6))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadSelfAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


def test_mask_helpers_errors() -> None:
    with pytest.raises(TypeError, match="mask 1 must be a bool tensor"):
        combine_masks(torch.ones(2, 2, dtype=torch.bool), torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"\(2, 3\), \(4, 4\) do not broadcast"):
        combine_masks(torch.ones(2, 3, dtype=torch.bool), None, torch.ones(4, 4, dtype=torch.bool))
    assert combine_masks(None, None) is None
    assert from_mha_masks() is None
    with pytest.raises(ValueError, match=r"\(B·h, n_q, n_k\) with h=num_heads=4"):
        from_mha_masks(torch.zeros(6, 3, 3, dtype=torch.bool), num_heads=4)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, n_k\)"):
        from_mha_masks(key_padding_mask=torch.zeros(3, dtype=torch.bool))
    with pytest.raises(TypeError, match="torch.int64"):
        from_mha_masks(torch.zeros(3, 3, dtype=torch.int64))
