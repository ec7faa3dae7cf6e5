"""README's findings are generated: each quoted block is what the report computes from the committed run records
today, and the committed reports print the same findings."""

from pathlib import Path

import pytest

from sb3_ablation.study.render.answer import ANSWER_STUDIES, StudyReport, answer_markdown
from sb3_ablation.study.render.report import (
    FINDINGS_END,
    FINDINGS_START,
    findings_markdown,
    findings_parts,
    quoted_findings,
    status_markdown,
    study_model,
)

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("pendulum", "pendulum-batched", "multitask")
# the findings use the paired tests only; the bootstrap (IQM intervals) does not enter them, so few resamples do
REPS = 100


@pytest.mark.parametrize("study", STUDIES)
def test_readme_quotes_the_findings_regenerated_from_the_committed_records(study):
    model, data = study_model(ROOT / "docs" / "studies" / study, reps=REPS)
    readme = (ROOT / "README.md").read_text()
    parts = findings_parts(model)
    assert quoted_findings(readme, "pendulum", "per-task") is not None  # the markers are where the test looks
    for part, text in parts.items():
        assert quoted_findings(readme, study, part) == text, (
            f"README's {study} {part} findings differ from the regenerated ones"
        )
    status = quoted_findings(readme, study, "status")  # finished runs of the planned ones, and each engine's seeds
    assert status is None or status == status_markdown(data), f"README's {study} status differs from the study's"
    report = (ROOT / "docs" / "studies" / study / "report.md").read_text()
    committed = report[report.index(FINDINGS_START) + len(FINDINGS_START) : report.index(FINDINGS_END)]
    assert committed.strip() == findings_markdown(model).strip(), f"docs/studies/{study}/report.md is not current"
    assert "no measurable" not in readme.lower()  # an unresolved comparison is not read as "no effect"


def test_readme_answer_is_the_one_generated_from_the_committed_records():
    studies = [StudyReport.regenerate(ROOT / "docs" / "studies" / study, reps=REPS) for study in ANSWER_STUDIES]
    answer = answer_markdown(studies)
    assert quoted_findings((ROOT / "README.md").read_text(), "studies", "answer") == answer
    # every committed leave-one-out task has a column, and every factorial study a list of its effects
    assert answer.count("| component removed |") == 1
    assert "factorial over" in answer
