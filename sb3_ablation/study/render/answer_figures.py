"""The answer's figure of one task condition: a forest plot of what removing each component did to the return, with
the band its seeds could not resolve and the TD3 paper's value where the paper has one (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sb3_ablation.study.render.figures import OKABE_ITO, save_figure, wrapped_title


@dataclass(frozen=True)
class ForestRow:
    """
    One component's comparison with full TD3, on the removal convention (removed minus TD3).

    :param name: the component
    :param effect: the estimate
    :param ci: its 95% interval (``None``: none)
    :param mde: the smallest difference its seeds detect with 80% power at the plan's boundary (``None``: unknown)
    :param verdict: the verdict as the report shows it
    :param paper: the TD3 paper's Table 2 difference for the component (``None``: the paper has none)
    """

    name: str
    effect: float
    ci: tuple[float, float] | None
    mde: float | None
    verdict: str
    paper: float | None = None


def plot_forest(title: str, rows: Sequence[ForestRow], xlabel: str, path: Path) -> None:
    """
    Draw the components' effects as a forest plot: per row the estimate (dot) and its 95% interval (line), the band
    from -MDE to +MDE shaded (a true effect inside it these seeds would miss more often than one time in five), the
    paper's difference as a cross, and the verdict as the row's label; first component on top.

    :param title: the figure's title (the task condition)
    :param rows: the components, in the order to show them
    :param xlabel: the x axis' label (the outcome and its units)
    :param path: the PNG to write
    """
    if not rows:
        raise ValueError(f"{path}: a forest plot needs at least one row")
    import matplotlib.pyplot as plt

    positions = np.arange(len(rows))[::-1]
    fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.55 * len(rows)))
    for y, row in zip(positions, rows, strict=True):
        if row.mde is not None and np.isfinite(row.mde):
            ax.fill_betweenx([y - 0.35, y + 0.35], -row.mde, row.mde, color="0.85", linewidth=0, zorder=1)
        if row.ci is not None:
            ax.hlines(y, row.ci[0], row.ci[1], color=OKABE_ITO[0], linewidth=2.2, zorder=2)
        ax.plot([row.effect], [y], "o", color=OKABE_ITO[0], markersize=6, zorder=3)
        if row.paper is not None:
            ax.plot([row.paper], [y], "x", color=OKABE_ITO[3], markersize=9, markeredgewidth=2.2, zorder=4)
    ax.axvline(0, color="black", linewidth=0.8, zorder=0)
    ax.set_yticks(positions, [f"{row.name}\n{row.verdict}" for row in rows], fontsize="small")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    legend = "dot and line: estimate and 95% interval; grey: ±MDE, what these seeds could not resolve"
    if any(row.paper is not None for row in rows):
        legend += "; cross: the TD3 paper's Table 2 (1M steps, [400, 300] networks)"
    ax.set_title(wrapped_title(legend, 8.5), fontsize="small")
    fig.suptitle(wrapped_title(title, 8.5))
    fig.tight_layout()
    save_figure(fig, path)
