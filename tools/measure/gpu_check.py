"""``make gpu-check``: everything that needs a real GPU, in one run that writes one JSON.

Usage::

    python -m tools.measure.gpu_check                 # on a machine with CUDA: reports/gpu-check.json
    python -m tools.measure.gpu_check --plan          # what it would run (works anywhere, runs nothing)

It needs a torch built with CUDA (``make gpu-check GPU_PYTHON=/path/to/python`` picks the interpreter).
Without CUDA it stops at once with exit status 2 and says so. On one GPU it stays within 5 minutes:
each part has its own time limit (``LIMITS``, 270 s in all). It runs, in this order:

1. ``pytest -m cuda`` over tests/ and docs/: every test and book block marked ``cuda`` (the root
   conftest.py skips them without CUDA), which includes each test of tests/package/test_device.py parametrized
   by device, with the device set to CUDA.
2. The fully masked row on every SDPA backend that accepts a mask: zeros or NaN (chapter 5 says the CUDA
   backends were not checked on the CPU-only machine where the book was written).
3. Benchmarks: SDPA's flash backend against SDPA's other backends, ``selfattn.functional`` (the explicit
   path) and ``chunked_attention``, forward and forward+backward, with CUDA events, and the peak memory.
4. Chapter 8.5's kernel, ``selfattn.triton_attention.fused_attention`` (:func:`triton_benchmarks`): a
   TFLOPS sweep over n, forward and backward, float16 and bfloat16, causal or not, against SDPA's flash
   backend (``SWEEP``; FLOPs as in Triton's tutorial, :func:`sweep_flops`). ``"absent"`` without the module.
5. DRAM bytes measured by Nsight Compute (:func:`nsight_dram`), if ``ncu`` is on the PATH: the counters
   ``NCU_METRICS`` for one forward pass of the explicit path, the kernel and SDPA's flash backend, at an n
   whose score matrix fits the L2 cache and one whose does not, beside the bytes chapter 8.5.6 counts.
6. Ring attention (chapter 8.6, ``selfattn.ring``) on NCCL, one process per GPU, with whatever GPUs exist
   (world size 1 on one GPU), in one spawn: the book's ring, causal or not, contiguous or zigzag, and
   PyTorch's ``context_parallel``, against SDPA in float64 (:func:`ring_check`). It lists the world sizes it
   skipped.

``python -m tools.measure.gpu_check --plan`` (``make gpu-check ARGS=--plan``) prints all of it, runs nothing.

Times are recorded, never asserted (CONTRIBUTING). The exit status is 0 when every part ran and pytest
passed, 1 otherwise. ``write_report`` writes the JSON; committed as ``benchmarks/results/gpu.json``, a
run is what section 8.5.9 prints (``benchmarks/gpu.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import importlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "reports" / "gpu-check.json"
JUNIT = ROOT / "reports" / "gpu-check-junit.xml"
NO_CUDA = 2
LIMITS = {"pytest": 150, "benchmarks": 25, "triton": 65, "nsight": 35, "ring": 20}  # s; 295 in all, < 5 min
PYTEST = [sys.executable, "-m", "pytest", "-m", "cuda", "-p", "no:cacheprovider", "-q", "-rfEs",
          f"--junitxml={JUNIT.relative_to(ROOT)}", "tests", "docs"]
# B, h, d_head; n; dtypes. Flash needs float16 or bfloat16.
BENCH_SHAPE = (1, 8, 64)
BENCH_N = (1024, 4096, 8192)
BENCH_DTYPES = ("float16", "bfloat16")
TRITON_MODULE = "selfattn.triton_attention"
# Chapter 8.5.9: the kernel's TFLOPS over n against SDPA's flash backend, as in Triton's tutorial.
SWEEP: dict[str, Any] = {"B": 4, "h": 16, "d": 64, "n": (1024, 2048, 4096, 8192),
                         "dtypes": ("float16", "bfloat16"), "causal": (False, True),
                         "modes": ("fwd", "bwd")}
SWEEP_FLOPS = ("fwd: 4·B·h·n²·d (two matrix products), halved when causal; "
               "bwd: 2.5 × fwd (2 for the backward, 0.5 for recomputing P), as Triton's tutorial counts")
# DRAM bytes by Nsight Compute, one forward pass each. (B, h, d), float16: the score matrix is 16 MiB
# at n = 1024 (it fits a 40-50 MB L2) and 256 MiB at n = 4096 (it does not).
NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
NCU_SHAPE = (1, 8, 64)
NCU_N = (1024, 4096)
NCU_PATHS = ("explicit", "fused_attention", "sdpa_flash")
NCU_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
# Chapter 8.6: (is_causal, zigzag, impl) on (B, h, n, d_head) with n = RING_N_PER_RANK * world size.
RING_CASES = ((False, False, "ring"), (True, False, "ring"), (True, True, "ring"), (True, True, "context_parallel"))
RING_SHAPE = (2, 4, 64)
RING_N_PER_RANK = 512
RING_WORLD_SIZES = (1, 2, 3, 4)  # the sizes the CPU tests cover; those other than the GPU count are skipped here


def plan() -> dict[str, Any]:
    """What a run does, without running anything (``--plan``; tested on the CPU)."""
    return {
        "pytest": " ".join(PYTEST[1:]),
        "fully_masked_rows": "one fully masked row through every SDPA backend that accepts a mask",
        "benchmarks": {"shape (B, h, d_head)": BENCH_SHAPE, "n": BENCH_N, "dtypes": BENCH_DTYPES,
                       "paths": ["sdpa_flash", "sdpa_efficient", "sdpa_math", "selfattn.functional",
                                 "chunked_attention"]},
        "triton": triton_plan(),
        "ring": {"backend": "nccl", "world_size": "torch.cuda.device_count(), one process per GPU",
                 "cases (is_causal, zigzag, impl)": RING_CASES, "shape (B, h, d_head)": RING_SHAPE,
                 "n": f"{RING_N_PER_RANK} per rank", "skips": "the world sizes of 1-4 other than the GPU count"},
        "limits_s": LIMITS,
        "out": str(OUT.relative_to(ROOT)),
    }


def triton_plan() -> dict[str, Any]:
    """Parts 4 and 5 of the plan: the TFLOPS sweep and the Nsight Compute counters."""
    return {
        "module": triton_status(),
        "sweep": {**SWEEP, "paths": ["fused_attention", "sdpa_flash"], "flops": SWEEP_FLOPS},
        "nsight": {"metrics": list(NCU_METRICS), "ncu": shutil.which("ncu") or "not on the PATH: skipped",
                   "shape (B, h, d)": NCU_SHAPE, "n": NCU_N, "dtype": "float16", "paths": list(NCU_PATHS),
                   "beside": "the bytes counted as in chapter 8.5.6 (benchmarks/traffic.py)"},
    }


def triton_status() -> str:
    """"absent" until chapter 8.5's module exists; then where it is."""
    try:
        spec = importlib.util.find_spec(TRITON_MODULE)
    except ImportError:
        spec = None
    if spec is None:
        return "absent"
    return f"present ({spec.origin})"


