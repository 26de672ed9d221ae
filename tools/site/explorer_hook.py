"""MkDocs hook of the attention explorer (registered under ``hooks:`` in ``mkdocs.yml``).

``on_files`` adds the explorer's weights to each edition's build: ``explorer/charlm.json`` and
``explorer/charlm.bin`` for the Chinese edition, ``en/explorer/...`` for the English one, each
from its own checkpoint (``tools.data.explorer_export.CHECKPOINTS``), and the edition's presets,
``explorer/presets.json``, from ``models/explorer-presets.json`` (``tools/data/explorer_presets.py``).
Presets measured on another checkpoint than the committed one are not shipped: their sentences
would quote numbers of another model. The build logs a warning (an error under ``--strict``)
that says to run ``python -m tools.data.explorer_presets``. Last comes ``explorer/book.json``:
chapter 3's worked example and the book's weights colormap, exported from the package by
``tools/data/explorer_book.py``. The page ``explorer/`` fetches them by relative URL. The files
are exported into ``.cache/explorer/`` once per checkpoint (and per source of ``book.json``)
and copied from there: nothing is written into ``docs/``, so ``mkdocs serve`` does not reload
in a loop, and a rebuild that finds the export in the cache does not import torch.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # so that `tools` imports under `mkdocs`
from tools.data import explorer_book
from tools.data.explorer_export import CHECKPOINTS, NAMES, cached, sha256
from tools.data.explorer_presets import FILE as PRESETS

log = logging.getLogger("mkdocs.hooks.explorer")

DEFAULT_LANGUAGE = "zh"  # the edition at the site's root; every other one lives under /<lang>/


def language(config: Any) -> str:
    """The edition being built: mkdocs-static-i18n builds the default one first, then each other one."""
    i18n = getattr(config, "plugins", {}).get("i18n")
    return getattr(i18n, "current_language", None) or DEFAULT_LANGUAGE


@event_priority(-300)  # after mkdocs-static-i18n (-100), which replaces the files per language
def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    lang = language(config)
    root = Path(config.config_file_path).parent
    folder = cached(root, lang)
    prefix = "" if lang == DEFAULT_LANGUAGE else f"{lang}/"
    for name in NAMES:
        files.append(File.generated(config, f"{prefix}explorer/{name}", abs_src_path=str(folder / name)))
    files.append(File.generated(config, f"{prefix}explorer/presets.json", content=presets(root, lang)))
    book = explorer_book.cached(root, lang)
    files.append(File.generated(config, f"{prefix}explorer/{explorer_book.NAME}", abs_src_path=str(book)))
    return files


def presets(root: Path, lang: str) -> str:
    """The edition's presets as the page reads them (``{"presets": [...]}``): none, with a
    warning, when they were measured on another checkpoint or not at all."""
    path = root / PRESETS
    data = json.loads(path.read_text(encoding="utf-8")).get(lang) if path.is_file() else None
    checkpoint = root / CHECKPOINTS[lang]
    if not data or data["checkpoint_sha256"] != sha256(checkpoint):
        log.warning(f"explorer: the presets in {PRESETS} were not measured on {checkpoint.name}: "
                    f"run `python -m tools.data.explorer_presets {lang}`")
        return json.dumps({"presets": []})
    keep = ("pattern", "layer", "head", "label", "prompt", "sentence", "share", "uniform")
    return json.dumps({"presets": [{k: p[k] for k in keep} for p in data["presets"]]}, ensure_ascii=False)
