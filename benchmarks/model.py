"""Benchmarks of chapter 10's model; writes ``benchmarks/results/model.json``.

Usage::

    python -m benchmarks.model                 # the real run, about a minute on 2 cores
    python -m benchmarks.model --quick --out /tmp/m.json   # tiny sizes, seconds (smoke test)

Two comparisons, each a ratio measured in the same run, in interleaved rounds (see
:mod:`benchmarks.run`):

- **training**: tokens/s of one AdamW step of ``CharLM`` built on
  ``MultiHeadSelfAttention`` (its causal SDPA fast path) against the same model, with
  the same weights, whose attention is ``nn.MultiheadAttention`` (``need_weights=False``,
  ``is_causal=True`` with its mask); goal >= 0.95;
- **generation**: ``generate(..., 256 tokens, temperature=0)`` with the KV cache
  against recomputing the whole prefix at each step; the speed-up is reported.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from benchmarks.run import _stats, machine_info, ratio_rows, time_rounds
from selfattn.model import CharLM, generate
from selfattn.multihead import MultiHeadSelfAttention

RESULTS = Path(__file__).resolve().parent / "results" / "model.json"


class TorchAttention(nn.Module):
    """``nn.MultiheadAttention`` behind the call signature that ``Block`` uses."""

    def __init__(self, ours: MultiHeadSelfAttention) -> None:
        super().__init__()
        d, h = ours.d_model, ours.num_heads
        self.mha = nn.MultiheadAttention(d, h, batch_first=True)
        with torch.no_grad():
            self.mha.in_proj_weight.copy_(ours.in_proj.weight)
            self.mha.in_proj_bias.copy_(ours.in_proj.bias)
            self.mha.out_proj.weight.copy_(ours.out_proj.weight)
            self.mha.out_proj.bias.copy_(ours.out_proj.bias)

    def forward(self, x: Tensor, mask: Tensor | None = None, *, is_causal: bool = False,
                need_weights: bool = False) -> tuple[Tensor, None]:
        n = x.shape[1]
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)  # True = 不许看
        out, _ = self.mha(x, x, x, attn_mask=future, need_weights=False, is_causal=True)
        return out, None


def models(cfg: dict[str, int]) -> tuple[CharLM, CharLM]:
    torch.manual_seed(0)
    ours = CharLM(cfg["vocab"], cfg["block_size"], cfg["d_model"], cfg["heads"], cfg["layers"])
    theirs = CharLM(cfg["vocab"], cfg["block_size"], cfg["d_model"], cfg["heads"], cfg["layers"])
    theirs.load_state_dict(ours.state_dict())
    for block in theirs.blocks:
        block.attn = TorchAttention(block.attn)  # type: ignore[arg-type]
    return ours, theirs


def train_step(model: CharLM, batch: int) -> Any:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(model.tok.num_embeddings, (batch, model.block_size + 1), generator=g)

    def step() -> None:
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.quick:
        cfg = {"vocab": 50, "block_size": 16, "d_model": 16, "heads": 2, "layers": 1,
               "batch": 2, "new_tokens": 8, "prompt": 2}
        rounds, min_run = 2, 0.01
    else:
        cfg = {"vocab": 951, "block_size": 128, "d_model": 128, "heads": 4, "layers": 4,
               "batch": 16, "new_tokens": 256, "prompt": 1}
        rounds, min_run = args.rounds, 0.5

    ours, theirs = models(cfg)
    torch.testing.assert_close(ours(torch.arange(8)[None] % cfg["vocab"]),
                               theirs(torch.arange(8)[None] % cfg["vocab"]))  # 同一个函数
    secs = time_rounds({"selfattn": train_step(ours, cfg["batch"]),
                        "nn_mha": train_step(theirs, cfg["batch"])}, rounds, min_run)
    tokens = cfg["batch"] * cfg["block_size"]
    t_times, t_ratios = ratio_rows("train", {"tokens_per_step": tokens}, secs, anchor="selfattn")
    tps = {k: [tokens / s for s in v] for k, v in secs.items()}
    speed = _stats([a / b for a, b in zip(tps["selfattn"], tps["nn_mha"], strict=True)])
    for row in t_times:
        row["tokens_per_s"] = tokens / (row["median_ms"] / 1e3)

    # generation: the cache needs block_size >= prompt + new tokens (learned positions)
    gcfg = {**cfg, "block_size": cfg["prompt"] + cfg["new_tokens"]}
    gen_model, _ = models(gcfg)
    prompt = torch.zeros(1, cfg["prompt"], dtype=torch.long)
    a = generate(gen_model, prompt, cfg["new_tokens"], temperature=0)
    b = generate(gen_model, prompt, cfg["new_tokens"], temperature=0, use_cache=False)
    assert torch.equal(a, b), "the cache must not change the greedy tokens"

    def gen(use_cache: bool) -> Callable[[], object]:
        return lambda: generate(gen_model, prompt, cfg["new_tokens"], temperature=0,
                                use_cache=use_cache)

    gsecs = time_rounds({"cache": gen(True), "recompute": gen(False)}, rounds, min_run)
    g_times, g_ratios = ratio_rows("generate", {"new_tokens": cfg["new_tokens"]}, gsecs,
                                   anchor="cache")
    result: dict[str, Any] = {
        "machine": machine_info(args.threads),
        "config": cfg,
        "time": t_times + g_times,
        "ratios": t_ratios + g_ratios,
        "train_speed": speed,  # tokens/s of selfattn / tokens/s of nn.MultiheadAttention
        "targets": [
            {"target": "training tokens/s, MultiHeadSelfAttention / nn.MultiheadAttention",
             **{k: speed[k] for k in ("median", "min", "max")}, "goal": ">= 0.95",
             "met": speed["median"] >= 0.95},
            {"target": f"generation of {cfg['new_tokens']} tokens, recompute / KV cache",
             **{k: g_ratios[0][k] for k in ("median", "min", "max")},
             "goal": "report", "met": True},
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for t in result["targets"]:
        print(f"{t['target']}: {t['median']:.2f} ({t['min']:.2f}-{t['max']:.2f}), "
              f"goal {t['goal']}")
    return result


if __name__ == "__main__":
    main()

