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
# # Capstone Lab (Chapter 10)
#
# This notebook runs when the site is built, which produces its numbers and plots. It is the full version of [chapter 10](../../10-capstone/), in five steps:
#
# 1. Train a character-level language model on the book's own text, and plot the training and validation losses.
# 2. Generate text with the trained model.
# 3. Plot the attention heatmaps of every trained head for one line of source text.
# 4. Experiment 1 compares no scaling, dividing by $\sqrt{d_k}$ and dividing by $d_k$, over several random seeds.
# 5. Experiment 2 trains with a causal mask that peeks at the next character, over several random seeds.
#
# Download the [Jupyter notebook](capstone.ipynb), or the [source file](capstone.py) in jupytext percent format, which also runs as a plain Python script.
# The whole notebook takes a few minutes on a 2-core CPU, and the last cell prints the actual time; all losses are in nats per character.
# The corpus is the text of the English edition (`docs/labs/data/book.en.txt`), so the prompts and the generated samples are English.
# **The trained numbers and the generated text vary by machine**, because the CPU and the number of threads change the order of floating-point additions. The assertions below therefore test only conclusions that hold across seeds.

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
    if (p / "docs/labs/data/book.en.txt").exists()
)
vocab, train_data, val_data = load_corpus(root / "docs/labs/data/book.en.txt")
V = len(vocab.chars)
UNIGRAM, BIGRAM = baselines(train_data, val_data, V)
print(f"vocabulary {V}, train {len(train_data)}, validation {len(val_data)} characters")
print(
    f"uniform {math.log(V):.2f}, unigram {UNIGRAM:.2f}, bigram {BIGRAM:.2f} nats "
    "(cross-entropy of the training text's frequencies on the validation text)"
)
print(torch.__version__, "threads:", torch.get_num_threads())

# %%
from selfattn import plot  # the book's figures: plot.figure, plot.show (3.7 appendix)

# %% [markdown]
# ## 1. Training and validation loss
#
# The model has 4 heads, 2 layers, $d_\text{model} = 64$ and a context of 64 characters, and it trains for 400 steps of 16 windows each.
# Every 50 steps the loss is measured on the whole validation split, the text on which the baselines drawn beside it are computed. The training loss is plotted as a 20-step moving average.

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
    "The training loss (20-step mean) and the validation loss of the character-level "
    "model over 400 steps. The dashed lines are the unigram and bigram baselines, and "
    "the dotted line is the uniform one.",
    "Line plot of the loss in nats per character against the step. Both curves start "
    "near the dotted uniform line and fall. The validation curve ends well below the "
    "dashed unigram line. A red dashed line marks the bigram baseline.",
)
print(
    f"final validation loss {final_val:.3f} nats (whole validation split); "
    f"unigram {UNIGRAM:.3f}, bigram {BIGRAM:.3f}"
)
assert final_val < UNIGRAM - 0.5, "well below the unigram baseline: context used"
train_end = statistics.fmean(train_curve[-20:])
print(f"training loss, mean of the last 20 steps: {train_end:.3f}")
assert train_end < final_val, "the training loss is below the validation loss"

# %% [markdown]
# The validation loss is more than half a nat below the unigram baseline, the dashed line, so the model has learned more than the character frequencies. Whether 400 steps also beat the bigram baseline, the red line, depends on the edition, but the committed model below must beat it.
# The training loss is below the validation loss partly because of overfitting. The rest comes from the validation split, the end of the book (the end of chapter 8 and chapter 9), whose style differs somewhat from the earlier chapters.

# %% [markdown]
# ## 2. Generated text
#
# The temperature is 0.8, and sampling is restricted to the 20 most likely characters; these texts vary by machine.

# %%
g = torch.Generator().manual_seed(0)
for prompt in ("def ", "Attention", "The "):
    out = generate(
        model, vocab.encode(prompt)[None], 160, temperature=0.8, top_k=20, generator=g
    )
    print(repr(vocab.decode(out[0])), end="\n\n")

