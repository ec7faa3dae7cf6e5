"""The analysis of a study's report, in one call: :func:`analyse_study` loads the study (``store``), computes every
number, verdict and figure's data of its report under its analysis plan, and returns the
:class:`~sb3_ablation.study.analyse.report_model.ReportModel` that :mod:`~sb3_ablation.study.render` renders.

The model's parts: the comparisons with the baseline per env and outcome, failures, margins, sequential looks and the
meta-analysis across envs (:func:`~sb3_ablation.study.analyse.analysis.build_model`); the factorial analysis of an env
whose variants form a 2^k design or a regular fraction (:mod:`~sb3_ablation.study.analyse.factorial`); the engines'
agreement where the seeds come from more than one engine (:mod:`~sb3_ablation.study.analyse.engine_check`); both
answers of a study that tuned every variant for itself (:mod:`~sb3_ablation.study.analyse.tuning`); the figures' data
(:mod:`~sb3_ablation.study.analyse.figure_data`); the tidy table of every evaluation
(:mod:`~sb3_ablation.study.analyse.tidy`). A new analysis is a new field of the model, computed here (see
:mod:`~sb3_ablation.study.analyse.report_model`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from sb3_ablation.study.analyse.along_training import env_along_training
from sb3_ablation.study.analyse.amendments import plan_version_verdicts
from sb3_ablation.study.analyse.analysis import build_model, restricted
from sb3_ablation.study.analyse.committed import committed_answers
from sb3_ablation.study.analyse.effects import half_normal_points
from sb3_ablation.study.analyse.engine_check import engine_check
from sb3_ablation.study.analyse.factorial import analyse_outcome, attainable_verdicts, study_design
from sb3_ablation.study.analyse.figure_data import env_figures, region_variants
from sb3_ablation.study.analyse.learning import EnvLearning, env_learning, factorial_learning, learning_failures
from sb3_ablation.study.analyse.learning_region import floor_label
from sb3_ablation.study.analyse.provenance import study_provenance
from sb3_ablation.study.analyse.report_model import (
    EnvFactorial,
    EnvResult,
    FactorialOutcome,
    HalfNormalPoints,
    ReportModel,
)
from sb3_ablation.study.analyse.results import StudyData, load_study
from sb3_ablation.study.analyse.statistics import DEFAULT_REPS, DEFAULT_SEED
from sb3_ablation.study.analyse.tidy import evaluation_rows
from sb3_ablation.study.analyse.tuning import tuning_comparison
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.study.plan.variants import baseline_name


def factorial_analyses(
    data: StudyData,
    envs: list[EnvResult],
    plan: AnalysisPlan,
    learning: list[EnvLearning] | None = None,
    baseline: str | None = None,
) -> list[EnvFactorial]:
    """
    The factorial analysis of every env whose variants form a 2^k design or a regular fraction (none for
    leave-one-out): per outcome its effects with verdicts, for the primary outcome the half-normal plot's points, and
    where ``learning`` has the env, where TD3 learns (:func:`~sb3_ablation.study.analyse.learning.factorial_learning`);
    per outcome, which verdicts its per-cell comparisons can reach, and where ``baseline`` is the all-on cell, the
    smallest sufficient set confirmed by its cell's comparison with it.
    """
    fates = {result.env: result.fates for result in learning or []}
    analyses = []
    for e in envs:
        found = study_design(data, e.env)
        if found is None:
            continue
        design, variant_of = found
        # the per-cell comparisons are with the baseline: they confirm a sufficient set where it is the all-on cell
        every_on = variant_of["+" * len(design.factors)]
        failed = {v: sum(f.failed for f in runs.values()) for v, runs in fates.get(e.env, {}).items()}
        outcomes = []
        for outcome in e.outcomes:
            cells = outcome.comparisons if baseline == every_on else None
            result = analyse_outcome(
                data, e.env, design, variant_of, outcome.outcome.key, plan, outcome.margin.value, cells, failed
            )
            half_normal = None
            if result is not None and outcome.primary:
                effects = {w: c.effect for w, c in {**result.main, **result.two}.items()}
                half_normal = HalfNormalPoints(*half_normal_points(effects))
            # group-sequential looks decide by their own boundaries, not by the step-down's levels
            per_cell = (
                None if plan.looks else attainable_verdicts(outcome.comparisons, plan.test, plan.equivalence_test or plan.test)
            )
            outcomes.append(FactorialOutcome(outcome.outcome.key, result, half_normal, per_cell))
        where = None
        primary = e.outcome(plan.primary)
        if e.env in fates and primary is not None:
            main = next((o.result.main for o in outcomes if o.key == plan.primary and o.result is not None), None)
            rules = plan.learning or LearningRules()
            where = factorial_learning(data, e.env, fates[e.env], plan, rules, primary.margin.value, main)
            # no `equivalent` for an effect averaged over floor cells, on any outcome
            for o in outcomes:
                if o.result is not None and where is not None:
                    tested = {**o.result.main, **o.result.two}
                    o.floor_labels = {w: floor_label(c, where.region) for w, c in tested.items()}
        analyses.append(EnvFactorial(e.env, design, outcomes, where))
    return analyses


def analyse_study(
    out: str | os.PathLike[str],
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
    baseline: str | None = None,
    **plan_changes: Any,
) -> ReportModel:
    """
    Load a study and compute its whole report model under its declared plan (the defaults where it declared none),
    changed by ``plan_changes``.

    :param out: the study folder
    :param reps: bootstrap resamples of the IQM intervals (curves and profiles use at most 2,000)
    :param seed: bootstrap and test seed
    :param baseline: the variant every other is compared with (default ``td3``, or the study's first variant with runs)
    :param plan_changes: fields of :class:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan` to change (``None``:
        unchanged), e.g. ``alpha``, ``primary``, ``margins``
    :return: the report model
    """
    data = load_study(out)
    declared_dict = data.manifest.get("analysis")
    declared = AnalysisPlan.from_dict(declared_dict) if declared_dict is not None else None
    plan = (declared or AnalysisPlan()).with_overrides(**plan_changes)
    variants = [v for v in data.variants if any(v in data.runs.get(env, {}) for env in data.envs)]
    baseline = baseline or baseline_name(data.variants) or (variants[0] if variants else None)
    model = build_model(data, plan, declared, baseline, reps, seed, data.manifest.get("analysis_declared"))
    # where TD3 learns, by the plan's rules (plan/learning_rules.py; their defaults where the plan declares none)
    rules = plan.learning or LearningRules()
    learning = []
    # on the seeds the verdicts use: the plan's confirmatory seeds where it names them (the others are a replication)
    confirmatory = restricted(data, set(plan.seeds)) if plan.seeds else data
    for e in model.envs:
        primary = e.outcome(plan.primary)
        margin = primary.margin.value if primary is not None else float("nan")
        learning.append(env_learning(confirmatory, e.env, baseline, plan, rules, margin))
    # one definition of "did not learn" and "critic diverged" per report: the learning rules', wherever they apply
    by_env = {result.env: result for result in learning}
    envs = [
        dataclasses.replace(e, failures=learning_failures(by_env[e.env], e.failures, baseline, plan.alpha))
        if e.env in by_env
        else e
        for e in model.envs
    ]
    factorial = factorial_analyses(data, model.envs, plan, learning, baseline)
    # the figures show every seed's runs, the verdicts only the confirmatory seeds' (build_model restricts them); a
    # factorial's curves the baseline and its learning region's cells
    shown = {}
    for f in factorial:
        found = study_design(data, f.env)
        if f.learning is not None and found is not None:
            shown[f.env] = region_variants(f.learning, found[1], baseline)
    envs = [dataclasses.replace(e, figures=env_figures(data, e, baseline, plan, reps, seed, shown.get(e.env))) for e in envs]
    # a factorial's per-cell tables say which verdicts their family can reach at its seeds
    per_cell = {(f.env, o.key): o.per_cell for f in factorial for o in f.outcomes}
    envs = [
        dataclasses.replace(
            e, outcomes=[dataclasses.replace(o, per_cell=per_cell.get((e.env, o.outcome.key))) for o in e.outcomes]
        )
        for e in envs
    ]
    model = dataclasses.replace(
        model,
        envs=envs,
        factorial=factorial,
        learning=learning,
        # the digests and the declared reuse (no search of other study folders: study_provenance(out) does that)
        provenance=study_provenance(out, others=[]),
        engines=engine_check(data, model.envs, baseline, plan),
        tuning=tuning_comparison(data, model.envs, baseline, plan, reps, seed, {e.env: e for e in learning}),
        data=data,
        evaluations=evaluation_rows(out),
        # each comparison at every evaluation step, on the seeds the verdicts use (descriptive)
        along_training=[
            along
            for e in model.envs
            if (along := env_along_training(confirmatory, e.env, baseline, plan.test, seed)) is not None
        ],
    )
    # an amendment made after runs: the verdicts under each version of the plan, side by side; where a task has too
    # few seeds for a verdict, the committed study that answers it
    return dataclasses.replace(
        model, plan_versions=plan_version_verdicts(data, model, seed), committed_answers=committed_answers(model)
    )


__all__ = ["analyse_study", "factorial_analyses"]
