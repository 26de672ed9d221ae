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
# # 实战实验（第 10 章）
#
# 这个笔记本在构建网站时执行，数字和图都是当场生成的。它是[第 10 章](../../10-capstone/)的完整版：
#
# 1. 在本书自己的文本上训练字符级语言模型，画出训练与验证损失；
# 2. 用训练好的模型生成文本；
# 3. 画出训练后各个头在一句代码上的注意力热力图；
# 4. 实验一：不缩放、除以 $\sqrt{d_k}$、除以 $d_k$，多个随机种子；
# 5. 实验二：会偷看下一个字符的因果掩码，多个随机种子。
#
# 下载：[Jupyter 笔记本](capstone.ipynb)，或 jupytext percent 格式的[源文件](capstone.py)（可以当普通 Python 脚本运行）。
# 整个笔记本在 2 核 CPU 上几分钟跑完（最后一个单元打印实际用时）；所有损失的单位都是 nat / 字符。语料是中文版的正文（`docs/labs/data/book.txt`）。
# **训练出来的数字和生成的文本因机器而异**（CPU 与线程数改变浮点加法的顺序）；下面的断言只检查在不同种子之间都成立的结论。

# %%
# %matplotlib inline
import math
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from selfattn.charlm import (
    baselines, evaluate, load, load_corpus, make_optimizer, train,
)
from selfattn.model import CharLM, generate
from selfattn.multihead import MultiHeadSelfAttention

T0 = time.perf_counter()
root = next(
    p
    for p in [Path.cwd(), *Path.cwd().parents]
    if (p / "docs/labs/data/book.txt").exists()
)
vocab, train_data, val_data = load_corpus(root / "docs/labs/data/book.txt")
V = len(vocab.chars)
UNIGRAM, BIGRAM = baselines(train_data, val_data, V)
print(f"vocabulary {V}, train {len(train_data)}, validation {len(val_data)} characters")
print(
    f"uniform {math.log(V):.2f}, unigram {UNIGRAM:.2f}, bigram {BIGRAM:.2f} nats "
    "(cross-entropy of the training text's frequencies on the validation text)"
)
print(torch.__version__, "threads:", torch.get_num_threads())

# %%
from selfattn import plot  # 书中的画图模块：plot.figure 画图，plot.show 显示（3.7 附）

# %% [markdown]
# ## 1. 训练与验证损失
#
# 4 个头、2 层、$d_\text{model} = 64$、上下文 64 个字符，训练 400 步（每步 16 个窗口）。
# 每 50 步在整个验证集上估一次损失（与图中的基准线是同一段文本）；训练损失画的是 20 步的滑动平均。

# %%
STEPS, EVERY = 400, 50
torch.manual_seed(0)
model = CharLM(V, block_size=64, d_model=64, num_heads=4, num_layers=2)
opt = make_optimizer(model, lr=3e-3)
train_curve, val_curve = [], [(0, evaluate(model, val_data))]
for start in range(0, STEPS, EVERY):
    train_curve += train(
        model, train_data, EVERY, batch_size=16, warmup=40, start=start, total=STEPS,
        seed=start, opt=opt,
    )
    val_curve.append((start + EVERY, evaluate(model, val_data)))
final_val = val_curve[-1][1]

smooth = [statistics.fmean(train_curve[max(0, i - 19) : i + 1]) for i in range(STEPS)]
def draw():
    fig, ax = plot.figure(size=(6.5, 3.8))
    ax.plot(range(1, STEPS + 1), smooth, label="train (20-step mean)")
    ax.plot(*zip(*val_curve, strict=True), "o-", label="validation")
    ax.axhline(UNIGRAM, color=plot.INK, ls="--", lw=1, label=f"unigram {UNIGRAM:.2f}")
    ax.axhline(BIGRAM, color="tab:red", ls="--", lw=1, label=f"bigram {BIGRAM:.2f}")
    uniform = f"uniform ln {V} = {math.log(V):.2f}"
    ax.axhline(math.log(V), color="gray", ls=":", lw=1, label=uniform)
    ax.set(xlabel="step", ylabel="loss (nats / char)",
           title="Character-level LM on the book's own text")
    ax.legend()
    ax.grid(True, alpha=0.3)
    return fig


