"""The factorial section of a report: where TD3 learns (the learning region and its rule, each component's failure
rates with it on and removed, its conditional effect within the region, the main effects labelled where they average
over floor cells), which verdicts the per-cell tables can reach at their seeds, effects with verdicts and aliases, a
half-normal plot, interaction plots of the strongest pairs, which components need each other in plain words, and the
smallest sufficient set, confirmed only by its cell's equivalence test against full TD3.

The section's part of report.json (``sections["<env>: factorial analysis"]``): ``design``, ``resolution``;
``learning`` (:func:`factorial_learning_json`: ``seeds``, ``region`` {``rule``, ``level``, ``enabling``, ``whole_design``,
``cells``, ``n_cells``, ``design_cells``, ``steps``}, ``conditional_seeds``, ``ceiling``, ``factors`` {component:
``failure_on``, ``failure_off`` ({``failed``, ``n``, ``rate``, ``ci``}), ``failure_p``, ``failure_p_adjusted``,
``failure_odds_ratio``, ``failure_strata``, ``failure_verdict``, ``learned_return``, ``in_region`` (the same within the
region, ``None`` for a component the region keeps on), ``conditional`` (a comparison with ``estimate`` and
``verdict_shown``), ``main_effect`` {``effect``, ``ci``, ``verdict_of_test``, ``label``}, ``main_verdict_label``});
``per_cell_tables`` {outcome: {``n``, ``first_step_level``, ``smallest_p_differs``, ``smallest_p_equivalent``,
``differs_attainable``, ``equivalent_attainable``, ``label``}}; ``outcomes`` {outcome: effects, margins and the
smallest sufficient set}."""

# matplotlib.pyplot is imported in the functions that draw: a heavy plotting import the section's text does not need.

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.inference import DIFFERS
from sb3_ablation.study.analyse.paired_tests import ESTIMATE_NAMES, TEST_NAMES
from sb3_ablation.study.plan.variants import canonical_name
from sb3_ablation.study.render.figures import OKABE_ITO, save_figure
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.json_parts import comparison_json, number
from sb3_ablation.study.render.labels import DESCRIPTIVE, qualified_verdict
from sb3_ablation.study.render.learning import ceiling_json
from sb3_ablation.study.render.section_type import Section
from sb3_ablation.study.render.tables import verdict_cell
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.factorial import Attainable, FactorialResult
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.learning import FactorialLearning
    from sb3_ablation.study.analyse.report_model import EnvResult, HalfNormalPoints, ReportModel
    from sb3_ablation.study.analyse.two_part import FactorTwoPart, Rate

EXPLANATION = (
    "Effects on the standard (Yates) scale: a **main effect** is the mean outcome with the component on minus the mean "
    "with it removed, averaged over every combination of the other components in the design. That is not "
    "leave-one-out's question (remove it from full TD3): the two agree only where the component does not interact with "
    "the others. A **two-factor interaction** A x B is half the difference between A's effect with B on and with B off "
    "(0 when they act independently; negative when removing both costs more than the two removals apart). Each effect "
    "is computed within each seed from that seed's cells and tested over the seeds; main effects are one family, "
    "two-factor interactions another, each with one family-wise alpha for `differs` and `equivalent`. The equivalence "
    "margin ±δ is on the simple-effect scale, that of a removal: a main effect is on it; an interaction of Yates size "
    "I lets A's effects with B on and with B removed differ by 2I, so an interaction is `equivalent` when those two "
    "simple effects differ by at most δ, i.e. its Yates estimate lies within ±δ/2. Three-factor interactions are "
    "estimates, without verdicts."
)


def _alias_note(result: FactorialResult, word: str) -> str:
    aliases = result.aliases.get(word, ())
    return ", ".join(result.name(a) for a in aliases[:2]) + (" ..." if len(aliases) > 2 else "") if aliases else "—"


