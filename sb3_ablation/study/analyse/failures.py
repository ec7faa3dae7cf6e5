"""Failure as an outcome: how often each variant did not learn, or its critic diverged, against the baseline.

RL runs fail in a few seeds (the critic diverges, the policy never leaves a plateau); an average hides that, and a
variant can differ in its failure rate while its successful runs are equivalent. Per env and variant the report gives
the failure rate with its exact (Clopper-Pearson) interval, an exact paired test against the baseline on the seeds both
ran (McNemar: only seeds where one failed and the other did not count), and the mean of the worst quarter of the runs'
final-window returns (a CVaR-style "worst seeds" summary, Chan et al. 2020) beside the IQM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.outcomes import (
    critic_diverged,
    did_not_learn,
    divergence_bound,
    env_failure_threshold,
    run_outcome,
)
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

#: the share of runs the "worst seeds" summary averages
WORST_FRACTION = 0.25


def failure_rate(failed: Sequence[bool] | np.ndarray, alpha: float = 0.05) -> tuple[int, int, float, float, float]:
    """
    The failure rate with its exact interval.

    :param failed: one flag per run
    :param alpha: one minus the interval's coverage
    :return: ``(failures, runs, rate, low, high)`` with the exact (Clopper-Pearson) (1 - alpha) interval; NaN for no runs
    """
    flags = np.asarray(failed, dtype=bool).ravel()
    k, n = int(flags.sum()), len(flags)
    if n == 0:
        return 0, 0, math.nan, math.nan, math.nan
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return k, n, k / n, float(ci.low), float(ci.high)


def paired_failure_test(failed_variant: Sequence[bool] | np.ndarray, failed_baseline: Sequence[bool] | np.ndarray) -> float:
    """
    Exact McNemar test of "the variant fails as often as the baseline" on paired seeds.

    :param failed_variant: one flag per seed
    :param failed_baseline: one flag per seed, in the same order
    :return: the two-sided binomial p on the discordant pairs; 1 when no pair is discordant
    """
    a, b = np.asarray(failed_variant, dtype=bool), np.asarray(failed_baseline, dtype=bool)
    only_variant, only_baseline = int(np.sum(a & ~b)), int(np.sum(~a & b))
    if only_variant + only_baseline == 0:
        return 1.0
    return float(stats.binomtest(only_variant, only_variant + only_baseline, 0.5).pvalue)


def worst_mean(values: Sequence[float] | np.ndarray, fraction: float = 0.25) -> float:
    """
    A CVaR-style summary of a variant's failures (Chan et al. 2020).

    :param values: one return per seed
    :param fraction: the share of worst seeds
    :return: the mean of the worst (lowest) ceil(fraction * n) values, at least one; NaN for no values
    """
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if not len(ordered):
        return math.nan
    return float(ordered[: max(1, math.ceil(fraction * len(ordered)))].mean())


@dataclass(frozen=True)
class FailureCount:
    """
    How many runs of a variant failed in one sense, and the exact test against the baseline.

    :param failed: runs that failed
    :param n: runs judged
    :param ci: exact 95% (Clopper-Pearson, at the plan's alpha) interval of the failure rate
    :param p_vs_baseline: exact McNemar p on the seeds both ran (``None`` for the baseline itself)
    """

    failed: int
    n: int
    ci: tuple[float, float]
    p_vs_baseline: float | None

    @property
    def rate(self) -> float:
        return self.failed / self.n if self.n else math.nan


@dataclass(frozen=True)
class VariantFailures:
    variant: str
    did_not_learn: FailureCount | None  # None: the task has no failure threshold
    diverged: FailureCount
    worst_mean: float  # mean final-window return of the worst WORST_FRACTION of runs


#: the failures of :func:`env_failures`: by the plan's failure outcome
PLAN_RULES = "plan"
#: the failures of :func:`~sb3_ablation.study.analyse.learning.learning_failures`: by the rules of 'Where TD3 learns'
LEARNING_RULES = "learning"


@dataclass(frozen=True)
class EnvFailures:
    """
    :param threshold: the final-window return below which a run did not learn (``None``: not assessed)
    :param threshold_how: how it was set
    :param divergence_bound: the |overestimation| beyond which a critic diverged (NaN: per run, by the learning rules)
    :param variants: variant -> its failures
    :param rules: which definition counted them (:data:`PLAN_RULES` or :data:`LEARNING_RULES`): a report uses one
    """

    env: str
    threshold: float | None
    threshold_how: str
    divergence_bound: float
    variants: dict[str, VariantFailures]
    rules: str = PLAN_RULES


def count_failures(flags: dict[int, bool], baseline_flags: dict[int, bool] | None, alpha: float) -> FailureCount:
    """
    One sense of failure of a variant's runs, with its exact interval and the exact McNemar test against the baseline.

    :param flags: seed -> the run failed (runs not judged left out)
    :param baseline_flags: the baseline's (``None``: no test, e.g. the baseline itself)
    :param alpha: one minus the interval's coverage
    """
    failed, n, _, low, high = failure_rate(np.array(list(flags.values()), dtype=bool), alpha)
    p = None
    if baseline_flags is not None:
        seeds = sorted(set(flags) & set(baseline_flags))
        variant = np.array([flags[s] for s in seeds], dtype=bool)
        baseline = np.array([baseline_flags[s] for s in seeds], dtype=bool)
        p = float(paired_failure_test(variant, baseline))
    return FailureCount(int(failed), int(n), (float(low), float(high)), p)


def env_failures(data: StudyData, env: str, baseline: str | None, plan: AnalysisPlan) -> EnvFailures:
    """The failure outcome of every variant of ``env`` (see the module docstring)."""
    threshold, how = env_failure_threshold(data, env, plan)
    bound = divergence_bound(data, env, plan)
    by_variant = {v: data.runs[env][v] for v in data.variants if v in data.runs.get(env, {})}
    learned: dict[str, dict[int, bool]] = {}
    diverged: dict[str, dict[int, bool]] = {}
    for variant, runs in by_variant.items():
        flags = {run.seed: did_not_learn(run, threshold, plan) for run in runs}
        learned[variant] = {seed: flag for seed, flag in flags.items() if flag is not None}
        diverged[variant] = {run.seed: critic_diverged(run, bound) for run in runs if run.has("overestimation")}
    variants = {}
    for variant, runs in by_variant.items():
        reference = None if baseline is None or variant == baseline or baseline not in by_variant else baseline
        returns = np.array([run_outcome(run, "final_window", plan) for run in runs])
        returns = returns[np.isfinite(returns)]
        variants[variant] = VariantFailures(
            variant,
            None if threshold is None else count_failures(learned[variant], learned.get(reference or ""), plan.alpha),
            count_failures(diverged[variant], diverged.get(reference or ""), plan.alpha),
            float(worst_mean(returns, WORST_FRACTION)) if len(returns) else math.nan,
        )
    return EnvFailures(env, threshold, how, bound, variants)
