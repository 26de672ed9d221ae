# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 缩放实验（第 4 章）
#
# 这个笔记本在构建网站时执行，下面的图都是当场生成的。它把[第 4 章](../../04-why-sqrt-dk/)的四个论断画成曲线：
#
# 1. 点积 $q \cdot k$ 的方差等于 $d_k$；除以 $\sqrt{d_k}$ 后为 1。
# 2. 不缩放时，softmax 随 $d_k$ 增大而饱和（最大权重 → 1，熵 → 0）；除以 $d_k$ 时趋向均匀（熵 → $\log n$）；除以 $\sqrt{d_k}$ 时与 $d_k$ 无关。
# 3. 饱和让 softmax 输入处的梯度**变小**。
# 4. 但传到查询 $q$ 和 $W_q$ 时，不缩放的梯度**中位数**塌向 0，**均值**却变大。$q$、$k$ 的分量方差为 1 时，$d_k = 512$ 时约一半的行停止学习；其余的行每行多乘约 $\sqrt{d_k}$。$W_q$ 的总梯度比缩放时大好几倍，float32 中没有 NaN。
#
# 下载：[Jupyter 笔记本](scaling.ipynb)，或 jupytext percent 格式的[源文件](scaling.py)（可以当普通 Python 脚本运行）。整个笔记本在 CPU 上几秒钟就能跑完。

# %%
# %matplotlib inline
import math

import torch

torch.manual_seed(0)
D_KS = [4, 8, 16, 32, 64, 128, 256, 512]  # 要扫描的 d_k
N_KEYS = 16  # 每个查询面对的键的个数 n
B = 1000  # 每个 d_k 的随机查询个数
print(torch.__version__)

# %%
from selfattn import plot  # 书中的画图模块：plot.figure 画图，plot.show 显示（3.7 附）

# %% [markdown]
# ## 1. 点积的方差
#
# 每个 $d_k$ 抽 `M` 对独立的标准正态向量 $(q, k)$，计算点积的样本方差。

# %%
M = 10_000
var_raw, var_scaled = [], []
for d_k in D_KS:
    q, k = torch.randn(M, d_k), torch.randn(M, d_k)  # (M, d_k)
    dots = (q * k).sum(dim=-1)  # (M,)
    var_raw.append(dots.var().item())
    var_scaled.append((dots / math.sqrt(d_k)).var().item())

def draw():
    fig, ax = plot.figure(size=(6, 3.6))
    ax.loglog(D_KS, var_raw, "o-", label="Var(q·k), unscaled")
    ax.loglog(D_KS, var_scaled, "s-", label="Var(q·k / √dₖ)")
    ax.loglog(D_KS, D_KS, "--", color=plot.INK, lw=1, label="dₖ (theory)")
    ax.set_xscale("log", base=2)
    plot.plain_ticks(ax)
    ax.set(xlabel="dₖ", ylabel="variance", title="Variance of the dot product")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    return fig


plot.show(
    draw,
    "q·k 的方差随 dₖ 的变化。不缩放时沿虚线 y = dₖ 增长；除以 √dₖ 后保持在 1 附近。",
    "双对数折线图，横轴 dₖ 从 4 到 512。不缩放的方差落在虚线对角线上，缩放后的方差是一"
    "条位于 1 的水平线。",
)

for d_k, v in zip(D_KS, var_raw, strict=True):
    assert abs(v / d_k - 1) < 0.15, (d_k, v)
for v in var_scaled:
    assert abs(v - 1) < 0.15, v

# %% [markdown]
# 未缩放的方差沿着虚线 $y = d_k$ 增长；缩放后的方差始终在 1 附近。
#
# ## 2. softmax 的饱和：最大权重与熵
#
# 对三种缩放（不缩放、除以 $\sqrt{d_k}$、除以 $d_k$），计算每行权重的最大值和熵
# $H = -\sum_j p_j \log p_j$ 的平均。$n = 16$ 时熵的上限是 $\log 16 \approx 2.77$（均匀分布）。

