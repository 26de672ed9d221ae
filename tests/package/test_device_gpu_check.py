"""`make gpu-check` without a GPU: it parses, it plans, and it stops with a clear message.

What it does on a GPU cannot be run here; tests/package/test_device.py runs the same tests on the fake device.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tools.measure import gpu_check

ROOT = Path(__file__).resolve().parents[2]
# The nested pytest runs read no PYTEST_ADDOPTS of the outer run: with a -v there, --collect-only -q printed a tree.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_make_targets_parse_without_a_gpu() -> None:
    out = subprocess.run(["make", "-n", "gpu-check", "test-floor"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert "-m tools.measure.gpu_check" in out and ".venv-floor" in out and "torch==" in out
    planned = subprocess.run(["make", "-n", "gpu-check", "ARGS=--plan"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    assert "-m tools.measure.gpu_check --plan" in planned


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without CUDA")
def test_without_cuda_it_stops_with_a_clear_message(tmp_path: Path) -> None:
    out = tmp_path / "gpu-check.json"
    proc = subprocess.run([sys.executable, "-m", "tools.measure.gpu_check", "--out", str(out)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == gpu_check.NO_CUDA, proc.stderr
    assert "needs a CUDA GPU" in proc.stderr and "torch.cuda.is_available() is False" in proc.stderr
    assert not out.exists()


def test_the_plan_runs_every_cuda_item_within_five_minutes() -> None:
    plan = gpu_check.plan()
    assert "-m cuda" in plan["pytest"] and plan["pytest"].endswith("tests docs")
    assert sum(plan["limits_s"].values()) <= 300
    assert "sdpa_flash" in plan["benchmarks"]["paths"] and plan["out"] == "reports/gpu-check.json"
    assert gpu_check.main(["--plan"]) == 0


def test_the_plan_runs_the_ring_on_every_gpu() -> None:
    ring = gpu_check.plan()["ring"]
    assert ring["backend"] == "nccl" and "device_count" in ring["world_size"]
    assert (True, True, "context_parallel") in ring["cases (is_causal, zigzag, impl)"]


def test_the_ring_step_runs_on_the_cpu_with_gloo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Part 6's code with gloo and one process (short sequences, a longer limit for a loaded machine)
    instead of NCCL on every GPU: the ring's rows agree with SDPA in float64, context_parallel's row records
    its refusal of CPU tensors (chapter 8.6), and the world sizes 2-4 are reported as skipped."""
    monkeypatch.setattr(gpu_check, "RING_N_PER_RANK", 24)
    monkeypatch.setitem(gpu_check.LIMITS, "ring", 120)
    result = gpu_check.ring_check(backend="gloo", world_size=1)
    rows = {(r["is_causal"], r["zigzag"], r["impl"]): r for r in result["rows"]}
    assert set(rows) == set(gpu_check.RING_CASES)
    for (_, _, impl), row in rows.items():
        if impl == "ring":
            assert row["max_abs_diff_out"] < 1e-6 and row["max_abs_diff_grads"] < 1e-5, row
    assert "does not have a sharding strategy registered" in rows[(True, True, "context_parallel")]["error"]
    assert result["skipped"] == [f"world size {p}: needs {p} GPUs, this machine has 1" for p in (2, 3, 4)]


def test_the_triton_slot_says_absent_or_present() -> None:
    """Chapter 8.5's module is benchmarked if it exists; until then the JSON records "absent"."""
    from importlib.util import find_spec

    status = gpu_check.triton_status()
    assert status == ("absent" if find_spec(gpu_check.TRITON_MODULE) is None else status)
    if status == "absent":
        assert gpu_check.triton_benchmarks() == {"status": "absent"}
    else:
        assert status.startswith("present")


def test_the_plan_lists_the_sweep_and_the_nsight_counters(capsys: pytest.CaptureFixture[str]) -> None:
    """`make gpu-check ARGS=--plan` shows chapter 8.5's sweep and the Nsight Compute counters."""
    assert gpu_check.main(["--plan"]) == 0
    printed = json.loads(capsys.readouterr().out)
    sweep, nsight = printed["triton"]["sweep"], printed["triton"]["nsight"]
    assert sweep["n"] == [1024, 2048, 4096, 8192] and sweep["dtypes"] == ["float16", "bfloat16"]
    assert sweep["modes"] == ["fwd", "bwd"] and sweep["paths"] == ["fused_attention", "sdpa_flash"]
    assert "4·B·h·n²·d" in sweep["flops"]
    assert nsight["metrics"] == ["dram__bytes_read.sum", "dram__bytes_write.sum"]
    assert set(printed["limits_s"]) >= {"triton", "nsight"}


