"""The report's figures: a colour-blind-safe style per variant that keeps up to 64 variants apart, TD3 always alike, no
performance profile hidden behind another, captions that say n and claim no interval without enough runs, legends
outside the curves, titles that fit the figure, and indexed PNGs that are the same bytes for the same figure."""

import itertools
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex
from PIL import Image

from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.variants import expand_preset
from sb3_ablation.study.render.figures import (
    OKABE_ITO,
    TD3_STYLE,
    CurveEstimate,
    Panel,
    curve_band,
    draw_performance_profiles,
    iqm_caption,
    palette,
    plot_curve_panels,
    profile_band,
    save_figure,
    wrapped_title,
)

FACTORIAL = expand_preset("factorial")


def triple(style):
    return style.color, style.linestyle, style.marker


def test_64_variants_have_64_distinct_styles_from_the_colour_blind_safe_palette():
    assert len(FACTORIAL) == 64 and "td3" in FACTORIAL
    styles = palette(FACTORIAL)
    assert list(styles) == FACTORIAL
    assert len({triple(style) for style in styles.values()}) == 64
    others = [style for variant, style in styles.items() if variant != "td3"]
    assert {style.color for style in others} == set(OKABE_ITO)
    assert all(style.marker and style.color != TD3_STYLE.color for style in others)
    # up to 196 variants besides TD3 the triples stay distinct
    many = palette([f"v{i}" for i in range(196)])
    assert len({triple(style) for style in many.values()}) == 196


def test_a_leave_one_out_study_has_seven_colours_and_seven_markers():
    styles = palette(expand_preset("leave-one-out"))
    assert len(styles) == 7
    assert len({style.color for style in styles.values()}) == 7
    assert len({style.marker for style in styles.values()}) == 7
    assert {style.linestyle for style in styles.values()} == {"-"}


@pytest.mark.parametrize("variants", [["td3"], ["no_replay_buffer", "td3"], FACTORIAL, ["ddpg", *FACTORIAL[::-1]]])
def test_td3_is_always_black_solid_and_unmarked(variants):
    assert palette(variants)["td3"] == TD3_STYLE
    assert triple(TD3_STYLE) == ("#000000", "-", "")


@pytest.mark.parametrize("n", [7, 12, 64])
def test_no_performance_profile_hides_another(n):
    """Identical profiles (every variant's runs alike): each is drawn, in its own style, narrower than the one before,
    its markers at points of its own."""
    variants = FACTORIAL[:n]
    styles = palette(variants)
    taus = np.linspace(-1500.0, -100.0, 101)
    profile = (np.linspace(-1400.0, -150.0, 10)[:, None] > taus[None, :]).mean(axis=0)
    fig, ax = plt.subplots()
    try:
        lines = draw_performance_profiles(ax, {v: profile for v in variants}, None, taus, styles)
        assert [line.get_label() for line in lines] == variants
        drawn = [(to_hex(line.get_color()), line.get_linestyle(), line.get_marker()) for line in lines]
        assert drawn == [(style.color.lower(), style.linestyle, style.marker) for style in styles.values()]
        assert len(set(drawn)) == n
        widths = [line.get_linewidth() for line in lines]
        assert all(later < earlier for earlier, later in itertools.pairwise(widths))
        assert all(line.get_visible() and np.array_equal(line.get_ydata(), profile) for line in lines)
        step = lines[0].get_markevery()[1]
        assert step > 1 and {line.get_markevery()[1] for line in lines} == {step}
        assert len({line.get_markevery()[0] for line in lines}) == min(n, step)  # markers at points of their own
    finally:
        plt.close(fig)


def test_the_iqm_caption_at_two_seeds_claims_no_brackets_and_says_n():
    caption = iqm_caption(10_000, [2] * 7)
    assert "No IQM brackets" in caption and "n = 2 seeds" in caption and f"{MIN_RUNS} or more" in caption
    assert "stratified-bootstrap CI" not in caption


def test_the_iqm_caption_at_ten_seeds_names_the_bootstrap_and_n():
    assert iqm_caption(10_000, [10] * 7) == (
        "IQM brackets: IQM, 95% stratified-bootstrap CI, 10,000 resamples, n = 10 seeds (effect sizes, not corrected)."
    )


def test_the_iqm_caption_with_some_variants_short_of_runs_says_which_have_brackets():
    caption = iqm_caption(10_000, [10, 10, 3])
    assert caption.startswith(f"IQM brackets only where a variant has {MIN_RUNS}+ seeds") and "n = 3-10 seeds" in caption


def test_the_band_captions_say_n_and_claim_no_band_with_too_few_runs():
    assert curve_band(2_000, [2, 2]) == "each run (thin) and their IQM, n = 2 runs per variant: no band, too few runs"
    assert profile_band(2_000, [2, 2]) == f"no bands: n = 2 runs per variant, fewer than {MIN_RUNS}"
    assert profile_band(2_000, [10, 10]) == "95% stratified-bootstrap bands, 2,000 resamples"
    assert curve_band(2_000, [10, 10]).startswith("IQM over runs, 95% stratified-bootstrap band (2,000 resamples)")
    assert curve_band(2_000, [10, 3]).endswith("; n = 3-10 runs per variant")


