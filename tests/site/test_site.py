"""The built site/ works offline: nothing is loaded from a non-local host."""

from __future__ import annotations

import json
import re
from pathlib import Path

import lxml.html

REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)
LOADING_RELS = {"stylesheet", "icon", "shortcut", "preload", "modulepreload", "apple-touch-icon", "manifest", "prefetch"}
SRC_TAGS = {"script", "img", "iframe", "embed", "source", "audio", "video", "track", "input"}


def loaded_urls(html: str | bytes) -> list[str]:
    """The URLs a page *loads* (scripts, styles, fonts, images, frames), not plain links.

    lxml parses the 41 MB of the site's pages in 1.9 CPU-seconds; html.parser took 7.7."""
    urls: list[str] = []
    for el in lxml.html.document_fromstring(html).iter():
        if not isinstance(el.tag, str):  # a comment or a processing instruction
            continue
        a = el.attrib
        if el.tag in SRC_TAGS and a.get("src"):
            urls.append(a["src"])
        if el.tag in {"img", "source"} and a.get("srcset"):
            urls += [part.strip().split()[0] for part in a["srcset"].split(",") if part.strip()]
        if el.tag == "link" and set(a.get("rel", "").lower().split()) & LOADING_RELS and a.get("href"):
            urls.append(a["href"])
        if el.tag == "object" and a.get("data"):
            urls.append(a["data"])
        urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", a.get("style", ""))
    return urls


def remote_assets(html: str) -> list[str]:
    found = [u for u in loaded_urls(html) if REMOTE.match(u.strip())]
    found += [u for u in re.findall(r"@import\s+(?:url\()?['\"]?([^'\");]+)", html) if REMOTE.match(u)]
    return found


def test_the_finder_catches_remote_assets() -> None:
    html = (
        '<script src="https://cdn.example.com/x.js"></script><link rel="stylesheet" href="//fonts.example.com/a.css">'
        '<img src="http://img.example.com/a.png"><a href="https://example.com">a plain link is fine</a>'
        '<link rel="canonical" href="https://example.com/page/"><script src="assets/local.js"></script>'
        '<!-- <img src="https://example.com/commented-out.png"> --><svg><text>a figure</text></svg>'
        '<img srcset="a.png 1x, https://img.example.com/b.png 2x"><object data="//example.com/o.svg"></object>'
        '<div style="background: url(\'https://example.com/bg.png\')"></div><style>@import "https://example.com/i.css";</style>'
    )
    assert remote_assets(html) == ["https://cdn.example.com/x.js", "//fonts.example.com/a.css", "http://img.example.com/a.png",
                                   "https://img.example.com/b.png", "//example.com/o.svg", "https://example.com/bg.png",
                                   "https://example.com/i.css"]


def test_no_page_loads_from_a_remote_host(site_dir: Path) -> None:
    pages = sorted(site_dir.rglob("*.html"))
    assert len(pages) >= 10, "the site should have been built"
    bad = {p.relative_to(site_dir).as_posix(): remote_assets(p.read_text(encoding="utf-8")) for p in pages}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"pages loading from non-local hosts: {bad}"


def test_no_stylesheet_imports_from_a_remote_host(site_dir: Path) -> None:
    bad = {}
    for css in site_dir.rglob("*.css"):
        urls = re.findall(r"(?:url\(|@import\s+)['\"]?((?:https?:)?//[^'\")\s]+)", css.read_text(encoding="utf-8", errors="replace"))
        urls = [u for u in urls if not u.startswith("//# sourceMappingURL")]
        if urls:
            bad[css.relative_to(site_dir).as_posix()] = urls
    assert not bad, f"stylesheets loading from non-local hosts: {bad}"


def test_katex_is_vendored_and_fonts_are_off(site_dir: Path) -> None:
    assert (site_dir / "assets/katex/katex.min.js").stat().st_size > 100_000
    assert (site_dir / "assets/katex/LICENSE").exists()
    assert any((site_dir / "assets/katex/fonts").glob("KaTeX_Main-Regular.woff2"))
    home = (site_dir / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in home and "fonts.gstatic.com" not in home


def test_chapter_5_shows_file_titles_and_no_marker(site_dir: Path) -> None:
    html = (site_dir / "05-implementation/index.html").read_text(encoding="utf-8")
    titles = re.findall(r'<span class="filename">([^<]+)</span>', html)
    assert "src/selfattn/self_attention.py" in titles
    assert "src/selfattn/functional.py" in titles and "src/selfattn/masks.py" in titles
    assert "#| file" not in html


def test_search_index_is_segmented_for_chinese(site_dir: Path) -> None:
    """With jieba, material's search index is built with lang zh and a segmented text."""
    index = json.loads((site_dir / "search/search_index.json").read_text(encoding="utf-8"))
    assert index["config"]["lang"] == ["zh"]
    text = "".join(doc["text"] for doc in index["docs"])
    # material's search plugin segments Chinese with jieba, joining words with a zero-width space.
    assert "\u200b" in text, "the Chinese text was not segmented: is jieba installed?"
