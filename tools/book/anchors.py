"""Links between the book's pages, and to their anchors, checked in the Markdown sources (no build).

Every inline link of a page of the nav, in both editions (``[text](05-implementation.md#mask-polarity)``,
``[](#fig-weights-heatmap)``, ``[lab](labs/scaling.py)``; in a lab's Markdown cells also the address of a page,
``[4.4](../../04-why-sqrt-dk/#gradient-at-q)``), outside code, must name a page that exists
(the edition's own ``NAME.en.md``, or the Chinese page where it has none, as mkdocs-static-i18n falls back),
and its ``#anchor`` must be an id of that page. A page's ids are those that the page's Markdown makes,
converted with the ``markdown_extensions`` of ``mkdocs.yml`` (headings, ``{#id}`` and ``{: #id }``, raw
HTML), as mkdocs collects them for its own anchor check (``validation: anchors``), and its figures'
``fig-LABEL`` (``tools/site/figures.py``). Highlighting is left out: it makes no id, and is most of the
time a conversion takes. Links to other hosts and to files the build generates (``print_page/``,
notebooks) are left to the check of the built site (``tools/book/linkcheck.py``); anchors into a page
that mkdocstrings fills (``::: selfattn.x``) are too, since its ids exist only after the build.

So a renamed heading that other pages link to fails here in a second or two, long before a build, and
``mkdocs build --strict`` fails on it too (``validation: anchors: warn`` in ``mkdocs.yml``).

``python -m tools.book.anchors [docs/NAME.md ...]`` prints the broken links (of the pages named, both
editions, or of every page) and exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import functools
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.book.tangle import book_pages, load_config, nav_entries, parse_fences

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = ("zh", "en")
LINK = re.compile(r"(?<!\\)\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\((?P<target>[^()\s]*)(?:\s+\"[^\"\n]*\")?\)")
CODE_SPAN = re.compile(r"(?P<ticks>`+)(?!`).+?(?<!`)(?P=ticks)(?!`)", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
ID = re.compile(r"""<(?:[^<>]*\s)?id=["']([^"']+)["']|<a\s(?:[^<>]*\s)?name=["']([^"']+)["']""")  # an element's id; a name only on <a>
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)  # https:, mailto:, //host
CHECKED = (".md", ".py")  # pages and labs; any other target (print_page/, a notebook) is the site check's


@dataclass(frozen=True)
class Broken:
    """A link that does not resolve: in ``source`` (``docs/NAME.en.md``) at ``line``, to ``target``, and why."""

    source: str
    line: int
    target: str
    why: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: ({self.target}): {self.why}"


def source_file(page: str, lang: str, docs: Path) -> Path:
    """The file a page of the nav is built from in an edition (the Chinese page where there is no English one)."""
    from tools.site.languages import source_of

    return docs / source_of(page, lang, docs)


def prose(text: str) -> str:
    """``text`` with its fenced code, code spans and HTML comments blanked (each line kept, for line numbers)."""
    lines = text.splitlines(keepends=True)
    for fence in parse_fences(text, ""):
        for i in range(fence.start, min(fence.start + len(fence.body) + 2, len(lines))):
            lines[i] = "\n"
    text = "".join(lines)

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m[0])

    return CODE_SPAN.sub(blank, COMMENT.sub(blank, text))


@functools.cache
def _markdown(root: Path) -> Any:
    """A Markdown converter with the extensions of ``mkdocs.yml``, without highlighting."""
    import markdown

    names, configs = [], {}
    for entry in load_config(root).get("markdown_extensions", []):
        name, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        configs[name] = dict(options or {})
    if "pymdownx.highlight" in configs:
        configs["pymdownx.highlight"]["use_pygments"] = False
    return markdown.Markdown(extensions=names, extension_configs=configs)


def lab_markdown(path: Path) -> str:
    """The Markdown cells of a lab (a jupytext percent script), one after another."""
    import jupytext

    return "\n\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")


@functools.cache
def _ids(path: Path, mtime: int, root: Path) -> frozenset[str]:
    from tools.site.figures import FigureError, find

    text = lab_markdown(path) if path.suffix == ".py" else path.read_text(encoding="utf-8")
    md = _markdown(root)
    md.reset()
    ids = {a or b for a, b in ID.findall(md.convert(text))}
    try:
        ids |= {figure.id for figure in find(text)}
    except FigureError:  # tools/site/figures.py names a bad figure header
        pass
    return frozenset(ids)


def ids(path: Path, root: Path = ROOT) -> frozenset[str]:
    """The ids a page's (or a lab's) Markdown makes: what a link's ``#anchor`` may name."""
    return _ids(path, path.stat().st_mtime_ns, root)


