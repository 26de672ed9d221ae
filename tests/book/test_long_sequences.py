"""Guards moved out of 8.3 (docs/08-long-sequences.md) to make room for its figures.

The two collapsed "检验" / "Check" blocks of 8.3.5, as they were: chunked_attention's
forward matches the explicit implementation, and its custom backward matches autograd.
"""

import torch

from selfattn.chunked import chunked_attention
from selfattn.functional import scaled_dot_product_attention as explicit
from selfattn.masks import causal_mask


def test_forward_matches_the_explicit_implementation():
    """Every mask kind, causal, a fully masked row, blocks that do not divide n."""
    torch.manual_seed(0)
    B, h, n_q, n_k = 2, 3, 37, 29
    q, k = torch.randn(B, h, n_q, 16), torch.randn(B, h, n_k, 16)
    v = torch.randn(B, h, n_k, 8)
    keep = torch.rand(B, 1, n_q, n_k) > 0.5  # broadcast over the heads
    keep[0, 0, 3] = False  # a fully masked row
    bias = torch.randn(n_q, n_k)
    bias[5] = float("-inf")  # a row of -inf
    cases = {
        "no mask": {},
        "bool mask": {"attn_mask": keep},
        "float mask": {"attn_mask": bias},
        "is_causal": {"is_causal": True},
        "bool mask + is_causal": {"attn_mask": keep, "is_causal": True},
        "bottom-right causal": {"attn_mask": causal_mask(n_q, n_k, align="bottom-right")},
    }
    for name, kw in cases.items():
        out = chunked_attention(q, k, v, block_q=8, block_k=6, **kw)
        ref, _ = explicit(q, k, v, **kw)
        assert torch.allclose(out, ref, atol=1e-5), (name, (out - ref).abs().max())


def test_gradients_match_autograd_in_float64():
    """The custom backward, a float mask that needs a gradient included; a fully
    masked query gets a zero gradient."""
    torch.manual_seed(0)
    f64 = {"dtype": torch.float64, "requires_grad": True}
    q, k = torch.randn(2, 11, 4, **f64), torch.randn(2, 9, 4, **f64)
    v = torch.randn(2, 9, 3, **f64)
    bias = torch.randn(11, 9, dtype=torch.float64)
    bias[2] = float("-inf")  # query 2: a row of -inf
    bias.requires_grad_(True)  # a float mask that needs a gradient
    keep = torch.rand(2, 11, 9) > 0.4  # (B, n_q, n_k)
    keep[1, 2] = False  # a fully masked row
    g = torch.randn(2, 11, 3, dtype=torch.float64)  # the upstream gradient dO
    for kw in ({}, {"attn_mask": keep}, {"attn_mask": keep, "is_causal": True},
               {"attn_mask": bias, "is_causal": True}):
        x = (q, k, v, bias) if kw.get("attn_mask") is bias else (q, k, v)
        out = chunked_attention(q, k, v, block_q=3, block_k=4, **kw)
        mine = torch.autograd.grad(out, x, g)
        ref = torch.autograd.grad(explicit(q, k, v, **kw)[0], x, g)
        err = max((a - b).abs().max().item() for a, b in zip(mine, ref, strict=True))
        assert err < 1e-10, (kw.keys(), err)
    assert mine[0][:, 2].abs().max().item() == 0.0  # the fully masked query


def test_errors_start_with_the_function_and_name_the_argument():
    """8.3.5: on bad input the message starts with the function's name (as in chapter 5)."""
    from selfattn.testing import raises

    x = torch.randn(2, 5, 8)
    with raises(ValueError, r"same last dim d_k, got q \(2, 5, 8\)", show=False):
        chunked_attention(x, torch.randn(2, 6, 4), torch.randn(2, 6, 4))
    with raises(ValueError, "^chunked_attention: block_k must be positive, got 0$", show=False):
        chunked_attention(x, x, x, block_k=0)
    with raises(TypeError, "^chunked_attention: is_causal must be a bool, got Tensor$",
                show=False):
        chunked_attention(x, x, x, is_causal=torch.tensor(True))


def test_online_softmax_gives_the_log_sum_exp():
    """8.3.2: after the three updates over 4 + 4 + 2 keys, m + log l = logsumexp(s)."""
    torch.manual_seed(6)
    f64 = torch.float64
    s = torch.randn(10, dtype=f64) * 3  # (n_k,): one query's scores for 10 keys
    m = torch.tensor(float("-inf"), dtype=f64)
    total = torch.tensor(0.0, dtype=f64)  # the page's running sum l
    for j in range(0, 10, 4):
        m_new = torch.maximum(m, s[j : j + 4].max())
        total = torch.exp(m - m_new) * total + torch.exp(s[j : j + 4] - m_new).sum()
        m = m_new
    assert torch.isclose(m + total.log(), torch.logsumexp(s, dim=0)), "m + log l = lse"
