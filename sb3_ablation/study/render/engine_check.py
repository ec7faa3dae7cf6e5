"""
Do the engines agree? The report's section for a study whose seeds come from more than one engine (e.g. seeds 0-4
from the process engine, 5-9 from the batched engine). Each seed of a task is trained by one engine, so every paired
difference (variant - baseline) lies within one engine; this section asks whether those differences, the effects,
depend on the engine: per task and variant, Welch's t-test of the paired differences of one engine's seeds against
the other's on the primary outcome, Holm over the variants of the task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.analysis import EnvResult, Section, outcome_values
from sb3_ablation.study.analyse.inference import holm

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.results import StudyData
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

# fewer seeds of an engine than this: no test (a t interval from 1 seed has no width)
MIN_SEEDS_PER_ENGINE = 2


def engine_sections(data: StudyData, envs: Sequence[EnvResult], baseline: str | None, plan: AnalysisPlan) -> list[Section]:
    """
    The section "Engines" of a study with runs of more than one engine (none otherwise).

    :param data: the loaded study
    :param envs: the report model's per-env results (the primary outcome is the first)
    :param baseline: the variant every other is compared with
    :param plan: the analysis plan (alpha)
    :return: one section, or none
    """
    if len(data.engines) < 2 or baseline is None:
        return []
    first = min(data.engines, key=lambda engine: min(seed for _, _, seed in data.engines[engine]))
    lines = [
        "Each seed of a task is trained by one engine, so each paired difference (variant - baseline) lies within "
        f"one engine. Does the effect depend on the engine? Per task and variant: the mean paired difference on the "
        f"primary outcome over each engine's seeds, and Welch's t-test of the other engine's differences against "
        f"those of the {first} engine (95% interval of the difference of means), Holm over the variants of the task. "
        "A check, not a proof: with a few seeds per engine only large engine effects would be seen.",
        "",
    ]
    json: dict[str, Any] = {"reference_engine": first, "envs": {}}
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
        tested = [row for row in rows if math.isfinite(row["p"])]
        for row, adjusted in zip(tested, holm([row["p"] for row in tested]), strict=True):
            row["p_holm"] = float(adjusted)
        lines += _env_lines(env, outcome.outcome.name, first, rows, plan.alpha)
        json["envs"][env] = {"outcome": outcome.outcome.key, "comparisons": rows}
    return [Section("Engines", lines, json)]


def _welch(variant: str, engine: str, reference: np.ndarray, other: np.ndarray) -> dict[str, Any]:
    row: dict[str, Any] = {
        "variant": variant, "engine": engine, "reference_n": len(reference), "n": len(other),
        "reference_effect": float(reference.mean()) if len(reference) else math.nan,
        "effect": float(other.mean()) if len(other) else math.nan,
        "difference": math.nan, "ci": None, "p": math.nan, "p_holm": math.nan,
    }  # fmt: skip
    if min(len(reference), len(other)) >= MIN_SEEDS_PER_ENGINE and (reference.std() > 0 or other.std() > 0):
        test = stats.ttest_ind(other, reference, equal_var=False)
        low, high = test.confidence_interval(0.95)
        row.update(difference=float(other.mean() - reference.mean()), ci=[float(low), float(high)], p=float(test.pvalue))
    return row


def _env_lines(env: str, outcome: str, first: str, rows: list[dict[str, Any]], alpha: float) -> list[str]:
    if not rows:
        return [f"**{env}**: the seeds of one engine only; nothing to compare.", ""]
    lines = [
        f"**{env}**, {outcome}:",
        "",
        f"| variant | Δ, {first} seeds (n) | Δ, other engine's seeds (n) | difference [95% Welch CI] | p | p Holm | engines |",
        "|---|---:|---:|---:|---:|---:|:---|",
    ]
    for row in rows:
        if row["ci"] is None:
            difference, p, p_holm, verdict = "—", "—", "—", f"fewer than {MIN_SEEDS_PER_ENGINE} seeds of an engine"
        else:
            low, high = row["ci"]
            difference = f"{row['difference']:+,.1f} [{low:,.1f}, {high:,.1f}]"
            p, p_holm = f"{row['p']:.2g}", f"{row['p_holm']:.2g}"
            verdict = "**differ**" if row["p_holm"] <= alpha else "no difference detected"
        lines.append(
            f"| {row['variant']} | {row['reference_effect']:+,.1f} ({row['reference_n']}) | {row['engine']}: "
            f"{row['effect']:+,.1f} ({row['n']}) | {difference} | {p} | {p_holm} | {verdict} |"
        )
    return [*lines, ""]
