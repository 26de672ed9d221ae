"""tools/testing/codeblocks.py reads the pages as pytest-codeblocks does, and conftest.py shares a run only when it may.

``tools.testing.codeblocks.chains`` is what the timing lint (tests/book/test_no_timing_asserts.py) and the notebook
proof (tests/site/test_notebooks.py) read: its programs must be exactly those the plugin runs.
``same_run`` decides when an English block's test checks that it is its Chinese block's program
instead of running it again (conftest.py): only comments and assertion messages may differ.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from pytest_codeblocks.main import extract_from_file

from tools.testing.codeblocks import chains, same_run, share_english_runs

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_the_chains_are_what_pytest_codeblocks_runs(path: Path) -> None:
    """Programs, first lines, marks and expected outputs, for every syntax the plugin keeps."""
    mine = [(c.syntax, c.line, c.code, c.expected, c.marks) for c in chains(path.read_text(encoding="utf-8"), "", None)]
    theirs = [(b.syntax, b.lineno, b.code, b.expected_output, b.marks) for b in extract_from_file(path)]
    assert mine == theirs


def test_a_chain_maps_its_lines_to_the_page() -> None:
    page = "# t\n\n```python\nx = 1\n```\n\n<!--pytest-codeblocks:cont-->\n\n??? note\n\n    ```python\n\n    y = x\n    ```\n"
    (chain,) = chains(page, "docs/t.md")
    assert chain.code == "x = 1\ny = x\n"  # the plugin drops a blank line of an indented fence
    assert [chain.where(i) for i in (1, 2)] == ["docs/t.md:4", "docs/t.md:13"]


def _chain(code: str, expected: str | None = None, marks: tuple[str, ...] = ()) -> object:
    page = "".join(f"<!--{m}-->\n" for m in marks) + f"```python\n{code}```\n"
    if expected is not None:
        page += f"\n<!--pytest-codeblocks:expected-output-->\n\n```text\n{expected}```\n"
    (chain,) = chains(page, "p.md")
    return chain


ZH = "x = 1  # 注释\nassert x == 1, '应为 1'\nprint('x =', x)\n"
SAME = {
    "comments and assertion messages": "x = 1  # a comment\nassert x == 1, 'must be 1'\nprint('x =', x)\n",
}
DIFFERENT = {
    "a printed string": "x = 1\nassert x == 1\nprint('x is', x)\n",
    "a number": "x = 2\nassert x == 1\nprint('x =', x)\n",
    "a statement more": "x = 1\nassert x == 1\nprint('x =', x)\nprint()\n",
}


@pytest.mark.parametrize("en", SAME.values(), ids=SAME.keys())
def test_same_run(en: str) -> None:
    assert same_run(_chain(ZH), _chain(en))  # type: ignore[arg-type]


@pytest.mark.parametrize("en", DIFFERENT.values(), ids=DIFFERENT.keys())
def test_not_the_same_run(en: str) -> None:
    assert not same_run(_chain(ZH), _chain(en))  # type: ignore[arg-type]


def test_expected_output_and_marks_count() -> None:
    assert not same_run(_chain(ZH, "x = 1\n"), _chain(ZH, "x = 2\n"))  # type: ignore[arg-type]
    assert same_run(_chain(ZH, "x = 1\n"), _chain(ZH, "x = 1\n"))  # type: ignore[arg-type]
    assert not same_run(_chain(ZH), _chain(ZH, marks=("pytest.mark.cuda",)))  # type: ignore[arg-type]


def test_code_keys_are_computed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """code_key parses a code once; an edited code (another digest) is parsed again."""
    import ast

    from tools.testing import codeblocks

    monkeypatch.setattr(codeblocks, "_KEYS", {})
    a, b = "x = 1  # a\nassert x, 'm'\n", "x = 2\n"
    keys = [codeblocks.code_key(a), codeblocks.code_key("x = 1  # b\nassert x, 'n'\n"), codeblocks.code_key(b)]
    assert keys[0] == keys[1] != keys[2]
    monkeypatch.setattr(ast, "parse", lambda *args, **kwargs: pytest.fail("parsed again"))
    assert [codeblocks.code_key(a), codeblocks.code_key(b)] == [keys[0], keys[2]]
    with pytest.raises(pytest.fail.Exception, match="parsed again"):
        codeblocks.code_key("x = 3\n")


def _pages(folder: Path, log: Path) -> tuple[Path, Path]:
    """A Chinese page and its English edition: block 1 the same program, block 2 printing other text.
    Each block appends a tag to ``log`` when it runs (the English block 1 appends the Chinese tag)."""
    block = "```python\nopen({log!r}, 'a').write({tag!r})  # {comment}\nprint({text!r})\n```\n"
    zh = "# 页\n\n" + block.format(log=str(log), tag="zh-1\n", comment="注释", text="same") + "\n" + block.format(
        log=str(log), tag="zh-2\n", comment="注释", text="中文")
    en = "# Page\n\n" + block.format(log=str(log), tag="zh-1\n", comment="a comment", text="same") + "\n" + block.format(
        log=str(log), tag="en-2\n", comment="a comment", text="English")
    (folder / "p.md").write_text(zh, encoding="utf-8")
    (folder / "p.en.md").write_text(en, encoding="utf-8")
    return folder / "p.md", folder / "p.en.md"


@pytest.mark.slow
def test_a_session_runs_a_shared_program_once() -> None:
    """In a real session (the root conftest applies under the repository): the English copy of a block
    does not run again, and an English block that prints other text does."""
    build = ROOT / "reports"
    build.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="shared-run-", dir=build))
    try:
        log = folder / "runs.txt"
        zh, en = _pages(folder, log)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                              str(zh), str(en)], cwd=ROOT, capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})  # not the outer run's options
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert sorted(log.read_text().split()) == ["en-2", "zh-1", "zh-2"]  # en-1 is zh-1's program: it ran once
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class TestBlock:  # the name share_english_runs looks for; the plugin's item, reduced to what it reads
    __test__ = False

    def __init__(self, path: Path, chain: object, log: list[str]) -> None:
        self.path, self.obj, self.nodeid, self.user_properties = path, chain, f"{path.name}::line {chain.line}", []
        self.obj.lineno = chain.line  # type: ignore[attr-defined]
        self.runtest = lambda: log.append(self.nodeid)


def test_without_the_chinese_block_the_english_one_runs(tmp_path: Path) -> None:
    """The sharing needs the Chinese block in the session's items (as left by -k, -m, --deselect)."""
    zh, en = _pages(tmp_path, tmp_path / "runs.txt")
    ran: list[str] = []
    items = [TestBlock(p, c, ran) for p in (zh, en) for c in chains(p.read_text(encoding="utf-8"), p.name)]
    assert share_english_runs(items) == 1
    for item in items:
        item.runtest()
    assert ran == ["p.md::line 3", "p.md::line 8", "p.en.md::line 8"]  # p.en.md:3 checked its sameness instead
    assert items[2].user_properties == [("same run as", "p.md::line 3")]
    ran.clear()
    rest = [TestBlock(en, c, ran) for c in chains(en.read_text(encoding="utf-8"), en.name)]
    assert share_english_runs(rest) == 0  # -k "p.en.md": nothing to share with
