"""The package as a reader outside the repository gets it: its version, its wheel, and the
setup cell that opens every notebook the site offers.

* :func:`package_version` reads the one version, ``[project] version`` in ``pyproject.toml``.
* :func:`build_wheel` builds ``selfattn-VERSION-py3-none-any.whl`` from a copy of the sources
  (no network, no build isolation, nothing left behind in the repository), cached under
  ``.cache/wheel/<hash of the sources>/`` so that ``mkdocs serve`` does not rebuild it on every save.
* :func:`setup_cell` is the first code cell of every chapter and lab notebook: it does nothing
  where ``selfattn`` at the book's version and matplotlib import (or inside the book's
  repository), and otherwise installs exactly that version with its ``plot`` extra (matplotlib,
  which the figure cells need) with ``%pip``, or the wheel named by ``$SELFATTN_WHEEL`` with the
  same extra.
  Its comments and the message it prints are in the language of the notebook's edition.

Usage::

    python -m tools.release.package wheel DIR   # build the wheel into DIR and print its path
    python -m tools.release.package version     # print the version
"""

from __future__ import annotations

import hashlib
import os
import shutil
import string
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from tools import atomic

ROOT = Path(__file__).resolve().parents[2]
WHEEL_INPUTS = ("pyproject.toml", "README.md", "LICENSE")


def package_version(root: Path = ROOT) -> str:
    """``[project] version`` of ``pyproject.toml``: the package's one version."""
    with (root / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def wheel_name(version: str) -> str:
    return f"selfattn-{version}-py3-none-any.whl"


def _sources(root: Path) -> list[Path]:
    files = sorted(p for p in (root / "src" / "selfattn").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [root / name for name in WHEEL_INPUTS] + files


def sources_hash(root: Path = ROOT) -> str:
    """A hash of everything that goes into the wheel (paths and bytes)."""
    h = hashlib.sha256()
    for p in _sources(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build_wheel(root: Path = ROOT, cache: Path | None = None, *, stale_ok: bool = False) -> Path:
    """Build the wheel (or reuse the cached one for the same sources) and return its path.

    With ``stale_ok`` (``mkdocs serve``), the newest cached wheel of this version is reused
    even if the sources changed since; a build (``make site``, CI) always matches them.
    """
    cache = (root / ".cache" / "wheel") if cache is None else cache
    target = cache / sources_hash(root) / wheel_name(package_version(root))
    if target.exists():
        return target
    older = sorted(cache.glob(f"*/{target.name}"), key=lambda p: p.stat().st_mtime)
    if stale_ok and older:
        return older[-1]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        shutil.copytree(root / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in WHEEL_INPUTS:
            shutil.copy2(root / name, source / name)
        out = Path(tmp) / "dist"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
             "-w", str(out), str(source)],
            check=True, env=env, capture_output=True, text=True,
        )
        built = out / target.name
        if not built.exists():
            raise FileNotFoundError(f"pip wheel did not produce {target.name}: {sorted(out.iterdir())}")
        atomic.write_bytes(target, built.read_bytes())  # whole or absent: the site build and a test may build it at once
    return target


SETUP_CELL = string.Template('''\
$intro
import os
import sys
from pathlib import Path

SELFATTN_VERSION = "$version"
repo = next((d for d in [Path.cwd(), *Path.cwd().parents]
             if (d / "mkdocs.yml").is_file() and (d / "src" / "selfattn").is_dir()), None)
if repo is not None:
    sys.path.insert(0, str(repo / "src"))  # $in_repo
else:
    try:
        import matplotlib
        import selfattn
        ready = selfattn.__version__ == SELFATTN_VERSION
    except ImportError:
        ready = False
    if not ready:
        wheel = os.environ.get("SELFATTN_WHEEL")
        spec = f"{wheel}[plot]" if wheel else f"selfattn[plot]=={SELFATTN_VERSION}"
        print(f"$installing{spec}")
        %pip install -q "{spec}"
''')

# The setup cell's words in each edition's language (the code is the same): "zh" for the Chinese
# notebooks (site/notebooks/), "en" for the English ones (site/en/notebooks/).
SETUP_WORDS = {
    "zh": {
        "intro": (
            "# 环境准备：本书的代码需要 selfattn=={version}，画图还需要 matplotlib。\n"
            "# 两者都能导入（或在本书仓库中运行）时，本单元什么也不做；否则用 %pip 安装\n"
            "# selfattn[plot]（带上 matplotlib）。设置 SELFATTN_WHEEL 可改为安装一个 wheel 文件。"
        ),
        "in_repo": "在仓库中：直接使用 src/ 里的代码",
        "installing": "正在安装本书的配套包：",
    },
    "en": {
        "intro": (
            "# Setup: the book's code needs selfattn=={version}, and its figures need matplotlib.\n"
            "# Where both import (or inside the book's repository), this cell does nothing.\n"
            "# Otherwise it installs selfattn[plot] with %pip, which brings matplotlib. Set\n"
            "# SELFATTN_WHEEL to install a wheel file instead (with the same extra)."
        ),
        "in_repo": "in the repository: use the code in src/",
        "installing": "Installing the book's package: ",
    },
}


def setup_cell(version: str, lang: str = "zh") -> str:
    """The source of the first code cell of every notebook the site offers, in the edition's ``lang``.

    The code is the same in every language; the comments and the message printed while installing
    are in ``lang`` (``"zh"`` or ``"en"``). Raises ``ValueError`` for another language.
    """
    if lang not in SETUP_WORDS:
        raise ValueError(f"setup_cell: lang must be one of {sorted(SETUP_WORDS)}, got {lang!r}")
    words = {key: text.replace("{version}", version) for key, text in SETUP_WORDS[lang].items()}
    return SETUP_CELL.substitute(version=version, **words)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["version"]:
        print(package_version())
        return 0
    if args[:1] == ["wheel"] and len(args) == 2:
        wheel = build_wheel()
        dest = Path(args[1])
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, dest / wheel.name)
        print(dest / wheel.name)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
