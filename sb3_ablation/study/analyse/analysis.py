"""The report model: every number and verdict of a study's report, computed before anything is rendered.

:func:`build_model` reads a loaded study (:mod:`~sb3_ablation.study.analyse.results`) under its analysis plan
(:mod:`~sb3_ablation.study.plan.analysis_plan`) and returns a :class:`ReportModel`: per env and outcome the
per-variant estimates (IQM with stratified-bootstrap CIs, :mod:`~sb3_ablation.study.analyse.statistics`: effect sizes,
not corrected), the verdicts of the variant-vs-baseline family (:func:`~sb3_ablation.study.analyse.inference.compare_family`:
the plan's paired test, one family-wise alpha for ``differs`` and ``equivalent``), the margins in three units, the
failure outcome (:mod:`~sb3_ablation.study.analyse.failures`), and across envs the task-level meta-analysis
(:mod:`~sb3_ablation.study.analyse.across`). Where the plan names confirmatory seeds, the other seeds form a
replication, analysed on their own. :func:`~sb3_ablation.study.analyse.report.analyse_study` adds the extra analyses
(factorial, engines, tuning) and the figures' data; :mod:`~sb3_ablation.study.render` renders the model
(:mod:`~sb3_ablation.study.analyse.report_model` holds its types).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from sb3_ablation.study.analyse.across import across_tasks
from sb3_ablation.study.analyse.failures import env_failures
from sb3_ablation.study.analyse.family_verdicts import UNRESOLVED, claims_guarantee, exclusive_claims
from sb3_ablation.study.analyse.inference import (
    Comparison,
    compare_family,
    family_description,
    minimum_detectable_effect,
    seeds_needed,
)
from sb3_ablation.study.analyse.outcomes import (
    OutcomeSpec,
    outcome_spec,
    outcome_values,
    study_references,
    study_up_to,
    value_span,
)
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES, location, paired_interval, paired_p_values, tost_p_value
from sb3_ablation.study.analyse.report_model import (
    NO_MARGIN_PLANNED,
    EarlierBudgetEstimates,
    EarlierResult,
    EnvResult,
    Looks,
    Margin,
    OutcomeResult,
    ReportModel,
)
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.sequential import (
    OPEN,
    SEQUENTIAL_GUARANTEES,
    nominal_alpha,
    sequential_family,
    spent_alpha,
)
from sb3_ablation.study.analyse.statistics import MIN_RUNS, VariantStats, min_permutation_p, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, EarlierBudget, env_margin

#: a one-sided alternative as a hypothesis's name reads it (the variant's outcome minus the baseline's)
ONE_SIDED_WORDS = {"greater": "ahead", "less": "behind"}


def _margin(data: StudyData, env: str, plan: AnalysisPlan, spec: OutcomeSpec, baseline_values: np.ndarray) -> Margin:
    """The equivalence margin of one env and outcome (never from the study's own results) in its three units."""
    references = study_references(data, env)
    if plan.claim_rule == "differs":
        return Margin(math.nan, NO_MARGIN_PLANNED, math.nan, None)
    if spec.is_return:
        value, how = env_margin(plan, references)
        span = references.span
    else:
        span = value_span(data, env, references)
        value = None if span is None else plan.reference_fraction * span
        how = (
            "none: the task has no reference span at this budget"
            if span is None
            else f"{plan.reference_fraction:.0%} of the reference span in discounted value per state ({span:,.1f})"
        )
    value = math.nan if value is None else float(value)
    sd = float(np.std(baseline_values, ddof=1)) if len(baseline_values) >= 2 else math.nan
    return Margin(
        value,
        how,
        value / sd if sd > 0 else math.nan,
        value / span if spec.is_return and span else None,
    )


def paired_differences(stats: dict[str, VariantStats], baseline: str) -> dict[str, np.ndarray]:
    return {v: np.asarray(s.paired_diffs) for v, s in stats.items() if v != baseline}


def restricted(data: StudyData, seeds: set[int], keep: bool = True) -> StudyData:
    """The study with only the runs of ``seeds`` (``keep=False``: all but those seeds)."""
    runs = {
        env: {v: [run for run in rs if (run.seed in seeds) == keep] for v, rs in by_variant.items()}
        for env, by_variant in data.runs.items()
    }
    runs = {env: {v: rs for v, rs in by_variant.items() if rs} for env, by_variant in runs.items()}
    return dataclasses.replace(data, runs={env: by_variant for env, by_variant in runs.items() if by_variant})


def _sequential(
    stats: dict[str, VariantStats], baseline: str, plan: AnalysisPlan, margin: float, seed: int
) -> tuple[Looks, dict[str, Comparison]]:
    """
    The primary outcome's family under the plan's group-sequential design
    (:func:`~sb3_ablation.study.analyse.sequential.sequential_family`): look k takes the first ``looks[k]`` of the
    baseline's seeds in increasing order (the confirmatory seeds, where the plan names them). Each comparison's
    estimate and interval are those of the look that decided it, or of the last look reached.
    """
    order = tuple(sorted(stats[baseline].seeds))[: plan.looks[-1]]
    reached = sum(1 for n in plan.looks if n <= len(order))
    has_margin = bool(math.isfinite(margin) and margin > 0)
    p_values: dict[str, list[float]] = {}
    p_equivalence: dict[str, float] = {}
    by_seed: dict[str, dict[int, float]] = {}
    for variant, s in stats.items():
        if variant == baseline:
            continue
        by_seed[variant] = dict(zip(s.paired_seeds, s.paired_diffs, strict=True))
        p_values[variant] = []
        for n in plan.looks[:reached]:
            block = order[:n]
            if not all(k in by_seed[variant] for k in block):
                break  # a run of this look is missing: the look is not reached for this comparison
            d = np.array([by_seed[variant][k] for k in block])
            p_values[variant].append(float(paired_p_values(d, plan.test, 0.0, "two-sided", seed)))
        if has_margin and len(p_values[variant]) == len(plan.looks):
            d = np.array([by_seed[variant][k] for k in order])
            p_equivalence[variant] = float(tost_p_value(d, plan.equivalence_test, margin, seed))
    rule = plan.claim_rule
    exclusive = exclusive_claims(rule, plan.test, plan.equivalence_test)
    decisions = sequential_family(p_values, p_equivalence, plan.looks, plan.alpha, plan.boundary, exclusive, has_margin)
    if rule == "differs-and-equivalent":
        description = (
            f"{TEST_NAMES[plan.test]} at group-sequential looks ({', '.join(map(str, plan.looks))} seeds, "
            f"{plan.boundary} alpha spending); equivalence: TOST with the {TEST_NAMES[plan.equivalence_test]} at the "
            f"last look; one family-wise alpha for differs and equivalent (Maurer-Bretz, "
            f"{'Shaffer' if exclusive else 'Holm'})"
        )
    else:
        looks = f" at group-sequential looks ({', '.join(map(str, plan.looks))} seeds, {plan.boundary} alpha spending)"
        description = family_description(rule, plan.test, plan.equivalence_test, looks) + " (Maurer-Bretz)"
    comparisons = {}
    for variant, decision in decisions.items():
        look = decision.look if decision.look is not None else decision.looks_reached - 1
        block = order[: plan.looks[look]] if look >= 0 else ()
        d = np.array([by_seed[variant][k] for k in block])
        one = compare_family(
            {variant: d}, plan.alpha, margin, plan.power, MIN_RUNS, plan.test, seed, plan.equivalence_test, rule
        )
        if decision.verdict == OPEN:
            nxt = plan.looks[decision.looks_reached]
            reason = f"open: the design's next look is at {nxt} seeds"
        elif decision.verdict == UNRESOLVED:
            reason = f"neither boundary reached by the last look ({plan.looks[-1]} seeds)"
        else:
            reason = ""
        comparisons[variant] = dataclasses.replace(
            one[variant],
            verdict=UNRESOLVED if decision.verdict == OPEN else decision.verdict,
            p_adjusted=math.nan,
            p_equivalence=decision.p_equivalence,
            p_equivalence_adjusted=math.nan,
            family_size=len(decisions),
            # at the comparison's share of alpha, as for one look (the design's boundaries cost a little more)
            mde=minimum_detectable_effect(one[variant].sd, len(d), decision.level, plan.power),
            seeds_needed=seeds_needed(one[variant].effect, one[variant].sd, decision.level, plan.power),
            test=description,
            reason=reason,
            within=False,
        )
    spent = tuple(spent_alpha(plan.boundary, n / plan.looks[-1], plan.alpha) for n in plan.looks)
    nominal = {variant: nominal_alpha(decision.boundaries) for variant, decision in decisions.items()}
    return Looks(plan.looks, plan.boundary, order, reached, decisions, spent, nominal), comparisons


def _earlier_name(hypothesis: EarlierBudget) -> str:
    """How a report names a hypothesis at an earlier budget: ``variant at 300,000 steps (one-sided: ahead)``."""
    side = ONE_SIDED_WORDS.get(hypothesis.alternative)
    return f"{hypothesis.variant} at {hypothesis.budget:,} steps" + (f" (one-sided: {side})" if side else "")


def _values_up_to(data: StudyData, env: str, budget: int, variant: str, plan: AnalysisPlan) -> dict[int, float]:
    """Seed -> the primary outcome computed from the run's evaluations up to ``budget``, as if it had ended there."""
    return dict(zip(*outcome_values(study_up_to(data, budget), env, variant, plan.primary, plan), strict=True))


def _paired(variant: dict[int, float], baseline: dict[int, float]) -> np.ndarray:
    """The per-seed differences (variant - baseline) on the seeds both arms have."""
    return np.array([variant[k] - baseline[k] for k in sorted(baseline) if k in variant], dtype=np.float64)


def _earlier_differences(
    data: StudyData, env: str, hypothesis: EarlierBudget, baseline: str, plan: AnalysisPlan
) -> np.ndarray:
    """
    The per-seed differences (variant - baseline) of the primary outcome computed from each run's evaluations up to
    the hypothesis's budget, as if the runs had ended there, on the seeds both arms have.
    """
    return _paired(
        _values_up_to(data, env, hypothesis.budget, hypothesis.variant, plan),
        _values_up_to(data, env, hypothesis.budget, baseline, plan),
    )


def _earlier_estimates(
    data: StudyData, env: str, variants: list[str], baseline: str, plan: AnalysisPlan, seed: int
) -> tuple[EarlierBudgetEstimates, ...]:
    """Every arm at each budget of the plan's ``earlier_budgets``, described (:class:`EarlierBudgetEstimates`)."""
    described = []
    for budget in sorted({h.budget for h in plan.earlier_budgets}):
        values = {v: _values_up_to(data, env, budget, v, plan) for v in variants}
        estimates = {}
        for variant in variants:
            d = _paired(values[variant], values[baseline])
            if variant != baseline and len(d) >= MIN_RUNS:
                estimates[variant] = (len(d), location(d, plan.test), *paired_interval(d, plan.test, 0.05, seed))
        means = {v: float(np.mean(list(x.values()))) for v, x in values.items() if x}
        described.append(EarlierBudgetEstimates(budget, means, estimates))
    return tuple(described)


def _env_result(data: StudyData, env: str, baseline: str | None, plan: AnalysisPlan, reps: int, seed: int) -> EnvResult:
    by_variant = data.runs.get(env, {})
    variants = [v for v in data.variants if v in by_variant]
    base_runs = (by_variant.get(baseline, []) if baseline is not None else []) or next(iter(by_variant.values()), [])
    timesteps = base_runs[0].curve("mean_return")[0] if base_runs else np.zeros(0, dtype=np.int64)
    steps = int(timesteps[-1]) if len(timesteps) else 0
    window = [int(t) for t in timesteps if t >= (1 - plan.final_fraction) * steps]
    untrained = float(np.mean([run.curve("mean_return")[1][0] for run in base_runs])) if base_runs else math.nan
    outcomes = []
    for key in plan.outcomes:
        spec = outcome_spec(key, plan)
        values = {v: outcome_values(data, env, v, key, plan) for v in variants}
        values = {v: sv for v, sv in values.items() if len(sv[1])}
        if not values:
            continue
        stats = outcome_statistics(
            {v: x for v, (_, x) in values.items()},
            baseline,
            reps=reps,
            seed=seed,
            seeds={v: s for v, (s, _) in values.items()},
        )
        margin = _margin(data, env, plan, spec, values[baseline][1] if baseline in values else np.zeros(0))
        differences = paired_differences(stats, baseline) if baseline in stats else {}
        earlier: dict[str, tuple[EarlierBudget, np.ndarray]] = {}
        if key == plan.primary and baseline in stats:
            earlier = {_earlier_name(h): (h, _earlier_differences(data, env, h, baseline, plan)) for h in plan.earlier_budgets}
        family = (
            compare_family(
                {**differences, **{name: d for name, (_, d) in earlier.items()}},
                plan.alpha,
                margin.value,
                plan.power,
                MIN_RUNS,
                plan.test,
                seed,
                plan.equivalence_test,
                plan.claim_rule,
                {name: h.alternative for name, (h, _) in earlier.items()},
            )
            if baseline in stats
            else {}
        )
        comparisons = {name: c for name, c in family.items() if name not in earlier}
        earlier_results = tuple(EarlierResult(h, name, family[name]) for name, (h, _) in earlier.items())
        earlier_estimates = _earlier_estimates(data, env, variants, baseline, plan, seed) if earlier and baseline else ()
        looks = None
        if plan.looks and key == plan.primary and baseline in stats:
            looks, comparisons = _sequential(stats, baseline, plan, margin.value, seed)
        n = min(s.n_runs for s in stats.values())
        base_n = stats[baseline].n_runs if baseline in stats else n
        outcomes.append(
            OutcomeResult(
                spec,
                key == plan.primary,
                stats,
                comparisons,
                margin,
                looks,
                min_permutation_p(base_n, n),
                earlier=earlier_results,
                earlier_estimates=earlier_estimates,
            )
        )
    seeds = sorted({run.seed for runs in by_variant.values() for run in runs})
    failures = env_failures(data, env, baseline, plan)
    return EnvResult(env, steps, window, untrained, outcomes, failures, study_references(data, env), seeds)


def build_model(
    data: StudyData,
    plan: AnalysisPlan,
    declared: AnalysisPlan | None,
    baseline: str | None,
    reps: int,
    seed: int,
    declared_at: dict[str, Any] | None = None,
) -> ReportModel:
    """
    Compute the whole report (see the module docstring).

    :param data: the loaded study
    :param plan: the plan to follow
    :param declared: the plan the study declared (``None``: none declared)
    :param baseline: the variant every other is compared with
    :param reps: bootstrap resamples of the IQM intervals (effect sizes; the verdicts do not use them)
    :param seed: bootstrap seed
    :param declared_at: the manifest's ``analysis_declared`` (when, and after how many finished runs)
    """
    replication = None
    if plan.seeds:
        # the verdicts use the confirmatory seeds only; the others are a replication, analysed on their own
        others = restricted(data, set(plan.seeds), keep=False)
        data = restricted(data, set(plan.seeds))
        if others.runs:
            replication = [_env_result(others, env, baseline, plan, reps, seed) for env in others.envs if others.runs.get(env)]
    variants = [v for v in data.variants if any(v in data.runs.get(env, {}) for env in data.envs)]
    envs = [_env_result(data, env, baseline, plan, reps, seed) for env in data.envs if data.runs.get(env)]
    covered = [e for e in envs if all(v in data.runs[e.env] for v in variants)]
    changes = plan.differences(declared or AnalysisPlan())
    return ReportModel(
        plan,
        declared,
        changes,
        baseline,
        variants,
        reps,
        seed,
        envs,
        across_tasks(data, covered, baseline, plan, reps, seed),
        claims_guarantee(
            plan.claim_rule, plan.claims is not None, SEQUENTIAL_GUARANTEES[plan.claim_rule] if plan.looks else None
        ),
        declared_at,
        replication=replication,
    )
