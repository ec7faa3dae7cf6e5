"""The verdicts under each version of a study's plan, where the plan was amended after runs had finished
(:func:`plan_version_verdicts`): an amendment made with results in hand may have been chosen for its verdicts, so the
report shows the verdicts under the plan as first declared beside those under each amendment.

Only the verdict tables are recomputed (each outcome's comparisons with the baseline and, for a factorial design, its
main effects and two-factor interactions); the bootstrap intervals, figures and learning rules are not, so this costs
one analysis of the tests per version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sb3_ablation.study.analyse.analysis import build_model
from sb3_ablation.study.analyse.factorial import analyse_outcome, study_design
from sb3_ablation.study.analyse.report_model import EnvFactorial, EnvResult, PlanVersionVerdicts, ReportModel
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.store.manifest import plan_versions

#: bootstrap resamples of a re-analysis: the verdicts do not use them (build_model's reps)
VERSION_REPS = 20


def verdict_tables(
    data: StudyData, envs: Sequence[EnvResult], plan: AnalysisPlan, factorial: Sequence[EnvFactorial] | None = None
) -> dict[str, dict[str, dict[str, tuple[str, float]]]]:
    """
    The verdict tables of a study's analysis: per env, each outcome's comparisons with the baseline (row: the variant)
    and, where the variants form a factorial design, each outcome's main effects and two-factor interactions (table
    ``factorial <outcome>``, row: the effect's name).

    :param data: the loaded study
    :param envs: the per-env results of the analysis (:func:`~sb3_ablation.study.analyse.analysis.build_model`)
    :param plan: the plan they were computed under
    :param factorial: the factorial analyses already computed under ``plan`` (``None``: computed here)
    :return: env -> table -> row -> ``(verdict, estimate)``
    """
    tables: dict[str, dict[str, dict[str, tuple[str, float]]]] = {}
    for e in envs:
        by_table = tables.setdefault(e.env, {})
        for outcome in e.outcomes:
            by_table[outcome.outcome.key] = {v: (c.verdict, float(c.effect)) for v, c in outcome.comparisons.items()}
        if factorial is not None:
            done = next((f for f in factorial if f.env == e.env), None)
            results = [(o.key, o.result) for o in done.outcomes] if done is not None else []
        elif (found := study_design(data, e.env)) is not None:
            design, variant_of = found
            results = [
                (o.outcome.key, analyse_outcome(data, e.env, design, variant_of, o.outcome.key, plan, o.margin.value))
                for o in e.outcomes
            ]
        else:
            results = []
        for key, result in results:
            if result is not None:
                effects = {**result.main, **result.two}
                by_table[f"factorial {key}"] = {result.name(w): (c.verdict, float(c.effect)) for w, c in effects.items()}
    return tables


def plan_version_verdicts(data: StudyData, model: ReportModel, seed: int) -> list[PlanVersionVerdicts]:
    """
    The verdict tables under every version of the study's plan, where an amendment was made after runs had finished
    (empty otherwise: a plan changed before any run was declared anew, and there is nothing to compare).

    :param data: the loaded study (its manifest holds the plan's versions)
    :param model: the report's model, computed under the plan in force (its tables are reused for the version equal
        to the plan it follows)
    :param seed: the test seed
    :return: one entry per version, the declared plan first
    """
    versions = plan_versions(data.manifest)
    if not any(version["finished_runs"] for version in versions[1:]):
        return []
    result = []
    for index, version in enumerate(versions):
        plan = AnalysisPlan.from_dict(version["analysis"])
        if plan == model.plan:
            tables = verdict_tables(data, model.envs, plan, model.factorial)
        else:
            other = build_model(data, plan, plan, model.baseline, VERSION_REPS, seed)
            tables = verdict_tables(data, other.envs, plan)
        previous: dict[str, Any] = versions[index - 1]["analysis"] if index else {}
        changes = (
            [] if not index else AnalysisPlan.from_dict(version["analysis"]).differences(AnalysisPlan.from_dict(previous))
        )
        result.append(
            PlanVersionVerdicts(index, version["at"], version["finished_runs"], version["reason"], changes, plan, tables)
        )
    return result
