"""selfattn.checks on real attention code: small, faithful re-implementations of six.

Each function below re-writes the attention core of a well-known implementation in the
checker's calling convention ``fn(q, k, v, mask, is_causal=...)`` and (B, h, n, d)
layout, and keeps what decides its numerics: the fill value, the dtype of the softmax,
the shape of its causal buffer, where the scale goes. Where the original takes no mask
of some kind, the wrapper applies the checker's mask with the original's own idiom, and
says so. The tests assert each verdict of the table in docs/06-checks-source.md: a clean
report with the declared convention where the code is correct, the finding where not.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from selfattn.checks import check_all

NAMES = ["rows_sum_to_one", "mask_respected", "matches_reference", "gradients", "causal",
         "padding_invariance", "batch_independence", "fully_masked_rows"]
INF = float("inf")


def split(mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """The checker's mask as (allowed, finite bias): a float mask's -inf is 'not allowed'."""
    if mask is None:
        return None, None
    if mask.dtype == torch.bool:
        return mask, None
    allowed = mask != -INF
    return allowed, mask.masked_fill(~allowed, 0.0)


# karpathy/nanoGPT, model.py, CausalSelfAttention.forward, the manual path (no flash):
#   att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
#   att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
#   att = F.softmax(att, dim=-1); y = att @ v
# `bias` is a (block_size, block_size) tril buffer, cut to T = the number of queries.
# nanoGPT is always causal and takes no mask: here the buffer applies with is_causal,
# a bool mask uses the same masked_fill(-inf) and a float mask is added. This is the
# function that chapter 6.9 checks.
NANOGPT_BIAS = torch.tril(torch.ones(1024, 1024)).view(1, 1, 1024, 1024)


def nanogpt(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
            is_causal: bool = False) -> Tensor:
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if is_causal:
        att = att.masked_fill(NANOGPT_BIAS[:, :, :T, :T] == 0, float("-inf"))
    if mask is not None and mask.dtype == torch.bool:
        att = att.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        att = att + mask
    return F.softmax(att, dim=-1) @ v


# rasbt/LLMs-from-scratch, ch03/01_main-chapter-code (ch03.ipynb), MultiHeadAttention:
#   attn_scores = queries @ keys.transpose(2, 3)
#   mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
#   attn_scores.masked_fill_(mask_bool, -torch.inf)
#   attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
# `mask` is triu(ones(context_length, context_length), diagonal=1), True = masked. The
# scale comes after the mask. The checker's masks: the same masked_fill_, in place on
# the fresh scores.
RASCHKA_MASK = torch.triu(torch.ones(1024, 1024), diagonal=1)


def raschka(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
            is_causal: bool = False) -> tuple[Tensor, Tensor]:
    num_tokens = q.shape[-2]
    attn_scores = q @ k.transpose(2, 3)
    if is_causal:
        mask_bool = RASCHKA_MASK.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
    allowed, bias = split(mask)
    if bias is not None:
        attn_scores = attn_scores + bias * k.shape[-1] ** 0.5  # a bias on the scaled scores
    if allowed is not None:
        attn_scores.masked_fill_(~allowed, -torch.inf)
    attn_weights = torch.softmax(attn_scores / k.shape[-1] ** 0.5, dim=-1)
    return attn_weights @ v, attn_weights


# harvardnlp/annotated-transformer, the_annotated_transformer.py, attention() and
# subsequent_mask():
#   scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
#   if mask is not None: scores = scores.masked_fill(mask == 0, -1e9)
#   p_attn = scores.softmax(dim=-1)
# subsequent_mask(size) is (1, size, size), built from the target length: a square
# mask, combined with the padding mask by `&` (make_std_mask). A float mask, which the
# original has no use for, is added and its -inf entries are masked like 0 entries.
def subsequent_mask(size: int) -> Tensor:
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8) == 0


def annotated(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
              is_causal: bool = False) -> tuple[Tensor, Tensor]:
    allowed, bias = split(mask)
    if is_causal:
        sub = subsequent_mask(q.size(-2))
        allowed = sub if allowed is None else allowed & sub
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = scores.masked_fill(allowed == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, v), p_attn


# huggingface/transformers, src/transformers/models/llama/modeling_llama.py,
# eager_attention_forward:
#   attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
#   if attention_mask is not None:
#       causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
#       attn_weights = attn_weights + causal_mask
#   attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32)
#                  .to(query.dtype)
#   attn_output = torch.matmul(attn_weights, value_states)
# The 4-D mask is what the library's mask utilities build: 0 where allowed and
# torch.finfo(dtype).min where not, causal from the cache positions, so bottom-right
# aligned when n_q < n_k. A float mask is added, its -inf written as finfo.min.
def hf_mask(q: Tensor, k: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor | None:
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed, bias = split(mask)
    if is_causal:
        cache = torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)
        allowed = cache if allowed is None else allowed & cache
    if allowed is None:
        return bias
    out = torch.zeros(allowed.shape, dtype=q.dtype) if bias is None else bias
    return out.masked_fill(~allowed, torch.finfo(q.dtype).min)


def llama_eager(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                is_causal: bool = False) -> tuple[Tensor, Tensor]:
    scaling = q.shape[-1] ** -0.5
    attention_mask = hf_mask(q, k, mask, is_causal)
    attn_weights = torch.matmul(q, k.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[..., : k.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    attn_output = torch.matmul(attn_weights, v)
    return attn_output, attn_weights


# huggingface/transformers before PR #17306 (v4.19), models/gpt2/modeling_gpt2.py,
# GPT2Attention._attn, the code of issues #15199 and #17121:
#   attn_weights = torch.matmul(query, key.transpose(-1, -2))
#   attn_weights = attn_weights / (value.size(-1) ** 0.5)
#   causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
#   attn_weights = torch.where(causal_mask, attn_weights, self.masked_bias)  # -1e4
#   attn_weights = attn_weights + attention_mask  # (1 - mask) * -10000.0
#   attn_weights = nn.functional.softmax(attn_weights, dim=-1)
# GPT-2 is always causal: here the buffer applies with is_causal only.
GPT2_BIAS = torch.tril(torch.ones(1024, 1024, dtype=torch.uint8)).view(1, 1, 1024, 1024)


def gpt2_before_fix(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                    is_causal: bool = False) -> tuple[Tensor, Tensor]:
    attn_weights = torch.matmul(q, k.transpose(-1, -2))
    attn_weights = attn_weights / (v.size(-1) ** 0.5)  # the head size of v, not of k
    if is_causal:
        query_length, key_length = q.size(-2), k.size(-2)
        causal_mask = GPT2_BIAS[:, :, key_length - query_length: key_length, :key_length]
        masked_bias = torch.tensor(-1e4)
        attn_weights = torch.where(causal_mask.bool(), attn_weights,
                                   masked_bias.to(attn_weights.dtype))
    allowed, bias = split(mask)
    if allowed is not None:
        extended = (1.0 - allowed.to(q.dtype)) * -10000.0  # get_extended_attention_mask
        attn_weights = attn_weights + extended + (0.0 if bias is None else bias)
    attn_weights = F.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, v), attn_weights


# Dao-AILab/flash-attention, flash_attn/utils/testing.py (and tests/test_flash_attn.py),
# attention_ref, the reference the kernels are tested against:
#   if upcast: q, k, v = q.float(), k.float(), v.float()
#   scores = torch.einsum("bthd,bshd->bhts", q * softmax_scale, k)
#   scores.masked_fill_(local_mask, float("-inf"))  # causal: window_size = (-1, 0)
#   if attn_bias is not None: scores = scores + attn_bias
#   attention = torch.softmax(scores, dim=-1).to(v.dtype)
#   attention = attention.masked_fill(torch.all(local_mask, ...), 0.0)
#   output = torch.einsum("bhts,bshd->bthd", attention, v)
#   return output.to(dtype=dtype_og), attention.to(dtype=dtype_og)
# Its causal mask is construct_local_mask's `col_idx > row_idx + sk - sq`: bottom-right.
# The checker's masks go in as attn_bias, 0 or -inf; the layout is (B, n, h, d) there.
def flash_ref(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
              is_causal: bool = False) -> tuple[Tensor, Tensor]:
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, n, h, d)
    dtype_og = q.dtype
    q, k, v = q.float(), k.float(), v.float()  # upcast=True
    seqlen_q, seqlen_k = q.shape[1], k.shape[1]
    softmax_scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.einsum("bthd,bshd->bhts", q * softmax_scale, k)
    local_mask = None
    if is_causal:
        row_idx = torch.arange(seqlen_q)[:, None]
        col_idx = torch.arange(seqlen_k)
        local_mask = col_idx > row_idx + seqlen_k - seqlen_q
        scores.masked_fill_(local_mask, float("-inf"))
    if mask is not None:
        attn_bias = mask if mask.is_floating_point() else \
            torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
        scores = scores + attn_bias.float()
    attention = torch.softmax(scores, dim=-1).to(v.dtype)
    if local_mask is not None:
        attention = attention.masked_fill(torch.all(local_mask, dim=-1, keepdim=True), 0.0)
    output = torch.einsum("bhts,bshd->bthd", attention, v)
    return output.to(dtype=dtype_og).transpose(1, 2), attention.to(dtype=dtype_og)


def failed(fn: object, **kw: object) -> dict[str, str]:
    """The failing checks and their messages."""
    return {r.name: r.message for r in check_all(fn, verbose=False, **kw)  # type: ignore[arg-type]
            if not r.passed}


def notes(fn: object, **kw: object) -> dict[str, str]:
    """What each passing check says after "ok", where it says anything."""
    out = {}
    for r in check_all(fn, verbose=False, **kw):  # type: ignore[arg-type]
        assert r.passed, r.message
        said = r.message.split("; ", 1)[1:]
        if said:
            out[r.name] = said[0]
    return out


# -- clean reports, with the declared convention ------------------------------------------

def test_nanogpt_is_clean_with_n_k_n_and_nan_rows_flagged() -> None:
    """Its float mask is added, so NaN reaches dq and dk as well as dv."""
    assert notes(nanogpt, n_k=6, fully_masked="nan") == {
        "fully_masked_rows": "NaN rows, as declared; NaN reaches dq, dk, dv: harmful"}


def test_raschka_is_clean_with_n_k_n_and_nan_rows_flagged() -> None:
    """masked_fill_(-inf) stops NaN before the scores: it reaches dv (W^T g) only."""
    assert notes(raschka, n_k=6, fully_masked="nan") == {
        "fully_masked_rows": "NaN rows, as declared; NaN reaches dv: harmful"}


def test_annotated_transformer_is_clean_with_n_k_n_and_uniform_rows() -> None:
    assert notes(annotated, n_k=6, fully_masked="uniform") == {
        "fully_masked_rows": "uniform rows, as declared"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_llama_eager_is_clean_with_n_k_n_and_uniform_rows(dtype: torch.dtype) -> None:
    assert notes(llama_eager, n_k=6, fully_masked="uniform", dtype=dtype) == {
        "fully_masked_rows": "uniform rows, as declared"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_flash_attention_reference_is_clean_with_n_k_n_and_nan_rows(
    dtype: torch.dtype,
) -> None:
    assert notes(flash_ref, n_k=6, fully_masked="nan", dtype=dtype) == {
        "fully_masked_rows": "NaN rows, as declared; NaN reaches dq, dk, dv: harmful"}


# -- the findings -------------------------------------------------------------------------

SQUARE = ["rows_sum_to_one", "mask_respected", "matches_reference", "gradients", "causal",
          "batch_independence", "fully_masked_rows"]


@pytest.mark.parametrize("fn", [nanogpt, raschka, annotated], ids=lambda f: f.__name__)
def test_square_causal_buffers_raise_and_the_report_says_pass_n_k(
    fn: object, capsys: pytest.CaptureFixture[str],
) -> None:
    """Default n_k = n + 2: a (n, n) causal mask meets (n, n_k) scores and raises."""
    got = failed(fn, fully_masked="nan" if fn is not annotated else "uniform")
    assert list(got) == SQUARE  # every check that passes is_causal
    for message in got.values():
        assert "fn raised RuntimeError: The size of tensor" in message
        assert "is_causal=True; hint: n_q != n_k here, pass n_k=n" in message
    check_all(fn, fully_masked="any")  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "hint: n_q != n_k here, pass n_k=n if fn needs n_k == n_q" in out


@pytest.mark.parametrize("fn", [nanogpt, raschka], ids=lambda f: f.__name__)
def test_a_softmax_of_minus_inf_fails_the_default_zero_convention(fn: object) -> None:
    got = failed(fn, n_k=6)
    assert list(got) == ["fully_masked_rows"]
    assert "(hint: the rows are NaN, pass fully_masked='nan' if meant)" in \
        got["fully_masked_rows"]


def test_annotated_transformer_raises_in_float16() -> None:
    """masked_fill(mask == 0, -1e9) cannot write -1e9 into float16 (chapter 7)."""
    got = failed(annotated, n_k=6, fully_masked="uniform", dtype=torch.float16)
    assert list(got) == ["rows_sum_to_one", "mask_respected", "matches_reference",
                         "gradients", "causal", "padding_invariance", "batch_independence",
                         "fully_masked_rows"]
    assert all("value cannot be converted to type" in m and "without overflow" in m
               for m in got.values())


@pytest.mark.parametrize(("fn", "convention"), [(llama_eager, "uniform"), (flash_ref, "nan")],
                         ids=["llama_eager", "flash_ref"])
def test_bottom_right_causal_shows_at_the_default_n_k(fn: object, convention: str) -> None:
    """Its fully masked rows differ too: with left padding, bottom-right sees more keys."""
    got = failed(fn, fully_masked=convention)
    assert list(got) == ["mask_respected", "matches_reference", "gradients", "causal",
                         "fully_masked_rows"]
    assert got["causal"].startswith("causal: out[") and "only tokens > " in got["causal"]
    assert got["fully_masked_rows"].endswith("left padding + is_causal")
    assert list(failed(fn, fully_masked="any")) == ["mask_respected", "matches_reference",
                                                    "gradients", "causal"]


@pytest.mark.parametrize("fn", [llama_eager, flash_ref], ids=lambda f: f.__name__)
def test_a_float32_softmax_fails_float64(fn: object) -> None:
    """softmax(dtype=float32) (Llama) and upcast=True (FlashAttention's reference)."""
    got = failed(fn, n_k=6, fully_masked="any", dtype=torch.float64)
    assert {"rows_sum_to_one", "matches_reference", "gradients"} <= set(got)
    r = {r.name: r for r in check_all(fn, verbose=False, n_k=6, fully_masked="any",  # type: ignore[arg-type]
                                      dtype=torch.float64)}["matches_reference"]
    assert 1e-8 < r.max_error < 1e-5, r.max_error  # float32 rounding, not a bug of math


def test_llama_eager_gives_nan_rows_in_float64() -> None:
    """finfo(float64).min is -inf once the softmax casts the scores to float32."""
    assert torch.tensor(torch.finfo(torch.float64).min).float() == -INF
    got = failed(llama_eager, n_k=6, fully_masked="uniform", dtype=torch.float64)
    assert list(got) == ["rows_sum_to_one", "matches_reference", "gradients",
                         "fully_masked_rows"]
    assert "(hint: the rows are NaN, pass fully_masked='nan' if meant)" in \
        got["fully_masked_rows"]


def test_gpt2_before_the_fix() -> None:
    """Its -1e4 leaks at low scores; it scales by sqrt(d_v), the checker's d_v = 5.

    Its padding mask is added, not filled: a fully masked row keeps the differences of
    its scores, so it is neither zero nor uniform, and only "any" passes it.
    """
    got = failed(gpt2_before_fix, n_k=6, fully_masked="uniform")
    assert list(got) == ["mask_respected", "matches_reference", "gradients",
                         "fully_masked_rows"]
    assert got["mask_respected"].startswith("mask_respected: weights[")
    # the -1e4 it writes for the causal mask leaks; its additive padding mask keeps
    # the scores' differences, so it does not
    assert got["mask_respected"].endswith("where masked, low scores, is_causal")
    assert "differs from SDPA" in got["matches_reference"]
    assert "is off the uniform row by" in got["fully_masked_rows"]
    assert list(failed(gpt2_before_fix, n_k=6, fully_masked="any")) == [
        "mask_respected", "matches_reference", "gradients"]
    assert list(failed(gpt2_before_fix, fully_masked="any")) == [  # and bottom-right
        "mask_respected", "matches_reference", "gradients", "causal"]