def test_sweep_flops_follow_the_tutorial() -> None:
    assert gpu_check.sweep_flops(4, 16, 1024, 64, False, "fwd") == 4 * 4 * 16 * 1024**2 * 64
    assert gpu_check.sweep_flops(4, 16, 1024, 64, True, "fwd") == 2 * 4 * 16 * 1024**2 * 64
    assert gpu_check.sweep_flops(4, 16, 1024, 64, True, "bwd") == 2.5 * 2 * 4 * 16 * 1024**2 * 64


@pytest.mark.skipif(torch.cuda.is_available(), reason="runs the sweep's code on the CPU, in the interpreter")
def test_the_sweep_runs_on_the_cpu() -> None:
    """The sweep's Python, end to end, at a tiny size on the CPU (the kernel in the interpreter, SDPA's CPU
    flash kernel, a stand-in timer), so that a GPU's minutes are not spent on a typo."""
    from selfattn.triton_attention import fused_attention

    tiny = {"B": 1, "h": 2, "d": 16, "n": (32, 48), "dtypes": ("float32",), "causal": (False, True),
            "modes": ("fwd", "bwd")}
    calls = []

    def timer(fn, budget_s: float = 0.0) -> float:  # type: ignore[no-untyped-def]
        fn()
        calls.append(1)
        return 2.0

    result = gpu_check.triton_sweep(fused_attention, "cpu", None, tiny, timer)
    rows = result["rows"]
    assert len(rows) == 2 * 2 * 2 * 2 == len(calls) and all("error" not in r for r in rows), rows
    row = next(r for r in rows if r["mode"] == "bwd" and r["causal"] and r["n"] == 48)
    assert row["tflops"] == 2.5 * 0.5 * 4 * 2 * 48**2 * 16 / 2e-3 / 1e12


def test_nsight_is_skipped_without_ncu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_check.shutil, "which", lambda name: None)
    assert gpu_check.nsight_dram()["status"] == "ncu not found: skipped"


def test_ncu_csv_is_summed_per_metric_in_bytes() -> None:
    """The shape of `ncu --csv --print-units base` output: progress lines, then one row per kernel and metric."""
    out = "\n".join([
        "==PROF== Connected to process 4242 (/usr/bin/python3.11)",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
        '"0","4242","python3.11","127.0.0.1","_attention_kernel","1","7","(128, 1, 1)","(16, 8, 1)","0","9.0",'
        '"Command line profiler metrics","dram__bytes_read.sum","byte","4,194,304"',
        '"0","4242","python3.11","127.0.0.1","_attention_kernel","1","7","(128, 1, 1)","(16, 8, 1)","0","9.0",'
        '"Command line profiler metrics","dram__bytes_write.sum","byte","1,048,576"',
        '"1","4242","python3.11","127.0.0.1","softmax","1","7","(128, 1, 1)","(16, 8, 1)","0","9.0",'
        '"Command line profiler metrics","dram__bytes_read.sum","Kbyte","2.5"',
        "==PROF== Disconnected from process 4242",
    ])
    found = gpu_check.parse_ncu_csv(out)
    assert found == {"dram__bytes_read.sum": 4194304 + 2500, "dram__bytes_write.sum": 1048576, "kernels": 2}
    assert gpu_check.parse_ncu_csv("==PROF== ERR_NVGPUCTRPERM - no permission\n") == {}


@pytest.mark.skipif(torch.cuda.is_available(), reason="runs the Nsight child's code on the CPU")
def test_the_nsight_child_and_the_counted_bytes_run_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.traffic import fused_bytes

    monkeypatch.setattr(gpu_check, "NCU_SHAPE", (1, 2, 16))
    for path in gpu_check.NCU_PATHS:
        gpu_check.ncu_case(path, 64, device="cpu")  # float16 on the CPU: the kernel in the interpreter
    assert gpu_check.counted_bytes("fused_attention", 64, "cpu") == fused_bytes(64, 64, 16, 2, 64, 64, heads=2)
    assert gpu_check.counted_bytes("sdpa_flash", 64, "cpu") is None
    assert gpu_check.counted_bytes("explicit", 64, "cpu") > 2 * 2 * 64 * 64  # at least S written in float16


