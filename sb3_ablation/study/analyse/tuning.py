"""Both answers of a study with per-variant tuning (:mod:`~sb3_ablation.study.plan.tuning`), side by side.

Per env and variant, on the plan's primary outcome:

- **with TD3's hyperparameters**: the variant against ``td3``, both with the study's hyperparameters (the study's own
  comparison, from its report model: "what happens when the component is removed and nothing else changes");
- **with its own**: the variant with its own tuned hyperparameters against ``td3`` with its own, on the same
  confirmatory seeds (the nested study ``<out>/tuned``, analysed by
  :func:`~sb3_ablation.study.analyse.analysis.build_model` under the same plan: its paired test, margins and one
  family-wise alpha per env; "is the component still needed when the rest is re-tuned for its absence?");
- **recovered by re-tuning**: ``1 - Δ_own / Δ_TD3's``, the share of the effect that re-tuning closes. A ratio of two
  estimates, without an interval; undefined when ``Δ_TD3's`` is 0 or its verdict is not ``differs`` (there is no
  effect to recover). Above 1: re-tuned, the variant does better than re-tuned TD3; below 0: the gap widened.

(:mod:`~sb3_ablation.study.render.tuning` renders it.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sb3_ablation.study.analyse.analysis import build_model
from sb3_ablation.study.analyse.family_verdicts import DIFFERS
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.outcomes import outcome_spec
from sb3_ablation.study.analyse.report_model import EnvResult, EnvTuning, TunedComparison, TuningComparison
from sb3_ablation.study.analyse.results import StudyData, load_study
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.tuning import TUNED_FOLDER
from sb3_ablation.study.store.manifest import MANIFEST_NAME


def recovered_share(default: Comparison | None, own: Comparison | None) -> tuple[float, str]:
    """
    :return: ``1 - own.effect / default.effect`` and "", or NaN and why it is undefined
    """
    if default is None or own is None:
        return math.nan, "no comparison"
    if default.verdict != DIFFERS:
        return math.nan, f"undefined: with TD3's hyperparameters the verdict is {default.verdict}"
    if default.effect == 0 or not (math.isfinite(default.effect) and math.isfinite(own.effect)):
        return math.nan, "undefined: no effect with TD3's hyperparameters"
    return 1.0 - own.effect / default.effect, ""


def tuning_comparison(
    data: StudyData, envs: Sequence[EnvResult], baseline: str | None, plan: AnalysisPlan, reps: int, seed: int
) -> TuningComparison | None:
    """
    Both answers per env and variant (see the module docstring).

    :param data: the loaded study
    :param envs: the study's report model per env (its comparisons are the answers with TD3's hyperparameters)
    :param baseline: the variant the others are compared with (``td3``)
    :param plan: the plan the report follows; the runs with each variant's own hyperparameters are analysed under it
    :param reps: bootstrap resamples (of the nested study's effect sizes)
    :param seed: bootstrap and test seed
    :return: ``None`` for a study without tuning
    """
    tuning = data.manifest.get("settings", {}).get("tuning")
    if not tuning:
        return None
    tuned_out = data.out / TUNED_FOLDER
    own_envs: dict[str, EnvResult] = {}
    if (tuned_out / MANIFEST_NAME).is_file():
        tuned = load_study(tuned_out)
        own_envs = {e.env: e for e in build_model(tuned, plan, None, baseline, reps, seed).envs}
    chosen: dict[str, dict[str, dict[str, Any]]] = data.manifest.get("tuned") or {}
    spec = outcome_spec(plan.primary, plan)
    results = []
    for e in envs:
        primary = e.outcome(plan.primary)
        if primary is None:
            continue
        own_env = own_envs.get(e.env)
        own_primary = own_env.outcome(plan.primary) if own_env is not None else None
        own_comparisons = own_primary.comparisons if own_primary is not None else {}
        rows = []
        for variant, default in primary.comparisons.items():
            own = own_comparisons.get(variant)
            recovered, note = recovered_share(default, own)
            rows.append(TunedComparison(variant, default, own, recovered, note))
        results.append(EnvTuning(e.env, spec.key, spec.name, rows, dict(chosen.get(e.env, {}))))
    return TuningComparison(dict(tuning), tuned_out, results)


__all__ = ["EnvTuning", "TunedComparison", "TuningComparison", "recovered_share", "tuning_comparison"]
