# %% [markdown]
# # 代价实验（第 8 章）：多头与 $O(n^2)$
#
# 这个笔记本在每次构建网站时重新运行，图也是那时画的（见[第 8 章](../../08-multihead/)）。它做两个实验：
#
# 1. **多个头有什么用。** 在 8.1 节构造的任务上，训练参数量完全相同的单头与两头 `MultiHeadSelfAttention`，比较误差，并画出学到的逐头注意力图。
# 2. **$O(n^2)$ 的代价。** 测量显式路径（会返回权重的那条路径）的前向时间与内存峰值随序列长度 $n$ 的变化，并与 SDPA 快速路径的时间比较。
#
# 为了让计时在一台可能同时运行其他任务的构建机器上少受干扰，这里只用一个 CPU 线程。具体的毫秒数取决于机器，**不要**把它们当作基准；要看的是随 $n$ 增长的趋势。

# %%
# %matplotlib inline
import time
import weakref
from functools import partial

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode
from torch.utils._pytree import tree_flatten

from selfattn.functional import scaled_dot_product_attention
from selfattn.multihead import MultiHeadSelfAttention

torch.set_num_threads(1)
print("torch", torch.__version__)

# %%
from selfattn import plot  # 书中的画图模块：plot.figure 画图，plot.show 显示（3.7 附）

# %% [markdown]
# ## 1. 多个头有什么用
#
# 任务与 8.1 节相同：每个词元的特征是位置独热（$n = 8$）、类别独热（2 类）和一个数值内容 $p_j$，补一个 0 凑成 $d_\text{model} = 12$。目标的两个通道是：前一个词元的内容 $p_{i-1}$（循环），以及同类词元内容的平均。模型的输出取前两个通道，用均方误差训练。单头与两头模型的参数量完全相同（$4d^2 + 4d$），区别只在于注意力分布的个数。

# %%
N_TOK, N_CAT, D_MODEL = 8, 2, 12


