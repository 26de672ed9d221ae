"""The wheel the site offers (``tools.release.package.build_wheel``): what it holds, and the public API it must expose.

It is built with the current environment's setuptools (``--no-build-isolation``), without network.
Installing it outside the repository, in a fresh virtual environment, and importing the public API from
there is tested by ``tests/release/test_reader_route.py``, where the notebooks' setup cell installs it as a
reader's would (``expected_names`` below is what that installed package's ``__all__`` must be).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tools.release.package import build_wheel, package_version

ROOT = Path(__file__).resolve().parents[2]


def expected_names() -> list[str]:
    """``__all__`` as written in src/selfattn/__init__.py (read, not imported)."""
    tree = ast.parse((ROOT / "src" / "selfattn" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("src/selfattn/__init__.py defines no __all__")


def test_expected_names_cover_the_book_api() -> None:
    names = expected_names()
    for name in ("scaled_dot_product_attention", "SelfAttention", "MultiHeadSelfAttention",
                 "causal_mask", "padding_mask", "to_mha_mask", "combine_masks", "from_mha_masks"):
        assert name in names, f"{name} missing from __all__"
    assert len(names) == len(set(names)), "duplicate names in __all__"


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_nothing_else(tmp_path: Path) -> None:
    """The wheel the site offers (tools.release.package.build_wheel): metadata, every module, py.typed; no tests or docs."""
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
    assert "Requires-Dist: torch>=2.7.1" in meta and "Requires-Python: >=3.10" in meta
    assert "License-Expression: MIT" in meta or "License: MIT" in meta
    assert build_wheel(ROOT, cache=tmp_path) == wheel, "same sources: the cached wheel is reused"
