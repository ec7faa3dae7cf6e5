"""Where TD3 learns, as the report shows it: per task the failure rules and how they were set, TD3's progress at the
study's budget, the ceiling flag, and each variant against the baseline in two parts (how often its runs failed, and
the return among the runs that learned), from :class:`~sb3_ablation.study.analyse.learning.EnvLearning` alone
(:func:`task_learning_lines` for ``report.md``, :func:`task_learning_json` for ``report.json``).

How every verdict is labelled: :mod:`~sb3_ablation.study.render.labels`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.analyse.inference import DIFFERS
from sb3_ablation.study.analyse.learning_region import AT_FLOOR
from sb3_ablation.study.analyse.paired_tests import ESTIMATE_NAMES
from sb3_ablation.study.analyse.two_part import FAILURES_IN_AN_ARM
from sb3_ablation.study.plan.learning_rules import paper_reference, random_return
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.json_parts import number
from sb3_ablation.study.render.labels import DESCRIPTIVE, is_rare_failures

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sb3_ablation.study.analyse.budget import BudgetProgress, Ceiling
    from sb3_ablation.study.analyse.learning import EnvLearning
    from sb3_ablation.study.analyse.run_fates import RunFate
    from sb3_ablation.study.analyse.two_part import Rate, TwoArm

#: the failure family's verdict where its Holm-adjusted p is above alpha
NO_EVIDENCE = "no evidence"
#: the regime of a variant's and the baseline's runs, by the label a verdict on their return carries
REGIMES = {
    AT_FLOOR: "no run of either arm learned",
    FAILURES_IN_AN_ARM: "failed runs in an arm",
    AT_CEILING: "both arms at the task's ceiling",
    None: "no failed run; not at the ceiling",
}
#: the regime of a pair whose equivalence the ``partitioned`` rule's failure guard withholds
RARE_REGIME = "no failed run, but too few seeds to rule out rare failures"


def _regime(label: str | None) -> str:
    """The regime of the two arms a comparison's label names."""
    return RARE_REGIME if is_rare_failures(label) else REGIMES.get(label, REGIMES[None])


def estimate_name(test: str) -> str:
    """What the plan's paired test ``test`` estimates (its point estimate of the per-seed differences)."""
    return ESTIMATE_NAMES[test]


def _counts(runs: Mapping[int, RunFate]) -> dict[str, int | None]:
    """Runs, did not learn (``None``: no rule on the task), critic diverged (of those judged), failed."""
    judged_learning = [fate.did_not_learn for fate in runs.values() if fate.did_not_learn is not None]
    judged_critic = [fate.diverged for fate in runs.values() if fate.diverged is not None]
    return {
        "runs": len(runs),
        "did_not_learn": sum(judged_learning) if judged_learning else None,
        "critic_diverged": sum(judged_critic),
        "critics_judged": len(judged_critic),
        "failed": sum(fate.failed for fate in runs.values()),
    }


def _rate_json(rate: Rate) -> dict[str, Any]:
    return {"failed": rate.failed, "n": rate.n, "rate": number(rate.rate), "ci": [number(rate.ci[0]), number(rate.ci[1])]}


def failure_verdict(p_adjusted: float, alpha: float) -> str:
    """``differs`` where the failure rate differs at the family's level (Holm over the task's variants)."""
    return DIFFERS if p_adjusted <= alpha else NO_EVIDENCE


def _learned_json(arm: TwoArm, test: str) -> dict[str, Any] | None:
    c = arm.learned
    if c is None:
        return None
    return {
        "estimate": estimate_name(test),
        "effect": number(c.effect),
        "ci": [number(c.ci[0]), number(c.ci[1])] if c.ci else None,
        "n": c.n,
        "seeds": list(arm.learned_seeds),
        "test": c.test,
        "p": number(c.p_raw),
        "p_equivalence": number(c.p_equivalence),
        "margin": number(c.margin),
        # a family of one, not corrected: descriptive (verdict_json's keys), the comparison's verdict is the primary's
        "verdict": DESCRIPTIVE,
        "test_verdict": c.verdict,
        "descriptive": True,
        "reason": c.reason or None,
    }


def _budget_json(budget: BudgetProgress | None) -> dict[str, Any] | None:
    if budget is None:
        return None
    reference, measured = paper_reference(budget.env), random_return(budget.env)
    return {
        "budget": budget.budget,
        "td3_mean": number(budget.td3_mean),
        "n": budget.n,
        "random": number(budget.random),
        "random_source": measured[1] if measured else None,
        "reference": number(budget.reference),
        "reference_budget": budget.reference_budget,
        "reference_source": reference[2] if reference else None,
        "fraction": number(budget.fraction),
        "best_fraction": number(budget.best),
    }


