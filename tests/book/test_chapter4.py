"""Guards moved out of chapter 4 (docs/04-why-sqrt-dk.md) to keep the page under its size limit.

Each test repeats the page's computation (same seeds, same order of draws, so the same numbers
the page prints) and makes the assertions that stood on the page:

- 4.2: the table of mean max weight and mean entropy for three scalings (no scaling, 1/sqrt(d_k),
  1/d_k). (That the spread worked example keeps chapter 3's scaled weights is checked on the page
  again, in a fold beside the sentence that says so.)
- 4.4: the table of gradients at z, at q and at W_q (the page's folded experiment).
- 4.5: the score variance under SelfAttention's default initialization, and a component shared
  by the tokens of a sequence.

The experiment on the conditions of 4.4 (variance 1 or 1/3, d_k = 64 or 512) moved to section 5
of the scaling lab (docs/labs/scaling.py), with its assertions; the build executes it.
"""

import math

import torch
from torch import nn

from selfattn.self_attention import SelfAttention


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


def test_gradient_at_q_table_claims() -> None:
    torch.manual_seed(0)
    B, n = 2000, 16
    res = {}
    for d_k in (4, 64, 512):
        x = torch.randn(B, d_k)
        w0 = torch.randn(d_k, d_k) / d_k**0.5
        k = torch.randn(B, n, d_k)
        g = torch.randn(B, n)
        for name, s in (("1", 1.0), ("sqrt", d_k**-0.5)):
            w_q = w0.clone().requires_grad_()
            q = x @ w_q
            z = (k @ q[:, :, None]).squeeze(-1) * s
            loss = (z.softmax(dim=-1) * g).sum()
            dz, dq, dw = torch.autograd.grad(loss, (z, q, w_q))
            dz, dq = dz.norm(dim=-1), dq.norm(dim=-1)
            dead = (dq < 0.01).float().mean().item()
            res[d_k, name] = (dz.mean().item(), dq.mean().item(), dq.median().item(),
                              dq.quantile(0.99).item(), dead,
                              dw.norm().item(), dw.isfinite().all().item())
    ratio = res[512, "1"][5] / res[512, "sqrt"][5]

    def col(i, name):
        return [res[d, name][i] for d in (4, 64, 512)]

    dz1, dq1, med1, p99_1, dead1 = (col(i, "1") for i in range(5))
    assert dz1[0] > dz1[1] > dz1[2] and dz1[2] < res[512, "sqrt"][0] / 3, "at z: shrinks"
    assert med1[2] < res[512, "sqrt"][2] / 10 and dead1[2] > 0.5, "at q: most rows almost 0"
    assert dq1[2] > 3 * res[512, "sqrt"][1], "at q: the mean is over 3 times larger"
    assert p99_1[2] > 10 * res[512, "sqrt"][3], "some rows are amplified"
    assert ratio > 3, "total gradient of W_q: several times larger unscaled"
    assert all(r[6] for r in res.values()), "float32: no inf or NaN"
    assert max(col(1, "sqrt")) < 1.2 * min(col(1, "sqrt")), "scaled: grad at q flat in d_k"


def test_default_init_score_variance() -> None:
    torch.manual_seed(0)
    B, n, d_model = 64, 16, 256
    x = nn.LayerNorm(d_model)(5 * torch.randn(B, n, d_model) + 3)
    scaled, unscaled = {}, {}
    with torch.no_grad():
        for d_k in (16, 64, 256):
            attn = SelfAttention(d_model, d_k)
            q, k = attn.w_q(x), attn.w_k(x)
            s = q @ k.transpose(1, 2)
            unscaled[d_k], scaled[d_k] = s.var().item(), (s / d_k**0.5).var().item()
    assert max(scaled.values()) < 1.3 * min(scaled.values()), "scaled: flat in d_k"
    growth = [unscaled[64] / unscaled[16], unscaled[256] / unscaled[64]]
    assert all(3 < r < 5 for r in growth), "unscaled: d_k times 4, variance about times 4"


def test_shared_component_shrinks_within_row_variance() -> None:
    torch.manual_seed(0)
    B, n, d_model, d_k = 64, 16, 256, 64
    attn = SelfAttention(d_model, d_k)
    shared = torch.randn(B, 1, d_model)
    own = torch.randn(B, n, d_model)
    within = {}
    for frac in (0.0, 0.8):
        x = nn.LayerNorm(d_model)(frac**0.5 * shared + (1 - frac) ** 0.5 * own)
        with torch.no_grad():
            s = attn.w_q(x) @ attn.w_k(x).transpose(1, 2) / d_k**0.5
        within[frac] = s.var(dim=-1).mean().item()
    assert within[0.8] < 0.3 * within[0.0], "a shared part: less variance within a row"
