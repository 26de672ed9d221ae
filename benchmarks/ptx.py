"""Compile chapter 8.5's kernels for a GPU that need not be here, and count instructions (8.5.5).

Triton compiles a kernel to PTX, NVIDIA's assembly, for any target (``triton.compile`` with a
``GPUTarget``), without a GPU. In the PTX, an ``mma`` instruction (``mma.sync``, or
``wgmma.mma_async`` on sm_90) is a tensor-core matrix product, and ``fma.rn.f32`` a float32
multiply-add on the CUDA cores.

- :func:`dot_instructions` compiles the forward kernel of ``selfattn.triton_attention`` once per
  (dtype, precision) and counts both. The precision is the module's ``DOT_PRECISION``, set before
  compiling: the kernel's own ``"ieee"``, or ``"tf32"``.
- :func:`compile_kernels` compiles any of the module's three kernels (forward, ``_dkdv_kernel``,
  ``_dq_kernel``) for given dtypes and masks: what the interpreter cannot check, that the compiler
  accepts the code (types, int64 offsets, loops), is checked on a machine without a GPU.

Both run in a fresh Python with ``TRITON_INTERPRET=0``: triton picks the interpreter or the compiler
when it is first imported, and a process that runs kernels in the interpreter cannot compile them.
The tiles are small (d = 16, blocks of 16), so that each compilation takes about a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = (("float16", "ieee"), ("bfloat16", "ieee"), ("float32", "ieee"), ("float32", "tf32"))
KERNELS = ("_attention_kernel", "_dkdv_kernel", "_dq_kernel")


def dot_instructions(arch: int = 90, cases: tuple[tuple[str, str], ...] = CASES
                     ) -> list[dict[str, Any]]:
    """Compile the forward kernel for ``sm_<arch>`` once per (dtype, precision); count mma and fma.

    Returns one dict per case: ``dtype``, ``precision``, ``mma`` (tensor-core instructions) and
    ``fma`` (``fma.rn.f32``).
    """
    jobs = [{"kernel": "_attention_kernel", "dtype": dtype, "precision": precision,
             "causal": True} for dtype, precision in cases]
    return [{k: row[k] for k in ("dtype", "precision", "mma", "fma")}
            for row in compile_kernels(jobs, arch)]


def compile_kernels(jobs: list[dict[str, Any]], arch: int = 90) -> list[dict[str, Any]]:
    """Compile each job (``kernel``, ``dtype``, ``precision``, ``causal``) for ``sm_<arch>``.

    Returns the jobs with ``mma`` and ``fma`` counts added; raises RuntimeError if one fails.
    """
    env = {**os.environ, "TRITON_INTERPRET": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-m", "benchmarks.ptx", str(arch), json.dumps(jobs)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"compile_kernels: compiling failed:\n{run.stderr[-3000:]}")
    result: list[dict[str, Any]] = json.loads(run.stdout.splitlines()[-1])
    return result


def _example_args(kernel: Any, dtype: str) -> dict[str, Any]:
    """Arguments of the right types for each parameter of one of the module's kernels."""
    import torch

    x = torch.empty(1, 1, 64, 16, dtype=getattr(torch, dtype))
    args: dict[str, Any] = {}
    for name in kernel.arg_names:
        if name in ("LSE", "DELTA"):
            args[name] = torch.empty(64)  # float32 rows
        elif name.isupper() and name not in ("H", "D", "IS_CAUSAL", "BLOCK_M", "BLOCK_N"):
            args[name] = x  # a pointer: Q, K, V, O, DO, DK, DV, DQ
        elif name.startswith("s") and name != "scale":
            args[name] = x.stride()  # sq, sk, ... : four strides
        elif name in ("H", "n_q", "n_k"):
            args[name] = {"H": 2, "n_q": 100, "n_k": 100}[name]
        elif name == "scale":
            args[name] = 0.25
    return args


def _compile_and_count(arch: int, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """In the child: compile each job and count its instructions."""
    import selfattn.triton_attention as ta  # first: it must import triton in compiled mode

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    if ta.INTERPRETED:
        raise RuntimeError("benchmarks.ptx: needs TRITON_INTERPRET=0")
    out = []
    for job in jobs:
        ta.DOT_PRECISION = tl.constexpr(job["precision"])  # a global the kernels read
        for name in (*KERNELS, "_online_step", "_p_tile", "_tile"):
            getattr(ta, name).hash = None  # its cache key holds the globals' values: again
        kernel = getattr(ta, job["kernel"])
        args = _example_args(kernel, job["dtype"])
        meta = {"IS_CAUSAL": job["causal"], "D": 16, "BLOCK_M": 16, "BLOCK_N": 16}
        signature = {name: tuple(map(mangle_type, value)) if isinstance(value, tuple)
                     else mangle_type(value) for name, value in args.items()}
        signature |= dict.fromkeys(meta, "constexpr")
        compiled = triton.compile(ASTSource(kernel, signature, meta),
                                  target=GPUTarget("cuda", arch, 32))
        ptx = compiled.asm["ptx"]
        out.append({**job, "mma": ptx.count("mma.sync") + ptx.count("wgmma.mma_async"),
                    "fma": ptx.count("fma.rn.f32")})
    return out


if __name__ == "__main__":
    print(json.dumps(_compile_and_count(int(sys.argv[1]), json.loads(sys.argv[2]))))
