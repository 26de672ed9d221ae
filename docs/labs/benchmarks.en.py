# %% [markdown]
# # Benchmark Plots (Reference Page)
#
# This lab runs when the site is built, but it does not run the benchmarks. It reads the
# committed `benchmarks/results/cpu.json`, measured on one machine by `make bench`, and
# plots it. The numbers are indicative, not exact, because they come from a 2-core CPU
# machine shared with other jobs, where two measurements of the same configuration can
# differ by more than a factor of two. What can be compared is the ratio of each path to
# SDPA within one run, as the [benchmarks page](../reference/benchmarks.md) explains in
# detail.

# %%
import json
import math
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, NullLocator


def log_axes(ax: Axes, ns: list[int]) -> None:
    """Log-log axes with the measured n as the x ticks, plain numbers on both."""
    ax.set(xscale="log", yscale="log", xlabel="n")
    plot.plain_ticks(ax)
    ax.xaxis.set_major_locator(FixedLocator(ns))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.grid(True, which="both", alpha=0.3)


RESULTS = Path("benchmarks") / "results" / "cpu.json"
root = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / RESULTS).exists())
res = json.loads((root / RESULTS).read_text(encoding="utf-8"))
m = res["machine"]
print(f"{m['platform']} | {m['processor']} | {m['cpu_count']} CPUs")
print(f"torch {m['torch']} | threads {m['threads']} | {m['date']}")
print("config:")
for key, value in res["config"].items():
    print(f"  {key}: {value!r}")

# %%
from selfattn import plot  # the book's figures: plot.figure, plot.show (3.7 appendix)

# %% [markdown]
# ## Time against $n$ (log-log)
#
# The setup is $B = 1$, $h = 8$, $d_\text{head} = 64$ and float32. The dashed line is a
# reference of slope 2 ($\propto n^2$): all three paths do $O(n^2 d)$ arithmetic, so for
# long sequences they follow this slope and differ by a constant factor. The error bars
# run from the minimum to the maximum over the rounds. Where a curve is not smooth,
# other load on the machine disturbed the measurement, which is why only ratios within a
# round are compared.

# %%
labels = {
    "explicit": "selfattn explicit",
    "sdpa": "F.scaled_dot_product_attention",
    "chunked": "selfattn chunked",
}
def draw():
    fig, axes = plot.figure(2, 1, size=(6.7, 7.5))
    axes[1].sharey(axes[0])
    for ax, mode in zip(axes, ("fwd", "fwd+bwd"), strict=True):
        rows = [r for r in res["time"]
                if r["case"] == "attention" and r["mode"] == mode]
        for path, label in labels.items():
            mine = [r for r in rows if r["path"] == path]
            pts = sorted((r["n"], r["median_ms"], r["min_ms"], r["max_ms"])
                         for r in mine)
            if not pts:
                continue
            n, med, lo, hi = zip(*pts, strict=True)
            err = [[a - b for a, b in zip(med, lo, strict=True)],
                   [b - a for a, b in zip(med, hi, strict=True)]]
            ax.errorbar(n, med, yerr=err, marker="o", capsize=3, label=label)
        last = rows[-1]["n"]
        n0, t0 = last, max(r["median_ms"] for r in rows if r["n"] == last)
        ref = [128, n0]
        ax.plot(ref, [t0 * (x / n0) ** 2 for x in ref], "--", color=plot.INK, lw=1,
                label="slope 2 (n²)")
        log_axes(ax, sorted({r["n"] for r in rows}))
        ax.set_title(f"{mode}: median time (ms), bars = min–max")
        ax.set_ylabel("ms")
    axes[0].legend()
    return fig


plot.show(
    draw,
    "The median time against n from the committed results, forward only (top) and "
    "forward plus backward (bottom). For long sequences every path follows the dashed "
    "slope-2 line. The bars run from the minimum to the maximum over the rounds.",
    "Two log-log plots of the median time in milliseconds against n, for the explicit "
    "implementation, SDPA and the chunked implementation. Each curve has a slope of "
    "about 2, parallel to the dashed reference line.",
)

