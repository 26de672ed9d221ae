"""tools/data/explorer_book.py: what the explorer takes from the book besides the model (``explorer/book.json``),
exported from the package, never copied by hand, and added to each edition's build (the browser side:
tests/site/test_explorer.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pytest

from selfattn import example, plot
from tools.data import explorer_book
from tools.data.explorer_book import CHAPTER, cached, export, labels

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_example_is_the_package_s(lang: str) -> None:
    """X, W_q, W_k and W_v are selfattn.example's; d_k is the number of columns of W_k; the labels are
    the ones chapter 3's worked example assigns in the edition's own page."""
    book = export(ROOT, lang)["example"]
    w_q, w_k, w_v = example.projections()
    assert book["x"] == example.embeddings().tolist()
    assert (book["w_q"], book["w_k"], book["w_v"]) == (w_q.tolist(), w_k.tolist(), w_v.tolist())
    assert book["d_k"] == w_k.shape[1] == 4
    names = labels(ROOT / CHAPTER[lang])
    assert (book["tokens"], book["features"]) == (names["tokens"], names["features"])
    assert len(book["tokens"]) == example.embeddings().shape[0] and len(set(book["tokens"])) == len(book["tokens"])


def test_the_labels_come_from_the_chapters_code() -> None:
    """The two editions label the same example in their own language (the English page's words are
    the example's, as its docstring says: "cat drank milk, then it slept")."""
    en, zh = labels(ROOT / CHAPTER["en"]), labels(ROOT / CHAPTER["zh"])
    assert en["tokens"] == ["cat", "drank", "milk", "then", "it", "slept"]
    assert en["features"] == ["animal", "drink", "action", "pronoun"]
    assert len(zh["tokens"]) == len(en["tokens"]) and zh["tokens"] != en["tokens"]
    assert " ".join(en["features"]) in example.__doc__.replace(",", "")


def test_a_chapter_without_the_labels_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nfrom selfattn import example\n\nx = example.embeddings()\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="tokens = \\[...\\]"):
        labels(page)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_colormap_is_the_book_s(lang: str) -> None:
    """256 colors of selfattn.plot.WEIGHTS_CMAP from 0 to 1, as matplotlib draws the book's figures."""
    cmap = export(ROOT, lang)["cmap"]
    assert cmap["name"] == plot.WEIGHTS_CMAP
    rgb = np.array([[int(cmap["colors"][k + o : k + o + 2], 16) for o in (0, 2, 4)]
                    for k in range(0, len(cmap["colors"]), 6)])
    want = np.round(mpl.colormaps[plot.WEIGHTS_CMAP](np.linspace(0, 1, 256))[:, :3] * 255)
    assert rgb.shape == (256, 3) and np.array_equal(rgb, want)


def copy_sources(dst: Path) -> None:
    for rel in (*explorer_book.SOURCES, *CHAPTER.values()):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, dst / rel)


def test_cached_once_and_again_when_a_source_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is exported once per key (a warm build exports nothing), and again, in place of the old
    one, when the example's module or the chapter changes."""
    copy_sources(tmp_path)
    calls: list[str] = []
    real = explorer_book.export

    def counting(root: Path, lang: str) -> dict[str, Any]:
        calls.append(lang)
        return real(ROOT, lang)  # the package itself (the copies only move the key)

    monkeypatch.setattr(explorer_book, "export", counting)
    first = cached(tmp_path, "en")
    assert cached(tmp_path, "en") == first and calls == ["en"]
    assert json.loads(first.read_text(encoding="utf-8")) == real(ROOT, "en")
    for rel in (explorer_book.SOURCES[0], CHAPTER["en"]):
        with (tmp_path / rel).open("a", encoding="utf-8") as f:
            f.write("\n")
        again = cached(tmp_path, "en")
        assert again != first and again.is_file() and not first.exists()
        first = again
    assert calls == ["en", "en", "en"]
    assert cached(tmp_path, "zh") != first and first.exists()  # each edition its own file
