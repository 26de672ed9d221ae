"""8.5: the fused Triton kernel, checked under triton's interpreter (or natively with CUDA).

Importing ``selfattn.triton_attention`` here, at collection, also sets ``TRITON_INTERPRET=1`` before
anything else in the session imports triton (on a machine without CUDA).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import selfattn.triton_attention as triton_attention  # make test installs the extra: no skip without it
from benchmarks.traffic import TorchTraffic, moved_bytes, trace_memory
from selfattn.chunked import chunked_attention

fused_attention = triton_attention.fused_attention
ROOT = Path(__file__).resolve().parents[2]
DEVICE = "cpu" if triton_attention.INTERPRETED else "cuda"
interpreter_only = pytest.mark.skipif(not triton_attention.INTERPRETED, reason="needs triton's interpreter")

# (B, h, n_q, n_k, d, is_causal, block_m, block_n): n from 1 to 300, mostly not a multiple of the block,
# n_q != n_k both ways, d in {16, 32, 64}, tiles of 16 to 128. Kept small: the interpreter runs each
# program's loop in Python (about 10 ms per key tile on this machine).
SHAPES = [
    (2, 2, 1, 1, 16, False, 16, 16),
    (2, 2, 1, 1, 16, True, 16, 16),
    (1, 3, 15, 15, 32, False, 16, 16),
    (2, 2, 17, 17, 16, True, 16, 16),
    (2, 3, 31, 31, 64, False, 32, 32),
    (2, 2, 33, 33, 32, True, 32, 16),
    (1, 2, 63, 63, 16, False, 64, 64),
    (2, 2, 64, 64, 64, True, 64, 64),
    (2, 2, 65, 65, 32, False, 64, 64),
    (2, 2, 65, 65, 16, True, 64, 32),
    (1, 2, 100, 100, 64, True, 32, 64),
    (2, 1, 127, 127, 32, False, 64, 64),
    (1, 2, 129, 129, 16, True, 64, 64),
    (2, 2, 200, 200, 32, False, 64, 64),
    (1, 2, 255, 255, 64, True, 64, 64),
    (2, 2, 300, 300, 16, False, 64, 64),
    (2, 2, 300, 300, 32, True, 64, 64),
    (1, 3, 300, 300, 64, True, 128, 64),
    (2, 2, 37, 80, 16, False, 32, 32),
    (2, 2, 80, 37, 32, True, 32, 32),
    (2, 2, 5, 300, 64, True, 16, 64),
    (2, 2, 300, 7, 16, False, 64, 16),
    (1, 1, 97, 97, 32, True, 16, 16),
    (3, 2, 50, 50, 64, False, 64, 64),
]


def _inputs(B: int, h: int, n_q: int, n_k: int, d: int, dtype: torch.dtype = torch.float32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, h, n_q, d, generator=g, dtype=dtype)
    k, v = (torch.randn(B, h, n_k, d, generator=g, dtype=dtype) for _ in range(2))
    return q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)


def _reference_lse(q: torch.Tensor, k: torch.Tensor, is_causal: bool) -> torch.Tensor:
    s = q.double() @ k.double().transpose(-2, -1) / q.shape[-1] ** 0.5
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.logsumexp(-1)


@pytest.mark.parametrize(("B", "h", "n_q", "n_k", "d", "is_causal", "block_m", "block_n"), SHAPES)
def test_matches_chunked_and_sdpa(B: int, h: int, n_q: int, n_k: int, d: int, is_causal: bool, block_m: int, block_n: int) -> None:
    q, k, v = _inputs(B, h, n_q, n_k, d)
    out, lse = fused_attention(q, k, v, is_causal=is_causal, block_m=block_m, block_n=block_n)
    assert out.shape == (B, h, n_q, d) and out.dtype == torch.float32
    assert lse.shape == (B, h, n_q) and lse.dtype == torch.float32
    chunked = chunked_attention(q, k, v, is_causal=is_causal, block_q=block_m, block_k=block_n)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    for name, ref in (("chunked_attention", chunked), ("SDPA", sdpa)):
        err = (out - ref).abs().max().item()
        assert err < 1e-5, f"{name}: max error {err:.2e}"
    err = (lse.double() - _reference_lse(q, k, is_causal)).abs().max().item()
    assert err < 1e-5, f"lse: max error {err:.2e}"


@pytest.mark.parametrize("is_causal", [False, True])
def test_float16_in_float32_accumulation(is_causal: bool) -> None:
    q, k, v = _inputs(2, 2, 70, 70, 32, dtype=torch.float16)
    out, lse = fused_attention(q, k, v, is_causal=is_causal, block_m=32, block_n=32)
    assert out.dtype == torch.float16 and lse.dtype == torch.float32
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal)
    err = (out.float() - ref).abs().max().item()
    assert err < 2e-3, err  # the output's own rounding: float16 has an 11-bit mantissa
    assert (lse.double() - _reference_lse(q.float(), k.float(), is_causal)).abs().max() < 1e-4


def test_scale_argument() -> None:
    q, k, v = _inputs(1, 2, 40, 40, 16)
    out, _ = fused_attention(q, k, v, scale=0.3, block_m=16, block_n=16)
    assert (out - F.scaled_dot_product_attention(q, k, v, scale=0.3)).abs().max() < 1e-5


@interpreter_only
@pytest.mark.parametrize("is_causal", [False, True])
def test_bytes_moved_follow_the_loop(is_causal: bool) -> None:
    """Q read once, K and V once per visited key tile, O and lse written once; nothing outside the tensors."""
    n, d, b = 100, 16, 32
    q, k, v = _inputs(2, 1, n, n, d)
    with trace_memory() as log:
        out, lse = fused_attention(q, k, v, is_causal=is_causal, block_m=b, block_n=b)
    T = -(-n // b)
    inside = {name: (t.data_ptr(), t.data_ptr() + t.nbytes) for name, t in (("q", q), ("k", k), ("v", v), ("out", out), ("lse", lse))}
    read = {"q": 0, "k": 0, "v": 0}
    tiles = 0
    for a in log:
        owners = [name for name, (lo, hi) in inside.items() if lo <= a.addresses.min() and a.addresses.max() < hi]
        assert len(owners) == 1, "an access outside q, k, v, out, lse"
        assert (a.kind == "load") == (owners[0] in read)
        if a.kind == "load":
            read[owners[0]] += a.addresses.size * a.itemsize
            tiles += owners[0] == "k"
    visited = T * (T + 1) // 2 if is_causal else T * T  # key tiles per (batch, head)
    assert tiles == 2 * visited
    assert read["q"] == 2 * n * d * 4
    if not is_causal:
        assert read["k"] == read["v"] == 2 * T * n * d * 4
    assert moved_bytes(log, "store") == 2 * (n * d * 4 + n * 4)


def test_torch_traffic_counts_ops_not_views() -> None:
    a, b = torch.randn(32, 16), torch.randn(16, 8)
    with TorchTraffic() as t:
        a.t().contiguous()  # a view, then a copy: reads 32·16, writes 32·16
        a @ b  # reads both, writes (32, 8)
        torch.zeros_like(a)  # reads nothing, writes (32, 16)
    assert t.read == 4 * (32 * 16 + 32 * 16 + 16 * 8)
    assert t.written == 4 * (32 * 16 + 32 * 8 + 32 * 16)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((torch.randn(1, 1, 8, 8),) * 3, {}, ValueError, "fused_attention: d must be a power of 2 >= 16, got 8"),
        ((torch.randn(1, 1, 8, 24),) * 3, {}, ValueError, "fused_attention: d must be a power of 2 >= 16, got 24"),
        ((torch.randn(1, 1, 8, 16),) * 3, {"block_m": 8}, ValueError, "fused_attention: block_m must be a power of 2 >= 16, got 8"),
        ((torch.randn(1, 1, 8, 16),) * 3, {"block_n": 48}, ValueError, "fused_attention: block_n must be a power of 2 >= 16, got 48"),
        ((torch.randn(1, 1, 8, 16),) * 3, {"block_n": True}, ValueError, "block_n must be a power of 2 >= 16, got True"),
        ((torch.randn(1, 1, 8, 16, dtype=torch.float64),) * 3, {}, TypeError, "fused_attention: q, k, v must be float32, float16 or bfloat16, got torch.float64"),
        ((torch.randn(2, 1, 8, 16), torch.randn(1, 1, 8, 16), torch.randn(1, 1, 8, 16)), {}, ValueError, "must share their batch dims and d, got q (2, 1, 8, 16), k (1, 1, 8, 16), v (1, 1, 8, 16)"),
        ((torch.randn(1, 1, 8, 16), torch.randn(1, 1, 8, 16), torch.randn(1, 1, 8, 32)), {}, ValueError, "must share their batch dims and d"),
        ((torch.randn(1, 1, 0, 16), torch.randn(1, 1, 8, 16), torch.randn(1, 1, 8, 16)), {}, ValueError, "fused_attention: empty input, got q (1, 1, 0, 16)"),
        ((torch.randn(1, 1, 8, 16),) * 3, {"is_causal": 1}, TypeError, "fused_attention: is_causal must be a bool, got int"),
        ((torch.randn(8, 16).tolist(),) * 3, {}, TypeError, "fused_attention: q must be a torch.Tensor, got list"),
    ],
)
def test_bad_input(args: tuple, kwargs: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as err:
        fused_attention(*(a.to(DEVICE) if isinstance(a, torch.Tensor) else a for a in args), **kwargs)
    assert message in str(err.value)


@interpreter_only
def test_bfloat16_refused_by_the_interpreter() -> None:
    x = torch.randn(1, 1, 8, 16, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="bfloat16 needs a GPU"):
        fused_attention(x, x, x)


IMPORTS = r"""
import os, sys
os.environ.pop("TRITON_INTERPRET", None)
import selfattn, selfattn.chunked
print("core imports triton:", "triton" in sys.modules)
sys.modules["triton"] = None  # as if triton were not installed
try:
    import selfattn.triton_attention
except ImportError as err:
    print("without triton:", err)
del sys.modules["triton"]
os.environ.pop("TRITON_INTERPRET")  # set by the attempt above, before it failed
import torch, triton  # the compiled mode, imported first
try:
    import selfattn.triton_attention
except ImportError as err:
    print("triton first:", err)
os.environ["TRITON_INTERPRET"] = "1"  # too late: triton.language was built for the compiler
import triton.language as tl

@triton.jit
def fill(X):
    tl.store(X + tl.arange(0, 16), tl.zeros([16], tl.float32))

try:
    fill[(1,)](torch.empty(16))
except Exception as err:
    print("set after import:", type(err).__name__)
"""


def test_imports() -> None:
    """The core never imports triton; without it, or imported too early, the module says what to do."""
    run = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, cwd=ROOT, check=False,
                         env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "core imports triton: False"
    assert lines[1] == 'without triton: selfattn.triton_attention needs triton: pip install "selfattn[triton]"'
    if not torch.cuda.is_available():  # the guard is for CPU-only machines, where setting it late fails
        assert lines[2].startswith("triton first: selfattn.triton_attention: triton was imported before TRITON_INTERPRET=1")
        assert lines[3] == "set after import: InterpreterError"
