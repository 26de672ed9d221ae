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
4. The slot for ``selfattn.triton_attention`` (chapter 8.5): its benchmark against the same flash
   numbers if the module exists, else ``"absent"`` (:func:`triton_benchmarks`).

Times are recorded, never asserted (CONTRIBUTING). The exit status is 0 when every part ran and pytest
passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import importlib.util
import json
import os
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
LIMITS = {"pytest": 180, "benchmarks": 75, "triton": 15}  # seconds; 270 in all, under the 5 minutes
PYTEST = [sys.executable, "-m", "pytest", "-m", "cuda", "-p", "no:cacheprovider", "-q", "-rfEs",
          f"--junitxml={JUNIT.relative_to(ROOT)}", "tests", "docs"]
# B, h, d_head; n; dtypes. Flash needs float16 or bfloat16.
BENCH_SHAPE = (1, 8, 64)
BENCH_N = (1024, 4096, 8192)
BENCH_DTYPES = ("float16", "bfloat16")
TRITON_MODULE = "selfattn.triton_attention"
TRITON_ENTRY_POINTS = ("triton_attention", "flash_attention", "attention")


def plan() -> dict[str, Any]:
    """What a run does, without running anything (``--plan``; tested on the CPU)."""
    return {
        "pytest": " ".join(PYTEST[1:]),
        "fully_masked_rows": "one fully masked row through every SDPA backend that accepts a mask",
        "benchmarks": {"shape (B, h, d_head)": BENCH_SHAPE, "n": BENCH_N, "dtypes": BENCH_DTYPES,
                       "paths": ["sdpa_flash", "sdpa_efficient", "sdpa_math", "selfattn.functional",
                                 "chunked_attention"]},
        "triton": triton_status(),
        "limits_s": LIMITS,
        "out": str(OUT.relative_to(ROOT)),
    }


def triton_status() -> str:
    """"absent" until chapter 8.5's module exists; then the entry point the benchmark calls."""
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


# --- 4. the slot for chapter 8.5's Triton kernel -------------------------------------------------------

def triton_benchmarks() -> dict[str, Any]:
    """Benchmark ``selfattn.triton_attention`` like the paths above, or record ``"absent"``.

    The hook for chapter 8.5: it calls the first of ``TRITON_ENTRY_POINTS`` the module defines, as
    ``fn(q, k, v, is_causal=causal)`` returning the output. If the kernel's name or signature differs,
    adapt ``TRITON_ENTRY_POINTS`` or this function (and its test in tests/package/test_device_gpu_check.py).
    """
    status = triton_status()
    if status == "absent":
        return {"status": "absent"}
    started = time.monotonic()
    try:
        module = importlib.import_module(TRITON_MODULE)
    except Exception as err:  # e.g. triton not installed: the module's own clear message
        return {"status": f"import failed: {type(err).__name__}: {err}"}
    entry = next((name for name in TRITON_ENTRY_POINTS if callable(getattr(module, name, None))), None)
    if entry is None:
        return {"status": f"present, but none of {TRITON_ENTRY_POINTS} is defined: adapt tools/measure/gpu_check.py"}
    kernel = getattr(module, entry)
    paths = {"sdpa_flash": attention_paths()["sdpa_flash"],
             f"triton:{entry}": lambda q, k, v, causal: kernel(q, k, v, is_causal=causal)}
    rows = bench_paths(paths, started + LIMITS["triton"])
    return {"status": "ran", "entry_point": entry, "rows": rows, "seconds": round(time.monotonic() - started, 1)}


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.measure.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--plan", action="store_true", help="print what a run does, run nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.plan:
        print(json.dumps(plan(), indent=2))
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
                     ("benchmarks", benchmarks), ("triton", triton_benchmarks)):
        report[name], ran = part(name, fn)
        ok &= ran
    ok &= report["pytest"].get("returncode") == 0
    report["seconds"] = round(time.monotonic() - started, 1)
    report["ok"] = bool(ok)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    counts = report["pytest"].get("counts", {})
    print(f"gpu-check: {'ok' if ok else 'FAILED'} in {report['seconds']} s; pytest {counts}; "
          f"triton {report['triton'].get('status')}; wrote {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
