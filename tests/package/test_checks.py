"""Unit tests of selfattn.checks: it passes correct implementations and fails broken ones."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from selfattn.checks import (
    ATOL,
    cases,
    CHECKS,
    CheckError,
    CheckResult,
    check_all,
    check_causal,
    check_fully_masked_rows,
    check_mask_respected,
    check_matches_reference,
    check_padding_invariance,
    check_rows_sum_to_one,
    long_cases,
    make_inputs,
    sdpa,
)
from selfattn.chunked import chunked_attention
from selfattn.functional import scaled_dot_product_attention
from selfattn.self_attention import SelfAttention
from selfattn.testing import raises

NAMES = ["rows_sum_to_one", "mask_respected", "matches_reference", "gradients", "causal",
         "padding_invariance", "batch_independence", "fully_masked_rows"]


def all_but(*names: str) -> list[str]:
    return [name for name in NAMES if name not in names]


def naive(*, dim: int = -1, scale: str = "sqrt", causal: str = "tril", polarity: bool = True,
          fill: object = "safe", detach: bool = False, after_softmax: bool = False,
          float_mask: str = "add", stable: bool = True, clamp: float | None = None,
          output_only: bool = False) -> Callable[..., object]:
    """A hand-written attention with one knob per classic bug; the defaults are correct."""

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
           is_causal: bool = False) -> object:
        n_q, n_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
        scores = q @ k.transpose(-2, -1)
        scores = scores / {"sqrt": math.sqrt(d_k), "d_k": d_k, "none": 1.0,
                           "0.1% off": 1.001 * math.sqrt(d_k)}[scale]
        if clamp is not None:  # an "overflow guard" that changes large scores
            scores = scores.clamp(-clamp, clamp)
        allowed = None
        if mask is not None and mask.dtype != torch.bool:
            if float_mask == "as_bool":  # nonzero = may attend: the bias and -inf are lost
                allowed = mask.bool()
            else:  # the finite bias joins the scores; -inf is masked like False below
                allowed = mask != -math.inf
                scores = scores + mask.masked_fill(~allowed, 0.0)
        elif mask is not None:
            allowed = mask if polarity else ~mask
        if is_causal and not (causal == "ignored_with_mask" and mask is not None):
            if causal == "square":
                tri = torch.ones(n_q, n_q, dtype=torch.bool).tril()
            else:
                diag = {"tril": 0, "sees_next": 1, "no_diagonal": -1, "leaks_after_row_0": 1,
                        "bottom_right": n_k - n_q, "ignored_with_mask": 0}[causal]
                tri = torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=diag)
                if causal == "leaks_after_row_0":
                    tri[0, 1:] = False  # row 0 is right; queries >= 1 see key i + 1
            allowed = tri if allowed is None else allowed & tri
        empty = None
        if allowed is not None and not after_softmax:
            if fill == "safe":
                empty = (~allowed).all(dim=-1, keepdim=True)
                scores = scores.masked_fill(~allowed, -math.inf).masked_fill(empty, 0.0)
            elif fill == "nan_to_num":  # additive -inf: NaN gradients flow back to q
                scores = scores + torch.zeros_like(scores).masked_fill(~allowed, -math.inf)
            else:
                scores = scores.masked_fill(~allowed, fill)  # type: ignore[arg-type]
        if stable:
            w = scores.softmax(dim=dim)
        else:  # exp without subtracting the row maximum: overflows at large scores
            e = scores.exp()
            w = e / e.sum(dim=dim, keepdim=True)
        if allowed is not None and after_softmax:
            w = w.masked_fill(~allowed, 0.0)
        if empty is not None:
            w = w.masked_fill(empty, 0.0)
        if fill == "nan_to_num":
            w = w.nan_to_num(0.0)
        out = (w.detach() if detach else w) @ v
        return out if output_only else (out, w)

    return fn


def failed(fn: Callable[..., object], **kw: object) -> list[str]:
    return [r.name for r in check_all(fn, verbose=False, **kw) if not r.passed]  # type: ignore[arg-type]


def self_attention_fn() -> Callable[..., tuple[Tensor, Tensor]]:
    """SelfAttention as a checked function: x = [q, k, v], projections select each part."""
    d_k, d_v = 4, 5
    attn = SelfAttention(2 * d_k + d_v, d_k, d_v)
    eye = torch.eye(2 * d_k + d_v)
    with torch.no_grad():
        attn.w_q.weight.copy_(eye[:d_k])
        attn.w_k.weight.copy_(eye[d_k:2 * d_k])
        attn.w_v.weight.copy_(eye[2 * d_k:])

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
           is_causal: bool = False) -> tuple[Tensor, Tensor]:
        batch = q.shape[:-2]
        x = torch.cat([q, k, v], dim=-1).flatten(0, -3)
        if mask is not None:
            mask = mask.expand(*batch, -1, -1).flatten(0, -3)
        out, w = attn.to(q.dtype)(x, mask, is_causal=is_causal)
        return out.unflatten(0, batch), w.unflatten(0, batch)

    return fn


DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
CORRECT = {
    "torch SDPA": (F.scaled_dot_product_attention, {"mask_with_causal": False}),
    "selfattn.functional": (scaled_dot_product_attention, {}),
    "chunked_attention": (chunked_attention, {}),
    "SelfAttention": (self_attention_fn(), {"n_k": 6}),
    "naive": (naive(), {}),
    "naive, output only": (naive(output_only=True), {}),
}


@pytest.mark.parametrize("name", list(CORRECT))
@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_implementations_pass(name: str, dtype: torch.dtype) -> None:
    fn, kw = CORRECT[name]
    results = check_all(fn, verbose=False, dtype=dtype, **kw)  # type: ignore[arg-type]
    assert [r.name for r in results] == NAMES
    assert all(r.passed and r.index is None and r.message.endswith(": ok") for r in results), \
        [r.message for r in results if not r.passed]


BROKEN = {  # each bug, and the checks that must fail on it (and only those)
    "w.detach() @ v": ({"detach": True}, ["gradients", "fully_masked_rows"]),
    "softmax over dim -2": ({"dim": -2}, all_but("batch_independence")),
    "flipped mask polarity": ({"polarity": False}, all_but("batch_independence")),
    "no scale": ({"scale": "none"}, ["matches_reference", "gradients"]),
    "scale 1/d_k": ({"scale": "d_k"}, ["matches_reference", "gradients"]),
    "scale 0.1% off": ({"scale": "0.1% off"}, ["matches_reference", "gradients"]),
    "causal sees i+1": ({"causal": "sees_next"},
                        ["mask_respected", "matches_reference", "gradients", "causal",
                         "fully_masked_rows"]),  # left padding: row 3 sees key 4
    "causal leaks only after row 0": ({"causal": "leaks_after_row_0"},
                                      ["mask_respected", "matches_reference", "gradients",
                                       "causal", "fully_masked_rows"]),
    "causal without diagonal": ({"causal": "no_diagonal"},
                                ["rows_sum_to_one", "matches_reference", "gradients"]),
    "is_causal ignored with a mask": ({"causal": "ignored_with_mask"},
                                      ["mask_respected", "matches_reference", "gradients",
                                       "causal", "fully_masked_rows"]),
    "-1e9 fill": ({"fill": -1e9}, ["fully_masked_rows"]),
    "mask after softmax": ({"after_softmax": True},
                           ["rows_sum_to_one", "matches_reference", "gradients", "causal",
                            "padding_invariance"]),
    "bottom-right causal": ({"causal": "bottom_right"},
                            ["mask_respected", "matches_reference", "gradients", "causal",
                             "fully_masked_rows"]),
    "causal ones(n_q, n_q)": ({"causal": "square"}, all_but("padding_invariance")),
    "finite forward, NaN gradients": ({"fill": "nan_to_num"}, ["fully_masked_rows"]),
    "float mask read as bool": ({"float_mask": "as_bool"},
                                all_but("rows_sum_to_one", "batch_independence")),
    "scores clamped to +-50": ({"clamp": 50.0}, ["matches_reference"]),
    # NaN at large scores, also where masked: exp(s) = inf, and inf * 0 = NaN
    "softmax without the row maximum": ({"stable": False},
                                        ["rows_sum_to_one", "mask_respected",
                                         "matches_reference", "gradients"]),
}


@pytest.mark.parametrize("bug", list(BROKEN))
def test_each_bug_fails_the_right_checks(bug: str) -> None:
    kw, names, *output_only = BROKEN[bug]
    assert failed(naive(**kw)) == names  # type: ignore[arg-type]
    assert failed(naive(output_only=True, **kw)) == (output_only or [names])[0]  # type: ignore[arg-type]


def test_a_mask_built_for_n_q_by_n_q_raises_and_the_report_goes_on() -> None:
    """Chapter 6's claim (6.9): causal ones(n_q, n_q) raises when n_q != n_k; the failure is recorded."""
    results = check_all(naive(causal="square"), verbose=False)
    assert len(results) == 8
    assert results[0].message.startswith("rows_sum_to_one: fn raised RuntimeError")


