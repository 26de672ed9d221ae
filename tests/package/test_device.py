"""Every path of the package that claims to work on CUDA, run on a device other than the CPU.

Each test takes the ``device`` fixture: ``fake`` runs it here under ``tools.testing.fake_cuda`` (a device that
reports ``meta``, holds CPU values and raises where a GPU would, when a CPU tensor meets a device tensor);
``cuda`` runs the same test on a real GPU (skipped without one; ``make gpu-check`` runs it). A tensor
left on the CPU by the package therefore fails here, in CI without a GPU.

Covered: ``functional``, ``masks``, ``self_attention``, ``multihead`` (both paths, ``from_torch``),
``chunked`` forward and backward, ``model`` (forward, backward, ``Block.from_torch``), ``generate``
(with and without the KV cache), ``checks.check_all``, every test marked ``cuda`` in tests/ and every
book block marked ``<!--pytest.mark.cuda-->``. What the fake device cannot see is listed in
``tools/testing/fake_cuda.py``. One test runs the paths that read no value on torch's own ``meta`` device, without
the harness, as a second opinion on its device rule.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from selfattn.checks import check_all
from selfattn.chunked import chunked_attention, keys_only_attention
from selfattn.functional import scaled_dot_product_attention as sdpa
from selfattn.masks import causal_mask, combine_masks, from_mha_masks, padding_mask, to_mha_mask
from selfattn.model import Block, CharLM, generate
from selfattn.multihead import MultiHeadSelfAttention
from selfattn.self_attention import SelfAttention
from tools.testing.codeblocks import page_chains, same_run
from tools.testing.fake_cuda import FakeCudaTensor, fake_cuda

ROOT = Path(__file__).resolve().parents[2]


class On:
    """Where a test runs: ``name`` is "cuda" for both; ``type`` is what ``tensor.device.type`` reports."""

    def __init__(self, kind: str) -> None:
        self.kind, self.name = kind, "cuda"
        self.type = "meta" if kind == "fake" else "cuda"
        self.atol = 0.0 if kind == "fake" else 1e-5  # the fake device computes on the CPU

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with fake_cuda() if self.kind == "fake" else contextlib.nullcontext():
            yield


@pytest.fixture(params=["fake", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request: pytest.FixtureRequest) -> On:
    return On(request.param)


def same(a: Tensor, b: Tensor, on: On, atol: float | None = None) -> bool:
    """``a`` (on the CPU) equals ``b`` (moved back from the device) within the device's tolerance."""
    tol = on.atol if atol is None else atol
    return torch.allclose(a, b.cpu(), atol=tol, rtol=tol, equal_nan=True)


def qkv(*batch: int, n_q: int = 5, n_k: int = 7, d: int = 4, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, n, d, generator=g) for n in (n_q, n_k, n_k))  # type: ignore[return-value]


# --- the harness itself ---------------------------------------------------------------------------------

def test_the_fake_device_refuses_a_cpu_tensor_where_a_gpu_would() -> None:
    with fake_cuda():
        x = torch.randn(2, 3, device="cuda")
        assert isinstance(x, FakeCudaTensor) and x.device.type == "meta"
        for bad in (lambda: torch.where(torch.ones(2, 3, dtype=torch.bool), x, x),
                    lambda: x @ torch.randn(3, 2), lambda: x.masked_fill(torch.ones(2, 3, dtype=torch.bool), 0.0),
                    lambda: torch.multinomial(x.softmax(-1), 1, generator=torch.Generator())):
            with pytest.raises(RuntimeError, match="device"):
                bad()
        # What a GPU allows: a CPU scalar, a copy across devices, CPU index tensors, reading values.
        assert (x * torch.tensor(2.0)).device.type == "meta"
        y = torch.empty(2, 3, device=x.device)
        y.copy_(torch.ones(2, 3))
        assert y.sum().item() == 6.0 and bool((y == 1).all()) and y.tolist() == [[1.0] * 3] * 2
        assert x[torch.tensor([1, 0])].device.type == "meta" and x.cpu().device.type == "cpu"


