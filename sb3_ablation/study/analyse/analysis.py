"""The report model: every number and verdict of a study's report, computed before anything is rendered.

:func:`build_model` reads a loaded study (:mod:`~sb3_ablation.study.analyse.results`) under an analysis plan
(:mod:`~sb3_ablation.study.plan.analysis_plan`) and returns a :class:`ReportModel`: per env and outcome the per-variant
estimates
(IQM with stratified-bootstrap CIs from :mod:`~sb3_ablation.study.analyse.statistics`, effect sizes, not corrected) and the
verdicts of the variant-vs-baseline family (:func:`~sb3_ablation.study.analyse.inference.compare_family`: paired t-test with
Holm's correction, TOST equivalence, minimum detectable effect, seeds needed); across envs, a sign test per component
over all seed pairs, the aggregate under both normalizations, and the components whose effects change sign between
tasks. :mod:`~sb3_ablation.study.render.report` renders the model as markdown, figures and ``report.json``; the generated
summaries (:func:`summary_per_task`, :func:`summary_across_tasks`) are what README quotes.

Other analyses append a :class:`Section` to ``ReportModel.sections``; the report renders it after the built-in ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from scipy import stats as scipy_stats

from sb3_ablation.study.analyse.inference import DIFFERS, Comparison, compare_family, holm
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.statistics import MIN_RUNS, VariantStats, env_reference, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, TaskReferences, env_margin, task_references

OLD_MEASURE = "old measure, with the known time-limit artifact"


@dataclass(frozen=True)
class OutcomeSpec:
    """An outcome as the report names it."""

    key: str  # a name of plan.OUTCOMES
    name: str  # in a sentence
    short: str  # table header
    definition: str  # what the number of a run is
    is_return: bool  # in return units (its equivalence margin is the env's return margin)


def outcome_spec(key: str, plan: AnalysisPlan, new_measure: bool) -> OutcomeSpec:
    """How an outcome reads; ``new_measure``: the records have the overestimation without the time-limit artifact."""
    if key == "final_window":
        share = f"{plan.final_fraction:.0%}"
        return OutcomeSpec(
            key, f"mean return over the final {share} of training", f"return, final {share}",
            f"the mean of the evaluations' mean returns at or after {1 - plan.final_fraction:.0%} of training", True,
        )  # fmt: skip
    if key == "last":
        return OutcomeSpec(key, "return at the last evaluation", "last return", "the last evaluation's mean return", True)
    if key == "auc":
        return OutcomeSpec(
            key, "area under the learning curve", "area under curve",
            "the mean of the mean returns over all evaluations, i.e. the normalised area under the learning curve", True,
        )  # fmt: skip
    if new_measure:
        return OutcomeSpec(
            key, "overestimation at the end", "overestimation",
            "critic 1's Q(s, a) minus the discounted return, the return run past the time limit, at the last evaluation",
            False,
        )  # fmt: skip
    return OutcomeSpec(
        key, f"overestimation at the end ({OLD_MEASURE})", "overestimation (old measure)",
        "critic 1's Q(s, a) minus the discounted return cut at the time limit, at the last evaluation; the critic "
        "learns the uncut value, so the difference is too large by the missing tail",
        False,
    )  # fmt: skip


@dataclass
class OutcomeResult:
    """One outcome on one env: the family of variant-vs-baseline comparisons."""

    outcome: OutcomeSpec
    primary: bool
    stats: dict[str, VariantStats]  # per variant: IQM and mean with bootstrap CIs (effect sizes, not corrected)
    comparisons: dict[str, Comparison]  # per variant other than the baseline
    margin: float
    margin_how: str


@dataclass
class EnvResult:
    env: str
    training_steps: int
    window: list[int]  # the evaluation timesteps the primary outcome averages
    untrained: float  # the baseline's mean return at the step-0 evaluation
    outcomes: list[OutcomeResult]

    def outcome(self, key: str) -> OutcomeResult | None:
        return next((o for o in self.outcomes if o.outcome.key == key), None)


@dataclass
class SignTest:
    """A component across envs: the seed pairs in which the variant beats the baseline, exact binomial test."""

    variant: str
    higher: int
    lower: int
    ties: int
    p_raw: float
    p_adjusted: float
    floor: float  # the smallest Holm-adjusted p this many pairs can give
    verdicts: dict[str, tuple[str, float]]  # env -> (verdict, effect) of the primary outcome
    task_dependent: bool  # `differs` with opposite signs on different envs


@dataclass
class Aggregate:
    method: str  # minmax | reference
    how: str
    stats: dict[str, VariantStats]
    comparisons: dict[str, Comparison]
    margin: float
    scores: dict[str, np.ndarray]  # variant -> (seeds, envs) normalized primary outcome


@dataclass
class AcrossTasks:
    envs: list[str]
    seeds: list[int]
    sign_tests: list[SignTest]
    aggregates: list[Aggregate]


@dataclass
class Section:
    """An extra section of the report (e.g. a factorial analysis): its markdown lines and its part of report.json."""

    title: str
    lines: list[str]
    json: dict[str, Any] = field(default_factory=dict)
    # figures the lines refer to: file name under figures/ -> a function drawing it into the given path
    figures: dict[str, Callable[[Path], None]] = field(default_factory=dict)


@dataclass
class ReportModel:
    plan: AnalysisPlan
    declared: AnalysisPlan | None  # the plan stored in study.json before the runs; None: the study declared none
    plan_changes: list[str]  # how the plan used differs from the declared one
    baseline: str | None
    variants: list[str]
    reps: int
    seed: int
    envs: list[EnvResult]
    across: AcrossTasks | None
    sections: list[Section] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------------------------------
# Computing
# ----------------------------------------------------------------------------------------------------------------------


def run_outcome(run, key: str, plan: AnalysisPlan, new_measure: bool = False) -> float:
    """
    One run's value of an outcome (NaN when the run did not record it).

    :param new_measure: the overestimation is the measure without the time-limit artifact: runs with only the old
        measure give NaN (the two measures are never mixed in one comparison)
    """
    timesteps, returns = run.curve("mean_return")
    if key == "overestimation":
        if new_measure:
            return run.final("overestimation") if run.has("overestimation") else math.nan
        return run.final("bias")
    if not len(returns):
        return math.nan
    if key == "last":
        return float(returns[-1])
    if key == "auc":
        return float(np.nanmean(returns))
    return float(np.nanmean(returns[timesteps >= (1 - plan.final_fraction) * timesteps[-1]]))


def has_new_measure(data: StudyData, env: str) -> bool:
    """Some run of the env recorded the overestimation without the time-limit artifact (record format 3)."""
    return any(run.has("overestimation") for runs in data.runs.get(env, {}).values() for run in runs)


def outcome_values(data: StudyData, env: str, variant: str, key: str, plan: AnalysisPlan) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds, values)`` of an outcome over the finished runs of a variant that recorded it."""
    new_measure = key == "overestimation" and has_new_measure(data, env)
    pairs = [(run.seed, run_outcome(run, key, plan, new_measure)) for run in data.runs.get(env, {}).get(variant, [])]
    pairs = [(seed, value) for seed, value in pairs if math.isfinite(value)]
    return np.array([s for s, _ in pairs], dtype=np.int64), np.array([v for _, v in pairs], dtype=np.float64)


