"""The factorial section of a report: effects with verdicts and aliases, a half-normal plot, interaction plots of the
strongest pairs, which components need each other in plain words, and the smallest sufficient set."""

# matplotlib.pyplot is imported in the functions that draw: a heavy plotting import the section's text does not need.

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.plan.variants import canonical_name
from sb3_ablation.study.render.figures import OKABE_ITO, save_figure
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.json import comparison_json
from sb3_ablation.study.render.section import Section
from sb3_ablation.study.render.tables import verdict_cell
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.factorial import FactorialResult
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.report_model import HalfNormalPoints, ReportModel

EXPLANATION = (
    "Effects on the standard (Yates) scale: a **main effect** is the mean outcome with the component on minus the mean "
    "with it removed, averaged over every combination of the other components in the design. That is not "
    "leave-one-out's question (remove it from full TD3): the two agree only where the component does not interact with "
    "the others. A **two-factor interaction** A x B is half the difference between A's effect with B on and with B off "
    "(0 when they act independently; negative when removing both costs more than the two removals apart). Each effect "
    "is computed within each seed from that seed's cells and tested over the seeds; main effects are one family, "
    "two-factor interactions another, each with one family-wise alpha for `differs` and `equivalent`, the margin "
    "applied on this scale. Three-factor interactions are estimates, without verdicts."
)


def _alias_note(result: FactorialResult, word: str) -> str:
    aliases = result.aliases.get(word, ())
    return ", ".join(result.name(a) for a in aliases[:2]) + (" ..." if len(aliases) > 2 else "") if aliases else "—"


def _table(result: FactorialResult, comparisons: dict[str, Comparison], title: str) -> list[str]:
    aliased = bool(result.design.generators)
    lines = [
        f"| {title} | effect [95% CI] | p (adjusted) | verdict |" + (" aliased with |" if aliased else ""),
        "|---|---:|---:|:---|" + ("---|" if aliased else ""),
    ]
    for word, c in sorted(comparisons.items(), key=lambda item: -abs(item[1].effect)):
        cells = [result.name(word), f"{fmt(c.effect)} {fmt_ci(c.ci)}", f"{fmt_p(c.p_raw)} ({fmt_p(c.p_adjusted)})",
                 verdict_cell(c.verdict, c.within_margin) + (f" ({c.reason})" if c.reason else "")]  # fmt: skip
        if aliased:
            cells.append(_alias_note(result, word))
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _pair_lines(result: FactorialResult) -> list[str]:
    lines = ["Which components need each other (the strongest two-factor interactions; cell means relative to both on):", ""]
    for pair in result.pairs:
        a, b = pair.a, pair.b
        need = (
            "need each other" if pair.interaction > 0 else "stand in for each other" if pair.interaction < 0 else "act apart"
        )
        verdict = result.two[pair.word].verdict
        lines.append(
            f"- **{a} and {b}**: removing {a} alone {fmt(pair.without_a)}, {b} alone {fmt(pair.without_b)}, both "
            f"{fmt(pair.without_both)} (the sum of the two alone: {fmt(pair.without_a + pair.without_b)}); interaction "
            f"{fmt(pair.interaction)}, `{verdict}`: they {need} on this outcome"
            + ("" if verdict == "differs" else " (not shown: the interaction is not `differs`)")
            + "."
        )
    return [*lines, ""]


def _sufficient_line(result: FactorialResult) -> list[str]:
    s = result.sufficient
    if s is None:
        return ["No set of components is sufficient within the margin (or the outcome has no margin).", ""]
    keep = ", ".join(s.keep) or "none"
    if s.observed_drop is None:
        check = f"the cell {canonical_name(s.switches)} is not in this fraction: a model prediction only"
    else:
        check = (
            f"observed in the design's own cell {canonical_name(s.switches)}: full TD3 minus it {fmt(s.observed_drop)}, "
            + ("within the margin (confirmed)" if s.confirmed else "beyond the margin (not confirmed)")
        )
    lines = [
        f"Smallest set of components to keep (removing all the others lowers the return by at most the margin "
        f"±{fmt(result.margin)}, by the model of main effects and two-factor interactions): **{keep}**; predicted "
        f"drop {fmt(s.predicted_drop)}, {check}. A description of these runs, not a test."
    ]
    if s.observed_keep_switches is not None and not s.confirmed:
        lines[0] += (
            f" The design's own cells alone: the fewest components kept within the margin is "
            f"**{', '.join(s.observed_keep or ()) or 'none'}** (cell {canonical_name(s.observed_keep_switches)}, "
            f"full TD3 minus it {fmt(s.observed_keep_drop)})."
        )
    return [*lines, ""]


def plot_half_normal(result: FactorialResult, points: HalfNormalPoints | None, title: str, path: Path) -> None:
    """Daniel's half-normal plot of the main effects and two-factor interactions (|effect| against its quantile)."""
    import matplotlib.pyplot as plt

    assert points is not None, "the report model computes the half-normal points of the primary outcome"
    quantiles, effects, words = points.quantiles, points.effects, points.words
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter(quantiles, effects, s=18)
    for rank, (q, e, w) in enumerate(list(zip(quantiles, effects, words, strict=True))[-5:]):
        ax.annotate(
            result.name(w), (q, e), fontsize=7, xytext=(-6, 6 + 9 * (rank % 2)), textcoords="offset points", ha="right"
        )
    if len(effects) and effects[-1] > 20 * max(float(np.median(effects)), 1e-9):
        ax.set_yscale("symlog", linthresh=float(np.median(effects)) or 1.0)  # one dominant effect would hide the rest
    ax.set_xlabel("half-normal quantile")
    ax.set_ylabel("|effect| (Yates scale)")
    ax.set_title(title, fontsize=9)
    save_figure(fig, path)


