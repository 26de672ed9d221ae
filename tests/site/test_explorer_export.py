"""tools/data/explorer_export.py and tools/site/explorer_hook.py: the explorer's weights, exported once per
checkpoint, exactly, and added to each edition's build with its presets and book.json (the browser
side: tests/site/test_explorer.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from selfattn.charlm import Vocab, save_checkpoint
from selfattn.model import CharLM
from tools.data import explorer_book, explorer_export
from tools.site import explorer_hook
from tools.data.explorer_export import CHECKPOINTS, NAMES, cached, export, write

ROOT = Path(__file__).resolve().parents[2]
CHARS = "abcdefgh 注意力"


BUDGET = 1_000_000  # bytes per edition: charlm.bin and charlm.json together


def small_model(tied: bool = True) -> CharLM:
    """A model whose weights are float16 values (as a checkpoint's), in float32."""
    torch.manual_seed(0)
    model = CharLM(len(CHARS), block_size=8, d_model=16, num_heads=2, num_layers=2)  # head = tok
    if not tied:
        model.head.weight = torch.nn.Parameter(torch.randn_like(model.head.weight))  # its own tensor
    return model.half().float()


def read_back(manifest: dict[str, Any], data: bytes) -> dict[str, np.ndarray]:
    floats = np.frombuffer(data, dtype="<f2").astype(np.float32)
    return {name: floats[e["offset"] : e["offset"] + int(np.prod(e["shape"]))].reshape(e["shape"])
            for name, e in manifest["tensors"].items()}


@pytest.mark.parametrize("tied", [False, True])
def test_every_tensor_comes_back_exactly(tied: bool) -> None:
    model = small_model(tied)
    manifest, data = export(model, CHARS, "abc")
    back = read_back(manifest, data)
    state = model.state_dict()
    assert back.keys() == state.keys()
    for name, t in state.items():
        assert np.array_equal(back[name], t.numpy()), name
    unique = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())
    assert manifest["bytes"] == len(data) == 2 * unique and manifest["dtype"] == "float16"  # parameters() lists a shared one once
    same = manifest["tensors"]["head.weight"]["offset"] == manifest["tensors"]["tok.weight"]["offset"]
    assert same == tied  # tied: stored once, the head points at the embedding's floats
    assert manifest["config"] == {"vocab_size": len(CHARS), "block_size": 8, "d_model": 16,
                                  "num_heads": 2, "num_layers": 2}
    assert manifest["chars"] == CHARS and manifest["checkpoint_sha256"] == "abc"


def test_a_tensor_that_float16_would_change_is_refused() -> None:
    model = small_model()
    with torch.no_grad():
        model.blocks[1].ln2.bias[3] = 1 / 3  # not a float16 value
    with pytest.raises(ValueError, match=r"blocks\.1\.ln2\.bias .*not exact in float16"):
        export(model, CHARS)


def test_a_vocabulary_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(ValueError, match="7 characters for vocab_size=12"):
        export(small_model(), CHARS[:7])


def test_write_only_what_changed(tmp_path: Path) -> None:
    manifest, data = export(small_model(), CHARS)
    assert write(manifest, data, tmp_path) == [tmp_path / name for name in NAMES]
    assert write(manifest, data, tmp_path) == []  # unchanged: nothing written (mkdocs serve would loop)
    manifest["checkpoint_sha256"] = "new"
    assert write(manifest, data, tmp_path) == [tmp_path / NAMES[0]]
    assert json.loads((tmp_path / NAMES[0]).read_text(encoding="utf-8"))["checkpoint_sha256"] == "new"


def checkpoint(root: Path, lang: str, seed: int = 0) -> Path:
    path = root / CHECKPOINTS[lang]
    path.parent.mkdir(parents=True, exist_ok=True)
    model = small_model()
    torch.manual_seed(seed)
    model.tok.weight.data.normal_()
    config = {"vocab_size": len(CHARS), "block_size": 8, "d_model": 16, "num_heads": 2, "num_layers": 2}
    save_checkpoint(path, model, Vocab(CHARS), 0, config, dtype=torch.float16)  # as `make model` does
    return path


