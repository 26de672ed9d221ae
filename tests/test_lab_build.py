"""A lab notebook whose cell raises must fail ``mkdocs build --strict``.

The labs under ``docs/labs/`` are executed by mkdocs-jupyter at build time with
``allow_errors: false``. This test proves that setting really guards the book: it
copies the repository to a temporary folder, appends a failing cell to a lab and
builds the copy. To keep the test fast, the copy keeps only that lab, the static
assets and a one-line index page, and its ``nav`` lists only those two pages; the
rest of ``mkdocs.yml`` (plugins, hooks, extensions) is the real configuration.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools.tangle import load_config

ROOT = Path(__file__).resolve().parents[1]
LAB = "labs/scaling.py"
CANARY = "lab-build-canary: this cell fails on purpose"


def _replace_nav(config_text: str, pages: list[tuple[str, str]]) -> str:
    """Replace the top-level ``nav:`` block of ``mkdocs.yml`` by ``pages``, leaving every other line as it is.

    The edit is textual so that tags, comments and key order survive untouched.
    """
    lines = config_text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if re.match(r"^nav:\s*$", line))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t-#"):
        end += 1
    nav = ["nav:\n"] + [f"  - {title}: {path}\n" for title, path in pages]
    return "".join(lines[:start] + nav + lines[end:])


def _make_copy(dst: Path) -> Path:
    """A trimmed copy of the repository that builds only the index page and one lab."""
    shutil.copytree(ROOT / "tools", dst / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "src", dst / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if (ROOT / "overrides").is_dir():  # theme.custom_dir
        shutil.copytree(ROOT / "overrides", dst / "overrides")
    docs = dst / "docs"
    for name in ("assets", "javascripts", "stylesheets"):
        if (ROOT / "docs" / name).is_dir():
            shutil.copytree(ROOT / "docs" / name, docs / name)
    (docs / "labs").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / LAB, docs / LAB)
    (docs / "index.md").write_text("# 前言\n\n见[实验](labs/scaling.py)。\n", encoding="utf-8")

    config = _replace_nav((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), [("前言", "index.md"), ("实验", LAB)])
    (dst / "mkdocs.yml").write_text(config, encoding="utf-8")
    parsed = load_config(dst)
    assert parsed["nav"] == [{"前言": "index.md"}, {"实验": LAB}], parsed["nav"]
    jupyter = [p["mkdocs-jupyter"] for p in parsed["plugins"] if isinstance(p, dict) and "mkdocs-jupyter" in p]
    assert jupyter and jupyter[0]["execute"] is True and jupyter[0]["allow_errors"] is False, jupyter
    return dst


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}",
        "NO_MKDOCS_2_WARNING": "1",
        "MPLBACKEND": "Agg",
    }
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_replace_nav_keeps_the_rest_of_the_config() -> None:
    text = "site_name: t\nnav:\n  - A: a.md\n  - B:\n      - C: c.md\n\n# comment\nplugins:\n  - search\n"
    out = _replace_nav(text, [("X", "x.md")])
    assert out == "site_name: t\nnav:\n  - X: x.md\nplugins:\n  - search\n"


def test_a_failing_lab_cell_fails_the_strict_build(tmp_path: Path) -> None:
    root = _make_copy(tmp_path / "repo")
    lab = root / "docs" / LAB
    lab.write_text(lab.read_text(encoding="utf-8") + f'\n\n# %%\nraise RuntimeError("{CANARY}")\n', encoding="utf-8")

    run = _build(root, tmp_path / "site")
    log = run.stdout + run.stderr
    assert run.returncode != 0, f"the build should fail on the raising cell, but it exited 0:\n{log[-3000:]}"
    assert CANARY in log, f"the build log should name the failing cell's error:\n{log[-3000:]}"
    assert not (tmp_path / "site" / "labs" / "scaling" / "index.html").exists(), "no page for the failed lab"
