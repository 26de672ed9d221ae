"""Second witnesses of the site build: behaviours that only one test pinned, each pinned again by an
independent test (the package's: ``tests/package/test_pinned_twice.py``, whose docstring says why).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.site.test_figures import book, build, executed, figure_block  # noqa: F401  (fixtures)
from tools.site import figures


def test_a_link_to_a_figure_on_another_page_is_resolved_on_that_page(tmp_path: Path) -> None:
    """Mutant: ``check_book`` looks for the figure of ``[..](01-b.md#fig-second)`` on the linking page
    (first witness: tests/site/test_figures.py expects a broken cross-page link to be reported). Here the
    links are right, across pages and on the same page: nothing is reported; the same link on the
    page that holds the figure, written as a cross-page link to the other page, is reported."""
    from tests.site.test_figures import small_site

    a = "# A\n\n" + figure_block("first") + "\n[{fig:second}](01-b.md#fig-second)；[{fig:first}](#fig-first)。\n"
    b = "# B\n\n" + figure_block("second") + "\n[{fig:first}](01-a.md#fig-first)。\n"
    root = small_site(tmp_path, a, b)
    assert figures.check_book(root, ("zh",)) == []
    (root / "docs" / "01-b.md").write_text(b.replace("01-a.md#fig-first", "01-a.md#fig-second"), encoding="utf-8")
    assert figures.check_book(root, ("zh",)) == ["docs/01-b.md: a link to 01-a.md#fig-second, which holds no such figure"]


def test_every_built_page_offers_the_same_page_in_each_language(site_dir: Path) -> None:
    """Mutant: the switcher points to the page's own language (first witness: tests/site/test_build.py
    checks ``switcher.point``'s list). Read from the built site: each page's ``hreflang`` link of each
    language leads to a built page whose ``<html lang>`` is that language."""
    from tools.site.languages import LANGUAGES

    pages = sorted(site_dir.glob("**/index.html"))
    checked = 0
    for page in pages:
        head = page.read_text(encoding="utf-8").split("</head>", 1)[0]
        links = dict(re.findall(r'<link rel="alternate" href="([^"]*)" hreflang="([^"]+)"', head))
        if not links:
            continue
        assert sorted(links.values()) == sorted(LANGUAGES), f"{page}: hreflang links {links}"
        for href, lang in links.items():
            target = (page.parent / href).resolve() / "index.html"
            assert target.is_file(), f"{page}: hreflang {lang} -> {href}, which is not built"
            html = target.read_text(encoding="utf-8")[:2000]
            assert re.search(rf'<html[^>]* lang="{lang}"', html), f"{page}: hreflang {lang} -> {target}"
        checked += 1
    assert checked > 40, f"only {checked} pages have hreflang links"


MODEL_FIGURE = """```python
#| label: model
#| caption: The size of a model file.
#| alt: One bar, as long as the model file is.
from pathlib import Path

import matplotlib.pyplot as plt

size = Path({path!r}).stat().st_size
fig, ax = plt.subplots(figsize=(2, 1.5))
ax.bar([0], [size], color="#202124")
ax.set_title(f"{{size}} bytes")
```
"""


def test_a_retrained_model_draws_its_figures_again(book: Path, executed: list[str]) -> None:  # noqa: F811
    """Mutant: the figures' cache key leaves out ``models/*.pt`` (first witness: tests/site/test_figures.py
    changes the bytes of each file the book's figures read and expects another key). Here through the
    cache, on a small book: a figure drawn from a model file is served from the cache while the file stays
    the same, and drawn again, showing the new file, after the file changes (a retrained model) although
    no code changed."""
    model = book / "models" / "m.pt"
    model.parent.mkdir()
    model.write_bytes(b"x" * 100)
    page = "# 第 1 章\n\n" + MODEL_FIGURE.format(path=str(model)) + "\n"
    _, first = build(page, book)
    figures.begin(book)  # the next build
    _, warm = build(page, book)
    assert executed == ["fig-model"] and warm == first, "an unchanged model: served from the cache"
    model.write_bytes(b"x" * 200)
    figures.begin(book)
    _, after = build(page, book)
    assert executed == ["fig-model", "fig-model"], "a changed model file draws its figure again"
    assert "100 bytes" in first["fig-model"] and "200 bytes" in after["fig-model"]