def _line_figure():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [0.0, 1.0, 0.5], color=OKABE_ITO[0])
    ax.fill_between([0, 1, 2], [-0.5, 0.5, 0.0], [0.5, 1.5, 1.0], color=OKABE_ITO[1], alpha=0.3)
    return fig


def test_a_saved_figure_is_an_indexed_png_and_the_same_figure_gives_the_same_bytes(tmp_path):
    save_figure(_line_figure(), tmp_path / "a.png")
    save_figure(_line_figure(), tmp_path / "b.png")
    with Image.open(tmp_path / "a.png") as image:
        assert image.mode == "P" and len(image.getcolors(256) or []) <= 256
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_a_long_title_is_wrapped_to_the_figure_width():
    title = "Pendulum-v1: learning curves (IQM over runs, 95% stratified-bootstrap band (2,000 resamples) where ..."
    lines = wrapped_title(title, 6.5).splitlines()
    assert len(lines) == 2 and max(map(len, lines)) <= 71
    assert wrapped_title("Hopper-v5: value overestimation", 19.5) == "Hopper-v5: value overestimation"


def test_the_curves_legend_lies_below_the_panels_not_inside_one(tmp_path):
    steps = np.arange(5.0)
    names = [f"variant_{i}_with_a_long_factorial_name" for i in range(12)]
    curves = {name: CurveEstimate(steps, steps * i, None, np.vstack([steps * i] * 3)) for i, name in enumerate(names)}
    with mock.patch("sb3_ablation.study.render.figures.save_figure") as save:
        plot_curve_panels("t", [Panel("return", "y", curves)], palette(names), tmp_path / "c.png")
    fig = save.call_args.args[0]
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [text.get_text() for text in legend.get_texts()] == [f"{name} (n=3)" for name in names]
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).y1 <= fig.axes[0].get_tightbbox(renderer).y0
    plt.close(fig)


def test_the_baseline_is_drawn_on_top_and_named_and_the_profiles_legend_is_outside(tmp_path, monkeypatch):
    from sb3_ablation.study.render import figures

    variants = ["td3", "no_replay_buffer", "no_clipped_double_q"]
    styles = palette(variants)
    taus = np.linspace(-1500.0, -100.0, 51)
    profile = (np.linspace(-1400.0, -150.0, 10)[:, None] > taus[None, :]).mean(axis=0)
    shown = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: shown.setdefault("fig", fig))
    figures.plot_performance_profiles("t", {v: profile for v in variants}, None, taus, styles, "x", tmp_path / "p.png")
    (ax,) = shown["fig"].axes
    try:
        by_label = {line.get_label(): line for line in ax.lines}
        assert by_label["td3"].get_zorder() > max(by_label[v].get_zorder() for v in variants[1:])
        legend = ax.get_legend()
        assert [text.get_text() for text in legend.get_texts()] == ["td3: the baseline", *variants[1:]]
        shown["fig"].canvas.draw()
        box, axes_box = legend.get_window_extent(), ax.get_window_extent()
        assert box.x0 >= axes_box.x1  # beside the axes, over no data
    finally:
        plt.close(shown["fig"])


def test_curve_panels_draw_the_baseline_on_top_named_and_shade_the_warm_up(tmp_path, monkeypatch):
    from sb3_ablation.study.analyse.report_model import CurveEstimate
    from sb3_ablation.study.render import figures
    from sb3_ablation.study.render.report import warm_up_steps

    steps = np.arange(0, 20_001, 1_000)
    runs = np.vstack([np.linspace(300.0, 0.0, len(steps))] * 2)
    curves = {v: CurveEstimate(steps, runs[0], None, runs) for v in ("td3", "no_clipped_double_q")}
    shown = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: shown.setdefault("fig", fig))
    manifest = {"hyperparams": {"Pendulum-v1": {"ablatable_td3": {"learning_starts": 10_000}}}}
    panel = figures.Panel(
        "overestimation", "Q", curves, zero_line=True, untrained_until=warm_up_steps(manifest, "Pendulum-v1")
    )
    figures.plot_curve_panels("t", [panel], palette(list(curves)), tmp_path / "c.png")
    ax = shown["fig"].axes[0]
    try:
        labelled = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
        assert set(labelled) == {"td3: the baseline (n=2)", "no_clipped_double_q (n=2)"}
        assert labelled["td3: the baseline (n=2)"].get_zorder() > labelled["no_clipped_double_q (n=2)"].get_zorder()
        (span,) = ax.patches
        assert (span.get_x(), span.get_x() + span.get_width()) == (0.0, 10_000.0)  # the warm-up, shaded
        assert [text.get_text() for text in ax.texts] == ["warm-up: untrained"]
    finally:
        plt.close(shown["fig"])
