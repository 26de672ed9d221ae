"""selfattn.plot: the drawing helper of every figure in the book (chapter 3)."""

import matplotlib
import pytest
import torch
from matplotlib.colors import to_rgb

from selfattn import plot

matplotlib.use("Agg")

TOKENS = ["cat", "drank", "milk", ",", "it", "slept"]


def cell_texts(ax):
    """The annotations of a heatmap, row by row: (text, color as RGB)."""
    return [(t.get_text(), to_rgb(t.get_color())) for t in ax.texts]


def test_labels_on_both_axes_queries_down_keys_across():
    fig, ax = plot.figure()
    plot.heatmap(torch.eye(6)[:, :5], TOKENS, TOKENS[:5], ax=ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS[:5]
    assert ax.xaxis.get_ticks_position() == "top"
    # m[i, j] is drawn in row i (y = i) and column j (x = j): row 2 holds the one 1.
    texts = [t for t in ax.texts if t.get_text() == "1.00"]
    assert [(t.get_position()) for t in texts] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]


@pytest.mark.parametrize(("kind", "m", "cmap", "lims"), [
    ("weights", torch.tensor([[0.1, 0.9], [0.5, 0.5]]), plot.WEIGHTS_CMAP, (0.0, 1.0)),
    ("scores", torch.tensor([[-3.0, 1.0], [2.0, 0.0]]), plot.SCORES_CMAP, (-3.0, 3.0)),
    ("scores", torch.zeros(2, 2), plot.SCORES_CMAP, (-1.0, 1.0)),
])
def test_value_range_and_colormap_per_kind(kind, m, cmap, lims):
    fig, ax = plot.figure()
    im = plot.heatmap(m, ["a", "b"], ["c", "d"], ax=ax, kind=kind)
    assert im.cmap.name == cmap
    assert im.get_clim() == lims  # weights: always 0..1; scores: centred at 0


