"""tools/book/prose_zh.py measures the Chinese prose: long sentences, colon chains, remarks about
the book's checks, translationese and punctuation."""

from __future__ import annotations

from pathlib import Path

from tools.book.prose_zh import LONG, MEASURES, META, PATTERNS, count, main, places, sentences


def test_sentences_end_at_full_stops_and_quotations_are_left_out() -> None:
    assert sentences("他说：“好。”然后走了！对吗？还有") == ["他说：“好。”", "然后走了！", "对吗？", "还有"]
    assert sentences("> To illustrate why the dot products get large. 中文。") == [
        "> To illustrate why the dot products get large. 中文。"]
    assert sentences("An English quotation only.") == []


def _page(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs/labs").mkdir(parents=True, exist_ok=True)
    page = tmp_path / "docs/01-a.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_each_measure_finds_what_it_must(tmp_path: Path) -> None:
    long = "长" * (LONG + 1) + "。"
    page = _page(tmp_path, (
        f"{long}短句。\n\n一：二：三：四。\n\n"
        "权重为 0（代码断言了）。输出相同（每个种子都断言）。这已检验。两者都有测试检验。"
        "代码只是守卫。3.2 的代码断言了这一点。\n\n"
        "对于每一行进行归一化（a, b）。称为「原文」，精确到 0.1 %。编码器–解码器。\n"
        "```python\nx = 1  # 进行（断言）\n```\n"
        "<div data-i18n='{\"a\": \"「{c}」进行\"}'></div>\n"))
    found = [k for k, _ in places(page, "chapters", tmp_path)]
    assert found.count(MEASURES[2]) == 1 and found.count(MEASURES[3]) == 1, found
    assert found.count("meta: （…断言/检验/测试…）") == 2, found
    for key in ("meta: 有测试检验", "meta: 代码断言了", "meta: 已检验", "meta: 守卫/守护",
                "translationese: 进行", "translationese: 对于", "punctuation: ASCII comma in （）",
                "punctuation: no space in 0.1%", "punctuation: en dash between Chinese"):
        assert found.count(key) == 1, (key, found)
    assert found.count("punctuation: “” not 「」") == 4  # two in the prose, two in the tag
    assert set(found) == {*MEASURES[2:], *PATTERNS}
    assert len(META) == 5


def test_the_table_has_every_measure_per_part(capsys, tmp_path: Path) -> None:
    _page(tmp_path, "一句。两句。\n\n三句（断言）。\n")
    table, found = count(tmp_path)
    assert table["sentences"]["chapters"] == 3 and table["chars/sent"]["chapters"] == (3 + 3 + 7) / 3
    assert main(["--root", str(tmp_path), "--where"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["measure", "chapters", "labs", "pages", "captions", "total"]
    assert "  docs/01-a.md:3: '三句（断言）。'" in out


def test_the_chinese_edition_is_measured() -> None:
    table, _ = count()
    assert table["sentences"]["chapters"] > 1000 and all(table["sentences"][p] > 50 for p in table["sentences"])


def test_the_chinese_edition_has_no_long_sentence_colon_chain_meta_remark_or_punctuation_error() -> None:
    _, found = count()
    assert not found, "\n".join(f"{key}: {where}" for key, where in found)
