"""Generated findings of a report model, in plain sentences: each claim with its test, n, interval and error control."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.render.committed import answer_sentence
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.labels import (
    CANNOT_TELL_CEILING,
    CANNOT_TELL_FLOOR,
    aggregate_labels,
    labels_of,
    qualified_verdict,
)
from sb3_ablation.study.render.learning import budget_sentence
from sb3_ablation.study.render.tables import margin_text

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.learning import EnvLearning
    from sb3_ablation.study.analyse.report_model import EarlierBudgetEstimates, EarlierResult, EnvResult, ReportModel

#: what a verdict shown with a label or regime means, before its comparisons
LABEL_MEANINGS = {
    CANNOT_TELL_CEILING: "at the ceiling the margin and the ceiling tolerance are of one size, so an equivalence is "
    "true by construction (the area under the learning curve and the curves show what the component changes before "
    "it): ",
    CANNOT_TELL_FLOOR: "no run of either arm learned at this budget, so this says the budget is too short, not that "
    "the component does nothing: ",
    "unresolved (failures in an arm)": "equivalent on the return, but withheld: an arm has failed runs, which a test of "
    "the return cannot see as such (see the failure rates and the return among the runs that learned, under 'Where "
    "TD3 learns'): ",
}
#: below this share of the baseline's runs that learned, its comparisons say little (the findings say so first)
FEW_LEARNED = 0.5


def learning_of(model: ReportModel, env: str) -> EnvLearning | None:
    """The learning analysis of a task of the report (``None``: none)."""
    return next((learning for learning in model.learning if learning.env == env), None)


def describe_comparison(c: Comparison, digits: int = 1) -> str:
    """``no_replay_buffer -850.3 [-1,000.2, -700.1], p 0.001, adjusted 0.006``"""
    return f"{c.name} {fmt(c.effect, digits)} {fmt_ci(c.ci, digits)}, p {fmt_p(c.p_raw)}, adjusted {fmt_p(c.p_adjusted)}"


def estimates_text(comparisons: Mapping[str, Comparison], digits: int = 1) -> str:
    """Each comparison's estimate with its 95% interval, largest first (a descriptive line: no verdict's words)."""
    ordered = sorted(comparisons.values(), key=lambda c: -abs(c.effect) if c.effect == c.effect else 0.0)
    return "; ".join(f"{c.name} {fmt(c.effect, digits)} {interval_text(c, digits)}" for c in ordered)


def interval_text(c: Comparison, digits: int = 1) -> str:
    """A comparison's 95% interval, or ``(no interval)`` where the test gave none."""
    if c.ci is None or not all(math.isfinite(x) for x in c.ci):
        return "(no interval)"
    return fmt_ci(c.ci, digits)


def verdict_lines(
    comparisons: dict[str, Comparison], digits: int = 1, labels: Mapping[str, str | None] | None = None
) -> list[str]:
    """
    The verdicts of one family, one line each (only the non-empty ones), as the report gives them
    (:func:`~sb3_ablation.study.render.labels.qualified_verdict`): a plain ``differs`` or ``equivalent`` in bold, a
    verdict with a regime or a label on its own line with what it means, never in bold.

    :param labels: variant -> the label of its verdict (:attr:`~sb3_ablation.study.analyse.learning.EnvLearning.labels`)
    """
    labels = labels or {}
    shown = {name: qualified_verdict(c.verdict, labels.get(name)) for name, c in comparisons.items()}
    by = {
        verdict: [c for name, c in comparisons.items() if shown[name] == verdict]
        for verdict in (DIFFERS, EQUIVALENT, UNRESOLVED)
    }
    lines = []
    if by[DIFFERS]:
        items = "; ".join(describe_comparison(c, digits) for c in sorted(by[DIFFERS], key=lambda c: c.effect))
        lines.append(f"**differs**: {items}.")

    def equivalence_items(found: list[Comparison]) -> str:
        return "; ".join(
            f"{c.name} {fmt(c.effect, digits)} {fmt_ci(c.ci, digits)}, "
            f"equivalence p adjusted {fmt_p(c.p_equivalence_adjusted)}"
            for c in found
        )

    if by[EQUIVALENT]:
        lines.append(f"**equivalent** within the margin: {equivalence_items(by[EQUIVALENT])}.")
    for verdict in sorted(set(shown.values()) - {DIFFERS, EQUIVALENT, UNRESOLVED}):
        found = [c for name, c in comparisons.items() if shown[name] == verdict]
        items = (
            "; ".join(describe_comparison(c, digits) for c in found)
            if verdict.startswith(DIFFERS)
            else equivalence_items(found)
        )
        lines.append(f"{verdict}: {LABEL_MEANINGS.get(verdict, '')}{items}.")
    tested = [c for c in by[UNRESOLVED] if not c.reason.startswith("n =")]
    if tested:
        items = "; ".join(
            f"{c.name} {fmt(c.effect, digits)} {fmt_ci(c.ci, digits)} (MDE {fmt(c.mde, digits)}; "
            + (f"{c.seeds_needed} seeds would detect it" if c.seeds_needed else "more than 1,000 seeds to detect it")
            + (f"; {c.reason}" if c.reason else "")
            + ")"
            for c in sorted(tested, key=lambda c: -abs(c.effect))
        )
        lines.append(
            "unresolved (not detected, which is not 'no effect'; an interval that excludes 0 without a verdict is "
            f"not corrected for the family and is no finding; minimum detectable effect at 80% power): {items}."
        )
    untested = [c for c in by[UNRESOLVED] if c.reason.startswith("n =")]
    if untested:
        reasons = sorted({c.reason for c in untested})
        lines.append(f"unresolved, no test ({'; '.join(reasons)}): {', '.join(c.name for c in untested)}.")
    return lines


