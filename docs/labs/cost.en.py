# %% [markdown]
# # Cost Lab (Chapter 8): Multiple Heads and $O(n^2)$
#
# This notebook is rerun on every build of the site, which draws its figures (see [chapter 8](../../08-multihead/)), and it runs two experiments:
#
# 1. **What multiple heads are for:** on the task of section 8.1, train a single-head and a two-head `MultiHeadSelfAttention` with exactly the same number of parameters, compare their errors, and plot the attention maps that each head learns.
# 2. **The cost of $O(n^2)$:** measure how the forward time and the peak memory of the explicit implementation, the one that returns the weights, grow with the sequence length $n$, and compare its time with SDPA's fast path.
#
# The notebook uses a single CPU thread, so that other jobs on a build machine disturb the timings less. The exact milliseconds depend on the machine, so do not treat them as a benchmark: what matters is the trend as $n$ grows.

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
from selfattn import plot  # the book's figures: plot.figure, plot.show (3.7 appendix)

# %% [markdown]
# ## 1. What multiple heads are for
#
# The task is the one of section 8.1. Each token's features are a one-hot position ($n = 8$), a one-hot category (2 categories) and a numeric content $p_j$, padded with a zero to $d_\text{model} = 12$. There are two target channels: the content of the previous token, $p_{i-1}$, taken cyclically, and the mean content of the tokens of the same category. The model's output is read from its first two channels and trained with the mean squared error. The single-head and two-head models have exactly the same number of parameters, $4d^2 + 4d$, and differ only in the number of attention distributions.

# %%
N_TOK, N_CAT, D_MODEL = 8, 2, 12


