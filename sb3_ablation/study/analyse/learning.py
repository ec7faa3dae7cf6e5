"""Where TD3 learns, per task of a study: the failure rules applied to every run, TD3's budget progress, each variant
against the baseline in two parts (:func:`env_learning`), and for a factorial its learning region, failure rates per
effect, conditional effects and the ceiling of the region (:func:`factorial_learning`). These are the results a report
model holds (one :class:`EnvLearning` per task, one :class:`FactorialLearning` per factorial task).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from sb3_ablation.study.analyse.budget import (
    AT_CEILING,
    BudgetProgress,
    Ceiling,
    budget_progress,
    ceiling,
)
from sb3_ablation.study.analyse.factorial import study_design
from sb3_ablation.study.analyse.failures import LEARNING_RULES, EnvFailures, VariantFailures, count_failures
from sb3_ablation.study.analyse.inference import EQUIVALENT, Comparison, holm
from sb3_ablation.study.analyse.learning_region import (
    AT_FLOOR,
    ConditionalEffects,
    LearningRegion,
    conditional_effects,
    floor_label,
    learning_region,
)
from sb3_ablation.study.analyse.outcomes import study_references
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.run_fates import RunFate, fate_arrays, study_fates
from sb3_ablation.study.analyse.two_part import (
    FAILURES_IN_AN_ARM,
    FactorTwoPart,
    TwoArm,
    factorial_two_part,
    rare_failure_guard,
    return_label,
    two_arm,
)
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import Design
from sb3_ablation.study.plan.learning_rules import LearningRules, learning_threshold


@dataclass(frozen=True)
class EnvLearning:
    """
    :param env: the task
    :param threshold: the final-window return below which a run did not learn (``None``: no rule on this task)
    :param threshold_how: how it was set
    :param fates: variant -> seed -> the run judged by the rules
    :param budget: TD3's progress at the study's budget (``None``: no TD3 runs, or no reference)
    :param two_arm: variant -> its two-part comparison with the baseline
    :param ceiling: whether the baseline and every variant sit at the task's ceiling (``None``: no reference, or no
        finite return)
    :param labels: variant -> what an ``equivalent`` of its comparison with the baseline must carry
        (:func:`equivalence_label`, and under the ``partitioned`` rule, where that gives nothing,
        :func:`~sb3_ablation.study.analyse.two_part.rare_failure_guard`; ``None``: nothing)
    :param failure_p_adjusted: variant -> the exact McNemar p of its failure rate against the baseline's, Holm over the
        task's variants (the failure family: its rate differs where this is at most the plan's alpha)
    :param rules: the rules applied
    """

    env: str
    threshold: float | None
    threshold_how: str
    fates: dict[str, dict[int, RunFate]]
    budget: BudgetProgress | None
    two_arm: dict[str, TwoArm]
    ceiling: Ceiling | None = None
    labels: dict[str, str | None] = field(default_factory=dict)
    failure_p_adjusted: dict[str, float] = field(default_factory=dict)
    rules: LearningRules = field(default_factory=LearningRules)


def _mean_return(runs: Mapping[int, RunFate]) -> float:
    values = [fate.final_return for fate in runs.values() if math.isfinite(fate.final_return)]
    return float(np.mean(values)) if values else math.nan


def equivalence_label(
    env: str, variant: Mapping[int, RunFate], baseline: Mapping[int, RunFate], rules: LearningRules
) -> str | None:
    """
    What an ``equivalent`` between a variant and the baseline must carry, from the runs' fates alone (the label is a
    property of the runs, the same for every outcome of the pair); ``None``: it may stand as plain ``equivalent``.
    The first that applies:

    1. ``at floor``: every run of both arms failed (did not learn, or its critic diverged). The arms agree because
       neither learned at this budget: the equivalence says the budget is too short, not that the component does
       nothing.
    2. ``failures in an arm``: either arm has a failed run. A test of the return reads a failed run as one low value
       (one low rank), which it cannot tell from a poor run that learned: the equivalence is withheld
       (``unresolved (failures in an arm)``, as :func:`~sb3_ablation.study.analyse.two_part.return_label` has it
       it); the failure rates and the return among the runs that learned answer there.
    3. ``at ceiling``: no run failed, and both arms' mean final-window returns sit at the task's ceiling
       (:func:`~sb3_ablation.study.analyse.budget.ceiling` of the two means: within ``ceiling_fraction`` of the span
       below the paper's reference, and within as much of each other): the task is solved at this budget, and the
       equivalence says it is too easy there, not that TD3 does not need the component.

    A task without a failure rule (no measured random return or no reference) judges failures by the divergence rule
    alone and has no ceiling: only rules 1 and 2 on diverged critics can apply there. TD3's budget progress
    (:attr:`EnvLearning.budget`) is no label: runs that learned at a short budget are compared fairly at that budget,
    and the report states the progress beside every task's verdicts instead.

    :param variant: seed -> the variant's runs judged by the rules (:attr:`EnvLearning.fates`)
    :param baseline: seed -> the baseline's
    """
    runs = [*variant.values(), *baseline.values()]
    if not variant or not baseline:
        return None
    if all(fate.failed for fate in runs):
        return AT_FLOOR
    if any(fate.failed for fate in runs):
        return FAILURES_IN_AN_ARM
    found = ceiling(env, {"variant": _mean_return(variant), "baseline": _mean_return(baseline)}, rules)
    return AT_CEILING if found is not None and found.at_ceiling else None


def env_learning(
    data: StudyData,
    env: str,
    baseline: str | None,
    plan: AnalysisPlan,
    rules: LearningRules,
    margin: float = math.nan,
    threshold: float | None = None,
) -> EnvLearning:
    """
    The rules on one task of a study.

    :param baseline: the variant the others are compared with (``None``: no comparisons)
    :param margin: the equivalence margin of the learned runs' return
    :param threshold: the learning threshold (default: the rule's,
        :func:`~sb3_ablation.study.plan.learning_rules.learning_threshold`)
    """
    how = "given"
    if threshold is None:
        threshold, how = learning_threshold(env, rules)
    fates = study_fates(data, env, rules, plan, threshold)
    budget_steps = study_references(data, env).budget
    td3 = fates.get("td3", {})
    budget = budget_progress(env, [fate.final_return for fate in td3.values()], budget_steps) if td3 else None
    comparisons = {}
    if baseline is not None and baseline in fates:
        base = fates[baseline]
        for variant, runs in fates.items():
            if variant != baseline:
                comparisons[variant] = two_arm(
                    ({s: f.failed for s, f in runs.items()}, {s: f.failed for s, f in base.items()}),
                    ({s: f.final_return for s, f in runs.items()}, {s: f.final_return for s, f in base.items()}),
                    plan.alpha, margin, plan.test, plan.equivalence_test,
                )  # fmt: skip
    labels = {} if baseline is None else {v: equivalence_label(env, fates[v], fates[baseline], rules) for v in comparisons}
    if plan.claim_rule == "partitioned" and baseline is not None:
        # only new plans: the committed plans keep the rule they declared, and their reports stay as they were
        base_mean, share = _mean_return(fates[baseline]), plan.alpha / max(1, len(comparisons))
        for variant, label in labels.items():
            if label is None:
                labels[variant] = rare_failure_guard(comparisons[variant].variant, base_mean, threshold, margin, share)
    at_ceiling = ceiling(env, {variant: _mean_return(runs) for variant, runs in fates.items()}, rules)
    adjusted = holm([c.p_failure for c in comparisons.values()]) if comparisons else np.array([])
    failure_p = {variant: float(p) for variant, p in zip(comparisons, adjusted, strict=True)}
    return EnvLearning(env, threshold, how, fates, budget, comparisons, at_ceiling, labels, failure_p, rules)


def learning_failures(learning: EnvLearning, failures: EnvFailures, baseline: str | None, alpha: float) -> EnvFailures:
    """
    A task's failures counted by the rules of 'Where TD3 learns' (:attr:`EnvLearning.fates`), the one definition of
    "did not learn" and "critic diverged" a report uses wherever it applies them (the labels, the two-part comparisons
    and the findings), in the shape of the plan's failure outcome (:func:`~sb3_ablation.study.analyse.failures.env_failures`).

    :param learning: the task's learning analysis
    :param failures: the plan's failure outcome of the task (its worst-runs summary is kept)
    :param baseline: the variant the others are tested against
    :param alpha: one minus the intervals' coverage
    """
    base = learning.fates.get(baseline or "")
    variants = {}
    # in the order of the plan's failure outcome (the study's variants)
    order = [v for v in failures.variants if v in learning.fates] + [v for v in learning.fates if v not in failures.variants]
    for variant in order:
        runs = learning.fates[variant]
        reference = None if base is None or variant == baseline else base
        learned = {s: bool(f.did_not_learn) for s, f in runs.items() if f.did_not_learn is not None}
        diverged = {s: bool(f.diverged) for s, f in runs.items() if f.diverged is not None}
        reference_learned = None if reference is None else {s: bool(f.did_not_learn) for s, f in reference.items()}
        reference_diverged = None if reference is None else {s: bool(f.diverged) for s, f in reference.items()}
        previous = failures.variants.get(variant)
        variants[variant] = VariantFailures(
            variant,
            None if learning.threshold is None else count_failures(learned, reference_learned, alpha),
            count_failures(diverged, reference_diverged, alpha),
            previous.worst_mean if previous is not None else math.nan,
        )
    how = f"the rules of 'Where TD3 learns': {learning.threshold_how}"
    return EnvFailures(learning.env, learning.threshold, how, math.nan, variants, LEARNING_RULES)


@dataclass(frozen=True)
class FactorialLearning:
    """
    :param env: the task
    :param design: the design its variants form
    :param seeds: the seeds of the arrays' columns
    :param region: the learning region (from the failure outcome alone)
    :param two_part: per factor over the whole design: failure rates on and off with the exact stratified test, and
        the return among the runs that learned
    :param two_part_in_region: the same within the region
    :param conditional: each component's effect on the final-window return within the region
    :param ceiling: whether the region's cells sit at the task's ceiling (``None``: no reference)
    :param main_labels: word -> what the main effect's verdict must carry (no ``equivalent`` averaged over floor
        cells, :func:`~sb3_ablation.study.analyse.learning_region.floor_label`; ``None``: nothing), where given the main
        effects
    :param conditional_labels: factor -> what its conditional effect's verdict must carry (``None``: nothing):
        :data:`~sb3_ablation.study.analyse.two_part.FAILURES_IN_AN_ARM` for an ``equivalent`` where the region's runs
        with it on or off include failures (:func:`~sb3_ablation.study.analyse.two_part.return_label`), else
        :data:`~sb3_ablation.study.analyse.budget.AT_CEILING` for an ``equivalent`` where the region sits at the
        task's ceiling (:func:`~sb3_ablation.study.render.labels.qualified_verdict` gives the verdict with it)
    """

    env: str
    design: Design
    seeds: tuple[int, ...]
    region: LearningRegion
    two_part: dict[str, FactorTwoPart]
    two_part_in_region: dict[str, FactorTwoPart]
    conditional: ConditionalEffects
    ceiling: Ceiling | None
    main_labels: dict[str, str | None]
    conditional_labels: dict[str, str | None] = field(default_factory=dict)


def factorial_learning(
    data: StudyData,
    env: str,
    fates: dict[str, dict[int, RunFate]],
    plan: AnalysisPlan,
    rules: LearningRules,
    margin: float,
    main: Mapping[str, Comparison] | None = None,
) -> FactorialLearning | None:
    """
    The learning region and the effects within it of a factorial task (``None``: its variants form no design).

    :param fates: :attr:`EnvLearning.fates` of the task
    :param margin: the equivalence margin of the conditional effects
    :param main: the main effects' comparisons (word -> comparison, e.g.
        :attr:`~sb3_ablation.study.analyse.factorial.FactorialResult.main`), to be labelled
    """
    found = study_design(data, env)
    if found is None:
        return None
    design, variant_of = found
    names = [variant_of["".join("+" if cell[f] else "-" for f in design.factors)] for cell in design.cells]
    seeds = sorted({seed for variant in names for seed in fates.get(variant, {})})
    returns, failed = fate_arrays(fates, names, seeds)
    region = learning_region(design, failed, rules)
    means = {names[row]: float(np.nanmean(returns[row])) for row in region.rows if np.isfinite(returns[row]).any()}
    in_region = factorial_two_part(design, returns, failed, plan.alpha, rows=region.rows)
    conditional = conditional_effects(design, returns, seeds, region, plan, margin)
    top = ceiling(env, means, rules)
    labels: dict[str, str | None] = {}
    for factor, comparison in conditional.effects.items():
        label = return_label(comparison, in_region[factor].on, in_region[factor].off)
        at_ceiling = comparison.verdict == EQUIVALENT and top is not None and top.at_ceiling
        labels[factor] = label or (AT_CEILING if at_ceiling else None)
    return FactorialLearning(
        env,
        design,
        tuple(seeds),
        region,
        factorial_two_part(design, returns, failed, plan.alpha),
        in_region,
        conditional,
        top,
        {word: floor_label(comparison, region) for word, comparison in (main or {}).items()},
        labels,
    )