# %%
SCALES = {
    "unscaled": lambda d: 1.0,
    "/ sqrt(d_k)": lambda d: d**-0.5,
    "/ d_k": lambda d: 1.0 / d,
}
max_w = {name: [] for name in SCALES}
entropy = {name: [] for name in SCALES}
grad = {name: [] for name in SCALES}
for d_k in D_KS:
    q = torch.randn(B, 1, d_k)  # (B, 1, d_k)
    k = torch.randn(B, N_KEYS, d_k)  # (B, n, d_k)
    raw = (q @ k.transpose(1, 2)).squeeze(1)  # (B, n)
    g = torch.randn(B, N_KEYS)  # (B, n) 上游梯度，第 3 节用
    for name, scale in SCALES.items():
        z = (raw * scale(d_k)).requires_grad_()  # (B, n)
        p = z.softmax(dim=-1)  # (B, n)
        (p * g).sum().backward()  # z.grad = J^T g
        p = p.detach()
        max_w[name].append(p.max(dim=-1).values.mean().item())
        entropy[name].append(-(p * p.clamp_min(1e-30).log()).sum(dim=-1).mean().item())
        grad[name].append(z.grad.norm(dim=-1).mean().item())

NAMES = {"unscaled": "unscaled", "/ sqrt(d_k)": "÷√dₖ", "/ d_k": "÷dₖ"}  # 图例里的名字


def draw():
    fig, (ax1, ax2) = plot.figure(1, 2, size=(6.7, 3.2), letters=True)
    for name in SCALES:
        ax1.semilogx(D_KS, max_w[name], "o-", base=2, label=NAMES[name])
        ax2.semilogx(D_KS, entropy[name], "o-", base=2, label=NAMES[name])
    ax1.axhline(1 / N_KEYS, color=plot.INK, ls=":", lw=1, label="uniform 1/n")
    ax2.axhline(math.log(N_KEYS), color=plot.INK, ls="--", lw=1, label="log n")
    ax1.set(xlabel="dₖ", ylabel="mean max weight", title="Mean max attention weight")
    ax2.set(xlabel="dₖ", ylabel="mean row entropy (nats)", title="Mean row entropy")
    ax1.set_ylim(0, 1.02)
    ax2.set_ylim(0, 3)
    for ax in (ax1, ax2):
        plot.plain_ticks(ax)
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    return fig


plot.show(
    draw,
    "n = 16 个键时 softmax 的饱和。不缩放时平均最大权重趋向 1，熵趋向 0；除以 dₖ 时权"
    "重趋于均匀；除以 √dₖ 时两条曲线都是平的。",
    "两幅随 dₖ 变化的折线图，每种缩放一条线。（a）是平均最大权重：不缩放的线升向 1，"
    "√dₖ 的线是平的，dₖ 的线降到点线 1/n。（b）是平均熵：不缩放的线降向 0，√dₖ 的线是"
    "平的，dₖ 的线升到虚线 log n。",
)

assert max_w["unscaled"][-1] > max_w["/ sqrt(d_k)"][-1] + 0.5
assert abs(entropy["/ d_k"][-1] - math.log(N_KEYS)) < 0.01
assert max(max_w["/ sqrt(d_k)"]) - min(max_w["/ sqrt(d_k)"]) < 0.05
mw, ent, ent_s = max_w["unscaled"], entropy["unscaled"], entropy["/ sqrt(d_k)"]
assert mw == sorted(mw) and ent == sorted(ent, reverse=True), "不缩放：趋向独热"
assert max(ent_s) - min(ent_s) < 0.1, "/ sqrt(d_k)：熵也是平的"
assert abs(max_w["/ d_k"][-1] - 1 / N_KEYS) < 0.02, "/ d_k: max weight falls to 1/n"

# %% [markdown]
# - 不缩放：$d_k$ 越大，最大权重越接近 1，熵越接近 0，注意力坍塌成独热。
# - 除以 $d_k$：最大权重落向 $1/n$，熵逼近 $\log n$，注意力变得均匀、失去选择性。
# - 除以 $\sqrt{d_k}$：两条曲线都是平的，分布形状与 $d_k$ 无关。
#
# ## 3. 经过 softmax 的梯度
#
# 对随机的上游梯度 $g$，测量损失对 softmax 输入的梯度 $J^\top g$ 的长度，其中 $J = \operatorname{diag}(p) - pp^\top$。