plot.show(
    draw,
    "字符级模型 400 步训练中的训练损失（20 步滑动平均）与验证损失。虚线是一元与二元基准"
    "，点线是均匀分布基准。",
    "损失（nats / 字符）随训练步数变化的折线图。两条曲线从均匀分布的点线附近开始下降，"
    "验证曲线最终明显低于虚线（一元基准）。红色虚线标出二元基准。",
)
print(
    f"final validation loss {final_val:.3f} nats (whole validation split); "
    f"unigram {UNIGRAM:.3f}, bigram {BIGRAM:.3f}"
)
assert final_val < UNIGRAM - 0.5, "明显低于一元基准：模型在用上下文"
train_end = statistics.fmean(train_curve[-20:])
print(f"training loss, mean of the last 20 steps: {train_end:.3f}")
assert train_end < final_val, "the training loss is below the validation loss"

# %% [markdown]
# 验证损失在一元基准（虚线）之下半个 nat 以上，所以模型学到的不只是字符频率。400 步能否打败二元基准（红线）因版本而异；下面提交的模型必须打败它。
# 训练损失低于验证损失，一部分是过拟合，一部分是因为验证集是书的末尾（第 8 章末尾与第 9 章），与前面各章的风格不完全相同。

# %% [markdown]
# ## 2. 生成的文本
#
# 温度 0.8，只在最可能的 20 个字符中采样。**这些文本因机器而异。**

# %%
g = torch.Generator().manual_seed(0)
for prompt in ("def ", "注意力", "缩放"):
    out = generate(
        model, vocab.encode(prompt)[None], 160, temperature=0.8, top_k=20, generator=g
    )
    print(repr(vocab.decode(out[0])), end="\n\n")

# %% [markdown]
# ### 提交的模型（`make model`）
#
# 上面的模型只训练了 400 步。`make model` 用同样的代码训练一个更大的模型（3 层、$d_\text{model} = 96$），检查点随仓库提交。这里载入它，在整个验证集上比较基准线，再生成一段文本。
# 写出的有多少是真正的词？中文不用空格分词，这只对英文版好回答：`make model` 让英文模型写 3 段、各 2,000 个字符（种子 0、1、2；温度 0.7，top-k 10），按空白切分、去掉每个词两端的标点，不分大小写地查英文词典（Debian 的 `wamerican`），把比例记在检查点里；这里打印出来。`words` 只数全由字母组成的词，`long` 只数 5 个字母及以上的词，`tokens` 数全部词元（数字和代码也算）；旁边是语料本身的比例。

# %%
big, big_vocab = load(root / "models/charlm.pt")
meta = torch.load(root / "models/charlm.pt", weights_only=True)["meta"]
big_val = evaluate(big, val_data)
print(f"committed model, {meta['steps']} steps: validation loss {big_val:.3f}")
print(f"unigram {UNIGRAM:.3f}, bigram {BIGRAM:.3f}")
assert big_val < BIGRAM - 0.3, "the committed model beats the bigram"

prompt = "注意力"
out = generate(
    big, big_vocab.encode(prompt)[None], 600, temperature=0.7, top_k=10,
    generator=torch.Generator().manual_seed(0),
)
print(big_vocab.decode(out[0]))
en_meta = torch.load(root / "models/charlm.en.pt", weights_only=True)["meta"]
shares, sample = en_meta["dict_shares"], en_meta["sample"]
print(f"English model, {sample}: share in the dictionary per seed")
for key in ("words", "long", "tokens"):
    median = sorted(shares[key])[1]
    print(f"{key:6} {shares[key]}, median {median:.3f}, "
          f"corpus {en_meta['corpus_shares'][key]:.3f}")

# %% [markdown]
# ## 3. 训练后各个头的注意力
#
# 对一行代码，算出每一层、每个头的注意力权重 $\operatorname{softmax}(QK^\top / \sqrt{d_\text{head}})$（因果）。
# 权重用与模型相同的 `in_proj` 和 LayerNorm 重新算出来（模型的前向走 SDPA 快速路径，不存权重）。