def test_exported_once_per_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    load = explorer_export.load_model
    monkeypatch.setattr(explorer_export, "load_model", lambda p: calls.append(p) or load(p))
    checkpoint(tmp_path, "zh")
    first = cached(tmp_path, "zh")
    mtimes = [os.stat(first / n).st_mtime_ns for n in NAMES]
    assert cached(tmp_path, "zh") == first and len(calls) == 1  # the second build finds it: no torch.load
    assert [os.stat(first / n).st_mtime_ns for n in NAMES] == mtimes
    checkpoint(tmp_path, "zh", seed=1)  # a new checkpoint: exported again, the old export removed
    second = cached(tmp_path, "zh")
    assert second != first and not first.exists() and len(calls) == 2
    manifest = json.loads((second / NAMES[0]).read_text(encoding="utf-8"))
    assert manifest["checkpoint_sha256"] == explorer_export.sha256(tmp_path / CHECKPOINTS["zh"])


def test_a_missing_checkpoint_names_make_model(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make model"):
        cached(tmp_path, "en")


class _I18n:
    def __init__(self, lang: str) -> None:
        self.current_language = lang


@pytest.mark.parametrize(("lang", "prefix"), [("zh", ""), ("en", "en/")])
def test_the_hook_adds_each_editions_weights(tmp_path: Path, lang: str, prefix: str) -> None:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

    checkpoint(tmp_path, lang)
    for rel in (*explorer_book.SOURCES, *explorer_book.CHAPTER.values()):  # what book.json is exported from
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    config = MkDocsConfig(config_file_path=str(tmp_path / "mkdocs.yml"))
    config.load_dict({"site_name": "t", "docs_dir": str(tmp_path / "docs"), "site_dir": str(tmp_path / "site")})
    assert not config.validate()[0]
    config.plugins["i18n"] = _I18n(lang)  # type: ignore[index]
    config.plugins._current_plugin = "tests"  # type: ignore[attr-defined]  # set by mkdocs while it runs a hook
    files = explorer_hook.on_files(Files([]), config)
    dest = sorted(f.dest_uri for f in files)
    assert dest == [f"{prefix}explorer/{name}" for name in ("book.json", "charlm.bin", "charlm.json", "presets.json")]
    for f in files:
        if f.dest_uri.endswith("presets.json"):  # none measured on this checkpoint: none shipped
            assert json.loads(f.content_string) == {"presets": []}
        elif f.dest_uri.endswith("book.json"):  # chapter 3's example and the colormap (tests/site/test_explorer_book.py)
            assert Path(f.abs_src_path) == explorer_book.cached(tmp_path, lang)
        else:
            assert Path(f.abs_src_path).read_bytes() == (cached(tmp_path, lang) / Path(f.dest_uri).name).read_bytes()


def test_presets_ship_only_with_the_checkpoint_they_were_measured_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tools.data.explorer_presets import FILE

    path = checkpoint(tmp_path, "en")
    preset = {"pattern": "prev", "layer": 0, "head": 1, "label": "x", "prompt": "abc", "sentence": "s.",
              "share": 0.5, "uniform": 0.1}
    data = {"en": {"checkpoint_sha256": explorer_export.sha256(path), "presets": [{**preset, "measured": 1}]}}
    (tmp_path / FILE).write_text(json.dumps(data), encoding="utf-8")
    assert json.loads(explorer_hook.presets(tmp_path, "en")) == {"presets": [preset]}  # the page's part only
    assert not caplog.records
    checkpoint(tmp_path, "en", seed=1)  # retrained: the sentences would quote another model
    assert json.loads(explorer_hook.presets(tmp_path, "en")) == {"presets": []}
    assert "python -m tools.data.explorer_presets en" in caplog.text


def test_the_checkpoints_are_those_of_make_model() -> None:
    from models.train import EDITIONS

    assert CHECKPOINTS == {lang: out for lang, (_, out, _) in EDITIONS.items()}


@pytest.mark.parametrize("lang", CHECKPOINTS)
def test_each_editions_checkpoint_exports(lang: str) -> None:
    """The committed checkpoints load and export exactly, within the page's budget of 1 MB per
    edition; their vocabulary is the manifest's."""
    model, chars = explorer_export.load_model(ROOT / CHECKPOINTS[lang])
    manifest, data = export(model, chars, "0" * 64)
    assert manifest["config"]["vocab_size"] == len(chars) == model.tok.num_embeddings
    assert len(data) == manifest["bytes"]
    back = read_back(manifest, data)
    assert all(np.array_equal(back[name], t.numpy()) for name, t in model.state_dict().items())
    text = json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert len(data) + len(text) <= BUDGET, f"{lang}: {len(data):,} + {len(text):,} bytes"
