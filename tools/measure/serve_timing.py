"""Time the edit loop of ``mkdocs serve``: save a page, wait for "Reloading browsers".

The measurement of issue 11: serve is up; append a newline to ``docs/03-*.md``; the time
from the write until mkdocs logs ``Reloading browsers`` is the rebuild time. Then:

* a second edit appends a unique marker line; the served page must show it (the reload
  shows the new content, not a stale page);
* with ``--lab``, a comment appended to one lab must re-execute that lab alone (mkdocs-jupyter
  logs "Cache miss" for it and "Cache hit" for every other lab);
* each edition's search index has the same entries after the edits as after the first build
  (none lost, none doubled: material's index once grew at every rebuild);
* the lab cache (``.cache/labs/``) keeps every entry it had before serve started: a rebuild of
  one page must not make the next build execute the labs again;
* with ``--figure``, a comment added to the page's first figure block (``tools/site/figures.py``)
  must render that figure again, and the figures whose ``cont`` chain runs through it, and no
  other (the build logs "figures: rendered ... figure LABEL" for each figure it executes; the
  others come from ``.cache/figures/``).

Every edited file gets its original text back at the end (that restore is timed too).
The load average is printed with the numbers: the machine may be shared.

Usage::

    python -m tools.measure.serve_timing                 # `make serve` (serve --dirty); or: make serve-timing
    python -m tools.measure.serve_timing --full          # `make serve-full` (every page rebuilt on a save)
    python -m tools.measure.serve_timing --lab labs/scaling.py --port 8011
    python -m tools.measure.serve_timing --figure --port 8011   # edit a figure block of docs/03-*.md
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELOAD = "Reloading browsers"


class Serve:
    """``mkdocs serve`` in its own process group, its log lines timestamped in a queue."""

    def __init__(self, root: Path, port: int, dirty: bool) -> None:
        env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}", "NO_MKDOCS_2_WARNING": "1"}
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", *(["--dirty"] if dirty else []), "-a", f"127.0.0.1:{port}"],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), line.rstrip()))

    def wait_for(self, pattern: str, timeout: float) -> tuple[float, list[str]]:
        """Wait for a log line matching ``pattern``; return its time and the lines seen until then."""
        seen: list[str] = []
        end = time.perf_counter() + timeout
        while True:
            try:
                t, line = self.lines.get(timeout=max(0.01, end - time.perf_counter()))
            except queue.Empty:
                tail = "\n".join(self.log[-30:])
                raise TimeoutError(f"no {pattern!r} within {timeout:.0f} s; last lines:\n{tail}") from None
            self.log.append(line)
            seen.append(line)
            if re.search(pattern, line):
                return t, seen

    def stop(self) -> None:
        with_group = os.getpgid(self.proc.pid)
        os.killpg(with_group, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(with_group, signal.SIGKILL)


def timed_edit(serve: Serve, path: Path, text: str, timeout: float) -> tuple[float, list[str]]:
    """Write ``text`` to ``path``; seconds until the reload, and the log lines of that rebuild."""
    time.sleep(0.5)  # let the previous reload settle
    while not serve.lines.empty():
        serve.log.append(serve.lines.get()[1])
    t0 = time.perf_counter()
    path.write_text(text, encoding="utf-8")
    t1, seen = serve.wait_for(RELOAD, timeout)
    return t1 - t0, seen


def search_entries(serve: Serve) -> list[int]:
    """The number of entries in each edition's served search index (Chinese, English)."""
    import json

    counts = []
    for prefix in ("", "en/"):
        url = f"{serve.url}/selfattn/{prefix}search/search_index.json"
        counts.append(len(json.loads(urllib.request.urlopen(url, timeout=30).read())["docs"]))
    return counts


def page_url(serve: Serve, src: str) -> str:
    return f"{serve.url}/selfattn/{src.removesuffix('.md').removesuffix('.py')}/"


