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
# # Scaling Lab (Chapter 4)
#
# This notebook runs when the site is built, and every figure below is drawn then, turning the claims of [chapter 4](../../04-why-sqrt-dk/) into curves:
#
# 1. The dot product $q \cdot k$ has variance $d_k$, and divided by $\sqrt{d_k}$ it has variance 1.
# 2. Without scaling, the softmax saturates as $d_k$ grows: the maximum weight tends to 1 and the entropy to 0. Dividing by $d_k$ drives it to uniform, with entropy $\log n$, while dividing by $\sqrt{d_k}$ makes it independent of $d_k$.
# 3. Saturation makes the gradient at the softmax input smaller.
# 4. At the query $q$ and at $W_q$, however, the median unscaled gradient collapses toward 0 while the mean grows. With components of $q$ and $k$ of variance 1, about half of the rows stop learning at $d_k = 512$, and each of the other rows gets an extra factor of about $\sqrt{d_k}$. The total gradient of $W_q$ is several times the scaled one, and there is no NaN in float32.
#
# Download the [Jupyter notebook](scaling.ipynb), or the [source file](scaling.py) in jupytext percent format, which also runs as a plain Python script. The whole notebook runs in a few seconds on a CPU.

# %%
# %matplotlib inline
import math

import torch

torch.manual_seed(0)
D_KS = [4, 8, 16, 32, 64, 128, 256, 512]  # the d_k values to sweep
N_KEYS = 16  # n, the number of keys each query faces
B = 1000  # random queries per d_k
print(torch.__version__)

# %%
from selfattn import plot  # the book's figures: plot.figure, plot.show (3.7 appendix)

# %% [markdown]
# ## 1. The variance of the dot product
#
# For each $d_k$, draw `M` pairs $(q, k)$ of independent standard normal vectors and compute the sample variance of their dot products.

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
    "The variance of q·k against dₖ. Unscaled, it grows along the dashed line y = "
    "dₖ. Divided by √dₖ, it stays near 1.",
    "Log-log line plot of the variance against dₖ from 4 to 512. The unscaled curve "
    "lies on the dashed diagonal. The scaled curve is flat at 1.",
)

for d_k, v in zip(D_KS, var_raw, strict=True):
    assert abs(v / d_k - 1) < 0.15, (d_k, v)
for v in var_scaled:
    assert abs(v - 1) < 0.15, v

# %% [markdown]
# The unscaled variance grows along the dashed line $y = d_k$, while the scaled variance stays near 1.
#
# ## 2. Softmax saturation: maximum weight and entropy
#
# For three scalings (none, dividing by $\sqrt{d_k}$, dividing by $d_k$), compute the mean over rows of the maximum weight and of the entropy
# $H = -\sum_j p_j \log p_j$. With $n = 16$ the entropy is at most $\log 16 \approx 2.77$, the entropy of the uniform distribution.

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
    g = torch.randn(B, N_KEYS)  # (B, n) upstream gradient, used in section 3
    for name, scale in SCALES.items():
        z = (raw * scale(d_k)).requires_grad_()  # (B, n)
        p = z.softmax(dim=-1)  # (B, n)
        (p * g).sum().backward()  # z.grad = J^T g
        p = p.detach()
        max_w[name].append(p.max(dim=-1).values.mean().item())
        entropy[name].append(-(p * p.clamp_min(1e-30).log()).sum(dim=-1).mean().item())
        grad[name].append(z.grad.norm(dim=-1).mean().item())

NAMES = {"unscaled": "unscaled", "/ sqrt(d_k)": "÷√dₖ", "/ d_k": "÷dₖ"}  # legend names


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
    "Softmax saturation with n = 16 keys. Unscaled, the mean maximum weight rises "
    "toward 1 and the entropy falls toward 0. Divided by dₖ, the weights become "
    "uniform. Divided by √dₖ, both curves are flat.",
    "Two line plots against dₖ, one line per scaling. (a) The mean maximum weight. "
    "The unscaled line rises toward 1, the √dₖ line is flat, and the dₖ line falls "
    "to the dotted 1/n level. (b) The mean entropy. The unscaled line falls toward "
    "0, the √dₖ line is flat, and the dₖ line rises to the dashed log n level.",
)

assert max_w["unscaled"][-1] > max_w["/ sqrt(d_k)"][-1] + 0.5
assert abs(entropy["/ d_k"][-1] - math.log(N_KEYS)) < 0.01
assert max(max_w["/ sqrt(d_k)"]) - min(max_w["/ sqrt(d_k)"]) < 0.05
mw, ent, ent_s = max_w["unscaled"], entropy["unscaled"], entropy["/ sqrt(d_k)"]
assert mw == sorted(mw) and ent == sorted(ent, reverse=True), "unscaled: toward one-hot"
assert max(ent_s) - min(ent_s) < 0.1, "/ sqrt(d_k): the entropy is flat too"
assert abs(max_w["/ d_k"][-1] - 1 / N_KEYS) < 0.02, "/ d_k: max weight falls to 1/n"

