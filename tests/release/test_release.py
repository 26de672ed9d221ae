"""One version in one place (pyproject.toml), readable as selfattn.__version__, shown on the site."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import selfattn
from tools.release.package import build_wheel, package_version, setup_cell

ROOT = Path(__file__).resolve().parents[2]
VERSION = package_version(ROOT)


def test_the_package_reports_the_pyproject_version() -> None:
    assert selfattn.__version__ == VERSION, (
        f"selfattn.__version__ {selfattn.__version__} != pyproject {VERSION}: reinstall (make setup)"
    )


def test_the_version_is_written_nowhere_else_in_the_sources() -> None:
    hits = [p for p in (ROOT / "src" / "selfattn").glob("*.py") if f'"{VERSION}"' in p.read_text(encoding="utf-8")]
    assert not hits, f"a second copy of the version in {hits}"


def test_the_changelog_starts_with_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d\d-\d\d$", text, flags=re.M)
    assert releases and releases[0] == VERSION, releases
    assert "## [Unreleased]" in text and "Keep a Changelog" in text


def test_the_site_shows_the_version_and_offers_the_wheel(site_dir: Path) -> None:
    home = (site_dir / "index.html").read_text(encoding="utf-8")
    assert f"selfattn {VERSION}" in home, "the footer names the version"
    wheel = f"dist/selfattn-{VERSION}-py3-none-any.whl"
    assert (site_dir / wheel).is_file()
    assert f'href="{wheel}"' in home, "the preface links to the wheel"
    assert "{{ selfattn_version }}" not in home


def _run_setup_cell(version: str, cwd: Path, monkeypatch: pytest.MonkeyPatch, wheel: str | None) -> list[list[str]]:
    """Run the setup cell as IPython would, in ``cwd``; return the argv of each ``%pip`` line."""
    from IPython.core.inputtransformer2 import TransformerManager

    calls: list[list[str]] = []
    ns: dict[str, object] = {}

    class Shell:
        def run_line_magic(self, name: str, line: str) -> None:
            assert name == "pip"
            calls.append(shlex.split(line.format(**ns)))  # IPython expands {name}; sh splits

    if wheel is None:
        monkeypatch.delenv("SELFATTN_WHEEL", raising=False)
    else:
        monkeypatch.setenv("SELFATTN_WHEEL", wheel)
    monkeypatch.chdir(cwd)
    ns["get_ipython"] = Shell
    exec(TransformerManager().transform_cell(setup_cell(version, "en")), ns)
    return calls


def test_the_setup_cell_installs_the_plot_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the repository the figure cells need matplotlib: the cell installs selfattn[plot]."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    other = "0.0.0"  # a version this environment does not have: the cell must install
    assert _run_setup_cell(other, tmp_path, monkeypatch, None) == [
        ["install", "-q", f"selfattn[plot]=={other}"]
    ]
    wheel = str(tmp_path / "my wheels" / f"selfattn-{other}-py3-none-any.whl")  # a space: quoted
    assert _run_setup_cell(other, tmp_path, monkeypatch, wheel) == [["install", "-q", f"{wheel}[plot]"]]
    assert _run_setup_cell(VERSION, tmp_path, monkeypatch, None) == [], "this version and matplotlib import"
    assert _run_setup_cell(other, ROOT, monkeypatch, None) == [], "inside the repository: src/"


@pytest.mark.slow  # pip builds and reads a wheel
def test_pip_reads_the_wheel_with_the_plot_extra(tmp_path: Path) -> None:
    """The form the cell gives pip for $SELFATTN_WHEEL, WHEEL[plot], asks for matplotlib, offline."""
    # The wheel of the sources as they are now, from the cache the site build fills (or built here first):
    # one `pip wheel` per test run, not two.
    wheel = build_wheel(ROOT)
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--ignore-installed", "--no-deps",
         "-q", "--report", str(report), f"{wheel}[plot]"],
        check=True, env=env, capture_output=True, text=True,
    )
    [item] = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert item["metadata"]["name"] == "selfattn" and item["requested_extras"] == ["plot"], item
    assert any(r.startswith("matplotlib") and 'extra == "plot"' in r for r in item["metadata"]["requires_dist"])
