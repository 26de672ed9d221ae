"""Which units run a kernel's dot products, without a GPU: compile for one and count (8.5.5).

Triton compiles a kernel to PTX, NVIDIA's assembly, for a GPU that need not be present
(``triton.compile`` with a ``GPUTarget``). In the PTX, an ``mma`` instruction (``mma.sync``, or
``wgmma.mma_async`` on sm_90) is a tensor-core matrix product, and ``fma.rn.f32`` a float32
multiply-add on the CUDA cores. :func:`dot_instructions` compiles the forward kernel of
``selfattn.triton_attention`` for each (dtype, precision) and counts both. The precision is the
module's ``DOT_PRECISION``, set before compiling: the kernel's own ``"ieee"``, or ``"tf32"``.

It runs in a fresh Python with ``TRITON_INTERPRET=0``: triton picks the interpreter or the compiler
when it is first imported, and a process that runs kernels in the interpreter cannot compile them.
The tiles are small (d = 16, blocks of 16), so that each compilation takes about a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = (("float16", "ieee"), ("bfloat16", "ieee"), ("float32", "ieee"), ("float32", "tf32"))


def dot_instructions(arch: int = 90, cases: tuple[tuple[str, str], ...] = CASES
                     ) -> list[dict[str, object]]:
    """Compile the forward kernel for ``sm_<arch>`` once per (dtype, precision); count mma and fma.

    Returns one dict per case: ``dtype``, ``precision``, ``mma`` (tensor-core instructions) and
    ``fma`` (``fma.rn.f32``).
    """
    env = {**os.environ, "TRITON_INTERPRET": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    run = subprocess.run([sys.executable, "-m", "benchmarks.ptx", str(arch), json.dumps(cases)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"dot_instructions: compiling failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.splitlines()[-1])


def _compile_and_count(arch: int, cases: list[tuple[str, str]]) -> list[dict[str, object]]:
    """In the child: compile ``_attention_kernel`` for each case and count its instructions."""
    import selfattn.triton_attention as ta  # first: it must import triton in compiled mode

    import torch
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    if ta.INTERPRETED:
        raise RuntimeError("benchmarks.ptx: needs TRITON_INTERPRET=0")
    rows = []
    for dtype, precision in cases:
        ta.DOT_PRECISION = tl.constexpr(precision)  # a global the kernel reads when compiled
        for fn in (ta._attention_kernel, ta._online_step, ta._tile):
            fn.hash = None  # its cache key holds the globals' values: compute it again
        x = torch.empty(1, 1, 64, 16, dtype=getattr(torch, dtype))
        args = {"Q": x, "K": x, "V": x, "O": x, "LSE": torch.empty(64), "sq": x.stride(),
                "sk": x.stride(), "sv": x.stride(), "so": x.stride(), "H": 2, "n_q": 100,
                "n_k": 100, "scale": 0.25}
        meta = {"IS_CAUSAL": True, "D": 16, "BLOCK_M": 16, "BLOCK_N": 16}
        signature = {name: tuple(map(mangle_type, value)) if isinstance(value, tuple)
                     else mangle_type(value) for name, value in args.items()}
        signature |= dict.fromkeys(meta, "constexpr")
        compiled = triton.compile(ASTSource(ta._attention_kernel, signature, meta),
                                  target=GPUTarget("cuda", arch, 32))
        ptx = compiled.asm["ptx"]
        rows.append({"dtype": dtype, "precision": precision,
                     "mma": ptx.count("mma.sync") + ptx.count("wgmma.mma_async"),
                     "fma": ptx.count("fma.rn.f32")})
    return rows


if __name__ == "__main__":
    print(json.dumps(_compile_and_count(int(sys.argv[1]), json.loads(sys.argv[2]))))
