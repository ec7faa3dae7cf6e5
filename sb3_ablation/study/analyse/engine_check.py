"""
Do the engines agree? For a study whose seeds come from more than one engine (e.g. seeds 0-4 from the process engine,
5-9 from the batched engine). Each seed of a task is trained by one engine, so every paired difference (variant -
baseline) lies within one engine; this check asks whether those differences, the effects, depend on the engine: per
task and variant, Welch's t-test of the paired differences of one engine's seeds against the other's on the primary
outcome, Holm over the variants of the task. (:mod:`~sb3_ablation.study.render.engine_check` renders it.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.inference import holm
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.report_model import EngineCheck, EngineComparison, EnvEngineCheck, EnvResult
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

# fewer seeds of an engine than this: no test (a t interval from 1 seed has no width)
MIN_SEEDS_PER_ENGINE = 2


def engine_check(data: StudyData, envs: Sequence[EnvResult], baseline: str | None, plan: AnalysisPlan) -> EngineCheck | None:
    """
    The engine check of a study with runs of more than one engine.

    :param data: the loaded study
    :param envs: the report model's per-env results (the primary outcome is the first)
    :param baseline: the variant every other is compared with
    :param plan: the analysis plan
    :return: the check; ``None`` with one engine or no baseline
    """
    if len(data.engines) < 2 or baseline is None:
        return None
    first = min(data.engines, key=lambda engine: min(seed for _, _, seed in data.engines[engine]))
    checks = []
    for env_result in envs:
        env, outcome = env_result.env, env_result.outcomes[0]
        rows = []
        base_seeds, base_values = outcome_values(data, env, baseline, outcome.outcome.key, plan)
        base = dict(zip(base_seeds.tolist(), base_values.tolist(), strict=True))
        for variant in outcome.comparisons:
            seeds, values = outcome_values(data, env, variant, outcome.outcome.key, plan)
            by_engine: dict[str, list[float]] = {}
            for seed, value in zip(seeds.tolist(), values.tolist(), strict=True):
                if seed in base:
                    by_engine.setdefault(data.seed_engine(env, seed) or "?", []).append(value - base[seed])
            for engine in sorted(set(by_engine) - {first}):
                rows.append(_welch(variant, engine, np.array(by_engine.get(first, [])), np.array(by_engine[engine])))
        tested = [row for row in rows if math.isfinite(row.p)]
        for row, adjusted in zip(tested, holm([row.p for row in tested]), strict=True):
            row.p_holm = float(adjusted)
        checks.append(EnvEngineCheck(env, outcome.outcome.key, outcome.outcome.name, rows))
    return EngineCheck(first, checks)


def _welch(variant: str, engine: str, reference: np.ndarray, other: np.ndarray) -> EngineComparison:
    row = EngineComparison(
        variant, engine, len(reference), len(other),
        float(reference.mean()) if len(reference) else math.nan,
        float(other.mean()) if len(other) else math.nan,
    )  # fmt: skip
    if min(len(reference), len(other)) >= MIN_SEEDS_PER_ENGINE and (reference.std() > 0 or other.std() > 0):
        test = stats.ttest_ind(other, reference, equal_var=False)
        low, high = test.confidence_interval(0.95)
        row.difference, row.ci, row.p = float(other.mean() - reference.mean()), (float(low), float(high)), float(test.pvalue)
    return row
