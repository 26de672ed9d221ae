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
        out, w = ours(x, mask, average_attn_weights=average)
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
    _, w_eval = m(x, average_attn_weights=False)
    m.train()
    _, w_train = m(x, average_attn_weights=False)
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
        ({"d_model": 0, "num_heads": 1}, "d_model must be positive, got 0"),
        ({"d_model": 8, "num_heads": -2}, "num_heads must be positive, got -2"),
        ({"d_model": 8, "num_heads": 2, "dropout": 1.0}, "dropout must be in [0, 1)"),
    ],
)
def test_bad_construction(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError) as info:
        MultiHeadSelfAttention(**kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((16.0, 4), "d_model must be an int, got float 16.0"),
        ((True, 1), "d_model must be an int, got bool True"),
        ((16, 4.0), "num_heads must be an int, got float 4.0"),
    ],
)
def test_sizes_must_be_int(args: tuple[object, object], needle: str) -> None:
    with pytest.raises(TypeError) as info:
        MultiHeadSelfAttention(*args)  # type: ignore[arg-type]
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
    assert " q " not in str(info.value) and "of q" not in str(info.value), "name the user's argument"
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


# --- dtypes, flags and the contract for fully masked rows -----------------------------


@pytest.mark.parametrize("need", [True, False])
def test_x_dtype_must_match_module(need: bool) -> None:
    m = MultiHeadSelfAttention(8, 2)  # float32
    with pytest.raises(TypeError) as info:
        m(torch.randn(1, 3, 8, dtype=torch.float64), need_weights=need)
    msg = str(info.value)
    for needle in ("MultiHeadSelfAttention", "x", "torch.float64", "torch.float32"):
        assert needle in msg, f"{needle!r} not in {msg}"


@pytest.mark.parametrize("flag", ["is_causal", "need_weights", "average_attn_weights"])
def test_flags_must_be_bool(flag: str) -> None:
    m = MultiHeadSelfAttention(8, 2)
    with pytest.raises(TypeError, match=f"{flag} must be a bool, got Tensor"):
        m(torch.randn(1, 3, 8), **{flag: torch.tensor(True)})


def test_mask_dtype_message_names_mask_and_x() -> None:
    m = MultiHeadSelfAttention(8, 2)
    with pytest.raises(TypeError) as info:
        m(torch.randn(1, 3, 8), torch.zeros(3, 3, dtype=torch.float64))
    msg = str(info.value)
    assert "mask" in msg and "x" in msg and "of q" not in msg, msg


def test_old_keyword_average_weights_is_gone() -> None:
    with pytest.raises(TypeError, match="average_weights"):
        MultiHeadSelfAttention(8, 2)(torch.randn(1, 3, 8), average_weights=False)  # type: ignore[call-arg]


def _fully_masked_cases(n: int, dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, bool]]:
    """Masks in which query 1 has no finite score; (mask, is_causal)."""
    inf = float("-inf")
    float_row = torch.zeros(n, n, dtype=dtype)
    float_row[1] = inf  # an additive mask whose row 1 is all -inf
    kpm_bool = torch.zeros(2, n, dtype=torch.bool)
    kpm_bool[1] = True  # MHA: sentence 1 is all padding
    attn_float = torch.zeros(n, n, dtype=dtype)
    attn_float[:, 0] = inf  # key 0 forbidden for everyone
    causal_hole = torch.zeros(n, n, dtype=dtype)
    causal_hole[1, :2] = inf  # with is_causal, query 1 (keys 0, 1) has nothing left
    bool_hole = torch.ones(n, n, dtype=torch.bool)
    bool_hole[1, :2] = False  # with is_causal, query 1 has nothing left
    return {
        "float -inf row": (float_row, False),
        "from_mha_masks: float attn + bool padding": (
            from_mha_masks(attn_float, kpm_bool, num_heads=2), False),  # type: ignore[dict-item]
        "float mask + is_causal": (causal_hole, True),
        "bool mask + is_causal": (bool_hole, True),
    }


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("need", [True, False], ids=["explicit", "fast"])
@pytest.mark.parametrize("case", ["float -inf row", "from_mha_masks: float attn + bool padding",
                                  "float mask + is_causal", "bool mask + is_causal"])
def test_fully_masked_rows_both_paths(dtype: torch.dtype, need: bool, case: str) -> None:
    """A query with no finite score: attention output 0, so the module returns out_proj.bias."""
    torch.manual_seed(0)
    n = 4
    m = MultiHeadSelfAttention(8, 2).to(dtype)
    with torch.no_grad():
        m.out_proj.bias.normal_()  # a non-zero bias, so that "output = bias" means something
    mask, causal = _fully_masked_cases(n, dtype)[case]
    x = torch.randn(2, n, 8, dtype=dtype, requires_grad=True)
    out, _ = m(x, mask, is_causal=causal, need_weights=need)
    rows = [(1, 1)] if case != "from_mha_masks: float attn + bool padding" else [
        (1, i) for i in range(n)]
    for b, i in rows:
        assert torch.equal(out[b, i], m.out_proj.bias), (b, i, out[b, i])
    assert torch.isfinite(out).all()
    # the masked rows do not depend on x: their gradient is exactly zero
    masked = sum(out[b, i].float().sum() for b, i in rows)
    (g,) = torch.autograd.grad(masked, x, retain_graph=True)
    assert torch.isfinite(g).all() and (g == 0).all()
    out.float().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    for p in m.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all()


