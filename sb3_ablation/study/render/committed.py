"""The pointer of a task with too few seeds for a verdict to the committed study that answers it, in one sentence:
the committed answer is chosen below render (:mod:`~sb3_ablation.study.analyse.committed`) and carried by the report
model (:attr:`~sb3_ablation.study.analyse.report_model.ReportModel.committed_answers`); this module only draws it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import CommittedAnswer


def answer_sentence(answer: CommittedAnswer) -> str:
    """The pointer, in one sentence.

    :param answer: the committed answer of a task
    """
    steps = f", {answer.training_steps:,} steps" if answer.training_steps else ""
    return (
        f"The committed answer for {answer.env} is the study `{answer.study}` ({answer.seeds} seeds{steps}; "
        f"{answer.decided} of its {answer.compared} comparisons decided): its results page `{answer.page}` in the "
        f"repository, and its report.json shipped with the package (`{answer.report_json}`)."
    )
