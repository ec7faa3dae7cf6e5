"""Reading committed report.json files by key: the generators of docs pages (answer_key.py, algorithm_pages.py,
readme_answer.py, docs_results.py) use only fields that are there, since reports gain fields over time."""

from __future__ import annotations

from typing import Any


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a key is missing (the reports gain fields over time; none is assumed)."""
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def estimate_name(test: str | None) -> str:
    """What a comparison's ``effect`` is, from its ``test`` as report.json writes it: the Wilcoxon signed-rank test's
    Hodges-Lehmann estimate, the trimmed mean of the trimmed sign-flip test, else the mean of the differences."""
    difference_test = (test or "").split(";")[0]
    if "Hodges-Lehmann" in difference_test:
        return "HL"
    if "trimmed" in difference_test:
        return "trimmed mean"
    return "mean"


def number(value: float | None) -> str:
    """A return-scale number with its sign: one decimal below 10 in size, none above (``n/a`` for None)."""
    if value is None:
        return "n/a"
    return f"{value:+,.1f}" if abs(value) < 10 else f"{value:+,.0f}"


#: the report section of a plan amended after runs (sb3_ablation/study/render/amendments.py)
AMENDED_TITLE = "Plan amended after runs: verdicts side by side"


def plan_phrase(report: dict) -> str:
    """
    How a study's plan relates to its runs, in the words of the report's own banners (render/plan.py), from
    report.json: its ``plan_declared`` (the manifest's record: ``at``, ``finished_runs``), ``provenance.reused`` (the
    runs reused from other studies) and the amendments made after runs (the section ``AMENDED_TITLE``, whose first
    version is the plan as declared). Never typed by hand: a corrected manifest corrects the sentence.
    """
    declared = report.get("plan_declared") or {}
    finished, at = declared.get("finished_runs"), declared.get("at")
    when = f" ({at[:10]})" if at else ""
    reused = dig(report, "provenance", "reused")
    reused = reused if isinstance(reused, list) else []
    if finished == 0:
        text = f"plan declared before the first run{when}"
        if reused:
            text += f", {len(reused)} of whose runs reproduce an earlier study's, with their results known"
    else:
        runs = f"{finished} runs" if finished else "its runs"
        source = " (reused from an earlier study)" if finished and reused else ""
        text = f"plan fixed after {runs} had finished{source}{when}: a re-analysis, not a confirmatory test"
    versions = dig(report, "sections", AMENDED_TITLE, "versions")
    for version in (versions if isinstance(versions, list) else [])[1:]:
        if isinstance(version, dict) and version.get("finished_runs"):
            changes = "; ".join(map(str, version.get("changes") or []))
            text += (
                f"; amended after {version['finished_runs']} runs ({changes}): its report shows the verdicts under both plans"
            )
    return text