def make_batch(batch: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (B, n, d_model) and targets (B, n, 2) of the two-pattern task."""
    cats = torch.randint(0, N_CAT, (batch, N_TOK), generator=gen)           # (B, n)
    pay = torch.randn(batch, N_TOK, generator=gen)                          # (B, n)
    x = torch.cat([
        torch.eye(N_TOK).expand(batch, N_TOK, N_TOK),                       # 位置独热
        F.one_hot(cats, N_CAT).float(),                                     # 类别独热
        pay[..., None],                                                     # 内容
        torch.zeros(batch, N_TOK, 1),                                       # 补 0
    ], dim=-1)                                                              # (B, n, 12)
    same = (cats[:, :, None] == cats[:, None, :]).float()                   # (B, n, n)
    mean_same = (same @ pay[..., None]).squeeze(-1) / same.sum(-1)          # (B, n)
    return x, torch.stack([pay.roll(1, dims=1), mean_same], dim=-1)         # (B, n, 2)


def train(
    num_heads: int, steps: int = 200
) -> tuple[MultiHeadSelfAttention, list[float]]:
    torch.manual_seed(0)
    model = MultiHeadSelfAttention(D_MODEL, num_heads)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        x, y = make_batch(32, gen)
        out, _ = model(x, need_weights=False)                               # 快速路径
        loss = F.mse_loss(out[..., :2], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


start = time.perf_counter()
models, curves = {}, {}
for h in (1, 2):
    models[h], curves[h] = train(h)
x_test, y_test = make_batch(512, torch.Generator().manual_seed(2))
errors = {}
with torch.no_grad():
    for h, model in models.items():
        out, _ = model(x_test)
        # 每个通道的均方误差
        errors[h] = ((out[..., :2] - y_test) ** 2).mean(dim=(0, 1))
n_params = {h: sum(p.numel() for p in m.parameters()) for h, m in models.items()}
print(f"trained both models in {time.perf_counter() - start:.1f} s")
for h in (1, 2):
    e_prev, e_same = errors[h]
    print(f"h = {h}: {n_params[h]} parameters, test MSE "
          f"previous token = {e_prev:.4f}, same-category mean = {e_same:.4f}")

err1, err2 = errors[1], errors[2]
assert n_params[1] == n_params[2] == 4 * D_MODEL**2 + 4 * D_MODEL, (
    "参数量应相同：4d² + 4d"
)
assert err2.max() < 0.02, f"两头模型应学会两个通道：{err2}"
assert err1.max() > 5 * err2.max(), f"单头模型至少有一个通道明显更差：{err1}"
assert err1[0] < 0.02, "单头模型学会了通道 0（前一个词元）"
assert err1[1] > 10 * err2.max(), f"这里单头模型学不会的是通道 1（同类平均）：{err1}"

# %% [markdown]
# 单头模型至少有一个通道学不会，这里是“同类平均”：它把唯一的注意力分布用在了“前一个词元”上。两头模型两个通道都接近 0。
#
# 下图左上是训练曲线，其余三幅是在一个测试序列上，单头模型与两头模型每个头的注意力图。两头模型中，一个头学成了“错开一位”的对角线，另一个头按类别分块。哪个头学哪种模式取决于初始化；下面的代码在整个测试集上检查这两种模式。

# %%
with torch.no_grad():
    _, per_head = models[2](x_test[:1], average_attn_weights=False)  # (1, 2, n, n)
    _, single = models[1](x_test[:1])                                # (1, n, n)
cats0 = x_test[0, :, N_TOK:N_TOK + N_CAT].argmax(-1).tolist()

with torch.no_grad():
    _, heads_all = models[2](x_test, average_attn_weights=False)  # (512, 2, n, n)
cats_all = x_test[..., N_TOK:N_TOK + N_CAT].argmax(-1)            # (512, n)
same_all = cats_all[:, :, None] == cats_all[:, None, :]           # (512, n, n)
prev = (torch.arange(N_TOK) - 1) % N_TOK                          # 前一个位置（循环）
on_prev = [heads_all[:, j, torch.arange(N_TOK), prev].mean().item() for j in range(2)]
on_same = [(heads_all[:, j] * same_all).sum(-1).mean().item() for j in range(2)]
print("mean weight on the previous token, per head:", [round(w, 2) for w in on_prev])
print("mean weight on the same category, per head: ", [round(w, 2) for w in on_same])
with torch.no_grad():
    _, w1 = models[1](x_test)  # (512, n, n)
on_prev_1 = w1[:, torch.arange(N_TOK), prev].mean().item()
assert on_prev_1 > 0.8, "单头模型把唯一的分布用在前一个词元上"
p_head = max(range(2), key=lambda j: on_prev[j])  # 学成“前一个词元”的那个头
assert on_prev[p_head] > 0.8 and on_same[1 - p_head] > 0.9, (
    "一个头看前一个词元，另一个头看同类词元"
)

def draw():
    # 窄版：四幅上下排列
    shape, size = ((4, 1), (3.8, 12)) if plot.narrow() else ((2, 2), (6.5, 6.5))
    fig, axes = plot.figure(*shape, size=size)
    axes = axes.flatten()
    for h, color in zip((1, 2), plot.HEAD_COLORS, strict=False):
        axes[0].plot(curves[h], color=color, label=f"h = {h}")
    axes[0].set(yscale="log", xlabel="step", ylabel="training MSE",
                title="same parameters, different heads")
    plot.plain_ticks(axes[0])
    axes[0].legend()
    panels = [
        (single[0], "h = 1: the only head"),
        (per_head[0, 0], "h = 2: head 0"),
        (per_head[0, 1], "h = 2: head 1"),
    ]
    ticks = [f"{j}\n({c})" for j, c in enumerate(cats0)]  # 键的序号，类别
    for ax, (w, title) in zip(axes[1:], panels, strict=True):
        im = ax.imshow(w.numpy(), vmin=0, vmax=1, cmap=plot.WEIGHTS_CMAP)
        ax.set(title=title, xlabel="key j (category)", ylabel="query i")
        ax.set_xticks(range(N_TOK), ticks)
        ax.set_yticks(range(N_TOK))
    plot.colorbar(im, list(axes[1:])).set_label("weight")
    return fig


plot.show(
    draw,
    "左上：参数量相同的单头与两头模型的训练损失。其余三幅：在一条测试序列上，单头模型的"
    "注意力权重，以及两头模型每个头的注意力权重。",
    "四幅图。第一幅是对数坐标的训练损失，两头模型的曲线最终更低。其余三幅是 8×8 的注意"
    "力权重热力图，行是查询，列是键，键的刻度标出类别。单头以及两头模型中的一个头把权重"
    "放在前一个词元上，是一条偏移一格的对角线；另一个头把权重分散到同类别的词元上。",
)

# %% [markdown]
# ## 2. $O(n^2)$ 的代价：时间与内存
#
# 设置：$B = 1$，$h = 4$，$d_\text{head} = 32$，float32，只做前向（`torch.no_grad()`）。
#
# **内存怎么测。** CPU 上 PyTorch 没有像 `torch.cuda.max_memory_allocated` 那样的计数器，所以这里用一个 `TorchDispatchMode`。每个 PyTorch 算子返回的新张量，按其存储的字节数计入“当前占用”，张量被释放时扣除；过程中的最大值就是峰值。它测的是**张量**的字节数，不是操作系统看到的进程内存。融合内核（如 SDPA）在内部使用、不作为张量返回的工作缓冲区不计入，所以 SDPA 的读数只有它返回的输出和每行一个数的 log-sum-exp。

# %%
class LiveTensorBytes(TorchDispatchMode):
    """Peak bytes of the tensors created by PyTorch operators while the mode is active.

    A storage is counted once, from the first tensor that holds it until the last such
    tensor is freed: ops like ``matmul`` hand their result's storage on to a new tensor
    object (``_unsafe_view``), so the first object's death does not free the memory.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self.refs: dict[int, int] = {}  # 存储地址 -> 持有它的张量个数

    def _release(self, ptr: int, nbytes: int) -> None:
        self.refs[ptr] -= 1
        if self.refs[ptr] == 0:  # 最后一个持有者释放
            del self.refs[ptr]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            # 视图通过 _base 保住原存储
            if isinstance(t, torch.Tensor) and not t._is_view():
                storage = t.untyped_storage()
                ptr, nbytes = storage.data_ptr(), storage.nbytes()
                if nbytes == 0:
                    continue
                if ptr not in self.refs:  # 新分配的存储
                    self.refs[ptr] = 0
                    self.live += nbytes
                    self.peak = max(self.peak, self.live)
                self.refs[ptr] += 1
                weakref.finalize(t, self._release, ptr, nbytes)  # 张量释放时减少计数
        return out


def peak_mib(fn) -> float:
    with torch.no_grad(), LiveTensorBytes() as mode:
        result = fn()
        del result
    return mode.peak / 2**20


def best_ms(fn, repeats: int = 5) -> float:
    """Best of `repeats` runs: the least noisy estimate on a shared machine."""
    times = []
    with torch.no_grad():
        fn()                                                                # 预热
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return min(times)


def flops(fn) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


B, H, D_HEAD = 1, 4, 32
sizes = [128, 256, 512, 1024, 2048]
rows = []
start = time.perf_counter()
for n in sizes:
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, n, D_HEAD) for _ in range(3))
    explicit = partial(scaled_dot_product_attention, q, k, v)
    causal = partial(scaled_dot_product_attention, q, k, v, is_causal=True)
    sdpa = partial(F.scaled_dot_product_attention, q, k, v)
    rows.append({
        "n": n,
        "scores_mib": B * H * n * n * 4 / 2**20,  # 一份 (B, h, n, n) float32
        "explicit_mib": peak_mib(explicit),
        "causal_mib": peak_mib(causal),
        "sdpa_mib": peak_mib(sdpa),
        "flops": flops(explicit),
        "explicit_ms": best_ms(explicit),
        "sdpa_ms": best_ms(sdpa),
    })