def test_failure_messages_say_what_and_where() -> None:
    results = {r.name: r for r in check_all(naive(dim=-2), verbose=False)}
    r = results["rows_sum_to_one"]
    assert r.index is not None and len(r.index) == 3 and r.max_error > 0.5
    assert r.message.startswith("rows_sum_to_one: weights[") and ".sum() is off by" in r.message
    _, w = naive(dim=-2)(*_inputs())  # type: ignore[misc]
    err = (w.sum(dim=-1) - 1).abs()
    assert tuple(int(i) for i in torch.unravel_index(err.argmax(), err.shape)) == r.index
    g = results["gradients"]
    assert g.index is not None and len(g.index) == 4 and g.message.startswith("gradients: dq[")


def _inputs() -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, 3, m, d, generator=g) for m, d in ((6, 4), (8, 4), (8, 5)))  # type: ignore[return-value]


def test_detached_weights_are_reported_as_missing_gradients() -> None:
    results = {r.name: r for r in check_all(naive(detach=True), verbose=False)}
    assert results["gradients"].message == "gradients: q gets no gradient, no mask"
    assert results["fully_masked_rows"].message == \
        "fully_masked_rows: q gets no gradient, bool mask"


def test_output_and_weights_are_both_compared_with_sdpa() -> None:
    def wrong_weights(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                      is_causal: bool = False) -> tuple[Tensor, Tensor]:
        out, _ = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)
        _, w = naive(scale="none")(q, k, v, mask, is_causal=is_causal)  # type: ignore[misc]
        return out, w  # a correct output next to weights that are not its own

    def shifted_out(by: float) -> Callable[..., tuple[Tensor, Tensor]]:
        def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
               is_causal: bool = False) -> tuple[Tensor, Tensor]:
            out, w = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)
            has_key = (w.sum(dim=-1, keepdim=True) > 0.5).to(out)  # no gradient here
            return out + by * has_key, w  # right weights and gradients, wrong output
        return fn

    assert failed(wrong_weights) == ["matches_reference"]
    for by in (0.01, 1e-3, 1e-4):  # float32: 1e-5 * (1 + |out|), |out| < 3.5 here
        assert failed(shifted_out(by)) == ["matches_reference"], by
    with pytest.raises(CheckError, match=r"matches_reference: weights\[.*differs from SDPA"):
        check_matches_reference(wrong_weights)


def test_float32_error_of_1e_3_fails_matches_reference() -> None:
    r = check_all(naive(scale="0.1% off"), verbose=False)[NAMES.index("matches_reference")]
    assert not r.passed and 5e-4 < r.max_error < 5e-3, r.message  # about 1e-3, < 1e-2


def test_float_masks_are_passed_and_read_as_added_scores() -> None:
    as_bool = naive(float_mask="as_bool")
    with pytest.raises(CheckError, match=r"mask_respected: weights.* where masked, float mask$"):
        check_mask_respected(as_bool)
    with pytest.raises(CheckError, match=r"only padding changed, float mask$"):
        check_padding_invariance(as_bool)
    with pytest.raises(CheckError, match=r"in a fully masked row, float mask$"):
        check_fully_masked_rows(as_bool)
    with pytest.raises(CheckError, match=r"only tokens > 0 changed, float tril$"):
        check_causal(as_bool)


def test_large_scores_are_shifted_per_row_batch_element_and_head() -> None:
    """Scores big * (row + key) + O(1): row = ±1 alternates along b, h and i; key along j."""
    for dtype, big in ((torch.float32, 98.7), (torch.float64, 719.8),
                       (torch.bfloat16, 98.7), (torch.float16, 21.1)):
        x = make_inputs(naive(), "t", dtype=dtype)
        s = (x.big.q.double() @ x.big.k.double().transpose(-2, -1)) / 2  # (B, h, n, n_k)
        b, h, i, j = torch.meshgrid(*(torch.arange(m) for m in s.shape), indexing="ij")
        row = torch.tensor([1, -1, -3])[(b + h + i) % 3]  # +1, -1, -3 in turn
        key = 1 - 2 * (j % 2)
        assert ((s - big * (row + key)).abs() < 10).all(), dtype
        assert abs(math.log(torch.finfo(dtype).max) + 10 - big) < 0.1
        top = s.amax(dim=-1)  # (B, h, n): each row's maximum, about 2 big, 0 or -2 big
        assert (top[0] - top[1]).abs().min() > 2 * big - 20  # batch elements differ
        assert (top[:, 0] - top[:, 1]).abs().min() > 2 * big - 20  # and heads
        mean = s.mean(dim=-1)
        assert ((top - mean) > big - 10).all()  # exp(max - mean) overflows: log(max) + 0
    for fn in (naive(stable=False), fast_path_without_max, mean_shift):
        with pytest.raises(CheckError, match=r"off by nan > .*, large scores, no mask$"):
            check_rows_sum_to_one(fn)