# From n / 4 to the largest n: a slope of about 2 on every path (read from the JSON)
t = {(r["mode"], r["path"], r["n"]): r["median_ms"] for r in res["time"]
     if r["case"] == "attention"}
for mode, path in {key[:2] for key in t}:
    n1 = max(n for m, p, n in t if (m, p) == (mode, path))
    slope = math.log(t[mode, path, n1] / t[mode, path, n1 // 4], 4)
    assert 1.7 < slope < 2.3, (mode, path, slope)

# %% [markdown]
# ## Peak extra memory against $n$
#
# Each point is measured in a fresh subprocess by `benchmarks/memory.py`, which resets
# the peak RSS that the kernel records, runs once, and reads `VmHWM`. The explicit
# implementation grows as $n^2$, and so does autograd applied directly to the loop
# (`keys_only`, in training), while SDPA and the chunked implementation grow at most as
# $n$. Very small readings of a few MiB are close to the resolution of the measurement.

# %%
mem_labels = {**labels, "keys_only": "keys-only loop (autograd)"}
heads = res["config"]["memory_heads"]
def draw():
    fig, axes = plot.figure(2, 1, size=(6.7, 7.5))
    axes[1].sharey(axes[0])
    for ax, mode in zip(axes, ("fwd", "fwd+bwd"), strict=True):
        rows = [r for r in res["memory"] if r["mode"] == mode]
        for path, label in mem_labels.items():
            mine = [r for r in rows if r["path"] == path]
            pts = sorted((r["n"], max(r["peak_extra_mib"], 0.1)) for r in mine)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=label)
        log_axes(ax, sorted({r["n"] for r in rows}))
        ax.set_title(f"{mode}: peak extra memory (MiB), h = {heads}")
        ax.set_ylabel("MiB")
    axes[0].legend()
    return fig


plot.show(
    draw,
    "The peak extra memory against n, forward only (top) and forward plus backward "
    "(bottom). The explicit implementation grows as n², and so does the keys-only loop "
    "in training. SDPA and the chunked implementation grow at most as n.",
    "Two log-log plots of the peak extra memory in MiB against n. The explicit line "
    "rises steeply, and so does the keys-only line in the bottom plot. The SDPA and "
    "chunked lines rise much more slowly.",
)

# From n / 2 to the largest n: explicit (and keys_only in training) about 4x,
# that is n²; SDPA and chunked at most 2x
peak = {(r["mode"], r["path"], r["n"]): r["peak_extra_mib"] for r in res["memory"]}
n1 = max(n for _, _, n in peak)
grows = {key: peak[key] / peak[(*key[:2], n1 // 2)] for key in peak if key[2] == n1}
assert all(grows[m, "explicit", n1] > 3.5 for m in ("fwd", "fwd+bwd")), grows
assert grows["fwd+bwd", "keys_only", n1] > 3.5, grows
modes = ("fwd", "fwd+bwd")
assert all(grows[m, p, n1] < 2.2 for m in modes for p in ("sdpa", "chunked")), grows

# %% [markdown]
# ## Table of ratios
#
# Each row gives the median, the minimum and the maximum of a ratio, the path's time
# over SDPA's time, measured in alternating rounds within one run.

# %%
case = f"{'case':10s} {'mode':8s} {'n':>5s}"
pair = f"{'path':14s} {'anchor':15s}"
print(f"{case}  {pair} {'median':>7s}  min–max")
for r in res["ratios"]:
    case = f"{r['case']:10s} {r.get('mode', ''):8s} {r.get('n', ''):>5}"
    pair = f"{r['path']:14s} {r['anchor']:15s}"
    print(f"{case}  {pair} {r['median']:7.2f}  {r['min']:.2f}–{r['max']:.2f}")
print()
for t in res["targets"]:
    if "median" in t:
        value = f"{t['median']:.2f} ({t['min']:.2f}–{t['max']:.2f})"
    else:
        value = f"{t['value']:.1f}"
    print(f"{t['target']}:")
    print(f"    {value}, goal {t['goal']}, met: {t['met']}")
