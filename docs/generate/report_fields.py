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


# ----------------------------------------------------------------------------------------------------------------------
# The verdict a comparison is given, in every generated page: one function, so that every page says the same
# ----------------------------------------------------------------------------------------------------------------------

#: the plain words of the regime cases: two arms at the task's ceiling, or both at its floor, cannot be told apart at
#: this budget, whatever the equivalence test says (at the ceiling the margin and the ceiling are the same distance)
BOTH_SOLVE = "cannot tell: both arms solve the task at this budget"
NEITHER_LEARNS = "cannot tell: neither arm learns"
PLAIN_WORDS = {"equivalent (at ceiling)": BOTH_SOLVE, "equivalent (at floor)": NEITHER_LEARNS}
#: the verdicts the plan's error control gives, the only ones printed in bold
DECISIVE = ("differs", "equivalent")


def shown_verdict(entry: dict[str, Any], env_entry: dict[str, Any] | None = None, decision: dict | None = None) -> str:
    """
    The verdict of a comparison as its report shows it: the one place the generated pages read a verdict from.

    Today report.json keeps the test's result in ``verdict`` and the verdict shown in ``qualified_verdict`` (a
    factorial effect's in ``verdict_shown``, a sequential design's in its ``decisions``); an unlabelled ``equivalent``
    of a task that ``learning.ceiling`` flags is shown at the ceiling; the regime labels read in plain words
    (:data:`PLAIN_WORDS`).

    :param entry: the comparison (report.json's ``outcomes.<outcome>.variants.<variant>``, or any entry with ``verdict``)
    :param env_entry: its task's entry (report.json's ``envs.<env>``), for the ceiling flag; ``None``: not known
    :param decision: a sequential design's decision of the comparison (``sequential.decisions.<variant>``), if any
    :return: the verdict, e.g. ``differs``, ``unresolved``, ``cannot tell: neither arm learns``
    """
    decision = decision or {}
    verdict = str(
        decision.get("qualified_verdict")
        or decision.get("verdict")
        or entry.get("verdict_shown")
        or entry.get("qualified_verdict")
        or entry.get("verdict")
    )
    if verdict == "equivalent" and dig(env_entry, "learning", "ceiling", "at_ceiling"):
        verdict = "equivalent (at ceiling)"
    return PLAIN_WORDS.get(verdict, verdict)


def test_verdict(entry: dict[str, Any]) -> str:
    """The test's own result (``differs``, ``equivalent``, ``unresolved``) before any label, for the rules that select
    what a page shows (never printed as a verdict): ``test_verdict`` where report.json has it, else ``verdict``."""
    return str(entry.get("test_verdict") or entry.get("verdict"))


def emphasised(verdict: str) -> str:
    """A verdict as a page prints it: in bold where it is one the plan's error control gives (``differs``,
    ``equivalent``), plain otherwise (``unresolved``, the regime cases, a withheld verdict)."""
    return f"**{verdict}**" if verdict in DECISIVE else verdict