# --- 1. the CUDA-only tests and blocks ----------------------------------------------------------------

def run_pytest() -> dict[str, Any]:
    JUNIT.parent.mkdir(parents=True, exist_ok=True)
    JUNIT.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "SELFATTN_NO_SITE": "1"}
    started = time.monotonic()
    try:
        proc = subprocess.run(PYTEST, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=LIMITS["pytest"])
        rc, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        rc, output = -1, f"timed out after {LIMITS['pytest']} s\n{err.stdout or ''}"
    result: dict[str, Any] = {"command": " ".join(PYTEST[1:]), "returncode": rc,
                              "seconds": round(time.monotonic() - started, 1),
                              "tail": output[-4000:]}
    if JUNIT.exists():
        tests = []
        for case in ET.parse(JUNIT).getroot().iter("testcase"):
            outcome = "passed"
            for tag in ("failure", "error", "skipped"):
                if case.find(tag) is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
            tests.append({"id": f"{case.get('classname')}::{case.get('name')}", "outcome": outcome,
                          "seconds": float(case.get("time") or 0)})
        result["tests"] = tests
        result["counts"] = {k: sum(t["outcome"] == k for t in tests)
                            for k in ("passed", "failed", "error", "skipped")}
    return result


# --- 2. fully masked rows on CUDA ----------------------------------------------------------------------