print(f"measured in {time.perf_counter() - start:.1f} s\n")
table = "{:>5} {:>8} {:>9} {:>8} {:>7} {:>10} {:>9}"
print(table.format("n", "scores", "explicit", "+causal", "SDPA", "explicit", "SDPA"))
print(table.format("", "MiB", "peak MiB", "MiB", "MiB", "ms", "ms"))
keys = ["scores_mib", "explicit_mib", "causal_mib", "sdpa_mib",
        "explicit_ms", "sdpa_ms"]
for r in rows:
    print(table.format(r["n"], *(f"{r[key]:.2f}" for key in keys)))

# %% [markdown]
# 检查表中的规律。毫秒数随机器和负载变化，只打印、不断言；断言的是内存的字节数，以及 `FlopCounterMode` 数出的浮点运算数（FLOPs）：

# %%
big, prev = rows[-1], rows[-2]
ratio_explicit = big["explicit_mib"] / big["scores_mib"]
ratio_causal = big["causal_mib"] / big["scores_mib"]
growth = big["explicit_mib"] / prev["explicit_mib"]
speedup = big["explicit_ms"] / big["sdpa_ms"]
print(f"n = {big['n']}: explicit peak = {ratio_explicit:.2f} x one scores matrix, "
      f"with causal mask {ratio_causal:.2f} x")
