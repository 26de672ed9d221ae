"""One term per concept in the English edition (``tools/book/terms.py`` scans for the variants).

``python -m tools.book.terms`` prints the hits without failing.
"""

from __future__ import annotations

from pathlib import Path

from tools.book.terms import all_hits, files, hits

ROOT = Path(__file__).resolve().parents[2]


def test_one_term_per_concept() -> None:
    found = all_hits()
    assert not found, f"{len(found)} variants; use the chosen term:\n" + "\n".join(found)


def test_the_scan_skips_code_and_finds_variants_in_prose_and_captions() -> None:
    page = (
        "An empty row gives NaN; `fp16 = x` is code, and so is $LN(x)$.\n"
        "See [the heatmap](a/heat-map.md).\n"
        "\n"
        "```python\n"
        "#| label: a-heatmap\n"
        "#| caption: A heat map in fp16.\n"
        "fp16 = 1  # a bitwise copy\n"
        "```\n"
        "\n"
        "    ```text\n"
        "    the explicit path\n"
        "    ```\n"
        "| feed-forward network | 前馈网络（FFN） | the bitwise NOT of a mask |\n"
    )
    found = hits(ROOT / "x.en.md", page)
    assert found == [
        "x.en.md:1: 'empty row' -> 'fully masked row'",
        "x.en.md:6: 'heat map' -> 'heatmap'",
        "x.en.md:6: 'fp16' -> 'float16'",
    ], found
    lab = "# %% [markdown]\n# Pre-normalization, or pre-LN.\n\n# %%\nffn = MLP()\n"
    assert hits(ROOT / "x.en.py", lab) == [
        "x.en.py:2: 'Pre-normalization' -> 'Pre-LN'", "x.en.py:2: 'pre-LN' -> 'Pre-LN'",
    ]


def test_every_english_page_and_lab_is_scanned() -> None:
    scanned = files()
    assert any(p.name == "07-pitfalls.en.md" for p in scanned)
    assert any(p.suffix == ".py" for p in scanned) and ROOT / "README.md" in scanned
    assert not any(p.name.endswith(".md") and not p.name.endswith(".en.md") and p.name != "README.md"
                   for p in scanned)

