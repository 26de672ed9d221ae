"""No test reads a stale site: the build stamps ``site/`` with what it was built from (tools/site/stamp.py), and
the ``site_dir`` fixture (tests/conftest.py) builds the site again when an input changed since.

The mechanism is tested on a small folder with a stand-in build; the last tests check the real site's stamp
and that every test reaches the built site through ``site_dir``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools.site import stamp

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A folder with a few of the inputs a build reads."""
    for name in ("mkdocs.yml", "docs/04-why-sqrt-dk.md", "docs/04-why-sqrt-dk.en.md", "src/selfattn/functional.py",
                 "tools/site/figures.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n", encoding="utf-8")
    return tmp_path


class Build:
    """A stand-in for ``mkdocs build``: stamps ``site/`` as the hooks do (``begin`` at the start, ``finish`` at the
    end), counting its runs; ``broken`` builds that write no stamp."""

    def __init__(self, root: Path, broken: bool = False, strict: bool = True) -> None:
        self.root, self.broken, self.strict, self.runs = root, broken, strict, 0

    def __call__(self) -> None:
        self.runs += 1
        site = self.root / "site"
        site.mkdir(exist_ok=True)
        for old in site.iterdir():  # mkdocs empties site/ first
            old.unlink()
        (site / "index.html").write_text("<p>built</p>", encoding="utf-8")
        if not self.broken:
            stamp.begin(self.root)
            stamp.finish(type("Config", (), {"site_dir": str(site), "strict": self.strict})())


def test_a_site_is_built_when_missing_and_again_exactly_when_an_input_changed(book: Path) -> None:
    build = Build(book)
    assert stamp.ensure_fresh(book, build) == [f"site/{stamp.STAMP} (no stamp: the site was not built, or its build failed)"]
    assert build.runs == 1
    assert stamp.ensure_fresh(book, build) == [] and build.runs == 1, "a fresh site is read as it is"
    with (book / "docs/04-why-sqrt-dk.md").open("a", encoding="utf-8") as f:
        f.write("一行。\n")
    assert stamp.ensure_fresh(book, build) == ["docs/04-why-sqrt-dk.md"], "the stale input is named"
    assert build.runs == 2
    (book / "src/selfattn/plot.py").write_text("X = 1\n", encoding="utf-8")  # a new module
    (book / "tools/site/figures.py").unlink()  # a removed one
    assert stamp.ensure_fresh(book, build) == ["src/selfattn/plot.py", "tools/site/figures.py"]
    assert stamp.ensure_fresh(book, build) == [] and build.runs == 3


def test_a_site_still_stale_after_its_build_fails_the_test_naming_the_inputs(book: Path) -> None:
    Build(book)()  # built and stamped
    (book / "docs/04-why-sqrt-dk.en.md").write_text("Edited.\n", encoding="utf-8")
    broken = Build(book, broken=True)  # a build that fails before it stamps the site
    with pytest.raises(stamp.StaleSite, match=r"site/ is still stale after it was built again: site/\.build-inputs\.json"):
        stamp.ensure_fresh(book, broken)
    assert broken.runs == 1


def test_a_site_built_without_strict_is_stale(book: Path) -> None:
    """`make test` skips its build when the site is fresh: a site that `mkdocs build` made without --strict
    (warnings allowed) must not pass for one."""
    Build(book, strict=False)()
    assert stamp.stale(book, book / "site") == [stamp.STRICT]
    Build(book)()
    assert stamp.stale(book, book / "site") == []


def test_the_installed_packages_are_an_input(book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site built with another version of mkdocs, material or torch is stale too."""
    Build(book)()
    monkeypatch.setattr(stamp, "packages", lambda: "another set")
    assert stamp.stale(book, book / "site") == [stamp.PACKAGES]


def test_the_stamp_holds_what_the_build_started_from(book: Path) -> None:
    """A file saved while the build runs makes the site stale: the stamp holds the inputs the build read."""
    stamp.begin(book)
    (book / "docs/04-why-sqrt-dk.md").write_text("Saved during the build.\n", encoding="utf-8")
    (book / "site").mkdir()
    stamp.finish(type("Config", (), {"site_dir": str(book / "site"), "strict": True})())
    assert stamp.stale(book, book / "site") == ["docs/04-why-sqrt-dk.md"]


def test_the_inputs_are_what_the_build_reads_and_nothing_generated() -> None:
    """On the real repository: the pages, labs, assets, theme, package, the build's tools, data and config, and no
    bytecode, no notebook checkpoint, no test."""
    names = stamp.inputs(ROOT)
    for expected in ("mkdocs.yml", "pyproject.toml", "docs/04-why-sqrt-dk.en.md", "docs/labs/scaling.py",
                     "docs/stylesheets/extra.css", "overrides/main.html", "src/selfattn/functional.py",
                     "tools/site/hooks.py", "tools/book/tangle.py", "models/charlm.pt", "benchmarks/results/cpu.json"):
        assert expected in names, expected
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "site/", ".cache/", "reports/"))]


def test_the_built_site_carries_a_fresh_stamp(site_dir: Path) -> None:
    recorded = json.loads((site_dir / stamp.STAMP).read_text(encoding="utf-8"))
    assert "docs/04-why-sqrt-dk.md" in recorded and stamp.PACKAGES in recorded
    assert stamp.stale(ROOT, site_dir) == []


def test_every_test_reads_the_built_site_through_site_dir() -> None:
    """site_dir is the one way to the built site (it rebuilds a stale one): no test names the folder itself."""
    direct = re.compile(r"""ROOT\s*/\s*["']site\b|Path\(["']site\b|open\(["']site/""")
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if direct.search(line) and "site_dir" not in line and path.name not in ("conftest.py", Path(__file__).name):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_packages_are_those_installed_not_those_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder on sys.path that holds a distribution (the working folder, PYTHONPATH) does not change the hash:
    the build's process and a test's may have different paths."""
    from tools.site import stamp

    before = stamp.packages()
    info = tmp_path / "stray-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stray\nVersion: 9.9\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib.metadata

    assert "stray" in {d.metadata["Name"] for d in importlib.metadata.distributions()}  # the path does hold it
    assert stamp.packages() == before