def ceiling_json(found: Ceiling | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "at_ceiling": found.at_ceiling,
        "distance": number(found.distance),
        "lowest": {"variant": found.lowest[0], "mean": number(found.lowest[1])},
        "spread": number(found.spread),
        "reference": number(found.reference),
    }


def task_learning_json(learning: EnvLearning, baseline: str | None, alpha: float, test: str) -> dict[str, Any]:
    """
    A task's ``learning`` entry of ``report.json``.

    :param learning: the task's learning analysis
    :param baseline: the variant the others are compared with
    :param alpha: the plan's family-wise level (the failure family's verdicts)
    :param test: the plan's paired test (names the estimate of the return among the runs that learned)
    """
    rules = learning.rules
    variants = {}
    for variant, arm in learning.two_arm.items():
        p_adjusted = learning.failure_p_adjusted.get(variant, float("nan"))
        variants[variant] = {
            **_counts(learning.fates.get(variant, {})),
            "failure_rate": {
                "variant": _rate_json(arm.variant),
                "baseline": _rate_json(arm.baseline),
                "difference": number(arm.variant.rate - arm.baseline.rate),
                "test": "exact McNemar test on the seeds both ran",
                "p": number(arm.p_failure),
                "p_adjusted": number(p_adjusted),
                "verdict": failure_verdict(p_adjusted, alpha),
            },
            "learned": _learned_json(arm, test),
            "label": learning.labels.get(variant),
        }
    return {
        "did_not_learn": {
            "threshold": number(learning.threshold),
            "how": learning.threshold_how,
            "learning_fraction": rules.learning_fraction,
        },
        "critic_diverged": {
            "rule": "critic 1's largest |Q| at the last evaluation beyond q_bound_factor x the largest |reward| of the "
            "run's own evaluation episodes / (1 - gamma)",
            "q_bound_factor": rules.q_bound_factor,
            "exact_bound_runs": sum(f.exact_bound for runs in learning.fates.values() for f in runs.values()),
        },
        "budget": _budget_json(learning.budget),
        "ceiling": ceiling_json(learning.ceiling),
        "ceiling_fraction": rules.ceiling_fraction,
        "baseline": None if baseline is None or baseline not in learning.fates else _counts(learning.fates[baseline]),
        "variants": variants,
    }


def _count_cell(count: int | None, n: int) -> str:
    return "no rule" if count is None else f"{count}/{n}"


def budget_sentence(budget: BudgetProgress | None) -> str:
    """``TD3 at 100,000 steps: mean final-window return 691.0 over 10 seeds, 19% of the way ...``"""
    if budget is None:
        return "TD3's progress at this budget: not computed (no TD3 runs, or no measured random return and reference)."
    at = f"{budget.budget:,} steps" if budget.budget else "this budget"
    reference = paper_reference(budget.env)
    source = f"; {reference[2]}" if reference and reference[2] else ""
    return (
        f"TD3 at {at}: mean final-window return {fmt(budget.td3_mean)} over {plural(budget.n, 'seed')}, "
        f"**{budget.fraction:.0%}** of the way from the random policy ({fmt(budget.random)}, measured by this package) "
        f"to the reference at {budget.reference_budget:,} steps ({fmt(budget.reference)}{source}); its best seed "
        f"{budget.best:.0%}."
    )


def _ceiling_sentence(found: Ceiling | None, fraction: float) -> str:
    if found is None:
        return "Ceiling: not judged (no measured random return or reference)."
    state = "**at its ceiling**" if found.at_ceiling else "not at its ceiling"
    return (
        f"Ceiling: the task is {state} at this budget (at its ceiling: every variant's mean within {fmt(found.distance)} "
        f"below the reference {fmt(found.reference)}, {fraction:.0%} of the span, and within as much of each other; "
        f"here the lowest is {found.lowest[0]} {fmt(found.lowest[1])} and the spread {fmt(found.spread)})."
    )