# %%
def heads(attn: MultiHeadSelfAttention, h: torch.Tensor):
    """q, k, v of each head, (B, h, n, d_head), from the LayerNorm-ed input h."""
    b, n, _ = h.shape
    qkv = attn.in_proj(h).view(b, n, 3, attn.num_heads, attn.d_head)
    return qkv.permute(2, 0, 3, 1, 4)


@torch.no_grad()
def attention_maps(model: CharLM, idx: torch.Tensor) -> list[torch.Tensor]:
    """Per layer, the causal attention weights (B, h, n, n) of each head."""
    model.eval()
    x, maps = model.embed(idx), []
    n = idx.shape[1]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    for block in model.blocks:
        q, k, _ = heads(block.attn, block.ln1(x))
        scale = getattr(block.attn, "scale", block.attn.d_head**-0.5)
        s = (q @ k.transpose(-2, -1) * scale).masked_fill(~allowed, float("-inf"))
        maps.append(s.softmax(dim=-1))
        x = block(x)
    return maps


sentence = "q, k, v = qkv.chunk(3, dim=-1)"
maps = attention_maps(model, vocab.encode(sentence)[None])
def draw():
    small = plot.narrow()  # 每隔一个字符标一个（窄版隔两个）
    fig, axes = plot.figure(4, len(maps), size=(3.8, 8.8) if small else (6.7, 13))
    at = range(0, len(sentence), 3 if small else 2)
    chars = [sentence[i] for i in at]
    for layer, w in enumerate(maps):
        for head in range(4):
            ax = axes[head, layer]
            im = ax.imshow(w[0, head], cmap=plot.WEIGHTS_CMAP, vmin=0, vmax=1)
            ax.set_title(f"layer {layer}, head {head}")
            ax.set_xticks(at, chars, family="monospace")
            ax.set_yticks(at, chars, family="monospace")
    plot.colorbar(im, axes)
    fig.suptitle("Attention weights (row = query, column = key)")
    return fig


plot.show(
    draw,
    "训练好的模型（2 层，每层 4 个头）的 8 个头在一行源代码上的因果注意力权重。每行是一"
    "个查询，每列是一个键。",
    "八幅热力图，每层每个头一幅，两条轴上都是这行代码 q, k, v = qkv.chunk(3, dim=-1) 的"
    "字符。每幅图的上三角都是暗的，因为掩码遮住了未来。有的头在对角线或紧挨其下的一条线"
    "上最亮，有的头把权重分散到更早的字符上。",
)
rows = torch.stack(maps)[:, 0]  # (layers, h, n, n)
assert torch.allclose(rows.sum(-1), torch.ones(()), atol=1e-5)
assert (rows.triu(diagonal=1) == 0).all(), "因果：没有权重落在未来"

# %% [markdown]
# 因为因果掩码，每个子图的上三角都是 0。训练后的头各有分工：有的头几乎只看自己或前一个字符（对角线或次对角线亮），
# 有的头把权重分给更早的字符（例如括号、逗号和 `=`）。具体哪个头做什么因机器而异。

# %% [markdown]
# ## 4. 实验一：不缩放、除以 $\sqrt{d_k}$、除以 $d_k$
#
# 第 4 章在随机向量上说明：不缩放时得分的方差随 $d_k$ 增长、softmax 饱和；除以 $d_k$ 时权重趋于均匀。
# 在真实训练中会怎样？我们用单头、$d_\text{head} = d_\text{model} = 64$、1 层的模型（头越宽，差别越有机会出现，
# 见 4.5 节），把得分分别乘以 $1$、$1/\sqrt{d_k}$、$1/d_k$，每种 3 个随机种子，各训练 150 步（上下文 32，每步 16 个窗口，
# 学习率沿一条余弦曲线从 3e-3 降到 3e-4，中途测量时不重新开始），测验证损失和注意力的平均熵（所有查询行的平均，单位 nat）。
# 验证损失在验证集开头的 255 个窗口上测，一元与二元基准也在**同一段文本**上算（下面打印）。
#
# 150 步只是训练的开头：这个实验比较的是各种缩放在训练初期的表现，不是它们最终能达到的水平。
#
# 作为参照：因果注意力下第 $i$ 行（0 起）有 $i+1$ 个可看的键，均匀权重的熵是 $\ln(i+1)$；32 行平均约为下面打印的 `uniform`。