def lab_prose(text: str) -> str:
    """The Markdown cells of a lab (a jupytext percent script), without their ``# ``, each line in its place;
    the code cells blanked."""
    out, markdown = [], False
    for line in text.splitlines():
        if line.startswith("# %%"):
            markdown = "[markdown]" in line
            out.append("")
        else:
            out.append(re.sub(r"^# ?", "", line) if markdown else "")
    return "\n".join(out) + "\n"


def resolve(page: str, file: str, docs: Path) -> str:
    """The page of ``docs/`` that a link of ``page`` names: ``05-implementation.md``, or, in a lab, written as the
    address of the page (``../../04-why-sqrt-dk/``, relative to the lab's own address ``labs/scaling/``), that
    page's file; the target as written, normalized, when there is none."""
    if page.endswith(".py") and not file.endswith(CHECKED) and not posixpath.splitext(file)[1]:
        url = posixpath.normpath(posixpath.join(page.removesuffix(".py") + "/", file))
        for candidate in (f"{url}.md", f"{url}/index.md", f"{url}.py"):
            if (docs / candidate).is_file():
                return candidate
        return url + "/"
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), file))


def broken_links(page: str, lang: str, root: Path = ROOT) -> list[Broken]:
    """The broken links of one page of the nav (``05-implementation.md``, or a lab) in one edition."""
    docs = root / "docs"
    path = source_file(page, lang, docs)
    name = path.relative_to(root).as_posix()
    raw = path.read_text(encoding="utf-8")
    text = prose(lab_prose(raw) if page.endswith(".py") else raw)
    problems = []
    for m in LINK.finditer(text):
        target = m["target"]
        if not target or EXTERNAL.match(target):
            continue
        line = text.count("\n", 0, m.start()) + 1
        file, _, anchor = target.partition("#")
        if file:
            resolved = resolve(page, file, docs)
            if not resolved.endswith((*CHECKED, "/")):
                continue
            if resolved.startswith("../") or not (docs / resolved).is_file():
                problems.append(Broken(name, line, target, f"no page docs/{resolved}"))
                continue
            other = source_file(resolved, lang, docs)
        else:
            other = path
        if anchor and anchor != "top" and anchor not in ids(other, root):
            if other.suffix == ".md" and "\n::: " in other.read_text(encoding="utf-8"):
                continue  # mkdocstrings makes its ids at build time
            problems.append(Broken(name, line, target,
                                   f"no id {anchor!r} in {other.relative_to(root).as_posix()}"))
    return problems


def check(pages: list[str] | None = None, root: Path = ROOT) -> list[Broken]:
    """The broken links of ``pages`` (nav entries; every page of the nav if None), in both editions."""
    entries = nav_entries(load_config(root)) if pages is None else pages
    return [b for page in entries for lang in EDITIONS for b in broken_links(page, lang, root)]


def nav_entry(name: str, root: Path = ROOT) -> str:
    """``docs/04-why-sqrt-dk.en.md``, ``04-why-sqrt-dk`` or ``04-why-sqrt-dk.md`` -> ``04-why-sqrt-dk.md``."""
    stem = Path(name).name.removesuffix(".md").removesuffix(".en")
    rel = Path(name).parent.as_posix().removeprefix("docs").strip("/")
    entry = posixpath.join(rel, stem + ".md") if rel not in ("", ".") else stem + ".md"
    if f"docs/{entry}" not in book_pages(root):
        raise SystemExit(f"{name}: not a page of the nav of mkdocs.yml")
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="docs/NAME.md (both editions are checked); every page if none")
    args = parser.parse_args(argv)
    pages = [nav_entry(p) for p in args.pages] if args.pages else None
    problems = check(pages)
    for problem in problems:
        print(problem)
    count = len(pages) if pages else len(nav_entries(load_config(ROOT)))
    print(f"anchors: {len(problems)} broken link(s) in {count} page(s), both editions", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