def test_every_mask_kind_meets_large_scores_and_long_inputs() -> None:
    x = make_inputs(naive(), "t")
    labels = [c.label for c in (*cases(x), *long_cases(x))]
    kinds = ["no mask", "bool mask", "float mask", "is_causal", "bool mask + is_causal",
             "float mask + is_causal"]
    assert labels == [*kinds, *(f"large scores, {k}" for k in kinds),
                      *(f"n = 526, n_k = 528, {k}" for k in kinds)]


def test_long_inputs_span_several_tiles_of_chunked_attention() -> None:
    """Its tiles: 256 queries by 512 keys; the long inputs need 3 x 2 of them."""
    x = make_inputs(chunked_attention, "t")
    n_q, n_k = x.long.q.shape[-2], x.long.k.shape[-2]
    assert (n_q, n_k) == (526, 528) and x.long.q.shape[:2] == (1, 1)
    assert (math.ceil(n_q / 256), math.ceil(n_k / 512), math.ceil(n_k / 64)) == (3, 2, 9)
    assert make_inputs(chunked_attention, "t", n_k=6).long.k.shape[-2] == 526  # n_q = n_k


def test_large_scores_are_compared_with_sdpa_only_where_rounding_allows() -> None:
    def max_diff(fn: Callable[..., Tensor], dtype: torch.dtype, grad: bool) -> float:
        """max |got - SDPA| / (1 + |SDPA|): above tol, the check's allclose fails."""
        x = make_inputs(fn, "t", dtype=dtype)
        q, k, v = (t.detach().requires_grad_() for t in (x.big.q, x.big.k, x.v))
        out, ref = fn(q, k, v, x.mask), sdpa(q, k, v, x.mask, False)
        pairs = [(out.detach(), ref.detach())]
        if grad:
            gen = torch.Generator().manual_seed(1)  # check_gradients' upstream gradient
            g = torch.randn(out.shape, generator=gen).to(out)
            a, b = (torch.autograd.grad((o * g).sum(), (q, k, v)) for o in (out, ref))
            pairs = list(zip(a, b, strict=True))
        return max(float(((s.double() - t.double()).abs() / (1 + t.double().abs())).max())
                   for s, t in pairs)

    def explicit(*args: Tensor) -> Tensor:
        return scaled_dot_product_attention(*args)[0]

    assert max_diff(explicit, torch.bfloat16, grad=False) > ATOL[torch.bfloat16]  # 0.21
    assert max_diff(explicit, torch.float16, grad=False) > ATOL[torch.float16]  # 0.006
    assert max_diff(explicit, torch.float32, grad=False) < ATOL[torch.float32]  # 1.2e-6
    assert max_diff(chunked_attention, torch.float32, grad=True) > ATOL[torch.float32]  # 1.4e-5


def test_a_mask_with_is_causal_is_checked_unless_switched_off() -> None:
    ignored = naive(causal="ignored_with_mask")
    with pytest.raises(CheckError, match=r"only tokens > 0 changed, bool mask \+ is_causal$"):
        check_causal(ignored)
    assert not failed(ignored, mask_with_causal=False)  # the stated blind spot


