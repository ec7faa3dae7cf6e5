"""The figures of a study report (PNG, matplotlib with the Agg backend): curves over training, interval estimates and
performance profiles. rliable draws what it has a plot for (sample-efficiency curves with CIs, performance profiles);
the rest is plain matplotlib.

Each variant has one style in every figure of a report (:func:`palette`): a colour of Okabe and Ito's colour-blind-safe
palette crossed with a line style and a marker, so up to 196 variants (64 in a full factorial) have distinct
(colour, line style, marker) triples, and full TD3 is always black, solid and unmarked. Where curves may coincide (a
performance profile of runs that all failed alike), each is drawn narrower than the one before and its markers fall at
other points, so none hides another. The captions say how many runs a band or bracket stands on (:func:`iqm_caption`,
:func:`curve_band`, :func:`profile_band`), and claim no interval where there are too few runs for one.
"""

# matplotlib.pyplot and rliable's plot_utils (which imports seaborn) are imported in the functions that draw: heavy
# plotting imports (~50 ms) that a report model read without its figures does not need.

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import atomic_path
from sb3_ablation.study.analyse.report_model import CurveEstimate
from sb3_ablation.study.analyse.statistics import MIN_RUNS, VariantStats
from sb3_ablation.study.render.tables import bootstrap_method

#: Okabe and Ito's colour-blind-safe qualitative palette (Wong, Nature Methods 8: 441, 2011), its black kept for TD3
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442")
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: the variant every report draws alike: full TD3
TD3 = "td3"


@dataclass(frozen=True)
class VariantStyle:
    """
    How one variant is drawn in every figure of a report.

    :param color: its colour (hex)
    :param linestyle: matplotlib line style of its curves
    :param marker: matplotlib marker of its curves (``""``: none)
    :param linewidth: width of its curves
    """

    color: str
    linestyle: str
    marker: str
    linewidth: float = 1.8


#: full TD3's style, the same in every report: black, solid, thicker, no marker (no other variant is black)
TD3_STYLE = VariantStyle("#000000", "-", "", 2.4)


def palette(variants: Sequence[str]) -> dict[str, VariantStyle]:
    """
    One style per variant, in the order given: ``td3`` gets :data:`TD3_STYLE`; the others, in turn, each colour of
    :data:`OKABE_ITO` with the solid line and a marker of its own, then the same colours dashed with the markers shifted
    by one, dotted with them shifted by two, ... Two variants share a colour only 7 apart, and then differ in line
    style or marker; the (colour, line style, marker) triples are distinct up to 196 variants besides TD3.

    :param variants: the variants, in the report's order
    :return: variant -> its style
    """
    styles, i = {}, 0
    for variant in variants:
        if variant == TD3:
            styles[variant] = TD3_STYLE
            continue
        block, color = divmod(i, len(OKABE_ITO))
        styles[variant] = VariantStyle(
            OKABE_ITO[color], LINESTYLES[block % len(LINESTYLES)], MARKERS[(color + block) % len(MARKERS)]
        )
        i += 1
    return styles


#: the baseline's curves are drawn over every other variant's
BASELINE_ZORDER = 10


def _label(variant: str, n_runs: int | None = None) -> str:
    """A curve's legend entry: the variant, ``td3`` named as the baseline, and its runs."""
    name = f"{variant}: the baseline" if variant == TD3 else variant
    return name if n_runs is None else f"{name} (n={n_runs})"