def test_the_json_a_run_writes_is_what_the_book_prints(tmp_path: Path) -> None:
    """write_report's JSON, read back by benchmarks/gpu.py as section 8.5.9 does."""
    from benchmarks import gpu

    rows = [{"mode": m, "dtype": "float16", "causal": False, "n": n, "provider": p, "ms": 1.0, "tflops": t}
            for m in ("fwd", "bwd") for n in (1024, 2048)
            for p, t in (("fused_attention", 101.0), ("sdpa_flash", 302.0))]
    rows.append({"mode": "bwd", "dtype": "bfloat16", "causal": True, "n": 1024, "provider": "sdpa_flash",
                 "skipped": "time limit"})
    report = {"date": "2026-01-02T03:04:05Z", "torch": "2.13.0+cu128", "cuda": "12.8", "device": "NVIDIA H100",
              "gpus": 1, "triton": {"status": "ran", "sweep": {"shape": {"B": 4, "h": 16, "d": 64}, "rows": rows}},
              "nsight": {"status": "ran", "rows": [
                  {"path": "explicit", "n": 4096, "dtype": "float16", "counted_bytes": 3 * 2**30,
                   "dram_bytes": 2**30},
                  {"path": "sdpa_flash", "n": 4096, "dtype": "float16", "counted_bytes": None,
                   "dram_bytes": 2**25},
                  {"path": "fused_attention", "n": 1024, "dtype": "float16", "skipped": "time limit"}]}}
    path = tmp_path / "gpu.json"
    gpu_check.write_report(report, path)
    lines = gpu.recorded_summary(path)
    assert lines[0] == "NVIDIA H100, torch 2.13.0+cu128, CUDA 12.8, 2026-01-02"
    assert any(line.split()[:3] == ["fwd", "float16", "full"] and line.count("101 / 302") == 2 for line in lines)
    assert not any("bfloat16" in line for line in lines)  # a skipped row prints nothing
    assert any(line.split()[:2] == ["explicit", "float16"] and "1024.0 /    3072" in line for line in lines)
    assert any(line.split()[:2] == ["sdpa_flash", "float16"] and line.endswith("/       -") for line in lines)
    assert gpu.recorded_summary(tmp_path / "absent.json") == [gpu.NOT_YET]


def test_the_device_parametrized_tests_carry_the_cuda_mark() -> None:
    """`pytest -m cuda` (the first part of gpu-check) selects the CUDA variant of every device test."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "cuda", "-p", "no:randomly",
                           "-o", "addopts=", "tests/package/test_device.py"], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=120)
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids and all("[cuda" in i for i in ids), proc.stdout
    assert any("test_check_all[cuda" in i for i in ids) and any("test_generate[cuda" in i for i in ids)


def test_the_gpu_parts_run_on_the_fake_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python of parts 2 to 4 runs (tiny sizes, CUDA timers replaced), so a GPU's few minutes are not
    spent on a typo. What a GPU computes there is not checked here."""
    from tools.testing.fake_cuda import fake_cuda

    monkeypatch.setattr(gpu_check, "BENCH_N", (16,))
    monkeypatch.setattr(gpu_check, "BENCH_DTYPES", ("float32",))
    monkeypatch.setattr(gpu_check, "cuda_ms", lambda fn, budget_s=0.0: (fn(), 1.0)[1])
    monkeypatch.setattr(gpu_check, "peak_mib", lambda fn: (fn(), 0.0)[1])
    with fake_cuda():
        rows = gpu_check.bench_paths(gpu_check.attention_paths(), deadline=None)
        masked = gpu_check.fully_masked_rows()
    assert {r["path"] for r in rows} == set(gpu_check.plan()["benchmarks"]["paths"]) and len(rows) == 10
    ours = [r for r in rows if r["path"] in ("selfattn.functional", "chunked_attention")]
    assert all("error" not in r and "forward_backward_peak_mib" in r for r in ours), ours
    assert all(r.get("max_abs_diff_vs_flash", 0.0) < 1e-5 for r in ours), ours
    assert len(masked) == 8 and all("ran" in m for m in masked.values()), masked
