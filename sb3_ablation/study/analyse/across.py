"""Across tasks, the task is the unit: what a component does in general, and whether it depends on the task.

Per component (a variant against the baseline) and env, the primary outcome's paired differences give a standardized
effect (the mean difference over its SD, with its sampling variance); a random-effects meta-analysis
(DerSimonian-Laird between-task variance, Hartung-Knapp interval on k - 1 degrees of freedom) combines the envs, so
each task weighs by its precision and no task by its seed count. Heterogeneity (Cochran's Q, tau^2, I^2) says whether
the effect depends on the task: a component is *task-dependent* when the Q test rejects after Holm over the
components, not when its per-task verdicts happen to point different ways. With few tasks the Q test has little power:
"not shown task-dependent" is not "the same on every task".

The aggregate compares variants on scores normalized by fixed references (random policy -> published score,
``references.yml``), one mean over envs per seed, with the plan's paired test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

from sb3_ablation.study.analyse.inference import compare_family, holm
from sb3_ablation.study.analyse.outcomes import run_outcome
from sb3_ablation.study.analyse.report_model import AcrossTasks, Aggregate, ComponentAcrossTasks, EnvResult, MetaResult
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.statistics import MIN_RUNS, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, published_reference


def standardized_effect(d: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """
    The standardized paired effect of one task.

    :param d: the task's per-seed differences (non-finite values dropped)
    :return: ``(d_z, variance)``: mean over SD of the differences, with variance 1/n + d_z^2 / (2n); NaN with fewer
        than 2 pairs or no spread
    """
    values = np.asarray(d, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    n = len(values)
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    if not (n >= 2 and sd > 0):
        return math.nan, math.nan
    d_z = float(values.mean()) / sd
    return d_z, 1 / n + d_z**2 / (2 * n)


def random_effects(
    effects: Sequence[float] | np.ndarray, variances: Sequence[float] | np.ndarray, alpha: float = 0.05
) -> MetaResult:
    """
    DerSimonian-Laird random-effects combination with the Hartung-Knapp(-Sidik-Jonkman) interval and test on k - 1
    degrees of freedom. (statsmodels' ``combine_effects(method_re="dl")`` gives the same numbers when tau^2 > 0; it
    does not truncate tau^2 at 0.) A single task: its own effect with a normal interval.

    :param effects: one effect per task
    :param variances: their sampling variances (> 0)
    :param alpha: one minus the interval's coverage
    :return: the combined estimate, interval, p-value and heterogeneity
    """
    y, v = np.asarray(effects, dtype=np.float64), np.asarray(variances, dtype=np.float64)
    k = len(y)
    if k == 0:
        return MetaResult(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    w = 1 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    w_star = 1 / (v + tau2)
    estimate = float(np.sum(w_star * y) / np.sum(w_star))
    if k == 1:
        se = math.sqrt(float(v[0]))
        z = scipy_stats.norm.isf(alpha / 2)
        p = float(2 * scipy_stats.norm.sf(abs(estimate) / se))
        return MetaResult(estimate, estimate - z * se, estimate + z * se, p, tau2, i2, q, k)
    se = math.sqrt(float(np.sum(w_star * (y - estimate) ** 2) / ((k - 1) * np.sum(w_star))))
    t = scipy_stats.t.isf(alpha / 2, k - 1)
    p = float(2 * scipy_stats.t.sf(abs(estimate) / se, k - 1)) if se > 0 else (0.0 if estimate else 1.0)
    return MetaResult(estimate, estimate - t * se, estimate + t * se, p, tau2, i2, q, k)


def _component(
    variant: str, envs: list[EnvResult], plan: AnalysisPlan
) -> tuple[dict[str, tuple[float, float, str]], MetaResult, float]:
    effects: dict[str, tuple[float, float, str]] = {}
    for e in envs:
        primary = e.outcome(plan.primary)
        comparison = primary.comparisons.get(variant) if primary else None
        if comparison is None or comparison.n < 2:
            continue
        d_z, variance = standardized_effect(np.asarray(comparison.differences))
        if math.isfinite(d_z) and math.isfinite(variance) and variance > 0:
            effects[e.env] = (float(d_z), float(variance), comparison.verdict)
    values = np.array([v[0] for v in effects.values()])
    variances = np.array([v[1] for v in effects.values()])
    meta = random_effects(values, variances)
    p_heterogeneity = float(scipy_stats.chi2.sf(meta.q, meta.k - 1)) if meta.k >= 2 else math.nan
    return effects, meta, p_heterogeneity


def _aggregate(
    data: StudyData, envs: list[EnvResult], variants: list[str], seeds: list[int], baseline: str, plan: AnalysisPlan,
    reps: int, seed: int,
) -> Aggregate | None:  # fmt: skip
    references = {e.env: published_reference(e.env) for e in envs}
    bounds = {env: b for env, b in references.items() if b is not None}
    if len(bounds) < len(envs) or not seeds:
        return None
    matrices = {}
    for v in variants:
        rows = []
        for s in seeds:
            row = []
            for e in envs:
                low, high = bounds[e.env]
                runs = [run for run in data.runs[e.env][v] if run.seed == s]
                row.append((run_outcome(runs[0], plan.primary, plan) - low) / (high - low) if runs else math.nan)
            rows.append(row)
        matrices[v] = np.array(rows)
    margins = [
        primary.margin.value / (bounds[e.env][1] - bounds[e.env][0]) for e in envs if (primary := e.outcome(plan.primary))
    ]
    margin = float(np.mean(margins)) if margins else math.nan
    stats = outcome_statistics(
        {v: m.mean(axis=1) for v, m in matrices.items()}, baseline, reps=reps, seed=seed, seeds=dict.fromkeys(matrices, seeds)
    )
    comparisons = compare_family(
        {v: np.asarray(s.paired_diffs) for v, s in stats.items() if v != baseline},
        plan.alpha, margin, plan.power, MIN_RUNS, plan.test, seed, plan.equivalence_test, plan.claim_rule,
    )  # fmt: skip
    how = "reference-normalized score (return - random) / (reference - random), averaged over the envs per seed: " + ", ".join(
        f"{env} ({b[0]:g}, {b[1]:g})" for env, b in bounds.items() if b
    )
    return Aggregate(how, stats, comparisons, margin, matrices)


def across_tasks(
    data: StudyData, envs: list[EnvResult], baseline: str | None, plan: AnalysisPlan, reps: int, seed: int
) -> AcrossTasks | None:
    """The components across the study's envs (``None`` with fewer than two envs or no baseline on each)."""
    if len(envs) < 2:
        return None
    variants = [v for v in data.variants if all(data.runs.get(e.env, {}).get(v) for e in envs)]
    if baseline not in variants:
        return None
    seed_sets = [{run.seed for run in data.runs[e.env][v]} for e in envs for v in variants]
    seeds = sorted(set.intersection(*seed_sets))
    parts = {v: _component(v, envs, plan) for v in variants if v != baseline}
    p_combined = holm([meta.p for _, meta, _ in parts.values()])
    p_heterogeneity = holm([p for _, _, p in parts.values()])
    components = [
        ComponentAcrossTasks(v, effects, meta, float(p_combined[i]), p_q, float(p_heterogeneity[i]), plan.alpha)
        for i, (v, (effects, meta, p_q)) in enumerate(parts.items())
    ]
    aggregate = _aggregate(data, envs, variants, seeds, baseline, plan, reps, seed) if baseline else None
    return AcrossTasks([e.env for e in envs], seeds, components, aggregate)