# %% [markdown]
# - Without scaling, the larger $d_k$, the closer the maximum weight gets to 1 and the entropy to 0: attention collapses to one-hot.
# - Divided by $d_k$, the maximum weight falls toward $1/n$ and the entropy approaches $\log n$, so attention becomes uniform and loses its selectivity.
# - Divided by $\sqrt{d_k}$, both curves are flat: the shape of the distribution does not depend on $d_k$.
#
# ## 3. The gradient through the softmax
#
# For a random upstream gradient $g$, measure the norm of the gradient of the loss at the softmax input, $J^\top g$, where $J = \operatorname{diag}(p) - pp^\top$.

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
    "The norm of the gradient at the softmax input. Unscaled, it shrinks as dₖ grows. "
    "Divided by √dₖ, it does not depend on dₖ.",
    "Line plot of the mean gradient norm against dₖ for three scalings. The unscaled "
    "line falls to a fraction of its start. The √dₖ line is flat. The dₖ line stays "
    "high.",
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
# At the softmax input, the unscaled gradient shrinks as $d_k$ grows (monotonically from $d_k \ge 16$ on), with no NaN anywhere, while the scaled gradient does not depend on $d_k$.
# Dividing by $d_k$ does not make the gradient small either, but only because the weights are close to uniform: attention itself has lost its selectivity, as section 2 showed.
#
# ## 4. The gradient at the query $q$ and at $W_q$
#
# The gradient at the softmax input is not yet what the parameters receive. With $z_j = s\,q \cdot k_j$, the gradient at the query is
# $\partial L/\partial q = s\sum_j (\partial L/\partial z_j)\,k_j$, and $\lVert k_j\rVert \approx \sqrt{d_k}$.
# For the rows that are not saturated, no scaling ($s = 1$) therefore means an extra factor of about $\sqrt{d_k}$.
# Here $q = xW_q$, and $W_q$ gives the components of $q$ a variance of about 1. For each $d_k$ we record the mean and the median over rows of $\lVert\partial L/\partial q\rVert$,
# and the whole $\lVert\partial L/\partial W_q\rVert$. [Chapter 4, section 4.4](../../04-why-sqrt-dk/#gradient-at-q) makes the same measurement at three values of $d_k$.

# %%
torch.manual_seed(0)
TWO = {"unscaled": SCALES["unscaled"], "/ sqrt(d_k)": SCALES["/ sqrt(d_k)"]}
q_mean = {name: [] for name in TWO}
q_median = {name: [] for name in TWO}
w_norm = {name: [] for name in TWO}
q_dead = []  # unscaled: share of rows with ||dL/dq|| < 0.01
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
    "(a) The gradient at q, per row. Unscaled, the median collapses toward 0 while "
    "the mean grows. Scaled, the mean and the median coincide. (b) The unscaled "
    "gradient of W_q is several times the scaled one.",
    "(a) A log-log plot of the mean and the median gradient norm at q against dₖ. "
    "The unscaled median drops steeply and the unscaled mean rises. The two scaled "
    "lines lie together and are flat. (b) The ratio of the unscaled to the scaled "
    "gradient norm of W_q, which rises above the dotted line at 1.",
)

un_mean, un_med = q_mean["unscaled"], q_median["unscaled"]
sc_mean, sc_med = q_mean["/ sqrt(d_k)"], q_median["/ sqrt(d_k)"]
assert un_med[-1] < sc_med[-1] / 10, "unscaled: the median row stops learning"
assert un_mean[-1] > 3 * sc_mean[-1], "unscaled: the mean grows (a few rows amplified)"
assert ratio[-1] > 3, "unscaled: ||dL/dW_q|| is several times the scaled one"
assert un_mean[-1] == max(un_mean) > 2 * un_mean[0], "unscaled: the mean rises overall"
assert all(md > 0.85 * mn for md, mn in zip(sc_med, sc_mean, strict=True)), (
    "median ≈ mean"
)
assert max(sc_mean) < 1.3 * min(sc_mean), "/ sqrt(d_k): does not depend on d_k"
print(f"d_k = {D_KS[-1]}: median {un_med[-1]:.3f} vs {sc_med[-1]:.3f}, "
      f"mean {un_mean[-1]:.2f} vs {sc_mean[-1]:.2f}, ||dL/dW_q|| ratio {ratio[-1]:.1f}")
print("unscaled, rows with ||dL/dq|| < 0.01:", ", ".join(
    f"d_k = {d}: {x:.1%}" for d, x in zip(D_KS, q_dead, strict=True)))