def test_a_refused_mask_with_is_causal_is_reported_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SDPA raises on the pair: every other case is checked, and the report says so."""
    sdpa_ = F.scaled_dot_product_attention
    results = check_all(sdpa_)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines[:8]] == [[name, "ok"] for name in NAMES]
    assert len(lines) == 9 and lines[8].startswith(
        "not checked: fn refuses a mask with is_causal (RuntimeError: ")
    assert all(r.passed for r in results)
    skips = {r.name for r in results if r.message.endswith(
        "; not checked: fn refuses a mask with is_causal")}
    assert skips == set(NAMES) - {"padding_invariance"}  # which would have used the pair
    check_all(sdpa_, mask_with_causal=False)  # asked not to: nothing to report
    assert "not checked" not in capsys.readouterr().out
    assert check_causal(sdpa_).passed  # each check on its own too

    def refuses_broken(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                       is_causal: bool = False) -> Tensor:
        if mask is not None and is_causal:
            raise ValueError("a mask or is_causal, not both")
        return naive(dim=-2, output_only=True)(q, k, v, mask, is_causal=is_causal)  # type: ignore[return-value]

    assert "rows_sum_to_one" in failed(refuses_broken)  # the rest is still checked


def test_causal_compares_every_row_not_only_row_0() -> None:
    with pytest.raises(CheckError, match=r"only tokens > 1 changed, is_causal$") as info:
        check_causal(naive(causal="leaks_after_row_0"))
    assert info.value.result.index is not None and info.value.result.index[2] == 1


def test_fully_masked_rows_must_be_zero_not_just_finite() -> None:
    with pytest.raises(CheckError, match=r"\|out\[(0, 0, 0|1, 1, 5), \d\]\| = .* fully masked row"):
        check_fully_masked_rows(naive(fill=-1e9))
    with pytest.raises(CheckError, match=r"dq\[.*\] = nan with fully masked rows"):
        check_fully_masked_rows(naive(fill="nan_to_num"))


def test_nothing_inside_fn_crashes_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    def raises_inside(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                      is_causal: bool = False) -> Tensor:
        raise RuntimeError("boom")

    def wrong_shape(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                    is_causal: bool = False) -> tuple[Tensor, Tensor]:
        out, w = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)
        return out.transpose(-2, -1), w

    def not_a_tensor(*args: object, **kwargs: object) -> str:
        return "hello"

    def no_causal(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, mask)

    def all_detached(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                     is_causal: bool = False) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal).detach()

    def on_meta(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                is_causal: bool = False) -> Tensor:
        return torch.empty(*q.shape[:-1], v.shape[-1], device="meta")

    results = check_all(on_meta, verbose=False)  # a crash inside a check is a failure too
    assert not any(r.passed for r in results) and "check raised" in results[0].message
    for fn, words in ((raises_inside, "fn raised RuntimeError: boom"),
                      (wrong_shape, "fn must return out (2, 3, 6, 5)"),
                      (not_a_tensor, "fn must return out or (out, weights), got str")):
        results = check_all(fn, verbose=False)  # type: ignore[arg-type]
        assert len(results) == 8 and not any(r.passed for r in results)
        assert all(words in r.message and math.isnan(r.max_error) for r in results)
    assert failed(no_causal) == all_but("padding_invariance")  # all that pass is_causal
    results = {r.name: r for r in check_all(all_detached, verbose=False)}
    assert "no gradient at all" in results["gradients"].message
    capsys.readouterr()
    check_all(raises_inside)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 9 and all(len(line) <= 88 for line in lines)
    assert lines[8] == "hint: n_q != n_k here, pass n_k=n if fn needs n_k == n_q"


def leaky(eps: float) -> Callable[..., tuple[Tensor, Tensor]]:
    """Correct, except that every weight of 0 is returned as eps."""

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
           is_causal: bool = False) -> tuple[Tensor, Tensor]:
        out, w = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)
        return out, w + eps * (w == 0)

    return fn


def test_zero_means_exactly_zero_by_default() -> None:
    tiny_leak = leaky(1e-9)  # masked weights 1e-9: small, but not 0
    with pytest.raises(CheckError, match="mask_respected: weights"):
        check_mask_respected(tiny_leak)
    assert check_mask_respected(tiny_leak, atol=1e-6).passed


def test_atol_is_honoured() -> None:
    leak = leaky(1e-5)  # masked weights 1e-5
    with pytest.raises(CheckError, match="mask_respected: weights"):
        check_mask_respected(leak)
    assert check_mask_respected(leak, atol=1e-3).passed
    uniform = naive(fill=-1e9)
    assert check_fully_masked_rows(uniform, atol=10.0).passed
    with pytest.raises(CheckError, match="off by"):
        check_rows_sum_to_one(scaled_dot_product_attention, atol=0.0, dtype=torch.bfloat16)


def test_causal_uses_both_is_causal_and_a_mask() -> None:
    def ignores_mask(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                     is_causal: bool = False) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    with pytest.raises(CheckError, match="causal: out.*only tokens > 0 changed"):
        check_causal(ignores_mask)


def test_bottom_right_only_shows_when_n_q_differs_from_n_k() -> None:
    assert check_causal(naive(causal="bottom_right"), n_k=6).passed
    with pytest.raises(CheckError):
        check_causal(naive(causal="bottom_right"))


def test_checker_does_not_use_selfattn_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    import selfattn.masks

    def broken(*args: object, **kwargs: object) -> None:
        raise AssertionError("the checker must build its own tril")

    monkeypatch.setattr(selfattn.masks, "causal_mask", broken)
    assert not failed(F.scaled_dot_product_attention, mask_with_causal=False)


def test_check_all_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    check_all(scaled_dot_product_attention)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines] == [[name, "ok"] for name in NAMES]
    check_all(naive(fill=-1e9))
    out = capsys.readouterr().out
    assert out.count("FAIL") == 1 and "fully_masked_rows  FAIL  |out[" in out


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"n": 0}, ValueError, "n must be positive"),
        ({"n": 2.5}, TypeError, "n must be an int"),
        ({"n": True}, TypeError, "n must be an int"),
        ({"n_k": 0}, ValueError, "n_k must be positive"),
        ({"dtype": torch.int64}, TypeError, "dtype must be a floating torch.dtype"),
        ({"atol": -1.0}, ValueError, "atol must be >= 0"),
        ({"mask_with_causal": 1}, TypeError, "mask_with_causal must be a bool"),
        ({"fully_masked": "zeros"}, ValueError, "fully_masked must be 'zero' or 'uniform'"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, object], error: type[Exception], words: str) -> None:
    fn = kwargs.pop("fn", scaled_dot_product_attention)
    for check in (*CHECKS, check_all):
        with pytest.raises(error, match=words):
            check(fn, **kwargs)  # type: ignore[operator]


def test_check_error_is_an_assertion_error() -> None:
    with pytest.raises(AssertionError) as info:
        check_rows_sum_to_one(naive(dim=-2))
    assert isinstance(info.value, CheckError) and isinstance(info.value.result, CheckResult)
    assert str(info.value) == info.value.result.message


@pytest.mark.cuda
def test_check_all_on_cuda() -> None:
    results = check_all(scaled_dot_product_attention, device="cuda", verbose=False)
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


# The answers to chapter 6's exercises (their code lives here, off the page).


def test_exercise_1_answer() -> None:
    def finite_fill(fill):
        def fn(q, k, v, mask=None, *, is_causal=False):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None and mask.is_floating_point():
                s, mask = s + mask.masked_fill(mask == -math.inf, 0), mask > -math.inf
            if is_causal:
                tril = torch.ones(s.shape[-2:], dtype=torch.bool).tril()
                mask = tril if mask is None else mask & tril
            w = (s if mask is None else s.masked_fill(~mask, fill)).softmax(dim=-1)
            return w @ v, w
        return fn

    with raises(CheckError, "where masked, bool mask", show=False):
        check_mask_respected(finite_fill(-10.0))
    with raises(CheckError, "where masked, low scores, bool mask", show=False):
        check_mask_respected(finite_fill(-1e4))  # only below the fill: at low scores
    assert check_mask_respected(finite_fill(-1e9)).passed
    for fill in (-10.0, -1e4, -1e9):
        with raises(CheckError, "fully masked row", show=False):
            check_fully_masked_rows(finite_fill(fill))
        r = check_fully_masked_rows(finite_fill(fill), fully_masked="uniform")
        assert r.message == "fully_masked_rows: ok; uniform rows, as declared"


def test_exercise_2_answer() -> None:
    def renormalised(q, k, v, mask=None, *, is_causal=False):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None and mask.is_floating_point():
            s, mask = s + mask.masked_fill(mask == -math.inf, 0), mask > -math.inf
        w = s.softmax(dim=-1)
        ok = torch.ones(w.shape, dtype=torch.bool) if mask is None else mask
        if is_causal:
            ok = ok & torch.ones(w.shape[-2:], dtype=torch.bool).tril()
        w = w.masked_fill(~ok, 0.0)
        w = w / w.sum(dim=-1, keepdim=True)                 # a row of 0: 0 / 0 = NaN
        return w @ v, w

    results = check_all(renormalised, verbose=False)
    names = [r.name for r in results if not r.passed]
    assert names == all_but("causal", "batch_independence"), names
    assert "nan" in results[0].message and "large scores, bool mask" in results[0].message


def test_exercise_3_answer() -> None:
    def bottom_right(q, k, v, mask=None, *, is_causal=False):
        n_q, n_k = q.shape[-2], k.shape[-2]
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None and mask.is_floating_point():
            s, mask = s + mask.masked_fill(mask == -math.inf, 0), mask > -math.inf
        if is_causal:
            mask = torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)
        w = (s if mask is None else s.masked_fill(~mask, -math.inf)).softmax(dim=-1)
        return w @ v, w

    assert check_causal(bottom_right, n_k=6).passed
    with raises(CheckError, "only tokens", show=False):
        check_causal(bottom_right)


def test_bfloat16_spacing_between_4_and_8_exceeds_the_absolute_tolerance() -> None:
    four = torch.tensor(4.0, dtype=torch.bfloat16)
    step = float(torch.nextafter(four, torch.tensor(8.0, dtype=torch.bfloat16))) - 4.0
    assert step == 2**-5 > ATOL[torch.bfloat16]  # why SDPA is compared as allclose


def test_every_size_differs_by_default() -> None:  # chapter 7 relies on it
    x = make_inputs(naive(), "t")
    b, h, n, d_k = x.q.shape
    sizes = [b, h, n, x.k.shape[-2], d_k, x.v.shape[-1]]
    assert sizes == [2, 3, 6, 8, 4, 5] and len(set(sizes)) == 6


def test_blind_spots_stated_in_chapter_6() -> None:
    """For each input property the checks do not vary, a bug that passes them."""
    sdpa_ = scaled_dot_product_attention

    def four_d_only(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                    is_causal: bool = False, scale: float | None = None,
                    dropout_p: float = 0.0) -> tuple[Tensor, Tensor]:
        kt = k.transpose(2, 3)  # right only for 4-D inputs; scale, dropout_p ignored
        return sdpa_(q, kt.transpose(2, 3), v, mask, is_causal=is_causal)

    assert not failed(four_d_only)
    q, k, v = _inputs()
    with pytest.raises(IndexError):  # batch dimensions: 3-D inputs
        four_d_only(q[0], k[0], v[0])
    got, _ = four_d_only(q, k, v, scale=1.0)  # scale: never passed by the checks
    assert not torch.allclose(got, F.scaled_dot_product_attention(q, k, v, scale=1.0))
    assert torch.equal(four_d_only(q, k, v, dropout_p=0.9)[0], four_d_only(q, k, v)[0])

    def scale_one_half(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                       is_causal: bool = False) -> tuple[Tensor, Tensor]:
        return sdpa_(q * 0.5 * math.sqrt(q.shape[-1]), k, v, mask, is_causal=is_causal)

    assert not failed(scale_one_half)  # d_k and d_v: always 4 and 5
    q16, k16, v16 = torch.randn(1, 4, 16), torch.randn(1, 5, 16), torch.randn(1, 5, 3)
    assert not torch.allclose(scale_one_half(q16, k16, v16)[0], sdpa_(q16, k16, v16)[0])

    def square_tril(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                    is_causal: bool = False) -> tuple[Tensor, Tensor]:
        if is_causal:  # right only when n_q <= n_k
            n_q, n_k = q.shape[-2], k.shape[-2]
            tri = torch.ones(n_k, n_k, dtype=torch.bool).tril()[:n_q]
            if mask is None or mask.dtype == torch.bool:
                mask = tri if mask is None else mask & tri
            else:
                mask = mask.masked_fill(~tri, -math.inf)
            is_causal = False
        return sdpa_(q, k, v, mask, is_causal=is_causal)

    assert not failed(square_tril) and not failed(square_tril, n_k=6)
    assert failed(square_tril, n_k=4)  # n_k < n_q only when asked for

    def flat_view(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                  is_causal: bool = False) -> tuple[Tensor, Tensor]:
        shape = q.shape[:-2]
        q, k, v = (t.view(-1, *t.shape[-2:]) for t in (q, k, v))  # needs contiguous
        if mask is not None:
            mask = mask.expand(*shape, q.shape[-2], k.shape[-2])
            mask = mask.reshape(-1, *mask.shape[-2:])
        out, w = sdpa_(q, k, v, mask, is_causal=is_causal)
        return out.view(*shape, *out.shape[-2:]), w.view(*shape, *w.shape[-2:])

    assert not failed(flat_view)
    with pytest.raises(RuntimeError, match="view size is not compatible"):  # memory layout
        flat_view(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))

    def detached_bias(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                      is_causal: bool = False) -> tuple[Tensor, Tensor]:
        if mask is not None:
            mask = mask.detach()  # a learned float bias would get no gradient
        return sdpa_(q, k, v, mask, is_causal=is_causal)

    assert not failed(detached_bias)
    for fn, learns in ((sdpa_, True), (detached_bias, False)):
        bias = torch.zeros(6, 8, requires_grad=True)
        q.requires_grad_()
        fn(q, k, v, bias)[0].sum().backward()  # type: ignore[operator]
        assert (bias.grad is not None) == learns
        q = q.detach()

    def hides_nan(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                  is_causal: bool = False) -> tuple[Tensor, Tensor]:
        q, k, v = (t.nan_to_num(0.0) for t in (q, k, v))  # NaN in, no NaN out
        return sdpa_(q, k, v, mask, is_causal=is_causal)

    assert not failed(hides_nan)
    assert not hides_nan(q.fill_(math.nan), k, v)[0].isnan().any()



# Six plausible broken functions that passed all seven checks of check_all with its
# defaults (recorded in the commit that added them), until the checks varied the sizes,
# the shift of each row, batch element and head, left padding with is_causal, and
# checked that fn leaves its inputs unchanged.


def _scores(q: Tensor, k: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Scaled scores with a float mask added, and where a key is allowed (no triangle)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, h, n_q, n_k)
    if mask is None:
        return s, torch.ones_like(s, dtype=torch.bool)
    if mask.dtype == torch.bool:
        return s, mask.expand(s.shape)
    allowed = mask != -math.inf
    return s + mask.masked_fill(~allowed, 0.0), allowed.expand(s.shape)


def _tril(q: Tensor, k: Tensor) -> Tensor:
    return torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()


def _normalise(e: Tensor) -> Tensor:
    """e / e.sum(-1), with a row of zeros (a fully masked row) left at 0."""
    total = e.sum(dim=-1, keepdim=True)
    return e / total.masked_fill(total == 0, 1.0)


def tiles_without_rescale(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                          is_causal: bool = False) -> Tensor:
    """Online softmax over key tiles of 64 that forgets to rescale by alpha."""
    s, ok = _scores(q, k, mask)
    if is_causal:
        ok = ok & _tril(q, k)
    s = s.masked_fill(~ok, -math.inf)
    m = torch.full((*s.shape[:-1], 1), -math.inf, dtype=s.dtype)  # running max
    den, acc = torch.zeros_like(m), 0.0
    for j in range(0, s.shape[-1], 64):
        st = s[..., j:j + 64]
        m = torch.maximum(m, st.amax(dim=-1, keepdim=True))
        p = (st - m.masked_fill(m == -math.inf, 0.0)).exp()
        den = den + p.sum(dim=-1, keepdim=True)  # bug: den, acc not multiplied by alpha
        acc = acc + p @ v[..., j:j + 64, :]
    return acc / den.masked_fill(den == 0, 1.0)


def fast_path_without_max(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                          is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """Without a mask there is no -inf, so this "fast path" skips the row maximum."""
    if mask is not None or is_causal:
        return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)
    w = _normalise((q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).exp())
    return w @ v, w


def mean_shift(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
               is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """Shifts each row by the mean of its allowed scores instead of their maximum."""
    s, ok = _scores(q, k, mask)
    if is_causal:
        ok = ok & _tril(q, k)
    n_ok = ok.sum(dim=-1, keepdim=True).clamp(min=1)
    mean = s.masked_fill(~ok, 0.0).sum(dim=-1, keepdim=True) / n_ok
    w = _normalise((s - mean).exp().masked_fill(~ok, 0.0))
    return w @ v, w


def batch_max(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
              is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """Subtracts one maximum per query for the whole batch: exact, until it underflows."""
    s, ok = _scores(q, k, mask)
    if is_causal:
        ok = ok & _tril(q, k)
    s = s.masked_fill(~ok, -math.inf)
    m = s.amax(dim=(0, -1), keepdim=True)  # bug: dim 0 too
    w = _normalise((s - m.masked_fill(m == -math.inf, 0.0)).exp())
    return w @ v, w


def empty_rows_before_triangle(q: Tensor, k: Tensor, v: Tensor,
                               mask: Tensor | None = None, *,
                               is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """Finds the fully masked rows from the mask, then applies the causal triangle."""
    s, ok = _scores(q, k, mask)
    empty = ~ok.any(dim=-1, keepdim=True)  # bug: before the triangle
    if is_causal:
        ok = ok & _tril(q, k)
    w = s.masked_fill(~ok, -math.inf).masked_fill(empty, 0.0).softmax(dim=-1)
    w = w.masked_fill(empty, 0.0)
    return w @ v, w


def mask_in_place(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                  is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """Folds the triangle into a bool mask in place, to save a copy."""
    if is_causal and mask is not None and mask.dtype == torch.bool:
        mask &= _tril(q, k)  # bug: the caller's mask changes
        is_causal = False
    return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)


LARGE = ["rows_sum_to_one", "matches_reference", "gradients"]
PASSED_BEFORE = {  # name: (fn, the checks that fail now, one message that names the bug)
    "tiles without the alpha rescale": (
        tiles_without_rescale, ["matches_reference", "gradients"],
        r"matches_reference: out\[0, 0, \d+, \d\] differs from SDPA by 0\.\d+ > .*"
        r", n = 526, n_k = 528, no mask$"),
    "fast path without the row maximum": (
        fast_path_without_max, LARGE,
        r"rows_sum_to_one: .* off by nan > .*, large scores, no mask$"),
    "softmax shifted by the row mean": (
        mean_shift, LARGE, r"rows_sum_to_one: .* off by nan > .*, large scores, no mask$"),
    "maximum taken over the batch too": (
        batch_max, ["rows_sum_to_one", "matches_reference", "batch_independence"],
        r"batch_independence: out\[1, .* from fn on its batch element and head alone, "
        r"large scores, no mask$"),
    "fully masked rows found before the triangle": (
        empty_rows_before_triangle, ["fully_masked_rows"],
        r"fully_masked_rows: out\[1, 0, 0, 0\] = nan with fully masked rows \(hint: .*\), "
        r"bool left padding \+ is_causal"),
    "mask &= tril in place": (
        mask_in_place, all_but("padding_invariance"),
        r"causal: fn changed its input mask in place, bool mask \+ is_causal"),
}


def test_each_of_the_six_is_really_broken() -> None:
    """Each function of PASSED_BEFORE is wrong on an input of the kind it was never given."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 4, generator=g) for n in (6, 200, 200))
    ref = F.scaled_dot_product_attention(q, k, v)
    assert (tiles_without_rescale(q, k, v) - ref).abs().max() > 0.1  # 0.43 at n_k = 200
    for fn, row in ((fast_path_without_max, [200.0, 190.0]),
                    (mean_shift, [200.0, 0.0, -200.0])):
        s = torch.tensor(row)[None, None, None, :]  # q = 1 and k = scores * 2: q k^T / 2
        one = torch.ones(1, 1, 1, 1)
        assert fn(one, 2 * s.transpose(-2, -1), torch.eye(len(row))[None, None])[0] \
            .isnan().all()
    s = torch.tensor([[[[3.0, 1.0]]], [[[-300.0, -301.0]]]])  # (B, 1, 1, 2)
    q, k = torch.ones(2, 1, 1, 1), 2 * s.transpose(-2, -1)
    v = torch.eye(2).expand(2, 1, 2, 2)
    assert not torch.allclose(batch_max(q, k, v)[0][1], batch_max(q[1:], k[1:], v[1:])[0][0])
    real = torch.tensor([False, False, True, True])  # left padding: rows 0 and 1 see nothing
    q, k, v = (torch.randn(1, 1, 4, 4) for _ in range(3))
    assert empty_rows_before_triangle(q, k, v, real, is_causal=True)[0][..., :2, :].isnan().all()
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask_in_place(q, k, v, mask, is_causal=True)
    assert not mask.all()  # the caller's mask lost its upper triangle


