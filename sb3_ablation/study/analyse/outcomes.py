"""What one run contributes to a report: its outcomes, the task references they are judged against, and whether it failed.

A run *did not learn* when its final-window return is below the plan's failure threshold
(:func:`~sb3_ablation.study.plan.analysis_plan.failure_threshold`); its critic *diverged* when the overestimation at
the end is not finite or beyond ``divergence_factor`` times the task's value span (:func:`value_span`). A diverged
critic is a failure event of the overestimation outcome, never a number to average.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import gymnasium
import numpy as np

from sb3_ablation.study.analyse.critic_bound import reward_bound_diverged, study_gamma
from sb3_ablation.study.analyse.results import RunCurves, StudyData
from sb3_ablation.study.plan.analysis_plan import (
    AnalysisPlan,
    LearningRules,
    TaskReferences,
    failure_threshold,
    task_references,
)


@dataclass(frozen=True)
class OutcomeSpec:
    """An outcome as the report names it."""

    key: str  # a name of plan.OUTCOMES
    name: str  # in a sentence
    short: str  # table header
    definition: str  # what the number of a run is
    is_return: bool  # in return units (its equivalence margin is the env's return margin)


def outcome_spec(key: str, plan: AnalysisPlan) -> OutcomeSpec:
    """How an outcome reads."""
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
    return OutcomeSpec(
        key, "overestimation at the end", "overestimation",
        "critic 1's Q(s, a) minus the discounted return, the return run past the time limit, at the last evaluation; "
        "runs whose critic diverged are failure events, not values",
        False,
    )  # fmt: skip


def run_outcome(run: RunCurves, key: str, plan: AnalysisPlan) -> float:
    """One run's value of an outcome (NaN when the run did not record it)."""
    if key == "overestimation":
        return run.final("overestimation") if run.has("overestimation") else math.nan
    timesteps, returns = run.curve("mean_return")
    if not len(returns):
        return math.nan
    if key == "last":
        return float(returns[-1])
    if key == "auc":
        return float(np.nanmean(returns))
    return float(np.nanmean(returns[timesteps >= (1 - plan.final_fraction) * timesteps[-1]]))


def outcome_values(data: StudyData, env: str, variant: str, key: str, plan: AnalysisPlan) -> tuple[np.ndarray, np.ndarray]:
    """
    ``(seeds, values)`` of an outcome over the finished runs of a variant that recorded it; for the overestimation,
    runs whose critic diverged are left out: beyond the value span's bound (:func:`critic_diverged`), or beyond what
    the run's own rewards allow (:func:`~sb3_ablation.study.analyse.critic_bound.reward_bound_diverged`, which needs no
    reference). Both are failures, counted by the failure tables, never numbers to average.
    """
    runs = data.runs.get(env, {}).get(variant, [])
    bound = divergence_bound(data, env, plan) if key == "overestimation" else math.inf
    if key == "overestimation":
        gamma, limit = study_gamma(data, env), max_episode_steps(env)
        factor = (plan.learning or LearningRules()).q_bound_factor
        runs = [run for run in runs if not reward_bound_diverged(run, gamma, limit, factor)]
    pairs = [(run.seed, run_outcome(run, key, plan)) for run in runs]
    pairs = [(seed, value) for seed, value in pairs if math.isfinite(value) and abs(value) <= bound]
    return np.array([s for s, _ in pairs], dtype=np.int64), np.array([v for _, v in pairs], dtype=np.float64)


def run_up_to(run: RunCurves, budget: int) -> RunCurves | None:
    """
    The run as if it had ended at ``budget`` steps: its evaluations and diagnostics up to that step (a run's
    evaluations up to a step do not depend on its total budget: tests/integration/test_budget_independence.py).

    :param run: a finished run
    :param budget: the earlier budget, in steps
    :return: the truncated run; ``None`` when the run has no evaluation at exactly ``budget`` steps to close its window
    """
    keep = run.timesteps <= budget
    if not keep.any() or int(run.timesteps[keep][-1]) != budget:
        return None
    kept = np.flatnonzero(keep)
    early = run.diagnostics_timesteps <= budget
    return dataclasses.replace(
        run,
        timesteps=run.timesteps[keep],
        values={metric: values[keep] for metric, values in run.values.items()},
        diagnostics_timesteps=run.diagnostics_timesteps[early],
        diagnostics={metric: values[early] for metric, values in run.diagnostics.items()},
        episode_returns=[run.episode_returns[i] for i in kept if i < len(run.episode_returns)],
        value_episodes=[run.value_episodes[i] for i in kept if i < len(run.value_episodes)],
    )


def study_up_to(data: StudyData, budget: int) -> StudyData:
    """The study as if every run had ended at ``budget`` steps (:func:`run_up_to`; runs without that step left out)."""
    runs = {
        env: {variant: [r for run in rs if (r := run_up_to(run, budget)) is not None] for variant, rs in by_variant.items()}
        for env, by_variant in data.runs.items()
    }
    return dataclasses.replace(data, runs=runs)


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
    horizon = max_episode_steps(env)
    span = references.span
    if span is None or len(gammas) != 1 or not horizon:
        return None
    gamma = float(next(iter(gammas)))
    return abs(span) / horizon * (1 - gamma**horizon) / (1 - gamma)


def max_episode_steps(env: str) -> int | None:
    """The env's registered time limit (``None``: none, or not registered)."""
    try:
        return gymnasium.spec(env).max_episode_steps  # a registry look-up: no env is made
    except gymnasium.error.Error:
        return None


def divergence_bound(data: StudyData, env: str, plan: AnalysisPlan) -> float:
    """The |overestimation| beyond which a critic diverged (infinite when the task has no value span)."""
    span = value_span(data, env, study_references(data, env))
    return math.inf if span is None else plan.divergence_factor * span


def critic_diverged(run: RunCurves, bound: float) -> bool:
    """The critic's overestimation at the end is not finite or beyond ``bound`` (a run without the measure: no)."""
    if not run.has("overestimation"):
        return False
    value = run.final("overestimation")
    return not math.isfinite(value) or abs(value) > bound


def did_not_learn(run: RunCurves, threshold: float | None, plan: AnalysisPlan) -> bool | None:
    """The run's final-window return is below the failure threshold (``None``: no threshold, or no return)."""
    value = run_outcome(run, "final_window", plan)
    if threshold is None or not math.isfinite(value):
        return None
    return value < threshold


def env_failure_threshold(data: StudyData, env: str, plan: AnalysisPlan) -> tuple[float | None, str]:
    """The plan's failure threshold of ``env`` at the study's budget, and where it comes from."""
    return failure_threshold(plan, study_references(data, env))
