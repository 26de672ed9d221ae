"""Every link of the built site resolves: each ``href`` and ``src`` to a file, each ``#fragment`` to an id.

The site is checked as it is served, under the path of ``site_url`` (``/selfattn/``, as GitHub Pages serves
it): each page's references are resolved against the page's own address (``site/05-implementation/index.html``
is ``/selfattn/05-implementation/``), so a link that climbs out of the site, or that only works from another
folder, is broken. A path names a file of ``site/``, or a folder with an ``index.html`` (as the server sends
it). A fragment must be the ``id`` (or the ``name`` of an ``<a>``) of an element of the target page, exactly
once: a link to an id that several elements share is reported too, since the browser goes to the first of
them, whichever page of the print page it is in. ``#`` alone and ``#top`` go to the top of any page (HTML's
rule). Links to other hosts are not followed (the book works offline; ``tests/site/test_site.py`` checks that no
page *loads* from one), but an absolute link to the site's own address (``site_url``, e.g. the canonical
link) is checked as a local one.

Every element's ``href``, ``xlink:href`` (the inline SVG figures refer to their own glyphs and clip paths)
and ``src`` are read, and ``srcset``. The pages are parsed once each with lxml: the site's 100-odd pages,
two of them 6 MB print pages, take a few seconds.

``python -m tools.book.linkcheck [site]`` prints the broken ones, grouped by kind, and exits 1 if there are any.
Why not an existing checker: linkchecker 10.6 (PyPI) fetches each URL as a separate check over HTTP; with its
AnchorCheck on this site served locally it had not finished after 240 s (166 CPU-seconds; this module takes
about 2 s). mkdocs-htmlproofer-plugin runs inside the build on each Markdown page, so it sees neither the print
pages (written after the pages) nor the 404 pages.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import lxml.html

OTHER_SCHEMES = ("mailto:", "tel:", "data:", "javascript:", "blob:", "about:")
REF_ATTRIBUTES = ("href", "{http://www.w3.org/1999/xlink}href", "xlink:href", "src")


@dataclass(frozen=True)
class Broken:
    """A reference that does not resolve: on ``page`` (its path in the site), ``attribute="ref"``, and why."""

    page: str
    attribute: str
    ref: str
    why: str

    def __str__(self) -> str:
        return f"{self.page}: {self.attribute}={self.ref!r}: {self.why}"


@dataclass
class Page:
    """What the checker needs of a page: its ids (with how often each occurs) and its references."""

    ids: collections.Counter[str]
    refs: list[tuple[str, str]]  # (attribute, value)


def _srcset(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


def read_page(html: bytes | str) -> Page:
    """The ids and references of one HTML page (lxml: the 6 MB print page in well under a second)."""
    ids: collections.Counter[str] = collections.Counter()
    refs: list[tuple[str, str]] = []
    if not (html.strip() if isinstance(html, str) else html.strip()):
        return Page(ids, refs)
    for el in lxml.html.document_fromstring(html).iter():
        if not isinstance(el.tag, str):  # a comment or a processing instruction
            continue
        attrib = el.attrib
        if (value := attrib.get("id")) is not None:
            ids[value] += 1
        if el.tag == "a" and (name := attrib.get("name")) and name != attrib.get("id"):
            ids[name] += 1
        for attribute in REF_ATTRIBUTES:
            if (value := attrib.get(attribute)) is not None:
                refs.append((attribute.rsplit("}", 1)[-1].replace("xlink:", ""), value))
        if srcset := attrib.get("srcset"):
            refs += [("srcset", u) for u in _srcset(srcset)]
    return Page(ids, refs)


def page_address(site: Path, file: Path, prefix: str) -> str:
    """The address a file of the site is served at: ``index.html`` as its folder (``/selfattn/en/``)."""
    rel = file.relative_to(site).as_posix()
    if rel == "index.html" or rel.endswith("/index.html"):
        rel = rel[: -len("index.html")]
    return prefix + rel


def target_file(site: Path, path: str, prefix: str) -> Path | None:
    """The file of ``site`` that the server sends for ``path`` (unquoted), or None: nothing outside ``prefix``,
    a folder only if it has an ``index.html``."""
    if not path.startswith(prefix):
        return None
    rel = PurePosixPath(path[len(prefix) :])
    if ".." in rel.parts:
        return None
    file = site.joinpath(*rel.parts) if rel.parts else site
    if path.endswith("/") or file.is_dir():
        file = file / "index.html"
    return file if file.is_file() else None


class Site:
    """The built site, read lazily: each HTML file is parsed once, when first needed."""

    def __init__(self, site: Path, site_url: str) -> None:
        self.root = site
        parts = urlsplit(site_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/") + "/"
        self._pages: dict[Path, Page] = {}

    def page(self, file: Path) -> Page:
        if file not in self._pages:
            self._pages[file] = read_page(file.read_bytes())
        return self._pages[file]

    def html_files(self) -> list[Path]:
        return sorted(self.root.rglob("*.html"))

    def check_ref(self, address: str, own: Page, value: str) -> str | None:
        """Why ``value``, found on the page served at ``address``, does not resolve; None when it does."""
        ref = value.strip()
        if not ref or ref.lower().startswith(OTHER_SCHEMES):
            return None if ref else "an empty reference"
        url = urlsplit(urljoin("http://site" + address, ref))
        if url.scheme not in ("http", "https"):
            return None  # another scheme: nothing to resolve here
        if (url.scheme, url.netloc) == ("http", "site"):
            path = url.path
        elif f"{url.scheme}://{url.netloc}" == self.origin and url.path.startswith(self.prefix):
            path = url.path  # the site's own address (canonical links): as a local link
        else:
            return None  # another host: not followed
        fragment = url.fragment
        same_page = ref.startswith("#")
        if same_page:
            page = own
        else:
            file = target_file(self.root, unquote(path), self.prefix)
            if file is None:
                return f"{path} does not exist" + ("" if path.startswith(self.prefix) else f" (outside {self.prefix})")
            if not fragment:
                return None
            if file.suffix != ".html":
                return f"#{fragment}: {path} is not an HTML page"
            page = self.page(file)
        if not fragment or fragment.lower() == "top":
            return None  # the top of the page
        # HTML's rule: the fragment as written, else percent-decoded (``#%E4%B8%AD`` finds ``id="中"``).
        count = page.ids.get(fragment, 0) or page.ids.get(fragment := unquote(fragment), 0)
        where = "this page" if same_page else path
        if count == 0:
            return f"no id {fragment!r} on {where}"
        if count > 1:
            return f"id {fragment!r} is on {count} elements of {where}"
        return None

    def broken(self, files: Iterable[Path] | None = None) -> Iterator[Broken]:
        """Every reference of the given HTML files (default: all of the site) that does not resolve."""
        for file in self.html_files() if files is None else files:
            own = self.page(file)
            address = page_address(self.root, file, self.prefix)
            name = file.relative_to(self.root).as_posix()
            for attribute, value in own.refs:
                if why := self.check_ref(address, own, value):
                    yield Broken(name, attribute, value, why)


def site_url(root: Path) -> str:
    """``site_url`` of ``mkdocs.yml`` (read without mkdocs: its tags would need the plugins)."""
    text = (root / "mkdocs.yml").read_text(encoding="utf-8")
    m = re.search(r"^site_url:\s*(\S+)\s*$", text, flags=re.MULTILINE)
    if not m:
        raise ValueError("mkdocs.yml has no site_url")
    return m.group(1).strip("'\"")


def kind(b: Broken) -> str:
    """A short name for the kind of a broken reference, for the summary: the page (print pages and labs
    together) and what is wrong, with numbers and names blurred (``#…__codelineno-N-N``)."""
    why = re.sub(r"'[^']*'", "'…'", b.why)
    why = re.sub(r"(?<= )/\S*", "PATH", why)
    why = re.sub(r"\d+ elements", "N elements", why)
    return f"{b.page}: {b.attribute}: {why}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book.linkcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default="site", help="the built site (default: site)")
    parser.add_argument("--all", action="store_true", help="list every broken reference, not only the summary")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    site = Site(Path(args.site), site_url(root))
    found = list(site.broken())
    by_kind = collections.Counter(kind(b) for b in found)
    for k, n in sorted(by_kind.items()):
        example = next(b for b in found if kind(b) == k)
        print(f"{n:6d}  {k}   e.g. {example.ref!r}")
    if args.all:
        for b in found:
            print(b)
    print(f"{len(found)} broken reference(s) in {len(site.html_files())} HTML files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
