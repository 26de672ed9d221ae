"""The benchmark code runs at tiny sizes, so it cannot rot (this is NOT the real benchmark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks.run import main


@pytest.mark.slow
def test_quick_benchmark_writes_complete_json(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    threads = torch.get_num_threads()
    try:
        result = main(["--quick", "--threads", "1", "--out", str(out)])
    finally:
        torch.set_num_threads(threads)  # the runner pins the thread count of the whole process
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["machine"]["threads"] == 1 and saved["machine"]["torch"]
    assert {"platform", "processor", "cpu_count"} <= set(saved["machine"])
    paths = {(r["mode"], r["path"]) for r in saved["time"] if r["case"] == "attention"}
    assert {(m, p) for m in ("fwd", "fwd+bwd") for p in ("explicit", "sdpa", "chunked")} <= paths
    for r in saved["time"]:
        assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"], r
    for r in saved["ratios"]:
        assert 0 < r["min"] <= r["median"] <= r["max"], r
    assert {m["path"] for m in saved["memory"]} == {"explicit", "chunked"}
    assert saved["mha"] == "measured", saved["mha"]
    assert {r["path"] for r in saved["ratios"] if r["case"] == "mha"} == {"ours_fast", "ours_explicit"}
    assert [(r["path"], r["anchor"]) for r in saved["ratios"] if r["case"] == "exp"] == [("exp2", "exp")]
    assert result["targets"], "targets are computed from the rows"