def paired_differences(stats: dict[str, VariantStats], baseline: str) -> dict[str, np.ndarray]:
    return {v: np.asarray(s.paired_diffs) for v, s in stats.items() if v != baseline}


def study_references(data: StudyData, env: str) -> TaskReferences:
    """The task's references at the study's budget for ``env`` (its training steps, from the manifest)."""
    by_algo = data.manifest.get("hyperparams", {}).get(env, {})
    budgets = {hp.get("n_timesteps") for hp in by_algo.values() if hp.get("n_timesteps") is not None}
    budget = int(next(iter(budgets))) if len(budgets) == 1 else None
    return task_references(env, budget)


def value_span(data: StudyData, env: str, references: TaskReferences) -> float | None:
    """
    The reference span in the critic's units: the span per step, discounted over an episode
    (``span / T * (1 - gamma^T) / (1 - gamma)``), the scale of the overestimation margin and divergence bound.
    """
    gammas = {hp.get("gamma", 0.99) for hp in data.manifest.get("hyperparams", {}).get(env, {}).values()}
    horizon = gym_max_episode_steps(env)
    if references.span is None or len(gammas) != 1 or not horizon:
        return None
    gamma = float(next(iter(gammas)))
    return abs(references.span) / horizon * (1 - gamma**horizon) / (1 - gamma)


