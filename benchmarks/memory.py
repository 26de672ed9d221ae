"""Peak extra memory of one attention path, measured in a fresh subprocess.

Each configuration runs in its own process, because a high-water mark only grows. The
process is forked from a server (``multiprocessing``'s forkserver) that has imported torch
and selfattn but has run nothing, so a measurement does not pay for importing torch again,
and nothing an earlier measurement allocated is in it. The child builds the inputs, warms
the path up at a tiny size, resets the
kernel's peak-RSS counter (``echo 5 > /proc/self/clear_refs``) and reads the current
RSS (the baseline), runs the path once at full size and reads the peak (``VmHWM`` in
``/proc/self/status``). The difference is the peak extra memory of that path, its
output and gradients included.

Why not ``resource.getrusage(...).ru_maxrss``? It is the high-water mark of the
*process*, and Linux carries it across ``exec``: a child started from a parent that
once held 4 GiB starts with ``ru_maxrss`` = 4 GiB, so the delta reads 0. ``ru_maxrss``
is used only where ``clear_refs`` is not available (then the child must be started
from a small parent).

By hand, in a new interpreter (the same measurement)::

    python -m benchmarks.memory PATH N HEADS D_HEAD MODE THREADS
"""

from __future__ import annotations

import functools
import json
import multiprocessing
from multiprocessing.connection import Connection
import resource
import sys
from collections.abc import Callable

import torch
from torch import Tensor

PATHS = ("explicit", "sdpa", "chunked", "keys_only")
MODES = ("fwd", "fwd+bwd")


def attention_fn(path: str) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    """The attention function of one path: (q, k, v) -> output, all (B, h, n, d)."""
    import torch.nn.functional as F

    from selfattn.chunked import chunked_attention, keys_only_attention
    from selfattn.functional import scaled_dot_product_attention

    fns: dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]] = {
        "explicit": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        "chunked": lambda q, k, v: chunked_attention(q, k, v),
        "keys_only": lambda q, k, v: keys_only_attention(q, k, v),
    }
    if path not in fns:
        raise ValueError(f"unknown path {path!r}; expected one of {sorted(fns)}")
    return fns[path]


def _status_mib(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> float:
    """Reset the peak RSS if the kernel allows it; return the baseline in MiB."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # 5: reset the peak resident set size (Linux >= 4.0)
        return _status_mib("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _peak() -> float:
    try:
        return _status_mib("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(path: str, n: int, heads: int, d: int, mode: str) -> float:
    """Run in the child: the peak extra MiB of one forward (and backward) pass."""
    fn = attention_fn(path)
    train = mode == "fwd+bwd"

    def run(n_: int) -> None:
        q, k, v = (torch.randn(1, heads, n_, d, requires_grad=train) for _ in range(3))  # (1, h, n, d)
        out = fn(q, k, v)  # (1, h, n, d)
        if train:
            torch.autograd.grad(out, (q, k, v), torch.randn_like(out))

    torch.manual_seed(0)
    run(64)  # 预热：加载内核与线程池，不计入
    q, k, v = (torch.randn(1, heads, n, d, requires_grad=train) for _ in range(3))  # (1, h, n, d)
    g = torch.randn(1, heads, n, d)  # (1, h, n, d)
    base = _reset_peak()
    out = fn(q, k, v)  # (1, h, n, d)
    if train:
        torch.autograd.grad(out, (q, k, v), g)
    return _peak() - base


def _child(conn: Connection, path: str, n: int, heads: int, d: int, mode: str,
           threads: int) -> None:
    """The forked child: measure once and send the result (or the error) back."""
    try:
        torch.set_num_threads(threads)
        conn.send(("ok", _measure(path, n, heads, d, mode)))
    except BaseException as err:  # sent to the parent, which raises it naming the configuration
        conn.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        conn.close()


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """The forkserver context, its server preloading torch and the attention paths (started on first use)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # not on Windows: a new interpreter each time
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "selfattn.chunked", "selfattn.functional", "benchmarks.memory"])
    return ctx


def peak_extra_mib(path: str, n: int, *, heads: int = 1, d: int = 64, mode: str = "fwd", threads: int = 1) -> float:
    """Peak extra memory (MiB) of one pass of ``path``, measured in a fresh subprocess."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    attention_fn(path)  # an unknown path fails here, naming the known ones
    ctx = _context()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, path, n, heads, d, mode, threads))  # type: ignore[attr-defined]
    proc.start()
    send.close()
    try:
        status, value = recv.recv()
    except EOFError:
        status, value = "error", "the child exited without a result"
    proc.join()
    if status != "ok" or proc.exitcode != 0:
        raise RuntimeError(f"peak_extra_mib({path!r}, {n}, heads={heads}, d={d}, mode={mode!r}) failed "
                           f"(exit code {proc.exitcode}): {value}")
    return float(value)


if __name__ == "__main__":
    path_, n_, h_, d_, mode_, threads_ = sys.argv[1:7]
    torch.set_num_threads(int(threads_))
    print(json.dumps({"peak_extra_mib": _measure(path_, int(n_), int(h_), int(d_), mode_)}))
