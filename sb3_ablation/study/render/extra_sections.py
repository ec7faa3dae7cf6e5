"""The report's extra sections, in the report's order, rendered from the report model: a factorial analysis per env
whose variants form a 2^k design or a regular fraction (:mod:`~sb3_ablation.study.render.factorial`), the engines'
agreement where the seeds come from more than one engine (:mod:`~sb3_ablation.study.render.engine_check`), both
answers of a study that tuned every variant for itself (:mod:`~sb3_ablation.study.render.tuning`), the verdicts under
each version of a plan amended after runs (:mod:`~sb3_ablation.study.render.amendments`). A new analysis of
the model that needs a section of its own gets its renderer here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_ablation.study.render.along_training import along_training_sections
from sb3_ablation.study.render.amendments import amendment_sections
from sb3_ablation.study.render.engine_check import engine_sections
from sb3_ablation.study.render.factorial import factorial_sections
from sb3_ablation.study.render.section_type import Section
from sb3_ablation.study.render.tuning import tuning_sections

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import ReportModel


def extra_sections(model: ReportModel) -> list[Section]:
    """The extra sections of a report (none for a plain leave-one-out study with one engine)."""
    return (
        along_training_sections(model)
        + factorial_sections(model)
        + engine_sections(model)
        + tuning_sections(model)
        + amendment_sections(model)
    )


__all__ = ["Section", "extra_sections"]