# %%
class ScaledSelfAttention(MultiHeadSelfAttention):
    """MultiHeadSelfAttention with scores multiplied by ``scale`` (not 1/√d_head)."""

    def __init__(self, d_model: int, num_heads: int, scale: float) -> None:
        super().__init__(d_model, num_heads)
        self.scale = scale

    def forward(self, x, mask=None, *, is_causal=False, need_weights=False, **_):
        b, n, d = x.shape
        q, k, v = heads(self, x)
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, scale=self.scale
        )
        return self.out_proj(a.transpose(1, 2).reshape(b, n, d)), None


def small_model(seed: int, scale: float | None = None) -> CharLM:
    torch.manual_seed(seed)
    m = CharLM(V, block_size=32, d_model=64, num_heads=1, num_layers=1)
    if scale is not None:
        new = ScaledSelfAttention(64, 1, scale)
        new.load_state_dict(m.blocks[0].attn.state_dict())  # 同样的初始权重，只换缩放
        m.blocks[0].attn = new
    return m


@torch.no_grad()
def mean_entropy(m: CharLM) -> float:
    idx = val_data[: 32 * 64].view(64, 32)  # 64 个验证窗口
    w = attention_maps(m, idx)[0]  # (64, 1, 32, 32)
    return -(w * w.clamp_min(1e-30).log()).sum(-1).mean().item()


def spread(xs):
    mean, std = statistics.fmean(xs), statistics.stdev(xs)
    return f"{mean:.3f} ± {std:.3f} (min {min(xs):.3f}, max {max(xs):.3f})"


D = 64
SCALES = {"1 (unscaled)": 1.0, "1/sqrt(d_k)": D**-0.5, "1/d_k": 1.0 / D}
SEEDS, CHECK = (0, 1, 2), (0, 50, 100, 150)
UNIFORM = statistics.fmean(math.log(i + 1) for i in range(32))
EVAL = val_data[: 255 * 32 + 1]  # 实验的验证文本：255 个 32 字符的窗口，以及它们的目标
UNI_E, BI_E = baselines(train_data, EVAL, V)  # 同一段文本上的基准
print(
    f"on the experiments' text: uniform {math.log(V):.3f}, unigram {UNI_E:.3f}, "
    f"bigram {BI_E:.3f} nats"
)


def run(m: CharLM, seed: int, mask: torch.Tensor | None = None) -> dict:
    """Train ``m`` for 150 steps on one cosine schedule (3e-3 to 3e-4); at each
    step of CHECK, the validation loss (causal mask) and the attention entropy."""
    opt = make_optimizer(m, lr=3e-3)
    r = {"val": [evaluate(m, EVAL)], "entropy": [mean_entropy(m)], "train": []}
    for a, b in zip(CHECK, CHECK[1:], strict=False):
        r["train"] += train(
            m, train_data, b - a, batch_size=16, start=a, total=CHECK[-1],
            seed=1000 * seed + a, mask=mask, opt=opt,
        )
        r["val"].append(evaluate(m, EVAL))
        r["entropy"].append(mean_entropy(m))
    return r


@torch.no_grad()
def score_variance(m: CharLM) -> float:
    """Variance of the unscaled scores q·k of the first layer on validation windows."""
    x = m.embed(val_data[: 32 * 64].view(64, 32))
    q, k, _ = heads(m.blocks[0].attn, m.blocks[0].ln1(x))
    return (q @ k.transpose(-2, -1)).var().item()


score_var = [score_variance(small_model(s)) for s in SEEDS]
print(f"score variance at initialization: {spread(score_var)}; d_k/9 = {D / 9:.2f}")
assert all(abs(v / (D / 9) - 1) < 0.15 for v in score_var)
trained = {}  # (name, seed) -> the trained model
runs = {}  # (name, seed) -> {"val": [...], "entropy": [...], "train": [...]}
t = time.perf_counter()
for name, scale in SCALES.items():
    for seed in SEEDS:
        m = small_model(seed, scale)
        runs[name, seed], trained[name, seed] = run(m, seed), m
