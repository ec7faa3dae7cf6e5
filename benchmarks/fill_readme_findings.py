"""Fill README's generated findings blocks from the committed study folders (the text tests/test_findings.py checks).

Run from the repository root after regenerating a committed report: python benchmarks/fill_readme_findings.py
"""

from pathlib import Path

from sb3_ablation.study.render.answer import ANSWER_STUDIES, StudyReport, answer_markdown
from sb3_ablation.study.render.report import findings_parts, quote_findings, quoted_findings, status_markdown, study_model

readme = Path("README.md").read_text()
for study in ("pendulum", "pendulum-batched", "multitask"):
    model, data = study_model(f"docs/studies/{study}", reps=100)
    readme = quote_findings(readme, study, findings_parts(model))
    if quoted_findings(readme, study, "status") is not None:  # where README shows how far a study is
        readme = quote_findings(readme, study, {"status": status_markdown(data)})
answer = answer_markdown([StudyReport.regenerate(f"docs/studies/{study}") for study in ANSWER_STUDIES])
readme = quote_findings(readme, "studies", {"answer": answer})
Path("README.md").write_text(readme)
