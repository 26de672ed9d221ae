"""Guards moved out of chapter 5 (docs/05-implementation.md) to keep the page under its size limit.

Each test repeats the page's setup (same seeds, same sizes) and makes the assertion that stood
on the page:

- 5.4 "by hand": scaling q first and dividing the product differ in the last bit here;
- 5.2 parameters: a bias adds 2 d_k + d_v parameters; nn.Linear computes x @ weight.T;
- 5.5 vs MHA: in_proj_weight has shape (3 d_model, d_model).
- 5.4 dropout: the function's ``dropout_p`` ignores the training mode and keeps the expected
  row sum at 1; SelfAttention has no dropout, MultiHeadSelfAttention drops only in training.
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


def test_dropout_in_the_function_ignores_the_mode_and_keeps_the_expectation() -> None:
    """5.4 dropout: ``dropout_p`` acts under no_grad and next to a module in eval mode;
    the kept weights grow by 1/(1-p), so the row sums are 1 on average, not each time."""
    from selfattn.functional import scaled_dot_product_attention

    torch.manual_seed(0)
    q, k, v = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 2)
    _, w = scaled_dot_product_attention(q, k, v)
    SelfAttention(8, 4).eval()  # a module's mode does not reach the function
    with torch.no_grad():
        _, w_d = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (w_d == 0).any() and not torch.allclose(w_d.sum(dim=-1), torch.ones(4))
    sums = torch.stack([
        scaled_dot_product_attention(q, k, v, dropout_p=0.5)[1].sum(dim=-1) for _ in range(4000)
    ])
    assert torch.allclose(sums.mean(dim=0), torch.ones(4), atol=0.03)
    assert torch.equal(scaled_dot_product_attention(q, k, v, dropout_p=0.0)[1], w)


def test_self_attention_has_no_dropout_and_multihead_drops_only_in_training() -> None:
    """5.4 dropout: SelfAttention has no dropout; MultiHeadSelfAttention passes its rate
    to the function in training mode only."""
    from selfattn.multihead import MultiHeadSelfAttention

    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    attn = SelfAttention(8, 4).train()
    assert torch.equal(attn(x)[1], attn(x)[1]), "no randomness in training mode"
    mhsa = MultiHeadSelfAttention(8, num_heads=2, dropout=0.5)
    _, w_train = mhsa.train()(x)
    _, w_eval = mhsa.eval()(x)
    assert (w_train == 0).any() and not (w_eval == 0).any()
    assert torch.allclose(w_eval.sum(dim=-1), torch.ones(2, 5))
