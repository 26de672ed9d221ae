"""The programs pytest-codeblocks runs from a page, with the page's line numbers.

pytest-codeblocks 0.18 does not give a ``<!--pytest-codeblocks:cont-->`` fence a namespace of
its own: it appends the fence's code to the previous block, and the whole *chain* runs as one
program, ``exec``'d in a fresh namespace, its printed output compared with the expected output
of the chain (if any). :func:`chains` follows the plugin's own reading of the page
(``pytest_codeblocks.main.extract_from_buffer``), line by line, and keeps for each line of a
program the page line it came from, so that a check can name ``docs/PAGE.md:LINE``.
``tests/site/test_notebooks.py`` proves that the programs are exactly those pytest-codeblocks
collects; the notebook proof there and ``tests/book/test_no_timing_asserts.py`` read them.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


DIRECTIVE = re.compile(r"<!--[-\s]*pytest-codeblocks:(.*)-->")
MARK = re.compile(r"<!--[-\s]*(pytest\.mark\..*)-->")


@dataclass
class Chain:
    """One program of pytest-codeblocks: a fence and the ``cont`` fences appended to it."""

    page: str  # e.g. "docs/01-problem.md"
    syntax: str  # the info string of the first fence ("python", "text", ...)
    starts: list[int] = field(default_factory=list)  # 1-based line of each fence's opening line, in order
    code: str = ""  # the program, as pytest-codeblocks runs it
    lines: list[int] = field(default_factory=list)  # the 1-based page line of each line of ``code``
    marks: list[str] = field(default_factory=list)  # pytest marks, e.g. "pytest.mark.cuda"
    expected: str | None = None  # the expected output checked after the chain, if any

    @property
    def line(self) -> int:
        """The line of the first fence (pytest-codeblocks names the test ``line N``)."""
        return self.starts[0]

    def where(self, lineno: int) -> str:
        """``docs/PAGE.md:LINE`` for line ``lineno`` (1-based) of ``code``."""
        ok = 0 < lineno <= len(self.lines)
        return f"{self.page}:{self.lines[lineno - 1] if ok else self.line}"


def chains(text: str, page: str, syntax: str | None = "python") -> list[Chain]:
    """The programs of a page in order, those of one ``syntax`` (``None``: all, as the plugin keeps them)."""
    raw = text.splitlines(keepends=True)
    out: list[Chain] = []
    marks: list[str] = []
    cont: Chain | None = None
    expect: Chain | None = None
    i = 0
    while i < len(raw):
        line = raw[i]
        i += 1
        stripped = line.strip()
        if not stripped:
            continue
        if m := DIRECTIVE.match(stripped):
            keyword = m[1].strip("- ")
            if keyword in {"expected-output", "expected-output-ignore-whitespace"}:
                expect = out[-1]
            elif keyword == "cont":
                cont = out[-1]
            elif keyword == "skip":
                marks.append("pytest.mark.skip")
            elif keyword.startswith("skipif"):
                marks.append(f"pytest.mark.skipif({keyword[7:-1]}, reason='')")
            elif keyword in ("expect-exception", "expect-error"):
                marks.append("pytest.mark.xfail")
            elif not keyword.startswith("importorskip"):
                raise ValueError(f"{page}:{i}: unknown pytest-codeblocks keyword {keyword!r}")
            continue
        if m := MARK.match(stripped):
            marks.append(m[1])
            continue
        rest = line.lstrip()
        if not rest.startswith("```"):
            continue
        ticks = len(rest) - len(rest.lstrip("`"))
        info = stripped[ticks:]
        indent = len(line) - len(rest)
        head = i
        code, lines = "", []
        while True:
            if i >= len(raw):
                raise ValueError(f"{page}:{head}: the fence is never closed")
            line = raw[i]
            i += 1
            rest = line.lstrip()
            if rest[:ticks] == "`" * ticks:
                break
            piece = line[min(indent, len(line) - len(rest)) :]  # the plugin drops a blank line of an indented fence
            code += piece
            lines += [i] if piece else []
        if cont is not None:
            cont.starts.append(head)
            cont.code += code
            cont.lines += lines
            cont = None
        elif expect is not None:
            expect.expected = code
            expect = None
        else:
            out.append(Chain(page, info, [head], code, lines, marks))
            marks = []
    return [c for c in out if syntax is None or c.syntax == syntax]


def page_chains(path: Path, root: Path) -> list[Chain]:
    return chains(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())


class _NoAssertMessages(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        node.msg = None  # evaluated only when the assertion fails
        return node


def program_key(chain: Chain) -> tuple[str, str | None, tuple[str, ...]]:
    """What decides a chain's run: its code without comments and assertion messages, its expected output, its marks.

    The code counts by :func:`code_key`. Raises ``SyntaxError`` for code that does not parse."""
    return code_key(chain.code), chain.expected, tuple(chain.marks)


_KEYS: dict[str, str] = {}  # the digest of a code -> code_key(code), for this process


def code_digest(code: str) -> str:
    """The digest of a program's text: what :func:`code_key` keys its memory by."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def code_key(code: str) -> str:
    """The digest of ``code``'s syntax tree without assertion messages (comments are not in the tree).

    Each xdist worker compares the pairs of chains when it collects the tests, and again when it runs them: the
    digest of each code is kept for the process (0.6 s of CPU for the book's 456 chains; a copy on disk, kept
    until issue 38, saved no more than that per process)."""
    digest = code_digest(code)
    if digest not in _KEYS:
        tree = _NoAssertMessages().visit(ast.parse(code))
        _KEYS[digest] = hashlib.sha256(ast.dump(tree, include_attributes=False).encode("utf-8")).hexdigest()
    return _KEYS[digest]