def _verdict_text(c: Comparison, shown: str | None, descriptive: bool = False) -> str:
    """The verdict cell: the verdict as the report gives it (an ``equivalent`` averaged over floor cells withheld, a
    ``differs`` there labelled), ``descriptive`` for a secondary outcome's effect; the test's own result is in
    report.json (``test_verdict``), never a second verdict here."""
    if descriptive:
        return DESCRIPTIVE
    if shown is not None and shown != c.verdict:
        return shown
    return verdict_cell(c.verdict, c.within_margin) + (f" ({c.reason})" if c.reason else "")


def _table(
    result: FactorialResult,
    comparisons: dict[str, Comparison],
    title: str,
    shown: dict[str, str] | None = None,
    descriptive: bool = False,
) -> list[str]:
    aliased = bool(result.design.generators)
    lines = [
        f"| {title} | effect [95% CI] | p (adjusted) | verdict |" + (" aliased with |" if aliased else ""),
        "|---|---:|---:|:---|" + ("---|" if aliased else ""),
    ]
    for word, c in sorted(comparisons.items(), key=lambda item: -abs(item[1].effect)):
        cells = [result.name(word), f"{fmt(c.effect)} {fmt_ci(c.ci)}", f"{fmt_p(c.p_raw)} ({fmt_p(c.p_adjusted)})",
                 _verdict_text(c, (shown or {}).get(word), descriptive)]  # fmt: skip
        if aliased:
            cells.append(_alias_note(result, word))
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _pair_lines(result: FactorialResult, shown: dict[str, str] | None = None, descriptive: bool = False) -> list[str]:
    """Which components need each other, in plain words, each with its interaction's verdict as the report gives it
    (``shown``; none for a secondary outcome's, which are descriptive)."""
    lines = ["Which components need each other (the strongest two-factor interactions; cell means relative to both on):", ""]
    for pair in result.pairs:
        a, b = pair.a, pair.b
        need = (
            "need each other" if pair.interaction > 0 else "stand in for each other" if pair.interaction < 0 else "act apart"
        )
        verdict = (shown or {}).get(pair.word) or result.two[pair.word].verdict
        if descriptive:
            claim = f"interaction {fmt(pair.interaction)} (descriptive): read as they {need}, not tested"
        elif verdict.startswith(DIFFERS):  # with its floor label, where it has one
            claim = f"interaction {fmt(pair.interaction)}, `{verdict}`: they {need} on this outcome"
        else:
            claim = (
                f"interaction {fmt(pair.interaction)}, `{verdict}`: the estimate reads as they {need}, which the test "
                "did not show"
            )
        lines.append(
            f"- **{a} and {b}**: removing {a} alone {fmt(pair.without_a)}, {b} alone {fmt(pair.without_b)}, both "
            f"{fmt(pair.without_both)} (the sum of the two alone: {fmt(pair.without_a + pair.without_b)}); {claim}."
        )
    return [*lines, ""]


