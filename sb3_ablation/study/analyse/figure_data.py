"""The data of an env's figures: learning curves, the overestimation and training diagnostics over training, and the
performance profile of the primary outcome, each with its stratified-bootstrap bands (rliable), computed for the
report model (:class:`~sb3_ablation.study.analyse.report_model.EnvFigures`); :mod:`~sb3_ablation.study.render.figures`
draws them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.report_model import CurveEstimate, EnvFigures, EnvResult, ProfileEstimate
from sb3_ablation.study.analyse.results import DIAGNOSTICS, RunCurves, StudyData, aligned_curves
from sb3_ablation.study.analyse.statistics import CURVE_REPS, curve_estimates, performance_profile
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.learning import FactorialLearning

#: the most variants an env's curves show (the baseline and those that differ most from it)
MAX_CURVES = 12
#: thresholds of a performance profile
PROFILE_POINTS = 101
#: the metrics over training, in the order the figures show them
CURVE_METRICS = ("mean_return", "overestimation", *DIAGNOSTICS)


def shown_variants(data: StudyData, e: EnvResult, baseline: str | None, primary_key: str) -> list[str]:
    """The variants an env's curves show: all, or with more than :data:`MAX_CURVES` the baseline and the variants whose
    primary effect is largest."""
    env_variants = [v for v in data.variants if v in data.runs.get(e.env, {})]
    primary = e.outcome(primary_key)
    if len(env_variants) <= MAX_CURVES or primary is None:
        return env_variants
    effects = {v: abs(c.effect) for v, c in primary.comparisons.items()}
    ranked = sorted((v for v in env_variants if v != baseline), key=lambda v: -effects.get(v, 0.0))
    return ([baseline] if baseline in env_variants else []) + ranked[: MAX_CURVES - 1]


def region_variants(learning: FactorialLearning, variant_of: dict[str, str], baseline: str | None) -> list[str] | None:
    """
    The variants a factorial's curves show: the baseline and the cells of the learning region (at most
    :data:`MAX_CURVES`), not the flat curves of cells where nothing learns; ``None`` where the region is the whole
    design (no floor cells to leave out).

    :param learning: the factorial's learning region
    :param variant_of: the design's cell (``+-`` per factor) -> its variant
    :param baseline: the variant every other is compared with
    """
    if learning.region.is_whole_design:
        return None
    design = learning.design
    cells = [variant_of["".join("+" if design.cells[row][f] else "-" for f in design.factors)] for row in learning.region.rows]
    first = [baseline] if baseline is not None else []
    return (first + [v for v in cells if v != baseline])[:MAX_CURVES]


def _curve(runs: list[RunCurves], metric: str, reps: int, seed: int) -> CurveEstimate | None:
    timesteps, values = aligned_curves(runs, metric)
    if not values.size:
        return None
    point, ci = curve_estimates(values, reps=reps, seed=seed)
    return CurveEstimate(timesteps, point, ci, values)


def _profile(scores: dict[str, np.ndarray], reps: int, seed: int) -> ProfileEstimate | None:
    scores = {variant: values for variant, values in scores.items() if np.size(values)}
    if not scores:
        return None
    values = np.concatenate([np.ravel(s) for s in scores.values()])
    taus = np.linspace(values.min(), values.max(), PROFILE_POINTS)
    profiles, cis = performance_profile(scores, taus, reps=reps, seed=seed)
    return ProfileEstimate(taus, profiles, cis, [np.size(values) for values in scores.values()])


def env_figures(
    data: StudyData,
    e: EnvResult,
    baseline: str | None,
    plan: AnalysisPlan,
    reps: int,
    seed: int,
    shown: list[str] | None = None,
) -> EnvFigures | None:
    """
    The data of one env's figures (``None`` where the env has no primary outcome).

    :param data: the loaded study (all its seeds: the curves show every run)
    :param e: the env's result in the report model
    :param baseline: the variant every other is compared with
    :param plan: the analysis plan (the primary outcome)
    :param reps: bootstrap resamples of the report (the curves and the profile use at most :data:`CURVE_REPS`)
    :param seed: bootstrap seed (variant i of the curves draws from ``seed + i``)
    :param shown: the variants to draw (default :func:`shown_variants`; a factorial's: the baseline and the cells of
        its learning region, :func:`region_variants`)
    """
    if e.outcome(plan.primary) is None:
        return None
    shown = shown or shown_variants(data, e, baseline, plan.primary)
    curve_reps = min(reps, CURVE_REPS)
    by_variant = data.runs[e.env]
    curves: dict[str, dict[str, CurveEstimate]] = {metric: {} for metric in CURVE_METRICS}
    for i, variant in enumerate(shown):
        for metric in CURVE_METRICS:
            curve = _curve(by_variant[variant], metric, curve_reps, seed + i)
            if curve is not None:
                curves[metric][variant] = curve
    scores = {v: outcome_values(data, e.env, v, plan.primary, plan)[1] for v in shown}
    return EnvFigures(shown, curve_reps, curves, _profile(scores, curve_reps, seed))