def plot_interactions(result: FactorialResult, ylabel: str, title: str, path: Path) -> None:
    """Interaction plots of the strongest pairs: the mean with A on and off, one line per level of B."""
    import matplotlib.pyplot as plt

    pairs = result.pairs or []
    fig, axes = plt.subplots(1, max(len(pairs), 1), figsize=(4.2 * max(len(pairs), 1), 3.4), squeeze=False)
    for ax, pair in zip(axes.flat, pairs, strict=False):
        a, b = pair.a, pair.b
        for level_b, style, color in ((0, "-o", OKABE_ITO[0]), (1, "--s", OKABE_ITO[1])):
            label = f"{b} {'on' if level_b == 0 else 'off'}"
            ax.plot([0, 1], [pair.means[0][level_b], pair.means[1][level_b]], style, color=color, label=label)
        ax.set_xticks([0, 1], ["on", "off"])
        ax.set_xlabel(a)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} ({len(result.seeds)} seeds)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def _effects_json(result: FactorialResult, comparisons: dict[str, Comparison]) -> dict[str, Any]:
    return {
        result.name(w): {**comparison_json(c), "aliases": [result.name(a) for a in result.aliases.get(w, ())]}
        for w, c in comparisons.items()
    }


def _result_json(result: FactorialResult) -> dict[str, Any]:
    sufficient = result.sufficient
    return {
        "seeds": result.seeds,
        "margin": result.margin,
        "main_effects": _effects_json(result, result.main),
        "interactions": _effects_json(result, result.two),
        "three_factor": {
            result.name(w): {"estimate": v, "aliases": [result.name(a) for a in result.aliases.get(w, ())]}
            for w, v in result.three.items()
        },
        "cell_means": result.cell_means,
        "smallest_sufficient_set": None
        if sufficient is None
        else {
            "keep": list(sufficient.keep),
            "predicted_drop": sufficient.predicted_drop,
            "observed_drop": sufficient.observed_drop,
            "cell": canonical_name(sufficient.switches),
            "confirmed": sufficient.confirmed,
            "observed_set": None
            if sufficient.observed_keep_switches is None
            else {
                "keep": list(sufficient.observed_keep or ()),
                "observed_drop": sufficient.observed_keep_drop,
                "cell": canonical_name(sufficient.observed_keep_switches),
            },
        },
    }


def factorial_sections(model: ReportModel) -> list[Section]:
    """One section per env whose variants form a 2^k design or a regular fraction (none for leave-one-out)."""
    sections = []
    plan = model.plan
    by_env = {e.env: e for e in model.envs}
    for analysis in model.factorial:
        design, env_result = analysis.design, by_env[analysis.env]
        env, name = env_result.env, safe_name(env_result.env)
        figures: dict[str, Callable[[Path], None]] = {}
        json: dict[str, Any] = {"design": design.to_dict(), "resolution": design.resolution, "outcomes": {}}
        lines = [f"Design: {design.describe()}.", "", EXPLANATION, ""]
        if design.generators:
            lines += [
                f"In this fraction each effect is confounded with its aliases (I = {' = '.join(design.defining_relation)}): "
                "an estimate is the sum of the effect and its aliases, read as the effect only where the aliases are "
                "negligible (here four- and five-factor interactions for resolution VI).",
                "",
            ]
        for outcome, factorial in zip(env_result.outcomes, analysis.outcomes, strict=True):
            result = factorial.result
            if result is None:
                lines += [f"**{outcome.outcome.name}**: fewer than 2 seeds with a run in every cell; no estimate.", ""]
                continue
            lines += [
                f"### {outcome.outcome.name}" + (" (primary)" if outcome.primary else ""),
                "",
                f"{len(result.seeds)} complete seeds ({len(result.seeds) * len(design.cells)} runs)"
                + (
                    f"; left out, incomplete: seeds {', '.join(map(str, result.incomplete_seeds))}"
                    if result.incomplete_seeds
                    else ""
                )
                + f". {TEST_NAMES[plan.test]} on the per-seed effects; margin ±{fmt(result.margin)} ({outcome.margin.how}).",
                "",
                *_table(result, result.main, "main effect (component on - removed)"),
                *_table(result, result.two, "two-factor interaction"),
            ]
            if result.three and not design.generators:
                top = sorted(result.three.items(), key=lambda item: -abs(item[1]))[:5]
                lines += ["Largest three-factor interactions (estimates, no verdicts): "
                          + "; ".join(f"{result.name(w)} {fmt(v)}" for w, v in top) + ".", ""]  # fmt: skip
            lines += _pair_lines(result)
            if outcome.primary:
                lines += _sufficient_line(result)
                half_normal = f"{name}_half_normal_{outcome.outcome.key}.png"
                title = f"{env}: {outcome.outcome.short}, half-normal plot"
                figures[half_normal] = partial(plot_half_normal, result, factorial.half_normal, title)
                lines += [f"![half-normal plot](figures/{half_normal})", ""]
            figure = f"{name}_factorial_{outcome.outcome.key}.png"
            figures[figure] = partial(plot_interactions, result, outcome.outcome.short, f"{env}: {outcome.outcome.short}")
            lines += [f"![interaction plots](figures/{figure})", ""]
            json["outcomes"][outcome.outcome.key] = _result_json(result)
        sections.append(Section(f"{env}: factorial analysis", lines, json, figures))
    return sections
