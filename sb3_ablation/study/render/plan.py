"""The report's account of its analysis plan: what was declared, when, and every deviation from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.render.tables import margin_text

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import ReportModel
    from sb3_ablation.study.analyse.results import StudyData


def plan_banner(model: ReportModel) -> list[str]:
    """The warning at the top of a report whose plan was fixed after runs had finished (empty otherwise)."""
    declared = model.declared_at or {}
    finished = declared.get("finished_runs")
    if model.declared is not None and finished == 0:
        return []
    when = declared.get("at", "an unknown date")
    note = declared.get("note", "")
    return [
        f"> **This study's analysis plan was fixed after {plural(finished, 'run') if finished else 'its runs'} had "
        f"finished** ({when}{'; ' + note if note else ''}). "
        "Its verdicts are a re-analysis under a plan chosen with the results known, not a confirmatory test.",
        "",
    ]


def _provenance_text(declared: dict) -> str:
    """Where the declared plan can be checked: its digest, and the study file's git commit when it was declared."""
    text = f" Plan digest (SHA-256 of the design and plan): `{declared['digest']}`." if declared.get("digest") else ""
    source = declared.get("study_file") or {}
    if source.get("commit"):
        state = "with uncommitted changes" if source.get("modified") else "unmodified"
        text += f" Declared from `{source['path']}` as committed in `{source['commit'][:12]}` ({state} then)."
    return text


def plan_section(model: ReportModel, data: StudyData) -> list[str]:
    plan = model.plan
    lines = ["## Analysis plan", ""]
    at = (model.declared_at or {}).get("at")
    if model.declared is None:
        changed = "; changed by the report's options: " + "; ".join(model.plan_changes) if model.plan_changes else ""
        lines.append(f"The study declared no analysis plan: the report uses the defaults below{changed}.")
    else:
        lines.append(
            f"The study declared its plan in `study.json`{f' on {at}' if at else ''}"
            + (
                "; **the plan used here deviates from it**: " + "; ".join(model.plan_changes) + "."
                if model.plan_changes
                else "; the report follows it."
            )
        )
    lines[-1] += _provenance_text(model.declared_at or {})
    latest = data.manifest.get("config", {}).get("analysis")
    if model.declared is not None and latest and AnalysisPlan.from_dict(latest) != model.declared:
        lines[-1] += (
            " A later invocation gave another plan: "
            + "; ".join(AnalysisPlan.from_dict(latest).differences(model.declared))
            + "."
        )
    windows = ", ".join(f"{e.env} {plural(len(e.window), 'evaluation')} ({e.window[0]:,}-{e.window[-1]:,} of "
                        f"{e.training_steps:,} steps)" for e in model.envs if e.window)  # fmt: skip
    margins = "; ".join(f"{e.env} {margin_text(result.margin)}" for e in model.envs if (result := e.outcome(plan.primary)))
    names = {o.outcome.key: o.outcome for e in model.envs for o in e.outcomes}
    secondary = "; ".join(f"{names[k].name} ({names[k].definition})" for k in plan.secondary if k in names)
    primary = names.get(plan.primary)
    seeds = f"the confirmatory seeds {', '.join(map(str, plan.seeds))}" if plan.seeds else "every finished seed"
    design = (
        f"group-sequential, looks at {', '.join(map(str, plan.looks))} seeds, {plan.boundary} alpha spending"
        if plan.looks
        else "fixed: one analysis at the planned seeds"
    )
    lines += [
        "",
        f"- Primary outcome: **{primary.name if primary else plan.primary}** "
        f"({primary.definition if primary else ''}); per env: {windows or 'no runs'}.",
        f"- Secondary outcomes: {secondary or 'none'}.",
        f"- Test: {TEST_NAMES[plan.test]} on the per-seed differences, two-sided, on {seeds}; equivalence: two "
        f"one-sided tests with the {TEST_NAMES[plan.equivalence_test]}; at least {MIN_RUNS} seed pairs for any test. "
        f"Design: {design}.",
        f"- Families: one per env and outcome (every variant against {model.baseline}), and one for the aggregate "
        f"across envs. {model.guarantee}",
        f"- Equivalence margin ±δ of the primary outcome, per env: {margins or 'none'}. Secondary return outcomes use "
        f"the same margin; overestimation: {plan.reference_fraction:.0%} of the task's reference span in discounted "
        "value per state. Margins are fixed by the plan and the task's references, never by the compared runs.",
        f"- Failure outcome: a run did not learn when its final-window return is below "
        f"{plan.failure_fraction:.0%} of the reference span above the random policy (or the plan's declared return); "
        f"a critic diverged when its overestimation is not finite or beyond {plan.divergence_factor:g}x the value span.",
        f"- Power {plan.power:.0%} for the minimum detectable effect and the seeds needed.",
        "",
    ]
    return lines
