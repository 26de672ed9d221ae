"""Unit tests of selfattn.checks: every check passes on selfattn and fails on a broken implementation."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from selfattn.checks import (
    CheckError,
    CheckResult,
    check_all,
    check_causal,
    check_fully_masked_rows,
    check_mask_respected,
    check_matches_reference,
    check_rows_sum_to_one,
)
from selfattn.functional import scaled_dot_product_attention

Fn = Callable[..., tuple[Tensor, Tensor]]
CHECKS = [check_rows_sum_to_one, check_mask_respected, check_matches_reference, check_causal, check_fully_masked_rows]


def naive(
    *, dim: int = -1, scale: bool = True, triangle: str = "tril", fill: float = float("-inf"), use_mask: bool = True
) -> Fn:
    """A hand-written attention with one knob per classic bug."""

    def fn(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, is_causal: bool = False) -> tuple[Tensor, Tensor]:
        scores = q @ k.transpose(-2, -1)  # (B, n_q, n_k)
        if scale:
            scores = scores / math.sqrt(q.shape[-1])
        if is_causal:
            ones = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device)
            mask = ones.tril() if triangle == "tril" else ones.triu()
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, fill)
        weights = scores.softmax(dim=dim)
        return weights @ v, weights

    return fn


def safe(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, is_causal: bool = False) -> tuple[Tensor, Tensor]:
    """selfattn itself, through a plain wrapper (a user's function would look like this)."""
    return scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_every_check_passes_on_selfattn(check: Callable[..., CheckResult], dtype: torch.dtype) -> None:
    result = check(safe, dtype=dtype)
    assert isinstance(result, CheckResult)
    assert result.passed and result.index is None and result.message.endswith(": ok")


@pytest.mark.parametrize(
    ("check", "broken", "name", "index_len", "words"),
    [
        (check_rows_sum_to_one, naive(dim=-2), "rows_sum_to_one", 2, ".sum() ="),
        (check_mask_respected, naive(use_mask=False), "mask_respected", 3, "where the mask is False"),
        (check_matches_reference, naive(scale=False), "matches_reference", 3, "differs from SDPA"),
        (check_matches_reference, naive(triangle="triu"), "matches_reference", 3, "with is_causal"),
        (check_causal, naive(triangle="triu"), "causal", 2, "when only tokens after"),
        (check_causal, naive(dim=-2), "causal", 2, "when only tokens after"),
        (check_fully_masked_rows, naive(), "fully_masked_rows", 3, "nan"),
    ],
)
def test_each_check_fails_on_a_broken_implementation(
    check: Callable[..., CheckResult], broken: Fn, name: str, index_len: int, words: str
) -> None:
    with pytest.raises(CheckError) as info:
        check(broken)
    err = info.value
    assert isinstance(err, AssertionError)
    r = err.result
    assert not r.passed and r.name == name
    assert r.index is not None and len(r.index) == index_len
    assert str(err) == r.message and r.message.startswith(f"{name}: ") and words in r.message
    assert math.isnan(r.max_error) or r.max_error > 1e-3


def test_causal_via_mask() -> None:
    assert check_causal(safe, via="mask").passed
    with pytest.raises(CheckError, match="causal: out"):
        check_causal(naive(use_mask=False), via="mask")  # ignores the mask it is given


def test_finite_fill_passes_nan_check_but_not_a_small_one() -> None:
    # -1e9 gives a uniform (finite) row: no NaN; a mask value that is too mild leaks weight.
    assert check_fully_masked_rows(naive(fill=-1e9)).passed
    with pytest.raises(CheckError, match="mask_respected"):
        check_mask_respected(naive(fill=-10.0))


def test_error_points_at_the_worst_entry() -> None:
    with pytest.raises(CheckError) as info:
        check_rows_sum_to_one(naive(dim=-2))
    b, i = info.value.result.index  # type: ignore[misc]
    _, w = naive(dim=-2)(*_inputs())
    sums = w.sum(dim=-1)
    assert (sums - 1).abs().argmax().item() == b * sums.shape[1] + i


def _inputs() -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 6, 4, generator=g), torch.randn(2, 6, 4, generator=g), torch.randn(2, 6, 3, generator=g)


def test_check_all_reports_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    results = check_all(safe)
    assert [r.passed for r in results] == [True] * 5
    assert [r.name for r in results] == [
        "rows_sum_to_one", "mask_respected", "matches_reference", "causal", "fully_masked_rows"
    ]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(line.split() == [r.name, "ok"] for line, r in zip(lines, results, strict=True))

    results = check_all(naive(triangle="triu"))  # does not raise: collects the failures
    assert [r.passed for r in results] == [True, True, False, False, False]
    out = capsys.readouterr().out
    assert out.count("FAIL") == 3 and "causal             FAIL  out[" in out


def test_check_all_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    results = check_all(safe, verbose=False, n=3, seed=7, dtype=torch.float64)
    assert all(r.passed for r in results) and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"n": 1}, ValueError, "n must be an int >= 2"),
        ({"n": 2.5}, ValueError, "n must be an int >= 2"),
        ({"dtype": torch.int64}, TypeError, "dtype must be a floating torch.dtype"),
        ({"atol": -1.0}, ValueError, "atol must be >= 0"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception], words: str) -> None:
    fn = kwargs.pop("fn", safe)
    for check in CHECKS:
        with pytest.raises(error, match=words):
            check(fn, **kwargs)  # type: ignore[operator]


def test_bad_via() -> None:
    with pytest.raises(ValueError, match="via must be 'is_causal' or 'mask'"):
        check_causal(safe, via="diagonal")  # type: ignore[arg-type]


def test_contract_violations_are_not_check_failures() -> None:
    def returns_tensor(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, is_causal: bool = False) -> Tensor:
        return safe(q, k, v, mask, is_causal=is_causal)[0]

    def wrong_shape(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, is_causal: bool = False):  # type: ignore[no-untyped-def]
        out, w = safe(q, k, v, mask, is_causal=is_causal)
        return out.transpose(-2, -1), w

    with pytest.raises(TypeError, match=r"rows_sum_to_one: fn must return a tuple \(out, weights\)"):
        check_rows_sum_to_one(returns_tensor)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"fn must return out \(B, n_q, d_v\) = \(2, 6, 3\)"):
        check_matches_reference(wrong_shape)


@pytest.mark.cuda
def test_check_all_on_cuda() -> None:
    results = check_all(safe, device="cuda", verbose=False)
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]
