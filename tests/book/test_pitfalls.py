"""Guards moved out of chapter 7 (docs/07-pitfalls.md) to keep the page readable and small.

Each test asserts what a collapsed "检验" / "Check" block, or a code block without
printing it, asserted; the chapter's prose points here.
"""

import torch

from selfattn.checks import CheckError, check_causal
from selfattn.masks import causal_mask, to_mha_mask
from selfattn.testing import raises


def test_triu_sees_everything_and_the_checker_reports_it():
    """7.2, masked weights not 0: the wrong triangle (triu) fails check_causal."""
    assert torch.ones(4, 4, dtype=torch.bool).triu()[0].all()  # row 0 sees everything

    def attn(q, k, v, mask=None, *, is_causal=False, tri=torch.triu):
        s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        w = s.masked_fill(~tri(torch.ones_like(s, dtype=torch.bool)), float("-inf"))
        return w.softmax(-1) @ v, w.softmax(-1)

    with raises(CheckError, "^causal", show=False):
        check_causal(attn)  # triu: fails
    assert check_causal(lambda *a, **kw: attn(*a, **kw, tri=torch.tril)).passed


def test_to_mha_mask_returns_a_float_mask_as_it_is():
    """7.3, mask polarity: a float mask is added to the scores in both APIs."""
    float_mask = torch.randn(5, 5)
    assert to_mha_mask(float_mask) is float_mask


def test_float16_bias_boundary():
    """7.3, float16 and -1e9: finfo.min as an additive bias overflows at scores <= -16.

    Near 65504 float16's spacing is 32; -65520 lies halfway and rounds to -inf (ties to
    even), -65519.5 rounds back to -65504.
    """
    fmin = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.half)
    assert torch.nextafter(fmin, torch.zeros_like(fmin)).item() == -65504.0 + 32
    assert (fmin + torch.tensor(-16.0, dtype=torch.half)).item() == float("-inf")
    assert (fmin + torch.tensor(-15.5, dtype=torch.half)).item() == -65504.0
    torch.manual_seed(0)
    scores = (30 * torch.randn(2, 4)).half()
    blocked = ~torch.tensor([[True, True, False, False], [False] * 4])
    added = scores + torch.zeros_like(scores).masked_fill(blocked, fmin.item())
    assert torch.equal(torch.isinf(added), blocked & (scores <= -16))


def test_bottom_right_alignment_equals_top_left_when_square_and_tall_has_empty_rows():
    """7.3, KV cache: n_q = n_k gives the same mask; n_q > n_k leaves empty rows."""
    for n in (1, 4):
        assert torch.equal(causal_mask(n, n), causal_mask(n, n, align="bottom-right"))
    tall = causal_mask(5, 3, align="bottom-right")  # n_q = 5 > n_k = 3
    assert (~tall.any(-1)).tolist() == [True, True, False, False, False]


# The guards below were in the chapter's code blocks; each test repeats its block's setup
# (same seeds, same order of random draws) and asserts what the block asserted.


def test_softmax_over_the_query_dim_breaks_the_row_sums():
    """7.2, rows do not sum to 1: dim=1 is wrong, dim=-1 is right."""
    torch.manual_seed(0)
    scores = torch.randn(2, 4, 4)
    assert not torch.allclose(scores.softmax(dim=1).sum(dim=-1), torch.ones(2, 4))
    assert torch.allclose(scores.softmax(dim=-1).sum(dim=-1), torch.ones(2, 4))


def test_filling_the_allowed_positions_leaks_and_empties_a_row():
    """7.2, masked weights not 0: masked_fill(allowed, -inf) vs masked_fill(~allowed)."""
    torch.manual_seed(0)
    scores = torch.randn(4, 4)
    allowed = torch.ones(4, 4, dtype=torch.bool).tril()
    wrong = scores.masked_fill(allowed, float("-inf")).softmax(-1)
    assert (wrong[~allowed][:3] > 0).all()  # future positions get weight
    assert torch.isnan(wrong[3]).all()  # row 3 is all "allowed": a row of -inf
    right = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    assert (right[~allowed] == 0).all()


