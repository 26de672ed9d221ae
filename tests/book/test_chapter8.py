"""Guards moved out of 8.1 (docs/08-multihead.md) to keep the page under its size limit.

Each test repeats the page's setup and makes the assertion that stood on the page:

- the averaged weights are the mean of the per-head weights;
- nn.MultiheadAttention(512, 8) and MultiHeadSelfAttention have 4 d^2 + 4 d parameters;
- exercise 2: with kdim, vdim != embed_dim, MHA has no in_proj_weight.
"""

import torch
from torch import nn

from selfattn.multihead import MultiHeadSelfAttention


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_averaged_weights_are_the_mean_over_heads() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    mhsa = MultiHeadSelfAttention(16, num_heads=4, dropout=0.5).eval()
    _, avg = mhsa(x)
    _, per_head = mhsa(x, average_attn_weights=False)
    assert torch.allclose(per_head.mean(dim=1), avg)


def test_parameter_count_is_4_d_squared_plus_4_d() -> None:
    d = 512
    torch_mha = count(nn.MultiheadAttention(d, num_heads=8, batch_first=True))
    assert torch_mha == 4 * d * d + 4 * d == count(MultiHeadSelfAttention(d, num_heads=8))


def test_mha_with_other_kdim_vdim_has_no_in_proj_weight() -> None:
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=4, batch_first=True)
    assert mha.in_proj_weight is None
