"""One term per concept in the Chinese edition, and its punctuation (``tools/book/terms_zh.py``): the
twin of test_terms.py.

``python -m tools.book.terms_zh`` prints the hits without failing, then a count per rule.
"""

from __future__ import annotations

from pathlib import Path

from tools.book.terms_zh import PUNCTUATION, TERMS, all_hits, all_reports, files, hits, main

ROOT = Path(__file__).resolve().parents[2]


def test_one_term_per_concept_and_no_punctuation_error() -> None:
    found = all_hits()
    assert not found, f"{len(found)} variants; use the chosen term:\n" + "\n".join(found)


# One sentence per rule that breaks it, and the sentence the house writes instead.
VIOLATIONS = {
    "得分": ("把分数归一化。", "把得分归一化，满分是 100 分。"),
    "热力图": ("画成热图。", "画成热力图。"),
    "掩蔽": ("被屏蔽的键。", "被掩蔽的键。"),
    "独热": ("权重趋向 one-hot。", "权重趋向独热（one-hot）分布，即独热。"),
    "损失": ("loss 变成 NaN。", "损失（loss）变成 NaN，见 `loss.backward()`。"),
    "整行被掩蔽的行": ("空行输出 0，全被掩蔽的行也是。", "整行被掩蔽的行输出 0。"),
    "并行计算、顺序计算": ("这是并行依赖，那是顺序依赖。", "这是并行计算，那是顺序计算。"),
    "原教程": ("原文说错了。", "原教程说错了，原论文没有。"),
    "nat": ("约 2.55 nats。", "约 2.55 nat。"),
    "等人，A 和 B": ("（Su et al.，2021）与 Press & Wolf，Luong 等（2015）。",
                   "（Su 等人，2021）与 Press 和 Wolf，Luong 等人（2015），profiler 等工具。"),
    "一元基准": ("低于一元熵。", "低于一元基准。"),
    "加权和 | weighted sum": ("| 加权平均 | weighted sum | 值的加权和 |", "| 加权和 | weighted sum | 值的加权和 |"),
    "ASCII comma in （）": ("前馈网络（feed-forward network, FFN）。", "前馈网络（feed-forward network，FFN，共 2,000 个）。"),
    "“” not 「」": ("称为「例句」。", "称为“例句”。"),
    "no space in 0.1%": ("精确到 0.1 %。", "精确到 0.1%。"),
}


def test_every_rule_has_a_case_that_breaks_it() -> None:
    assert set(VIOLATIONS) == set(TERMS) | set(PUNCTUATION)
    for rule, (bad, good) in VIOLATIONS.items():
        found = hits(ROOT / "x.md", bad + "\n")
        assert found and all(h.endswith(f"-> {rule!r}") for h in found), (rule, found)
        assert hits(ROOT / "x.md", good + "\n") == [], (rule, hits(ROOT / "x.md", good + "\n"))


def test_code_and_math_are_not_prose_but_captions_and_lab_cells_are() -> None:
    page = ("`分数 = 1` 与 $空行$ 不算。\n\n```python\n#| caption: 一幅热图。\nloss = 1  # 空行\n```\n")
    assert hits(ROOT / "x.md", page) == ["x.md:4: '热图' -> '热力图'"]
    lab = "# %% [markdown]\n# 被屏蔽的键。\n\n# %%\nprint('被屏蔽')\n"
    html = '<div data-i18n=\'{"a": "「{c}」"}\'></div>\n'
    assert [h.split(" -> ")[1] for h in hits(ROOT / "x.md", html)] == ["'“” not 「」'"] * 2
    assert hits(ROOT / "x.py", lab) == ["x.py:2: '屏蔽' -> '掩蔽'"]


def test_quotations_and_english_cells_keep_their_words() -> None:
    page = ("它说“需要屏蔽的位置”，这里被屏蔽。\n\n> 原文的屏蔽。\n\n**原文：** 被屏蔽时「NaN」。\n\n"
            "| 验证损失 | validation loss | 验证集上的 loss |\n")
    assert hits(ROOT / "x.md", page) == ["x.md:1: '屏蔽' -> '掩蔽'", "x.md:5: '「' -> '“” not 「」'",
                                         "x.md:5: '」' -> '“” not 「」'", "x.md:7: 'loss' -> '损失'"]


def test_the_reports_count_weighted_averages_and_variants_in_code(tmp_path: Path) -> None:
    (tmp_path / "docs/labs").mkdir(parents=True)
    (tmp_path / "docs/01-a.md").write_text("输出是值的加权平均。\n\n```python\nx = 1  # 空行\n```\n", encoding="utf-8")
    (tmp_path / "docs/01-a.en.md").write_text("A weighted average.\n", encoding="utf-8")
    (tmp_path / "docs/labs/a.py").write_text("# %%\nplt.title('分数')\n", encoding="utf-8")
    reports = all_reports(tmp_path)
    assert reports["加权平均 (only for a weighted average)"] == ["docs/01-a.md:1: '输出是值的加权平均。'"]
    assert [h.split(" -> ")[0] for h in reports["variants in code (comments, strings)"]] == [
        "docs/01-a.md:4: '空行'", "docs/labs/a.py:2: '分数'"]


def test_every_chinese_page_and_lab_is_scanned() -> None:
    scanned = files()
    assert any(p.name == "07-pitfalls.md" for p in scanned) and any(p.name == "capstone.py" for p in scanned)
    assert not any(".en." in p.name for p in scanned)


def test_main_prints_a_count_per_rule(capsys) -> None:
    assert main(["--reports"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("\nrule"):].splitlines()[2:]
    assert len(table) == len(TERMS) + len(PUNCTUATION) + 2
    assert all(line.split()[-2] == "0" for line in table if line.endswith("fails")), table
