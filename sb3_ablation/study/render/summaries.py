"""Generated findings of a report model, in plain sentences: each claim with its test, n, interval and error control."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.tables import margin_text

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.report_model import EnvResult, ReportModel


def describe_comparison(c: Comparison, digits: int = 1) -> str:
    """``no_replay_buffer -850.3 [-1,000.2, -700.1], p 0.001, adjusted 0.006``"""
    return f"{c.name} {fmt(c.effect, digits)} {fmt_ci(c.ci, digits)}, p {fmt_p(c.p_raw)}, adjusted {fmt_p(c.p_adjusted)}"


def verdict_lines(comparisons: dict[str, Comparison], digits: int = 1) -> list[str]:
    """The three verdicts of one family, one line each (only the non-empty ones)."""
    by = {verdict: [c for c in comparisons.values() if c.verdict == verdict] for verdict in (DIFFERS, EQUIVALENT, UNRESOLVED)}
    lines = []
    if by[DIFFERS]:
        items = "; ".join(describe_comparison(c, digits) for c in sorted(by[DIFFERS], key=lambda c: c.effect))
        lines.append(f"**differs**: {items}.")
    if by[EQUIVALENT]:
        items = "; ".join(
            f"{c.name} {fmt(c.effect, digits)} {fmt_ci(c.ci, digits)}, "
            f"equivalence p adjusted {fmt_p(c.p_equivalence_adjusted)}"
            for c in by[EQUIVALENT]
        )
        lines.append(f"**equivalent** within the margin: {items}.")
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
            "**unresolved** (not detected, which is not 'no effect'; an interval that excludes 0 without a verdict is "
            f"not corrected for the family; minimum detectable effect at 80% power): {items}."
        )
    untested = [c for c in by[UNRESOLVED] if c.reason.startswith("n =")]
    if untested:
        reasons = sorted({c.reason for c in untested})
        lines.append(f"**unresolved**, no test ({'; '.join(reasons)}): {', '.join(c.name for c in untested)}.")
    return lines


def _env_summary(model: ReportModel, e: EnvResult) -> list[str]:
    primary = e.outcome(model.plan.primary)
    if primary is None:
        return [f"- **{e.env}**: no comparison with {model.baseline} (no finished runs of it).", ""]
    if not primary.comparisons:  # the baseline alone, e.g. a pilot: it describes, it tests nothing
        return [f"- **{e.env}**: only {model.baseline} ran; nothing is compared (the tables describe its runs).", ""]
    n = sorted({c.n for c in primary.comparisons.values()})
    family = max(c.family_size for c in primary.comparisons.values())
    lines = [
        f"- **{e.env}**, {primary.outcome.name} ({plural(len(e.window), 'evaluation')}: steps "
        f"{e.window[0]:,}-{e.window[-1]:,} of {e.training_steps:,}), n = {'/'.join(map(str, n))} seed pairs, "
        + (f"{TEST_NAMES[model.plan.test]}, family of {family}" if family else f"no test (fewer than {MIN_RUNS} pairs)")
        + f", alpha = {model.plan.alpha:g} for differs and equivalent together, margin {margin_text(primary.margin)}:"
    ]
    lines += [f"  - {line}" for line in verdict_lines(primary.comparisons)]
    failed = [
        f"{v} {f.did_not_learn.failed}/{f.did_not_learn.n}"
        for v, f in e.failures.variants.items()
        if f.did_not_learn is not None and f.did_not_learn.failed
    ]
    if failed:
        lines.append(f"  - Runs that did not learn: {', '.join(failed)} (the failures table gives exact CIs and tests).")
    for result in e.outcomes:
        if result.primary or not result.comparisons:
            continue
        differs = [c for c in result.comparisons.values() if c.verdict == DIFFERS]
        equivalent = [c for c in result.comparisons.values() if c.verdict == EQUIVALENT]
        parts = [
            "differs: " + ("; ".join(describe_comparison(c) for c in differs) if differs else "none"),
            "equivalent: " + (", ".join(c.name for c in equivalent) if equivalent else "none"),
        ]
        rest = len(result.comparisons) - len(differs) - len(equivalent)
        lines.append(f"  - {result.outcome.name.capitalize()}: {'; '.join(parts)}; {plural(rest, 'comparison')} unresolved.")
    return [*lines, ""]


def summary_per_task(model: ReportModel) -> list[str]:
    """The generated findings of each env: the primary outcome's verdicts in full, the others briefly."""
    lines = [line for e in model.envs for line in _env_summary(model, e)]
    if model.replication:
        lines += ["Replication (seeds outside the plan's confirmatory seeds, analysed on their own):", ""]
        lines += [line for e in model.replication for line in _env_summary(model, e)]
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
            f"task-dependent ({c.signs} on the {k} tasks)"
            if c.task_dependent
            else "consistent"
            if c.consistent
            else "not detected"
        )
        lines.append(
            f"- {c.variant}: combined standardized effect {fmt(c.meta.estimate, 2)} "
            f"{fmt_ci((c.meta.ci_low, c.meta.ci_high), 2)} over {k} tasks (random effects, Hartung-Knapp), p Holm "
            f"{fmt_p(c.p_adjusted)}; heterogeneity I² {fmt(100 * c.meta.i2, 0)}%, Q p Holm "
            f"{fmt_p(c.p_heterogeneity_adjusted)}: **{state}**."
        )
    if across.aggregate is not None:
        lines.append(f"- Aggregate ({across.aggregate.how}), n = {len(across.seeds)} seeds:")
        lines += [f"  - {line}" for line in verdict_lines(across.aggregate.comparisons, digits=3)]
    return [*lines, ""]


def findings_markdown(model: ReportModel) -> str:
    """The generated findings as the report prints them (per task, then across tasks)."""
    text = "Per task:\n\n" + "\n".join(summary_per_task(model)).rstrip() + "\n"
    across = summary_across_tasks(model)
    if across:
        text += "\nAcross tasks:\n\n" + "\n".join(across).rstrip() + "\n"
    return text
