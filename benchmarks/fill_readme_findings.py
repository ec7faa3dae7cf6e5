"""Fill README's generated findings blocks from the committed study folders (the text tests/test_findings.py checks).

Run from the repository root after regenerating a committed report: python benchmarks/fill_readme_findings.py
"""

import re
from pathlib import Path

from sb3_ablation.study.report import findings_parts, study_model

readme = Path("README.md").read_text()
for study in ("pendulum", "pendulum-batched", "multitask"):
    model, _ = study_model(f"docs/studies/{study}", reps=100)
    for part, text in findings_parts(model).items():
        start, end = f"<!-- generated:{study}:{part}:start -->\n", f"<!-- generated:{study}:{part}:end -->"
        pattern = re.escape(start) + r".*?" + re.escape(end)
        assert re.search(pattern, readme, flags=re.S), (study, part)
        readme = re.sub(pattern, (start + text + end).replace("\\", "\\\\"), readme, flags=re.S)
Path("README.md").write_text(readme)
