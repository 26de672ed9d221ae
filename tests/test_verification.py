"""Guards moved out of chapter 6 (docs/06-verification.md) to make room for its figures.

Each test asserts what a collapsed "检验" / "Check" block of the chapter asserted; the
chapter's prose points here.
"""

import warnings

import torch
from torch.autograd import gradcheck

from selfattn.functional import scaled_dot_product_attention as sdpa
from selfattn.masks import causal_mask
from selfattn.self_attention import SelfAttention


def test_gradcheck_fails_a_correct_function_in_float32():
    """6.4: the finite differences are wrong in float32, not the function."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 3, requires_grad=True) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warning: the inputs are not float64
        ok32 = gradcheck(lambda q, k, v: sdpa(q, k, v), (q, k, v), raise_exception=False)
    assert not ok32


def test_gradcheck_on_the_module_in_float64():
    """6.4: backward through the three projections, the mask and the softmax."""
    torch.manual_seed(0)
    attn = SelfAttention(d_model=4, d_k=3, d_v=2).double()
    x = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x: attn(x, causal_mask(4))[0], (x,))


def test_finite_fill_is_bitwise_minus_inf_only_104_below_the_max():
    """6.2, finite fill values: in float32, fill - m < -104 gives exactly the -inf result."""
    keep = torch.tensor([True, True, False, False])  # the last two keys are masked
    cases = [([2.0, 0.5, -1.0, 0.3], f) for f in (-10.0, -100.0, -1e4, -1e9)]
    cases.append(([-9950.0, -9990.0, 0.0, 0.0], -1e4))  # scores themselves near -1e4
    for scores, fill in cases:
        w = torch.tensor(scores).masked_fill(~keep, fill).softmax(dim=-1)
        exact = torch.tensor(scores).masked_fill(~keep, float("-inf")).softmax(dim=-1)
        assert torch.equal(w, exact) == (fill - max(scores[:2]) < -104), (scores, fill)