def hatched(ax):
    """The cells (row, column) covered by a hatched patch."""
    return sorted((int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in ax.patches if p.get_hatch())


def test_mask_two_colors_and_hatching_on_masked_cells():
    fig, ax = plot.figure()
    mask = torch.tensor([[True, False], [True, True]])
    im = plot.heatmap(mask, ["a", "b"], ["a", "b"], ax=ax, kind="mask")
    assert [to_rgb(im.cmap(v)) for v in (0.0, 1.0)] == [to_rgb(c) for c in plot.MASK_COLORS]
    assert hatched(ax) == [(0, 1)] and len(ax.texts) == 0
    assert len(fig.axes) == 1  # no color bar for a mask


def test_masked_cells_are_hatched_without_a_value_and_not_drawn_as_zero():
    fig, ax = plot.figure()
    allowed = torch.tensor([[True, False], [True, True]])
    w = torch.tensor([[1.0, 0.0], [0.25, 0.75]])
    im = plot.heatmap(w, ["a", "b"], ["c", "d"], ax=ax, mask=allowed)
    assert hatched(ax) == [(0, 1)]
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.25", "0.75"]
    assert im.get_array().mask[0, 1]  # transparent, not the color of 0
    fig, ax = plot.figure()
    im = plot.heatmap(torch.tensor([[1.0, -9.0]]), ["q"], ["a", "b"], ax=ax, kind="scores",
                      mask=torch.tensor([[True, False]]))
    assert im.get_clim() == (-1.0, 1.0)  # a masked score leaves the range alone
    fig, ax = plot.figure()  # a fully masked row's NaN is shown, not hatched away
    plot.heatmap(torch.tensor([[float("nan"), float("nan")], [0.5, 0.5]]), ["a", "b"],
                 ["c", "d"], ax=ax, mask=torch.tensor([[False, False], [True, True]]))
    assert hatched(ax) == [] and [t.get_text() for t in ax.texts] == ["NaN", "0.50", "0.50"]
    fig, ax = plot.figure()
    plot.heatmap(torch.tensor([[float("nan"), 0.5]]), ["a"], ["c", "d"], ax=ax)
    assert [t.get_text() for t in ax.texts] == ["NaN", "0.50"]
    with pytest.raises(TypeError, match=r"torch.bool tensor of shape \(2, 2\), got torch.int64"):
        plot.heatmap(w, ["a", "b"], ["c", "d"], ax=ax, mask=torch.ones(2, 2, dtype=torch.long))


def test_a_color_bar_beside_each_heatmap_or_one_shared():
    fig, axes = plot.figure(1, 2)
    plot.heatmap(torch.eye(2), ["a", "b"], ["a", "b"], ax=axes[0])
    assert len(fig.axes) == 3  # two grids and the first one's bar
    im = plot.heatmap(torch.eye(2), ["a", "b"], ["a", "b"], ax=axes[1], bar=False)
    assert len(fig.axes) == 3
    bar = plot.colorbar(im, axes)
    assert len(fig.axes) == 4 and bar.mappable is im


def test_text_sizes_read_at_11_px_where_shown_at_natural_size():
    fig, ax = plot.figure()
    plot.heatmap(torch.eye(2), ["a", "b"], ["a", "b"], ax=ax, title="t")
    ax.set_xlabel("keys")
    texts = [*ax.texts, ax.title, ax.xaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels(),
             *fig.axes[1].get_yticklabels()]
    assert min(t.get_fontsize() for t in texts) * 4 / 3 >= 11  # 1 pt = 4/3 px


def test_annotation_black_on_light_cells_white_on_dark():
    fig, ax = plot.figure()
    # viridis: 0 is dark purple, 1 is light yellow; RdBu_r: 0 is white, ±lim saturated.
    plot.heatmap(torch.tensor([[0.0, 1.0]]), ["q"], ["a", "b"], ax=ax)
    assert cell_texts(ax) == [("0.00", (1.0, 1.0, 1.0)), ("1.00", (0.0, 0.0, 0.0))]
    fig, ax = plot.figure()
    plot.heatmap(torch.tensor([[0.0, -5.0]]), ["q"], ["a", "b"], ax=ax, kind="scores", fmt=".1f")
    assert cell_texts(ax) == [("0.0", (0.0, 0.0, 0.0)), ("-5.0", (1.0, 1.0, 1.0))]


def luminance(rgb):
    """WCAG 2 relative luminance, computed here independently of plot.text_color."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_text_color_follows_luminance():
    assert plot.text_color((1.0, 1.0, 1.0)) == "black"
    assert plot.text_color((0.0, 0.0, 0.0)) == "white"
    assert plot.text_color((0.5, 0.5, 0.5)) == "black"  # luminance 0.21 > 0.179
    assert plot.text_color((0.4, 0.4, 0.4)) == "white"  # luminance 0.13
    assert plot.text_color((1.0, 1.0, 0.0)) == "black"  # yellow is light
    assert plot.text_color((0.0, 0.0, 1.0)) == "white"  # blue is dark


def contrast(a, b):
    la, lb = sorted((luminance(to_rgb(a)), luminance(to_rgb(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("color", plot.HEAD_COLORS)
def test_head_colors_legible_on_light_and_dark_pages(color):
    # Material's light page is white, its dark ("slate") page #1e2129; 3:1 is WCAG's bar for graphics.
    assert contrast(color, "#ffffff") >= 3, color
    assert contrast(color, "#1e2129") >= 3, color


def test_ink_is_the_text_and_axis_color():
    fig, ax = plot.figure()
    ax.set_xlabel("keys")
    assert to_rgb(ax.xaxis.label.get_color()) == to_rgb(plot.INK)
    assert to_rgb(ax.spines["left"].get_edgecolor()) == to_rgb(plot.INK)
    assert fig.get_facecolor()[3] == 0  # transparent: the page shows through


@pytest.mark.parametrize(("m", "rows", "cols", "error", "words"), [
    (torch.rand(3, 4), "abc", "abc", ValueError, ["(len(rows), len(cols)) = (3, 3)", "(3, 4)"]),
    (torch.rand(2, 3, 3), "abc", "abc", ValueError, ["(3, 3)", "(2, 3, 3)"]),
    ([[0.5]], "a", "a", TypeError, ["torch.Tensor", "list"]),
    (torch.ones(1, 1, dtype=torch.bool), "a", "a", TypeError, ["kind='weights'", "torch.bool"]),
    (torch.tensor([[1.5]]), "a", "a", ValueError, ["[0, 1]", "1.5", "kind='scores'"]),
])
def test_bad_input_raises_a_clear_error(m, rows, cols, error, words):
    fig, ax = plot.figure()
    with pytest.raises(error) as info:
        plot.heatmap(m, list(rows), list(cols), ax=ax)
    for word in words:
        assert word in str(info.value)


def test_mask_kind_needs_bool_and_kind_is_checked():
    fig, ax = plot.figure()
    with pytest.raises(TypeError, match="kind='mask' needs m of torch.bool, got torch.float32"):
        plot.heatmap(torch.ones(1, 1), ["a"], ["a"], ax=ax, kind="mask")
    with pytest.raises(ValueError, match="kind must be 'weights', 'scores' or 'mask', got 'weight'"):
        plot.heatmap(torch.ones(1, 1), ["a"], ["a"], ax=ax, kind="weight")


def test_figure_fits_the_text_column():
    fig, axes = plot.figure(1, 3, size=(7, 2))
    assert len(axes) == 3 and tuple(fig.get_size_inches()) == (7, 2)
    with pytest.raises(ValueError, match="0 < width <= 7 "):
        plot.figure(size=(8, 3))


def test_box_draws_the_tensor_shape_and_arrow_joins_boxes():
    fig, ax = plot.figure()
    x = plot.box(ax, (6, 4), (0, 0), "X", cell=0.5)
    s = plot.box(ax, (6, 6), (4, 0), "S", cell=0.5)
    assert x == (0, -1.5, 2.0, 1.5)  # 4 columns, 6 rows of 0.5, left edge centred at (0, 0)
    assert s[2] - s[0] == 3.0  # a wider tensor is drawn wider
    assert len(ax.patches) == 6 * 4 + 6 * 6
    assert [t.get_text() for t in ax.texts] == ["X\n(6×4)", "S\n(6×6)"]
    plot.arrow(ax, x, s, label="W")
    assert len(ax.patches) == 6 * 4 + 6 * 6 + 1 and ax.texts[-1].get_text() == "W"
    assert ax.patches[-1]._posA_posB == [(2.0, 0.0), (4, 0.0)]  # right middle -> left middle
    plot.arrow(ax, (1, 2), s)  # a point works as well
    assert ax.patches[-1]._posA_posB == [(1, 2.0), (4, 0.0)]
    with pytest.raises(ValueError, match="at least 2 dims, got \\(4,\\)"):
        plot.box(ax, (4,), (0, 0), "v")


def test_import_selfattn_does_not_import_matplotlib():
    import subprocess
    import sys

    code = "import sys, selfattn, selfattn.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_nan_cell_is_empty_and_marked_in_ink():
    fig, ax = plot.figure()
    w = torch.tensor([[0.25, 0.75], [float("nan"), float("nan")]])  # row 1: fully masked
    im = plot.heatmap(w, ["a", "b"], ["c", "d"], ax=ax)
    assert im.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.texts] == ["0.25", "0.75", "NaN"]  # a NaN row: once
    assert ax.texts[2].get_position() == (0.5, 1)
    assert to_rgb(ax.texts[2].get_color()) == to_rgb(plot.INK)
    assert im.cmap(float("nan"))[3] == 0  # transparent: the page shows through
    fig, ax = plot.figure()
    im = plot.heatmap(torch.tensor([[float("nan"), -2.0]]), ["q"], ["a", "b"], ax=ax,
                      kind="scores")
    assert im.get_clim() == (-2.0, 2.0)  # the range ignores NaN
    fig, ax = plot.figure()
    im = plot.heatmap(torch.full((1, 1), float("nan")), ["q"], ["a"], ax=ax, kind="scores")
    assert im.get_clim() == (-1.0, 1.0)


def test_plain_ticks_on_log_axes_have_no_small_exponents():
    fig, ax = plot.figure()
    ax.loglog([64, 512], [1 / 64, 4], base=2)
    plot.plain_ticks(ax)
    fig.draw_without_rendering()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert {"64", "128", "256", "512"} <= set(labels) and not any("$" in s for s in labels)
    assert "0.0156" in [t.get_text() for t in ax.get_yticklabels()]


def test_heatmaps_share_one_color_bar_and_refuse_scores():
    fig, axes = plot.figure(2, 2)
    w = torch.full((4, 2, 2), 0.5)
    im = plot.heatmaps(w, ["a", "b"], ["c", "d"], axes, titles=list("pqrs"),
                       mask=torch.tensor([[True, False], [True, True]]))
    assert len(fig.axes) == 5 and [ax.get_title() for ax in fig.axes[:4]] == list("pqrs")
    assert all(hatched(ax) == [(0, 1)] for ax in fig.axes[:4]) and im is fig.axes[3].images[0]
    with pytest.raises(ValueError, match="one scale"):
        plot.heatmaps(w, ["a", "b"], ["c", "d"], axes, kind="scores")
    with pytest.raises(ValueError, match="4 grids for 2 axes"):
        plot.heatmaps(w, ["a", "b"], ["c", "d"], axes[0])


def test_show_gives_a_lab_plot_as_a_figure_with_a_narrow_variant_alt_text_and_caption(monkeypatch):
    """plot.show (the labs' plots): one <figure class="sa-figure"> holding the figure as inline SVG twice, as drawn
    and as drawn with plot.narrow() on (stacked, at most STACKED_IN wide), each an image with the alt text; then
    the caption; text stays text, the ink follows the page, no global style, and the ids are prefixed."""
    import re

    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    drawn = []

    def draw():
        fig, axes = plot.figure(1, 2, size=(6.7, 3.0))
        drawn.append(plot.narrow())
        for ax in axes:
            ax.plot([0, 1], [0, 1], color=plot.INK)
            ax.set_title("t")
        return fig

    plot.show(draw, "A <caption>", 'alt "text"')
    (out,) = shown
    html = out.data
    assert drawn == [False, True]
    assert html.startswith('<figure class="sa-figure"><svg class="sa-figure__wide" role="img" ')
    assert html.endswith("<figcaption>A &lt;caption&gt;</figcaption></figure>")
    assert html.count('aria-label="alt &quot;text&quot;"') == 2 and '<svg class="sa-figure__narrow"' in html
    widths = [float(w) for w in re.findall(r'<svg class="sa-figure__\w+"[^>]* width="([\d.]+)pt"', html)]
    assert widths == pytest.approx([6.7 * 72, plot.STACKED_IN * 72]), widths
    assert "<text" in html and "currentColor" in html and plot.INK not in html
    assert "<style" not in html and "<?xml" not in html and "<metadata" not in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert ids and len(ids) == len(set(ids)) and all(i.startswith("sa") for i in ids)
    refs = re.findall(r'url\(#([^)]+)\)', html)
    assert refs and set(refs) <= set(ids), "every clip path still resolves"


def test_a_narrow_figure_stacks_its_panels_and_keeps_the_axes_shape(monkeypatch):
    """plot.figure in a narrow variant (SELFATTN_FIGURE=narrow): at most STACKED_IN wide; two or three panels in a row
    are stacked in a column, four in a row go 2 x 2, more rows two to a row; each row keeps its height; the axes come
    in the shape asked for. Without the flag nothing changes."""
    def grid(axes):
        """(row, column) of each axes on its figure's grid, in the order the code sees them."""
        flat = list(getattr(axes, "flat", [axes]))
        return [(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start) for ax in flat]

    fig, axes = plot.figure(1, 2, size=(7, 3))
    assert grid(axes) == [(0, 0), (0, 1)] and tuple(fig.get_size_inches()) == (7, 3)
    monkeypatch.setenv("SELFATTN_FIGURE", "narrow")
    assert plot.narrow()
    fig, axes = plot.figure(1, 2, size=(7, 3))
    assert axes.shape == (2,) and grid(axes) == [(0, 0), (1, 0)]
    assert tuple(fig.get_size_inches()) == (plot.STACKED_IN, 6)
    fig, axes = plot.figure(1, 3, size=(7, 2))
    assert grid(axes) == [(0, 0), (1, 0), (2, 0)] and fig.get_size_inches()[1] == 6
    fig, axes = plot.figure(1, 4, size=(7, 2.6))
    assert axes.shape == (4,) and grid(axes) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    fig, axes = plot.figure(3, 4, size=(7, 6))
    assert axes.shape == (3, 4) and grid(axes)[:3] == [(0, 0), (0, 1), (1, 0)] and len(fig.axes) == 12
    assert tuple(fig.get_size_inches()) == (plot.STACKED_IN, 12)
    fig, axes = plot.figure(1, 5, size=(7, 2))
    assert axes.shape == (5,) and len(fig.axes) == 5, "the sixth cell of a 3 x 2 grid is removed"
    fig, ax = plot.figure(size=(3, 2))
    assert tuple(fig.get_size_inches()) == (3, 2) and not hasattr(ax, "shape")


def test_letters_name_the_panels_in_the_order_of_the_axes_in_both_variants(monkeypatch):
    """plot.figure(letters=True): (a), (b), ... at the top left of each panel, in the order the code sees the axes, so a
    caption's (b) is the same panel wide and stacked; no letters without it, and a center title keeps its place."""
    def letters(axes):
        return [ax.get_title(loc="left") for ax in getattr(axes, "flat", [axes])]

    for variant in ("", "narrow"):
        monkeypatch.setenv("SELFATTN_FIGURE", variant)
        fig, axes = plot.figure(1, 3, size=(7, 2), letters=True)
        assert letters(axes) == ["(a)", "(b)", "(c)"]
        axes[1].set_title("center")
        assert axes[1].get_title() == "center" and axes[1].get_title(loc="left") == "(b)"
        fig, axes = plot.figure(2, 2, size=(7, 4), letters=True)
        assert letters(axes) == ["(a)", "(b)", "(c)", "(d)"]
        fig, axes = plot.figure(1, 2, size=(7, 2))
        assert letters(axes) == ["", ""]
    # stacked, (b) is the panel under (a): the second panel of the code, first in the second row of the grid
    assert axes[1].get_subplotspec().rowspan.start == 1


# The mechanism diagrams' helpers (docs/03-plot-source.md, "机制图"): diagram, vector, bars, box rows.


@pytest.mark.parametrize("color", plot.TOKEN_COLORS)
def test_token_colors_legible_on_light_and_dark_pages(color):
    assert contrast(color, "#ffffff") >= 3, color
    assert contrast(color, "#1e2129") >= 3, color


def test_one_color_per_token_of_the_example():
    from selfattn import example

    assert len(set(plot.TOKEN_COLORS)) == len(example.embeddings()) == 6


def test_diagram_measures_in_inches_and_narrows_to_a_phone(monkeypatch):
    monkeypatch.delenv("SELFATTN_FIGURE", raising=False)
    fig, ax = plot.diagram(6.5, 2.0)
    assert tuple(fig.get_size_inches()) == (6.5, 2.0)
    assert ax.get_xlim() == (0, 6.5) and ax.get_ylim() == (0, 2.0)
    assert tuple(ax.get_position().bounds) == (0, 0, 1, 1)  # 1 unit = 1 inch
    with pytest.raises(ValueError, match=r"width <= 7.0 .*got \(7.5, 2\)"):
        plot.diagram(7.5, 2)
    monkeypatch.setenv("SELFATTN_FIGURE", "narrow")
    plot.diagram(4.5, 9)
    with pytest.raises(ValueError, match=r"width <= 4.5 .*narrow=True.*got \(6.5, 2\)"):
        plot.diagram(6.5, 2)


def test_vector_writes_each_value_in_its_cell_tinted_by_its_size():
    fig, ax = plot.diagram(4, 1)
    v = torch.tensor([0.8, 0.04, 0.0, -0.4])
    box = plot.vector(ax, v, (1.0, 0.5), color=plot.TOKEN_COLORS[0], label="o", note="(4,)")
    cell = plot.CELL_IN
    assert box == (1.0, 0.5 - cell / 2, 1.0 + 4 * cell, 0.5 + cell / 2)
    cells = [t for t in ax.texts if t.get_fontsize() == plot.CELL_PT]
    assert [t.get_text() for t in cells] == ["0.80", "0.04", "0", "-0.40"]  # a zero is 0
    assert [t.get_position() for t in cells] == [(1.0 + (j + 0.5) * cell, 0.5) for j in range(4)]
    assert {t.get_text() for t in ax.texts} >= {"o", "(4,)"}
    faces = [luminance(p.get_facecolor()[:3]) for p in ax.patches]
    assert faces[0] < faces[3] < faces[1] < faces[2]  # the larger |value|, the deeper the tint
    assert faces[2] < 1 and to_rgb(ax.patches[2].get_edgecolor()) == to_rgb(plot.TOKEN_COLORS[0])
    for t, p in zip(cells, ax.patches, strict=True):  # black or white, as stands out
        assert t.get_color() == plot.text_color(p.get_facecolor())
    with pytest.raises(ValueError, match=r"1-D torch.Tensor, got \(2, 2\)"):
        plot.vector(ax, torch.eye(2), (0, 0))


def test_vector_shares_a_scale_when_given_vmax():
    fig, ax = plot.diagram(4, 1)
    plot.vector(ax, torch.tensor([0.5]), (0, 0.5), vmax=1.0)
    plot.vector(ax, torch.tensor([0.5]), (2, 0.5))  # alone, 0.5 is its own largest value
    assert luminance(ax.patches[0].get_facecolor()[:3]) > luminance(ax.patches[1].get_facecolor()[:3])


def test_bars_are_as_long_as_the_weights_and_say_them():
    fig, ax = plot.diagram(4, 3)
    w = torch.tensor([0.8, 0.15, 0.05])
    colors = plot.TOKEN_COLORS[:3]
    plot.bars(ax, w, (1.0, 2.5), colors=colors, length=2.0, step=0.5)
    assert [round(p.get_width(), 6) for p in ax.patches] == [1.6, 0.3, 0.1]
    assert [p.get_y() + p.get_height() / 2 for p in ax.patches] == [2.5, 2.0, 1.5]  # stacked down
    assert [to_rgb(p.get_facecolor()) for p in ax.patches] == [to_rgb(c) for c in colors]
    assert [t.get_text() for t in ax.texts] == ["0.80", "0.15", "0.05"]
    assert [t.get_position()[0] for t in ax.texts] == pytest.approx([2.65, 1.35, 1.15])  # at each end
    fig, ax = plot.diagram(4, 3)
    plot.bars(ax, w, (0.5, 0.2), colors=colors, length=2.0, step=0.5, across=True)
    assert [round(p.get_height(), 6) for p in ax.patches] == [1.6, 0.3, 0.1]
    assert [p.get_y() for p in ax.patches] == [0.2] * 3  # side by side on one baseline
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        plot.bars(ax, torch.tensor([1.5, -0.5]), (0, 0), colors=colors[:2])
    with pytest.raises(ValueError, match=r"one color per bar, got w \(3,\) and 2 colors"):
        plot.bars(ax, w, (0, 0), colors=colors[:2])


def test_box_colors_rows_or_columns_and_outlines_the_followed_row():
    fig, ax = plot.figure()
    plot.box(ax, (3, 2), (0, 0), "A", cell=1.0, rows=["red", "green", "blue"], mark=0)
    by_row = {(p.get_x(), p.get_y()): to_rgb(p.get_facecolor()) for p in ax.patches[:6]}
    assert by_row[(0, 2.0 - 1.5)] == to_rgb("red")  # row 0 is the top row
    assert by_row[(1, -1.5)] == to_rgb("blue")
    outline = ax.patches[-1]
    assert not outline.get_fill() and (outline.get_y(), outline.get_width()) == (0.5, 2.0)
    fig, ax = plot.figure()
    plot.box(ax, (2, 3), (0, 0), "Kᵀ", cell=1.0, cols=["red", "green", "blue"])
    assert [to_rgb(p.get_facecolor()) for p in ax.patches[:3]] == [to_rgb(c) for c in ("red", "green", "blue")]
    with pytest.raises(ValueError, match=r"rows must give 2 colors for shape \(2, 3\), got 3"):
        plot.box(ax, (2, 3), (0, 0), "K", rows=["red", "green", "blue"])