print(f"n {prev['n']} -> {big['n']}: explicit peak grows {growth:.2f} x")
print(f"n = {big['n']}: explicit / SDPA forward time = {speedup:.1f} "
      "on this machine (printed, never asserted)")
assert 1.9 < ratio_explicit < 2.2, "得分与权重同时存在：约 2 份"
assert 1.9 < ratio_causal < 2.3, "masked_fill 生成新得分后旧得分随即释放：仍约 2 份"
assert 3.8 < growth < 4.2, "n 翻倍，内存约 4 倍"
assert all(r["sdpa_mib"] < r["scores_mib"] for r in rows[1:]), (
    "SDPA 不创建 (B, h, n, n) 的张量"
)
# 输出 (B, h, n, d_head) + lse (B, h, n)
returned_mib = [B * H * r["n"] * (D_HEAD + 1) * 4 / 2**20 for r in rows]
assert all(r["sdpa_mib"] <= 1.1 * m for r, m in zip(rows, returned_mib, strict=True)), (
    "SDPA 只创建它返回的输出与 lse"
)
small = rows[0]
flops_growth = big["flops"] / small["flops"]
assert flops_growth == (big["n"] // small["n"]) ** 2, "工作量随 n² 增长"
assert all(r["flops"] == 4 * B * H * r["n"] ** 2 * D_HEAD for r in rows), "两次矩阵乘法"

# %%
def column(key: str) -> list[float]:
    return [r[key] for r in rows]


ns = column("n")
def draw():
    fig, (ax_t, ax_m) = plot.figure(2, 1, size=(6.7, 7.5))
    ax_t.plot(ns, column("explicit_ms"), "o-", label="explicit (returns weights)")
    ax_t.plot(ns, column("sdpa_ms"), "s-", label="F.scaled_dot_product_attention")
    ref = rows[-1]["explicit_ms"]
    ax_t.plot(ns, [ref * (n / ns[-1]) ** 2 for n in ns], ":", color=plot.INK,
              label="∝ n²")
    ax_t.set(xscale="log", yscale="log", xlabel="sequence length n",
             ylabel="forward time (ms, best of 5)",
             title=f"time (B={B}, h={H}, d_head={D_HEAD}, 1 thread)")
    ax_m.plot(ns, column("explicit_mib"), "o-", label="explicit: measured peak")
    ax_m.plot(ns, column("causal_mib"), "^-",
              label="explicit + is_causal: measured peak")
    one_scores = "one scores matrix, B·h·n²·4 bytes"
    ax_m.plot(ns, column("scores_mib"), ":", color=plot.INK, label=one_scores)
    ax_m.plot(ns, column("sdpa_mib"), "s-", label="SDPA: tensors it returns")
    ax_m.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="MiB",
             title="peak tensor memory")
    for ax in (ax_t, ax_m):
        plot.plain_ticks(ax)
        ax.minorticks_off()
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.legend()
    return fig


plot.show(
    draw,
    "上：显式实现与 SDPA 的前向时间随 n 的变化，点线为 n² 参考线。下：张量内存峰值。无"
    "论有无因果掩码，显式实现都约占两个得分矩阵；SDPA 只占它返回的张量。",
    "两幅双对数图，横轴是序列长度 n，从 128 到 2048。上图是显式实现与 SDPA 的前向毫秒数"
    "，另有一条 n² 点线。下图是以 MiB 计的内存峰值：两条显式实现的线与“一个得分矩阵”的"
    "点线平行，约高一倍；SDPA 的线远在它们之下。",
)

# %% [markdown]
# 两条结论。第一，显式路径的内存是 $n^2$ 的，峰值约为两份得分矩阵；带因果掩码时也是，因为 `masked_fill` 生成新的得分后，旧的随即释放。第二，SDPA 不把整个 `(B, h, n, n)` 矩阵作为张量创建出来。两者的用时也在上表中，只打印、不断言，因为用时取决于机器和负载。显式路径的工作量（FLOPs）精确地按 $n^2$ 增长。不用融合内核也能避开 $n^2$ 的内存，做法见 [8.3 长序列：分块与在线 softmax](../../08-long-sequences/)。