def edit_a_figure(serve: Serve, page: Path, original: str, marker: str, timeout: float) -> list[str]:
    """Add a comment to the first figure block of ``page``, twice (the first time, the serve process
    imports matplotlib and torch): that figure is rendered again, with the figures whose
    ``cont`` chain runs through it, and no other."""
    from tools.site.figures import chain_code, find

    found = find(original)
    if not found:
        return [f"--figure: {page.name} has no figure block"]
    figure = found[0]
    lines = original.splitlines(keepends=True)
    close = figure.fence.start + len(figure.fence.body) + 1
    failures = []
    for attempt in (1, 2):
        comment = f"# {marker}-{attempt}"
        edited = "".join([*lines[:close], f"{figure.fence.indent}{comment}\n", *lines[close:]])
        expected = [f.label for f in find(edited) if comment in chain_code(edited, f.fence)]
        t0 = time.perf_counter()
        dt, seen = timed_edit(serve, page, edited, timeout)
        for _ in range(3):  # a rebuild already under way when the file was written does not show the edit
            html = urllib.request.urlopen(page_url(serve, page.name), timeout=30).read().decode("utf-8")
            if f"{marker}-{attempt}" in html:
                break
            t1, more = serve.wait_for(RELOAD, timeout)
            dt, seen = t1 - t0 - 0.5, seen + more  # timed_edit waits 0.5 s before writing
        else:
            failures.append(f"the served page never showed the edit of figure {figure.label}")
        rendered = [line.split("figures: rendered")[1].strip().rsplit(" ", 1)[-1] for line in seen if "figures: rendered" in line]
        print(f"add a comment to figure {figure.label} ({attempt}): reloaded in {dt:.2f} s; rendered figures "
              f"{rendered} (expected {expected}), {len(found) - len(rendered)} of the page's figures from the cache")
        if rendered != expected:
            failures.append(f"editing figure {figure.label} rendered {rendered}, expected {expected}")
        dt, seen = timed_edit(serve, page, original, timeout)
        again = [line for line in seen if "figures: rendered" in line]
        print(f"restore docs/{page.name}: reloaded in {dt:.2f} s; rendered {len(again)} figure(s)")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--page", default="", help="the chapter to edit (default: docs/03-*.md)")
    parser.add_argument("--lab", default="", help="also edit this lab, e.g. labs/cost.py")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--full", action="store_true", help="serve without --dirty (`make serve-full`)")
    parser.add_argument("--figure", action="store_true", help="also edit the page's first figure block")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    page = root / args.page if args.page else sorted(p for p in (root / "docs").glob("03-*.md") if ".en." not in p.name)[0]
    src = page.relative_to(root / "docs").as_posix()
    originals = {page: page.read_text(encoding="utf-8")}
    lab = root / "docs" / args.lab if args.lab else None
    if lab is not None:
        originals[lab] = lab.read_text(encoding="utf-8")

    lab_cache = sorted((root / ".cache" / "labs").glob("*/*/*.json"))
    load = os.getloadavg()
    print(f"serve-timing: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    serve = Serve(root, args.port, dirty=not args.full)
    print(f"serve-timing: mkdocs serve{'' if args.full else ' --dirty'} (as `make serve{'-full' if args.full else ''}`)")
    failures = []
    try:
        t_start = time.perf_counter()
        t, _ = serve.wait_for(r"Serving on", args.timeout)
        print(f"first build: {t - t_start:.1f} s")
        entries = search_entries(serve)

        dt, _ = timed_edit(serve, page, originals[page] + "\n", args.timeout)
        print(f"append a newline to docs/{src}: reloaded in {dt:.2f} s")

        marker = f"serve-timing-marker-{time.time_ns()}"
        dt, _ = timed_edit(serve, page, originals[page] + f"\n{marker}\n", args.timeout)
        html = urllib.request.urlopen(page_url(serve, src), timeout=30).read().decode("utf-8")
        shown = marker in html
        print(f"append a marker line: reloaded in {dt:.2f} s; the served page shows it: {shown}")
        if not shown:
            failures.append("the reloaded page does not show the new content")

        dt, _ = timed_edit(serve, page, originals[page], args.timeout)
        print(f"restore docs/{src}: reloaded in {dt:.2f} s")
        after = search_entries(serve)
        print(f"search index entries (zh, en): {entries} after the first build, {after} after the edits")
        if after != entries:
            failures.append(f"the search index went from {entries} to {after} entries")

        if args.figure:
            failures += edit_a_figure(serve, page, originals[page], marker, args.timeout)

        if lab is not None:
            dt, seen = timed_edit(serve, lab, originals[lab] + f"\n# %%\n# {marker}\n", args.timeout)
            misses = [line.split("Cache miss, writing:")[1].strip() for line in seen if "Cache miss" in line]
            hits = [line.split("Cache hit:")[1].strip() for line in seen if "Cache hit" in line]
            print(f"append a cell to docs/{args.lab}: reloaded in {dt:.2f} s; executed {misses}, from cache {hits}")
            if [Path(m).name for m in misses] != [lab.name]:
                failures.append(f"editing {args.lab} executed {misses}, expected that lab alone")
            dt, _ = timed_edit(serve, lab, originals[lab], args.timeout)
            print(f"restore docs/{args.lab}: reloaded in {dt:.2f} s")
    finally:
        for path, text in originals.items():
            if path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        serve.stop()
    lost = [p for p in lab_cache if not p.exists()]
    print(f"lab cache: {len(lab_cache) - len(lost)} of its {len(lab_cache)} entries kept")
    if lost:
        failures.append(f"the rebuilds deleted {len(lost)} lab cache entries: the next build executes those labs again")
    load = os.getloadavg()
    print(f"serve-timing: load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for failure in failures:
        print(f"serve-timing: FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
