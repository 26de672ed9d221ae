"""Guards moved out of chapter 7 (docs/07-pitfalls.md) to make room for its figures.

Each test asserts what a collapsed "检验" / "Check" block of the chapter asserted; the
chapter's prose points here.
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
