"""Bytes requested from global memory by the compute units, counted by running code (8.5.6).

These are the bytes that the code *asks for*, not the bytes that reach DRAM. On a GPU, every load
and store goes through an L2 cache shared by all SMs (40 MB on the A100, 50 MB on the H100): data
read a second time, or written and soon read back, may never leave it, so DRAM can see far fewer
bytes than are counted here. And DRAM moves whole sectors (32 bytes), so scattered accesses can move
more. The counts are the model of the FlashAttention paper (what an algorithm requests); Nsight
Compute's ``dram__bytes_read.sum`` and ``dram__bytes_write.sum`` measure what a GPU actually moved
(``make gpu-check`` records both).

Two counters, one per kind of implementation, and one formula:

- :func:`trace_memory` records every ``tl.load`` and ``tl.store`` that a Triton kernel executes in
  triton's interpreter (``TRITON_INTERPRET=1``): the program, and the addresses whose mask is true
  (masked-out elements move nothing), and the kernel's name. It wraps the interpreter's masked load
  and store and its launch, internals of triton 3.9, so it sees exactly what the kernel requests.
  Given ``loads_within``, it also refuses any load outside those bytes, before the load happens. A compiled
  kernel (on a GPU) cannot be traced this way.
- :class:`TorchTraffic` adds up, for eager PyTorch, the bytes of every low-level operator that runs
  (a ``TorchDispatchMode``: below autograd, before the CPU or CUDA kernel), in all and per operator
  (``by_op``). Each operator is a separate kernel: it reads each of its tensor arguments once and
  writes its results once. A view moves nothing, and an operator that takes only a shape
  (``empty``, ``zeros_like``) reads nothing.
- :func:`fused_bytes` is what :func:`trace_memory` counts for the forward kernel of
  ``selfattn.triton_attention``, as a formula (the tests hold the two equal), for shapes too large
  for the interpreter.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


@dataclass
class Access:
    """One ``tl.load`` or ``tl.store`` of one program: the addresses it moved."""

    kind: str  # "load" or "store"
    program: tuple[int, int, int]  # tl.program_id(0), (1), (2)
    addresses: Any  # numpy array of the unmasked byte addresses
    itemsize: int  # bytes per element
    kernel: str = ""  # the name of the kernel's function


@contextmanager
def trace_memory(loads_within: Sequence[tuple[int, int]] | None = None) -> Iterator[list[Access]]:
    """Record every load and store of the Triton kernels launched inside the block.

    ``loads_within``: byte ranges ``[lo, hi)``; a load with an address outside all of them raises
    ``IndexError`` before it happens (inside the interpreter's own error), so that a wrong offset
    fails cleanly instead of reading memory that belongs to something else.
    """
    import numpy as np
    from triton.runtime.interpreter import GridExecutor
    from triton.runtime.interpreter import interpreter_builder as builder

    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("trace_memory needs triton's interpreter: set TRITON_INTERPRET=1 before the first import of triton")
    log: list[Access] = []
    load, store, launch = builder.create_masked_load, builder.create_masked_store, GridExecutor.__call__
    kernel = [""]  # the kernel being run

    def record(kind: str, ptrs: Any, mask: Any) -> None:
        moved = ptrs.data[np.broadcast_to(mask.data, ptrs.data.shape)]  # the unmasked addresses
        if kind == "load" and loads_within is not None and moved.size:
            outside = ~np.any([(moved >= lo) & (moved < hi) for lo, hi in loads_within], axis=0)
            if outside.any():
                raise IndexError(f"trace_memory: a load of program {builder.grid_idx} reaches "
                                 f"{int(outside.sum())} address(es) outside loads_within, the first "
                                 f"at {int(moved[outside][0]):#x}")
        log.append(Access(kind, builder.grid_idx, moved, ptrs.get_element_ty().primitive_bitwidth // 8, kernel[0]))

    def traced_launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        kernel[0] = self.fn.__name__
        return launch(self, *args, **kwargs)

    def traced_load(ptrs: Any, mask: Any, *args: Any) -> Any:
        record("load", ptrs, mask)
        return load(ptrs, mask, *args)

    def traced_store(ptrs: Any, value: Any, mask: Any, *args: Any) -> Any:
        record("store", ptrs, mask)
        return store(ptrs, value, mask, *args)

    builder.create_masked_load, builder.create_masked_store = traced_load, traced_store
    GridExecutor.__call__ = traced_launch
    try:
        yield log
    finally:  # the instance attributes go: the class's own methods are back
        del builder.create_masked_load, builder.create_masked_store
        GridExecutor.__call__ = launch


def moved_bytes(log: list[Access], kind: str | None = None) -> int:
    """Bytes moved by the accesses of ``log`` (only loads or stores with ``kind``)."""
    return sum(a.addresses.size * a.itemsize for a in log if kind in (None, a.kind))


def fused_bytes(n_q: int, n_k: int, d: int, itemsize: int, block_m: int, block_n: int,
                is_causal: bool = False, heads: int = 1) -> int:
    """Bytes the forward kernel of ``selfattn.triton_attention`` requests (what trace_memory counts).

    Each of the ``heads`` (B·h) reads its q once and writes o and lse (float32) once; each query
    tile reads the k and v rows of the key tiles it visits (causal: up to its diagonal), except the
    rows past ``n_k``, which masked loads leave out.
    """
    keys = 0  # key rows read, summed over the query tiles
    for i0 in range(0, n_q, block_m):
        hi = min(i0 + block_m, n_k) if is_causal else n_k  # the loop's bound
        keys += min(-(-hi // block_n) * block_n, n_k)  # whole key tiles, masked at n_k
    return heads * (itemsize * d * (2 * n_q + 2 * keys) + 4 * n_q)


class TorchTraffic(TorchDispatchMode):
    """Bytes that eager PyTorch operators move to and from memory, one kernel per operator.

    ``read`` and ``written`` are the totals; ``by_op`` maps an operator's name (``bmm``, ``add_``)
    to the bytes it read and wrote.
    """

    def __init__(self) -> None:
        super().__init__()
        self.read = self.written = 0
        self.by_op: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        alias = [r.alias_info for r in func._schema.returns]  # does a result share an input's storage?
        view = bool(alias) and alias[0] is not None and not alias[0].is_write
        if not view and name != "_unsafe_view":
            read = written = 0
            if not name.startswith(("empty", "new_")) and not name.endswith("_like"):
                read = _nbytes((args, kwargs))
            if not name.startswith("empty") and name != "new_empty":
                written = _nbytes(out)
            self.read += read
            self.written += written
            self.by_op[name] += read + written
        return out


def _nbytes(tree: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tree_leaves(tree) if isinstance(t, torch.Tensor))


def torch_bytes(fn: Any, *args: Any) -> int:
    """Bytes that ``fn(*args)`` moves under :class:`TorchTraffic`, without autograd."""
    with torch.no_grad(), TorchTraffic() as traffic:
        fn(*args)
    return traffic.read + traffic.written