@pytest.mark.parametrize("name", list(PASSED_BEFORE))
def test_the_six_now_fail_with_a_message_that_names_the_bug(name: str) -> None:
    fn, names, message = PASSED_BEFORE[name]
    results = check_all(fn, verbose=False)  # type: ignore[arg-type]
    assert [r.name for r in results if not r.passed] == names
    lines = [line for r in results for line in r.failures]
    assert any(re.fullmatch(message, line) for line in lines), lines


def test_inputs_changed_in_place_are_reported() -> None:
    def scales_q_in_place(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                          is_causal: bool = False) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            q /= math.sqrt(q.shape[-1])  # bug: the caller's q changes
        return naive(scale="none")(q, k, v, mask, is_causal=is_causal)  # type: ignore[return-value]

    with pytest.raises(CheckError,
                       match=r"(?m)^rows_sum_to_one: fn changed its input q in place, no mask$"):
        check_rows_sum_to_one(scales_q_in_place)
    with pytest.raises(CheckError,
                       match=r"(?m)fn changed its input mask in place, bool mask \+ is_causal$"):
        check_mask_respected(mask_in_place)


def test_check_all_counts_its_work() -> None:
    """The cost of check_all, counted: calls of fn and the scores they compute."""
    calls: list[int] = []

    def counted(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                is_causal: bool = False) -> tuple[Tensor, Tensor]:
        calls.append(q.shape[:-1].numel() * k.shape[-2])  # B * h * n_q * n_k
        return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)

    assert all(r.passed for r in check_all(counted, verbose=False))
    long = [c for c in calls if c == 526 * 528]
    assert len(long) == 24  # 6 mask kinds, ordinary and large, in matches_reference
    # and gradients
    assert len(calls) <= 240 and sum(calls) - sum(long) < 50_000  # 225 and 40,608 today


