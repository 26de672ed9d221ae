"""Bytes moved between global memory and the compute units, counted by running code (8.5.6).

Two counters, one per kind of implementation:

- :func:`trace_memory` records every ``tl.load`` and ``tl.store`` that a Triton kernel executes in
  triton's interpreter (``TRITON_INTERPRET=1``): the program, and the addresses whose mask is true
  (masked-out elements move nothing). It wraps the interpreter's masked load and store, internals
  of triton 3.9, so it sees exactly what the kernel moves. A compiled kernel (on a GPU) cannot be
  traced this way.
- :class:`TorchTraffic` adds up, for eager PyTorch, the bytes of every low-level operator that runs
  (a ``TorchDispatchMode``: below autograd, before the CPU or CUDA kernel). Each operator is a
  separate kernel: it reads each of its tensor arguments once and writes its results once. A view
  moves nothing, and an operator that takes only a shape (``empty``, ``zeros_like``) reads nothing.
  Without fusion this is a lower bound: a real kernel may read more, never less.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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


@contextmanager
def trace_memory() -> Iterator[list[Access]]:
    """Record every load and store of the Triton kernels launched inside the block."""
    import numpy as np
    from triton.runtime.interpreter import interpreter_builder as builder

    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("trace_memory needs triton's interpreter: set TRITON_INTERPRET=1 before the first import of triton")
    log: list[Access] = []
    load, store = builder.create_masked_load, builder.create_masked_store

    def record(kind: str, ptrs: Any, mask: Any) -> None:
        moved = ptrs.data[np.broadcast_to(mask.data, ptrs.data.shape)]  # the unmasked addresses
        log.append(Access(kind, builder.grid_idx, moved, ptrs.get_element_ty().primitive_bitwidth // 8))

    def traced_load(ptrs: Any, mask: Any, *args: Any) -> Any:
        record("load", ptrs, mask)
        return load(ptrs, mask, *args)

    def traced_store(ptrs: Any, value: Any, mask: Any, *args: Any) -> Any:
        record("store", ptrs, mask)
        return store(ptrs, value, mask, *args)

    builder.create_masked_load, builder.create_masked_store = traced_load, traced_store
    try:
        yield log
    finally:  # the instance attributes go: the class's own methods are back
        del builder.create_masked_load, builder.create_masked_store


def moved_bytes(log: list[Access], kind: str | None = None) -> int:
    """Bytes moved by the accesses of ``log`` (only loads or stores with ``kind``)."""
    return sum(a.addresses.size * a.itemsize for a in log if kind in (None, a.kind))


class TorchTraffic(TorchDispatchMode):
    """Bytes that eager PyTorch operators move to and from memory, one kernel per operator."""

    def __init__(self) -> None:
        super().__init__()
        self.read = self.written = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        alias = [r.alias_info for r in func._schema.returns]  # does a result share an input's storage?
        view = bool(alias) and alias[0] is not None and not alias[0].is_write
        if not view and name != "_unsafe_view":
            if not name.startswith(("empty", "new_")) and not name.endswith("_like"):
                self.read += _nbytes((args, kwargs))
            if not name.startswith("empty") and name != "new_empty":
                self.written += _nbytes(out)
        return out


def _nbytes(tree: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tree_leaves(tree) if isinstance(t, torch.Tensor))


def torch_bytes(fn: Any, *args: Any) -> int:
    """Bytes that ``fn(*args)`` moves under :class:`TorchTraffic`, without autograd."""
    with torch.no_grad(), TorchTraffic() as traffic:
        fn(*args)
    return traffic.read + traffic.written