def _sufficient_line(result: FactorialResult) -> list[str]:
    s = result.sufficient
    if s is None:
        return ["No set of components is sufficient within the margin (or the outcome has no margin).", ""]
    keep = ", ".join(s.keep) or "none"
    if s.observed_drop is None:
        check = f"the cell {canonical_name(s.switches)} is not in this fraction: a model prediction only, not confirmed"
    else:
        c = s.confirmation
        test = "" if c is None else f"; its comparison with full TD3: Δ (cell - TD3) {fmt(c.effect)} {fmt_ci(c.ci)}"
        check = (
            f"observed in the design's own cell {canonical_name(s.switches)}: full TD3 minus it {fmt(s.observed_drop)}"
            f"{test}; "
            + (
                "**confirmed**: the cell passes the equivalence test against full TD3 at the family's level "
                f"(p not equivalent {fmt_p(c.p_equivalence)}, adjusted over the {c.family_size} per-cell comparisons "
                f"{fmt_p(c.p_equivalence_adjusted)})"
                if s.confirmed and c is not None
                else f"**not confirmed** ({s.confirmation_reason})"
            )
        )
    lines = [
        f"Smallest set of components to keep (removing all the others lowers the return by at most the margin "
        f"±{fmt(result.margin)}, by the model of main effects and two-factor interactions): **{keep}**; predicted "
        f"drop {fmt(s.predicted_drop)}, {check}."
    ]
    if s.observed_keep_switches is not None and not s.confirmed:
        lines[0] += (
            f" The design's own cells alone (point estimates, not a test): the fewest components kept within the "
            f"margin is **{', '.join(s.observed_keep or ()) or 'none'}** (cell {canonical_name(s.observed_keep_switches)}, "
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


def _effects_json(
    result: FactorialResult,
    comparisons: dict[str, Comparison],
    shown: dict[str, str],
    labels: dict[str, str | None],
    descriptive: bool,
) -> dict[str, Any]:
    return {
        result.name(w): {
            **comparison_json(c, label=labels.get(w), descriptive=descriptive),
            "aliases": [result.name(a) for a in result.aliases.get(w, ())],
            # the verdict as the report gives it (no `equivalent` averaged over floor cells), where a region was found
            **({"verdict_shown": DESCRIPTIVE if descriptive else shown[w]} if w in shown else {}),
        }
        for w, c in comparisons.items()
    }


def _result_json(
    result: FactorialResult, shown: dict[str, str], labels: dict[str, str | None], descriptive: bool
) -> dict[str, Any]:
    sufficient = result.sufficient
    return {
        "seeds": result.seeds,
        "margin": result.margin,
        "margin_scale": "simple effect",
        "interaction_margin_yates": number(result.interaction_margin),
        "main_effects": _effects_json(result, result.main, shown, labels, descriptive),
        "interactions": _effects_json(result, result.two, shown, labels, descriptive),
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
            "observed_within_margin": sufficient.observed_within_margin,
            "confirmed": sufficient.confirmed,
            "confirmation": None
            if sufficient.confirmation is None
            else {
                "effect": number(sufficient.confirmation.effect),
                "ci": [number(x) for x in sufficient.confirmation.ci] if sufficient.confirmation.ci else None,
                "p_equivalence": number(sufficient.confirmation.p_equivalence),
                "p_equivalence_adjusted": number(sufficient.confirmation.p_equivalence_adjusted),
                "family_size": sufficient.confirmation.family_size,
                "verdict": sufficient.confirmation.verdict,
            },
            "not_confirmed_because": sufficient.confirmation_reason or None,
            "observed_set": None
            if sufficient.observed_keep_switches is None
            else {
                "keep": list(sufficient.observed_keep or ()),
                "observed_drop": sufficient.observed_keep_drop,
                "cell": canonical_name(sufficient.observed_keep_switches),
            },
        },
    }


REGION_RULE = (
    "from the failure outcome alone, never the compared returns: a component makes learning possible when the cells "
    "without it fail at a pooled rate of at least {level:.0%}, a run failing when it did not learn or its critic "
    "diverged; the region keeps it on and the rule is applied again within the region, until no removal fails that "
    "often"
)


def _rate_text(r: Rate) -> str:
    return f"{r.failed}/{r.n} ({r.rate:.0%})" if r.n else "n/a"


def _rate_json(r: Rate) -> dict[str, Any]:
    return {"failed": r.failed, "n": r.n, "rate": number(r.rate), "ci": [number(r.ci[0]), number(r.ci[1])]}


def _two_part_json(t: FactorTwoPart) -> dict[str, Any]:
    return {
        "failure_on": _rate_json(t.on),
        "failure_off": _rate_json(t.off),
        "failure_p": number(t.p_failure),
        "failure_p_adjusted": number(t.p_failure_adjusted),
        "failure_odds_ratio": number(t.odds_ratio),
        "failure_strata": t.strata,
        "failure_verdict": t.verdict,
        "learned_return": {"effect": number(t.learned_effect), "strata": t.learned_strata, "p": number(t.p_learned)},
    }


def _region_cells(learning: FactorialLearning) -> list[str]:
    return [canonical_name({**learning.design.cells[row]}) for row in learning.region.rows]


def _main_label(learning: FactorialLearning) -> str:
    if learning.region.is_whole_design:
        return "over the whole design (no floor cells)"
    return "averaged over floor cells"