def task_learning_lines(learning: EnvLearning, baseline: str | None, alpha: float, test: str) -> list[str]:
    """
    A task's "Where TD3 learns" block of ``report.md``: the rules, TD3's budget progress, the ceiling and the table of
    each variant in two parts.

    :param learning: the task's learning analysis
    :param baseline: the variant the others are compared with
    :param alpha: the plan's family-wise level
    :param test: the plan's paired test
    """
    rules = learning.rules
    threshold = (
        f"a run **did not learn** when its final-window return is below {fmt(learning.threshold)}: {learning.threshold_how}."
        if learning.threshold is not None
        else f"**no did-not-learn rule** on this task ({learning.threshold_how}); failures are diverged critics alone."
    )
    exact = sum(f.exact_bound for runs in learning.fates.values() for f in runs.values())
    judged = sum(f.q_bound is not None for runs in learning.fates.values() for f in runs.values())
    lines = [
        "### Where TD3 learns",
        "",
        f"- Failure rules, fixed in advance and never taken from the compared runs (the analysis plan under Method says "
        f"whether this study declared them), the one definition of a failed run in this report: {threshold}",
        f"- A **critic diverged** when critic 1's largest |Q| at the last evaluation is beyond {rules.q_bound_factor:g}x "
        "the largest |reward| of the run's own evaluation episodes divided by (1 - gamma), the most a discounted return "
        f"of those rewards can be (no reference needed; {exact} of {plural(judged, 'judged run')} recorded that reward, "
        "the others bound it from below, which only tightens the bound). A diverged critic is a failure whatever its "
        "return.",
        f"- {budget_sentence(learning.budget)}",
        f"- {_ceiling_sentence(learning.ceiling, rules.ceiling_fraction)}",
        "",
    ]
    if not learning.two_arm:
        counts = _counts(learning.fates.get(baseline or "", {}))
        if counts["runs"]:
            lines += [
                f"{baseline}: {_count_cell(counts['did_not_learn'], counts['runs'] or 0)} runs did not learn, "
                f"{counts['critic_diverged']}/{counts['critics_judged']} critics diverged; nothing is compared.",
                "",
            ]
        return lines
    estimate = estimate_name(test)
    base = _counts(learning.fates.get(baseline or "", {}))
    lines += [
        f"Each variant against {baseline} in two parts: how often its runs failed (did not learn or critic diverged; "
        f"exact McNemar test on the paired seeds, Holm over the task's {plural(len(learning.two_arm), 'variant')}, "
        f"alpha = {alpha:g}), and the final-window return among the seeds where both learned ({estimate} with its "
        f"{1 - alpha:.0%} interval: descriptive, each variant its own family of one, not corrected across variants, so "
        f"no verdict; the comparison's one verdict is in the table below). {baseline}: "
        f"{_count_cell(base['did_not_learn'], base['runs'] or 0)} did not learn, "
        f"{base['critic_diverged']}/{base['critics_judged']} critics diverged.",
        "",
        "| variant | runs | did not learn | critic diverged | failure rate - baseline's | McNemar p (Holm) | failures "
        f"| return among learned (descriptive): {estimate} [CI] | learned pairs | regime of the two arms |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for variant, arm in learning.two_arm.items():
        counts = _counts(learning.fates.get(variant, {}))
        p_adjusted = learning.failure_p_adjusted.get(variant, float("nan"))
        learned = arm.learned
        learned_cells = (
            f"{fmt(learned.effect)} {fmt_ci(learned.ci)} | {learned.n}"
            if learned is not None
            else f"— (fewer than 2 pairs) | {len(arm.learned_seeds)}"
        )
        lines.append(
            f"| {variant} | {counts['runs']} | {_count_cell(counts['did_not_learn'], counts['runs'] or 0)} | "
            f"{counts['critic_diverged']}/{counts['critics_judged']} | {100 * (arm.variant.rate - arm.baseline.rate):+.0f} "
            f"pp | {fmt_p(arm.p_failure)} ({fmt_p(p_adjusted)}) | {failure_verdict(p_adjusted, alpha)} | {learned_cells} | "
            f"{_regime(learning.labels.get(variant))} |"
        )
    rare = any(is_rare_failures(label) for label in learning.labels.values())
    lines += [
        "",
        "Regime of the two arms: what a verdict on their return must carry (`cannot tell: neither arm learns` where no "
        "run of either arm learned; `unresolved (failures in an arm)` where an arm has failed runs, which a test of the "
        "return cannot see as such; `cannot tell: both arms solve the task at this budget` at the task's ceiling"
        + (
            "; under the plan's `partitioned` rule, `cannot tell: N seeds cannot rule out rare failures that would cost "
            "the margin` where the variant's seeds cannot bound its failure rate low enough: the exact one-sided upper "
            "bound at the comparison's share of alpha, times the baseline's mean return minus the failure threshold, "
            "is above the margin)."
            if rare
            else ")."
        ),
        "",
    ]
    return lines
