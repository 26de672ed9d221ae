"""What a built site was built from: a stamp in ``site/``, so that no test reads a stale site.

:func:`begin` hashes the build's inputs when the build starts (after tangling): every file of
:data:`INPUTS` (the pages, labs, assets and data in ``docs/``, the theme's ``overrides/``,
``mkdocs.yml``, the package, the build's own code in ``tools/`` (not the tests' helpers or the measurements), the models and benchmark results, what
the wheel holds) by its path, and the versions of the installed Python packages. :func:`finish` writes
them to ``site/.build-inputs.json`` when the build has succeeded (mkdocs empties ``site/`` when a build
starts, so a failed build leaves no stamp). :func:`stale` compares a site's stamp with the inputs as
they are now and names each input that differs. :func:`ensure_fresh` builds a stale site again, and
raises :class:`StaleSite`, naming them, if the rebuilt site is still stale: ``tests/conftest.py`` calls
it before any test reads ``site/``.

Hashing the 170-odd files takes a few milliseconds; a file edited while the build runs makes the site
stale, since the stamp holds what the build started from.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAMP = ".build-inputs.json"  # in the site folder
INPUTS = (
    "mkdocs.yml", "pyproject.toml", "README.md", "LICENSE",
    "docs/**/*", "overrides/**/*", "src/selfattn/**/*",
    "tools/*.py", "tools/site/*.py", "tools/book/*.py", "tools/data/*.py", "tools/release/*.py",  # the build's code
    "models/*", "benchmarks/results/*",
)
IGNORED = ("__pycache__", ".ipynb_checkpoints", "node_modules")
PACKAGES = "python packages"  # the name of the entry that holds the installed versions
STRICT = "mkdocs build --strict"  # the entry that says whether the build was strict: a site built without is stale

_STARTED: dict[str, str] = {}  # the inputs of the build under way (begin -> finish)


def packages() -> str:
    """A hash of the Python version and of every distribution installed in the environment's site-packages, by
    name and version. Only site-packages: ``sys.path`` can differ between the build's process and a pytest
    worker's, and a fresh clone's CI run found them disagreeing (every test of the site failed as stale)."""
    where = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    names = sorted({f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=where)})
    return hashlib.sha256("\n".join([sys.version, *names]).encode()).hexdigest()[:16]


def inputs(root: Path) -> dict[str, str]:
    """Each input file's path (relative to ``root``) -> the sha256 of its bytes, and the installed packages."""
    found: dict[str, str] = {}
    for pattern in INPUTS:
        for path in root.glob(pattern):
            if path.is_file() and not any(part in IGNORED for part in path.relative_to(root).parts):
                found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    found[PACKAGES] = packages()
    return dict(sorted(found.items()))


def begin(root: Path) -> None:
    """A build starts (``on_pre_build``, after tangling): note what it is built from."""
    _STARTED.clear()
    _STARTED.update(inputs(root))


def finish(config: Any) -> None:
    """The build has succeeded (the last ``on_post_build``): write its stamp into the site."""
    if _STARTED:
        path = Path(config.site_dir) / STAMP
        built = {**_STARTED, STRICT: "yes" if getattr(config, "strict", False) else "no"}
        path.write_text(json.dumps(built, indent=0) + "\n", encoding="utf-8")


def stale(root: Path, site: Path) -> list[str]:
    """The inputs that differ between ``site``'s stamp and ``root`` now (added, changed or removed), sorted;
    ``[STAMP]`` when the site has no stamp (never built, or its build failed); empty when it is fresh. A site built
    without ``--strict`` is stale (``STRICT``): the tests read only what the strict build accepted."""
    try:
        built = json.loads((site / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [f"site/{STAMP} (no stamp: the site was not built, or its build failed)"]
    now = {**inputs(root), STRICT: "yes"}
    return sorted(name for name in built.keys() | now.keys() if built.get(name) != now.get(name))


class StaleSite(Exception):
    """A site that is still stale after it was built again; the message names the inputs."""


def ensure_fresh(root: Path, build: Callable[[], None], site: Path | None = None) -> list[str]:
    """Make ``site`` (``root/site``) fresh: when :func:`stale` names any input, call ``build()`` and look again.
    Returns the inputs that were stale (empty if none was); raises :class:`StaleSite` if the site is still stale
    after the build. One process at a time (pytest-xdist's workers share ``site/``): the others wait on a lock
    in ``reports/``, then find the site fresh."""
    import fcntl

    site = root / "site" if site is None else site
    lock = root / "reports" / "site-build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        before = stale(root, site)
        if before:
            build()
            after = stale(root, site)
            if after:
                raise StaleSite(f"{site.name}/ is still stale after it was built again: {', '.join(after)}")
    return before
