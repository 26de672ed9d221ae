"""Run the CPU benchmarks of selfattn and write ``benchmarks/results/cpu.json``.

Usage::

    python -m benchmarks.run                 # the real run (`make bench`), a few minutes on 2 cores
    python -m benchmarks.run --quick --out /tmp/x.json   # tiny sizes, seconds (the smoke test)

Every comparison is a **ratio measured in the same run**: each case is timed in
``rounds`` interleaved rounds (every path once per round, with
``torch.utils.benchmark.Timer.blocked_autorange``, which warms up first), the ratio
to the anchor is taken within each round, and the median and min–max over the
rounds are reported. Peak memory is measured in a fresh subprocess per
configuration (see :mod:`benchmarks.memory`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils import benchmark

from benchmarks.memory import attention_fn, peak_extra_mib

RESULTS = Path(__file__).resolve().parent / "results" / "cpu.json"
Row = dict[str, Any]


def machine_info(threads: int) -> dict[str, Any]:
    """Where the numbers come from."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": threads,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _stats(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def time_rounds(stmts: dict[str, Callable[[], object]], rounds: int, min_run_time: float) -> dict[str, list[float]]:
    """Seconds per call of each statement, one median per round; the paths are interleaved."""
    out: dict[str, list[float]] = {name: [] for name in stmts}
    for _ in range(rounds):
        for name, fn in stmts.items():
            t = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
            out[name].append(t.blocked_autorange(min_run_time=min_run_time).median)
    return out


def ratio_rows(case: str, key: dict[str, Any], secs: dict[str, list[float]], anchor: str) -> tuple[list[Row], list[Row]]:
    """Time rows (ms) and ratio rows (path / anchor, per round) of one configuration."""
    times = [{"case": case, **key, "path": p, **{f"{s}_ms": v * 1e3 for s, v in _stats(xs).items()}, "rounds": len(xs)}
             for p, xs in secs.items()]
    ratios = [{"case": case, **key, "path": p, "anchor": anchor, **_stats([a / b for a, b in zip(xs, secs[anchor], strict=True)])}
              for p, xs in secs.items() if p != anchor]
    return times, ratios


def _attention_stmt(fn: Callable[..., torch.Tensor], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    g: torch.Tensor, train: bool) -> Callable[[], object]:
    """One timed call: forward under no_grad, or forward + backward (gradients of q, k, v)."""
    if train:
        return lambda: torch.autograd.grad(fn(q, k, v), (q, k, v), g)

    def fwd() -> object:
        with torch.no_grad():
            return fn(q, k, v)

    return fwd


def _module_stmt(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, train: bool) -> Callable[[], object]:
    """One timed call of a module: forward under no_grad, or forward + backward."""
    if not train:
        def fwd() -> object:
            with torch.no_grad():
                return fn(x)
        return fwd
    xg = x.clone().requires_grad_(True)
    return lambda: fn(xg).sum().backward()


def bench_attention(ns: list[int], fwd_only: list[int], heads: int, d: int, rounds: int, min_run_time: float,
                    log: Callable[[str], None]) -> tuple[list[Row], list[Row]]:
    """Case 1: time of explicit, SDPA and chunked attention vs n, forward and forward+backward."""
    times: list[Row] = []
    ratios: list[Row] = []
    paths = ("explicit", "sdpa", "chunked")
    for n in ns + fwd_only:
        for mode in ("fwd",) if n in fwd_only else ("fwd", "fwd+bwd"):
            torch.manual_seed(0)
            train = mode == "fwd+bwd"
            q, k, v = (torch.randn(1, heads, n, d, requires_grad=train) for _ in range(3))  # (1, h, n, d)
            g = torch.randn(1, heads, n, d)  # (1, h, n, d)

            r = rounds if n <= 2048 else max(2, rounds - 2) if n <= 4096 else 2  # 大 n 每轮要几秒
            secs = time_rounds({p: _attention_stmt(attention_fn(p), q, k, v, g, train) for p in paths}, r, min_run_time)
            t, rr = ratio_rows("attention", {"mode": mode, "n": n}, secs, anchor="sdpa")
            times += t
            ratios += rr
            log(f"  attention {mode:7s} n={n:5d}: " + ", ".join(f"{x['path']} {x['median_ms']:.1f} ms" for x in t))
    return times, ratios


def bench_exp(shape: tuple[int, ...], rounds: int, min_run_time: float,
              log: Callable[[str], None]) -> tuple[list[Row], list[Row]]:
    """Case 4: e^x by ``torch.exp`` and by ``torch.exp2`` of x·log2(e), on one tile of scores minus their max."""
    from selfattn.chunked import LOG2E

    torch.manual_seed(0)
    x = -20 * torch.rand(shape)  # s - m <= 0, like chunked_attention's tile
    y = torch.empty_like(x)
    stmts: dict[str, Callable[[], object]] = {
        "exp": lambda: torch.exp(x, out=y),
        "exp2": lambda: torch.mul(x, LOG2E, out=y).exp2_(),  # as chunked_attention does: mul_, then exp2_
    }
    secs = time_rounds(stmts, rounds, min_run_time)
    times, ratios = ratio_rows("exp", {"shape": list(shape)}, secs, anchor="exp")
    log("  exp on a tile " + "x".join(map(str, shape)) + ": "
        + ", ".join(f"{t['path']} {t['median_ms']:.2f} ms" for t in times))
    return times, ratios


def bench_memory(configs: list[tuple[str, int, str]], heads: int, d: int, threads: int,
                 log: Callable[[str], None]) -> list[Row]:
    """Case 2: peak extra memory of each path, one fresh subprocess per configuration."""
    rows: list[Row] = []
    for path, n, mode in configs:
        mib = peak_extra_mib(path, n, heads=heads, d=d, mode=mode, threads=threads)
        rows.append({"case": "memory", "mode": mode, "n": n, "path": path, "heads": heads, "peak_extra_mib": mib})
        log(f"  memory {mode:7s} n={n:5d} {path:9s}: {mib:8.1f} MiB")
    return rows


def bench_mha(batch: int, n: int, d_model: int, heads: int, rounds: int, min_run_time: float,
              log: Callable[[str], None]) -> tuple[list[Row], list[Row], str]:
    """Case 3: MultiHeadSelfAttention vs nn.MultiheadAttention (skipped if the module is missing)."""
    try:
        from selfattn.multihead import MultiHeadSelfAttention  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        log("  mha: skipped: selfattn.multihead not available")
        return [], [], "skipped: selfattn.multihead not available"
    try:
        return _bench_mha(MultiHeadSelfAttention, batch, n, d_model, heads, rounds, min_run_time, log)
    except (TypeError, ValueError, RuntimeError) as err:  # the module's API differs from the one assumed here
        log(f"  mha: failed: {err}")
        return [], [], f"failed: {type(err).__name__}: {err}"


def _bench_mha(cls: Any, batch: int, n: int, d_model: int, heads: int, rounds: int, min_run_time: float,
               log: Callable[[str], None]) -> tuple[list[Row], list[Row], str]:
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d_model, heads, batch_first=True)
    ours = cls(d_model, heads)
    x = torch.randn(batch, n, d_model)  # (B, n, d_model)

    def first(r: Any) -> torch.Tensor:
        return r[0] if isinstance(r, tuple) else r  # type: ignore[no-any-return]

    fns: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "nn_mha_weights": lambda x: first(mha(x, x, x)),
        "nn_mha_fast": lambda x: first(mha(x, x, x, need_weights=False)),
        "ours_explicit": lambda x: first(ours(x, need_weights=True)),
        "ours_fast": lambda x: first(ours(x, need_weights=False)),
    }
    times: list[Row] = []
    ratios: list[Row] = []
    for mode in ("fwd", "fwd+bwd"):
        secs = time_rounds({p: _module_stmt(f, x, mode == "fwd+bwd") for p, f in fns.items()}, rounds, min_run_time)
        key = {"mode": mode, "n": n, "batch": batch, "d_model": d_model, "heads": heads}
        t, _ = ratio_rows("mha", key, secs, anchor="nn_mha_fast")
        times += t
        for ours_p, anchor in (("ours_fast", "nn_mha_fast"), ("ours_explicit", "nn_mha_weights")):
            xs = [a / b for a, b in zip(secs[ours_p], secs[anchor], strict=True)]
            ratios.append({"case": "mha", **key, "path": ours_p, "anchor": anchor, **_stats(xs)})
        log(f"  mha {mode:7s}: " + ", ".join(f"{x['path']} {x['median_ms']:.1f} ms" for x in t))
    return times, ratios, "measured"