def _markevery(n_points: int, rank: int, n_curves: int, marks: int = 8) -> tuple[int, int]:
    """
    Where the ``rank``-th of ``n_curves`` curves puts its markers: every ``step``-th point (about ``marks`` per curve),
    from an offset of its own, so the markers of curves that coincide fall at different points.
    """
    step = max(1, n_points // marks)
    return (rank * step // max(n_curves, 1)) % step, step


def _stacked_widths(n_curves: int, widest: float = 3.4, narrowest: float = 1.2) -> list[float]:
    """Line widths in drawing order, each narrower than the one before: a curve drawn over another leaves its edges."""
    if n_curves == 1:
        return [2.0]
    return [widest - (widest - narrowest) * rank / (n_curves - 1) for rank in range(n_curves)]


def _count_text(counts: Iterable[int]) -> str:
    """``"10"``, or ``"3-10"`` where the variants have different counts."""
    values = sorted(set(counts))
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def iqm_caption(reps: int, counts: Sequence[int]) -> str:
    """
    The caption of an env's IQM brackets: the bootstrap and ``n`` where every variant has :data:`MIN_RUNS` runs or
    more; with fewer, that there are no brackets (or only for some variants), and why.

    :param reps: bootstrap resamples
    :param counts: each variant's number of runs (seeds)
    """
    n = _count_text(counts)
    if min(counts) >= MIN_RUNS:
        return f"IQM brackets: {bootstrap_method(reps, n)} (effect sizes, not corrected)."
    if max(counts) < MIN_RUNS:
        return (
            f"No IQM brackets: n = {n} seeds per variant, too few for a bootstrap CI (it needs {MIN_RUNS} or more); "
            "the tables show each seed's value."
        )
    return (
        f"IQM brackets only where a variant has {MIN_RUNS}+ seeds: {bootstrap_method(reps, n)} (effect sizes, not "
        "corrected); the others show each seed's value."
    )


def curve_band(reps: int, counts: Sequence[int]) -> str:
    """
    What a figure of curves over training shows (title and caption): IQM and bootstrap band, or each run, with ``n``
    where any variant has fewer than :data:`MIN_RUNS` runs.

    :param reps: bootstrap resamples of the bands
    :param counts: each drawn variant's number of runs
    """
    if max(counts) < MIN_RUNS:
        return f"each run (thin) and their IQM, n = {_count_text(counts)} runs per variant: no band, too few runs"
    band = (
        f"IQM over runs, 95% stratified-bootstrap band ({reps:,} resamples) where a variant has {MIN_RUNS}+ runs, "
        "else each run"
    )
    return band if min(counts) >= MIN_RUNS else f"{band}; n = {_count_text(counts)} runs per variant"


def profile_band(reps: int, counts: Sequence[int]) -> str:
    """
    The bands of a performance profile, as its caption says them: bootstrap bands where every variant has
    :data:`MIN_RUNS` runs or more (as :func:`~sb3_ablation.study.analyse.statistics.performance_profile` computes
    them), else none, with ``n``.

    :param reps: bootstrap resamples
    :param counts: each drawn variant's number of runs
    """
    if min(counts) >= MIN_RUNS:
        return f"95% stratified-bootstrap bands, {reps:,} resamples"
    return f"no bands: n = {_count_text(counts)} runs per variant, fewer than {MIN_RUNS}"


def save_figure(fig, path: Path) -> None:
    """
    Write a figure atomically and close it, as a PNG of at most 256 colours: a report's plots need no more, and the
    committed studies' figures take a third of the space (an overestimation figure 520 KB -> 170 KB, alike to the eye).
    """
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        # no dithering: flat colours and antialiased lines stay flat, and the same figure gives the same bytes
        indexed = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    with atomic_path(path) as tmp:
        indexed.save(tmp, format="png", optimize=True)


def wrapped_title(title: str, width_inches: float) -> str:
    """A figure title broken into lines that fit ``width_inches`` (at the default title size, ~11 characters an inch)."""
    return textwrap.fill(title, width=max(40, int(11 * width_inches)))


@dataclass
class Panel:
    """One plot of a figure of curves: a metric of every variant over training."""

    title: str
    ylabel: str
    curves: dict[str, CurveEstimate]
    zero_line: bool = False
    xlabel: str = "environment steps"
    #: the steps before training starts (the warm-up of random actions, an untrained critic), shaded (0: none)
    untrained_until: int = 0


def plot_curve_panels(suptitle: str, panels: list[Panel], styles: dict[str, VariantStyle], path: Path) -> None:
    """
    Curves over training, one panel per metric. With a CI (enough runs) a curve is rliable's sample-efficiency curve
    (IQM with a 95% stratified-bootstrap band); without, the IQM as a line and each run as a thin line, no band. Each
    variant in its style (:func:`palette`), its markers at points of its own.

    :param styles: variant -> its style (:func:`palette`)
    """
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 4.3 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for rank, (variant, curve) in enumerate(panel.curves.items()):
            style = styles[variant]
            drawn = np.isfinite(curve.iqm)  # a window where no run logged a value leaves a gap, not a broken line
            if curve.ci is not None:
                plot_utils.plot_sample_efficiency_curve(
                    curve.timesteps[drawn],
                    {variant: curve.iqm[drawn]},
                    {variant: curve.ci[:, drawn]},
                    colors={variant: style.color},
                    ax=ax,
                    marker=style.marker,
                    linewidth=style.linewidth,
                    labelsize="medium",
                    ticklabelsize="small",
                    xlabel=panel.xlabel,
                    ylabel=panel.ylabel,
                )
            else:
                ax.plot(curve.timesteps[drawn], curve.per_run[:, drawn].T, color=style.color, linewidth=0.7, alpha=0.5)
                ax.plot(curve.timesteps[drawn], curve.iqm[drawn], color=style.color, marker=style.marker)
            line = ax.lines[-1]
            line.set(linestyle=style.linestyle, linewidth=style.linewidth, markersize=5, label=_label(variant, curve.n_runs))
            line.set_markevery(_markevery(int(drawn.sum()), rank, len(panel.curves)))
            if variant == TD3:  # the baseline every other curve is read against: on top of them
                line.set_zorder(BASELINE_ZORDER)
        if panel.zero_line:
            ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--")
        if panel.untrained_until > 0:  # its values there measure an untrained network, not what training does
            ax.axvspan(0, panel.untrained_until, color="grey", alpha=0.2, linewidth=0, zorder=0)
            ax.text(0.01, 0.98, "warm-up: untrained", transform=ax.transAxes, fontsize="small", va="top", color="dimgrey")
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        linthresh = _symlog_threshold(panel)
        if linthresh is not None:
            ax.set_yscale("symlog", linthresh=linthresh, linscale=1.5)
        ax.set_title(panel.title + (" (symlog scale)" if linthresh is not None else ""), fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(wrapped_title(suptitle, 6.5 * columns))
    fig.tight_layout()
    # below the panels, not inside one: a factorial's names are long and its curves fill every corner of a panel
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncols=max(1, min(columns, len(labels) // 4)),
        fontsize="small",
        title="variant (runs)",
        title_fontsize="small",
    )
    save_figure(fig, path)


def _symlog_threshold(panel: Panel, spread: float = 100.0) -> float | None:
    """
    Where a panel's y axis should turn logarithmic: when one variant's curve reaches ``spread`` times further from 0
    than the typical (median) variant's, a linear axis would flatten every other curve into a line at 0 (e.g. a
    critic diverging without target networks). :return: the typical variant's reach (linear below it), or ``None``
    """
    reaches = []
    for curve in panel.curves.values():
        values = [curve.iqm] if curve.ci is None else [curve.iqm, curve.ci]
        finite = np.concatenate([np.abs(np.ravel(v)) for v in values])
        finite = finite[np.isfinite(finite)]
        if finite.size:
            reaches.append(float(finite.max()))
    if len(reaches) < 2:
        return None
    typical = float(np.median(reaches))
    return typical if typical > 0 and max(reaches) > spread * typical else None


def plot_performance_profiles(
    title: str,
    profiles: dict[str, np.ndarray],
    cis: dict[str, np.ndarray] | None,
    taus: np.ndarray,
    styles: dict[str, VariantStyle],
    xlabel: str,
    path: Path,
) -> None:
    """
    rliable's performance profiles: the fraction of runs scoring above each threshold, with CI bands if any
    (:func:`draw_performance_profiles`).

    :param styles: variant -> its style (:func:`palette`)
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    lines = draw_performance_profiles(ax, profiles, cis, taus, styles, xlabel)
    # beside the axes, not inside: the profiles fill the panel from corner to corner
    labels = [_label(line.get_label()) for line in lines]
    ax.legend(lines, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.set_title(title, fontsize="medium")
    save_figure(fig, path)


def draw_performance_profiles(
    ax: Any,
    profiles: dict[str, np.ndarray],
    cis: dict[str, np.ndarray] | None,
    taus: np.ndarray,
    styles: dict[str, VariantStyle],
    xlabel: str = "score x",
) -> list[Any]:
    """
    Draw performance profiles on ``ax`` with rliable, each variant in its style. Profiles often coincide (e.g. where
    every run of two variants failed), so none may hide another: in the order given each line is narrower than the
    one before (an earlier one shows around a later one on top of it) and puts its markers at points of its own.

    :param ax: matplotlib axes
    :param profiles: variant -> fraction of runs above each tau
    :param cis: variant -> (2, taus) bands, or ``None``
    :param taus: the thresholds
    :param styles: variant -> its style (:func:`palette`)
    :param xlabel: the x axis' label
    :return: the profiles' lines, in the order of ``profiles``
    """
    from rliable import plot_utils

    plot_utils.plot_performance_profiles(
        profiles,
        taus,
        performance_profile_cis=cis,
        colors={variant: styles[variant].color for variant in profiles},
        linestyles={variant: styles[variant].linestyle for variant in profiles},
        ax=ax,
        xlabel=xlabel,
        ylabel="fraction of runs with score > x",
        labelsize="medium",
        ticklabelsize="small",
    )
    by_label = {line.get_label(): line for line in ax.lines}
    lines = [by_label[variant] for variant in profiles]
    for rank, (line, width) in enumerate(zip(lines, _stacked_widths(len(lines)), strict=True)):
        style = styles[line.get_label()]
        zorder = BASELINE_ZORDER if line.get_label() == TD3 else 2 + rank / len(lines)
        line.set(marker=style.marker, markersize=5, linewidth=width, zorder=zorder)
        line.set_markevery(_markevery(len(taus), rank, len(lines)))
    return lines


def plot_intervals(
    title: str, stats: dict[str, VariantStats], styles: dict[str, VariantStyle], xlabel: str, path: Path, names=("IQM", "mean")
) -> None:
    """
    IQM and mean with their 95% CIs per variant: the layout of rliable's ``plot_interval_estimates``, drawn here
    because that one needs a CI for every variant (with too few runs we draw each run as a dot, in the variant's
    marker, instead), and fixes the figure width and the x label's position, which cut off long variant names.

    :param styles: variant -> its style (:func:`palette`)
    """
    import matplotlib.pyplot as plt

    variants = list(stats)
    rows = np.arange(len(variants))[::-1]  # first variant on top
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.2 + 0.45 * len(variants)), sharey=True)
    for ax, name in zip(axes, names, strict=True):
        for row, variant in zip(rows, variants, strict=True):
            s = stats[variant]
            point, ci = (s.iqm, s.iqm_ci) if name == "IQM" else (s.mean, s.mean_ci)
            if ci is not None:
                ax.barh(row, ci[1] - ci[0], left=ci[0], height=0.6, color=styles[variant].color, alpha=0.75)
            else:
                style = styles[variant]
                ax.scatter(
                    s.per_seed, np.full(len(s.per_seed), row), color=style.color, marker=style.marker or "o", s=18, zorder=3
                )
            ax.vlines(point, row - 0.3, row + 0.3, color="black", linewidth=1.5)
        ax.set_title(f"{name} (bar: 95% CI, or dots: runs; line: estimate)", fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(rows, variants)
    axes[0].set_ylabel("variant")
    fig.suptitle(wrapped_title(title, 10))
    fig.tight_layout()
    save_figure(fig, path)
