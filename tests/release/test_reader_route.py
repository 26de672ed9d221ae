"""A reader outside the repository: notebooks downloaded from the site run top to bottom.

The reader has only the notebooks (chapter 5's, the scaling lab's, the English benchmarks lab's and
the capstone lab's), each in an empty folder outside the repository, and a fresh virtual environment
without ``selfattn``. The labs that read files of the repository (the benchmark results, the corpus,
a checkpoint) bring them in their data cell. The capstone lab trains for a minute or more: it runs
through the cell that reads its corpus (the data cell's files are checked byte for byte by
``tests/site/test_notebooks.py``, and the whole lab runs in the site's build). The notebooks' setup cell
installs the package, here from the wheel the site offers (``$SELFATTN_WHEEL``, as an offline
reader would; ``PIP_NO_INDEX`` makes sure nothing comes from a registry). This is also the test of
installing the wheel: the package imported is the installed one, outside the repository, and it exposes
its public API (every name of ``__all__``, as written in ``src/``) and ``py.typed``. The environment sees
torch, Jupyter and matplotlib through a folder of links to this environment's packages, *minus*
``selfattn``, so the only ``selfattn`` it can import is the one the setup cell installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import nbformat
import pytest

from tests.release.test_install import expected_names
from tools.site.notebooks import NOTEBOOK_DIR, lab_notebook
from tools.release.package import build_wheel, package_version

ROOT = Path(__file__).resolve().parents[2]
# Each notebook, and the text of its last cell to run (None: all of it).
NOTEBOOKS = [
    (f"{NOTEBOOK_DIR}/05-implementation.ipynb", None),
    (lab_notebook("labs/scaling.py"), None),
    ("en/" + lab_notebook("labs/benchmarks.py"), None),
    ("en/" + lab_notebook("labs/capstone.py"), "load_corpus(root"),
]
# The cell appended to each notebook: where selfattn comes from, and what the installed package exposes.
INSTALLED = """\
import json, pathlib, selfattn
print(json.dumps([selfattn.__file__, selfattn.__all__, selfattn.__version__,
                  [n for n in selfattn.__all__ if not hasattr(selfattn, n)],
                  (pathlib.Path(selfattn.__file__).parent / "py.typed").exists()]))"""


def _reader_env(tmp: Path) -> Path:
    """A venv outside the repository that sees this environment's packages except selfattn."""
    deps = tmp / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "selfattn" in entry.name.lower() or entry.name.endswith(".pth"):
            continue  # the editable install of this repository, and its path hooks
        (deps / entry.name).symlink_to(entry)
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_reader_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    kernel = tmp / "jupyter" / "kernels" / "reader"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "reader", "language": "python",
    }), encoding="utf-8")
    return python


def test_downloaded_notebooks_set_themselves_up_outside_the_repo(
    site_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    assert not tmp_path.resolve().is_relative_to(ROOT)
    version = package_version(ROOT)
    site_wheel = site_dir / "dist" / f"selfattn-{version}-py3-none-any.whl"
    assert site_wheel.exists(), "the site offers the wheel at dist/"
    wheel = build_wheel(ROOT)  # the wheel of the sources as they are now (cached by their hash, as the site build does)
    assert wheel.read_bytes() == site_wheel.read_bytes() or wheel.name == site_wheel.name

    python = _reader_env(tmp_path)
    reader = tmp_path / "reader"
    reader.mkdir()
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the Makefile points it at src/: a reader has no such thing
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("SELFATTN_WHEEL", str(site_wheel))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    before = subprocess.run([str(python), "-c", "import selfattn"], cwd=reader, capture_output=True, text=True)
    assert before.returncode != 0, "the fresh environment must not see selfattn before the setup cell"

    for i, (rel, upto) in enumerate(NOTEBOOKS):
        folder = reader / Path(rel).stem  # an empty folder for each notebook
        folder.mkdir()
        path = folder / Path(rel).name
        shutil.copy2(site_dir / rel, path)
        nb = nbformat.read(path, as_version=4)
        if upto is not None:
            last = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and upto in c.source)
            nb.cells = nb.cells[: last + 1]
        nb.cells.append(nbformat.v4.new_code_cell(INSTALLED))
        NotebookClient(nb, kernel_name="reader", timeout=600, resources={"metadata": {"path": str(folder)}}).execute()
        setup = next(c for c in nb.cells if c.cell_type == "code")
        setup_out = "".join(o.get("text", "") for o in setup.outputs if o.output_type == "stream")
        if i == 0:
            assert "正在安装本书的配套包" in setup_out, setup_out  # the first notebook installs
        else:
            assert setup_out == "", setup_out  # the package is there now: the cell does nothing
        last = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
        file, names, installed, missing, typed = json.loads(last.splitlines()[-1])
        assert installed == version, last
        location = Path(file).resolve()
        assert location.is_relative_to((tmp_path / "venv").resolve()), f"imported from {location}"
        # The installed package exposes the public API: __all__ as written in src/, every name defined; py.typed.
        assert names == expected_names(), f"__all__ of the installed package {names} != {expected_names()}"
        assert missing == [], f"names of __all__ the installed package does not define: {missing}"
        assert typed, "py.typed is missing from the installed package"
        errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
        assert not errors, errors
