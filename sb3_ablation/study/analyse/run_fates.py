"""Did a run learn, and did its critic stay within the values its rewards allow: the failure rules of
:mod:`~sb3_ablation.study.plan.learning_rules` applied to one run (:func:`run_fate`) or to a study's runs
(:func:`study_fates`).

The divergence rule needs the largest |reward| of the run's own evaluation episodes. Records made since
``max_abs_reward`` is in ``value_episodes`` hold it exactly. Older records do not, and it is bounded from below by what
they hold: an episode's score over its ``min(steps, T)`` scored steps divided by that number (a mean |reward| per
step), and ``(1 - gamma)`` times the mean |G_t| of its measured states (``abs_return_sum / states``; |G_t| is at most
max |reward| / (1 - gamma)); the larger of the two over all evaluations and episodes. Both are below the largest
|reward|, so the bound on |Q| is tighter than the exact one: a critic called diverged with it is beyond the bound of
its true largest reward only if the approximation is off by more than ``q_bound_factor`` (:attr:`RunFate.exact_bound`
says which was used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.critic_bound import DEFAULT_GAMMA, critic_value, largest_abs_reward, study_gamma
from sb3_ablation.study.analyse.outcomes import critic_diverged, divergence_bound, max_episode_steps, run_outcome
from sb3_ablation.study.analyse.results import RunCurves, StudyData
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.learning_rules import LearningRules, learning_threshold


@dataclass(frozen=True)
class RunFate:
    """
    One run judged by the rules.

    :param seed: the run's seed
    :param final_return: its final-window return
    :param did_not_learn: below the learning threshold (``None``: the task has no threshold)
    :param diverged: its critic diverged (``None``: no Q or no rewards recorded)
    :param q: critic 1's largest |Q| at the end (:func:`critic_value`)
    :param q_bound: ``q_bound_factor * max |reward| / (1 - gamma)``
    :param exact_bound: the largest |reward| was recorded (else bounded from below)
    """

    seed: int
    final_return: float
    did_not_learn: bool | None
    diverged: bool | None
    q: float | None
    q_bound: float | None
    exact_bound: bool

    @property
    def failed(self) -> bool:
        """Did not learn, or its critic diverged (a diverged critic is a failure whatever its return)."""
        return bool(self.did_not_learn) or bool(self.diverged)


def run_fate(
    run: RunCurves,
    threshold: float | None,
    gamma: float,
    time_limit: int | None,
    rules: LearningRules,
    plan: AnalysisPlan,
    value_bound: float = math.inf,
) -> RunFate:
    """
    Apply the rules to one run (``threshold``: :func:`~sb3_ablation.study.plan.learning_rules.learning_threshold`).
    Its critic diverged where its |Q| is beyond what its rewards allow, or where its overestimation is not finite or
    beyond ``value_bound`` (:func:`~sb3_ablation.study.analyse.outcomes.critic_diverged`): the runs the overestimation
    outcome leaves out (:func:`~sb3_ablation.study.analyse.outcomes.outcome_values`), so that a report has one
    definition of a diverged critic.

    :param value_bound: the plan's bound on the |overestimation|
        (:func:`~sb3_ablation.study.analyse.outcomes.divergence_bound`)
    """
    final = run_outcome(run, "final_window", plan)
    did_not_learn = None if threshold is None or not math.isfinite(final) else bool(final < threshold)
    reward, q = largest_abs_reward(run, gamma, time_limit), critic_value(run)
    bound = None if reward is None else rules.q_bound_factor * reward[0] / (1 - gamma)
    diverged = None if bound is None or q is None else bool(q > bound)
    if critic_diverged(run, value_bound):
        diverged = True
    return RunFate(run.seed, final, did_not_learn, diverged, q, bound, reward is not None and reward[1])


def study_fates(
    data: StudyData, env: str, rules: LearningRules, plan: AnalysisPlan, threshold: float | None = None
) -> dict[str, dict[int, RunFate]]:
    """
    Every finished run of ``env`` judged by the rules: variant -> seed -> :class:`RunFate`.

    :param threshold: the learning threshold (default: :func:`~sb3_ablation.study.plan.learning_rules.learning_threshold`)
    """
    if threshold is None:
        threshold = learning_threshold(env, rules)[0]
    gamma, limit, value_bound = study_gamma(data, env), max_episode_steps(env), divergence_bound(data, env, plan)
    return {
        variant: {run.seed: run_fate(run, threshold, gamma, limit, rules, plan, value_bound) for run in runs}
        for variant, runs in data.runs.get(env, {}).items()
    }


def fate_arrays(fates: dict[str, dict[int, RunFate]], variants: list[str], seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """
    ``(returns, failed)`` of shape ``(len(variants), len(seeds))``: the final-window returns (NaN for a missing run)
    and the failure flags (NaN for a missing run), rows in the order of ``variants``.
    """
    returns = np.full((len(variants), len(seeds)), np.nan)
    failed = np.full((len(variants), len(seeds)), np.nan)
    for i, variant in enumerate(variants):
        for j, seed in enumerate(seeds):
            fate = fates.get(variant, {}).get(seed)
            if fate is not None:
                returns[i, j], failed[i, j] = fate.final_return, float(fate.failed)
    return returns, failed


def sound_critics(fates: dict[int, RunFate]) -> list[int]:
    """The seeds whose critic did not diverge (or was not judged): the runs an overestimation may be averaged over
    (a diverged critic is a failure, counted by :attr:`RunFate.failed`, never a number to average)."""
    return [seed for seed, fate in sorted(fates.items()) if not fate.diverged]


__all__ = [
    "DEFAULT_GAMMA",
    "RunFate",
    "critic_value",
    "fate_arrays",
    "largest_abs_reward",
    "run_fate",
    "sound_critics",
    "study_fates",
    "study_gamma",
]
