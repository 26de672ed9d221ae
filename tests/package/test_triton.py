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
from triton.runtime.errors import InterpreterError
from benchmarks.traffic import TorchTraffic, fused_bytes, moved_bytes, trace_memory
from selfattn.chunked import chunked_attention

fused_attention = triton_attention.fused_attention
ROOT = Path(__file__).resolve().parents[2]
DEVICE = "cpu" if triton_attention.INTERPRETED else "cuda"
interpreter_only = pytest.mark.skipif(not triton_attention.INTERPRETED, reason="needs triton's interpreter")

# (B, h, n_q, n_k, d, is_causal, block_m, block_n): n from 1 to 300, mostly not a multiple of the block,
# n_q != n_k both ways, d in {16, 32, 64}, tiles of 16 to 128. Each runs forward and backward, in float32
# and float16. Kept small: the interpreter runs each program's loop in Python (about 10 ms per key tile
# on this machine), so the longest shapes have B·h = 2.
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
    (1, 2, 200, 200, 32, False, 64, 64),
    (1, 2, 255, 255, 64, True, 64, 64),
    (2, 1, 300, 300, 16, False, 64, 64),
    (1, 2, 300, 300, 32, True, 64, 64),
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


def _reference_lse(q: torch.Tensor, k: torch.Tensor, is_causal: bool, scale: float | None = None) -> torch.Tensor:
    s = q.double() @ k.double().transpose(-2, -1) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.logsumexp(-1)


def _sdpa_out_and_grads(q, k, v, d_out, is_causal):  # type: ignore[no-untyped-def]
    """SDPA's output and its gradients at q, k, v (in the inputs' dtype, on copies that need grad)."""
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=is_causal)
    return (out.detach(), *torch.autograd.grad(out, leaves, d_out))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["float32", "float16"])
@pytest.mark.parametrize(("B", "h", "n_q", "n_k", "d", "is_causal", "block_m", "block_n"), SHAPES)
def test_forward_and_backward_match_sdpa(B: int, h: int, n_q: int, n_k: int, d: int, is_causal: bool,
                                         block_m: int, block_n: int, dtype: torch.dtype) -> None:
    """out, lse, dq, dk, dv against SDPA on the same inputs; in float32 also out against chunked_attention.

    float32: within 1e-5 of SDPA in float32 (the kernel adds only rounding from another order of sums).
    float16: the reference is SDPA in float32 on the same float16 values; the kernel's error must stay
    within twice that of SDPA run in float16 itself (PyTorch's own half-precision attention), plus 1e-4.
    """
    q, k, v = (t.requires_grad_() for t in _inputs(B, h, n_q, n_k, d, dtype))
    d_out = torch.randn(B, h, n_q, d, generator=torch.Generator().manual_seed(1), dtype=dtype).to(DEVICE)
    out, lse = fused_attention(q, k, v, is_causal=is_causal, block_m=block_m, block_n=block_n)
    assert out.shape == (B, h, n_q, d) and out.dtype == dtype
    assert lse.shape == (B, h, n_q) and lse.dtype == torch.float32
    ours = (out.detach(), *torch.autograd.grad(out, (q, k, v), d_out))
    exact = _sdpa_out_and_grads(q.float(), k.float(), v.float(), d_out.float(), is_causal)
    lse_err = (lse.double() - _reference_lse(q.float(), k.float(), is_causal)).abs().max().item()
    assert lse_err < 1e-5, f"lse: max error {lse_err:.2e}"
    if dtype == torch.float32:
        chunked = chunked_attention(q.detach(), k.detach(), v.detach(), is_causal=is_causal,
                                    block_q=block_m, block_k=block_n)
        assert (out - chunked).abs().max().item() < 1e-5
        bounds = [1e-5] * 4
    else:
        half = _sdpa_out_and_grads(q, k, v, d_out, is_causal)  # SDPA in float16
        bounds = [2 * (x.float() - e).abs().max().item() + 1e-4 for x, e in zip(half, exact, strict=True)]
    for name, a, e, bound in zip(("out", "dq", "dk", "dv"), ours, exact, bounds, strict=True):
        err = (a.float() - e).abs().max().item()
        assert err < bound, f"{name}: max error {err:.2e}, bound {bound:.2e}"