# %%
def draw():
    fig, ax = plot.figure(size=(6, 3.6))
    for name in SCALES:
        ax.semilogx(D_KS, grad[name], "o-", base=2, label=NAMES[name])
    plot.plain_ticks(ax)
    ax.set(xlabel="dₖ", ylabel="mean ‖Jᵀg‖", title="Gradient norm through the softmax")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    return fig


plot.show(
    draw,
    "softmax 输入处梯度的范数。不缩放时随 dₖ 增大而缩小；除以 √dₖ 时与 dₖ 无关。",
    "三种缩放下平均梯度范数随 dₖ 变化的折线图。不缩放的线降到起点的几分之一，√dₖ 的线"
    "是平的，dₖ 的线保持在高位。",
)

unscaled = grad["unscaled"]
sqrt_ = grad["/ sqrt(d_k)"]
assert all(a > b for a, b in zip(unscaled[2:], unscaled[3:], strict=False)), (
    "unscaled: shrinks"
)
assert unscaled[-1] < unscaled[0] / 3, "unscaled: several times smaller at d_k = 512"
assert not any(math.isnan(v) for vs in grad.values() for v in vs), "no NaN anywhere"
assert max(sqrt_) < 1.15 * min(sqrt_), "/ sqrt(d_k): does not depend on d_k"
assert min(grad["/ d_k"]) > 0.5 * min(sqrt_), "/ d_k: the gradient is not small"
print(f"unscaled / scaled at d_k = {D_KS[-1]}: {unscaled[-1] / sqrt_[-1]:.2f}")

# %% [markdown]
# 在 softmax 的输入处，不缩放时梯度随 $d_k$ 变小（$d_k \ge 16$ 之后单调下降），没有任何 NaN。缩放后的梯度与 $d_k$ 无关。
# 除以 $d_k$ 时梯度也不小，但那是因为权重接近均匀，注意力本身已经没有选择性（见第 2 节）。
#
# ## 4. 传到查询 $q$ 与 $W_q$ 的梯度
#
# softmax 输入处的梯度还不是参数收到的梯度。设 $z_j = s\,q \cdot k_j$，则
# $\partial L/\partial q = s\sum_j (\partial L/\partial z_j)\,k_j$，而 $\lVert k_j\rVert \approx \sqrt{d_k}$：
# 没有饱和的行，不缩放（$s = 1$）时要多乘一个约 $\sqrt{d_k}$ 的因子。
# 这里 $q = xW_q$，$W_q$ 让 $q$ 的分量方差约为 1；对每个 $d_k$ 记下每行 $\lVert\partial L/\partial q\rVert$ 的均值与中位数，
# 以及整个 $\lVert\partial L/\partial W_q\rVert$（[第 4 章 4.4 节](../../04-why-sqrt-dk/#gradient-at-q)用三个 $d_k$ 做了同样的测量）。

# %%
torch.manual_seed(0)
TWO = {"unscaled": SCALES["unscaled"], "/ sqrt(d_k)": SCALES["/ sqrt(d_k)"]}
q_mean = {name: [] for name in TWO}
q_median = {name: [] for name in TWO}
w_norm = {name: [] for name in TWO}
q_dead = []  # 不缩放时 ||dL/dq|| < 0.01 的行所占的比例
for d_k in D_KS:
    x = torch.randn(B, d_k)  # (B, d_k)
    w0 = torch.randn(d_k, d_k) / math.sqrt(d_k)  # (d_k, d_k): Var(q_i) ≈ 1
    k = torch.randn(B, N_KEYS, d_k)  # (B, n, d_k)
    g = torch.randn(B, N_KEYS)  # (B, n)
    for name, scale in TWO.items():
        w_q = w0.clone().requires_grad_()
        q = x @ w_q  # (B, d_k)
        z = (k @ q[:, :, None]).squeeze(-1) * scale(d_k)  # (B, n)
        dq, dw = torch.autograd.grad((z.softmax(dim=-1) * g).sum(), (q, w_q))
        dq = dq.norm(dim=-1)  # (B,)
        q_mean[name].append(dq.mean().item())
        q_median[name].append(dq.median().item())
        w_norm[name].append(dw.norm().item())
        if name == "unscaled":
            q_dead.append((dq < 0.01).float().mean().item())
        assert torch.isfinite(dw).all(), "float32: no inf, no NaN"