def make_batch(batch: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (B, n, d_model) and targets (B, n, 2) of the two-pattern task."""
    cats = torch.randint(0, N_CAT, (batch, N_TOK), generator=gen)           # (B, n)
    pay = torch.randn(batch, N_TOK, generator=gen)                          # (B, n)
    x = torch.cat([
        torch.eye(N_TOK).expand(batch, N_TOK, N_TOK),                       # position
        F.one_hot(cats, N_CAT).float(),                                     # category
        pay[..., None],                                                     # content
        torch.zeros(batch, N_TOK, 1),                                       # zero pad
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
        out, _ = model(x, need_weights=False)                               # fast path
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
        # mean squared error per channel
        errors[h] = ((out[..., :2] - y_test) ** 2).mean(dim=(0, 1))
n_params = {h: sum(p.numel() for p in m.parameters()) for h, m in models.items()}
print(f"trained both models in {time.perf_counter() - start:.1f} s")
for h in (1, 2):
    e_prev, e_same = errors[h]
    print(f"h = {h}: {n_params[h]} parameters, test MSE "
          f"previous token = {e_prev:.4f}, same-category mean = {e_same:.4f}")

err1, err2 = errors[1], errors[2]
assert n_params[1] == n_params[2] == 4 * D_MODEL**2 + 4 * D_MODEL, (
    "the parameter counts should match: 4d² + 4d"
)
assert err2.max() < 0.02, f"the two-head model should learn both channels: {err2}"
assert err1.max() > 5 * err2.max(), f"one head is worse on a channel: {err1}"
assert err1[0] < 0.02, "the single head learns channel 0"
assert err1[1] > 10 * err2.max(), f"the single-head model fails on channel 1: {err1}"

# %% [markdown]
# The single-head model fails to learn at least one channel, here the same-category mean, because it spends its only attention distribution on the previous token. The two-head model learns both channels, with errors close to 0.
#
# In the figure below, the top-left panel shows the training curves, and the other three show the attention maps on one test sequence, for the single head and for each of the two heads. In the two-head model, one head becomes a diagonal shifted by one, and the other splits into blocks by category. Which head learns which pattern depends on the initialization, so the code below looks for both patterns over the whole test set.

# %%
with torch.no_grad():
    _, per_head = models[2](x_test[:1], average_attn_weights=False)  # (1, 2, n, n)
    _, single = models[1](x_test[:1])                                # (1, n, n)
cats0 = x_test[0, :, N_TOK:N_TOK + N_CAT].argmax(-1).tolist()

with torch.no_grad():
    _, heads_all = models[2](x_test, average_attn_weights=False)  # (512, 2, n, n)
cats_all = x_test[..., N_TOK:N_TOK + N_CAT].argmax(-1)            # (512, n)
same_all = cats_all[:, :, None] == cats_all[:, None, :]           # (512, n, n)
prev = (torch.arange(N_TOK) - 1) % N_TOK                          # previous (cyclic)
on_prev = [heads_all[:, j, torch.arange(N_TOK), prev].mean().item() for j in range(2)]
on_same = [(heads_all[:, j] * same_all).sum(-1).mean().item() for j in range(2)]
print("mean weight on the previous token, per head:", [round(w, 2) for w in on_prev])
print("mean weight on the same category, per head: ", [round(w, 2) for w in on_same])
with torch.no_grad():
    _, w1 = models[1](x_test)  # (512, n, n)
on_prev_1 = w1[:, torch.arange(N_TOK), prev].mean().item()
assert on_prev_1 > 0.8, "the single head looks at the previous token"
p_head = max(range(2), key=lambda j: on_prev[j])  # the previous-token head
assert on_prev[p_head] > 0.8 and on_same[1 - p_head] > 0.9, (
    "one head looks at the previous token, the other at the same category"
)

def draw():
    # narrow variant: the four stacked
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
    ticks = [f"{j}\n({c})" for j, c in enumerate(cats0)]  # the key's index, category
    for ax, (w, title) in zip(axes[1:], panels, strict=True):
        im = ax.imshow(w.numpy(), vmin=0, vmax=1, cmap=plot.WEIGHTS_CMAP)
        ax.set(title=title, xlabel="key j (category)", ylabel="query i")
        ax.set_xticks(range(N_TOK), ticks)
        ax.set_yticks(range(N_TOK))
    plot.colorbar(im, list(axes[1:])).set_label("weight")
    return fig


plot.show(
    draw,
    "Top left, the training loss of a single-head and a two-head model with the same "
    "number of parameters. The other panels show the attention weights on one test "
    "sequence, of the single head and of each head of the two-head model.",
    "Four panels. The first plots the training loss on a log scale, and the two-head "
    "curve ends lower. The other three are 8 by 8 heatmaps of attention weights, with "
    "queries as rows and keys as columns, each key labeled with its category. The "
    "single head and one of the two heads put their weight on the previous token, a "
    "diagonal shifted by one. The other head spreads its weight over the tokens of the "
    "same category.",
)

# %% [markdown]
# ## 2. The cost of $O(n^2)$ in time and memory
#
# The setup is $B = 1$, $h = 4$, $d_\text{head} = 32$, float32, forward only (`torch.no_grad()`).
#
# **How memory is measured.** On the CPU, PyTorch has no counter like `torch.cuda.max_memory_allocated`, so we use a `TorchDispatchMode` instead. Every new tensor that a PyTorch operator returns adds the bytes of its storage to a live total, and the total drops again when the tensor is freed. The maximum along the way is the peak. This measures the bytes of tensors, not the process memory that the operating system sees. Fused kernels such as SDPA use work buffers that they do not return as tensors, and these are not counted. SDPA's reading is therefore just the output it returns plus a log-sum-exp of one number per row.

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
        self.refs: dict[int, int] = {}  # storage address -> tensors holding it

    def _release(self, ptr: int, nbytes: int) -> None:
        self.refs[ptr] -= 1
        if self.refs[ptr] == 0:  # the last holder is freed
            del self.refs[ptr]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            # views keep the storage alive via _base
            if isinstance(t, torch.Tensor) and not t._is_view():
                storage = t.untyped_storage()
                ptr, nbytes = storage.data_ptr(), storage.nbytes()
                if nbytes == 0:
                    continue
                if ptr not in self.refs:  # a newly allocated storage
                    self.refs[ptr] = 0
                    self.live += nbytes
                    self.peak = max(self.peak, self.live)
                self.refs[ptr] += 1
                weakref.finalize(t, self._release, ptr, nbytes)  # decrement when freed
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
        fn()                                                                # warm-up
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
        "scores_mib": B * H * n * n * 4 / 2**20,  # one (B, h, n, n) float32
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
# The milliseconds in the table vary with the machine and its load, so they are printed but never asserted. The code below asserts the patterns in the bytes of memory and in the floating-point operations (FLOPs) that `FlopCounterMode` counts.

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
assert 1.9 < ratio_explicit < 2.2, "scores and weights coexist: about 2 copies"
assert 1.9 < ratio_causal < 2.3, "masked_fill frees the old scores: still ~2 copies"
assert 3.8 < growth < 4.2, "n doubles, memory about 4x"
assert all(r["sdpa_mib"] < r["scores_mib"] for r in rows[1:]), (
    "SDPA creates no (B, h, n, n) tensor"
)
# output (B, h, n, d_head) + lse (B, h, n)
returned_mib = [B * H * r["n"] * (D_HEAD + 1) * 4 / 2**20 for r in rows]
assert all(r["sdpa_mib"] <= 1.1 * m for r, m in zip(rows, returned_mib, strict=True)), (
    "SDPA creates only the output and lse it returns"
)
small = rows[0]
flops_growth = big["flops"] / small["flops"]
assert flops_growth == (big["n"] // small["n"]) ** 2, "work grows as n^2"
assert all(r["flops"] == 4 * B * H * r["n"] ** 2 * D_HEAD for r in rows), "two matmuls"

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
    "Top, the forward time of the explicit implementation and of SDPA against n, with "
    "an n² reference line. Bottom, the peak tensor memory. The explicit implementation "
    "holds about two score matrices, with or without the causal mask. SDPA holds only "
    "the tensors it returns.",
    "Two log-log plots against the sequence length n, from 128 to 2048. The top one "
    "shows the forward time in milliseconds of the explicit implementation and of "
    "SDPA, with a dotted n² line. The bottom one shows the peak memory in MiB. The two "
    "explicit lines run parallel to the dotted line of one scores matrix, about twice "
    "as high. The SDPA line lies far below them.",
)

# %% [markdown]
# Two conclusions follow. First, the explicit implementation's memory grows as $n^2$, with a peak of about two score matrices. This holds with a causal mask too, because once `masked_fill` makes the new scores, the old ones are freed right away. Second, SDPA never creates the whole `(B, h, n, n)` matrix as a tensor. The table also gives the times of both, which depend on the machine and its load and are therefore never asserted. The explicit implementation's work in FLOPs, by contrast, grows exactly as $n^2$. [Section 8.3](../../08-long-sequences/) shows how to avoid the $n^2$ memory without a fused kernel.