def one_sided_interval(c: Comparison, digits: int = 1) -> str:
    """A comparison's interval as the report prints it: ``[low, high]``, or a one-sided bound ``[low, ∞)``."""
    if c.ci and math.isinf(c.ci[1]) and math.isfinite(c.ci[0]):
        return f"[{fmt(c.ci[0], digits)}, ∞) (one-sided)"
    if c.ci and math.isinf(c.ci[0]) and math.isfinite(c.ci[1]):
        return f"(-∞, {fmt(c.ci[1], digits)}] (one-sided)"
    return fmt_ci(c.ci, digits)


def earlier_line(result: EarlierResult, digits: int = 1) -> str:
    """
    A hypothesis at an earlier budget as its own finding: ``no_delayed_policy_update at 300,000 steps (one-sided:
    ahead): +757.0 [241.1, ∞) (one-sided), n = 10, p 0.001, adjusted 0.004 (same family): **differs**``.
    """
    c = result.comparison
    verdict = f"**{c.verdict}**" if c.verdict == DIFFERS else c.verdict + (f" ({c.reason})" if c.reason else "")
    return (
        f"{result.name}: {fmt(c.effect, digits)} {one_sided_interval(c, digits)}, n = {c.n}, p {fmt_p(c.p_raw)}, "
        f"adjusted {fmt_p(c.p_adjusted)} (in this family): {verdict}"
    )


def earlier_estimates_line(described: EarlierBudgetEstimates, baseline: str | None, digits: int = 1) -> str:
    """
    Every arm at an earlier budget, described: ``At 300,000 steps on the same runs (descriptive: ...): td3 1,042.0;
    no_delayed_policy_update 1,799.0, +757.0 [241.1, 1,277.7] against td3; ...``.
    """
    arms = []
    for arm, mean in described.means.items():
        text = f"{arm} {fmt(mean, digits)}"
        if arm in described.estimates:
            n, estimate, low, high = described.estimates[arm]
            text += f", {fmt(estimate, digits)} {fmt_ci((low, high), digits)} against {baseline} (n = {n})"
        arms.append(text)
    return (
        f"At {described.budget:,} steps on the same runs (descriptive: each arm's mean of the primary outcome from its "
        f"evaluations up to then; paired estimates with 95% intervals, not adjusted, no verdict): {'; '.join(arms)}."
    )


def regime_line(learning: EnvLearning, baseline: str | None) -> str | None:
    """
    What the baseline's own runs did, the first thing a task's findings say: how many of them learned (by the rules
    of 'Where TD3 learns'), and where fewer than :data:`FEW_LEARNED` of them did, that its comparisons say little.
    ``None``: no baseline runs.
    """
    runs = learning.fates.get(baseline or "", {})
    if not runs:
        return None
    learned = sum(not fate.failed for fate in runs.values())
    head = f"{baseline} learned in {learned} of {plural(len(runs), 'run')}"
    if learned == len(runs):
        head = f"{baseline} learned in all {plural(len(runs), 'run')}"
    if learned < FEW_LEARNED * len(runs):
        return f"**{head}: these comparisons say little** (a component cannot matter where {baseline} does not learn)."
    return f"{head}."


