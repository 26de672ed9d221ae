"""``make check PAGE=04-why-sqrt-dk``: the checks of one page, in both editions, in about 20 s on 2 cores.

First the chapters are tangled into ``src/`` (as ``make serve`` does on a save), so that the page's code runs
against the package as the page now writes it. Then two jobs run side by side, one per core:

* **pytest**, on the page's code blocks in both editions (pytest-codeblocks, as ``make test`` runs them) and on
  the tests of the book that hold for this page: its code width, the parity of its editions, its fences, the
  reading path and the page budget (every chapter: a page's budget is read in a millisecond), the figures'
  numbers and references, and the links and anchors of the sources (the whole book, in a second or two: a
  heading renamed here that another page links to fails here);
* **the strict build** of the page and the pages it links to (``tools/site/page_build.py``), both editions,
  its figures from the figure cache.

Each job's result and time are printed; the exit status is 1 if either failed. ``make test-fast`` stays the
loop of a change to the whole book (the package's tests, every page), and ``make test`` the last word.

``python -m tools.testing.check_page 04-why-sqrt-dk`` (or ``docs/04-why-sqrt-dk.en.md``) runs it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The book's tests that are parametrized by page (selected by the page's name), and those that read every page
# in a second or less (selected by their own names).
BOOK_TESTS = ("tests/book/test_width.py", "tests/book/test_parity.py", "tests/book/test_fences.py",
              "tests/book/test_reading_path.py", "tests/book/test_anchors.py", "tests/site/test_figures.py")
WHOLE_BOOK = ("test_every_page_and_lab_has_an_english_edition", "test_chapter_pages_within_their_size",
              "test_longest_reading_block_per_chapter", "test_reading_path_report", "test_every_link_of_the_book_resolves",
              "test_the_books_figures_are_numbered_and_referenced_consistently")


def pytest_command(page: str) -> list[str]:
    """pytest on the page's blocks (both editions) and on the book's tests of this page."""
    stem = page.removesuffix(".md")
    selected = " or ".join([Path(stem).name, *WHOLE_BOOK])
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
            f"docs/{stem}.md", f"docs/{stem}.en.md", *BOOK_TESTS, "-k", selected]


def main(argv: list[str] | None = None) -> int:
    from tools.book.anchors import nav_entry

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", help="a page of the nav: 04-why-sqrt-dk, or docs/04-why-sqrt-dk.en.md")
    page = nav_entry(parser.parse_args(argv).page)
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "NO_MKDOCS_2_WARNING": "1",
           "OMP_NUM_THREADS": "1", "SELFATTN_NO_SITE": "1"}
    tangled = subprocess.run([sys.executable, "-m", "tools.book.tangle"], cwd=ROOT, env=env)
    if tangled.returncode:
        return 1
    jobs = {
        "pytest": pytest_command(page),
        "strict build": [sys.executable, "-m", "tools.site.page_build", page],
    }
    began = time.monotonic()
    running = {name: subprocess.Popen(command, cwd=ROOT, env=env) for name, command in jobs.items()}
    results: dict[str, tuple[int, float]] = {}
    while len(results) < len(running):  # each job's time is its own
        for name, process in running.items():
            if name not in results and process.poll() is not None:
                results[name] = (process.returncode, time.monotonic() - began)
        time.sleep(0.05)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\ncheck {page} (both editions): " + ", ".join(
        f"{name} {'passed' if rc == 0 else 'FAILED'} ({seconds:.1f} s)" for name, (rc, seconds) in results.items())
        + f"; {time.monotonic() - start:.1f} s in all (load average {load})")
    return 1 if any(rc for rc, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
