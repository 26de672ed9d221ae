"""Parity of the two editions: an English page runs the same code as its Chinese page.

The Chinese pages are the source (the tangler reads only them). Each has an English
counterpart with the suffix ``.en`` (``docs/05-implementation.md`` and
``docs/05-implementation.en.md``, ``docs/labs/scaling.py`` and ``docs/labs/scaling.en.py``).
For every pair, :func:`compare` checks the sequence of Python blocks (the ```` ```python ````
fences of a page, the code cells of a lab):

* the same number of blocks, in the same order, with the same test directives above each
  (``<!--pytest-codeblocks:cont-->``, ``<!--pytest.mark.cuda-->``, ...) and the same
  ``expected-output`` after it;
* each block has the same syntax tree. Comments are not part of the tree, and string
  literals (docstrings, messages, printed labels, the text of f-strings) are compared
  apart from it: a pair may differ only where the Chinese string holds human-language text
  (a character outside ASCII). An ASCII string such as a regex, a dtype name or ``"-inf"``
  must be identical, except a path to an edition's own file, which takes the ``.en`` suffix
  as the pages do (``"models/charlm.pt"`` -> ``"models/charlm.en.pt"``). The expressions
  inside f-strings and their format specs are code;
* a titled block (``#| file: src/...``) has the same title line and the same syntax tree
  with every string, docstrings included (the package's strings are English in both
  editions); only its comments differ, so each edition shows comments in its own language;
* a figure block (``#| label: weights-heatmap`` header, ``tools/site/figures.py``) is a figure block with
  the same label in the other edition, with a caption and alt text in both; the English
  edition's caption, alt text and strings (the figure's labels) hold no Chinese text;
* the headings carry the same explicit anchors (``{#fully-masked-rows}``), so links into
  either edition land.

Any other difference is reported with the page and the block's line in both files.

Usage: ``python -m tools.book.parity [docs/05-implementation.md ...]`` (Chinese paths; default: all).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tools.site.figures import FigureError
from tools.site.figures import header as figure_header
from tools.book.tangle import MARKER, directives_above, parse_fences

LANG = "en"  # the translated edition's suffix
EXPECTED = re.compile(r"^\s*<!--\s*pytest-codeblocks:expected-output\s*-->\s*$")
ANCHOR = re.compile(r"^#{1,6}\s.*\{[^}]*#(?P<id>[\w-]+)[^}]*\}\s*$", re.MULTILINE)
MAGIC = re.compile(r"^\s*[%!]")  # IPython magics in lab cells (%matplotlib inline)
CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")  # CJK ideographs and punctuation


def english_path(path: Path) -> Path:
    """``docs/05-implementation.md`` -> ``docs/05-implementation.en.md``."""
    return path.with_name(f"{path.stem}.{LANG}{path.suffix}")


def is_translation(path: Path) -> bool:
    return path.stem.endswith(f".{LANG}")


@dataclass
class Block:
    line: int  # 1-based line of the block in its file
    code: str
    before: tuple[str, ...] = ()  # test directives right above the block
    checked: bool = False  # an expected-output directive follows the block
    extra: dict[str, str] = field(default_factory=dict)


def markdown_blocks(text: str) -> list[Block]:
    """The ```` ```python ```` fences of a page, with the test directives around each."""
    lines = text.splitlines()
    blocks = []
    for fence in parse_fences(text, ""):
        if fence.info != "python" or fence.char != "`":
            continue
        before = [re.sub(r"\s+", "", d) for d in directives_above(lines, fence.start)]
        after = fence.start + len(fence.body) + 2
        while after < len(lines) and not lines[after].strip():
            after += 1
        checked = after < len(lines) and bool(EXPECTED.match(lines[after]))
        blocks.append(Block(fence.start + 1, "\n".join(fence.body), tuple(reversed(before)), checked))
    return blocks


def lab_blocks(text: str) -> list[Block]:
    """The code cells of a lab (a jupytext percent script)."""
    import jupytext

    nb = jupytext.reads(text, fmt="py:percent")
    blocks = []
    line = 1
    for cell in nb.cells:
        if cell.cell_type == "code":
            # jupytext does not give line numbers: find the cell's first line in the script
            first = next((s for s in cell.source.splitlines() if s.strip()), "")
            found = text.find(first)
            line = text.count("\n", 0, found) + 1 if found >= 0 else line
            blocks.append(Block(line, cell.source))
    return blocks