# %% [markdown]
# ### The committed model (`make model`)
#
# The model above trained for just 400 steps, while `make model` trains a larger one with the same code (3 layers, $d_\text{model} = 96$), whose checkpoint is committed with the repository. Here we load it, compare it with the baselines on the whole validation split, and generate some text.
# How much of the English model's text is English? `make model` draws three samples of 2,000 characters, with seeds 0, 1 and 2, temperature 0.7 and top-k 10. It splits them on whitespace, strips the punctuation around each word, and looks the words up in an English dictionary (Debian's `wamerican`), ignoring case, and records the shares in the checkpoint, which this cell prints with the corpus's own shares beside them. `words` counts the words made of letters only, `long` those of 5 letters or more, and `tokens` every token, numbers and code included.

# %%
big, big_vocab = load(root / "models/charlm.en.pt")
meta = torch.load(root / "models/charlm.en.pt", weights_only=True)["meta"]
big_val = evaluate(big, val_data)
print(f"committed model, {meta['steps']} steps: validation loss {big_val:.3f}")
print(f"unigram {UNIGRAM:.3f}, bigram {BIGRAM:.3f}")
assert big_val < BIGRAM - 0.3, "the committed model beats the bigram"

prompt = "Attention"
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
# ## 3. The attention of each trained head
#
# For one line of source text, we compute the (causal) attention weights $\operatorname{softmax}(QK^\top / \sqrt{d_\text{head}})$ of every head in every layer.
# The weights are recomputed with the model's own `in_proj` and LayerNorm, because the model's forward pass takes the SDPA fast path and does not keep them.


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
    small = plot.narrow()  # every second character (narrow: third)
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
    "The causal attention weights of the 8 heads of the trained model (2 layers of 4 "
    "heads) for one line of source text. Each row is a query and each column a key.",
    "Eight heatmaps, one per head of each layer, with the characters of the line q, k, "
    "v = qkv.chunk(3, dim=-1) on both axes. Every upper triangle is dark, since the "
    "mask hides the future. Some heads are bright on the diagonal or just below it. "
    "Others spread their weight over earlier characters.",
)
rows = torch.stack(maps)[:, 0]  # (layers, h, n, n)
assert torch.allclose(rows.sum(-1), torch.ones(()), atol=1e-5)
assert (rows.triu(diagonal=1) == 0).all(), "causal: no weight on the future"

# %% [markdown]
# The upper triangle of every panel is 0 because of the causal mask. After training, the heads divide the work: some look almost exclusively at the character itself or the one before it, which shows as a bright diagonal or subdiagonal.
# Others spread their weight over earlier characters, such as brackets, commas and `=`. Which head does what varies by machine.

# %% [markdown]
# ## 4. Experiment 1: no scaling, dividing by $\sqrt{d_k}$, dividing by $d_k$
#
# Chapter 4 showed on random vectors that without scaling, the variance of the scores grows with $d_k$ and the softmax saturates, while dividing by $d_k$ makes the weights nearly uniform.
# What happens in real training? We use a single-head, 1-layer model with $d_\text{head} = d_\text{model} = 64$, since the wider the head, the better the chance that a difference shows (see section 4.5). We multiply the scores by $1$, $1/\sqrt{d_k}$ or $1/d_k$, and train each variant with 3 random seeds for 150 steps. The context is 32, each step has 16 windows, and the learning rate follows one cosine schedule from $3 \times 10^{-3}$ down to $3 \times 10^{-4}$, which the measurements along the way do not restart.
# We measure the validation loss and the mean entropy of the attention weights in nats, averaged over all query rows. The loss is measured on the first 255 windows of the validation split, and the unigram and bigram baselines printed below are computed on that same text.
#
# 150 steps is early training, so the experiment compares the scalings at the start of training, not the quality they reach in the end.
#
# For reference, under causal attention row $i$ (counting from 0) has $i+1$ keys it may attend to, and uniform weights have entropy $\ln(i+1)$. The mean over 32 rows is the `uniform` printed below.


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
        new.load_state_dict(m.blocks[0].attn.state_dict())  # same weights, new scale
        m.blocks[0].attn = new
    return m


