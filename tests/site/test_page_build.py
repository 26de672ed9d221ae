"""``make check PAGE=...``: the strict build of one page and the pages it links to (tools/site/page_build.py), and
the loop that runs it beside the page's tests (tools/testing/check_page.py).

The build is tried on a small copy of the repository (the real mkdocs.yml, hooks and theme; four pages): it builds
the page, the preface and the page it links to, and no other; it fails on a link to a heading that is gone; and it
leaves the caches of the pages it did not build as they were.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.site.test_lab_build import _replace_nav, _seed_wheel
from tools.site import page_build
from tools.testing import check_page

ROOT = Path(__file__).resolve().parents[2]


def test_the_neighbours_of_a_page_are_the_pages_it_links_to() -> None:
    pages = page_build.neighbours("04-why-sqrt-dk.md")
    assert pages[:2] == ["04-why-sqrt-dk.md", "index.md"]
    text = (ROOT / "docs" / "04-why-sqrt-dk.md").read_text(encoding="utf-8")
    for other in pages[2:]:
        assert f"]({other}" in text or f"]({other}" in (ROOT / "docs" / "04-why-sqrt-dk.en.md").read_text(encoding="utf-8")
    assert "08-triton.md" not in pages and len(pages) < 10
    with pytest.raises(SystemExit, match="not a Markdown page of the nav"):
        page_build.neighbours("labs/scaling.py")


def test_the_loop_runs_the_pages_blocks_and_the_books_tests_of_the_page() -> None:
    command = check_page.pytest_command("reference/how-built.md")
    assert "docs/reference/how-built.md" in command and "docs/reference/how-built.en.md" in command
    selected = command[command.index("-k") + 1]
    assert selected.startswith("how-built or ") and "test_every_link_of_the_book_resolves" in selected
    for name in check_page.BOOK_TESTS:
        assert (ROOT / name).is_file(), name
    tests = "\n".join((ROOT / name).read_text(encoding="utf-8") for name in check_page.BOOK_TESTS)
    for name in check_page.WHOLE_BOOK:
        assert f"def {name}(" in tests, f"{name}: no such test"


def _small_book(root: Path) -> Path:
    """A copy of the repository's build with four pages: 01-a links to 02-b#kept, 03-c to 01-a; 04-d to nothing."""
    shutil.copytree(ROOT / "tools", root / "tools", ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "overrides", root / "overrides")
    for name in ("assets", "javascripts", "stylesheets"):
        shutil.copytree(ROOT / "docs" / name, root / "docs" / name)
    (root / "src" / "selfattn").mkdir(parents=True)
    (root / "src" / "selfattn" / "__init__.py").write_text("", encoding="utf-8")
    pages = {
        "index": "# 前言\n\n见[第 1 章](01-a.md)。\n",
        "01-a": "# 第 1 章 A\n\n见[第 2 章的一节](02-b.md#kept)。\n\n## 一节 {#here}\n",
        "02-b": "# 第 2 章 B\n\n## 留下的一节 {#kept}\n",
        "03-c": "# 第 3 章 C\n\n见[第 1 章](01-a.md#here)。\n",
        "04-d": "# 第 4 章 D\n\n没有链接。\n",
    }
    for stem, text in pages.items():
        (root / "docs" / f"{stem}.md").write_text(text, encoding="utf-8")
        (root / "docs" / f"{stem}.en.md").write_text(text.replace("第", "Chapter "), encoding="utf-8")
    config = _replace_nav((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), [(s, f"{s}.md") for s in pages])
    config, hooks = re.subn(r"(?m)^  - tools/site/explorer_hook\.py.*\n", "", config)  # it needs the real models
    assert hooks == 1, "the explorer's hook in mkdocs.yml moved: update this test"
    (root / "mkdocs.yml").write_text(config, encoding="utf-8")
    return root


def _page_build(root: Path, page: str) -> subprocess.CompletedProcess[str]:
    _seed_wheel(root)
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "tools.site.page_build", page], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_page_build_builds_its_neighbours_fails_on_a_lost_anchor_and_keeps_the_caches(tmp_path: Path) -> None:
    root = _small_book(tmp_path / "repo")
    kept = root / ".cache" / "figures" / "another-pages-figure.svg"  # a figure of a page this build does not build
    kept.parent.mkdir(parents=True)
    kept.write_text("<svg/>", encoding="utf-8")
    run = _page_build(root, "01-a")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 page(s) in both editions, strict" in run.stdout and "01-a.md, index.md, 02-b.md" in run.stdout, run.stdout
    assert kept.exists(), "a page build dropped a cache entry of a page it did not build"

    b = root / "docs" / "02-b.md"
    b.write_text(b.read_text(encoding="utf-8").replace("{#kept}", "{#renamed}"), encoding="utf-8")
    run = _page_build(root, "01-a")
    log = run.stdout + run.stderr
    assert run.returncode != 0, log
    assert "contains a link '02-b.md#kept', but the doc '02-b.md' does not contain an anchor '#kept'" in log, log
    assert "Aborted with" in log and "strict mode" in log
    # A page that does not link to 02-b is built as before: only the page and what it links to are built.
    assert _page_build(root, "04-d").returncode == 0
