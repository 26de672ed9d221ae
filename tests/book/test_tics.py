"""tools/book/tics.py counts the calques and tics of the English prose, per part."""

from __future__ import annotations

from pathlib import Path

from tools.book.tics import MEASURES, TICS, count, main, places

# One sentence per tic that has it, and one that says the same in English.
CASES = {
    "one by one": ("We check them one by one.", "We check each of them."),
    "item by item": ("It lists item by item what fails.", "It lists what fails."),
    "case by case": ("Both are checked case by case.", "Each case has its own test."),
    "word for word": ("It is word for word as derived.", "It is the formula as derived."),
    "check with a pen": ("Numbers you can check with a pen.", "Numbers you can check by hand."),
    "takes out": ("It takes out `x[t]`.", "It reads `x[t]`."),
    "need as a noun": ("Take a concrete need.", "There is no need to; the tiles that need a mask."),
    "First the head of": ("First the head of the module.", "The module begins with its imports."),
    "explains under": ("The appendix explains under [X](a.md) how.", "[X](a.md), in the appendix, explains how."),
    "What ... is shown in": ("What misreading it leads to is shown in chapter 7.", "Chapter 7 shows the misreading."),
    "is told on": ("Which test guards what is told on the reference page.", "The reference page says which."),
    "This is checked": ("Both are checked. This is asserted too.", "The checks run on every build."),
    "which is asserted": ("It is lowest, which is asserted.", "It is lowest on every seed."),
}


def _page(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs/labs").mkdir(parents=True, exist_ok=True)
    for name in ("README.md", "CONTRIBUTING.md"):
        (tmp_path / name).write_text("Read me.\n", encoding="utf-8")
    page = tmp_path / "docs/01-a.en.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_every_tic_has_a_case_that_shows_it(tmp_path: Path) -> None:
    assert set(CASES) == set(TICS)
    for tic, (bad, good) in CASES.items():
        page = _page(tmp_path, f"# T\n\n{bad}\n")
        found = [t for t, _ in places(page, "chapters", tmp_path)]
        assert found.count(tic) == (2 if tic == "This is checked" else 1), (tic, found)
        page.write_text(f"# T\n\n{good}\n", encoding="utf-8")
        assert [t for t, _ in places(page, "chapters", tmp_path) if t == tic] == [], (tic, good)


def test_so_openers_long_paragraphs_and_only(tmp_path: Path) -> None:
    long = " ".join(["word"] * 199) + "."
    page = _page(tmp_path, f"So it goes. Also, so what.\n\n{long} Only one more only.\n\n- So a list item.\n")
    found = places(page, "chapters", tmp_path)
    assert [t for t, _ in found] == [MEASURES[1], MEASURES[2], MEASURES[1]], found
    assert found[1][1].startswith("docs/01-a.en.md:3: 203 words")
    table, _ = count(tmp_path)
    assert table[MEASURES[0]]["chapters"] == 2 and table["words"]["chapters"] == 3 + 3 + 203 + 4


def test_main_prints_every_tic_per_part(capsys, tmp_path: Path) -> None:
    _page(tmp_path, "We check them one by one. So it is.\n")
    assert main(["--root", str(tmp_path), "--where"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["tic", "chapters", "labs", "pages", "captions", "total"]
    rows = {line[:24].strip(): line[24:].split() for line in out[1:len(TICS) + len(MEASURES) + 1]}
    assert list(rows) == [*TICS, *MEASURES]
    assert rows["one by one"] == ["1", "0", "0", "0", "1"] and rows[MEASURES[1]][0] == "1"
    assert "  docs/01-a.en.md:1: 'We check them one by one. So it is.'" in out


def test_the_book_is_counted() -> None:
    table, found = count()
    assert table["words"]["chapters"] > 20_000 and all(table["words"][p] > 500 for p in table["words"])
    assert all(where.split(":")[1].isdigit() for _, where in found)
