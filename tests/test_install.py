"""`pip install .` works: the wheel, installed outside the repository, exposes the public API.

No network: the wheel (the one the site offers, ``tools.release.build_wheel``) is built with the
current environment's setuptools (``--no-build-isolation``) and installed with ``--no-deps --no-index``. The fresh
virtual environment sees torch through a ``.pth`` file that points at this
environment's site-packages, so nothing is downloaded or copied.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tools.release import build_wheel, package_version

ROOT = Path(__file__).resolve().parents[1]


def _expected_names() -> list[str]:
    """``__all__`` as written in src/selfattn/__init__.py (read, not imported)."""
    tree = ast.parse((ROOT / "src" / "selfattn" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("src/selfattn/__init__.py defines no __all__")


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.slow
def test_wheel_installs_and_imports_outside_the_repo(site_dir: Path, tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT), "the install location must be outside the repository"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_INDEX_URL")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    # 1. The wheel the site offers (site/dist/, made by tools.release.build_wheel: a copy of the sources, pip wheel
    #    without isolation or network). test_the_wheel_holds_the_package_and_nothing_else builds one anew and checks
    #    what it holds; tests/test_reader_route.py checks that the site's is the wheel of the sources as they are.
    wheel = site_dir / "dist" / f"selfattn-{package_version(ROOT)}-py3-none-any.whl"
    assert wheel.exists(), sorted(p.name for p in (site_dir / "dist").iterdir())

    # 2. A fresh virtual environment outside the repository; torch comes from this one via a .pth file.
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(target)
    vpy = target / "bin" / "python"
    purelib = Path(_run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp_path, env=env).strip())
    (purelib / "_parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")

    # 3. Install the wheel into it with this environment's pip.
    _run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], cwd=tmp_path, env=env)

    # 4. Import from a directory outside the repository, with PYTHONPATH cleared (one process: torch loads once).
    code = ("import json, selfattn; missing = [n for n in selfattn.__all__ if not hasattr(selfattn, n)]; "
            "print(json.dumps([selfattn.__file__, selfattn.__all__, selfattn.__version__, missing]))")
    out = _run([str(vpy), "-c", code], cwd=tmp_path, env=env).strip().splitlines()[-1]
    file, names, version, missing = json.loads(out)
    location = Path(file).resolve()
    assert location.is_relative_to(purelib.resolve()), f"imported from {location}, not from the install {purelib}"
    assert not location.is_relative_to(ROOT), f"imported from the repository: {location}"
    expected = _expected_names()
    assert names == expected, f"__all__ of the installed package {names} != {expected}"
    assert version == package_version(ROOT)

    # 5. Every public name resolves, and py.typed ships with the package.
    assert missing == [], f"names of __all__ the installed package does not define: {missing}"
    assert (location.parent / "py.typed").exists(), "py.typed is missing from the wheel"


def test_expected_names_cover_the_book_api() -> None:
    names = _expected_names()
    for name in ("scaled_dot_product_attention", "SelfAttention", "MultiHeadSelfAttention",
                 "causal_mask", "padding_mask", "to_mha_mask", "combine_masks", "from_mha_masks"):
        assert name in names, f"{name} missing from __all__"
    assert len(names) == len(set(names)), "duplicate names in __all__"


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_nothing_else(tmp_path: Path) -> None:
    """The wheel the site offers (tools.release.build_wheel): metadata, every module, py.typed; no tests or docs."""
    import zipfile

    wheel = build_wheel(ROOT, cache=tmp_path)
    version = package_version(ROOT)
    assert wheel.name == f"selfattn-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"selfattn-{version}.dist-info/METADATA").decode()
    modules = {f"selfattn/{p.name}" for p in (ROOT / "src" / "selfattn").glob("*.py")}
    package = {n for n in names if not n.startswith(f"selfattn-{version}.dist-info/")}
    assert package == modules | {"selfattn/py.typed"}, sorted(package ^ (modules | {"selfattn/py.typed"}))
    assert not [n for n in names if n.startswith(("tests/", "docs/", "tools/", "benchmarks/"))]
    assert "Name: selfattn\n" in meta and f"Version: {version}\n" in meta
    assert "Requires-Dist: torch>=2.2" in meta and "Requires-Python: >=3.10" in meta
    assert "License-Expression: MIT" in meta or "License: MIT" in meta
    assert build_wheel(ROOT, cache=tmp_path) == wheel, "same sources: the cached wheel is reused"