def factorial_learning_json(learning: FactorialLearning, main: dict[str, Comparison] | None, estimate: str) -> dict[str, Any]:
    """The learning region and the effects where TD3 learns: the factorial section's ``learning`` part of report.json
    (its keys: the module docstring)."""
    region, design = learning.region, learning.design
    factors: dict[str, Any] = {}
    for j, factor in enumerate(design.factors):
        word = design.letters[j]
        entry: dict[str, Any] = _two_part_json(learning.two_part[factor]) if factor in learning.two_part else {}
        inside = learning.two_part_in_region.get(factor)
        entry["in_region"] = None if inside is None else _two_part_json(inside)
        c = learning.conditional.effects.get(factor)
        entry["conditional"] = (
            None
            if c is None
            else {
                **comparison_json(c, label=learning.conditional_labels.get(factor)),
                "estimate": estimate,
                "verdict_shown": qualified_verdict(c.verdict, learning.conditional_labels.get(factor)),
            }
        )
        m = (main or {}).get(word)
        entry["main_effect"] = (
            None
            if m is None
            else {
                "effect": number(m.effect),
                "ci": [number(x) for x in m.ci] if m.ci else None,
                "verdict_of_test": m.verdict,
                "label": _main_label(learning),
            }
        )
        entry["main_verdict_label"] = None if m is None else qualified_verdict(m.verdict, learning.main_labels.get(word))
        factors[factor] = entry
    return {
        "seeds": list(learning.seeds),
        "region": {
            "rule": REGION_RULE.format(level=region.level),
            "level": region.level,
            "enabling": list(region.enabling),
            "whole_design": region.is_whole_design,
            "cells": _region_cells(learning),
            "n_cells": len(region.rows),
            "design_cells": len(design.cells),
            "steps": [
                [{"factor": r.factor, "failed": r.failed, "n": r.n, "rate": number(r.rate)} for r in step]
                for step in region.steps
            ],
        },
        "conditional_seeds": list(learning.conditional.seeds),
        "ceiling": ceiling_json(learning.ceiling),
        "factors": factors,
    }