def fully_masked_rows() -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out: dict[str, Any] = {}
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float16):
        q, k, v = (torch.randn(1, 2, 8, 64, generator=g).to("cuda", dtype) for _ in range(3))
        mask = torch.ones(8, 8, dtype=torch.bool, device="cuda").tril()
        mask[3] = False  # query 3 may attend to nothing
        for backend in (SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
                        SDPBackend.FLASH_ATTENTION):
            key = f"{backend.name.lower()} {str(dtype).removeprefix('torch.')}"
            qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
            try:
                with sdpa_kernel(backend):
                    o = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mask)
                    o.sum().backward()
            except RuntimeError as err:
                out[key] = {"ran": False, "why": str(err).splitlines()[0][:200]}
                continue
            row = o[..., 3, :]
            out[key] = {"ran": True, "row_is_zero": bool((row == 0).all()), "row_has_nan": bool(row.isnan().any()),
                        "grads_finite": all(bool(t.grad.isfinite().all()) for t in (qq, kk, vv))}
    return out


# --- 3. benchmarks against SDPA's flash backend --------------------------------------------------------

def cuda_ms(fn: Callable[[], object], budget_s: float = 0.2) -> float:
    """Median milliseconds per call, with CUDA events, after a warm-up."""
    import torch

    fn()
    torch.cuda.synchronize()
    times: list[float] = []
    deadline = time.monotonic() + budget_s
    while len(times) < 5 or (time.monotonic() < deadline and len(times) < 50):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def peak_mib(fn: Callable[[], object]) -> float:
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def attention_paths() -> dict[str, Callable[..., Any]]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from selfattn.chunked import chunked_attention
    from selfattn.functional import scaled_dot_product_attention

    def sdpa_with(backend: Any) -> Callable[..., Any]:
        def fn(q: Any, k: Any, v: Any, causal: bool) -> Any:
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return fn

    return {
        "sdpa_flash": sdpa_with(SDPBackend.FLASH_ATTENTION),
        "sdpa_efficient": sdpa_with(SDPBackend.EFFICIENT_ATTENTION),
        "sdpa_math": sdpa_with(SDPBackend.MATH),
        "selfattn.functional": lambda q, k, v, causal: scaled_dot_product_attention(q, k, v, is_causal=causal)[0],
        "chunked_attention": lambda q, k, v, causal: chunked_attention(q, k, v, is_causal=causal),
    }


def measure(fn: Callable[..., Any], q: Any, k: Any, v: Any, causal: bool) -> dict[str, Any]:
    """Forward and forward+backward times and peak memory of one path on one shape; its output."""
    row: dict[str, Any] = {"out": fn(q, k, v, causal)}
    row["forward_ms"] = cuda_ms(lambda: fn(q, k, v, causal))
    row["forward_peak_mib"] = peak_mib(lambda: fn(q, k, v, causal))
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))

    def step() -> None:
        fn(qg, kg, vg, causal).sum().backward()

    row["forward_backward_ms"] = cuda_ms(step)
    row["forward_backward_peak_mib"] = peak_mib(step)
    return row