def test_gradients_are_the_same_bits_on_every_run() -> None:
    """No atomics: each accumulator has one writer, so two runs agree bit for bit."""
    q, k, v = (t.requires_grad_() for t in _inputs(2, 2, 70, 90, 32))
    d_out = torch.randn(2, 2, 70, 32).to(DEVICE)

    def grads() -> tuple[torch.Tensor, ...]:
        out, _ = fused_attention(q, k, v, is_causal=True, block_m=32, block_n=16)
        return torch.autograd.grad(out, (q, k, v), d_out)

    assert all(torch.equal(a, b) for a, b in zip(grads(), grads(), strict=True))


@pytest.mark.parametrize("is_causal", [False, True])
def test_the_gradient_of_lse(is_causal: bool) -> None:
    """lse is differentiable too: d lse_i / d S_ij = P_ij, so D becomes D - d_lse (8.5.8)."""
    q, k, v = (t.requires_grad_() for t in _inputs(2, 2, 50, 70, 16))
    g_out, g_lse = torch.randn(2, 2, 50, 16).to(DEVICE), torch.randn(2, 2, 50).to(DEVICE)
    out, lse = fused_attention(q, k, v, is_causal=is_causal, block_m=16, block_n=32)
    ours = torch.autograd.grad((out * g_out).sum() + (lse * g_lse).sum(), (q, k, v))
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref_out = F.scaled_dot_product_attention(*leaves, is_causal=is_causal)
    s = leaves[0] @ leaves[1].transpose(-2, -1) / 4
    if is_causal:
        s = s.masked_fill(torch.ones(50, 70, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    ref = torch.autograd.grad((ref_out * g_out).sum() + (s.logsumexp(-1) * g_lse).sum(), leaves)
    for a, b in zip(ours, ref, strict=True):
        assert (a.double() - b).abs().max().item() < 1e-5


def test_scale_argument() -> None:
    q, k, v = (t.requires_grad_() for t in _inputs(1, 2, 40, 40, 16))
    out, lse = fused_attention(q, k, v, scale=0.3, block_m=16, block_n=16)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*leaves, scale=0.3)
    assert (out - ref).abs().max() < 1e-5
    assert (lse.double() - _reference_lse(q, k, False, scale=0.3)).abs().max() < 1e-5
    for a, b in zip(torch.autograd.grad(out.sum(), (q, k, v)), torch.autograd.grad(ref.sum(), leaves), strict=True):
        assert (a - b).abs().max() < 1e-5


@interpreter_only
def test_strided_inputs_are_read_in_place() -> None:
    """Transposed (B, n, h, d) -> (B, h, n, d), every other feature (d stride 2) and a broadcast k, v
    (head stride 0): the kernel reads the original storage (every load inside it) and matches SDPA,
    forward and backward."""
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(2, 40, 3, 3, 32, generator=g)  # (B, n, 3, h, 2·d)
    q, k, v = (t.transpose(1, 2)[..., ::2] for t in qkv.unbind(2))  # (B, h, n, d = 16), stride_d 2
    kv = torch.randn(2, 1, 40, 16, generator=g)
    cases = {"transposed, stride_d 2": (q, k, v),
             "head stride 0": (q, kv.expand(2, 3, 40, 16), kv.expand(2, 3, 40, 16))}
    inside = [(t.data_ptr(), t.data_ptr() + t.nbytes) for t in (qkv, kv)]
    for name, (a, b, c) in cases.items():
        with trace_memory() as log:
            out, _ = fused_attention(a, b, c, is_causal=True, block_m=16, block_n=16)
        loads = [x for x in log if x.kind == "load"]
        assert loads and all(any(lo <= x.addresses.min() and x.addresses.max() < hi for lo, hi in inside)
                             for x in loads), f"{name}: a load outside the inputs (a copy?)"
        ref = F.scaled_dot_product_attention(a, b, c, is_causal=True)
        assert (out - ref).abs().max() < 1e-5, name
    # the gradients flow back through the views to the original tensors
    base = qkv.clone().requires_grad_()
    a, b, c = (t.transpose(1, 2)[..., ::2] for t in base.unbind(2))
    fused_attention(a, b, c, is_causal=True, block_m=16, block_n=16)[0].sum().backward()
    base_ref = qkv.clone().requires_grad_()
    a, b, c = (t.transpose(1, 2)[..., ::2] for t in base_ref.unbind(2))
    F.scaled_dot_product_attention(a, b, c, is_causal=True).sum().backward()
    assert (base.grad - base_ref.grad).abs().max() < 1e-5


@pytest.mark.parametrize("shape", [(40, 16), (3, 40, 16), (2, 3, 2, 40, 16)])
def test_any_number_of_batch_dims(shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(DEVICE)
    out, lse = fused_attention(x, x, x, block_m=16, block_n=16)
    assert out.shape == shape and lse.shape == shape[:-1]
    assert (out - F.scaled_dot_product_attention(x, x, x)).abs().max() < 1e-5


@interpreter_only
def test_offsets_past_2_31_elements() -> None:
    """Offsets computed in int64: the third head of q, k and v starts at element 2³¹.

    The storage is 4 GiB of float16 that is only reserved, never touched (Linux maps a page when it is
    first written), so the test uses a few MiB. Heads are 2³⁰ elements apart: head 2's offset,
    2 · 2³⁰ = 2³¹, does not fit int32. With the offset computed in int32 (``bh = tl.program_id(1)``
    without ``.to(tl.int64)``, or the former ``Q += bh * n_q * D``) it wraps to -2³¹: the kernel would
    read 4 GiB before the tensor. ``trace_memory(loads_within=...)`` turns that read into an error before
    it happens, so the test fails cleanly instead of crashing or reading someone else's memory.
    """
    n, d, heads = 16, 16, 3
    big = torch.empty(2**31 + 3 * n * d, dtype=torch.float16)  # reserved, not touched
    g = torch.Generator().manual_seed(0)
    for h in range(heads):  # write only the elements that q, k, v use
        big[h * 2**30 : h * 2**30 + 3 * n * d] = torch.randn(3 * n * d, generator=g).half()
    q, k, v = (big.as_strided((1, heads, n, d), (0, 2**30, d, 1), i * n * d) for i in range(3))
    d_out = torch.randn(1, heads, n, d, generator=g).half()
    assert q.storage_offset() + 2 * 2**30 >= 2**31  # head 2 starts past int32's range
    leaves = [t.requires_grad_() for t in (q, k, v)]
    with trace_memory(loads_within=[(big.data_ptr(), big.data_ptr() + big.nbytes)]) as log:
        out, lse = fused_attention(*leaves, block_m=16, block_n=16)
    far = [a for a in log if a.kind == "load" and a.addresses.min() >= big.data_ptr() + 2 * 2**31]
    assert far, "no load reached head 2"
    ref = F.scaled_dot_product_attention(*(t.detach().float() for t in (q, k, v)))
    assert (out.float() - ref).abs().max() < 2e-3
    grads = torch.autograd.grad(out, leaves, d_out)  # the backward kernels read q, k, v there too
    exact = _sdpa_out_and_grads(*(t.detach().float() for t in (q, k, v)), d_out.float(), False)
    for a, e in zip(grads, exact[1:], strict=True):
        assert (a.float() - e).abs().max() < 1e-2


def test_the_kernels_compile_for_a_gpu() -> None:
    """What the interpreter cannot check: that triton's compiler accepts all three kernels (int64 offsets,
    tuple strides, the forward's two loops, the causal start of the dK/dV loop), here for an H100 (sm_90),
    which needs no GPU. Half-precision dot products become tensor-core mma instructions; "ieee" float32
    ones become FMAs on the CUDA cores."""
    from benchmarks.ptx import KERNELS, compile_kernels

    jobs = [{"kernel": kernel, "dtype": dtype, "precision": "ieee", "causal": causal}
            for kernel in KERNELS for dtype, causal in (("float16", True), ("float32", False))]
    rows = compile_kernels(jobs, arch=90)
    assert [(r["kernel"], r["dtype"]) for r in rows] == [(j["kernel"], j["dtype"]) for j in jobs]
    for row in rows:
        half = row["dtype"] == "float16"
        assert (row["mma"] > 0) == half and (half or row["fma"] > 0), row


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_on_the_gpu_forward_and_backward_match_sdpa(dtype: torch.dtype) -> None:
    """The compiled triton kernels on a GPU (make gpu-check): out, dq, dk, dv against SDPA in float32 on the
    same values, within twice the error of SDPA itself run in ``dtype`` (plus 1e-4), at a ragged n."""
    g = torch.Generator().manual_seed(0)
    q, k, v, d_out = (torch.randn(2, 4, 1000, 64, generator=g).to("cuda", dtype) for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    out, _ = fused_attention(q, k, v, is_causal=True)
    ours = (out.detach(), *torch.autograd.grad(out, (q, k, v), d_out))
    exact = _sdpa_out_and_grads(q.float(), k.float(), v.float(), d_out.float(), True)
    own = _sdpa_out_and_grads(q, k, v, d_out, True)  # SDPA in dtype
    for name, a, e, o in zip(("out", "dq", "dk", "dv"), ours, exact, own, strict=True):
        err, bound = (a.float() - e).abs().max().item(), 2 * (o.float() - e).abs().max().item() + 1e-4
        assert err < bound, f"{dtype} {name}: max error {err:.2e}, bound {bound:.2e}"


@pytest.mark.cuda
def test_on_the_gpu_offsets_past_2_31_elements() -> None:
    """The compiled triton kernels' int64 offsets: in a 4 GiB float16 buffer on the GPU, the third head of
    q, k and v starts at element 2³¹ (heads 2³⁰ elements apart), forward and backward."""
    n, d, heads = 64, 64, 3
    big = torch.empty(2**31 + 3 * n * d, dtype=torch.float16, device="cuda")
    g = torch.Generator().manual_seed(0)
    for h in range(heads):
        big[h * 2**30 : h * 2**30 + 3 * n * d] = torch.randn(3 * n * d, generator=g).half().cuda()
    q, k, v = (big.as_strided((1, heads, n, d), (0, 2**30, d, 1), i * n * d) for i in range(3))
    leaves = [t.requires_grad_() for t in (q, k, v)]
    d_out = torch.randn(1, heads, n, d, generator=g).half().cuda()
    out, _ = fused_attention(*leaves)
    ours = (out.detach(), *torch.autograd.grad(out, leaves, d_out))
    exact = _sdpa_out_and_grads(*(t.detach().float() for t in (q, k, v)), d_out.float(), False)
    for name, a, e in zip(("out", "dq", "dk", "dv"), ours, exact, strict=True):
        assert (a.float() - e).abs().max() < 1e-2, name


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
    assert dict(t.by_op) == {"clone": 4 * 2 * 32 * 16, "mm": 4 * (32 * 16 + 16 * 8 + 32 * 8),
                             "zeros_like": 4 * 32 * 16}  # per operator: what it read and wrote


@interpreter_only
@pytest.mark.parametrize(("n_q", "n_k", "d", "block_m", "block_n", "is_causal", "dtype"), [
    (100, 100, 16, 32, 32, False, torch.float32),
    (100, 100, 16, 32, 32, True, torch.float32),
    (64, 200, 32, 16, 64, True, torch.float16),
    (130, 50, 16, 64, 16, True, torch.float32),
    (70, 90, 16, 16, 128, True, torch.float16),
])
def test_fused_bytes_is_what_trace_memory_counts(n_q: int, n_k: int, d: int, block_m: int, block_n: int,
                                                 is_causal: bool, dtype: torch.dtype) -> None:
    q, k, v = _inputs(2, 1, n_q, n_k, d, dtype)
    with trace_memory() as log:
        fused_attention(q, k, v, is_causal=is_causal, block_m=block_m, block_n=block_n)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    assert moved_bytes(log) == fused_bytes(n_q, n_k, d, itemsize, block_m, block_n, is_causal, heads=2)


@interpreter_only
def test_trace_memory_refuses_a_load_outside_loads_within() -> None:
    q, k, v = _inputs(1, 1, 20, 20, 16)
    only_q = [(q.data_ptr(), q.data_ptr() + q.nbytes)]
    with pytest.raises(InterpreterError, match="IndexError.*outside loads_within"), trace_memory(only_q):
        fused_attention(q, k, v, block_m=16, block_n=16)  # it reads k: outside q
    with trace_memory([(t.data_ptr(), t.data_ptr() + t.nbytes) for t in (q, k, v)]) as log:
        fused_attention(q, k, v, block_m=16, block_n=16)  # stores are not checked
    assert moved_bytes(log, "load") == 4 * 16 * (20 + 2 * 2 * 20)  # q once; k, v once per query tile


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
