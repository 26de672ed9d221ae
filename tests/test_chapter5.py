"""Guards moved out of chapter 5 (docs/05-implementation.md) to keep the page under its size limit.

Each test repeats the page's setup (same seeds, same sizes) and makes the assertion that stood
on the page:

- 5.2 "by hand": scaling q first and dividing the product differ in the last bit here;
- 5.3 parameters: a bias adds 2 d_k + d_v parameters; nn.Linear computes x @ weight.T;
- 5.4 vs MHA: in_proj_weight has shape (3 d_model, d_model).
"""

import torch
from torch import nn

from selfattn.self_attention import SelfAttention


def test_the_two_orders_of_scaling_differ_in_the_last_bit() -> None:
    torch.manual_seed(0)
    q, k = torch.randn(4, 3), torch.randn(4, 3)
    first, after = (q * 3**-0.5) @ k.T, q @ k.T / 3**0.5
    assert not torch.equal(first, after), "the two orders round differently here"
    assert torch.allclose(first, after, atol=1e-6), "but only in the last bit"


def test_parameter_count_with_bias_and_linear_layout() -> None:
    torch.manual_seed(0)
    B, n, d_model, d_k, d_v = 2, 5, 8, 4, 3
    attn = SelfAttention(d_model, d_k, d_v)
    x = torch.randn(B, n, d_model)
    total = sum(p.numel() for p in attn.parameters())
    assert total == 2 * d_model * d_k + d_model * d_v
    with_bias = SelfAttention(d_model, d_k, d_v, bias=True)
    assert sum(p.numel() for p in with_bias.parameters()) == total + 2 * d_k + d_v
    assert torch.allclose(attn.w_q(x), x @ attn.w_q.weight.T), "nn.Linear computes x @ weight.T"


def test_mha_stacks_the_three_projections_in_in_proj_weight() -> None:
    d = 16
    mha = nn.MultiheadAttention(d, num_heads=1, batch_first=True)
    assert mha.in_proj_weight.shape == (3 * d, d)
    assert mha.in_proj_bias is not None and mha.in_proj_bias.shape == (3 * d,)