def test_long_gradients_in_16_bit_dtypes_round_beyond_the_tolerance() -> None:
    """Why check_gradients compares the long inputs in float32 and float64 only."""
    x = make_inputs(scaled_dot_product_attention, "t", dtype=torch.float16)
    c = [c for c in long_cases(x) if c.label.endswith("float mask + is_causal")][0]
    q, k, v = (t.detach().requires_grad_() for t in (c.q, c.k, c.v))
    out = scaled_dot_product_attention(q, k, v, c.mask, is_causal=True)[0]
    ref = sdpa(q, k, v, c.mask, True)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(out)
    got, want = (torch.autograd.grad((o * g).sum(), (q, k, v)) for o in (out, ref))
    worst = max(float(((a.double() - b.double()).abs() / (1 + b.double().abs())).max())
                for a, b in zip(got, want, strict=True))
    assert worst > ATOL[torch.float16], worst  # a correct function: 2.2e-3 > 2e-3


def test_a_maximum_shared_by_the_batch_underflows_whole_rows() -> None:
    """6.9: large scores make the other batch element's rows underflow to 0."""
    x = make_inputs(batch_max, "t")
    _, w = batch_max(x.big.q, x.big.k, x.v)
    assert (w.sum(dim=-1) == 0).any() and not w.isnan().any()  # rows of 0, not NaN
    _, w = scaled_dot_product_attention(x.big.q, x.big.k, x.v)
    assert torch.allclose(w.sum(dim=-1), torch.ones(()))


