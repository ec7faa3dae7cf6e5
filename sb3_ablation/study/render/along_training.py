"""The report's section "Effects along training" (:mod:`~sb3_ablation.study.analyse.along_training`): per task one
sentence per comparison (where in training the simultaneous 95% band of the mean return difference lies above or
below 0), one figure with a panel per variant (the difference with its pointwise and simultaneous bands), and each
comparison's part of report.json (``envs.<env>.along_training``). Descriptive: every sentence is an estimate with its
band, never a verdict's word.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_ablation.study.analyse.along_training import AHEAD, ALONG_ALPHA, BEHIND
from sb3_ablation.study.render.figures import save_figure, wrapped_title
from sb3_ablation.study.render.format import fmt, fmt_p
from sb3_ablation.study.render.json_parts import number
from sb3_ablation.study.render.section_type import Section
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.along_training import AlongTraining, EnvAlongTraining, Span
    from sb3_ablation.study.analyse.report_model import ReportModel

TITLE = "Effects along training"
#: the spans of one direction a sentence names before it counts the rest
MAX_SPANS = 3
LEVEL = f"{1 - ALONG_ALPHA:.0%}"
#: what every number of the section is, as its sentences and report.json say
DESCRIPTIVE = "descriptive: an estimate with its band, not a verdict of the plan"


def _signed(value: float) -> str:
    return "n/a" if not math.isfinite(value) else ("+" if value > 0 else "") + fmt(value)


def _steps(value: int) -> str:
    return f"{value:,}"


def _span_text(span: Span) -> str:
    if span.first == span.last:
        return _steps(span.first)
    return f"{_steps(span.first)}-{_steps(span.last)}"


def _direction_text(direction: str, spans: list[Span], counted: int, evaluations: int) -> str:
    """One direction's spans: ``ahead from 25,000 to 300,000 steps`` (one span), ``ahead at 25,000, 40,000-60,000 and
    295,000 steps (5 of 61 evaluations)`` (a few), ``ahead in 5 separate spans between 25,000 and 295,000 steps (12 of
    61 evaluations)`` (more)."""
    if len(spans) == 1:
        only = spans[0]
        where = f"at {_steps(only.first)}" if only.first == only.last else f"from {_steps(only.first)} to {_steps(only.last)}"
        return f"{direction} {where} steps"
    share = f"({counted} of {evaluations} evaluations)"
    if len(spans) <= MAX_SPANS:
        named = [_span_text(span) for span in spans]
        return f"{direction} at {', '.join(named[:-1])} and {named[-1]} steps {share}"
    first, last = _steps(spans[0].first), _steps(spans[-1].last)
    return f"{direction} in {len(spans)} separate spans between {first} and {last} steps {share}"


def where_phrase(c: AlongTraining) -> str:
    """
    Where in training the simultaneous band excludes 0, in words: ``ahead from 25,000 to 300,000 steps``, ``behind at
    5,000 steps; ahead at 25,000, 185,000 and 295,000 steps (3 of 61 evaluations)``, ``not detected at any step
    (simultaneous 95% band)``, or that the seeds are too few for the band to exclude 0 anywhere.

    :param c: the comparison along training
    """
    if not c.attainable:
        return (
            f"cannot be detected at any step with {len(c.seeds)} seeds (the sign flips' smallest p, "
            f"{fmt_p(c.smallest_p)}, is above {fmt_p(c.alpha)})"
        )
    spans = c.spans()
    if not spans:
        return f"not detected at any step (simultaneous {LEVEL} band)"
    excluded = c.bands.excluded()
    counts = {AHEAD: int(np.sum(excluded > 0)), BEHIND: int(np.sum(excluded < 0))}
    directions = dict.fromkeys(span.direction for span in spans)  # in the order they first appear
    return "; ".join(
        _direction_text(direction, [s for s in spans if s.direction == direction], counts[direction], len(excluded))
        for direction in directions
    )


def _at(c: AlongTraining, i: int) -> str:
    """The mean difference at step ``i`` with its simultaneous band."""
    low, high = c.bands.simultaneous[:, i]
    return f"{_signed(float(c.bands.mean[i]))} [{_signed(float(low))}, {_signed(float(high))}]"


def sentence(c: AlongTraining) -> str:
    """
    The comparison's sentence: where in training its simultaneous band excludes 0 (:func:`where_phrase`), and the
    largest mean difference there (or, where it excludes 0 nowhere, the mean difference at the last evaluation), with
    its simultaneous band, labelled descriptive.

    :param c: the comparison along training
    """
    head = f"{c.variant} - {c.baseline}, evaluation return ({len(c.seeds)} seeds): {where_phrase(c)}"
    excluded = c.bands.excluded() != 0
    if c.attainable and excluded.any():
        i = max((i for i in range(len(c.timesteps)) if excluded[i]), key=lambda i: abs(c.bands.mean[i]))
        detail = f"largest mean difference {_at(c, i)} at {_steps(int(c.timesteps[i]))} steps"
    else:
        i = len(c.timesteps) - 1
        detail = f"mean difference at {_steps(int(c.timesteps[i]))} steps {_at(c, i)}"
    return f"{head}; {detail} (simultaneous {LEVEL} band; {DESCRIPTIVE})."


def comparison_json(c: AlongTraining) -> dict[str, Any]:
    """One comparison along training as plain JSON (the key ``envs.<env>.along_training.comparisons.<variant>``)."""
    b = c.bands
    excluded = b.excluded()
    return {
        "variant": c.variant,
        "baseline": c.baseline,
        "seeds": list(c.seeds),
        "steps": [int(t) for t in c.timesteps],
        "mean": [number(v) for v in b.mean],
        "estimate": [number(v) for v in c.estimate],
        "estimate_name": c.estimate_name,
        "pointwise": {"low": [number(v) for v in b.pointwise[0]], "high": [number(v) for v in b.pointwise[1]]},
        "simultaneous": {
            "low": [number(v) for v in b.simultaneous[0]],
            "high": [number(v) for v in b.simultaneous[1]],
            "critical_value": number(b.critical),
        },
        "alpha": number(c.alpha),
        "p_any_step": number(b.p_any),
        "sign_patterns": b.patterns,
        "exact": b.exact,
        "excluded_steps": {
            "above": [int(t) for t, side in zip(c.timesteps, excluded, strict=True) if side > 0],
            "below": [int(t) for t, side in zip(c.timesteps, excluded, strict=True) if side < 0],
        },
        "spans": [{"direction": s.direction, "from": s.first, "to": s.last} for s in c.spans()],
        "where": where_phrase(c),
        "sentence": sentence(c),
        "descriptive": DESCRIPTIVE,
    }


def along_training_json(model: ReportModel, env: str) -> dict[str, Any] | None:
    """
    An env's effects along training as plain JSON (``envs.<env>.along_training``; null: not computed).

    :param model: the report model
    :param env: the task
    """
    found = next((e for e in model.along_training if e.env == env), None)
    if found is None:
        return None
    return {
        "metric": found.metric,
        "comparisons": {variant: comparison_json(c) for variant, c in found.comparisons.items()},
        "left_out": list(found.left_out),
        "left_out_why": _left_out_text(found) or None,
    }


def _left_out_text(e: EnvAlongTraining) -> str:
    if not e.left_out:
        return ""
    if e.factorial:
        which = (
            f"the design's {len(e.left_out)} other cells"
            if e.comparisons
            else f"this design: none of its {len(e.left_out)} cells besides the baseline removes one switch from it"
        )
        return (
            f"Not computed for {which}. Along training, each cell that removes one switch from the baseline is "
            "compared with it (the leave-one-out comparisons inside the design); a cell that changes several switches "
            "answers another question."
        )
    return f"Not computed for {', '.join(e.left_out)}: fewer than 2 seeds paired with the baseline, or no common step."


METHOD = (
    "Where in training does removing a component change the return? For each comparison with the baseline and each "
    "evaluation step: the mean difference of the evaluation return over the seeds (variant - baseline, paired by "
    f"seed), with a pointwise {LEVEL} interval (darker) and a simultaneous {LEVEL} band over every step at once "
    "(lighter), both from sign flips of whole seeds (each seed's difference curve flipped at once, which keeps the "
    "correlation between steps; a studentized max-t over the steps). The sentences name the steps where the "
    "simultaneous band excludes 0: under the paired design's null (arms exchangeable within a seed) the band "
    f"misses 0 somewhere in at most {ALONG_ALPHA:.0%} of studies (docs/calibration.md), so such steps are a "
    "finding about the curve at that level, over all steps together; a pointwise interval that excludes 0 at one step "
    "is not. These bands are descriptive: the plan's verdicts are on its declared outcomes (the tables above), and "
    "nothing here is a verdict of the plan. The dotted line is the plan's estimate at each step."
)


def _figure(e: EnvAlongTraining) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
        plot_along_training(e, path)

    return draw


def _drawable(values: Any) -> np.ndarray:
    """The values with the non-finite ones as NaN, which matplotlib leaves out."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def plot_along_training(e: EnvAlongTraining, path: Path) -> None:
    """
    One panel per variant: the mean return difference over training with its pointwise and simultaneous bands, the
    plan's estimate (dotted), 0 (dashed), and the steps where the simultaneous band excludes 0 as a bar along the x
    axis (green: above 0, orange: below).

    :param e: the env's comparisons along training
    :param path: the PNG to write
    """
    import matplotlib.pyplot as plt

    panels = list(e.comparisons.values())
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 3.8 * rows), squeeze=False, sharex=True)
    for ax, c in zip(axes.flat, panels, strict=False):
        b, steps = c.bands, c.timesteps
        # a band too few seeds cannot bound is infinite: left undrawn (it would stretch the axis to overflow)
        simultaneous, pointwise = ([_drawable(edge) for edge in band] for band in (b.simultaneous, b.pointwise))
        ax.fill_between(steps, *simultaneous, color="#0072B2", alpha=0.2, linewidth=0, label=f"simultaneous {LEVEL} band")
        ax.fill_between(steps, *pointwise, color="#0072B2", alpha=0.35, linewidth=0, label=f"pointwise {LEVEL} interval")
        ax.plot(steps, b.mean, color="#0072B2", linewidth=1.8, label="mean difference")
        ax.plot(steps, c.estimate, color="black", linewidth=1.0, linestyle=":", label=c.estimate_name)
        ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--")
        # the steps where the simultaneous band excludes 0: a bar along the x axis, half an evaluation either side
        half = float(np.min(np.diff(steps))) / 2 if len(steps) > 1 else 0.5
        for span in c.spans():
            color = "#009E73" if span.direction == AHEAD else "#D55E00"
            label = f"band {'above' if span.direction == AHEAD else 'below'} 0"
            ax.axvspan(span.first - half, span.last + half, ymax=0.05, color=color, alpha=0.9, linewidth=0, label=label)
        ax.set_title(wrapped_title(f"{c.variant} - {c.baseline} (n={len(c.seeds)}): {where_phrase(c)}", 5.5), fontsize="small")
        ax.set_xlabel("environment steps")
        ax.set_ylabel("return difference")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(
        wrapped_title(f"{e.env}: effects along training, variant - baseline (mean with {LEVEL} bands)", 5.5 * columns)
    )
    fig.tight_layout()
    handles: dict[str, Any] = {}
    for ax in axes.flat[: len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=3, fontsize="small")
    save_figure(fig, path)


def along_training_sections(model: ReportModel) -> list[Section]:
    """
    The section "Effects along training" (none where no task has a comparison along training).

    :param model: the report model (its :attr:`~sb3_ablation.study.analyse.report_model.ReportModel.along_training`)
    :return: one section, or none
    """
    envs = [e for e in model.along_training if e.comparisons or e.left_out]
    if not envs:
        return []
    lines = [METHOD, ""] if any(e.comparisons for e in envs) else []
    figures: dict[str, Callable[[Path], None]] = {}
    for e in envs:
        lines += [f"**{e.env}**", ""]
        if e.comparisons:
            name = f"{safe_name(e.env)}_along_training.png"
            figures[name] = _figure(e)
            lines += [f"- {sentence(c)}" for c in e.comparisons.values()]
            lines += ["", f"![{e.env}: effects along training](figures/{name})", ""]
        note = _left_out_text(e)
        if note:
            lines += [note, ""]
    json = {"method": METHOD, "alpha": ALONG_ALPHA, "metric": envs[0].metric, "descriptive": DESCRIPTIVE}
    return [Section(TITLE, lines, json, figures)]


__all__ = ["along_training_json", "along_training_sections", "plot_along_training", "sentence", "where_phrase"]