def gym_max_episode_steps(env: str) -> int | None:
    """The env's registered time limit (``None``: none, or not registered)."""
    try:
        return gymnasium.spec(env).max_episode_steps  # a registry look-up: no env is made
    except Exception:
        return None


def _env_margin(data: StudyData, env: str, plan: AnalysisPlan, spec: OutcomeSpec) -> tuple[float, str]:
    """The equivalence margin of one env and outcome, and how it was set (never from the study's own results)."""
    references = study_references(data, env)
    if spec.is_return:
        margin, how = env_margin(plan, references)
        return (math.nan if margin is None else margin), how
    span = value_span(data, env, references)
    if span is None:
        return math.nan, "none: the task has no reference span at this budget"
    return plan.reference_fraction * span, (
        f"{plan.reference_fraction:.0%} of the reference span in discounted value per state ({span:,.1f})"
    )


def _env_result(data: StudyData, env: str, baseline: str | None, plan: AnalysisPlan, reps: int, seed: int) -> EnvResult:
    by_variant = data.runs.get(env, {})
    variants = [v for v in data.variants if v in by_variant]
    base_runs = (by_variant.get(baseline, []) if baseline is not None else []) or next(iter(by_variant.values()), [])
    timesteps = base_runs[0].curve("mean_return")[0] if base_runs else np.zeros(0, dtype=np.int64)
    steps = int(timesteps[-1]) if len(timesteps) else 0
    window = [int(t) for t in timesteps if t >= (1 - plan.final_fraction) * steps]
    untrained = float(np.mean([run.curve("mean_return")[1][0] for run in base_runs])) if base_runs else math.nan
    new_measure = has_new_measure(data, env)
    outcomes = []
    for key in plan.outcomes:
        spec = outcome_spec(key, plan, new_measure)
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
        margin, how = _env_margin(data, env, plan, spec)
        comparisons = (
            compare_family(paired_differences(stats, baseline), plan.alpha, margin, plan.power, MIN_RUNS)
            if baseline in stats
            else {}
        )
        outcomes.append(OutcomeResult(spec, key == plan.primary, stats, comparisons, margin, how))
    return EnvResult(env, steps, window, untrained, outcomes)


def _normalized_primary(
    data: StudyData, envs: list[EnvResult], variants: list[str], seeds: list[int], plan: AnalysisPlan, method: str
) -> tuple[dict[str, np.ndarray], dict[str, tuple[float, float]], str]:
    """The primary outcome normalized per env, a (seeds, envs) matrix per variant."""
    matrices = {v: np.array([[_value_of_seed(data, e.env, v, s, plan) for e in envs] for s in seeds]) for v in variants}
    if method == "reference":
        bounds: dict[str, tuple[float, float]] = {
            e.env: reference for e in envs if (reference := env_reference(e.env)) is not None
        }
        how = (
            "reference-normalized: (x - random) / (reference - random), random-policy and rl-zoo's published TD3 "
            "scores: " + ", ".join(f"{env} ({low:g}, {high:g})" for env, (low, high) in bounds.items())
        )
    else:
        bounds = {}
        for j, e in enumerate(envs):
            column = np.concatenate([m[:, j] for m in matrices.values()])
            bounds[e.env] = (float(column.min()), float(column.max()))
        how = "min/max-normalized: (x - lowest) / (highest - lowest) over every run of the study on that env: " + ", ".join(
            f"{env} ({low:,.1f}, {high:,.1f})" for env, (low, high) in bounds.items()
        )
    for j, e in enumerate(envs):
        low, high = bounds[e.env]
        for matrix in matrices.values():
            matrix[:, j] = (matrix[:, j] - low) / ((high - low) or 1.0)
    return matrices, bounds, how


