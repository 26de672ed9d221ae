"""One version in one place (pyproject.toml), readable as selfattn.__version__, shown on the site."""

from __future__ import annotations

import re
from pathlib import Path

import selfattn
from tools.release import package_version

ROOT = Path(__file__).resolve().parents[1]
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