print(f"{len(runs)} runs in {time.perf_counter() - t:.0f} s")
print(f"entropy of uniform causal weights, mean over rows: {UNIFORM:.2f}")


for name in SCALES:
    v = [runs[name, s]["val"][-1] for s in SEEDS]
    e0 = [runs[name, s]["entropy"][0] for s in SEEDS]
    e = [runs[name, s]["entropy"][-1] for s in SEEDS]
    print(f"{name:13s} val loss {spread(v)}")
    print(f"{'':13s} entropy at step 0 {spread(e0)}; at step 150 {spread(e)}")

# %%
def draw():
    fig, axes = plot.figure(2, 1, size=(6.7, 7.5))
    axes[1].sharex(axes[0])
    for name in SCALES:
        shown = name.replace("sqrt(d_k)", "√dₖ").replace("d_k", "dₖ")
        for key, ax in zip(("val", "entropy"), axes, strict=True):
            ys = [[runs[name, s][key][i] for s in SEEDS] for i in range(len(CHECK))]
            mean = [statistics.fmean(y) for y in ys]
            ax.errorbar(
                CHECK,
                mean,
                yerr=[
                    [m - min(y) for m, y in zip(mean, ys, strict=True)],
                    [max(y) - m for m, y in zip(mean, ys, strict=True)],
                ],
                marker="o",
                capsize=3,
                label=shown,
            )
    axes[0].axhline(UNI_E, color=plot.INK, ls="--", lw=1, label="unigram")
    axes[0].axhline(BI_E, color="tab:red", ls="--", lw=1, label="bigram")
    axes[0].set_ylabel("validation loss (nats / char)")
    axes[1].axhline(UNIFORM, color="gray", ls=":", lw=1, label="uniform weights")
    axes[1].set_ylabel("mean attention entropy (nats)")
    axes[1].set_xlabel("step")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("Score scaling in training: mean over 3 seeds, bars = min..max")
    return fig


plot.show(
    draw,
    "训练中的得分缩放。每个点是 3 个种子的均值，误差棒从最小值到最大值。上：验证损失。"
    "下：注意力权重的平均熵。",
    "两幅随训练步数变化的折线图，每种缩放一条线：1、1/√dₖ、1/dₖ。上图中三者的验"
    "证损失都降到虚线（一元基准）之下，但仍在红色虚线（二元基准）之上；1/√dₖ 的均"
    "值最终最低。下图中 1/dₖ 的熵从均匀权重的点线出发，最终低于它；不缩放的线在开"
    "始和结束时都最低。",
)

# %% [markdown]
# 下面的断言检查正文里的每一句结论：“每个种子上”的比较都是“一组的最大值 < 另一组的最小值”；“在种子间的波动之内”就是两组的范围重叠。


# %%
def final(name, key):
    return [runs[name, s][key][-1] for s in SEEDS]


def first(name, key):
    return [runs[name, s][key][0] for s in SEEDS]


# 初始化时：除以 d_k 的权重最接近均匀，不缩放的最尖
assert max(first("1 (unscaled)", "entropy")) < min(first("1/sqrt(d_k)", "entropy"))
assert max(first("1/sqrt(d_k)", "entropy")) < min(first("1/d_k", "entropy"))
# 训练后：不缩放的最尖，除以 d_k 的最平（每个种子都如此）
assert max(final("1 (unscaled)", "entropy")) < min(final("1/sqrt(d_k)", "entropy"))
assert max(final("1/sqrt(d_k)", "entropy")) < min(final("1/d_k", "entropy"))
# 训练初期：每种缩放都低于一元基准（用到了上下文），但都还高于二元基准
assert all(BI_E < min(final(name, "val")) for name in SCALES)
assert all(max(final(name, "val")) < UNI_E for name in SCALES)
sqrt_val, flat_val = final("1/sqrt(d_k)", "val"), final("1/d_k", "val")
raw_val = final("1 (unscaled)", "val")
print("1/d_k worse than 1/sqrt(d_k) on every seed:", min(flat_val) > max(sqrt_val))
print("unscaled worse than 1/sqrt(d_k) on every seed:", min(raw_val) > max(sqrt_val))
# 验证损失：不缩放在每个种子上都比 1/sqrt(d_k) 差
assert min(raw_val) > max(sqrt_val)
# 除以 d_k 平均更差，但在种子间的波动之内（两组的范围重叠）
assert statistics.fmean(flat_val) > statistics.fmean(sqrt_val)
assert min(flat_val) < max(sqrt_val)
# 初始化时 1/d_k 的权重是均匀的（相差不到 0.01 nat）；训练后不再均匀
assert all(abs(e - UNIFORM) < 0.01 for e in first("1/d_k", "entropy"))
assert all(e < UNIFORM - 0.2 for e in final("1/d_k", "entropy"))