@torch.no_grad()
def mean_entropy(m: CharLM) -> float:
    idx = val_data[: 32 * 64].view(64, 32)  # 64 validation windows
    w = attention_maps(m, idx)[0]  # (64, 1, 32, 32)
    return -(w * w.clamp_min(1e-30).log()).sum(-1).mean().item()


def spread(xs):
    mean, std = statistics.fmean(xs), statistics.stdev(xs)
    return f"{mean:.3f} ± {std:.3f} (min {min(xs):.3f}, max {max(xs):.3f})"


D = 64
SCALES = {"1 (unscaled)": 1.0, "1/sqrt(d_k)": D**-0.5, "1/d_k": 1.0 / D}
SEEDS, CHECK = (0, 1, 2), (0, 50, 100, 150)
UNIFORM = statistics.fmean(math.log(i + 1) for i in range(32))
# the experiments' validation text: 255 windows of 32 characters and their targets
EVAL = val_data[: 255 * 32 + 1]
UNI_E, BI_E = baselines(train_data, EVAL, V)  # the baselines on that same text
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
    "Score scaling in training. Each point is the mean over 3 seeds, and the bars run "
    "from the minimum to the maximum. Top, the validation loss. Bottom, the mean "
    "entropy of the attention weights.",
    "Two line plots against the training step, one line per scaling: 1, 1/√dₖ "
    "and 1/dₖ. In the top plot, the validation loss of all three falls below the "
    "dashed unigram line but stays above the red dashed bigram line, and the mean "
    "of 1/√dₖ ends lowest. In the bottom plot, the entropy of 1/dₖ starts on the "
    "dotted uniform line and ends below it. The unscaled line is the lowest at the "
    "start and at the end.",
)

# %% [markdown]
# In the conclusions below, "on every seed" means that the maximum of one group is below the minimum of the other, and "within the spread of the seeds" means that the two ranges overlap.


# %%
def final(name, key):
    return [runs[name, s][key][-1] for s in SEEDS]


def first(name, key):
    return [runs[name, s][key][0] for s in SEEDS]


# at initialization: 1/d_k is closest to uniform, no scaling the sharpest
assert max(first("1 (unscaled)", "entropy")) < min(first("1/sqrt(d_k)", "entropy"))
assert max(first("1/sqrt(d_k)", "entropy")) < min(first("1/d_k", "entropy"))
# after training: no scaling the sharpest, 1/d_k the flattest (on every seed)
assert max(final("1 (unscaled)", "entropy")) < min(final("1/sqrt(d_k)", "entropy"))
assert max(final("1/sqrt(d_k)", "entropy")) < min(final("1/d_k", "entropy"))
# early training: every scaling is below the unigram (it uses context),
# and none is below the bigram yet
assert all(BI_E < min(final(name, "val")) for name in SCALES)
assert all(max(final(name, "val")) < UNI_E for name in SCALES)
sqrt_val, flat_val = final("1/sqrt(d_k)", "val"), final("1/d_k", "val")
raw_val = final("1 (unscaled)", "val")
print("1/d_k worse than 1/sqrt(d_k) on every seed:", min(flat_val) > max(sqrt_val))
print("unscaled worse than 1/sqrt(d_k) on every seed:", min(raw_val) > max(sqrt_val))
# the validation loss: no scaling is worse than 1/sqrt(d_k) on every seed
assert min(raw_val) > max(sqrt_val)
# 1/d_k is worse on average, within the spread of the seeds (the ranges overlap)
assert statistics.fmean(flat_val) > statistics.fmean(sqrt_val)
assert min(flat_val) < max(sqrt_val)
# at initialization 1/d_k is uniform (within 0.01 nat); after training it is not
assert all(abs(e - UNIFORM) < 0.01 for e in first("1/d_k", "entropy"))
assert all(e < UNIFORM - 0.2 for e in final("1/d_k", "entropy"))