# Each meets a fake CUDA x (2, 3) with a CPU tensor v: a vector of 3, or of 1, or a 0-dim scalar.
MEETINGS = {
    "add": lambda x, v: x + v,
    "mul": lambda x, v: x * v,
    "matmul": lambda x, v: x @ v.expand(3),
    "where": lambda x, v: torch.where(v > 0, x, x),
    "masked_fill": lambda x, v: x.masked_fill(v > 0, 0.0),
}


def test_the_fake_device_refuses_a_cpu_vector_and_allows_only_a_cpu_scalar() -> None:
    """A GPU lets a CPU tensor meet a CUDA one only if it has 0 dims. A 1-D tensor is the likeliest to be left
    behind (a bias, a length vector, a row of a mask), and 1 element is not 0 dims: each is refused, as a matrix is
    above; a 0-dim CPU tensor is not."""
    with fake_cuda():
        x = torch.randn(2, 3, device="cuda")
        let_through = []
        for name, meet in MEETINGS.items():
            for v in (torch.randn(3), torch.randn(1)):
                try:
                    meet(x, v)
                except RuntimeError as err:
                    assert "meta (the fake CUDA) and cpu" in str(err), err
                else:
                    let_through.append(f"{name} with a CPU tensor of shape {tuple(v.shape)}")
        assert not let_through, let_through
        for name in ("add", "mul"):
            assert MEETINGS[name](x, torch.tensor(0.5)).device.type == "meta", name


def test_what_reads_no_values_runs_on_the_real_meta_device() -> None:
    """A second opinion, from torch's own device checks: the paths that never read a value run on ``meta``
    itself (no harness), and the bug the harness caught in checks.check_padding_invariance (a CPU mask in
    torch.where) is refused there too."""
    m = "meta"
    q, k, v = (torch.randn(2, 9, 4, device=m, requires_grad=True) for _ in range(3))
    bias = torch.zeros(9, 9, device=m, requires_grad=True)
    out = chunked_attention(q, k, v, torch.ones(2, 9, 9, dtype=torch.bool, device=m), is_causal=True,
                            block_q=4, block_k=3) + chunked_attention(q, k, v, bias, block_q=4, block_k=3)
    out.sum().backward()
    assert {t.grad.device.type for t in (q, k, v, bias)} == {"meta"}  # type: ignore[union-attr]
    assert keys_only_attention(q, k, v, block_k=4).device.type == "meta"
    mha = MultiHeadSelfAttention(8, 2, device=m)
    x = torch.randn(2, 5, 8, device=m)
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool, device=m)
    assert mha(x, mask, is_causal=True, need_weights=False)[0].device.type == "meta"
    lm = CharLM(11, 8, 16, 2, 2).to(m)
    assert lm(torch.zeros(2, 8, dtype=torch.long, device=m)).device.type == "meta"
    pad = ~(torch.arange(8) < torch.tensor([[8], [4]]))[:, None, :, None]  # the old code: on the CPU
    with pytest.raises(RuntimeError, match="device"):
        torch.where(pad, torch.randn(2, 3, 8, 4, device=m), torch.randn(2, 3, 8, 4, device=m))


# --- the package ----------------------------------------------------------------------------------------

def test_functional(device: On) -> None:
    q, k, v = qkv(2, 3)
    bool_mask = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.5
    bool_mask[0, 0, 2] = False  # a fully masked row
    float_mask = torch.randn(5, 7).masked_fill(~bool_mask[1, 0], -math.inf)
    for kw in ({}, {"is_causal": True}, {"attn_mask": bool_mask}, {"attn_mask": float_mask},
               {"attn_mask": bool_mask, "is_causal": True}):
        ref = sdpa(q, k, v, **kw)
        with device():
            dkw = {key: (t.cuda() if isinstance(t, Tensor) else t) for key, t in kw.items()}
            got = sdpa(q.cuda(), k.cuda(), v.cuda(), **dkw)
            assert {t.device.type for t in got} == {device.type}
        assert all(same(a, b, device) for a, b in zip(ref, got, strict=True)), kw
    with device():
        for dtype in (torch.float16, torch.bfloat16, torch.float64):
            out, w = sdpa(*(t.to("cuda", dtype) for t in (q, k, v)), bool_mask.cuda(), is_causal=True)
            assert out.dtype == w.dtype == dtype and out.device.type == device.type
            assert torch.isfinite(out).all() and float(w[0, :, 2].abs().sum()) == 0.0
        out, w = sdpa(q.cuda(), k.cuda(), v.cuda(), dropout_p=0.5)
        assert w.device.type == device.type
        qd, kd, vd = (t.cuda().requires_grad_() for t in (q, k, v))
        out, _ = sdpa(qd, kd, vd, bool_mask.cuda(), is_causal=True)
        out.sum().backward()
        assert all(t.grad is not None and t.grad.device.type == device.type and bool(torch.isfinite(t.grad).all())
                   for t in (qd, kd, vd))


