"""The README a newcomer reads: its example runs and prints what it shows, its commands and
addresses are the real ones, and it stays short (the maintainer material is in CONTRIBUTING.md).

pytest-codeblocks does not collect README.md (``testpaths`` are tests/, docs/ and src/), so this
test runs the README's ```` ```python ```` blocks itself, in order and in one namespace, and compares
what they print with the ```` ```text ```` block that follows each.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from tools.release.package import package_version
from tools.book.tangle import load_config, parse_fences

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCES = parse_fences(README, "README.md")


def run_python_blocks(text: str) -> list[tuple[str, str, str | None]]:
    """Run every ```python block of ``text``; return (code, printed, the next ```text block or None)."""
    fences = parse_fences(text, "README.md")
    namespace: dict[str, object] = {"__name__": "__readme__"}
    results = []
    for i, fence in enumerate(fences):
        if fence.info != "python":
            continue
        code = "\n".join(fence.body)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md:{fence.start + 1}", "exec"), namespace)
        following = fences[i + 1] if i + 1 < len(fences) else None
        shown = "\n".join(following.body) if following is not None and following.info == "text" else None
        results.append((code, out.getvalue(), shown))
    return results


def test_the_readme_example_runs_and_prints_what_it_shows() -> None:
    results = run_python_blocks(README)
    assert len(results) == 1, "the README has one Python example"
    code, printed, shown = results[0]
    assert len([line for line in code.splitlines() if line.strip()]) == 5, code
    assert shown is not None, "a ```text block after the example shows its output"
    assert printed.rstrip("\n") == shown.rstrip("\n"), (printed, shown)


def test_a_wrong_output_in_the_readme_fails() -> None:
    text = "```python\nprint(1 + 1)\n```\n\n```text\n3\n```\n"
    [(_, printed, shown)] = run_python_blocks(text)
    assert printed.strip() != shown


def test_the_readme_pins_the_packages_version() -> None:
    pins = re.findall(r"pip install selfattn==(\d[\w.]*)", README)
    assert pins and set(pins) == {package_version(ROOT)}, pins


def test_the_readme_gives_both_editions_online_and_locally() -> None:
    site_url = load_config(ROOT)["site_url"]
    assert site_url.endswith("/")
    assert f"<{site_url}>" in README and f"<{site_url}en/>" in README
    path = re.sub(r"^https?://[^/]+", "", site_url)  # mkdocs serve serves the site under site_url's path
    for local in (f"http://127.0.0.1:8000{path}", f"http://127.0.0.1:8000{path}en/"):
        assert local in README, local


def test_ci_runs_the_readme_test_command() -> None:
    consoles = [f for f in FENCES if f.info == "console"]
    commands = [line.split("#")[0].strip() for f in consoles for line in f.body if line.startswith("make test")]
    assert commands == ["make test"], commands
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert [line for line in ci if line and not line.startswith(("#", "set ", "cd "))] == commands


def test_the_makefile_runs_the_tests_without_the_browser_on_request() -> None:
    """``make test BROWSER=0`` (named in the README) skips Chromium and the browser-marked tests."""
    import shutil
    import subprocess

    import pytest

    if shutil.which("make") is None:
        pytest.skip("make is not on PATH")
    assert "make test BROWSER=0" in README

    def dry_run(*args: str) -> str:
        # -n: print the commands only; the stamp's prerequisites are made old so nothing installs
        cmd = ["make", "-n", "test", "-o", ".venv/.installed", "-o", "pyproject.toml", "-o", "constraints.txt", *args]
        # Under `make test BROWSER=0` this make would inherit BROWSER=0 through MAKEFLAGS: start from none.
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "BROWSER")}
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout

    full, fast = dry_run(), dry_run("BROWSER=0")
    assert "apt-get" in full and "pytest -n 2 --dist worksteal" in full and "not browser" not in full
    assert "apt-get" not in fast and '-m "not browser"' in fast and "--build-site" in fast  # the strict build


def test_the_readme_stays_short_and_links_the_maintainer_guide() -> None:
    assert len(README.splitlines()) <= 120
    assert "(CONTRIBUTING.md)" in README and (ROOT / "CONTRIBUTING.md").is_file()


def test_the_readme_leads_with_the_book_and_leaves_the_machinery_to_contributing() -> None:
    """A newcomer reads the pitch, the chapters (with the explorer), where to read, the two commands,
    then the package; install details for maintainers live in CONTRIBUTING.md."""
    headings = [line[3:] for line in README.splitlines() if line.startswith("## ")]
    order = ["What is inside", "Read it online", "Read it and test it on your machine: two commands",
             "Use the package"]
    assert [h for h in headings if h in order] == order, headings
    inside = README.split("## What is inside", 1)[1].split("\n## ", 1)[0]
    assert "explorer" in inside and all(f"\n{n}. " in inside for n in range(1, 11)), inside
    for maintainer_only in ("TORCH_PIP_ARGS", "actionlint", "apt-get", "s measured"):
        assert maintainer_only not in README, maintainer_only
        assert maintainer_only in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"), maintainer_only
    assert "LICENSE-BOOK.md" in README and "CC BY 4.0" in (ROOT / "LICENSE-BOOK.md").read_text(encoding="utf-8")