def bench_paths(paths: dict[str, Callable[..., Any]], deadline: float | None) -> list[dict[str, Any]]:
    """Every path on every shape; the flash output is the reference for ``max_abs_diff_vs_flash``.

    After ``deadline`` (a ``time.monotonic()`` value; None: none) the remaining rows are skipped.
    """
    import torch

    rows: list[dict[str, Any]] = []
    b, h, d = BENCH_SHAPE
    for dtype_name in BENCH_DTYPES:
        dtype = getattr(torch, dtype_name)
        for n in BENCH_N:
            for causal in (False, True):
                g = torch.Generator().manual_seed(n)
                q, k, v = (torch.randn(b, h, n, d, generator=g).to("cuda", dtype) for _ in range(3))
                ref = None
                for name, fn in paths.items():
                    row: dict[str, Any] = {"path": name, "dtype": dtype_name, "n": n, "causal": causal}
                    rows.append(row)
                    if deadline is not None and time.monotonic() > deadline:
                        row["skipped"] = "time limit"
                        continue
                    try:
                        got = measure(fn, q, k, v, causal)
                    except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                        row["error"] = str(err).splitlines()[0][:200]
                        continue
                    finally:
                        torch.cuda.empty_cache()
                    out = got.pop("out")
                    ref = out if ref is None and name == "sdpa_flash" else ref
                    if ref is not None:
                        row["max_abs_diff_vs_flash"] = float((out.float() - ref.float()).abs().max())
                    row.update(got)
    for row in rows:  # the ratio to flash in the same run, same shape
        flash = next((r for r in rows if r["path"] == "sdpa_flash" and
                      all(r[k] == row[k] for k in ("dtype", "n", "causal"))), None)
        if flash and "forward_ms" in flash and "forward_ms" in row:
            row["forward_vs_flash"] = row["forward_ms"] / flash["forward_ms"]
    return rows


def benchmarks() -> dict[str, Any]:
    started = time.monotonic()
    rows = bench_paths(attention_paths(), started + LIMITS["benchmarks"])
    return {"shape (B, h, d_head)": BENCH_SHAPE, "rows": rows, "seconds": round(time.monotonic() - started, 1)}


# --- 4. chapter 8.5's Triton kernel: TFLOPS against SDPA's flash backend ----------------------------

def sweep_flops(B: int, h: int, n: int, d: int, causal: bool, mode: str) -> float:
    """The FLOPs Triton's tutorial counts for one call: see ``SWEEP_FLOPS``."""
    flops = 4.0 * B * h * n * n * d * (0.5 if causal else 1.0)
    return flops * (2.5 if mode == "bwd" else 1.0)


