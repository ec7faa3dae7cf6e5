"""
Do the engines agree? The report's section for a study whose seeds come from more than one engine: the check of
:mod:`~sb3_ablation.study.analyse.engine_check` (per task and variant, Welch's t-test of the paired differences of one
engine's seeds against the other's, Holm over the variants of the task) as a table per task and its part of
report.json.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from sb3_ablation.study.analyse.engine_check import MIN_SEEDS_PER_ENGINE
from sb3_ablation.study.render.section_type import Section

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import EngineComparison, ReportModel


def engine_sections(model: ReportModel) -> list[Section]:
    """
    The section "Engines" of a study with runs of more than one engine (none otherwise).

    :param model: the report model (its engine check and the plan's alpha)
    :return: one section, or none
    """
    check, plan = model.engines, model.plan
    if check is None:
        return []
    first = check.reference_engine
    lines = [
        "Each seed of a task is trained by one engine, so each paired difference (variant - baseline) lies within "
        f"one engine. Does the effect depend on the engine? Per task and variant: the mean paired difference on the "
        f"primary outcome over each engine's seeds, and Welch's t-test of the other engine's differences against "
        f"those of the {first} engine (95% interval of the difference of means), Holm over the variants of the task. "
        "A check, not a proof: with a few seeds per engine only large engine effects would be seen.",
        "",
    ]
    json: dict[str, Any] = {"reference_engine": first, "envs": {}}
    for env in check.envs:
        lines += _env_lines(env.env, env.outcome_name, first, env.comparisons, plan.alpha)
        json["envs"][env.env] = {"outcome": env.outcome_key, "comparisons": [_row_json(row) for row in env.comparisons]}
    return [Section("Engines", lines, json)]


def _row_json(row: EngineComparison) -> dict[str, Any]:
    fields = asdict(row)
    fields["ci"] = None if row.ci is None else list(row.ci)
    return fields


def _env_lines(env: str, outcome: str, first: str, rows: list[EngineComparison], alpha: float) -> list[str]:
    if not rows:
        return [f"**{env}**: the seeds of one engine only; nothing to compare.", ""]
    lines = [
        f"**{env}**, {outcome}:",
        "",
        f"| variant | Δ, {first} seeds (n) | Δ, other engine's seeds (n) | difference [95% Welch CI] | p | p Holm | engines |",
        "|---|---:|---:|---:|---:|---:|:---|",
    ]
    for row in rows:
        if row.ci is None:
            difference, p, p_holm, verdict = "—", "—", "—", f"fewer than {MIN_SEEDS_PER_ENGINE} seeds of an engine"
        else:
            low, high = row.ci
            difference = f"{row.difference:+,.1f} [{low:,.1f}, {high:,.1f}]"
            p, p_holm = f"{row.p:.2g}", f"{row.p_holm:.2g}"
            verdict = "**differ**" if row.p_holm <= alpha else "no difference detected"
        lines.append(
            f"| {row.variant} | {row.reference_effect:+,.1f} ({row.reference_n}) | {row.engine}: "
            f"{row.effect:+,.1f} ({row.n}) | {difference} | {p} | {p_holm} | {verdict} |"
        )
    return [*lines, ""]
