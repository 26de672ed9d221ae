"""The built site in Chromium, for the browser tests and the measuring tools: a local server, a browser, a tab.

* :func:`serve` serves ``site/`` on 127.0.0.1 under the path of ``site_url`` (``/selfattn/``), as GitHub
  Pages does (:class:`SiteHandler`; :class:`EmptySearchHandler` sends each edition's search index without its
  documents, see :class:`Tab`);
* :func:`chromium_path` finds Chromium (``$SELFATTN_CHROMIUM``, ``chromium`` or ``chromium-browser``) and
  :func:`launch` starts it headless, every request to another host sent to a closed port (LAUNCH_ARGS);
* :func:`visit` loads a page in the browser's one reused :class:`Tab` and records what it did (:class:`Watch`);
* :func:`page_url` and :func:`source`: a nav entry's URL and the file it is built from.

``tests/site/test_browser.py`` (its fixtures and checks) and ``tools/measure/figure_text.py`` use them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tools.book.parity import english_path
from tools.book.tangle import load_config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_config(ROOT)
DOCS = ROOT / CONFIG.get("docs_dir", "docs")
# The site is served under the path of site_url (/selfattn/), as GitHub Pages does: 404.html uses absolute links.
PREFIX = urlparse(CONFIG["site_url"]).path.rstrip("/") + "/"
# The English edition's pages are served under en/ (built from docs/NAME.en.md).
EN = "en/"
# A page's figure text test (tests/site/test_figure_text.py) runs right after its page test (tests/site/test_browser.py;
# the root conftest.py orders them by these node ids), and the page test's load of the page measures the figures for it
# into FIGURE_MEASURES: one load of each page instead of two, when both run in the same worker. The dict lives here
# because pytest imports a test module under its own name, and a test module imported by another is a second copy.
PAGE_TEST = "tests/site/test_browser.py::test_page["
FIGURE_TEXT_TEST = "tests/site/test_figure_text.py::test_figure_text_is_large_enough_apart_and_legible["
FIGURE_MEASURES: dict[str, dict[str, Any]] = {}
PROXY = "127.0.0.1:9"  # the discard port: nothing listens there (test_a_request_to_another_host_is_recorded_and_fails)
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Every host but the loopback goes through a proxy at a closed port, so no request can leave the machine
    # (Chromium sends 127.0.0.1 direct). Each attempt is still recorded (Watch.external), and reported.
    f"--proxy-server=http://{PROXY}",
]
def page_url(src: str) -> str:
    """``05-implementation.md`` -> ``05-implementation/``; ``index.md`` -> ``''`` (use_directory_urls)."""
    stem = src.rsplit(".", 1)[0]
    if stem == "index":
        return ""
    return stem.removesuffix("/index") + "/"


def source(src: str) -> Path:
    """The file a page is built from: ``en/05-implementation.md`` is ``docs/05-implementation.en.md``."""
    if src.startswith(EN):
        return english_path(DOCS / src.removeprefix(EN))
    return DOCS / src


def chromium_path() -> str:
    for candidate in (os.environ.get("SELFATTN_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    return ""


@contextlib.contextmanager
def launch(path: str) -> Iterator[Any]:
    """A headless Chromium (one per thread: Playwright's sync API is bound to its thread)."""
    from playwright.sync_api import sync_playwright

    # A Jupyter kernel run earlier in this thread (tests/site/test_notebooks.py, through nbclient and
    # nest-asyncio) can leave its event loop registered as running, although nothing runs in it:
    # this code is not inside any loop. Playwright's sync API refuses to start then, so clear it.
    if asyncio.events._get_running_loop() is not None:
        asyncio.events._set_running_loop(None)
    with sync_playwright() as p:
        # headless=True makes Playwright pass --headless itself (Chromium's new headless mode).
        b = p.chromium.launch(executable_path=path, headless=True, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            TABS.pop(id(b), None)
            b.close()


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serve site/ under PREFIX as GitHub Pages does: unknown paths get site/404.html with status 404, and
    what exists is sent with ``Cache-Control: max-age=600``, so the browser reuses a stylesheet or a script
    from one page on the next, as a reader's browser does.

    ``full_search`` False (base_url): the edition's search index is sent without its documents (see Tab)."""

    full_search = True
    empty_indexes: dict[str, bytes] = {}  # the path of each edition's index -> that index without documents

    def do_GET(self) -> None:
        if self.full_search or not self.path.endswith("/search/search_index.json"):
            return super().do_GET()
        path = self.translate_path(self.path)
        if path not in self.empty_indexes:
            index = json.loads(Path(path).read_text(encoding="utf-8"))
            if not index["docs"]:
                return self.send_error(500, f"{self.path} has no documents")
            self.empty_indexes[path] = json.dumps({**index, "docs": []}).encode()
        body = self.empty_indexes[path]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_response(self, code: int, message: str | None = None) -> None:
        super().send_response(code, message)
        if code in (200, 304):
            self.send_header("Cache-Control", "max-age=600")

    def translate_path(self, path: str) -> str:
        path = urlparse(path).path
        if not path.startswith(PREFIX):
            return str(Path(self.directory) / "outside-the-prefix" / "does-not-exist")  # nothing outside it exists
        return super().translate_path("/" + path[len(PREFIX) :])

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.exists():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class EmptySearchHandler(SiteHandler):
    full_search = False


@contextlib.contextmanager
def serve(site_dir: Path, handler: type[SiteHandler]) -> Iterator[str]:
    """site/ served at 127.0.0.1 on a free port; yields the URL of the site's root (PREFIX)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Watch:
    """What a page did: console errors, uncaught exceptions, requests to another host (each fails at the
    proxy, see LAUNCH_ARGS), failed local loads."""

    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def is_local(url: str) -> bool:
    parts = urlparse(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname == "127.0.0.1"


VIEWPORT = {"width": 1280, "height": 900}


class Tab:
    """One browser context and one page of it, reused for every page a browser visits.

    A new context for each page costs a new renderer process: six pages took 27 CPU-seconds that way
    and 15 in one reused page (about 40 % less; 2 cores). Each visit still starts as a new context
    would: storage cleared (so the palette starts from the media query), the viewport 1280 x 900,
    and a new Watch. What it does not start with is an empty HTTP cache: like a reader moving from
    page to page, the tab keeps the stylesheets, scripts and fonts it loaded (the server sends
    GitHub Pages' ``max-age=600``), and Chromium reuses the scripts' compiled code.

    Pages come from ``base_url``, where each edition's search index has no documents: material's search
    worker builds the index of the whole edition at every page load, about 0.7 CPU-second each time
    (8 pages: 23-27 CPU-s with the index, 18-20 without), and that index is the same on every page of an
    edition. test_search loads its pages from ``search_url``, with the real index, and queries it."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport=VIEWPORT, color_scheme="light", locale="zh-CN", accept_downloads=True)
        self.watch = Watch()
        page = self.page = self.context.new_page()
        # The handlers look the watch up when an event comes, so each event goes to the current visit.
        page.on("console", lambda m: m.type == "error" and self.watch.errors.append(f"console: {m.text} ({m.location})"))
        page.on("pageerror", lambda e: self.watch.errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: None if is_local(r.url) else self.watch.external.append(r.url))
        page.on("response", lambda r: r.status >= 400 and self.watch.failed.append(f"{r.status} {r.url}"))
        self.crashed = False
        page.on("crash", lambda _: (self.watch.errors.append("the page crashed"), setattr(self, "crashed", True)))

    def reset(self) -> None:
        """Storage cleared and the viewport 1280 x 900; raises if the page crashed or was closed.

        The storage of the page's origin is cleared when a visit ends (``visit``) and again before the
        next one: ``base_url`` and ``search_url`` are two origins, and each keeps its own storage."""
        page = self.page
        if self.crashed:
            raise RuntimeError("the page crashed")
        if page.url.startswith("http"):
            page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        if page.viewport_size != VIEWPORT:  # on a blank page: resizing a long page lays it out again (0.3 s or more)
            page.goto("about:blank")
            page.set_viewport_size(VIEWPORT)

    def visit(self, url: str, timeout_ms: int) -> tuple[Any, Watch]:
        page = self.page
        page.set_default_timeout(timeout_ms)
        self.watch = Watch()
        page.goto(url, wait_until="load")
        return page, self.watch


TABS: dict[int, Tab] = {}  # id(browser) -> its tab; launch() forgets it when the browser closes


@contextlib.contextmanager
def visit(browser: Any, url: str, timeout_ms: int = 60_000) -> Iterator[tuple[Any, Watch]]:
    """The page loaded from ``url`` in the browser's tab, and what it did.

    A test that fails mid-way may leave the page in any state: the next visit loads a new page anyway,
    in a new tab if the renderer crashed or the page was closed."""
    from playwright.sync_api import Error as PlaywrightError

    tab = TABS.get(id(browser))
    if tab is not None:
        try:
            tab.reset()
        except (PlaywrightError, RuntimeError):  # crashed or closed: reported by the visit it happened in
            with contextlib.suppress(PlaywrightError):
                tab.context.close()
            tab = None
    if tab is None:
        tab = TABS[id(browser)] = Tab(browser)
    yield tab.visit(url, timeout_ms)
    with contextlib.suppress(PlaywrightError, RuntimeError):  # leave this origin's storage empty (see reset)
        tab.reset()