def sweep_paths(fused: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """The two contenders, each ``fn(q, k, v, causal) -> out``."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def flash(q: Any, k: Any, v: Any, causal: bool) -> Any:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return {"fused_attention": lambda q, k, v, causal: fused(q, k, v, is_causal=causal)[0],
            "sdpa_flash": flash}


def triton_sweep(fused: Callable[..., Any], device: str = "cuda", deadline: float | None = None,
                 sweep: dict[str, Any] = SWEEP, timer: Callable[..., float] | None = None) -> dict[str, Any]:
    """Milliseconds and TFLOPS of every (mode, dtype, causal, n, path); rows after ``deadline`` are skipped.

    ``bwd`` times ``out.backward(d_out)`` alone, on a graph built once (``retain_graph``).
    """
    import torch

    timer = timer or cuda_ms
    paths = sweep_paths(fused)
    B, h, d = sweep["B"], sweep["h"], sweep["d"]
    rows: list[dict[str, Any]] = []
    for mode in sweep["modes"]:
        for dtype_name in sweep["dtypes"]:
            for causal in sweep["causal"]:
                for n in sweep["n"]:
                    g = torch.Generator().manual_seed(n)
                    q, k, v = (torch.randn(B, h, n, d, generator=g).to(device, getattr(torch, dtype_name))
                               for _ in range(3))
                    for name, fn in paths.items():
                        row: dict[str, Any] = {"mode": mode, "dtype": dtype_name, "causal": causal, "n": n,
                                               "provider": name}
                        rows.append(row)
                        if deadline is not None and time.monotonic() > deadline:
                            row["skipped"] = "time limit"
                            continue
                        try:
                            row["ms"] = _time_one(fn, q, k, v, causal, mode, timer)
                        except (RuntimeError, torch.cuda.OutOfMemoryError) as err:
                            row["error"] = str(err).splitlines()[0][:200]
                            continue
                        finally:
                            if device == "cuda":
                                torch.cuda.empty_cache()
                        row["tflops"] = sweep_flops(B, h, n, d, causal, mode) / (row["ms"] * 1e-3) / 1e12
    return {"shape": {"B": B, "h": h, "d": d}, "flops": SWEEP_FLOPS, "rows": rows}


def _time_one(fn: Callable[..., Any], q: Any, k: Any, v: Any, causal: bool, mode: str,
              timer: Callable[..., float]) -> float:
    import torch

    if mode == "fwd":
        with torch.no_grad():
            return timer(lambda: fn(q, k, v, causal))
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    out = fn(qg, kg, vg, causal)
    d_out = torch.randn_like(out)
    return timer(lambda: out.backward(d_out, retain_graph=True))


def triton_benchmarks() -> dict[str, Any]:
    """Part 4: the sweep of ``fused_attention``, or ``"absent"`` without chapter 8.5's module."""
    status = triton_status()
    if status == "absent":
        return {"status": "absent"}
    started = time.monotonic()
    try:
        module = importlib.import_module(TRITON_MODULE)
    except Exception as err:  # e.g. triton not installed: the module's own clear message
        return {"status": f"import failed: {type(err).__name__}: {err}"}
    sweep = triton_sweep(module.fused_attention, "cuda", started + LIMITS["triton"])
    return {"status": "ran", "sweep": sweep, "seconds": round(time.monotonic() - started, 1)}


# --- 5. DRAM bytes by Nsight Compute, beside the bytes counted in chapter 8.5.6 -----------------------

def ncu_paths() -> dict[str, Callable[..., Any]]:
    """The paths Nsight Compute profiles, each ``fn(q, k, v) -> out`` (not causal)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from selfattn.functional import scaled_dot_product_attention

    def flash(q: Any, k: Any, v: Any) -> Any:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)

    def fused(q: Any, k: Any, v: Any) -> Any:
        return importlib.import_module(TRITON_MODULE).fused_attention(q, k, v)[0]

    return {"explicit": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
            "fused_attention": fused, "sdpa_flash": flash}


def ncu_inputs(n: int, device: str) -> tuple[Any, Any, Any]:
    import torch

    B, h, d = NCU_SHAPE
    g = torch.Generator().manual_seed(n)
    return tuple(torch.randn(B, h, n, d, generator=g).to(device, torch.float16) for _ in range(3))  # type: ignore[return-value]


def ncu_case(path: str, n: int, device: str = "cuda") -> None:
    """The child that ``ncu`` runs: one warm-up call, then one call between profiler start and stop."""
    import torch

    fn = ncu_paths()[path]
    q, k, v = ncu_inputs(n, device)
    fn(q, k, v)  # compiles and allocates outside the profiled range
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    fn(q, k, v)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def counted_bytes(path: str, n: int, device: str = "cuda") -> int | None:
    """What chapter 8.5.6 counts for one forward pass: per operator, or the kernel's formula; None for
    SDPA's flash backend, whose kernel the counters cannot see."""
    from benchmarks.traffic import fused_bytes, torch_bytes

    B, h, d = NCU_SHAPE
    if path == "fused_attention":
        return fused_bytes(n, n, d, 2, 64, 64, heads=B * h)  # the default blocks of fused_attention
    if path == "explicit":
        return torch_bytes(ncu_paths()["explicit"], *ncu_inputs(n, device))
    return None


def parse_ncu_csv(text: str) -> dict[str, Any]:
    """Sum each metric of ``NCU_METRICS`` over the kernels in ``ncu --csv`` output, in bytes."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    sums: dict[str, float] = {}
    kernels: set[str] = set()
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name, value = row.get("Metric Name"), (row.get("Metric Value") or "").replace(",", "")
        if name in NCU_METRICS and value:
            sums[name] = sums.get(name, 0.0) + float(value) * NCU_UNITS.get(row.get("Metric Unit") or "byte", 1)
            kernels.add(row.get("ID") or "")
    return {**sums, "kernels": len(kernels)} if sums else {}


def nsight_dram(deadline: float | None = None) -> dict[str, Any]:
    """Part 5: ``ncu`` runs :func:`ncu_case` once per (n, path); DRAM bytes beside the counted bytes."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"status": "ncu not found: skipped", "metrics": list(NCU_METRICS)}
    if deadline is None:
        deadline = time.monotonic() + LIMITS["nsight"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    B, h, d = NCU_SHAPE
    rows: list[dict[str, Any]] = []
    for n in NCU_N:
        for path in NCU_PATHS:
            row: dict[str, Any] = {"path": path, "n": n, "dtype": "float16",
                                   "floor_bytes": 4 * B * h * n * d * 2}  # read q, k, v; write o
            rows.append(row)
            left = deadline - time.monotonic()
            if left < 5:
                row["skipped"] = "time limit"
                continue
            row["counted_bytes"] = counted_bytes(path, n)
            cmd = [ncu, "--profile-from-start", "off", "--metrics", ",".join(NCU_METRICS), "--csv",
                   "--print-units", "base", sys.executable, "-m", "tools.measure.gpu_check", "--ncu-case", path, str(n)]
            try:
                proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=left)
            except subprocess.TimeoutExpired:
                row["error"] = "timed out"
                continue
            found = parse_ncu_csv(proc.stdout)
            if proc.returncode != 0 or not found:
                row["error"] = f"ncu exit status {proc.returncode}, metrics found: {sorted(found)}"
                row["tail"] = (proc.stdout + proc.stderr)[-1500:]
                continue
            row.update({"dram_read_bytes": found[NCU_METRICS[0]], "dram_write_bytes": found[NCU_METRICS[1]],
                        "dram_bytes": found[NCU_METRICS[0]] + found[NCU_METRICS[1]],
                        "kernels": found["kernels"]})
    return {"status": "ran", "ncu": ncu, "metrics": list(NCU_METRICS), "shape (B, h, d)": NCU_SHAPE,
            "rows": rows}


# --- 6. ring attention over NCCL (chapter 8.6) -----------------------------------------------------------

def _ring_cases(q: Any, k: Any, v: Any, d_out: Any, cases: tuple[tuple[bool, bool, str], ...]) -> list[Any]:
    """In each spawned process: every case on this rank's shards (``selfattn.ring._run_job``), or its error."""
    from selfattn import ring

    rows: list[Any] = []
    for is_causal, zigzag, impl in cases:
        try:
            rows.append(ring._run_job(q, k, v, d_out, is_causal, zigzag, impl))
        except Exception as err:  # e.g. context_parallel refusing a shape; the other cases still run
            rows.append(f"{type(err).__name__}: {str(err).splitlines()[0][:200]}")
    return rows


def ring_check(backend: str = "nccl", world_size: int | None = None) -> dict[str, Any]:
    """Chapter 8.6's ring on every GPU (one process each) in one spawn: the errors against SDPA in float64.

    ``backend="gloo"`` and a ``world_size`` run the same code on the CPU (tests/package/test_device_gpu_check.py),
    where ``context_parallel`` fails as the chapter shows.
    """
    import torch
    import torch.nn.functional as F

    from selfattn import ring

    started = time.monotonic()
    world = torch.cuda.device_count() if world_size is None else world_size
    n = RING_N_PER_RANK * world
    b, h, d = RING_SHAPE
    g = torch.Generator().manual_seed(0)
    q, k, v, d_out = (torch.randn(b, h, n, d, generator=g) for _ in range(4))
    got = ring.spawn(_ring_cases, world, q, k, v, d_out, RING_CASES, backend=backend, timeout=LIMITS["ring"])
    rows: list[dict[str, Any]] = []
    for i, (is_causal, zigzag, impl) in enumerate(RING_CASES):
        row: dict[str, Any] = {"is_causal": is_causal, "zigzag": zigzag, "impl": impl, "world_size": world, "n": n}
        rows.append(row)
        per_rank = [got[r][i] for r in range(world)]
        if errors := [e for e in per_rank if isinstance(e, str)]:
            row["error"] = errors[0]
            continue
        out = ring.unshard([r[0] for r in per_rank], zigzag=zigzag)
        grads = [ring.unshard([r[1][j] for r in per_rank], zigzag=zigzag) for j in range(3)]
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        ref = F.scaled_dot_product_attention(q64, k64, v64, is_causal=is_causal)
        ref.backward(d_out.double())
        row["max_abs_diff_out"] = float((out - ref.detach()).abs().max())
        row["max_abs_diff_grads"] = max(float((x - t.grad).abs().max()) for x, t in zip(grads, (q64, k64, v64),
                                                                                     strict=True))
    skipped = [f"world size {p}: needs {p} GPUs, this machine has {world}" for p in RING_WORLD_SIZES if p != world]
    return {"backend": backend, "world_size": world, "rows": rows, "skipped": skipped,
            "seconds": round(time.monotonic() - started, 1)}


# --- the run -------------------------------------------------------------------------------------------

def cuda_or_exit() -> Any:
    try:
        import torch
    except ImportError:
        sys.exit("gpu-check: torch is not installed in this Python "
                 f"({sys.executable}); use make gpu-check GPU_PYTHON=...")
    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}, built with CUDA {torch.version.cuda}"
        print(f"gpu-check: needs a CUDA GPU, and torch.cuda.is_available() is False here ({build}). "
              "Nothing was run and reports/gpu-check.json was not written. Run it on a machine with a GPU "
              "and a CUDA build of torch (make gpu-check GPU_PYTHON=/path/to/python).", file=sys.stderr)
        sys.exit(NO_CUDA)
    return torch