def targets(ratios: list[Row], memory: list[Row], n_time: int, n_mem: int) -> list[Row]:
    """The book's targets, each as a measured ratio next to its goal."""
    def ratio(case: str, mode: str, n: int, path: str) -> Row | None:
        return next((r for r in ratios if (r["case"], r["mode"], r["n"], r["path"]) == (case, mode, n, path)), None)

    def mem(mode: str, path: str) -> float | None:
        return next((m["peak_extra_mib"] for m in memory if (m["mode"], m["n"], m["path"]) == (mode, n_mem, path)), None)

    out: list[Row] = []
    for name, row, goal in (
        (f"chunked fwd / SDPA at n={n_time}", ratio("attention", "fwd", n_time, "chunked"), 1.5),
        (f"chunked fwd+bwd / SDPA at n={n_time}", ratio("attention", "fwd+bwd", n_time, "chunked"), 2.0),
    ):
        if row is not None:
            out.append({"target": name, "goal": f"<= {goal}", "median": row["median"], "min": row["min"],
                        "max": row["max"], "met": row["median"] <= goal})
    for mode, goal in (("fwd", 50), ("fwd+bwd", 8)):
        a, b = mem(mode, "chunked"), mem(mode, "explicit")
        if a is not None and b is not None:
            out.append({"target": f"explicit / chunked peak extra memory, {mode}, n={n_mem}", "goal": f">= {goal}",
                        "value": b / max(a, 1e-9), "met": b / max(a, 1e-9) >= goal})
    for mode in ("fwd", "fwd+bwd"):
        mha = next((r for r in ratios if (r["case"], r["mode"], r["path"]) == ("mha", mode, "ours_fast")), None)
        if mha is not None:
            out.append({"target": f"MultiHeadSelfAttention fast / nn.MultiheadAttention(need_weights=False), {mode}",
                        "goal": "<= 1.0", "median": mha["median"], "min": mha["min"], "max": mha["max"],
                        "met": mha["median"] <= 1.0})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2: the cores of the reference machine)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    def log(s: str) -> None:
        print(s, flush=True)

    log(f"torch {torch.__version__}, threads = {torch.get_num_threads()}, quick = {args.quick}")
    start = time.perf_counter()
    if args.quick:
        # min_run_time 1 ms: each timer runs its statement a few times (torch's block-size estimate stops
        # as soon as a block takes longer than that); the numbers mean nothing, the code paths all run.
        heads, d, ns, fwd_only, rounds, mrt = 2, 16, [32, 64], [128], 2, 0.001
        mem_cfg = [("explicit", 256, "fwd"), ("chunked", 256, "fwd")]
        mha_cfg = (1, 16, 32, 4)
        n_time, n_mem = 64, 256
        tile = (2, 8, 16)
    else:
        heads, d, ns, fwd_only, rounds, mrt = 8, 64, [128, 256, 512, 1024, 2048, 4096], [8192], 5, 0.2
        mem_cfg = [(p_, n, m) for m in ("fwd", "fwd+bwd") for n in (1024, 2048, 4096, 8192)
                   for p_ in ("explicit", "sdpa", "chunked", "keys_only")]
        mha_cfg = (4, 512, 512, 8)
        n_time, n_mem = 4096, 8192
        tile = (8, 256, 512)  # (h, block_q, block_k): the default tile of chunked_attention
    log("case 1: time vs n")
    times, ratios = bench_attention(ns, fwd_only, heads, d, rounds, mrt, log)
    log("case 2: peak extra memory vs n (fresh subprocess each)")
    memory = bench_memory(mem_cfg, 1 if args.quick else heads, d, args.threads, log)
    log("case 3: MultiHeadSelfAttention vs nn.MultiheadAttention")
    mha_times, mha_ratios, mha_status = bench_mha(*mha_cfg, rounds=rounds, min_run_time=mrt, log=log)
    log("case 4: exp vs exp2 on one tile")
    exp_times, exp_ratios = bench_exp(tile, rounds, mrt, log)
    result = {
        "machine": machine_info(torch.get_num_threads()),
        "config": {"batch": 1, "heads": heads, "d_head": d, "dtype": "float32", "rounds": rounds,
                   "min_run_time_s": mrt, "memory_heads": 1 if args.quick else heads,
                   "timer": "torch.utils.benchmark.Timer.blocked_autorange, paths interleaved per round"},
        "time": times + mha_times + exp_times,
        "ratios": ratios + mha_ratios + exp_ratios,
        "memory": memory,
        "mha": mha_status,
        "targets": targets(ratios + mha_ratios, memory, n_time, n_mem),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for t in result["targets"]:
        log(f"target {t['target']}: {t.get('median', t.get('value')):.3g} (goal {t['goal']}, met={t['met']})")
    log(f"wrote {args.out} in {result['wall_s']} s")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
