"""Guards moved out of chapter 4 (docs/04-why-sqrt-dk.md) to keep the page under its size limit.

4.2: the table of mean max weight and mean entropy for three scalings (no scaling, 1/sqrt(d_k),
1/d_k). The page prints the table; these are the checks that stood in a collapsed note below it.
"""

import math

import torch


def test_scaling_table_claims() -> None:
    torch.manual_seed(0)
    B, n = 2000, 16
    scales = {"1": lambda d: 1.0, "sqrt": lambda d: d**-0.5, "d_k": lambda d: 1 / d}
    top, ent = {}, {}
    for d_k in (4, 64, 512):
        q = torch.randn(B, 1, d_k)
        k = torch.randn(B, n, d_k)
        raw = (q @ k.transpose(1, 2)).squeeze(1)
        for name, scale in scales.items():
            p = (raw * scale(d_k)).softmax(dim=-1)
            top[d_k, name] = p.max(dim=-1).values.mean().item()
            ent[d_k, name] = -(p * p.clamp_min(1e-30).log()).sum(dim=-1).mean().item()
    assert top[512, "1"] > top[512, "sqrt"] + 0.5, "d_k=512 unscaled: max weight far above the scaled one"
    assert abs(ent[512, "d_k"] - math.log(n)) < 0.01, "divided by d_k: entropy almost log n"
    assert abs(top[4, "sqrt"] - top[512, "sqrt"]) < 0.05, "divided by sqrt(d_k): shape independent of d_k"
