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
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from sb3_ablation.study.analyse.inference import Comparison, compare_family, holm
from sb3_ablation.study.analyse.model import EnvResult
from sb3_ablation.study.analyse.outcomes import run_outcome
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.robust import MetaResult, random_effects, standardized_effect
from sb3_ablation.study.analyse.statistics import MIN_RUNS, VariantStats, env_reference, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan


@dataclass(frozen=True)
class ComponentAcrossTasks:
    """
    :param variant: the variant compared with the baseline on every env
    :param effects: env -> (standardized effect, its variance, the env's verdict)
    :param meta: the random-effects combination (on the standardized scale)
    :param p_adjusted: Holm-adjusted p of the combined effect over the components
    :param p_heterogeneity: Cochran's Q test of "the same effect on every task"
    :param p_heterogeneity_adjusted: Holm-adjusted over the components
    """

    variant: str
    effects: dict[str, tuple[float, float, str]]
    meta: MetaResult
    p_adjusted: float
    p_heterogeneity: float
    p_heterogeneity_adjusted: float
    alpha: float

    @property
    def consistent(self) -> bool:
        """The combined effect differs from 0 (Holm) and the effect is not shown task-dependent."""
        return self.p_adjusted <= self.alpha and not self.task_dependent

    @property
    def task_dependent(self) -> bool:
        return self.p_heterogeneity_adjusted <= self.alpha

    @property
    def signs(self) -> str:
        """``same sign`` or ``opposite signs``: the direction of the per-task effects."""
        signs = {np.sign(d) for d, _, _ in self.effects.values() if d}
        return "opposite signs" if len(signs) > 1 else "same sign"


@dataclass
class Aggregate:
    how: str
    stats: dict[str, VariantStats]
    comparisons: dict[str, Comparison]
    margin: float
    scores: dict[str, np.ndarray]  # variant -> (seeds, envs) normalized primary outcome


@dataclass
class AcrossTasks:
    envs: list[str]
    seeds: list[int]
    components: list[ComponentAcrossTasks]
    aggregate: Aggregate | None


def _component(variant: str, envs: list[EnvResult], plan: AnalysisPlan) -> tuple[dict, MetaResult, float]:
    effects = {}
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
    references = {e.env: env_reference(e.env) for e in envs}
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
        plan.alpha, margin, plan.power, MIN_RUNS, plan.test, seed, plan.equivalence_test,
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