# Four more broken functions that passed every check of check_all at commit a42d472 (the
# first two with mask_with_causal=False on every seed tried, 0 to 3): large scores varied
# only inside one tile, each row's maximum sat near 0 or 2 big, out's dtype was not
# compared with q's, and no allowed score went below about -2 big.


def online_softmax(start: float = -math.inf, first_tile_only: bool = False,
                   tile: int = 64) -> Callable[..., Tensor]:
    """An online softmax over key tiles; the defaults are correct."""

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
           is_causal: bool = False) -> Tensor:
        s, ok = _scores(q, k, mask)
        if is_causal:
            ok = ok & _tril(q, k)
        s = s.masked_fill(~ok, -math.inf)
        m = torch.full((*s.shape[:-1], 1), start, dtype=s.dtype)  # running max
        den = torch.zeros_like(m)
        acc = torch.zeros(*s.shape[:-1], v.shape[-1], dtype=s.dtype)
        for j in range(0, s.shape[-1], tile):
            st = s[..., j:j + tile]
            if first_tile_only:  # bug: the stabilizer is tile 0's maximum, never updated
                if j == 0:
                    m = st.amax(dim=-1, keepdim=True)
                    m = m.masked_fill(m == -math.inf, 0.0)
                p = (st - m).exp()
                den, acc = den + p.sum(dim=-1, keepdim=True), acc + p @ v[..., j:j + tile, :]
                continue
            m_new = torch.maximum(m, st.amax(dim=-1, keepdim=True))
            shift = m_new.masked_fill(m_new == -math.inf, 0.0)
            p, alpha = (st - shift).exp(), (m - shift).exp()
            den = alpha * den + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v[..., j:j + tile, :]
            m = m_new
        return acc / den.masked_fill(den == 0, 1.0)

    return fn


def float32_out(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                is_causal: bool = False) -> Tensor:
    """Computes in float32 (right) and forgets to cast the output back (wrong)."""
    if mask is not None and mask.is_floating_point():
        mask = mask.float()
    q, k, v = q.float(), k.float(), v.float()
    return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)[0]


def filled(fill: float | None) -> Callable[..., tuple[Tensor, Tensor]]:
    """masked_fill with a finite fill; None: finfo(dtype).min, as transformers does now."""

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
           is_causal: bool = False) -> tuple[Tensor, Tensor]:
        s, ok = _scores(q, k, mask)
        if is_causal:
            ok = ok & _tril(q, k)
        f = torch.finfo(s.dtype).min if fill is None else fill
        w = s.masked_fill(~ok, f).softmax(dim=-1)
        return w @ v, w

    return fn


NEW_BLIND_SPOTS = {  # name: (fn, the checks that fail now, one message that names the bug)
    "running maximum that starts at 0": (
        online_softmax(start=0.0), ["rows_sum_to_one", "matches_reference"],
        r"rows_sum_to_one: weights\[\d, \d, \d\]\.sum\(\) is off by 1 > 1e-05, "
        r"large scores, no mask"),
    "stabilizer from the first tile only": (
        online_softmax(first_tile_only=True), ["matches_reference", "gradients"],
        r"matches_reference: out\[0, 0, \d+, \d\] differs from SDPA by nan > .*, "
        r"n = 526, n_k = 528, large scores, no mask"),
    "float16 in, float32 out": (
        float32_out, NAMES,
        r"rows_sum_to_one: fn must return out in q's dtype torch.float16, got "
        r"torch.float32, no mask"),
    "fill -1e4, GPT-2's": (
        filled(-1e4), ["mask_respected"],
        r"mask_respected: weights\[.*\] = 1 where masked, low scores, bool mask"),
}
OPTIONS = {"float16 in, float32 out": {"dtype": torch.float16},
           "fill -1e4, GPT-2's": {"fully_masked": "uniform"}}


@pytest.mark.parametrize("name", list(NEW_BLIND_SPOTS))
def test_the_new_blind_spots_are_caught(name: str) -> None:
    fn, names, message = NEW_BLIND_SPOTS[name]
    for mask_with_causal in (True, False):
        results = check_all(fn, verbose=False, mask_with_causal=mask_with_causal,  # type: ignore[arg-type]
                            **OPTIONS.get(name, {}))
        assert [r.name for r in results if not r.passed] == names
        lines = [line for r in results for line in r.failures]
        assert any(re.fullmatch(message, line) for line in lines), lines


def test_each_new_blind_spot_is_really_broken() -> None:
    """Each is wrong on an input of the kind the checker did not build before."""
    q = torch.ones(1, 1, 1, 1)
    s = torch.tensor([-300.0, -310.0])  # a row whose maximum is far below 0
    k, v = 2 * s[None, None, :, None], torch.eye(2)[None, None]
    assert online_softmax(start=0.0)(q, k, v).abs().sum() == 0  # exp(-300) = 0: no output
    s = torch.cat([torch.zeros(64), torch.full((8,), 200.0)])  # the maximum in tile 2
    k, v = 2 * s[None, None, :, None], torch.randn(1, 1, 72, 3)
    assert online_softmax(first_tile_only=True)(q, k, v).isnan().all()  # exp(200) = inf
    half = torch.randn(1, 1, 4, 4).half()
    assert float32_out(half, half, half).dtype == torch.float32
    keep = torch.tensor([True, False])
    s = torch.tensor([-2e4, 0.0])[None, None, None, :]
    w = filled(-1e4)(q, 2 * s.transpose(-2, -1), torch.eye(2)[None, None], keep)[1]
    assert w[..., 1] == 1  # the masked key takes all the weight


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_correct_online_softmax_passes(dtype: torch.dtype) -> None:
    assert not failed(online_softmax(), dtype=dtype)
    assert not failed(filled(None), dtype=dtype, fully_masked="uniform")


