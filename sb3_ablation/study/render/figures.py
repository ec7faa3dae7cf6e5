"""The figures of a study report (PNG, matplotlib with the Agg backend): curves over training, interval estimates and
performance profiles. rliable draws what it has a plot for (sample-efficiency curves with CIs, performance profiles);
the rest is plain matplotlib with seaborn's colorblind palette."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import atomic_path
from sb3_ablation.study.analyse.statistics import VariantStats


def palette(variants: Sequence[str]) -> dict[str, Any]:
    """One color per variant: seaborn's colorblind palette (up to 10 variants), else evenly spaced hues."""
    import seaborn as sns

    name = "colorblind" if len(variants) <= 10 else "husl"
    return dict(zip(variants, sns.color_palette(name, n_colors=max(len(variants), 1)), strict=False))


def save_figure(fig, path: Path) -> None:
    """Write a figure atomically and close it."""
    import matplotlib.pyplot as plt

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)


@dataclass
class CurveEstimate:
    """A metric over training for one variant: the IQM over runs with its CI (``None`` with too few runs)."""

    timesteps: np.ndarray
    iqm: np.ndarray
    ci: np.ndarray | None  # (2, timesteps)
    per_run: np.ndarray  # (runs, timesteps)

    @property
    def n_runs(self) -> int:
        return self.per_run.shape[0]


@dataclass
class Panel:
    """One plot of a figure of curves: a metric of every variant over training."""

    title: str
    ylabel: str
    curves: dict[str, CurveEstimate]
    zero_line: bool = False
    xlabel: str = "environment steps"


def plot_curve_panels(suptitle: str, panels: list[Panel], colors: dict[str, Any], path: Path) -> None:
    """
    Curves over training, one panel per metric. With a CI (enough runs) a curve is rliable's sample-efficiency curve
    (IQM with a 95% stratified-bootstrap band); without, the IQM as a line and each run as a thin line, no band.
    """
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 4.3 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for variant, curve in panel.curves.items():
            drawn = np.isfinite(curve.iqm)  # a window where no run logged a value leaves a gap, not a broken line
            if curve.ci is not None:
                plot_utils.plot_sample_efficiency_curve(
                    curve.timesteps[drawn],
                    {variant: curve.iqm[drawn]},
                    {variant: curve.ci[:, drawn]},
                    colors=colors,
                    ax=ax,
                    marker="",
                    linewidth=1.8,
                    labelsize="medium",
                    ticklabelsize="small",
                    xlabel=panel.xlabel,
                    ylabel=panel.ylabel,
                )
            else:
                ax.plot(curve.timesteps[drawn], curve.per_run[:, drawn].T, color=colors[variant], linewidth=0.7, alpha=0.5)
                ax.plot(curve.timesteps[drawn], curve.iqm[drawn], color=colors[variant], linewidth=1.8)
            ax.lines[-1].set_label(f"{variant} (n={curve.n_runs})")
        if panel.zero_line:
            ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        linthresh = _symlog_threshold(panel)
        if linthresh is not None:
            ax.set_yscale("symlog", linthresh=linthresh, linscale=1.5)
        ax.set_title(panel.title + (" (symlog scale)" if linthresh is not None else ""), fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize="small", loc="best", title="variant (runs)", title_fontsize="small")
    fig.suptitle(suptitle)
    fig.tight_layout()
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
    colors: dict[str, Any],
    xlabel: str,
    path: Path,
) -> None:
    """rliable's performance profiles: the fraction of runs scoring above each threshold, with CI bands if any."""
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    fig, ax = plt.subplots(figsize=(8, 5))
    plot_utils.plot_performance_profiles(
        profiles,
        taus,
        performance_profile_cis=cis,
        colors=colors,
        ax=ax,
        xlabel=xlabel,
        ylabel="fraction of runs with score > x",
        labelsize="medium",
        ticklabelsize="small",
    )
    ax.legend(fontsize="small", loc="best")
    ax.set_title(title, fontsize="medium")
    save_figure(fig, path)


def plot_intervals(
    title: str, stats: dict[str, VariantStats], colors: dict[str, Any], xlabel: str, path: Path, names=("IQM", "mean")
) -> None:
    """
    IQM and mean with their 95% CIs per variant: the layout of rliable's ``plot_interval_estimates``, drawn here
    because that one needs a CI for every variant (with too few runs we draw each run as a dot instead), and fixes
    the figure width and the x label's position, which cut off long variant names.
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
                ax.barh(row, ci[1] - ci[0], left=ci[0], height=0.6, color=colors[variant], alpha=0.75)
            else:
                ax.scatter(s.per_seed, np.full(len(s.per_seed), row), color=colors[variant], s=18, zorder=3)
            ax.vlines(point, row - 0.3, row + 0.3, color="black", linewidth=1.5)
        ax.set_title(f"{name} (bar: 95% CI, or dots: runs; line: estimate)", fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(rows, variants)
    axes[0].set_ylabel("variant")
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path)