def _value_of_seed(data: StudyData, env: str, variant: str, seed: int | None, plan: AnalysisPlan) -> float:
    runs = [run for run in data.runs.get(env, {}).get(variant, []) if run.seed == seed]
    return run_outcome(runs[0], plan.primary, plan) if runs else math.nan


def _across(
    data: StudyData, envs: list[EnvResult], baseline: str | None, plan: AnalysisPlan, reps: int, seed: int
) -> AcrossTasks | None:
    if len(envs) < 2:
        return None
    variants = [v for v in data.variants if all(data.runs.get(e.env, {}).get(v) for e in envs)]
    if baseline not in variants:
        return None
    seed_sets = [{run.seed for run in data.runs[e.env][v]} for e in envs for v in variants]
    seeds = sorted(set.intersection(*seed_sets))
    sign_tests = []
    for variant in (v for v in variants if v != baseline):
        differences = np.concatenate(
            [np.asarray(primary.stats[variant].paired_diffs) for e in envs if (primary := e.outcome(plan.primary))]
        )
        higher, lower = int(np.sum(differences > 0)), int(np.sum(differences < 0))
        p = scipy_stats.binomtest(higher, higher + lower, 0.5).pvalue if higher + lower else math.nan
        verdicts = {
            e.env: (primary.comparisons[variant].verdict, primary.comparisons[variant].effect)
            for e in envs
            if (primary := e.outcome(plan.primary)) and variant in primary.comparisons
        }
        signs = {np.sign(effect) for verdict, effect in verdicts.values() if verdict == DIFFERS}
        sign_tests.append(
            SignTest(
                variant,
                higher,
                lower,
                len(differences) - higher - lower,
                float(p),
                math.nan,
                math.nan,
                verdicts,
                signs == {-1.0, 1.0},
            )
        )
    adjusted = holm([t.p_raw for t in sign_tests])
    for test, p_adjusted in zip(sign_tests, adjusted, strict=True):
        n = test.higher + test.lower
        test.p_adjusted = float(p_adjusted)
        test.floor = min(1.0, len(sign_tests) * 2.0 * 0.5**n) if n else math.nan
    aggregates = []
    methods = ["minmax"] + (["reference"] if all(env_reference(e.env) for e in envs) else [])
    if len(seeds) >= 1:
        for method in methods:
            matrices, bounds, how = _normalized_primary(data, envs, variants, seeds, plan, method)
            stats = outcome_statistics(matrices, baseline, reps=reps, seed=seed, seeds=dict.fromkeys(matrices, seeds))
            margins = [
                primary.margin / ((bounds[e.env][1] - bounds[e.env][0]) or 1.0)
                for e in envs
                if (primary := e.outcome(plan.primary))
            ]
            margin = float(np.mean(margins))
            comparisons = compare_family(paired_differences(stats, baseline), plan.alpha, margin, plan.power, MIN_RUNS)
            aggregates.append(Aggregate(method, how, stats, comparisons, margin, matrices))
    return AcrossTasks([e.env for e in envs], seeds, sign_tests, aggregates)


def build_model(
    data: StudyData,
    plan: AnalysisPlan,
    declared: AnalysisPlan | None,
    baseline: str | None,
    reps: int,
    seed: int,
) -> ReportModel:
    """
    Compute the whole report (see the module docstring).

    :param data: the loaded study
    :param plan: the plan to follow
    :param declared: the plan the study declared (``None``: none declared)
    :param baseline: the variant every other is compared with
    :param reps: bootstrap resamples of the IQM intervals (effect sizes; the verdicts do not use them)
    :param seed: bootstrap seed
    """
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
        _across(data, covered, baseline, plan, reps, seed),
    )
