"""`make gpu-check` without a GPU: it parses, it plans, and it stops with a clear message.

What it does on a GPU cannot be run here; tests/package/test_device.py runs the same tests on the fake device.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tools.measure import gpu_check

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_make_targets_parse_without_a_gpu() -> None:
    out = subprocess.run(["make", "-n", "gpu-check", "test-floor"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert "-m tools.measure.gpu_check" in out and ".venv-floor" in out and "torch==" in out


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


def test_the_triton_slot_says_absent_or_present() -> None:
    """Chapter 8.5's module is benchmarked if it exists; until then the JSON records "absent"."""
    from importlib.util import find_spec

    status = gpu_check.triton_status()
    assert status == ("absent" if find_spec(gpu_check.TRITON_MODULE) is None else status)
    if status == "absent":
        assert gpu_check.triton_benchmarks() == {"status": "absent"}
    else:
        assert status.startswith("present")


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
