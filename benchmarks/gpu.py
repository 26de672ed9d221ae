"""The GPU numbers of section 8.5.9, read from a recorded ``make gpu-check`` run.

``make gpu-check`` (``tools/measure/gpu_check.py``) writes ``reports/gpu-check.json`` on a machine with a GPU.
Committed as ``benchmarks/results/gpu.json``, that run is the record the book prints:
:func:`recorded_summary` gives "not yet measured" until the file exists, and then the lines of
:func:`summary`: the device, the TFLOPS of ``fused_attention`` against SDPA's flash backend over n,
and the DRAM bytes that Nsight Compute measured beside the bytes counted in 8.5.6.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "gpu.json"
NOT_YET = "GPU numbers: not yet measured (no benchmarks/results/gpu.json)"


def recorded_summary(path: Path = RESULTS) -> list[str]:
    """The summary of the committed run, or the one line that says there is none yet."""
    if not path.exists():
        return [NOT_YET]
    return summary(json.loads(path.read_text(encoding="utf-8")))


def summary(report: dict[str, Any]) -> list[str]:
    """Lines for the page: the device, a TFLOPS table and a DRAM table (what the run has)."""
    lines = [f"{report['device']}, torch {report['torch']}, CUDA {report['cuda']}, "
             f"{report['date'][:10]}"]
    triton = report.get("triton", {})
    sweep = triton.get("sweep", {})
    rows = [r for r in sweep.get("rows", []) if "tflops" in r]
    if rows:
        shape = sweep["shape"]
        lines.append(f"TFLOPS, fused_attention / SDPA flash (B = {shape['B']}, h = {shape['h']}, "
                     f"d = {shape['d']}):")
        ns = sorted({r["n"] for r in rows})
        lines.append(f"  {'':22s}" + "".join(f"{f'n = {n}':>14s}" for n in ns))
        tflops = {(r["mode"], r["dtype"], r["causal"], r["n"], r["provider"]): r["tflops"]
                  for r in rows}
        for mode, dtype, causal in dict.fromkeys((r["mode"], r["dtype"], r["causal"]) for r in rows):
            cells = []
            for n in ns:
                ours = tflops.get((mode, dtype, causal, n, "fused_attention"))
                flash = tflops.get((mode, dtype, causal, n, "sdpa_flash"))
                cells.append(f"{_num(ours)} / {_num(flash)}")
            label = f"{mode} {dtype} {'causal' if causal else 'full'}"
            lines.append(f"  {label:22s}" + "".join(f"{c:>14s}" for c in cells))
    dram = [r for r in report.get("nsight", {}).get("rows", []) if "dram_bytes" in r]
    if dram:
        lines.append("DRAM bytes (Nsight Compute) / bytes counted in 8.5.6, MiB:")
        for r in dram:
            counted = _num(r["counted_bytes"] / 2**20 if r.get("counted_bytes") else None)
            lines.append(f"  {r['path']:18s} {r['dtype']} n = {r['n']:5d}: "
                         f"{r['dram_bytes'] / 2**20:9.1f} / {counted:>7s}")
    return lines


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.1f}"
