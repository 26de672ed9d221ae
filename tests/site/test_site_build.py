"""The background site build of `make test` (``--build-site``, ``BackgroundBuild`` in tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import tests.conftest as plugin
from tests.conftest import BackgroundBuild


def command(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_waiting_process_gets_the_exit_status_and_the_log(tmp_path: Path) -> None:
    build = BackgroundBuild(tmp_path / "build.log", tmp_path / "build.rc")
    build.start(command("import sys, time; time.sleep(0.3); print('building'); sys.exit(3)"))
    worker = BackgroundBuild(build.log, build.status)  # what an xdist worker has: the same two files
    assert worker.wait() == 3
    assert build.finish() == 3 and build.tail() == "building"


def test_an_exit_status_left_by_an_earlier_run_is_not_read(tmp_path: Path) -> None:
    build = BackgroundBuild(tmp_path / "build.log", tmp_path / "build.rc")
    build.status.write_text("0\n", encoding="utf-8")
    build.start(command("import time; time.sleep(0.3); raise SystemExit(1)"))
    assert build.wait() == 1 and build.finish() == 1


def test_an_interrupted_run_stops_the_build(tmp_path: Path) -> None:
    build = BackgroundBuild(tmp_path / "build.log", tmp_path / "build.rc")
    build.start(command("import time; time.sleep(600)"))
    assert build.finish(stop=True) not in (None, 0)
    assert build.wait() != 0


@pytest.mark.parametrize("code, failed", [("print('built')", False), ("raise SystemExit(1)", True)])
def test_a_failed_build_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, failed: bool) -> None:
    """Even when no selected test read the site (so none failed waiting for it)."""
    build = BackgroundBuild(tmp_path / "build.log", tmp_path / "build.rc")
    monkeypatch.setattr(plugin, "SITE_BUILD", build)
    build.start(command(code))
    session = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    plugin.pytest_sessionfinish(session, pytest.ExitCode.OK)  # type: ignore[arg-type]
    assert session.exitstatus == (pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK)


def test_the_tests_that_read_the_site_run_last_and_the_explorer_first() -> None:
    """What lets one worker run tests while the site builds (the root conftest.py, ``_order``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("root_conftest", Path(plugin.ROOT, "conftest.py"))
    assert spec and spec.loader
    root = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root)

    def item(nodeid: str, *fixtures: str) -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixtures))

    items = [item("tests/site/test_site.py::a", "site_dir"), item("docs/01.md::line 3"), item("tests/site/test_explorer.py::b", "site_dir"),
             item("tests/book/test_tangle.py::c", "tmp_path"), item("tests/site/test_browser.py::d", "base_url", "site_dir")]
    root._order(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == ["tests/site/test_explorer.py::b", "docs/01.md::line 3", "tests/book/test_tangle.py::c",
                                         "tests/site/test_site.py::a", "tests/site/test_browser.py::d"]


@pytest.mark.parametrize("stale, builds", [([], False), (["docs/index.md"], True)])
def test_a_fresh_site_is_not_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stale: list[str],
                                         builds: bool) -> None:
    """`make test` twice with nothing changed: the second run builds nothing, and the tests that wait read 0."""
    from tools.site import stamp

    build = BackgroundBuild(tmp_path / "build.log", tmp_path / "build.rc")
    started: list[list[str]] = []
    monkeypatch.setattr(plugin, "SITE_BUILD", build)
    monkeypatch.setattr(build, "start", started.append)
    monkeypatch.setattr(stamp, "stale", lambda root, site: stale)
    monkeypatch.delenv("SELFATTN_NO_SITE", raising=False)
    config = SimpleNamespace(getoption=lambda name: name == "--build-site")
    plugin.pytest_sessionstart(SimpleNamespace(config=config))  # type: ignore[arg-type]
    assert (started == [plugin.MKDOCS_BUILD]) == builds and build.skipped == (not builds)
    if not builds:
        assert build.wait() == 0