# %% [markdown]
# 读结果（每个种子都成立）：
#
# - **注意力熵**：三种缩放在每个种子上互不重叠。不缩放时权重最尖；除以 $d_k$ 时，初始权重是均匀的（虚线，相差不到 0.01 nat），与第 4 章在随机向量上的结论一致；训练后它在三者中最平，但已不再均匀。初始化时的顺序是构造决定的（权重相同，得分只差一个正的倍数）；训练后的顺序是测出来的。
# - **验证损失**：不缩放在每个种子上都比 $1/\sqrt{d_k}$ 差。除以 $d_k$ 的均值也比 $1/\sqrt{d_k}$ 高，但差别在种子间的波动之内：3 个种子的范围重叠。
# - **与基准比**：150 步后，每种缩放、每个种子都低于一元基准（模型用到了上下文），却都还高于二元基准，说明一张“前一个字符 → 下一个字符”的频率表仍然预测得更好。所以这是训练初期的比较：错误的缩放让起步更慢，它最终会不会追上，这里没有测。

# %% [markdown]
# ## 5. 实验二：会偷看的因果掩码
#
# 把因果掩码写错一格，写成 `tril(diagonal=1)`，位置 $i$ 就能看到 $i+1$，也就是它要预测的字符。
# 同样的小模型（单头，$1/\sqrt{d_k}$），3 个种子，各训练 150 步；诚实的对照就是实验一里 $1/\sqrt{d_k}$ 的三次运行，它们的初始权重、批次和学习率曲线都相同，只有掩码不同。
# 测四样东西：训练损失（最后 10 步平均）、用错误掩码算的验证损失、用**正确**掩码算的验证损失，以及生成的文本。
# 生成时没有“下一个字符”可偷看（`generate` 用的是正确的因果掩码）。怎样给文本打分？我们数两样：
# 300 个生成字符里**最常见的那个字符占多少**（书中最常见的字符，空格，约占下面打印的 `book`），以及出现了多少种不同的字符。

# %%
LEAKY = torch.ones(32, 32, dtype=torch.bool).tril(diagonal=1)
BOOK_TOP = torch.bincount(train_data).max().item() / len(train_data)


def sample_stats(m: CharLM, seed: int) -> tuple[float, int]:
    """Share of the most common character and number of distinct ones in 300 samples."""
    out = generate(
        m,
        vocab.encode("\n")[None],
        300,
        temperature=1.0,
        generator=torch.Generator().manual_seed(seed),
    )[0, 1:]
    return torch.bincount(out).max().item() / len(out), len(out.unique())


@torch.no_grad()
def position_losses(m: CharLM, mask: torch.Tensor) -> torch.Tensor:
    """Validation loss at each of the 32 positions of a window, (32,)."""
    x, y = EVAL[:-1].view(-1, 32), EVAL[1:].view(-1, 32)  # (255, 32)
    logits = m.eval()(x, mask)  # (windows, 32, V)
    return F.cross_entropy(logits.transpose(1, 2), y, reduction="none").mean(0)


