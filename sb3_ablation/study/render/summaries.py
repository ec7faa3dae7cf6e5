"""Generated summaries of a report model: the findings per task and across tasks, in plain sentences."""

from __future__ import annotations

import math

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.analysis import ReportModel
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED, Comparison
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.render.format import fmt, fmt_p


def describe_comparison(c: Comparison, digits: int = 1) -> str:
    """``no_replay_buffer -850.3 [-1,000.2, -700.1], p 0.001 -> Holm 0.006``"""
    ci = f" [{fmt(c.ci[0], digits)}, {fmt(c.ci[1], digits)}]" if c.ci else ""
    return f"{c.name} {fmt(c.effect, digits)}{ci}, p {fmt_p(c.p_raw)}, Holm {fmt_p(c.p_adjusted)}"


def verdict_lines(comparisons: dict[str, Comparison], digits: int = 1) -> list[str]:
    """The three verdicts of one family, one line each (only the non-empty ones)."""
    by = {verdict: [c for c in comparisons.values() if c.verdict == verdict] for verdict in (DIFFERS, EQUIVALENT, UNRESOLVED)}
    lines = []
    if by[DIFFERS]:
        items = "; ".join(describe_comparison(c, digits) for c in sorted(by[DIFFERS], key=lambda c: c.effect))
        lines.append(f"**differs** (paired t-test, Holm): {items}.")
    if by[EQUIVALENT]:
        margin = fmt(next(iter(by[EQUIVALENT])).margin, digits)
        items = "; ".join(
            f"{c.name} {fmt(c.effect, digits)}, TOST Holm p {fmt_p(c.p_equivalence_adjusted)}" for c in by[EQUIVALENT]
        )
        lines.append(f"**equivalent** within ±{margin} (TOST, Holm): {items}.")
    tested = [c for c in by[UNRESOLVED] if not c.reason]
    if tested:
        items = "; ".join(
            f"{c.name} {fmt(c.effect, digits)} (MDE {fmt(c.mde, digits)}; "
            + (f"{c.seeds_needed} seeds would detect it)" if c.seeds_needed else "more than 1,000 seeds to detect it)")
            for c in sorted(tested, key=lambda c: -abs(c.effect))
        )
        lines.append(f"**unresolved** (neither test rejects; minimum detectable effect at 80% power): {items}.")
    untested = [c for c in by[UNRESOLVED] if c.reason]
    if untested:
        reasons = sorted({c.reason for c in untested})
        lines.append(f"**unresolved**, no test ({'; '.join(reasons)}): {', '.join(c.name for c in untested)}.")
    return lines


def summary_per_task(model: ReportModel) -> list[str]:
    """The generated findings of each env: the verdicts of the primary outcome in full, the others briefly."""
    lines = []
    for e in model.envs:
        primary = e.outcome(model.plan.primary)
        if primary is None or not primary.comparisons:
            lines += [f"- **{e.env}**: no comparison with {model.baseline} (no finished runs of it).", ""]
            continue
        n = sorted({c.n for c in primary.comparisons.values()})
        family = max(c.family_size for c in primary.comparisons.values())
        lines.append(
            f"- **{e.env}**, {primary.outcome.name} ({plural(len(e.window), 'evaluation')}: steps "
            f"{e.window[0]:,}-{e.window[-1]:,} of {e.training_steps:,}), n = {'/'.join(map(str, n))} seed pairs, "
            + (f"family of {family}" if family else f"no test (fewer than {MIN_RUNS} pairs)")
            + f", alpha = {model.plan.alpha:g}, equivalence margin ±{fmt(primary.margin)} "
            f"({primary.margin_how}):"
        )
        lines += [f"  - {line}" for line in verdict_lines(primary.comparisons)]
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
            lines.append(
                f"  - {result.outcome.name.capitalize()}: {'; '.join(parts)}; {plural(rest, 'comparison')} unresolved."
            )
        lines.append("")
    return lines


def summary_across_tasks(model: ReportModel) -> list[str]:
    """The generated findings across envs: sign tests, the two aggregates side by side, task-dependent components."""
    across = model.across
    if across is None:
        return []
    tests = across.sign_tests
    lines = [
        f"- Sign test per component over all seed pairs of {len(across.envs)} envs (exact binomial, Holm over "
        f"{len(tests)} components), pairs in which the variant's {primary_name(model)} is higher than "
        f"{model.baseline}'s: "
        + "; ".join(
            f"{t.variant} {t.higher} of {t.higher + t.lower} (p {fmt_p(t.p_raw)}, Holm {fmt_p(t.p_adjusted)})" for t in tests
        )
        + "."
    ]
    floors = [t for t in tests if math.isfinite(t.floor) and t.floor > model.plan.alpha]
    if floors:
        lines.append(
            f"- Too few pairs for the sign test to pass the correction at alpha = {model.plan.alpha:g}: "
            + ", ".join(f"{t.variant} (smallest Holm p {fmt_p(t.floor)})" for t in floors)
            + "."
        )
    dependent = [t for t in tests if t.task_dependent]
    if dependent:
        items = "; ".join(
            f"{t.variant} ("
            + ", ".join(f"{env} {fmt(effect)}" for env, (verdict, effect) in t.verdicts.items() if verdict == DIFFERS)
            + ")"
            for t in dependent
        )
        lines.append(
            f"- **Task-dependent** (`differs` with opposite signs on different envs; the aggregates below average over "
            f"the envs and say nothing about any one of them): {items}."
        )
    else:
        lines.append("- No component `differs` with opposite signs on different envs.")
    for aggregate in across.aggregates:
        label = "min/max-normalized" if aggregate.method == "minmax" else "reference-normalized"
        verdicts = verdict_lines(aggregate.comparisons, digits=3)
        lines.append(f"- Aggregate, {label} (mean over envs of each seed's normalized difference, n = {len(across.seeds)}):")
        lines += [f"  - {line}" for line in verdicts]
    return [*lines, ""]


def primary_name(model: ReportModel) -> str:
    names = [primary.outcome.name for e in model.envs if (primary := e.outcome(model.plan.primary))]
    return names[0] if names else model.plan.primary
