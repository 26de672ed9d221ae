"""The case table of ring attention (8.6, ``selfattn.ring``) on real processes, gloo on the CPU.

Starting processes is the main cost (each imports torch), so the whole table runs in one spawn of 4
processes (:func:`run_table`): they make one subgroup of each world size 1, 2, 3 and 4
(``dist.new_group``) and run every case of that size on it, then every bad input of :data:`BAD`.
tests/package/test_ring.py asserts on what it returns; this module prints the error table
(world size x causal x split x dtype x n) without pytest::

    python -m tools.measure.ring_table
"""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
import torch.nn.functional as F

from selfattn import ring

SIZES = (1, 2, 3, 4)
LENGTHS = (24, 29)  # 24 splits evenly into 2P chunks for every P <= 4; 29 never does (P > 1)
DTYPES = (torch.float32, torch.float64)
TIMEOUT = 120.0  # seconds for one spawn: a hung process is stopped, never waited for


class Case(NamedTuple):
    world_size: int
    is_causal: bool
    zigzag: bool
    dtype: torch.dtype
    n: int


CASES = [Case(*c) for c in itertools.product(SIZES, (False, True), (False, True), DTYPES, LENGTHS)]


def inputs(case: Case) -> list[torch.Tensor]:
    """q, k, v and the output's gradient of a case: (B, h, n, d_k), twice, (B, h, n, d_v) twice."""
    g = torch.Generator().manual_seed(1000 * case.world_size + case.n)
    shapes = [(2, 2, case.n, 8)] * 2 + [(2, 2, case.n, 4)] * 2
    return [torch.randn(s, generator=g, dtype=case.dtype) for s in shapes]


# Bad input: per rank of a group, (q, k, v) shapes, dtype, is_causal, zigzag; and what every rank must say.
BAD = {
    "d_k differs across ranks": (2, [((1, 2, 6, 8),) * 3, ((1, 2, 6, 16),) * 3], ["float32"] * 2,
                                 [True, True], [False, False],
                                 "ValueError", ["do not match across ranks", "q (1, 2, 6, 8)", "q (1, 2, 6, 16)"]),
    "k and v lengths differ on rank 1": (2, [((1, 2, 6, 8),) * 3, ((1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 5, 8))],
                                         ["float32"] * 2, [True, True], [False, False],
                                         "ValueError", ["(on rank 1)", "k (1, 2, 6, 8)", "v (1, 2, 5, 8)"]),
    "dtype differs across ranks": (2, [((1, 2, 6, 8),) * 3] * 2, ["float32", "float64"], [False, False],
                                   [False, False], "ValueError", ["torch.float32", "torch.float64"]),
    "is_causal differs across ranks": (2, [((1, 2, 6, 8),) * 3] * 2, ["float32"] * 2, [True, False],
                                       [False, False], "ValueError", ["is_causal=True", "is_causal=False"]),
    "is_causal not a bool on rank 0": (2, [((1, 2, 6, 8),) * 3] * 2, ["float32"] * 2, [1, True],
                                       [False, False], "TypeError", ["is_causal must be a bool", "(on rank 0)"]),
    "shards that break the split rule": (3, [((1, 1, 5, 8),) * 3, ((1, 1, 5, 8),) * 3, ((1, 1, 2, 8),) * 3],
                                         ["float32"] * 3, [True] * 3, [False] * 3,
                                         "ValueError", ["world size 3", "12 tokens into 3 chunks",
                                                        "[4, 4, 4] tokens, got [5, 5, 2]"]),
    "fewer tokens than 2P chunks": (4, [((1, 1, 2, 8),) * 3] * 2 + [((1, 1, 1, 8),) * 3] * 2, ["float32"] * 4,
                                    [True] * 4, [True] * 4,
                                    "ValueError", ["world size 4 with zigzag=True", "into 8 chunks",
                                                   "chunk 2P-1-i", "n must be at least 8"]),
}


def _table_job(cases: list[Case], bad: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """In each of the 4 processes: every case on the subgroup of its world size, then every bad input."""
    rank = dist.get_rank()
    groups = {p: dist.new_group(list(range(p))) for p in SIZES}  # every rank takes part in every new_group
    rows: list[Any] = []
    for case in cases:
        if rank >= case.world_size:
            rows.append(None)
            continue
        q, k, v, d_out = (ring.shard(t, rank, case.world_size, zigzag=case.zigzag) for t in inputs(case))
        part = [t.requires_grad_() for t in (q, k, v)]
        with ring.record() as sent:
            out = ring.ring_attention(*part, is_causal=case.is_causal, zigzag=case.zigzag,
                                      group=groups[case.world_size])
            out.backward(d_out)
        rows.append((out.detach(), [t.grad for t in part], sent))
    errors: dict[str, Any] = {}
    for name, (size, shapes, dtypes, causal, zigzag, *_) in bad.items():
        if rank >= size:
            continue
        q, k, v = (torch.zeros(s, dtype=getattr(torch, dtypes[rank])) for s in shapes[rank])
        try:
            ring.ring_attention(q, k, v, is_causal=causal[rank], zigzag=zigzag[rank], group=groups[size])
        except (TypeError, ValueError) as err:
            errors[name] = (type(err).__name__, str(err))
        else:
            errors[name] = None
    return rows, errors


def run_table() -> tuple[dict[Case, Any], list[dict[str, Any]], float]:
    """One spawn of 4 processes: per case, the whole out and grads and every rank's hops; per rank, the
    errors of the bad inputs; the seconds the spawn took (reported, never asserted)."""
    started = time.monotonic()
    got = ring.spawn(_table_job, 4, CASES, BAD, timeout=TIMEOUT)
    seconds = time.monotonic() - started
    results = {}
    for i, case in enumerate(CASES):
        ranks = [got[r][0][i] for r in range(case.world_size)]
        out = ring.unshard([r[0] for r in ranks], zigzag=case.zigzag)
        grads = [ring.unshard([r[1][j] for r in ranks], zigzag=case.zigzag) for j in range(3)]
        results[case] = (out, grads, [r[2] for r in ranks])
    return results, [g[1] for g in got], seconds


def reference(case: Case) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """SDPA on the whole sequence, and its gradients by autograd."""
    q, k, v, d_out = inputs(case)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=case.is_causal)
    out.backward(d_out)
    return out.detach(), [t.grad for t in (q, k, v)]  # type: ignore[misc]


def errors(results: dict[Case, Any]) -> dict[Case, tuple[float, float]]:
    """Per case: the largest forward error and the largest gradient error against SDPA."""
    table = {}
    for case, (out, grads, _) in results.items():
        ref_out, ref_grads = reference(case)
        fwd = (out - ref_out).abs().max().item()
        bwd = max((g - r).abs().max().item() for g, r in zip(grads, ref_grads, strict=True))
        table[case] = (fwd, bwd)
    return table


def main() -> None:
    """Print the largest forward and gradient error of every case against SDPA, and the spawn's seconds."""
    results, _, seconds = run_table()
    print(f"{'P':>2} {'causal':>6} {'split':>10} {'dtype':>8} {'n':>3} {'forward':>9} {'gradients':>9}")
    for case, (fwd, bwd) in errors(results).items():
        split = "zigzag" if case.zigzag else "contiguous"
        print(f"{case.world_size:>2} {case.is_causal!s:>6} {split:>10} {str(case.dtype)[6:]:>8} "
              f"{case.n:>3} {fwd:9.1e} {bwd:9.1e}")
    print(f"one spawn of 4 processes: {seconds:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