leak, honest = [], []
for seed in SEEDS:
    m = small_model(seed)  # 默认缩放 1/√d_k，与实验一的诚实模型同样的初始权重
    r = run(m, seed, LEAKY)  # 同样的批次、同样的学习率曲线，只换掩码
    per_pos = position_losses(m, LEAKY)
    leak.append(
        {
            "train": statistics.fmean(r["train"][-10:]),
            "pos_0_30": per_pos[:31].mean().item(),
            "pos_31": per_pos[31].item(),
            "val_leaky": evaluate(m, EVAL, LEAKY),
            "val_causal": r["val"][-1],
            **dict(zip(("top_char", "distinct"), sample_stats(m, seed), strict=True)),
        }
    )
    r = runs["1/sqrt(d_k)", seed]
    honest.append(
        {
            "train": statistics.fmean(r["train"][-10:]),
            "val_causal": r["val"][-1],
            **dict(
                zip(
                    ("top_char", "distinct"),
                    sample_stats(trained["1/sqrt(d_k)", seed], seed),
                    strict=True,
                )
            ),
        }
    )
KEYS = (
    "train", "pos_0_30", "pos_31", "val_leaky", "val_causal", "top_char", "distinct",
)
for key in KEYS:
    row = f"{key:10s} leaky mask: {spread([x[key] for x in leak])}"
    if key in honest[0]:
        row += f"\n{'':10s} honest:     {spread([x[key] for x in honest])}"
    print(row)
print(f"unigram {UNI_E:.3f}; book: most common character {BOOK_TOP:.3f}")

# %%
def draw():
    fig, ax = plot.figure(size=(6.5, 3.6))
    labels = ["train loss\n(its own mask)", "val loss\n(correct mask)"]
    for i, (group, name) in enumerate(
        ((honest, "honest causal mask"), (leak, "leaky mask (i sees i+1)"))
    ):
        ys = [[x["train"] for x in group], [x["val_causal"] for x in group]]
        ax.bar(
            [j + 0.38 * i for j in range(2)],
            [statistics.fmean(y) for y in ys],
            width=0.36,
            yerr=[statistics.stdev(y) for y in ys],
            capsize=4,
            label=name,
        )
    ax.axhline(UNI_E, color=plot.INK, ls="--", lw=1, label="unigram")
    ax.set_xticks([0.19, 1.19], labels)
    ax.set(ylabel="nats / char", title="A leaking causal mask: 3 seeds, bars = std")
    ax.legend()
    return fig


plot.show(
    draw,
    "泄漏的因果掩码与诚实的掩码，3 个种子。泄漏模型的训练损失低得多；换回正确的掩码后，"
    "它的验证损失高得多，超过一元基准线。",
    "损失（nats / 字符）的柱状图，误差棒为标准差。训练损失一组中，泄漏模型的柱远低于诚"
    "实模型；在用正确掩码的验证损失一组中，泄漏模型的柱高于诚实模型，也高于一元基准虚线"
    "。",
)

for name, mdl in (("leaky", m), ("honest", trained["1/sqrt(d_k)", SEEDS[-1]])):
    out = generate(
        mdl, vocab.encode("def ")[None], 120, generator=torch.Generator().manual_seed(0)
    )
    print(f"{name} model, sample (machine-dependent): {vocab.decode(out[0])!r}")

# %% [markdown]
# 下一个单元核对以下三点，3 个种子全部满足：
#
# - 偷看的模型训练损失远低于诚实模型，但不是 0。位置 31（窗口的最后一个）看不到它的目标，即窗口之后的字符；它的损失比位置 0–30 高 2 nat 以上，给平均值垫了底。
# - 换回正确的掩码后，它的验证损失比诚实模型高，甚至比同一段文本上的一元基准还差。
# - 它生成的文本退化了：最常见的那个字符所占的比例高于诚实模型，也高于书中最常见字符比例的两倍。

# %%
assert max(x["train"] for x in leak) < min(x["train"] for x in honest) - 1.0
assert min(x["val_causal"] for x in leak) > max(x["val_causal"] for x in honest) + 0.5
assert min(x["val_causal"] for x in leak) > UNI_E
assert min(x["top_char"] for x in leak) > max(x["top_char"] for x in honest)
assert min(x["top_char"] for x in leak) > 2 * BOOK_TOP
assert all(x["pos_31"] > x["pos_0_30"] + 2.0 for x in leak)
print(f"whole notebook: {time.perf_counter() - T0:.0f} s")