ratio = [a / b for a, b in zip(w_norm["unscaled"], w_norm["/ sqrt(d_k)"], strict=True)]


def draw():
    fig, (ax1, ax2) = plot.figure(1, 2, size=(6.7, 3.4), letters=True)
    for name, color in zip(("unscaled", "/ sqrt(d_k)"), plot.HEAD_COLORS, strict=False):
        for ys, style, what in ((q_mean, "o-", "mean"), (q_median, "s--", "median")):
            ax1.loglog(D_KS, ys[name], style, color=color, base=2,
                       label=f"{NAMES[name]}: {what}")
    ax2.semilogx(D_KS, ratio, "o-", base=2)
    ax2.axhline(1, color=plot.INK, ls=":", lw=1)
    ax1.set(xlabel="dₖ", ylabel="‖∂L/∂q‖ per row",
            title="Gradient at q: mean vs median")
    ax2.set(xlabel="dₖ", ylabel="ratio", title="‖∂L/∂W_q‖: unscaled / scaled")
    for ax in (ax1, ax2):
        plot.plain_ticks(ax)
        ax.grid(True, which="both", alpha=0.3)
    ax1.legend()
    return fig


plot.show(
    draw,
    "（a）每行在 q 处的梯度。不缩放时中位数塌向 0，均值却增大；缩放后均值与中位数重合。"
    "（b）不缩放时 W_q 的梯度是缩放时的数倍。",
    "（a）是 q 处梯度范数的均值与中位数随 dₖ 变化的双对数图：不缩放的中位数急剧下降，"
    "均值上升；缩放后的两条线重合，而且是平的。（b）是 W_q 梯度范数之比（不缩放 / "
    "缩放），升到点线 1 之上。",
)

un_mean, un_med = q_mean["unscaled"], q_median["unscaled"]
sc_mean, sc_med = q_mean["/ sqrt(d_k)"], q_median["/ sqrt(d_k)"]
assert un_med[-1] < sc_med[-1] / 10, "unscaled: the median row stops learning"
assert un_mean[-1] > 3 * sc_mean[-1], "unscaled: the mean grows (a few rows amplified)"
assert ratio[-1] > 3, "unscaled: ||dL/dW_q|| is several times the scaled one"
assert un_mean[-1] == max(un_mean) > 2 * un_mean[0], "不缩放：均值总体上升"
assert all(md > 0.85 * mn for md, mn in zip(sc_med, sc_mean, strict=True)), (
    "中位数≈均值"
)
assert max(sc_mean) < 1.3 * min(sc_mean), "/ sqrt(d_k): does not depend on d_k"
print(f"d_k = {D_KS[-1]}: median {un_med[-1]:.3f} vs {sc_med[-1]:.3f}, "
      f"mean {un_mean[-1]:.2f} vs {sc_mean[-1]:.2f}, ||dL/dW_q|| ratio {ratio[-1]:.1f}")
print("unscaled, rows with ||dL/dq|| < 0.01:", ", ".join(
    f"d_k = {d}: {x:.1%}" for d, x in zip(D_KS, q_dead, strict=True)))
dead_64 = q_dead[D_KS.index(64)]
assert 0.4 < q_dead[-1] < 0.6 and dead_64 < q_dead[-1] / 2, "停止学习的比例随 d_k 增长"

# %% [markdown]
# 不缩放时，中位数随 $d_k$ 塌向 0。$d_k = 512$ 时约一半的查询已经饱和，停止学习（见上面打印的比例）。这里 $q$、$k$ 的分量方差为 1；
# 方差更小时饱和的查询少得多，例如 `nn.Linear` 默认初始化的方差约 1/3，$d_k = 64$ 时 2,000 行里只有 3 行（0.15%，下面第 5 节）。
# 均值却总体上升（并非每一步都升），因为没有饱和的查询，梯度多乘了约 $\sqrt{d_k}$（净效果小一些，第 5 节量过）。
# 于是 $W_q$ 的总梯度被这些行主导，比缩放时大好几倍。全程 float32，没有 NaN。
# 除以 $\sqrt{d_k}$ 后，均值和中位数几乎重合，也不随 $d_k$ 变化：每个查询都收到大小相近的梯度。