class _Strings(ast.NodeTransformer):
    """Take every string literal out of a tree (into ``self.found``), leaving a placeholder."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            self.found.append(node.value)
            return ast.copy_location(ast.Constant("<str>"), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        text = []
        values: list[ast.expr] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                text.append(str(part.value))
            else:
                text.append("{}")
                assert isinstance(part, ast.FormattedValue)
                part.value = self.visit(part.value)  # the expression is code; its format spec stays as is
                values.append(part)
        self.found.append("".join(text))
        node.values = values
        return node


def shape(code: str) -> tuple[str, list[str], list[str]]:
    """(the tree without strings, the strings in order, the magic lines). Raises SyntaxError."""
    magics = [line.strip() for line in code.splitlines() if MAGIC.match(line)]
    body = "\n".join("" if MAGIC.match(line) else line for line in code.splitlines())
    strings = _Strings()
    tree = strings.visit(ast.parse(body))
    return ast.dump(tree, include_attributes=False), strings.found, magics


def edition_file(text: str) -> str:
    """An edition's own data file: ``docs/labs/data/book.txt`` -> ``docs/labs/data/book.en.txt``
    (the suffix rule of the pages; only for a path with a ``/`` and no spaces)."""
    head, dot, ext = text.rpartition(".")
    return f"{head}.{LANG}.{ext}" if dot and "/" in head and " " not in text else text


def human(text: str) -> bool:
    """Human-language text: it holds a character outside ASCII (CJK, full-width punctuation, ...)."""
    return any(ord(ch) > 127 for ch in text)


def figure_problems(where: str, zh: Block, en: Block) -> list[str]:
    """A figure block is one in both editions, with the same label, a caption and alt text in each,
    and English words only in the English edition's caption, alt text and labels."""
    try:
        zh_fig, en_fig = (figure_header(b.code.lstrip().splitlines())[0] for b in (zh, en))
    except FigureError as err:
        return [f"{where}: {err}"]
    zh_number, en_number = (fields.get("label") for fields in (zh_fig, en_fig))
    if zh_number != en_number:
        return [f"{where}: figure labels differ: {zh_number or 'no figure'} vs {en_number or 'no figure'}"]
    if zh_number is None:
        return []
    problems = []
    for edition, fields in (("Chinese", zh_fig), ("English", en_fig)):
        missing = [key for key in ("caption", "alt") if not fields.get(key)]
        if missing:
            problems.append(f"{where}: figure {zh_number}: no {' and no '.join(missing)} in the {edition} edition")
    for key in ("caption", "alt"):
        if CHINESE.search(en_fig.get(key, "")):
            problems.append(f"{where}: figure {zh_number}: the English {key} holds Chinese text")
    try:
        labels = [text for text in shape(en.code)[1] if CHINESE.search(text)]
    except SyntaxError:
        labels = []  # reported with the code
    if labels:
        problems.append(f"{where}: figure {zh_number}: the English figure's strings hold Chinese text: {labels[:3]}")
    return problems


def compare_block(name: str, i: int, zh: Block, en: Block) -> list[str]:
    where = f"{name}: block {i + 1} (zh line {zh.line}, en line {en.line})"
    figures = figure_problems(where, zh, en)
    return figures + compare_code(where, zh, en)


def compare_code(where: str, zh: Block, en: Block) -> list[str]:
    first = zh.code.lstrip().splitlines()[:1]
    if first and MARKER.match(first[0].strip()):
        en_first = en.code.lstrip().splitlines()[:1]
        try:
            same = first == en_first and ast.dump(ast.parse(zh.code)) == ast.dump(ast.parse(en.code))
        except SyntaxError as err:
            return [f"{where}: does not parse: {err}"]
        if not same:
            return [f"{where}: a titled block must have the same title, code and strings (comments may differ)"]
        return []
    problems = []
    if zh.before != en.before:
        problems.append(f"{where}: test directives differ: {list(zh.before)} vs {list(en.before)}")
    if zh.checked != en.checked:
        problems.append(f"{where}: expected-output after the block in one edition only")
    try:
        zh_tree, zh_strings, zh_magics = shape(zh.code)
        en_tree, en_strings, en_magics = shape(en.code)
    except SyntaxError as err:
        return [*problems, f"{where}: does not parse: {err}"]
    if zh_tree != en_tree or len(zh_strings) != len(en_strings):
        problems.append(f"{where}: the code differs (not only comments and strings)")
    elif zh_magics != en_magics:
        problems.append(f"{where}: magics differ: {zh_magics} vs {en_magics}")
    else:
        for a, b in zip(zh_strings, en_strings, strict=True):
            if a != b and not human(a) and b != edition_file(a):
                problems.append(f"{where}: string {a!r} became {b!r}; only human-language text may differ")
    return problems


def compare(zh_text: str, en_text: str, name: str, lab: bool = False) -> list[str]:
    """Every difference between the code of a Chinese page and its English counterpart."""
    read = lab_blocks if lab else markdown_blocks
    zh, en = read(zh_text), read(en_text)
    problems = []
    if len(zh) != len(en):
        problems.append(f"{name}: {len(zh)} Python blocks in Chinese, {len(en)} in English")
    for i, (a, b) in enumerate(zip(zh, en, strict=False)):  # a count mismatch is reported above
        problems += compare_block(name, i, a, b)
    if not lab:
        zh_ids, en_ids = ANCHOR.findall(zh_text), ANCHOR.findall(en_text)
        if sorted(zh_ids) != sorted(en_ids):
            missing = sorted(set(zh_ids) - set(en_ids))
            extra = sorted(set(en_ids) - set(zh_ids))
            problems.append(f"{name}: heading anchors differ: missing {missing}, extra {extra}")
    return problems


def source_pages(docs: Path) -> list[Path]:
    """The Chinese pages and labs of ``docs/`` (every page has a translation)."""
    pages = [*docs.rglob("*.md"), *docs.glob("labs/*.py")]
    return sorted(p for p in pages if not is_translation(p))


def check(pages: list[Path], root: Path) -> list[str]:
    problems = []
    for page in pages:
        name = page.relative_to(root).as_posix() if page.is_absolute() else page.as_posix()
        en = english_path(page)
        if not en.exists():
            problems.append(f"{name}: no English edition ({en.name})")
            continue
        problems += compare(
            page.read_text(encoding="utf-8"), en.read_text(encoding="utf-8"), name, lab=page.suffix == ".py"
        )
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    pages = [Path(a) for a in args] or source_pages(root / "docs")
    problems = check(pages, root)
    for problem in problems:
        print(problem)
    print(f"parity: {len(pages)} page(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
