"""The package's version in the book, and its wheel at ``dist/``.

The version (from ``pyproject.toml``) goes into ``{{ selfattn_version }}`` in the pages, so the
preface can link to the wheel, and in front of the footer's copyright line. The wheel
(``site/dist/selfattn-VERSION-py3-none-any.whl``) is built once per source hash under ``.cache/``
(``tools/release/package.py``); under ``serve`` the newest cached wheel will do, so that saving a chapter
does not rebuild it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.release.package import build_wheel, package_version

VERSION_TAG = "{{ selfattn_version }}"


def set_version(config: Any) -> None:
    """``config.extra.selfattn_version`` (``on_config``)."""
    config.extra["selfattn_version"] = package_version(Path(config.config_file_path).parent)


def footer(config: Any) -> None:
    """The version, in front of the language's copyright line (set by i18n's ``on_config``)."""
    version = config.extra["selfattn_version"]
    if not (config.copyright or "").startswith("selfattn "):
        config.copyright = f"selfattn {version} · {config.copyright or ''}".rstrip(" ·")


def offer(files: Any, config: Any, root: Path, stale_ok: bool) -> None:
    """Add the wheel to the site's files, at ``dist/``."""
    from mkdocs.structure.files import File

    wheel = build_wheel(root, stale_ok=stale_ok)
    files.append(File.generated(config, f"dist/{wheel.name}", abs_src_path=str(wheel)))


def substitute(markdown: str, config: Any) -> str:
    """Replace ``{{ selfattn_version }}`` in a page."""
    return markdown.replace(VERSION_TAG, config.extra["selfattn_version"])
