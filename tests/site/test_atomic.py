"""tools/atomic.py: a file is replaced in one step, and no partial file is left beside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools import atomic


def test_writes_whole_files_and_leaves_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "new" / "folder" / "keys.json"
    atomic.write_text(target, "一\n")
    assert target.read_bytes() == "一\n".encode()
    atomic.write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["keys.json"]


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "status"
    atomic.write_text(target, "old")

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        atomic.write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "old", "readers never see a part of the new file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status"], "the partial file is removed"
