"""Ring attention (8.6, ``selfattn.ring``) on real processes: gloo on the CPU.

The case table runs in one spawn of 4 processes (tools/measure/ring_table.py, which also prints it:
``python -m tools.measure.ring_table``). The spawn's timeout bounds each test, and a failing rank brings
its group down (``test_a_failing_rank_brings_the_group_down``).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import pytest
import torch
import torch.distributed as dist

from selfattn import ring
from tools.measure.ring_table import BAD, CASES, SIZES, TIMEOUT, Case, errors, inputs, run_table

# The bounds against SDPA on the whole sequence; float64 is held much tighter.
TOLERANCE = {torch.float32: (1e-6, 1e-5), torch.float64: (1e-12, 1e-11)}  # (forward, gradients)


@pytest.fixture(scope="module")
def table() -> tuple[dict[Case, Any], list[dict[str, Any]], float]:
    return run_table()


def test_forward_and_gradients_match_sdpa_on_every_case(table: Any) -> None:
    results, _, _ = table
    assert set(results) == set(CASES) and len(CASES) == 64
    for case, (fwd, bwd) in errors(results).items():
        tol_fwd, tol_bwd = TOLERANCE[case.dtype]
        assert fwd < tol_fwd and bwd < tol_bwd, (case, fwd, bwd)


def test_every_rank_sends_each_shard_once_per_pass(table: Any) -> None:
    """The hops on the wire, from each rank's log: forward P-1 hops of (k, v); backward P-1 hops of (k, v)
    and P-1 of (dk, dv); each pass sends every rank's shard to every other rank, no more."""
    results, _, _ = table
    for case, (_, _, sent) in results.items():
        p = case.world_size
        _, k, v, _ = inputs(case)
        kv_bytes = k.nbytes + v.nbytes  # the whole sequence's k and v
        for phase in ("forward", "backward k, v", "backward dk, dv"):
            hops = [[b for ph, _, b in log if ph == phase] for log in sent]
            assert all(len(h) == p - 1 for h in hops), (case, phase, hops)
            assert sum(map(sum, hops)) == (p - 1) * kv_bytes, (case, phase)
        steps = [[s for ph, s, _ in log if ph == "forward"] for log in sent]
        assert all(s == list(range(p - 1)) for s in steps), (case, steps)


def test_bad_input_gives_every_rank_the_same_clear_error(table: Any) -> None:
    _, per_rank, _ = table
    for name, (size, *_, kind, words) in BAD.items():
        seen = [per_rank[r][name] for r in range(size)]
        assert seen[0] is not None, f"{name}: nothing was raised"
        assert all(s == seen[0] for s in seen), (name, seen)  # the same error on every rank
        assert seen[0][0] == kind and seen[0][1].startswith("ring_attention: "), (name, seen[0])
        for word in words:
            assert word in seen[0][1], (name, word, seen[0][1])


def test_without_a_process_group_the_error_says_how_to_start_one() -> None:
    assert not dist.is_initialized()
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(RuntimeError, match=r"ring_attention: no process group: call torch\.distributed\."
                                           r"init_process_group first, or .*selfattn\.ring\.spawn"):
        ring.ring_attention(q, q, q)


def _fail_on_rank_1() -> None:
    if dist.get_rank() == 1:
        raise ValueError("rank 1 gives up")
    dist.barrier()  # rank 0 waits for rank 1, which never comes


def test_a_failing_rank_brings_the_group_down() -> None:
    """Rank 0 waits in a collective that rank 1 never joins. The spawn does not wait for the timeout: rank
    1's error stops rank 0, and the error names the rank and carries its message."""
    with pytest.raises(RuntimeError) as info:
        ring.spawn(_fail_on_rank_1, 2, timeout=TIMEOUT)
    assert "spawn: rank 1 of 2 failed, so the others were stopped" in str(info.value)
    assert "ValueError: rank 1 gives up" in str(info.value)


def _sleep() -> None:
    time.sleep(3600)


def test_a_hung_process_is_stopped_at_the_timeout() -> None:
    with pytest.raises(TimeoutError, match=r"spawn: the 1 processes did not finish within timeout=2\.0 s"):
        ring.spawn(_sleep, 1, timeout=2.0)


def test_spawn_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="spawn: world_size must be positive, got 0"):
        ring.spawn(_sleep, 0)
    with pytest.raises(ValueError, match="spawn: backend must be 'gloo' or 'nccl', got 'mpi'"):
        ring.spawn(_sleep, 1, backend="mpi")


def test_shard_and_unshard_name_what_is_wrong() -> None:
    x = torch.zeros(1, 5, 8)
    with pytest.raises(ValueError, match=r"shard: rank must be in \[0, 2\), got 2"):
        ring.shard(x, 2, 2)
    with pytest.raises(ValueError, match=r"shard: x must be \(\.\.\., n, d\) with n >= 6 chunks \(world size 3, "
                                         r"zigzag=True\), got \(1, 5, 8\)"):
        ring.shard(x, 0, 3, zigzag=True)
    with pytest.raises(ValueError, match="shard: world_size must be positive, got 0"):
        ring.shard(x, 0, 0)
    with pytest.raises(ValueError, match="unshard: shards must hold one tensor per rank, got none"):
        ring.unshard([])


@pytest.mark.parametrize("zigzag", [False, True])
def test_shard_and_unshard_follow_tensor_split(zigzag: bool) -> None:
    for p, n in itertools.product(SIZES, (2 * max(SIZES), 13, 29)):
        x = torch.arange(n).reshape(1, n, 1)
        chunks = torch.tensor_split(x, (2 if zigzag else 1) * p, dim=-2)
        shards = [ring.shard(x, r, p, zigzag=zigzag) for r in range(p)]
        for r, s in enumerate(shards):
            own = [chunks[r], chunks[2 * p - 1 - r]] if zigzag else [chunks[r]]
            assert torch.equal(s, torch.cat(own, dim=-2)), (p, n, r)
        assert torch.equal(ring.unshard(shards, zigzag=zigzag), x)


@pytest.mark.parametrize(("zigzag", "is_causal"), list(itertools.product((False, True), (False, True))))
def test_the_schedule_computes_each_needed_block_once(zigzag: bool, is_causal: bool) -> None:
    """Over all steps and ranks, every (query chunk, key chunk) block a causal mask keeps (or every block)
    is computed exactly once, by the rank that holds the query chunk."""
    for p in SIZES:
        c = (2 if zigzag else 1) * p
        done = [(r, ab) for step in ring.schedule(p, zigzag=zigzag, is_causal=is_causal)
                for r, blocks in enumerate(step) for ab in blocks]
        pairs = sorted(ab for _, ab in done)
        assert pairs == [(a, b) for a in range(c) for b in range(c) if not (is_causal and b > a)]
        assert all(a in ring.shard(torch.arange(c)[:, None], r, p, zigzag=zigzag) for r, (a, _) in done)


def test_zigzag_evens_out_the_causal_work() -> None:
    """Counted in scores: contiguous, rank i computes i + 1 blocks of (n/P)^2 (the last P times the first);
    zigzag, every rank computes 2P + 1 blocks of (n/2P)^2."""
    for p in SIZES:
        for zigzag in (False, True):
            c = (2 if zigzag else 1) * p
            work = [sum(len(step[r]) for step in ring.schedule(p, zigzag=zigzag)) for r in range(p)]
            if zigzag:
                assert work == [2 * p + 1] * p
            else:
                assert work == [r + 1 for r in range(p)] and work[-1] == p * work[0]
            assert math.isclose(max(work) / c**2, (2 * p + 1) / (4 * p**2) if zigzag else 1 / p)