def test_masks(device: On) -> None:
    lengths = torch.tensor([3, 0, 5])
    ref = combine_masks(padding_mask(lengths, 5)[:, None], causal_mask(5))
    ref_mha = from_mha_masks(torch.zeros(5, 5).masked_fill(~causal_mask(5), -math.inf),
                             to_mha_mask(padding_mask(lengths, 5)[:, 0]))
    with device():
        for align in ("top-left", "bottom-right"):
            m = causal_mask(3, 5, align=align, device="cuda")
            assert m.device.type == device.type and same(causal_mask(3, 5, align=align), m, device)
        got = combine_masks(padding_mask(lengths.cuda(), 5)[:, None], causal_mask(5, device="cuda"))
        pad = to_mha_mask(padding_mask(lengths.cuda(), 5)[:, 0])  # (B, n), True = padding
        bias = torch.zeros(5, 5, device="cuda").masked_fill(~causal_mask(5, device="cuda"), -math.inf)
        got_mha = from_mha_masks(bias, pad)
        both_bool = from_mha_masks(~causal_mask(5, device="cuda"), pad)
        assert got is not None and got_mha is not None and both_bool is not None
        assert {got.device.type, got_mha.device.type, both_bool.device.type} == {device.type}
        with pytest.raises(ValueError, match="every length"):
            padding_mask(torch.tensor([6], device="cuda"), 5)
    assert ref is not None and ref_mha is not None
    assert same(ref, got, device) and same(ref_mha, got_mha, device)


