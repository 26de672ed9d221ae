"""Guards moved out of chapter 6 (docs/06-verification.md) to keep the page within its size.

Each test asserts what a code block of the chapter asserted without printing it; the
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


# The guards below were in the chapter's code blocks; each test repeats its block's setup
# (same seeds, same order of random draws) and asserts what the block asserted.


def test_rows_with_a_key_sum_to_one_and_empty_rows_to_zero():
    """6.1: the two kinds of rows, checked separately."""
    from selfattn.masks import padding_mask

    torch.manual_seed(0)
    attn = SelfAttention(d_model=8, d_k=4, d_v=3)
    x = torch.randn(3, 5, 8)
    keys_ok = padding_mask(torch.tensor([5, 3, 2]), 5)
    mask = keys_ok & keys_ok.transpose(1, 2)
    _, weights = attn(x, mask)
    sums = weights.sum(dim=-1)
    has_key = mask.any(dim=-1)
    assert torch.allclose(sums[has_key], torch.ones(()), atol=1e-6)
    assert (sums[~has_key] == 0).all()


def test_allowed_weights_are_positive():
    """6.2: with a random mask, every allowed position gets a positive weight."""
    torch.manual_seed(0)
    attn = SelfAttention(d_model=8, d_k=4)
    x = torch.randn(2, 6, 8)
    mask = torch.rand(2, 6, 6) > 0.5
    mask |= torch.eye(6, dtype=torch.bool)
    _, weights = attn(x, mask)
    assert (weights[~mask] == 0).all()
    assert (weights[mask] > 0).all()


def test_a_fully_masked_row_with_a_finite_fill_is_exactly_uniform():
    """6.2, finite fill values: uniform 1/n_k whatever the fill."""
    all_masked = torch.ones(4, dtype=torch.bool)
    for fill in (-1e4, -1e9, torch.finfo(torch.float32).min):
        w = torch.randn(4).masked_fill(all_masked, fill).softmax(dim=-1)
        assert torch.equal(w, torch.full((4,), 0.25))


def test_an_output_row_is_the_explicit_weighted_sum_of_v():
    """6.3: out[1, 3] == sum_j weights[1, 3, j] * v[1, j], with V recomputed outside."""
    torch.manual_seed(0)
    attn = SelfAttention(d_model=8, d_k=4, d_v=3)
    x = torch.randn(2, 5, 8)
    out, weights = attn(x, causal_mask(5))
    v = attn.w_v(x)
    manual = sum(weights[1, 3, j] * v[1, j] for j in range(5))
    assert torch.allclose(out[1, 3], manual, atol=1e-6)


def test_detached_weights_have_a_right_forward_and_fail_gradcheck():
    """6.4: .detach() after the softmax leaves the forward exact; gradcheck raises."""
    import math

    from selfattn.testing import raises

    torch.manual_seed(0)
    q = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 5, 2, dtype=torch.float64, requires_grad=True)

    def detached(q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return scores.softmax(dim=-1).detach() @ v

    assert torch.allclose(detached(q, k, v), sdpa(q, k, v)[0])
    with raises(RuntimeError, "Jacobian mismatch", show=False):  # GradcheckError
        gradcheck(detached, (q, k, v))


def test_padding_one_sentence_leaves_the_other_unchanged():
    """6.6, padding invariance: sentence 1 has no padding; its output is bitwise equal."""
    from selfattn.masks import padding_mask

    torch.manual_seed(0)
    attn = SelfAttention(d_model=8, d_k=4)
    x = torch.randn(2, 6, 8)
    keys_ok = padding_mask(torch.tensor([6, 4]), 6)
    out, _ = attn(x, keys_ok)
    x2 = x.clone()
    x2[1, 4:] = 100 * torch.randn(2, 8)
    out2, _ = attn(x2, keys_ok)
    assert torch.equal(out2[0], out[0])


def _figure_diffs():
    """The two heatmaps of figures 6.1 and 6.2, computed as their blocks compute them."""
    from selfattn import example

    x = example.embeddings()
    w_q, w_k, w_v = example.projections()
    torch.manual_seed(0)
    causal = {}
    for is_causal in (True, False):
        out, _ = sdpa(x @ w_q, x @ w_k, x @ w_v, is_causal=is_causal)
        diff = torch.zeros(5, 6)
        for t in range(5):
            x2 = x.clone()
            x2[t + 1 :] = torch.randn(5 - t, 4)
            out2, _ = sdpa(x2 @ w_q, x2 @ w_k, x2 @ w_v, is_causal=is_causal)
            diff[t] = (out2 - out).abs().amax(dim=-1)
        causal[is_causal] = diff
    x = example.embeddings()
    x[4:] = 0
    real = torch.tensor([True] * 4 + [False] * 2)
    torch.manual_seed(0)
    x2 = x.clone()
    x2[4:] = 100 * torch.randn(2, 4)
    padding = torch.zeros(3, 6)
    for i, mask in enumerate((real[None, :], real[:, None], None)):
        out, _ = sdpa(x @ w_q, x @ w_k, x @ w_v, mask)
        out2, _ = sdpa(x2 @ w_q, x2 @ w_k, x2 @ w_v, mask)
        padding[i] = (out2 - out).abs().amax(dim=-1)
    return causal, padding


def test_figure_6_1_past_unchanged_only_when_causal():
    causal, _ = _figure_diffs()
    for is_causal, diff in causal.items():
        assert (diff.tril() == 0).all() == is_causal


def test_figure_6_2_only_the_key_side_mask_keeps_real_tokens_unchanged():
    _, diff = _figure_diffs()
    assert (diff[0, :4] == 0).all() and (diff[1:, :2] > 1).all()


def test_a_fully_masked_row_gives_zero_output_and_weights_like_sdpa():
    """6.7: the bool mask with a fully masked row; out and weights of that row are 0."""
    from selfattn.functional import scaled_dot_product_attention

    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 7, 5), torch.randn(2, 3, 7, 2)
    bool_mask = torch.rand(2, 1, 4, 7) > 0.5
    bool_mask[0, 0, 2] = False
    out, w = scaled_dot_product_attention(q, k, v, bool_mask)
    assert (out[0, :, 2] == 0).all() and (w[0, :, 2] == 0).all()


def test_the_core_of_the_first_three_checks_passes_on_sdpa():
    """6.9, the core of each check: every case sums to 1, masks to 0, equals SDPA."""
    from selfattn.checks import cases, make_inputs, reference, run
    from selfattn.functional import scaled_dot_product_attention as fn

    x = make_inputs(fn, "demo")
    labels = []
    for c in cases(x):
        out, w = run(fn, x, c.q, c.k, c.v, c.mask, c.causal)
        ref = reference(c.q, c.k, c.v, c.mask, c.causal)
        sums = bool(((w.sum(dim=-1) - 1).abs() <= x.tol).all())
        zero = bool((w.masked_fill(c.allowed, 0) == 0).all())
        same = all(torch.allclose(a, b, rtol=x.tol, atol=x.tol)
                   for a, b in zip((out, w), ref, strict=True))
        assert sums and zero and same, c.label
        labels.append(c.label)
    assert len(labels) == 12  # six mask kinds, ordinary and large scores
