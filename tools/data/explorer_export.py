"""Export a chapter 10 checkpoint for the attention explorer (``docs/explorer.md``).

The explorer runs ``CharLM`` in the reader's browser with a JavaScript twin
(``docs/javascripts/explorer-twin.js``). It reads two static files per edition, written here:

* ``charlm.bin``: every tensor of the model's state dict, as float16 (IEEE half precision),
  little-endian, one after the other in state-dict order. A tensor that shares its storage with
  an earlier one (tied weights) is stored once. The checkpoints are float16 (``make model``), so
  this loses nothing, and the page reads half the bytes of float32; a tensor that float16 would
  change is refused. The page turns each value back into float32 (``explorer-twin.js``), as
  ``selfattn.charlm.load`` does in PyTorch.
* ``charlm.json``: the manifest. ``format``, the model's ``config``, the vocabulary ``chars``
  (the string whose i-th character has id i), ``weights`` (the name of the .bin file), ``dtype``
  (``float16``), ``bytes`` (its size), ``tensors`` (for each state-dict name its ``offset`` in
  values, not bytes, and its ``shape``)
  and ``checkpoint_sha256`` (the checkpoint it was exported from).

``tools/site/explorer_hook.py`` calls :func:`cached` during the site build: each edition's checkpoint
(:data:`CHECKPOINTS`) is exported once into ``.cache/explorer/`` (outside ``docs/``, so ``mkdocs
serve`` does not see it) and exported again only when the checkpoint or this file changes.

Run ``python -m tools.data.explorer_export CKPT OUTDIR`` to write the two files by hand.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

FORMAT = "selfattn.explorer/2"  # /1 stored float32
CHECKPOINTS = {"zh": "models/charlm.pt", "en": "models/charlm.en.pt"}  # `make model` (models/train.py)
NAMES = ("charlm.json", "charlm.bin")
CACHE = ".cache/explorer"


def load_model(path: Path) -> tuple[Any, str]:
    """The float32 ``CharLM`` of a checkpoint, in eval mode, and its vocabulary
    (``selfattn.charlm.load``)."""
    from selfattn.charlm import load

    model, vocab = load(path)
    return model.eval(), vocab.chars


def export(model: Any, chars: str, checkpoint_sha256: str = "") -> tuple[dict[str, Any], bytes]:
    """The manifest and the weights of ``model`` (see the module docstring)."""
    import numpy as np

    tensors: dict[str, dict[str, Any]] = {}
    import torch

    seen: dict[tuple[int, int, tuple[int, ...]], int] = {}  # (storage, offset, shape) -> value offset
    chunks: list[bytes] = []
    offset = 0
    for name, t in model.state_dict().items():
        shape = tuple(t.shape)
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), shape)
        if key not in seen:  # tied weights (one storage under two names) are stored once
            seen[key] = offset
            t = t.detach().cpu().float()
            half = t.half()
            if not torch.equal(half.float(), t):  # only a float16 checkpoint is stored exactly
                worst = float((half.float() - t).abs().max())
                raise ValueError(f"export: {name} ({t.dtype}, shape {list(shape)}) is not exact in "
                                 f"float16 (it would move by up to {worst:.3g})")
            chunks.append(half.contiguous().numpy().astype("<f2").tobytes())
            offset += int(np.prod(shape, dtype=np.int64))
        tensors[name] = {"offset": seen[key], "shape": list(shape)}
    data = b"".join(chunks)
    config = {
        "vocab_size": model.tok.num_embeddings,
        "block_size": model.block_size,
        "d_model": model.tok.embedding_dim,
        "num_heads": model.blocks[0].attn.num_heads,
        "num_layers": len(model.blocks),
    }
    if len(chars) != config["vocab_size"]:
        raise ValueError(f"export: {len(chars)} characters for vocab_size={config['vocab_size']}")
    manifest = {
        "format": FORMAT,
        "config": config,
        "chars": chars,
        "weights": NAMES[1],
        "dtype": "float16",
        "bytes": len(data),
        "tensors": tensors,
        "checkpoint_sha256": checkpoint_sha256,
    }
    return manifest, data


def write(manifest: dict[str, Any], data: bytes, out: Path) -> list[Path]:
    """Write ``charlm.json`` and ``charlm.bin`` into ``out``, each only if its bytes changed."""
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    written = []
    for name, content in zip(NAMES, (text, data), strict=True):
        path = out / name
        if not path.is_file() or path.read_bytes() != content:
            path.write_bytes(content)
            written.append(path)
    return written


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_key(checkpoint: Path) -> str:
    """What the exported files depend on: the checkpoint's bytes and this exporter."""
    h = hashlib.sha256(checkpoint.read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def cached(root: Path, lang: str) -> Path:
    """The folder holding the edition's exported files, under ``.cache/explorer/<lang>-<key>/``.

    Exported (torch is imported) only when that folder is missing; older folders of the same
    edition are removed."""
    checkpoint = root / CHECKPOINTS[lang]
    if not checkpoint.is_file():
        raise FileNotFoundError(f"explorer: no checkpoint {checkpoint} for the {lang!r} edition "
                                "(run `make model`)")
    base = root / CACHE
    folder = base / f"{lang}-{cache_key(checkpoint)}"
    if not all((folder / name).is_file() for name in NAMES):
        model, chars = load_model(checkpoint)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        write(*export(model, chars, sha256(checkpoint)), tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)  # complete or absent: an interrupted export is redone
    for stale in base.glob(f"{lang}-*"):
        if stale != folder:
            shutil.rmtree(stale, ignore_errors=True)
    return folder


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tools.data.explorer_export CHECKPOINT OUTDIR", file=sys.stderr)
        return 2
    checkpoint, out = Path(argv[0]), Path(argv[1])
    model, chars = load_model(checkpoint)
    manifest, data = export(model, chars, sha256(checkpoint))
    for path in write(manifest, data, out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
