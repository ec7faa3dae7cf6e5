"""Where a report with too few seeds for a verdict finds the committed answer for the same task.

The repository's committed studies (``docs/studies/<name>/``) each have a results page, ``docs/results/<name>.md``
(written by ``docs/generate/docs_results.py`` from their ``report.json``). Their ``report.json`` files ship inside the package
as ``sb3_ablation/committed_studies/<name>/report.json`` (an installed wheel); a clone installed with ``pip install -e``
reads them from ``docs/studies``. :func:`committed_answer` picks, for one task, the committed study that answers it best:

1. it has the task with at least :data:`~sb3_ablation.study.analyse.statistics.MIN_RUNS` seeds, more than the report
   itself, and at least one ``differs`` or ``equivalent`` on its primary outcome there;
2. among those, the one that compares the most of the report's variants on the task, then one of a fixed design (no
   sequential looks), then one without extra sections (a tuned or factorial study answers another question), then the
   most seeds, then the name.

:func:`committed_answers` gives the report model each of its tasks' answers (:attr:`ReportModel.committed_answers
<sb3_ablation.study.analyse.report_model.ReportModel.committed_answers>`); the report only draws them
(:mod:`~sb3_ablation.study.render.committed`).
"""

from __future__ import annotations

import json
from pathlib import Path

from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED
from sb3_ablation.study.analyse.report_model import CommittedAnswer, EnvResult, ReportModel
from sb3_ablation.study.analyse.statistics import MIN_RUNS


def committed_studies_folder() -> Path | None:
    """The folder of the committed studies' ``report.json`` files: the package's copy, or the clone's
    ``docs/studies`` (``None``: neither is there)."""
    package = Path(__file__).resolve().parents[2]  # sb3_ablation/study/analyse/committed.py -> sb3_ablation
    for candidate in (package / "committed_studies", package.parent / "docs" / "studies"):
        if candidate.is_dir() and any(candidate.glob("*/report.json")):
            return candidate
    return None


def committed_answer(
    env: str, variants: list[str], seeds: int, exclude: Path | None = None, folder: Path | None = None
) -> CommittedAnswer | None:
    """
    The committed study that answers ``env`` best (module docstring); ``None``: none does.

    :param env: the task
    :param variants: the report's variants compared on the task
    :param seeds: the report's seeds on the task (the committed study must have more)
    :param exclude: the report's own folder (never its own answer)
    :param folder: the committed studies' folder (default :func:`committed_studies_folder`)
    """
    folder = folder or committed_studies_folder()
    if folder is None:
        return None
    ranked = []
    for path in sorted(folder.glob("*/report.json")):
        if exclude is not None and path.parent.resolve() == Path(exclude).resolve():
            continue
        try:
            report = json.loads(path.read_text())
            entry = report["envs"][env]
            primary = entry["outcomes"][report["plan"]["primary"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        n = len(entry.get("seeds") or [])
        verdicts = [c.get("verdict") for c in primary.get("variants", {}).values()]
        decided = sum(verdict in (DIFFERS, EQUIVALENT) for verdict in verdicts)
        if n < MIN_RUNS or n <= seeds or not decided:
            continue
        covered = len(set(variants) & set(primary.get("variants", {})))
        answer = CommittedAnswer(path.parent.name, env, n, entry.get("training_steps"), decided, len(verdicts))
        key = (-covered, "sequential" in primary, bool(report.get("sections")), -n, answer.study)
        ranked.append((key, answer))
    return min(ranked, key=lambda item: item[0])[1] if ranked else None


def too_few_for_a_verdict(model: ReportModel, e: EnvResult) -> bool:
    """Whether a task of a report has fewer seeds than a verdict needs: a variant or the baseline with fewer than
    :data:`~sb3_ablation.study.analyse.statistics.MIN_RUNS` runs, or every comparison of the primary outcome
    ``unresolved`` (each then needs more seeds than it has to detect what it saw)."""
    primary = e.outcome(model.plan.primary)
    if primary is None or not primary.comparisons:
        return False
    if min(s.n_runs for s in primary.stats.values()) < MIN_RUNS:
        return True
    return all(c.verdict == UNRESOLVED for c in primary.comparisons.values())


def answer_for(model: ReportModel, e: EnvResult, folder: Path | None = None) -> CommittedAnswer | None:
    """The committed answer a task of a report points to (:func:`committed_answer`), where it has too few seeds for a
    verdict (:func:`too_few_for_a_verdict`); ``None`` otherwise, or where no committed study answers the task."""
    if not too_few_for_a_verdict(model, e):
        return None
    primary = e.outcome(model.plan.primary)
    variants = list(primary.comparisons) if primary is not None else []
    exclude = model.data.out if model.data is not None else None
    return committed_answer(e.env, variants, len(e.seeds), exclude, folder)


def committed_answers(model: ReportModel, folder: Path | None = None) -> dict[str, CommittedAnswer]:
    """
    Each task of a report with too few seeds for a verdict -> the committed answer it points to (:func:`answer_for`);
    a task no committed study answers is left out.

    :param model: the report model (its tasks, plan and study folder)
    :param folder: the committed studies' folder (default :func:`committed_studies_folder`)
    """
    return {e.env: answer for e in model.envs if (answer := answer_for(model, e, folder)) is not None}


__all__ = ["committed_answer", "committed_answers", "committed_studies_folder"]
