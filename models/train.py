"""Train the committed models of chapter 10 and the explorer: ``make model``.

One ``CharLM`` per edition, on that edition's corpus snapshot (built by
``tools/data/corpus.py``):

* ``models/charlm.pt`` on ``docs/labs/data/book.txt`` (the Chinese edition);
* ``models/charlm.en.pt`` on ``docs/labs/data/book.en.txt`` (the English edition).

Both train on the CPU, one thread each (the two editions in parallel), from seed
``CONFIG["seed"]``, so a run repeats its steps exactly on the same machine. The file is
the checkpoint format of :func:`selfattn.charlm.load` with the weights in float16 (no
optimizer state), which keeps each file under 1 MB; ``load`` returns them as float32.
Why float16 and not a smaller vocabulary: it keeps every character of the book (no
unknown symbol, so any text from the book encodes), and halving the bytes is enough
(Chinese: 1014 characters x 96 plus three blocks, about 0.89 MB). float16 rather than
bfloat16: the weights are small numbers, and float16's 10-bit mantissa rounds them 8x
more finely than bfloat16's 7 bits (the validation loss moved by less than 0.001).
``meta`` records :func:`fingerprint` (sha256 of the corpus, of the data trained on, of
``CONFIG`` and of the code that determines the weights, ``WEIGHTS_CODE``: the syntax
trees of those functions without docstrings) and the measured numbers: validation
loss, the unigram and bigram baselines, the steps and seconds, and for English the
shares of dictionary words in three samples (:func:`dictionary_shares`). The numbers
are measured on the stored float16 weights. ``tests/package/test_charlm.py`` fails,
naming ``make model``, as soon as a fingerprint differs; an edit outside
``WEIGHTS_CODE`` (loading, sampling, saving, the input checks) needs no retraining.

Cost: one step is a forward and backward pass of 32 x 64 characters, about 0.5 s of
one core (backward two thirds, the linear layers most of the rest; no validation runs
in the loop). 1500 steps per edition took 1457 s (English) and 1591 s (Chinese) with
both editions in parallel on 2 cores shared with other jobs, so ``make model`` takes
about half an hour.

Usage: ``python -m models.train [zh] [en]`` (default: both); ``--measure`` only measures
the committed files again (after a change to ``SAMPLE`` or to the baselines).
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = {"zh": ("docs/labs/data/book.txt", "models/charlm.pt", "注意力"),
            "en": ("docs/labs/data/book.en.txt", "models/charlm.en.pt", "Attention")}
CONFIG: dict[str, Any] = {
    "block_size": 64, "d_model": 96, "num_heads": 4, "num_layers": 3, "dropout": 0.0,
    "steps": 1500, "batch_size": 32, "lr": 3e-3, "warmup": 50, "weight_decay": 0.1,
    "clip": 1.0, "seed": 0,
}
# The code that determines the weights, by file and qualified name: the model, the
# attention path that training takes (``need_weights=False``, so torch's SDPA; not the
# explicit path of chapter 5), the optimizer, the schedule and the training loop.
# Loading the text, sampling, saving and the input checks are left out: an edit there
# cannot change a weight. tests/package/test_charlm.py traces a few training steps and
# checks this list against the package functions they call (less the checks, which
# only raise).
WEIGHTS_CODE = {
    "src/selfattn/model.py": ("Block.__init__", "Block.forward", "CharLM.__init__",
                              "CharLM.embed", "CharLM.forward"),
    "src/selfattn/multihead.py": ("MultiHeadSelfAttention.__init__",
                                  "MultiHeadSelfAttention.forward"),
    "src/selfattn/charlm.py": ("batch", "lm_loss", "make_optimizer", "lr_at", "train"),
    "models/train.py": ("train_edition",),
}
# How meta's samples are drawn (not hashed: `python -m models.train --measure` redraws).
SAMPLE = {"tokens": 2000, "temperature": 0.7, "top_k": 10, "seeds": [0, 1, 2]}
# The English dictionary the samples are checked against: Debian's wamerican word list
# (`apt-get install wamerican`). Only `make model` needs it, not the tests or the build:
# the numbers are recorded in the checkpoint's meta.
DICTIONARY = Path("/usr/share/dict/american-english")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def code_only(node: ast.AST) -> str:
    """A syntax tree without its docstrings (comments are not in the tree).

    What training depends on is the code: a comment or a docstring edit in a chapter's
    titled block must not make the committed models stale, a changed line of code must.
    """
    scopes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for sub in ast.walk(node):
        if isinstance(sub, scopes) and ast.get_docstring(sub) is not None:
            sub.body = sub.body[1:] or [ast.Pass()]
    return ast.dump(node)


def definitions(text: str) -> dict[str, ast.AST]:
    """The functions and methods of a module by qualified name (``Block.forward``)."""
    found: dict[str, ast.AST] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[prefix + child.name] = child
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(text), "")
    return found


def code_hash(texts: dict[str, str] | None = None) -> str:
    """sha256 of the definitions in ``WEIGHTS_CODE`` (``texts``: a file's text by path,
    to hash an edited copy; by default the files as they are)."""
    parts = []
    for path, names in WEIGHTS_CODE.items():
        text = (texts or {}).get(path) or (ROOT / path).read_text(encoding="utf-8")
        defs = definitions(text)
        parts += [f"{path}:{name}:{code_only(defs[name])}" for name in names]
    return sha256("\n".join(parts).encode())


def data_hash(lang: str) -> str:
    """sha256 of what training reads: the vocabulary and the training ids, as
    ``load_corpus`` returns them (so a change to how the text is split shows)."""
    from selfattn.charlm import load_corpus

    vocab, train_data, _ = load_corpus(ROOT / EDITIONS[lang][0])
    return sha256(vocab.chars.encode() + train_data.numpy().tobytes())


def fingerprint(lang: str) -> dict[str, str]:
    """The hashes a model records: the corpus file, the data trained on, ``CONFIG`` and
    the code that determines the weights (``WEIGHTS_CODE``)."""
    return {
        "corpus": sha256((ROOT / EDITIONS[lang][0]).read_bytes()),
        "data": data_hash(lang),
        "config": sha256(json.dumps(CONFIG, sort_keys=True).encode()),
        "code": code_hash(),
    }


def words(text: str) -> list[str]:
    """Whitespace-separated words with the ASCII punctuation around them stripped."""
    return [w for w in (w.strip(string.punctuation) for w in text.split()) if w]


def dictionary_shares(text: str, dictionary: set[str]) -> dict[str, float]:
    """How much of ``text`` is English, checked case-insensitively against
    ``dictionary``.

    ``tokens``: the share of all whitespace-separated tokens (numbers and code such as
    ``d_k`` or ``torch.ones(3)`` count as misses); ``words``: the share of the tokens
    made of letters only; ``long``: the same for the words of 5 letters or more.
    """
    tokens = words(text)
    letters = [w for w in tokens if w.isalpha()]
    long = [w for w in letters if len(w) >= 5]
    return {name: round(sum(w.lower() in dictionary for w in ws) / max(1, len(ws)), 4)
            for name, ws in (("tokens", tokens), ("words", letters), ("long", long))}


def read_dictionary() -> set[str]:
    if not DICTIONARY.is_file():
        raise SystemExit(f"{DICTIONARY} is missing: apt-get install wamerican")
    return {w.strip().lower() for w in DICTIONARY.read_text(encoding="utf-8").split()}


def train_edition(lang: str) -> dict[str, Any]:
    """Train one edition's model and write its checkpoint; then :func:`measure` it."""
    import torch

    from selfattn.charlm import load_corpus, make_optimizer, save_checkpoint, train
    from selfattn.model import CharLM

    torch.set_num_threads(1)
    hashes = fingerprint(lang)  # before training: the files it trains with
    corpus, out, _ = EDITIONS[lang]
    c = CONFIG
    vocab, train_data, _ = load_corpus(ROOT / corpus)
    config = {"vocab_size": len(vocab.chars),
              **{k: c[k] for k in ("block_size", "d_model", "num_heads", "num_layers",
                                   "dropout")}}
    torch.manual_seed(c["seed"])
    model = CharLM(**config)
    opt = make_optimizer(model, c["lr"], c["weight_decay"])
    t0 = time.perf_counter()
    losses: list[float] = []
    for start in range(0, c["steps"], 100):  # 100 steps at a time, to print progress
        n = min(100, c["steps"] - start)
        losses += train(model, train_data, n, batch_size=c["batch_size"], lr=c["lr"],
                        warmup=c["warmup"], start=start, total=c["steps"],
                        seed=c["seed"] + start, opt=opt, clip=c["clip"])
        print(f"{lang}: step {start + n}/{c['steps']}, loss {losses[-1]:.3f}, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    seconds = round(time.perf_counter() - t0, 1)
    meta = {**hashes, "steps": c["steps"], "seconds": seconds,
            "train_loss": round(sum(losses[-20:]) / 20, 4),
            "torch": str(torch.__version__)}
    save_checkpoint(ROOT / out, model, vocab, c["steps"], config, meta=meta,
                    dtype=torch.float16)
    return measure(lang)


def measure(lang: str) -> dict[str, Any]:
    """Measure the committed weights (float16, loaded as float32) and record the numbers
    in ``meta``: validation loss, baselines, and for each seed of ``SAMPLE`` a sample's
    shares of dictionary words (:func:`dictionary_shares`; English only), with the
    corpus's own shares beside them (what a perfect imitation of the corpus would
    get)."""
    import torch

    from selfattn.charlm import baselines, evaluate, load, load_corpus
    from selfattn.model import generate

    torch.set_num_threads(1)
    corpus, out, prompt = EDITIONS[lang]
    path = ROOT / out
    model, vocab = load(path)
    _, train_data, val_data = load_corpus(ROOT / corpus)
    unigram, bigram = baselines(train_data, val_data, len(vocab.chars))
    samples = []
    for seed in SAMPLE["seeds"]:
        g = torch.Generator().manual_seed(seed)
        ids = generate(model, vocab.encode(prompt)[None], SAMPLE["tokens"], generator=g,
                       temperature=SAMPLE["temperature"], top_k=SAMPLE["top_k"])
        samples.append(vocab.decode(ids[0])[len(prompt):])
    state = torch.load(path, map_location="cpu", weights_only=True)
    # The share of words found in the corpus (an old measure).
    state["meta"].pop("real_words", None)
    state["meta"].update(
        val_loss=round(evaluate(model, val_data), 4), unigram=round(unigram, 4),
        bigram=round(bigram, 4), sample=SAMPLE)
    if lang == "en":
        dictionary = read_dictionary()
        text = (ROOT / corpus).read_text(encoding="utf-8")
        shares = [dictionary_shares(s, dictionary) for s in samples]
        state["meta"].update(
            dictionary="wamerican 2020.12.07 (/usr/share/dict/american-english)",
            dict_shares={k: [r[k] for r in shares] for k in shares[0]},
            corpus_shares=dictionary_shares(text, dictionary))
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)
    return {"edition": lang, "file": out, "bytes": path.stat().st_size, **state["meta"],
            "sample": prompt + samples[0][:300]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    run = measure if "--measure" in args else train_edition
    langs = [a for a in args if a in EDITIONS] or list(EDITIONS)
    with ProcessPoolExecutor(max_workers=len(langs)) as pool:
        for r in pool.map(run, langs):
            print(f"{r['file']}: {r['bytes']:,} bytes, {r['steps']} steps in "
                  f"{r['seconds']:.0f} s; val loss {r['val_loss']:.3f}, unigram "
                  f"{r['unigram']:.3f}, bigram {r['bigram']:.3f}")
            if "dict_shares" in r:
                print("  in the dictionary, per seed:", r["dict_shares"], "corpus:",
                      r["corpus_shares"])
            print("  sample:", repr(r["sample"][:200]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