def test_self_attention(device: On) -> None:
    torch.manual_seed(0)
    attn = SelfAttention(d_model=6, d_k=4, d_v=3)
    x, mask = torch.randn(2, 5, 6), torch.rand(2, 5, 5) > 0.5
    ref = attn(x, mask, is_causal=True)
    with device():
        attn.to("cuda")
        got = attn(x.cuda(), mask.cuda(), is_causal=True)
        got[0].sum().backward()
        assert attn.w_q.weight.grad is not None and attn.w_q.weight.grad.device.type == device.type
    assert all(same(a, b, device) for a, b in zip(ref, got, strict=True))


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead(device: On, need_weights: bool) -> None:
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(8, 2)
    x = torch.randn(2, 5, 8)
    bool_mask = torch.rand(2, 1, 5, 5) > 0.4
    float_mask = torch.randn(2, 1, 5, 5)
    refs = [mha(x, m, is_causal=c, need_weights=need_weights)[0]
            for m in (None, bool_mask, float_mask) for c in (False, True)]
    with device():
        mha.to("cuda")
        xd = x.cuda()
        gots = [mha(xd, None if m is None else m.cuda(), is_causal=c, need_weights=need_weights)
                for m in (None, bool_mask, float_mask) for c in (False, True)]
        assert all(o.device.type == device.type and (w is None) != need_weights for o, w in gots)
        gots[3][0].sum().backward()
        new = MultiHeadSelfAttention(8, 2, device="cuda", dtype=torch.float64)
        assert {p.device.type for p in new.parameters()} == {device.type}
        torch_mha = nn.MultiheadAttention(8, 2, batch_first=True).to("cuda")
        ours = MultiHeadSelfAttention.from_torch(torch_mha)
        assert {p.device.type for p in ours.parameters()} == {device.type}
        want, _ = torch_mha(xd, xd, xd, need_weights=False)
        got, _ = ours(xd, need_weights=need_weights)
        assert torch.allclose(want.cpu(), got.cpu(), atol=1e-6)
    atol = 1e-6 if device.kind == "fake" else None  # the fake device's SDPA takes torch's math path
    assert all(same(r, g, device, atol) for r, (g, _) in zip(refs, gots, strict=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_chunked_forward_and_backward(device: On, dtype: torch.dtype) -> None:
    q, k, v = qkv(2, n_q=9, n_k=11)
    bool_mask = torch.rand(2, 9, 11, generator=torch.Generator().manual_seed(2)) > 0.5
    bool_mask[1, 4] = False
    float_mask = torch.randn(9, 11).masked_fill(~bool_mask[0], -math.inf)
    for mask, causal in ((None, False), (None, True), (bool_mask, True), (float_mask, False)):
        ins = [t.to(dtype).requires_grad_() for t in (q, k, v)]
        fm = float_mask.to(dtype).requires_grad_() if mask is float_mask else None
        ref = chunked_attention(*ins, fm if fm is not None else mask, is_causal=causal, block_q=4, block_k=3)
        ref_grads = torch.autograd.grad(ref.sum(), [*ins, *([fm] if fm is not None else [])])
        with device():
            dins = [t.detach().to("cuda").requires_grad_() for t in ins]
            dm = None if mask is None else mask.to("cuda", dtype if mask is float_mask else torch.bool)
            if fm is not None:
                dm = dm.requires_grad_()
            got = chunked_attention(*dins, dm, is_causal=causal, block_q=4, block_k=3)
            got_grads = torch.autograd.grad(got.sum(), [*dins, *([dm] if fm is not None else [])])
            assert got.dtype == dtype and {t.device.type for t in (got, *got_grads)} == {device.type}
        atol = 1e-2 if dtype == torch.bfloat16 and device.kind == "cuda" else None
        assert same(ref, got, device, atol) and all(
            same(a, b, device, atol) for a, b in zip(ref_grads, got_grads, strict=True))
    ref = keys_only_attention(q, k, v, block_k=4)
    with device():
        got = keys_only_attention(q.cuda(), k.cuda(), v.cuda(), block_k=4)
        assert got.device.type == device.type
    assert same(ref, got, device)


def test_model_forward_backward_and_from_torch(device: On) -> None:
    torch.manual_seed(0)
    model = CharLM(vocab_size=11, block_size=8, d_model=16, num_heads=2, num_layers=2)
    idx = torch.randint(0, 11, (2, 8))
    ref = model(idx)
    with device():
        model.to("cuda")
        logits = model(idx.cuda())
        F.cross_entropy(logits.flatten(0, 1), idx.cuda().flatten()).backward()
        assert model.tok.weight.grad is not None and model.tok.weight.grad.device.type == device.type
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True).to("cuda")
        block = Block.from_torch(layer)
        x = torch.randn(2, 5, 16, device="cuda")
        assert torch.allclose(block(x, causal_mask(5, device="cuda")).cpu(),
                              layer(x, src_mask=~causal_mask(5, device="cuda")).cpu(), atol=1e-5)
    assert same(ref, logits, device, 1e-5 if device.kind == "fake" else None)


def test_generate(device: On) -> None:
    torch.manual_seed(0)
    model = CharLM(vocab_size=11, block_size=6, d_model=16, num_heads=2, num_layers=2)
    idx = torch.randint(0, 11, (2, 3))
    greedy = generate(model, idx, 6, temperature=0)  # past block_size: the window slides
    with device():
        model.to("cuda")
        for use_cache in (True, False):
            got = generate(model, idx.cuda(), 6, temperature=0, use_cache=use_cache)
            assert got.device.type == device.type and torch.equal(got.cpu(), greedy)
        sampled = generate(model, idx.cuda(), 6, temperature=0.8, top_k=3)
        assert sampled.device.type == device.type and sampled.shape == (2, 9)
        with pytest.raises(ValueError, match="token ids"):
            generate(model, torch.tensor([[11]], device="cuda"), 1)


@pytest.mark.parametrize("fn", [F.scaled_dot_product_attention, chunked_attention],
                         ids=["torch SDPA", "chunked_attention"])
def test_check_all(device: On, fn: Callable[..., object]) -> None:
    """selfattn.functional's check_all on the device is tests/package/test_checks.py's CUDA-only test, run below."""
    both = fn is not F.scaled_dot_product_attention  # torch's SDPA refuses a mask with is_causal
    with device():
        results = check_all(fn, device="cuda", verbose=False, n=4, mask_with_causal=both)  # type: ignore[arg-type]
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


# --- every CUDA-only test and book block, on the fake device ---------------------------------------------

# The documented exceptions: a CUDA-only item whose code names one of these needs a real GPU kernel, not only
# device placement, and is not run on the fake device (a Triton kernel cannot launch on a FakeCudaTensor; chapter
# 8.5's own tests run it on the CPU under TRITON_INTERPRET=1). `make gpu-check` runs them on a GPU.
REAL_GPU_ONLY = {
    "triton": "a Triton kernel needs a real GPU (or TRITON_INTERPRET=1 on CPU tensors)",
    "sdpa_kernel": "which CUDA SDPA backend accepts an input is a property of the real CUDA kernels",
    "flex_attention": "FlexAttention accepts only real devices (CUDA, CPU, HPU, MPS), not the fake one",
    "nccl": "NCCL runs one process per real GPU; the fake device lives in one process (8.6, ring attention)",
}


def real_gpu_only(code: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.skip(reason=f"not on the fake device: {why}") for word, why in REAL_GPU_ONLY.items()
            if word in code]


def cuda_tests() -> list[pytest.param]:  # type: ignore[valid-type]
    """(module, function) of every test in tests/ decorated with ``pytest.mark.cuda``."""
    found = []
    for path in sorted((ROOT / "tests").glob("*/test_*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d) == "pytest.mark.cuda" for d in node.decorator_list):
                found.append(pytest.param(f"tests.{path.parent.name}.{path.stem}", node.name, id=f"{path.stem}::{node.name}",
                                          marks=real_gpu_only(ast.unparse(node))))
    return found


def cuda_blocks() -> list[pytest.param]:  # type: ignore[valid-type]
    """Every book block marked ``<!--pytest.mark.cuda-->``; an English block that makes the same run as a
    Chinese one (``tools.testing.codeblocks.same_run``: only comments and assertion messages differ) is not run twice."""
    found = [c for page in sorted((ROOT / "docs").glob("*.md")) for c in page_chains(page, ROOT)
             if "pytest.mark.cuda" in c.marks]
    zh = [c for c in found if not c.page.endswith(".en.md")]
    keep = [c for c in found if not c.page.endswith(".en.md") or not any(same_run(z, c) for z in zh)]
    return [pytest.param(c, id=f"{c.page}:{c.line}", marks=real_gpu_only(c.code)) for c in keep]


def test_the_cuda_only_items_are_found() -> None:
    """The lists below are not empty by mistake: the 2 tests and the block of 6.8 (its English twin shares its run)."""
    assert {"test_check_all_on_cuda", "test_cuda_matches_cpu"} <= {p.values[1] for p in cuda_tests()}
    assert "docs/06-verification.md" in {p.values[0].page for p in cuda_blocks()}


@pytest.mark.parametrize(("module", "name"), cuda_tests())
def test_cuda_only_test_on_the_fake_device(module: str, name: str) -> None:
    import importlib

    test = getattr(importlib.import_module(module), name)
    with fake_cuda():
        test()


@pytest.mark.parametrize("chain", cuda_blocks())
def test_cuda_only_block_on_the_fake_device(chain: object) -> None:
    out = io.StringIO()
    with fake_cuda(), contextlib.redirect_stdout(out):
        exec(compile(chain.code, chain.page, "exec"), {"__name__": "__main__"})  # type: ignore[attr-defined]
    if chain.expected is not None:  # type: ignore[attr-defined]
        assert out.getvalue() == chain.expected  # type: ignore[attr-defined]
