"""The fixtures of the docs' tests."""

import shutil
from pathlib import Path

import pytest

from docs.generate import answer_key, readme_answer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def studies(tmp_path, monkeypatch):
    """A copy of every committed report.json, which the generators (the README's answer, its plain words and the answer
    key) read instead of docs/studies/."""
    for path in (ROOT / "docs" / "studies").glob("*/report.json"):
        (tmp_path / path.parent.name).mkdir()
        shutil.copy(path, tmp_path / path.parent.name / "report.json")
    monkeypatch.setattr(readme_answer, "STUDIES", tmp_path)
    monkeypatch.setattr(answer_key, "STUDIES", tmp_path)
    return tmp_path
