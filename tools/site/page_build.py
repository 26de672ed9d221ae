"""A strict build of one page and its neighbours, for ``make check PAGE=...`` (``tools/testing/check_page.py``).

The page is built in both editions, with the real ``mkdocs.yml`` (theme, hooks, extensions, the search and
i18n plugins) loaded through mkdocs' own API with a few options replaced (:func:`config`):

* ``nav`` holds the page, the preface and the pages it links to, in either edition (:func:`neighbours`).
  Every other page is left out with ``exclude_docs``, so only these are built. mkdocs checks each link of a
  built page against the anchors of the page it names (``validation: anchors: warn``), so a link of the page
  to a heading that it or a neighbour no longer has fails the strict build. The links of other pages to this
  one are the check of the sources' (a renamed heading that other pages link to), which is faster than
  building them;
* a link to a page left out is not an error here (``validation: links: not_found: info``): the check of the
  sources (``tools/book/anchors.py``, which ``make check`` runs too) finds a link to a page that does not exist;
* the labs, the print page and the search index are not built (the mkdocs-jupyter, print-site and search
  plugins are left out); the preface is (the editions need a home page). The page's figures are drawn, or
  taken from the figure cache (``.cache/figures/``), as in the full build; the neighbours' figures are not
  (``figures.DRAW_ONLY``): only their anchors count here, and an edit of the package would draw them all;
* the site goes to a temporary folder, and ``site/`` is left as it is.

``python -m tools.site.page_build 04-why-sqrt-dk`` builds it and exits 1 if the strict build fails.
"""

from __future__ import annotations

import argparse
import logging
import posixpath
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = ("mkdocs-jupyter", "print-site", "search")  # plugins this build does without


def links_of(page: str, root: Path) -> set[str]:
    """The pages of ``docs/`` (nav entries, ``NAME.md``) that a page links to, in either edition."""
    from tools.book.anchors import EXTERNAL, LINK, prose
    from tools.site.languages import source_of

    docs = root / "docs"
    found = set()
    for lang in ("zh", "en"):
        path = docs / source_of(page, lang, docs)
        for m in LINK.finditer(prose(path.read_text(encoding="utf-8"))):
            file = m["target"].partition("#")[0]
            if file and not EXTERNAL.match(file):
                target = posixpath.normpath(posixpath.join(posixpath.dirname(page), file))
                if target.endswith(".md") and (docs / target).is_file():
                    found.add(target)
    return found


def neighbours(page: str, root: Path = ROOT) -> list[str]:
    """The page, then the preface (each edition's home page) and the pages it links to (nav order), ``.md`` only."""
    from tools.book.tangle import load_config, nav_entries

    pages = [p for p in nav_entries(load_config(root)) if p.endswith(".md")]
    if page not in pages:
        raise SystemExit(f"{page}: not a Markdown page of the nav of mkdocs.yml")
    linked = {"index.md"} | links_of(page, root)
    return [page, *(p for p in pages if p in linked and p != page)]


def config(page: str, site_dir: Path, root: Path = ROOT) -> Any:
    """The mkdocs configuration of the build of ``page`` (``04-why-sqrt-dk.md``) into ``site_dir``."""
    from mkdocs.config import load_config as mkdocs_config

    from tools.book.tangle import load_config

    pages = neighbours(page, root)
    raw = load_config(root)
    plugins = [p for p in raw["plugins"] if (next(iter(p)) if isinstance(p, dict) else p) not in LEFT_OUT]
    keep = "\n".join(f"!/{stem}.md\n!/{stem}.*.md" for stem in (p.removesuffix(".md") for p in pages))
    return mkdocs_config(
        config_file=str(root / "mkdocs.yml"),
        strict=True,
        site_dir=str(site_dir),
        nav=pages,
        plugins=plugins,
        exclude_docs=f"*.md\n/labs/\n{keep}\n",
        validation={"links": {"not_found": "info", "anchors": "warn"}, "nav": {"omitted_files": "info"}},
    )


def build(page: str, root: Path = ROOT) -> int:
    """Build ``page`` and its neighbours strictly into a temporary folder; 0 if the build passed, else 1."""
    from mkdocs import exceptions
    from mkdocs.commands import build as mkdocs_build

    from tools.site import figures, mode
    from tools.site.languages import source_of

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    logger = logging.getLogger("mkdocs")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="page-build-") as tmp:
        cfg = config(page, Path(tmp), root)
        names = ", ".join(cfg.nav)
        cfg.plugins.on_startup(command="build", dirty=False)
        mode.build_some_pages()  # the caches keep the entries of the pages not built here
        figures.DRAW_ONLY.update(f"docs/{source_of(page, lang, root / 'docs')}" for lang in ("zh", "en"))
        try:
            mkdocs_build.build(cfg)
        except exceptions.Abort as err:
            print(f"page build: {page} ({names}): {err}", file=sys.stderr)
            return 1
        finally:
            cfg.plugins.on_shutdown()
    print(f"page build: {len(cfg.nav)} page(s) in both editions, strict, in {time.monotonic() - start:.1f} s: {names}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", help="a page of the nav: 04-why-sqrt-dk, 04-why-sqrt-dk.md or docs/04-why-sqrt-dk.en.md")
    from tools.book.anchors import nav_entry

    return build(nav_entry(parser.parse_args(argv).page))


if __name__ == "__main__":
    sys.exit(main())