def part(name: str, fn: Callable[[], Any]) -> tuple[Any, bool]:
    started = time.monotonic()
    try:
        value = fn()
        return value, True
    except Exception as err:
        return {"error": f"{type(err).__name__}: {err}", "seconds": round(time.monotonic() - started, 1)}, False
    finally:
        print(f"gpu-check: {name} done in {time.monotonic() - started:.1f} s", file=sys.stderr)


def write_report(report: dict[str, Any], path: Path) -> None:
    """The one JSON file of a run (tuples become lists, anything else odd a string)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.measure.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--plan", action="store_true", help="print what a run does, run nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--ncu-case", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)  # ncu's child
    args = parser.parse_args(argv)
    if args.plan:
        print(json.dumps(plan(), indent=2, default=str, ensure_ascii=False))
        return 0
    if args.ncu_case:
        sys.path.insert(0, str(ROOT / "src"))
        ncu_case(args.ncu_case[0], int(args.ncu_case[1]))
        return 0
    torch = cuda_or_exit()
    sys.path.insert(0, str(ROOT / "src"))  # the tangled package, as the Makefile's PYTHONPATH gives it
    started = time.monotonic()
    report: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
    }
    ok = True
    for name, fn in (("pytest", run_pytest), ("fully_masked_rows", fully_masked_rows),
                     ("benchmarks", benchmarks), ("triton", triton_benchmarks), ("nsight", nsight_dram),
                     ("ring", ring_check)):
        report[name], ran = part(name, fn)
        ok &= ran
    ok &= report["pytest"].get("returncode") == 0
    report["seconds"] = round(time.monotonic() - started, 1)
    report["ok"] = bool(ok)
    write_report(report, args.out)
    counts = report["pytest"].get("counts", {})
    print(f"gpu-check: {'ok' if ok else 'FAILED'} in {report['seconds']} s; pytest {counts}; "
          f"triton {report['triton'].get('status')}; ring on {report['ring'].get('world_size')} GPU(s); "
          f"wrote {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