def factorial_learning_lines(
    learning: FactorialLearning, main: dict[str, Comparison] | None, estimate: str, outcome_name: str
) -> list[str]:
    """The markdown of where TD3 learns: the region and its rule, failure rates per component, the conditional
    effects within the region and the main effects' label."""
    region, design = learning.region, learning.design
    lines = ["### Where TD3 learns", ""]
    steps = []
    for step, found in zip(region.steps, (*region.enabling, None), strict=True):
        if not step:
            break
        worst = step[0]
        text = f"without {worst.factor} {worst.failed}/{worst.n} runs failed ({worst.rate:.0%})"
        steps.append(text + (": kept on" if found is not None else f", below {region.level:.0%}: stop"))
    where = (
        "**every cell** (no component was needed for learning: no floor cells)"
        if region.is_whole_design
        else f"the {len(region.rows)} of {len(design.cells)} cells with **{', '.join(region.enabling)}** on"
    )
    lines += [
        f"Learning region: {where}. Found {REGION_RULE.format(level=region.level)}. "
        f"The rule's steps: {'; '.join(steps) or 'no removal to judge'}.",
        "",
    ]
    lines += [
        "Failure rates per component (a run failed: did not learn or critic diverged), with it on and removed; p: the "
        "exact stratified test of no association (conditional on each stratum's margins, strata: the cells with the "
        "same levels of the other components), Holm over the components; and the return among the runs that learned "
        "(on minus removed, averaged over the strata with learned runs on both sides; stratified permutation p):",
        "",
        "| component | where | failed with it on | failed with it removed | p (Holm-adjusted) | verdict "
        "| return among the runs that learned | p |",
        "|---|---|---:|---:|---:|:---|---:|---:|",
    ]
    for factor in design.factors:
        for label, parts in (("whole design", learning.two_part), ("learning region", learning.two_part_in_region)):
            t = parts.get(factor)
            if t is None:
                continue
            strata = plural(t.learned_strata, "stratum", "strata")
            lines.append(
                f"| {factor} | {label} | {_rate_text(t.on)} | {_rate_text(t.off)} | {fmt_p(t.p_failure)} "
                f"({fmt_p(t.p_failure_adjusted)}) | {t.verdict} | {fmt(t.learned_effect)} ({strata}) | {fmt_p(t.p_learned)} |"
            )
    conditional = learning.conditional
    lines.append("")
    if conditional.effects:
        margin = next(iter(conditional.effects.values())).margin
        lines += [
            f"Conditional effects within the learning region ({outcome_name}, {len(conditional.seeds)} seeds with a run "
            f"in every region cell): per seed, the mean of the region's cells with the component on minus with it "
            f"removed; the {estimate} of those per-seed effects with its 95% interval, the plan's tests, one family, "
            f"margin ±{fmt(margin)}. An `equivalent` is withheld where the region's runs with it on or removed include "
            "failures, and labelled (at ceiling) where the region sits at the task's ceiling.",
            "",
            f"| component | {estimate} [95% CI] | p (adjusted) | p not equivalent (adjusted) | verdict |",
            "|---|---:|---:|---:|:---|",
        ]
        for factor, c in conditional.effects.items():
            shown = qualified_verdict(c.verdict, learning.conditional_labels.get(factor))
            lines.append(
                f"| {factor} | {fmt(c.effect)} {fmt_ci(c.ci)} | {fmt_p(c.p_raw)} ({fmt_p(c.p_adjusted)}) | "
                f"{fmt_p(c.p_equivalence)} ({fmt_p(c.p_equivalence_adjusted)}) | {_verdict_text(c, shown)} |"
            )
        lines.append("")
    else:
        lines += ["No component varies within the learning region: no conditional effect.", ""]
    ceiling = learning.ceiling
    if ceiling is not None:
        lines += [
            (
                f"**At ceiling**: every region cell ends within {fmt(ceiling.distance)} of the reference "
                f"{fmt(ceiling.reference)} and of each other; an `equivalent` there says the task is too easy at this "
                "budget."
            )
            if ceiling.at_ceiling
            else f"Not at the ceiling: the lowest region cell ({ceiling.lowest[0]}) ends at {fmt(ceiling.lowest[1])}, "
            f"the region's spread is {fmt(ceiling.spread)}, against {fmt(ceiling.distance)} from the reference "
            f"{fmt(ceiling.reference)}.",
            "",
        ]
    if main:
        label = _main_label(learning)
        entries = []
        for word, c in main.items():
            shown = qualified_verdict(c.verdict, learning.main_labels.get(word))
            entries.append(f"{design.factors[design.letters.index(word)]} {fmt(c.effect)} {fmt_ci(c.ci)} `{shown}`")
        lines += [
            f"Main effects of the {outcome_name} {label}"
            + (
                ", so none is read as `equivalent` and a `differs` says so (the effect where TD3 learns is the "
                "conditional effect above): "
                if not learning.region.is_whole_design
                else ": "
            )
            + "; ".join(entries)
            + ".",
            "",
        ]
    return lines


def _attainable_json(a: Attainable) -> dict[str, Any]:
    return {
        "n": a.n,
        "first_step_level": number(a.level),
        "smallest_p_differs": number(a.smallest_p_differs),
        "smallest_p_equivalent": number(a.smallest_p_equivalent),
        "differs_attainable": a.differs,
        "equivalent_attainable": a.equivalent,
        "label": a.label or None,
    }