# %% [markdown]
# Three conclusions follow from the numbers above:
#
# - **Attention entropy:** the three scalings do not overlap on any seed, and unscaled weights are the sharpest. Divided by $d_k$, the weights start uniform, within 0.01 nat of the dotted line, as chapter 4 found on random vectors; after training they are the flattest of the three, but no longer uniform. At initialization the ordering holds by construction, since the weights are the same and the scores differ by a positive factor, while after training it is a measurement.
# - **Validation loss:** no scaling is worse than $1/\sqrt{d_k}$ on every seed. Dividing by $d_k$ is worse on average too, but the difference is within the spread of the seeds, whose ranges overlap.
# - **Against the baselines:** after 150 steps, every scaling, on every seed, is below the unigram, so the models use context. All of them are still above the bigram, which means that a table of which character follows which still predicts better. This is a comparison early in training: the wrong scaling makes a slower start, and whether it would catch up later was not tested here.

# %% [markdown]
# ## 5. Experiment 2: a causal mask that peeks
#
# Get the causal mask wrong by one, `tril(diagonal=1)`, and position $i$ can see $i+1$, the very character it is supposed to predict.
# We train the same small model (one head, $1/\sqrt{d_k}$) with 3 seeds, for 150 steps each. The honest baseline is the three $1/\sqrt{d_k}$ runs of experiment 1, with the same initial weights, the same batches and the same schedule, so that only the mask differs.
# We measure the training loss (the mean of the last 10 steps), the validation loss with the wrong mask and with the correct mask, and the generated text.
# At generation time there is no next character to peek at, since `generate` uses the correct causal mask. How do we score a text? We count two things: the share of the most common character among 300 generated characters, and the number of distinct characters. The book's most common character, the space, has about the share printed as `book` below.

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
    m = small_model(seed)  # default scale 1/√d_k, same initial weights as experiment 1
    r = run(m, seed, LEAKY)  # the same batches and schedule; only the mask differs
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
    "A leaky causal mask against the honest one, over 3 seeds. The leaky model's "
    "training loss is far lower. With the correct mask, its validation loss is far "
    "higher, above the unigram line.",
    "Bar chart of the loss in nats per character, with error bars for the standard "
    "deviation. For the training loss, the leaky bar is much shorter than the honest "
    "one. For the validation loss with the correct mask, the leaky bar is taller than "
    "the honest one and above the dashed unigram line.",
)

for name, mdl in (("leaky", m), ("honest", trained["1/sqrt(d_k)", SEEDS[-1]])):
    out = generate(
        mdl, vocab.encode("def ")[None], 120, generator=torch.Generator().manual_seed(0)
    )
    print(f"{name} model, sample (machine-dependent): {vocab.decode(out[0])!r}")

# %% [markdown]
# All 3 seeds show the following, which the next cell asserts:
#
# - The peeking model's training loss is far below the honest model's, but not 0: position 31, the last of the window, cannot see its target, the character after the window, so its loss stays more than 2 nats above that of positions 0–30 and puts a floor under the mean.
# - With the correct mask back, its validation loss is higher than the honest model's and even worse than the unigram baseline on the same text.
# - Its generated text has degenerated: the share of its most common character is higher than the honest model's, and more than twice the share of the book's most common character.

# %%
assert max(x["train"] for x in leak) < min(x["train"] for x in honest) - 1.0
assert min(x["val_causal"] for x in leak) > max(x["val_causal"] for x in honest) + 0.5
assert min(x["val_causal"] for x in leak) > UNI_E
assert min(x["top_char"] for x in leak) > max(x["top_char"] for x in honest)
assert min(x["top_char"] for x in leak) > 2 * BOOK_TOP
assert all(x["pos_31"] > x["pos_0_30"] + 2.0 for x in leak)
print(f"whole notebook: {time.perf_counter() - T0:.0f} s")
