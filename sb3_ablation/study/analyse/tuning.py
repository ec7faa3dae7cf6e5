"""Both answers of a study with per-variant tuning (:mod:`~sb3_ablation.study.plan.tuning`), side by side.

Per env and variant, on the plan's primary outcome:

- **with TD3's hyperparameters**: the variant against ``td3``, both with the study's hyperparameters (the study's own
  comparison, from its report model: "what happens when the component is removed and nothing else changes");
- **with its own**: the variant with its own tuned hyperparameters against ``td3`` with its own, on the same
  confirmatory seeds (the nested study ``<out>/tuned``, analysed by
  :func:`~sb3_ablation.study.analyse.analysis.build_model` under the same plan: its paired test, margins and one
  family-wise alpha per env; "is the component still needed when the rest is re-tuned for its absence?");
- each answer with the label an ``equivalent`` of it must carry (``at ceiling``, ``at floor``, failures in an arm:
  :func:`~sb3_ablation.study.analyse.learning.equivalence_label`), from the runs it compares;
- **recovered by re-tuning**: ``1 - Δ_own / Δ_TD3's``, the share of the effect that re-tuning closes. A ratio of two
  estimates, with a 95% percentile bootstrap interval over seeds (:func:`recovered_interval`); undefined when
  ``Δ_TD3's`` is 0 or its verdict is not ``differs`` (there is no effect to recover). Above 1: re-tuned, the variant
  does better than re-tuned TD3; below 0: the gap widened.

(:mod:`~sb3_ablation.study.render.tuning` renders it.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sb3_ablation.study.analyse.analysis import build_model, restricted
from sb3_ablation.study.analyse.family_verdicts import DIFFERS
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.learning import EnvLearning, env_learning
from sb3_ablation.study.analyse.outcomes import outcome_spec
from sb3_ablation.study.analyse.paired_tests import location
from sb3_ablation.study.analyse.report_model import EnvResult, EnvTuning, TunedComparison, TuningComparison
from sb3_ablation.study.analyse.results import StudyData, load_study
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.study.plan.tuning import TUNED_FOLDER
from sb3_ablation.study.store.manifest import MANIFEST_NAME


def recovered_share(default: Comparison | None, own: Comparison | None) -> tuple[float, str]:
    """
    :return: ``1 - own.effect / default.effect`` and "", or NaN and why it is undefined
    """
    if default is None or own is None:
        return math.nan, "no comparison"
    if default.verdict != DIFFERS:
        # (the verdict itself, with its label, stands in the cell beside this one)
        return math.nan, "undefined: with TD3's hyperparameters the verdict is not differs"
    if default.effect == 0 or not (math.isfinite(default.effect) and math.isfinite(own.effect)):
        return math.nan, "undefined: no effect with TD3's hyperparameters"
    return 1.0 - own.effect / default.effect, ""


#: bootstrap resamples of the recovered share's interval
RECOVERED_REPS = 2000


def recovered_interval(
    default: Comparison, own: Comparison, test: str, seed: int, reps: int = RECOVERED_REPS
) -> tuple[float, float] | None:
    """
    The 95% percentile bootstrap interval of ``1 - location(own) / location(default)`` over seeds: the per-seed
    differences of both arms resampled together where they hold the same number of seeds (the same confirmatory
    seeds), else each on its own; ``location`` is the plan's test's estimate (Hodges-Lehmann for Wilcoxon).

    :return: ``None`` with fewer than 2 seeds in an arm
    """
    d_default, d_own = np.asarray(default.differences), np.asarray(own.differences)
    if len(d_default) < 2 or len(d_own) < 2:
        return None
    rng = np.random.default_rng(seed)
    shares = np.empty(reps)
    for i in range(reps):
        pick_default = rng.integers(0, len(d_default), len(d_default))
        pick_own = pick_default if len(d_own) == len(d_default) else rng.integers(0, len(d_own), len(d_own))
        base = location(d_default[pick_default], test)
        shares[i] = 1.0 - location(d_own[pick_own], test) / base if base != 0 else np.nan
    low, high = np.nanpercentile(shares, [2.5, 97.5])
    return float(low), float(high)


def tuning_comparison(
    data: StudyData,
    envs: Sequence[EnvResult],
    baseline: str | None,
    plan: AnalysisPlan,
    reps: int,
    seed: int,
    learning: Mapping[str, EnvLearning] | None = None,
) -> TuningComparison | None:
    """
    Both answers per env and variant (see the module docstring).

    :param data: the loaded study
    :param envs: the study's report model per env (its comparisons are the answers with TD3's hyperparameters)
    :param baseline: the variant the others are compared with (``td3``)
    :param plan: the plan the report follows; the runs with each variant's own hyperparameters are analysed under it
        (its learning rules too, the package's defaults where it declares none)
    :param reps: bootstrap resamples (of the nested study's effect sizes)
    :param seed: bootstrap and test seed
    :param learning: env -> the study's learning analysis (the labels of the answers with TD3's hyperparameters)
    :return: ``None`` for a study without tuning
    """
    tuning = data.manifest.get("settings", {}).get("tuning")
    if not tuning:
        return None
    tuned_out = data.out / TUNED_FOLDER
    own_envs: dict[str, EnvResult] = {}
    tuned: StudyData | None = None
    if (tuned_out / MANIFEST_NAME).is_file():
        tuned = load_study(tuned_out)
        own_envs = {e.env: e for e in build_model(tuned, plan, None, baseline, reps, seed).envs}
    rules = plan.learning or LearningRules()
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
        default_labels = (learning or {}).get(e.env)
        own_labels = None
        if tuned is not None and own_primary is not None:
            # (on the confirmatory seeds, as the study's own labels)
            confirmatory = restricted(tuned, set(plan.seeds)) if plan.seeds else tuned
            own_labels = env_learning(confirmatory, e.env, baseline, plan, rules, own_primary.margin.value)
        rows = []
        for variant, default in primary.comparisons.items():
            own = own_comparisons.get(variant)
            recovered, note = recovered_share(default, own)
            ci = recovered_interval(default, own, plan.test, seed) if own is not None and math.isfinite(recovered) else None
            labels = [None if found is None else found.labels.get(variant) for found in (default_labels, own_labels)]
            rows.append(TunedComparison(variant, default, own, recovered, note, ci, *labels))
        results.append(EnvTuning(e.env, spec.key, spec.name, rows, dict(chosen.get(e.env, {})), spec.is_return))
    return TuningComparison(dict(tuning), tuned_out, results)


__all__ = ["EnvTuning", "TunedComparison", "TuningComparison", "recovered_interval", "recovered_share", "tuning_comparison"]