def _per_cell_lines(per_cell: dict[str, Attainable], env_result: EnvResult, baseline: str | None) -> list[str]:
    """Which verdicts the per-cell tables (each cell against the baseline, in the task's section) can reach."""
    names = {o.outcome.key: o.outcome.name for o in env_result.outcomes}
    lines = [f"Per-cell tables (each cell against {baseline}, above), from the tests' smallest attainable p-values:", ""]
    for key, a in per_cell.items():
        equivalent = "no margin" if a.smallest_p_equivalent != a.smallest_p_equivalent else f"{a.smallest_p_equivalent:.2g}"
        lines.append(
            f"- {names.get(key, key)}: **{a.label or 'can decide'}** (n = {a.n}: smallest p {a.smallest_p_differs:.2g} "
            f"for a difference, {equivalent} for an equivalence; the family's first step asks p <= {a.level:.2g})."
        )
    return [*lines, ""]


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
        estimate = ESTIMATE_NAMES[plan.test]
        primary_outcome = next((o for o in analysis.outcomes if o.key == plan.primary), None)
        primary_main = primary_outcome.result.main if primary_outcome and primary_outcome.result else None
        if analysis.learning is not None:
            primary_name = next(o.outcome.name for o in env_result.outcomes if o.outcome.key == plan.primary)
            lines += factorial_learning_lines(analysis.learning, primary_main, estimate, primary_name)
            json["learning"] = factorial_learning_json(analysis.learning, primary_main, estimate)
        per_cell = {o.key: o.per_cell for o in analysis.outcomes if o.per_cell is not None}
        if per_cell:
            lines += _per_cell_lines(per_cell, env_result, model.baseline)
            json["per_cell_tables"] = {key: _attainable_json(a) for key, a in per_cell.items()}
        for outcome, factorial in zip(env_result.outcomes, analysis.outcomes, strict=True):
            result = factorial.result
            if result is None:
                lines += [f"**{outcome.outcome.name}**: fewer than 2 seeds with a run in every cell; no estimate.", ""]
                continue
            # the verdicts as the report gives them, where a learning region was found (its floor labels)
            labels = factorial.floor_labels
            tested = {**result.main, **result.two}
            shown = {w: qualified_verdict(c.verdict, labels.get(w)) for w, c in tested.items()} if labels else {}
            descriptive = not outcome.primary  # a secondary outcome's effects are estimates, no verdicts
            lines += [
                f"### {outcome.outcome.name}" + (" (primary)" if outcome.primary else ""),
                "",
                *(
                    ["Secondary outcome: descriptive, effects with their 95% intervals and p-values, no verdicts.", ""]
                    if descriptive
                    else []
                ),
                f"{len(result.seeds)} complete seeds ({len(result.seeds) * len(design.cells)} runs)"
                + (
                    f"; left out, incomplete: seeds {', '.join(map(str, result.incomplete_seeds))}"
                    if result.incomplete_seeds
                    else ""
                )
                + f". {TEST_NAMES[plan.test]} on the per-seed effects; margin ±{fmt(result.margin)} on the simple-effect "
                f"scale ({outcome.margin.how}): main effects within ±{fmt(result.margin)}, two-factor interactions "
                f"within ±{fmt(result.interaction_margin)} on the Yates scale (their two simple effects differ by at "
                f"most {fmt(result.margin)})."
                + (
                    " Effects averaged over floor cells (outside the learning region) are not read as `equivalent`, "
                    "and a `differs` of them says so."
                    if factorial.floor_labels and analysis.learning and not analysis.learning.region.is_whole_design
                    else ""
                ),
                "",
                *_table(result, result.main, "main effect (component on - removed)", shown, descriptive),
                *_table(result, result.two, "two-factor interaction", shown, descriptive),
            ]
            if result.three and not design.generators:
                top = sorted(result.three.items(), key=lambda item: -abs(item[1]))[:5]
                lines += ["Largest three-factor interactions (estimates, no verdicts): "
                          + "; ".join(f"{result.name(w)} {fmt(v)}" for w, v in top) + ".", ""]  # fmt: skip
            lines += _pair_lines(result, shown, descriptive)
            if outcome.primary:
                lines += _sufficient_line(result)
                half_normal = f"{name}_half_normal_{outcome.outcome.key}.png"
                title = f"{env}: {outcome.outcome.short}, half-normal plot"
                figures[half_normal] = partial(plot_half_normal, result, factorial.half_normal, title)
                lines += [f"![half-normal plot](figures/{half_normal})", ""]
            figure = f"{name}_factorial_{outcome.outcome.key}.png"
            figures[figure] = partial(plot_interactions, result, outcome.outcome.short, f"{env}: {outcome.outcome.short}")
            lines += [f"![interaction plots](figures/{figure})", ""]
            json["outcomes"][outcome.outcome.key] = _result_json(result, shown, labels, descriptive)
        sections.append(Section(f"{env}: factorial analysis", lines, json, figures))
    return sections
