# %% [markdown]
# # 基准测试图（参考页）
#
# 这个实验在**构建网站时**执行，但它不运行基准测试。它只读取仓库里提交的
# `benchmarks/results/cpu.json`（由 `make bench` 在一台机器上实测生成）并画图。
# 数字只是示意。它们来自一台与其他任务共享的 2 核 CPU 机器，同一配置前后两次测量可以差一倍以上；
# 可比较的是**同一次运行中**各路径与 SDPA 的比值。说明见[基准测试](../reference/benchmarks.md)。

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
from selfattn import plot  # 书中的画图模块：plot.figure 画图，plot.show 显示（3.7 附）

# %% [markdown]
# ## 时间与 $n$（对数坐标）
#
# B = 1，h = 8，d_head = 64，float32。虚线是斜率为 2 的参考线（$\propto n^2$）：三条路径的算术量都是
# $O(n^2 d)$，长序列时都贴着这条斜率，差别只在常数。误差线从各轮的最小值画到最大值。曲线若不光滑，
# 是测量时机器上的其他负载造成的，这正是我们只比较同一轮内的比值的原因。

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
    "提交的结果中，中位时间随 n 的变化：上图只有前向，下图是前向加反向。长序列上每条路"
    "径都沿斜率为 2 的虚线增长。误差棒从各轮的最小值到最大值。",
    "两幅双对数图，纵轴是中位时间（毫秒），横轴是 n，分别画显式实现、SDPA 与分块实现。"
    "每条曲线的斜率约为 2，与虚线参考线平行。",
)

# 最大的 n 比它的 1/4：每条路径的斜率都约为 2（读自上面的 JSON，不是新的计时）
t = {(r["mode"], r["path"], r["n"]): r["median_ms"] for r in res["time"]
     if r["case"] == "attention"}
for mode, path in {key[:2] for key in t}:
    n1 = max(n for m, p, n in t if (m, p) == (mode, path))
    slope = math.log(t[mode, path, n1] / t[mode, path, n1 // 4], 4)
    assert 1.7 < slope < 2.3, (mode, path, slope)

# %% [markdown]
# ## 峰值额外内存与 $n$
#
# 每个点在一个新的子进程中测得（`benchmarks/memory.py`：清零内核记录的 RSS 峰值，运行一次，读 `VmHWM`）。
# 显式实现与对循环直接求导（keys_only，训练时）按 $n^2$ 增长；SDPA 与分块实现至多按 $n$ 增长。
# 很小的读数（几 MiB）接近测量的分辨率。

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
    "额外内存峰值随 n 的变化：上图只有前向，下图是前向加反向。显式实现按 n² 增长，训练"
    "时对循环直接求导（keys_only）也是；SDPA 与分块实现至多按 n 增长。",
    "两幅双对数图，纵轴是额外内存峰值（MiB），横轴是 n。显式实现的线陡峭上升，下图中 "
    "keys_only 的线也是；SDPA 与分块实现的线上升得慢得多。",
)

# 最大的 n 比它的一半：显式实现（与训练时的 keys_only）约 4 倍，即 n²；
# SDPA 与分块至多 2 倍
peak = {(r["mode"], r["path"], r["n"]): r["peak_extra_mib"] for r in res["memory"]}
n1 = max(n for _, _, n in peak)
grows = {key: peak[key] / peak[(*key[:2], n1 // 2)] for key in peak if key[2] == n1}
assert all(grows[m, "explicit", n1] > 3.5 for m in ("fwd", "fwd+bwd")), grows
assert grows["fwd+bwd", "keys_only", n1] > 3.5, grows
modes = ("fwd", "fwd+bwd")
assert all(grows[m, p, n1] < 2.2 for m in modes for p in ("sdpa", "chunked")), grows

# %% [markdown]
# ## 比值表
#
# 每一行是同一次运行中、逐轮交替测量得到的比值（路径时间 / SDPA 时间），给出中位数、最小值和最大值。

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