def test_long_large_scores_put_each_row_maximum_in_or_after_the_first_tile() -> None:
    """Half the rows peak after key 512 (chunked_attention's tile), half before it."""
    for dtype in (torch.float32, torch.float64):
        x = make_inputs(naive(), "t", dtype=dtype)
        s = (x.long_big.q.double() @ x.long_big.k.double().transpose(-2, -1)) / 2
        big = math.log(torch.finfo(dtype).max) + 10
        top = s.amax(dim=-1)[0, 0]  # (n,)
        late = s[0, 0, :, 512:].amax(dim=-1) > s[0, 0, :, :512].amax(dim=-1) + 2 * big - 20
        early = s[0, 0, :, :512].amax(dim=-1) > s[0, 0, :, 512:].amax(dim=-1) + 2 * big - 20
        assert bool((late ^ early).all()) and 0.4 < late.double().mean() < 0.6
        levels = torch.tensor([2 * big, 0.0, -2 * big]).repeat(len(top) // 3 + 1)[:len(top)]
        assert ((top - levels).abs() < 10).all()  # maxima 2 big, 0, -2 big in turn


def test_a_fill_leaks_at_low_scores_down_to_about_minus_16480() -> None:
    """6.9's finite fills: in float32 a fill above about -16480 leaks, one below not."""
    with pytest.raises(CheckError, match="where masked, low scores"):
        check_mask_respected(filled(-16450.0))
    assert check_mask_respected(filled(-16520.0)).passed


def test_low_scores_are_below_a_fill_of_minus_1e4_in_every_dtype() -> None:
    for dtype in DTYPES:
        x = make_inputs(naive(), "t", dtype=dtype)
        s = (x.low.q.double() @ x.low.k.double().transpose(-2, -1)) / 2
        assert (s < -1e4 - 104).all() and (s > -2e4).all(), dtype
        assert (x.low.q.to(dtype) @ x.low.k.to(dtype).transpose(-2, -1)).isfinite().all()


# -- real code: a convention for fully masked rows, messages that name the case ----------

FILLS = {"-1e9": filled(-1e9), "finfo.min": filled(None), "-inf": naive(fill=-math.inf)}


@pytest.mark.parametrize(("fill", "convention", "note"), [
    ("-1e9", "uniform", "uniform rows, as declared"),
    ("finfo.min", "uniform", "uniform rows, as declared"),
    ("-inf", "nan", "NaN rows, as declared; NaN reaches dv: harmful"),
    ("-inf", "any", "rows held NaN; NaN reaches dv: harmful"),
    ("-1e9", "any", "rows held uniform"),
])
def test_a_declared_convention_is_reported_not_failed(
    fill: str, convention: str, note: str,
) -> None:
    fn = FILLS[fill]
    results = {r.name: r for r in check_all(fn, verbose=False, fully_masked=convention)}  # type: ignore[arg-type]
    assert all(r.passed for r in results.values()), [r.message for r in results.values()]
    assert results["fully_masked_rows"].message == f"fully_masked_rows: ok; {note}"


def test_a_wrong_declaration_fails_and_hints_at_the_right_one() -> None:
    uniform, zeros = filled(-1e9), scaled_dot_product_attention
    for fn, declared, held in ((uniform, "zero", "uniform"), (uniform, "nan", "uniform"),
                               (zeros, "uniform", "zero"), (zeros, "nan", "zero")):
        r = check_all(fn, verbose=False, fully_masked=declared)[-1]  # type: ignore[arg-type]
        assert not r.passed and r.name == "fully_masked_rows", (declared, held)
        assert f"(hint: the rows are {held}, pass fully_masked='{held}' if meant)" \
            in r.message, r.message
    assert check_all(zeros, verbose=False, fully_masked="any")[-1].message == \
        "fully_masked_rows: ok; rows held zero"


def test_nan_in_the_gradients_is_measured_with_a_loss_that_skips_the_rows() -> None:
    """NaN reaches dv even when the upstream gradient is 0 in the NaN rows: dv = W^T g,
    and NaN * 0 = NaN. A masked_fill stops it before the scores (dq, dk stay finite),
    an additive -inf does not."""
    mask = torch.tensor([[False] * 3, [True] * 3, [True] * 3])  # row 0 is empty
    bias = torch.zeros(3, 3).masked_fill(~mask, -math.inf)
    for m, reached in ((mask, "dv"), (bias, "dq, dk, dv")):
        q, k, v = (torch.randn(1, 1, 3, 4, requires_grad=True) for _ in range(3))
        s = q @ k.transpose(-2, -1) / 2
        s = s.masked_fill(~m, -math.inf) if m.dtype == torch.bool else s + m
        out = s.softmax(dim=-1) @ v
        (out[..., 1:, :].sum()).backward()  # a loss that never reads row 0
        assert out[..., 0, :].isnan().all()
        got = ", ".join(n for n, t in (("dq", q), ("dk", k), ("dv", v)) if t.grad.isnan().any())
        assert got == reached


def test_fn_that_raises_is_named_with_its_case_and_shapes() -> None:
    def square_only(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                    is_causal: bool = False) -> Tensor:
        if q.shape[-2] != k.shape[-2]:
            raise ValueError("square attention only")
        return F.scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)

    r = check_all(square_only, verbose=False)[0]
    assert r.message == (
        "rows_sum_to_one: fn raised ValueError: square attention only (q (2, 3, 6, 4), "
        "k (2, 3, 8, 4), v (2, 3, 8, 5), no mask, is_causal=False; hint: n_q != n_k here, "
        "pass n_k=n if fn needs n_k == n_q), no mask")
    assert not failed(square_only, n_k=6, mask_with_causal=False)


def test_each_distinct_failure_is_reported_once() -> None:
    """Two bugs in one check: both are named, and failures alike only once."""
    def two_bugs(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *,
                 is_causal: bool = False) -> tuple[Tensor, Tensor]:
        if is_causal:  # bug 1: raises with is_causal
            raise NotImplementedError("no causal")
        return naive(dim=-2)(q, k, v, mask)  # type: ignore[return-value]  # bug 2

    r = check_all(two_bugs, verbose=False, mask_with_causal=False)[0]
    assert len(r.failures) == 2 and r.message == "\n".join(r.failures)
    assert r.failures[0].startswith("rows_sum_to_one: weights[")
    assert r.failures[0].endswith(", no mask")  # the same in 5 cases: said once
    assert r.failures[1].startswith("rows_sum_to_one: fn raised NotImplementedError: "
                                    "no causal (q (2, 3, 6, 4)")
    assert r.failures[1].endswith(", is_causal")  # and in 2 cases: said once