def test_selfattn_matches_sdpa_on_left_padding_with_a_causal_mask():
    """7.2, NaN from fully masked rows: selfattn's zero rows are what SDPA gives."""
    import torch.nn.functional as F

    from selfattn.functional import scaled_dot_product_attention
    from selfattn.masks import padding_mask

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 4, requires_grad=True) for _ in range(3))
    real = padding_mask(torch.tensor([2]), 4).flip(-1)
    allowed = causal_mask(4) & real
    out, _ = scaled_dot_product_attention(q, k, v, allowed)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))


def _mha_weights(key_padding_mask):
    from torch import nn

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, num_heads=2, batch_first=True)
    x = torch.randn(2, 5, 8)
    return mha(x, x, x, key_padding_mask=key_padding_mask)[1]


def test_padding_mask_as_key_padding_mask_masks_every_key_of_a_full_sentence():
    """7.3, mask polarity: sentence 1 has no padding, so MHA masks all its keys: NaN."""
    from selfattn.masks import padding_mask

    real = padding_mask(torch.tensor([5, 3]), 5)[:, 0]
    assert torch.isnan(_mha_weights(real)[0]).all()
    assert not torch.isnan(_mha_weights(to_mha_mask(real))).any()


def test_padded_queries_put_all_their_weight_on_real_keys():
    """7.3, padding side: under the key-side mask, padded queries see only real keys."""
    from selfattn.masks import padding_mask
    from selfattn.self_attention import SelfAttention

    torch.manual_seed(0)
    attn = SelfAttention(d_model=8, d_k=4)
    x = torch.randn(1, 5, 8)
    keys_ok = padding_mask(torch.tensor([3]), 5)
    _, w = attn(x, keys_ok)
    assert w[0, 3:, 3:].sum() == 0
    assert torch.allclose(w[0, 3:].sum(-1), torch.ones(2))


def test_mha_default_weights_are_the_mean_over_heads():
    """7.3: w[:, 1] is query 1's row (sums to 1); the default averages the heads."""
    from torch import nn

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, num_heads=4, batch_first=True)
    x = torch.randn(2, 4, 8)
    _, w = mha(x, x, x)
    _, w_heads = mha(x, x, x, average_attn_weights=False)
    assert torch.allclose(w[:, 1].sum(-1), torch.ones(2))
    assert torch.allclose(w_heads.mean(dim=1), w, atol=1e-6)


def test_dropout_scales_the_kept_weights_by_one_over_one_minus_p():
    """7.3, dropout: a new module trains; kept weights are 1/(1-p) = 2 times larger."""
    from torch import nn

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, num_heads=2, dropout=0.5, batch_first=True)
    x = torch.randn(1, 6, 8)
    assert mha.training
    w = {}
    for mode in ("train", "eval"):
        mha.train(mode == "train")
        _, w[mode] = mha(x, x, x, average_attn_weights=False)
        mha(x, x, x)  # the chapter's second call: keeps the random draws in step
    kept = w["train"] != 0
    assert kept.any() and torch.allclose(w["train"][kept], 2 * w["eval"][kept])


def test_softmax_dtype_float32_raises_16_bit_precision_and_promote_types_keeps_float64():
    """7.3, softmax(dtype=torch.float32): up for float16 and bfloat16, down for float64."""
    up = {dt: torch.promote_types(dt, torch.float32)
          for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}
    assert up == {torch.float16: torch.float32, torch.bfloat16: torch.float32,
                  torch.float32: torch.float32, torch.float64: torch.float64}
    torch.manual_seed(0)
    s = 4 * torch.randn(64, 64, dtype=torch.float64)
    exact = s.softmax(dim=-1)
    for dt in (torch.float16, torch.bfloat16):
        low = s.to(dt)
        in_dt = (low.softmax(dim=-1).double() - exact).abs().max()
        in_32 = (torch.softmax(low, dim=-1, dtype=torch.float32).double() - exact).abs().max()
        assert in_32 < in_dt, dt  # float32 softmax: closer to the exact weights
    down = torch.softmax(s, dim=-1, dtype=torch.float32).double()
    assert 1e-9 < (down - exact).abs().max() < 1e-6  # float64 lowered to float32
