"""The report's section for a plan amended after runs had finished: the verdicts under the plan as first declared and
under each amendment, side by side (:class:`~sb3_ablation.study.analyse.report_model.PlanVersionVerdicts`), and its
part of report.json. Only the rows whose verdict changes are tabulated; report.json holds every row."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.learning_region import AVERAGED_OVER_FLOOR
from sb3_ablation.study.render.labels import DESCRIPTIVE, labels_of, qualified_verdict
from sb3_ablation.study.render.section_type import Section
from sb3_ablation.study.render.summaries import learning_of

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import PlanVersionVerdicts, ReportModel

TITLE = "Plan amended after runs: verdicts side by side"
#: the prefix of a factorial design's verdict tables (:func:`~sb3_ablation.study.analyse.amendments.verdict_tables`)
FACTORIAL = "factorial "


def shown_verdict(model: ReportModel, env: str, table: str, row: str, verdict: str) -> str:
    """
    A verdict of a version's table as the report gives it (:mod:`~sb3_ablation.study.render.labels`): a secondary
    outcome's is descriptive, a comparison's carries its regime label, a factorial effect's its floor label where the
    learning region is not the whole design.

    :param table: an outcome's key, or ``factorial <outcome key>``
    :param row: a variant, or a factorial effect's name
    """
    key = table.removeprefix(FACTORIAL)
    if key != model.plan.primary:
        return DESCRIPTIVE
    if table.startswith(FACTORIAL):
        found = next((f for f in model.factorial if f.env == env and f.learning is not None), None)
        floor = found is not None and found.learning is not None and not found.learning.region.is_whole_design
        return qualified_verdict(verdict, AVERAGED_OVER_FLOOR if floor else None)
    e = next((e for e in model.envs if e.env == env), None)
    outcome = e.outcome(key) if e is not None else None
    labels = labels_of(learning_of(model, env), outcome.outcome.is_return if outcome is not None else True)
    return qualified_verdict(verdict, labels.get(row))


def _shown(model: ReportModel, version: PlanVersionVerdicts) -> dict[str, dict[str, dict[str, tuple[str, float]]]]:
    """A version's verdict tables with each verdict as the report gives it (:func:`shown_verdict`)."""
    return {
        env: {
            table: {row: (shown_verdict(model, env, table, row, v), estimate) for row, (v, estimate) in rows.items()}
            for table, rows in tables.items()
        }
        for env, tables in version.verdicts.items()
    }


def _cell(entry: tuple[str, float] | None) -> str:
    if entry is None:
        return "-"
    verdict, estimate = entry
    return f"{verdict} ({estimate:+,.1f})" if math.isfinite(estimate) else verdict


def _version_name(version: PlanVersionVerdicts) -> str:
    return "as declared" if version.index == 0 else f"amendment {version.index}"


def _table_order(tables: list[str], primary: str) -> list[str]:
    """The factorial tables first, then the comparisons; the primary outcome first within each."""
    return sorted(tables, key=lambda t: (not t.startswith("factorial"), t.split()[-1] != primary, t))


def amendment_sections(model: ReportModel) -> list[Section]:
    """
    The section of a study whose plan was amended after runs had finished (none otherwise).

    :param model: the report model (its :attr:`~sb3_ablation.study.analyse.report_model.ReportModel.plan_versions`)
    :return: one section, or none
    """
    versions = model.plan_versions
    if not versions:
        return []
    first = versions[0]
    after = f" after {plural(first.finished_runs, 'finished run')}" if first.finished_runs else ""
    lines = [
        f"The plan was declared{f' on {first.at}' if first.at else ''}{after}, then amended after "
        "runs had finished, when the results could be known. An amendment may have been chosen for its verdicts, so "
        "each verdict is shown under every version of the plan; the rest of this report follows the plan in force.",
        "",
    ]
    for version in versions[1:]:
        lines.append(
            f"- Amendment {version.index} ({version.at or 'an unknown date'}, after "
            f"{plural(version.finished_runs or 0, 'finished run')}): {version.reason or 'no reason given'}. "
            f"Changes: {'; '.join(version.changes) or 'none that changes the analysis'}."
        )
    lines.append("")
    names = [_version_name(v) for v in versions]
    shown = [_shown(model, v) for v in versions]
    differing: dict[str, dict[str, list[str]]] = {}
    for env in first.verdicts:
        tables = _table_order(list(first.verdicts[env]), model.plan.primary)
        for table in tables:
            columns = [v.get(env, {}).get(table, {}) for v in shown]
            rows = list(dict.fromkeys(row for column in columns for row in column))
            changed = [row for row in rows if len({(c.get(row) or ("-",))[0] for c in columns}) > 1]
            if not changed:
                continue
            differing.setdefault(env, {})[table] = changed
            lines += [
                f"**{env}**, {table.replace('factorial ', 'factorial effects, ')}: "
                f"{len(changed)} of {plural(len(rows), 'verdict')} change ({len(rows) - len(changed)} the same):",
                "",
                "| | " + " | ".join(names) + " |",
                "|---|" + "---|" * len(names),
                *(f"| {row} | " + " | ".join(_cell(c.get(row)) for c in columns) + " |" for row in changed),
                "",
            ]
    if not differing:
        lines += ["Every verdict is the same under each version of the plan.", ""]
    json: dict[str, Any] = {
        "versions": [_version_json(v, tables) for v, tables in zip(versions, shown, strict=True)],
        "differing": differing,
    }
    return [Section(TITLE, lines, json)]


def _version_json(version: PlanVersionVerdicts, shown: dict[str, dict[str, dict[str, tuple[str, float]]]]) -> dict[str, Any]:
    return {
        "index": version.index,
        "at": version.at,
        "finished_runs": version.finished_runs,
        "reason": version.reason,
        "changes": version.changes,
        "plan": version.plan.to_dict(),
        "verdicts": {
            env: {
                table: {
                    row: {
                        "verdict": shown[env][table][row][0],
                        "test_verdict": verdict,
                        "estimate": estimate if math.isfinite(estimate) else None,
                    }
                    for row, (verdict, estimate) in rows.items()
                }
                for table, rows in tables.items()
            }
            for env, tables in version.verdicts.items()
        },
    }
