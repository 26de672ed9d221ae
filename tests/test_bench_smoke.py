"""The benchmark code runs at tiny sizes, so it cannot rot (this is NOT the real benchmark)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.run import main


def test_quick_benchmark_writes_complete_json(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    result = main(["--quick", "--out", str(out)])
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
    assert saved["mha"] == "measured" or saved["mha"].startswith("skipped: ")
    assert result["targets"], "targets are computed from the rows"