def _env_summary(model: ReportModel, e: EnvResult, replication: bool = False) -> list[str]:
    primary = e.outcome(model.plan.primary)
    # the labels judge every seed's runs: a replication's seeds are analysed on their own, without them
    learning = None if replication else learning_of(model, e.env)
    if primary is None:
        return [f"- **{e.env}**: no comparison with {model.baseline} (no finished runs of it).", ""]
    if not primary.comparisons:  # the baseline alone, e.g. a pilot: it describes, it tests nothing
        regime = regime_line(learning, model.baseline) if learning is not None else None
        lines = [f"- **{e.env}**: only {model.baseline} ran; nothing is compared (the tables describe its runs)."]
        if learning is not None:
            lines += [f"  - {regime}" if regime else "", f"  - {budget_sentence(learning.budget)}"]
        return [*[line for line in lines if line], ""]
    n = sorted({c.n for c in primary.comparisons.values()})
    family = max(c.family_size for c in primary.comparisons.values())
    # the regime first: what the baseline's own runs did, then how far it came at this budget
    regime = regime_line(learning, model.baseline) if learning is not None else None
    lines = [f"- **{e.env}** at {e.training_steps:,} steps" + (f": {regime}" if regime else ":")]
    if learning is not None:
        lines.append(f"  - {budget_sentence(learning.budget)}")
        if learning.ceiling is not None and learning.ceiling.at_ceiling:
            lines.append(
                "  - Every variant sits at the task's ceiling at this budget: an equivalence here cannot tell what a "
                "component does (see 'Where TD3 learns')."
            )
    if replication:
        lines.append(
            "  - Descriptive (seeds outside the plan's confirmatory seeds, no verdict under its error control): "
            f"{primary.outcome.name}, {estimates_text(primary.comparisons)}."
        )
    else:
        labels = labels_of(learning, primary.outcome.is_return)
        lines += [f"  - {line}" for line in verdict_lines(primary.comparisons, labels=labels)]
        lines += [f"  - At an earlier budget of the same runs: {earlier_line(result)}." for result in primary.earlier]
        lines += [f"  - {earlier_estimates_line(e, model.baseline)}" for e in primary.earlier_estimates]
    answer = None if replication else model.committed_answers.get(e.env)
    if answer is not None:
        lines.append(f"  - Too few seeds here for a verdict. {answer_sentence(answer)}")
    if learning is not None:  # by the rules of 'Where TD3 learns', the ones the labels use
        counts = {v: (sum(f.failed for f in runs.values()), len(runs)) for v, runs in learning.fates.items()}
        failed = [f"{v} {k}/{n}" for v, (k, n) in counts.items() if k]
        if failed:
            lines.append(
                f"  - Runs that failed (did not learn, or critic diverged): {', '.join(failed)} ('Where TD3 learns' "
                "gives the rules, the exact tests and the return among the runs that learned)."
            )
    for result in e.outcomes:
        if result.primary or not result.comparisons:
            continue
        lines.append(
            f"  - {result.outcome.name.capitalize()} (secondary: descriptive, estimates with 95% intervals, no verdict): "
            f"{estimates_text(result.comparisons)}."
        )
    if replication:  # descriptive: no test's family or margin to state
        return [*lines, ""]
    lines.append(
        f"  - How: {primary.outcome.name} ({plural(len(e.window), 'evaluation')}: steps {e.window[0]:,}-"
        f"{e.window[-1]:,}), n = {'/'.join(map(str, n))} seed pairs, "
        + (f"{TEST_NAMES[model.plan.test]}, family of {family}" if family else f"no test (fewer than {MIN_RUNS} pairs)")
        + (
            f", alpha = {model.plan.alpha:g} for differs (no equivalence claims)."
            if model.plan.claim_rule == "differs"
            else f", alpha = {model.plan.alpha:g} for differs and equivalent together, margin {margin_text(primary.margin)}."
        )
    )
    return [*lines, ""]


def summary_per_task(model: ReportModel) -> list[str]:
    """The generated findings of each env: the primary outcome's verdicts in full, the others briefly."""
    lines = [line for e in model.envs for line in _env_summary(model, e)]
    if model.replication:
        lines += ["Replication (seeds outside the plan's confirmatory seeds, analysed on their own):", ""]
        lines += [line for e in model.replication for line in _env_summary(model, e, replication=True)]
    return lines


def summary_across_tasks(model: ReportModel) -> list[str]:
    """The generated findings across envs: the task-level meta-analysis and the aggregate."""
    across = model.across
    if across is None:
        return []
    k = len(across.envs)
    lines = []
    for c in across.components:
        state = (
            f"the Q test rejects one effect on every task ({c.signs} on the {k} tasks)"
            if c.task_dependent
            else f"task dependence not shown (a Q test on {k} tasks has little power: not evidence of one effect)"
        )
        lines.append(
            f"- {c.variant}: combined standardized effect {fmt(c.meta.estimate, 2)} "
            f"{fmt_ci((c.meta.ci_low, c.meta.ci_high), 2)} over {k} tasks (random effects, Hartung-Knapp), p Holm "
            f"{fmt_p(c.p_adjusted)}; heterogeneity I² {fmt(100 * c.meta.i2, 0)}%, Q p Holm "
            f"{fmt_p(c.p_heterogeneity_adjusted)}: {state} (descriptive)."
        )
    if across.aggregate is not None:
        lines.append(f"- Aggregate ({across.aggregate.how}), n = {len(across.seeds)} seeds:")
        labels = aggregate_labels(model.learning, list(across.aggregate.comparisons))
        lines += [f"  - {line}" for line in verdict_lines(across.aggregate.comparisons, digits=3, labels=labels)]
    return [*lines, ""]


def findings_markdown(model: ReportModel) -> str:
    """The generated findings as the report prints them (per task, then across tasks)."""
    text = "Per task:\n\n" + "\n".join(summary_per_task(model)).rstrip() + "\n"
    across = summary_across_tasks(model)
    if across:
        text += "\nAcross tasks:\n\n" + "\n".join(across).rstrip() + "\n"
    return text