# %% [markdown]
# ## 5. 停止学习的行有多少：看分量的方差
#
# 第 4 节的 $q$、$k$ 分量方差为 1。第 5 章的 `SelfAttention` 用 `nn.Linear` 的默认初始化，分量方差约为 1/3（第 4 章 4.5 节）；原论文每个头的 $d_k = 64$。
# 下面在这两种方差、两个 $d_k$ 下，数一数不缩放时梯度不到 0.01 的行（停止学习的行），再对其余的行比较不缩放与缩放的平均梯度。
# 两者之比叫**净放大倍数**：不缩放时 $\lVert\partial L/\partial q\rVert$ 的均值除以缩放时的均值，只算没有停止学习的行。
# 每一行的乘数 $s\lVert k_j\rVert$ 相差 $\sqrt{d_k}$ 倍，但 softmax 输入处的梯度也不同，所以净效果要量出来。

# %%
torch.manual_seed(0)
B = 2000  # 2000 个查询，与第 4 章 4.4 节相同
print(" var  d_k | unscaled: rows < 0.01 | other rows: net gain")
res = {}
for var in (1.0, 1 / 3):  # 1/3：nn.Linear 默认初始化下的方差
    for d_k in (64, 512):
        q = torch.randn(B, d_k) * var**0.5  # (B, d_k)
        k = torch.randn(B, N_KEYS, d_k) * var**0.5  # (B, n, d_k)
        g = torch.randn(B, N_KEYS)  # (B, n)：上游梯度
        dq = {}
        for s in (1.0, d_k**-0.5):
            qs = q.clone().requires_grad_()
            z = (k @ qs[:, :, None]).squeeze(-1) * s  # (B, n)
            (grad,) = torch.autograd.grad((z.softmax(dim=-1) * g).sum(), qs)
            dq[s] = grad.norm(dim=-1)  # (B,)
        dead = dq[1.0] < 0.01  # 不缩放时几乎停止学习的行
        gain = (dq[1.0][~dead].mean() / dq[d_k**-0.5][~dead].mean()).item()
        res[var, d_k] = share, gain = dead.float().mean().item(), gain
        print(f"{var:4.2f} {d_k:>4} | {int(dead.sum()):>4} of {B} = {share:6.2%} "
              f"| {gain:>20.2f}")
table = {key: (f"{share:.2%}", round(gain, 1)) for key, (share, gain) in res.items()}
assert table == {(1.0, 64): ("15.65%", 4.8), (1.0, 512): ("51.00%", 9.3),
                 (1 / 3, 64): ("0.15%", 9.3), (1 / 3, 512): ("12.25%", 15.3)}, table
assert round(res[1 / 3, 64][0] * B) == 3, "方差 1/3、d_k = 64：2000 行中 3 行"
assert res[1.0, 512][1] < 512**0.5 / 2, "约 9 倍，不到 √512 / 2"
assert res[1 / 3, 64][1] > 64**0.5, "方差 1/3、d_k = 64：比 √64 = 8 还大"

# %% [markdown]
# 方差为 1 时，$d_k = 512$ 约一半的行停止学习，$d_k = 64$ 约六分之一；方差为 1/3、$d_k = 64$（默认初始化加上原论文的头维度）时 2,000 行里只有 3 行（0.15%）。
# 其余的行，净放大倍数依次是 4.8（方差 1、$d_k = 64$）、9.3（方差 1、$d_k = 512$）、9.3（方差 1/3、$d_k = 64$）和 15.3（方差 1/3、$d_k = 512$）。净放大倍数并不等于 $\sqrt{d_k}$：方差为 1、$d_k = 512$ 时约 9，不到 $\sqrt{512} \approx 22.6$ 的一半；方差为 1/3、$d_k = 64$ 时 9.3，反而比 $\sqrt{64} = 8$ 大。
#
# 试一试：把 `N_KEYS` 改成 256，或者把 `D_KS` 扩展到 4096，重新运行。
