"""Shared fixtures of tests/ (the CUDA skip rule lives in the root conftest.py), and the site build of `make test`.

``pytest --build-site`` (`make test`) builds ``site/`` with ``mkdocs build --strict`` in the background while
the tests that do not read it run: the build uses one core for about 20 s (minutes in a fresh clone, which
executes every lab), and the other core is not left idle. A site whose stamp matches its inputs, from a strict
build (tools/site/stamp.py), is not built again: a second `make test` with nothing changed builds nothing. The
tests that read the site (``site_dir``) wait for it, and run last (the root conftest.py orders them). The build's
log is ``reports/site-build.log``; a failed build fails every test that reads the site, and the run, and the end of
its log is printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from tools import atomic

ROOT = Path(__file__).resolve().parents[1]
MKDOCS_BUILD = [sys.executable, "-m", "mkdocs", "build", "--strict"]


class BackgroundBuild:
    """A command run in the background, its output in ``log``; its exit status is written to ``status`` when it
    ends, so that other processes (pytest-xdist's workers) can wait for it."""

    def __init__(self, log: Path, status: Path) -> None:
        self.log, self.status = log, status
        self.process: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.seconds = 0.0
        self.skipped = False

    def skip(self) -> None:
        """Nothing to run: the processes that wait read exit status 0."""
        self.status.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.status, "0\n")
        self.skipped = True

    def start(self, command: list[str]) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.status.unlink(missing_ok=True)
        out = self.log.open("wb")
        started = time.monotonic()
        process = self.process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

        def wait() -> None:
            rc = process.wait()
            out.close()
            self.seconds = time.monotonic() - started
            atomic.write_text(self.status, f"{rc}\n")  # a waiting process reads the whole file or finds none

        self.thread = threading.Thread(target=wait, daemon=True)
        self.thread.start()

    def wait(self) -> int:
        """The exit status, once the command has ended (from any process)."""
        while not self.status.exists():
            time.sleep(0.2)
        return int(self.status.read_text(encoding="utf-8"))

    def finish(self, stop: bool = False) -> int | None:
        """Wait for the command to end (terminate it first if ``stop``); its exit status, or None if not started."""
        if self.process is None or self.thread is None:
            return None
        if stop:
            self.process.terminate()
        self.thread.join()
        return self.process.returncode

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


SITE_BUILD = BackgroundBuild(ROOT / "reports" / "site-build.log", ROOT / "reports" / "site-build.rc")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--build-site", action="store_true",
                     help="build site/ (mkdocs build --strict) in the background while the tests that do not read it run")


def _builds_site(config: pytest.Config) -> bool:
    return bool(config.getoption("--build-site")) and not os.environ.get("SELFATTN_NO_SITE")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist starts its workers: they must not see an old exit status
def pytest_sessionstart(session: pytest.Session) -> None:
    if _builds_site(session.config) and not hasattr(session.config, "workerinput"):  # the controller builds
        from tools.site import stamp

        if stamp.stale(ROOT, ROOT / "site"):
            SITE_BUILD.start(MKDOCS_BUILD)
        else:
            SITE_BUILD.skip()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails if the build failed, even if no selected test read the site; an interrupted run stops it."""
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    rc = SITE_BUILD.finish(stop=interrupted)
    if rc not in (None, 0) and not interrupted:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if SITE_BUILD.skipped:
        terminalreporter.section("site build")
        terminalreporter.write_line("site/ is fresh (its stamp matches the inputs of a strict build): not built again")
    if SITE_BUILD.process is None:
        return
    rc = SITE_BUILD.process.returncode
    terminalreporter.section("site build")
    terminalreporter.write_line(f"mkdocs build --strict: exit status {rc}, {SITE_BUILD.seconds:.1f} s "
                                f"in the background (log: {SITE_BUILD.log.relative_to(ROOT)})")
    if rc != 0:
        terminalreporter.write_line(SITE_BUILD.tail(), red=True)


def _build_here() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "NO_MKDOCS_2_WARNING": "1"}
    log = ROOT / "reports" / "site-build.log"
    with log.open("wb") as out:
        rc = subprocess.run(MKDOCS_BUILD, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:])
        pytest.fail(f"mkdocs build --strict failed (exit status {rc}); the end of {log}:\n{tail}", pytrace=False)


@pytest.fixture(scope="session")
def site_dir(request: pytest.FixtureRequest) -> Path:
    """The built site, never stale. `make test` builds it in the background (``--build-site``) and this waits for
    it. Then, or without that option, the site's stamp is compared with its inputs (the pages, the package, the
    build's code, the data, the installed packages: ``tools/site/stamp.py``), and a stale site is built again
    (``tools.site.stamp.ensure_fresh``).

    `make test-fast` sets SELFATTN_NO_SITE: it neither builds the site nor reads one."""
    if os.environ.get("SELFATTN_NO_SITE"):
        pytest.skip("make test-fast runs without the site (make test builds it and runs this)")
    if _builds_site(request.config):
        if rc := SITE_BUILD.wait():
            pytest.fail(f"mkdocs build --strict failed (exit status {rc}); the end of {SITE_BUILD.log}:\n"
                        f"{SITE_BUILD.tail()}", pytrace=False)
    from tools.site import stamp

    try:
        was = stamp.ensure_fresh(ROOT, _build_here)
    except stamp.StaleSite as err:
        pytest.fail(str(err), pytrace=False)
    if was:
        shown = ", ".join(was[:8]) + (f" and {len(was) - 8} more" if len(was) > 8 else "")
        warnings.warn(f"site/ was stale ({shown}): built it again", stacklevel=1)
    return ROOT / "site"