dead_64 = q_dead[D_KS.index(64)]
assert 0.4 < q_dead[-1] < 0.6 and dead_64 < q_dead[-1] / 2, "the share grows with d_k"

# %% [markdown]
# Without scaling, the median collapses toward 0 as $d_k$ grows. At $d_k = 512$, with components of $q$ and $k$ of variance 1, about half of the queries are saturated and stop learning, as the shares printed above show.
# With a smaller variance, far fewer queries saturate. Under the default initialization of `nn.Linear` the variance is about 1/3, and at $d_k = 64$ fewer than one row in a hundred saturates (section 5 below).
# The mean, however, rises overall, though not at every step, because the queries that are not saturated get an extra factor of about $\sqrt{d_k}$ in their gradient. The net effect is smaller, and section 5 measures it.
# These rows therefore dominate the total gradient of $W_q$, which is several times the scaled one. Everything runs in float32, and there is no NaN.
# After dividing by $\sqrt{d_k}$, the mean and the median almost coincide and do not change with $d_k$, so every query receives a gradient of similar size.

# %% [markdown]
# ## 5. How many rows stop learning: the variance of the components
#
# In section 4 the components of $q$ and $k$ have variance 1. Chapter 5's `SelfAttention` uses the default initialization of `nn.Linear`, which gives components of variance about 1/3 (chapter 4, section 4.5), and the original paper uses $d_k = 64$ per head.
# Below, for these two variances and two values of $d_k$, we count the rows whose gradient is below 0.01 without the scaling, the rows that stop learning. For the other rows we compare the mean gradient without and with the scaling.
# We call their ratio the **net gain**: the mean of $\lVert\partial L/\partial q\rVert$ without the scaling divided by its mean with it, over the rows that have not stopped learning.
# The per-row multiplier $s\lVert k_j\rVert$ differs by a factor of $\sqrt{d_k}$, but the gradient at the softmax input differs too, so the net effect has to be measured.

# %%
torch.manual_seed(0)
B = 2000  # 2000 queries, as in chapter 4, section 4.4
print(" var  d_k | unscaled: rows < 0.01 | other rows: net gain")
res = {}
for var in (1.0, 1 / 3):  # 1/3: under nn.Linear's init
    for d_k in (64, 512):
        q = torch.randn(B, d_k) * var**0.5  # (B, d_k)
        k = torch.randn(B, N_KEYS, d_k) * var**0.5  # (B, n, d_k)
        g = torch.randn(B, N_KEYS)  # (B, n): upstream gradient
        dq = {}
        for s in (1.0, d_k**-0.5):
            qs = q.clone().requires_grad_()
            z = (k @ qs[:, :, None]).squeeze(-1) * s  # (B, n)
            (grad,) = torch.autograd.grad((z.softmax(dim=-1) * g).sum(), qs)
            dq[s] = grad.norm(dim=-1)  # (B,)
        dead = dq[1.0] < 0.01  # rows that stop learning unscaled
        gain = (dq[1.0][~dead].mean() / dq[d_k**-0.5][~dead].mean()).item()
        res[var, d_k] = share, gain = dead.float().mean().item(), gain
        print(f"{var:4.2f} {d_k:>4} | {int(dead.sum()):>4} of {B} = {share:6.2%} "
              f"| {gain:>20.2f}")
table = {key: (f"{share:.2%}", round(gain, 1)) for key, (share, gain) in res.items()}
assert table == {(1.0, 64): ("15.65%", 4.8), (1.0, 512): ("51.00%", 9.3),
                 (1 / 3, 64): ("0.15%", 9.3), (1 / 3, 512): ("12.25%", 15.3)}, table
assert round(res[1 / 3, 64][0] * B) == 3, "variance 1/3, d_k = 64: 3 rows of 2000"
assert res[1.0, 512][1] < 512**0.5 / 2, "about 9, under √512 / 2"
assert res[1 / 3, 64][1] > 64**0.5, "variance 1/3, d_k = 64: above √64 = 8"

# %% [markdown]
# With variance 1, about half of the rows stop learning at $d_k = 512$, and about one in six at $d_k = 64$. With variance 1/3 and $d_k = 64$ (the default initialization with the original paper's head size), only 3 rows of 2,000 do (0.15%).
# The net gain of the other rows is 4.8 at variance 1 and $d_k = 64$, 9.3 at variance 1 and $d_k = 512$, 9.3 at variance 1/3 and $d_k = 64$, and 15.3 at variance 1/3 and $d_k = 512$. The net gain is not $\sqrt{d_k}$: with variance 1 and $d_k = 512$ it is about 9, under half of $\sqrt{512} \approx 22.6$, and with variance 1/3 and $d_k = 64$ it is 9.3, above $\sqrt{64} = 8$.
#
# To try it yourself, change `N_KEYS` to `256` or extend `D_KS` to `4096`, and run again.