def test_fully_masked_rows_match_mha_need_weights_false() -> None:
    """nn.MultiheadAttention(need_weights=False) on its SDPA path also returns out_proj.bias.

    Its fused inference path (eval mode under no_grad) gives NaN there instead, and so
    does need_weights=True: the book says so in 8.1.
    """
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)  # training mode, dropout 0
    with torch.no_grad():
        mha.out_proj.bias.normal_()
    ours = MultiHeadSelfAttention.from_torch(mha)
    x = torch.randn(1, 3, 8)
    blocked = torch.zeros(3, 3, dtype=torch.bool)
    blocked[1] = True  # MHA: query 1 may attend to nothing
    ref, _ = mha(x, x, x, attn_mask=blocked, need_weights=False)
    assert torch.equal(ref[0, 1], mha.out_proj.bias)
    for need in (True, False):
        out, _ = ours(x, from_mha_masks(blocked), need_weights=need)
        assert torch.equal(out[0, 1], mha.out_proj.bias)
        assert _max_diff(out, ref) < ATOL
    with torch.no_grad():
        fused, _ = mha.eval()(x, x, x, attn_mask=blocked, need_weights=False)
        weighted, _ = mha(x, x, x, attn_mask=blocked)
    assert fused[0, 1].isnan().all() and weighted[0, 1].isnan().all()


# --- is_causal without a mask: the fast path's own branch --------------------------------


def test_fast_path_is_causal_without_mask(pair, x) -> None:
    mha, ours = pair
    with torch.no_grad():
        ref, _ = mha(x, x, x, attn_mask=~causal_mask(N), need_weights=False)
        fast, none = ours(x, is_causal=True, need_weights=False)
        explicit, w = ours(x, is_causal=True)
        with_mask, _ = ours(x, causal_mask(N), need_weights=False)
        full, _ = ours(x, need_weights=False)
    assert none is None and w is not None
    assert (w.triu(diagonal=1) == 0).all()
    for got in (explicit, with_mask, ref):
        assert _max_diff(fast, got) < ATOL
    assert _max_diff(fast, full) > 1e-2, "is_causal=True must change the result"


# --- from_torch: exact in every dtype, and the mode -----------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_from_torch_is_exact(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():  # weights that float32 cannot represent
        for p in mha.parameters():
            p.add_(torch.randn_like(p))
            p.add_(torch.rand_like(p) * 1e-12)
    mha = mha.to(dtype).eval()
    if dtype == torch.float64:
        w = mha.in_proj_weight
        assert (w.float().double() != w).all(), "the test needs weights float32 cannot hold"
    ours = MultiHeadSelfAttention.from_torch(mha)
    theirs = dict(mha.named_parameters())
    names = {"in_proj.weight": "in_proj_weight", "in_proj.bias": "in_proj_bias",
             "out_proj.weight": "out_proj.weight", "out_proj.bias": "out_proj.bias"}
    for ours_name, p in ours.named_parameters():
        ref = theirs[names[ours_name]]
        assert p.dtype == dtype and p.device == ref.device, ours_name
        assert torch.equal(p, ref), f"{ours_name} not copied exactly"
    if dtype == torch.float64:
        x = torch.randn(2, 5, 8, dtype=dtype)
        with torch.no_grad():
            ref_out, _ = mha(x, x, x)
            out, _ = ours(x)
        assert _max_diff(out, ref_out) < 1e-12


@pytest.mark.parametrize("training", [True, False])
def test_from_torch_copies_training_mode(training: bool) -> None:
    mha = nn.MultiheadAttention(8, 2, batch_first=True).train(training)
    assert MultiHeadSelfAttention.from_torch(mha).training is training


def test_split_heads_equals_per_head_loop_and_concat_needs_reshape() -> None:
    """Moved from chapter 8.1 (docs/08-multihead.md, "逐步拆开"): the view + transpose split and
    one batched call equal a loop in which head i uses column block i of each W; after the
    transpose the heads are not contiguous, so the concat needs reshape, not view."""
    from selfattn.functional import scaled_dot_product_attention

    torch.manual_seed(0)
    B, n, d_model, h = 2, 5, 12, 3
    d_head = d_model // h
    x = torch.randn(B, n, d_model)
    w_q, w_k, w_v, w_o = (torch.randn(d_model, d_model) / d_model**0.5 for _ in range(4))

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(B, n, h, d_head).transpose(1, 2)

    heads, _ = scaled_dot_product_attention(split(x @ w_q), split(x @ w_k), split(x @ w_v))
    out = heads.transpose(1, 2).reshape(B, n, d_model) @ w_o
    per_head = []
    for i in range(h):
        cols = slice(i * d_head, (i + 1) * d_head)
        qi, ki, vi = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        per_head.append((qi @ ki.transpose(-2, -1) / d_head**0.5).softmax(dim=-1) @ vi)
    assert torch.allclose(out, torch.cat(per_head, dim=-1) @ w_o, atol=1e-6)
    assert not heads.transpose(1, 2).is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        heads.transpose(1, 2).view(B, n, d_model)


def test_parameter_count_without_bias_is_4_d_squared() -> None:
    """Moved from chapter 8.1's parameter section."""
    d = 512
    assert sum(p.numel() for p in MultiHeadSelfAttention(d, 8, bias=False).parameters()) == 4 * d * d