def same_run(zh: Chain, en: Chain) -> bool:
    """Do the two editions' chains make the same run? Only comments and assertion messages differ (tools/book/parity.py
    lets them), and the expected output and marks are equal: then whatever one run passes, the other passes."""
    try:
        return program_key(zh) == program_key(en)
    except SyntaxError:
        return False


EN_SUFFIX = ".en.md"


def _check_same_run(zh_path: Path, zh_line: int, en_path: Path, en_line: int) -> None:
    zh = {c.line: c for c in chains(zh_path.read_text(encoding="utf-8"), zh_path.name)}[zh_line]
    en = {c.line: c for c in chains(en_path.read_text(encoding="utf-8"), en_path.name)}[en_line]
    assert same_run(zh, en), f"{en_path.name}:{en_line} is no longer the same program as {zh_path.name}:{zh_line}"


def share_english_runs(items: list[Any]) -> int:
    """Let each English block that makes the same run as its Chinese block (run in this session) check that
    instead of running again. Returns how many were shared."""
    pages: dict[Path, dict[int, Any]] = defaultdict(dict)
    for item in items:
        obj = getattr(item, "obj", None)
        if type(item).__name__ == "TestBlock" and getattr(obj, "syntax", "") == "python":
            pages[Path(item.path)][obj.lineno] = item
    shared = 0
    for en_path, en_items in pages.items():
        if not en_path.name.endswith(EN_SUFFIX):
            continue
        zh_path = en_path.with_name(en_path.name.removesuffix(EN_SUFFIX) + ".md")
        zh_items = pages.get(zh_path, {})
        zh = chains(zh_path.read_text(encoding="utf-8"), zh_path.name) if zh_items else []
        en = chains(en_path.read_text(encoding="utf-8"), en_path.name)
        if len(zh) != len(en):  # tests/book/test_parity.py reports the difference
            continue
        for a, b in zip(zh, en, strict=True):
            if b.line in en_items and a.line in zh_items and same_run(a, b):
                item = en_items[b.line]
                item.runtest = lambda z=zh_path, zl=a.line, e=en_path, el=b.line: _check_same_run(z, zl, e, el)
                item.user_properties.append(("same run as", zh_items[a.line].nodeid))
                shared += 1
    return shared
