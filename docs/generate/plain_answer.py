"""The answer in plain words, per task condition: one sentence per component, one summary table, one forest plot per
condition; generated from the committed report.json files (and, for the resumed runs, the run records).

The README's answer block (at most :data:`README_LIMIT` bytes: the summary table, one paragraph per task, links) is
:func:`readme_block`; the Results page opens with :func:`results_section` (the same table, the paragraphs and, per
condition, its figure and sentences). The conditions and the rule that picks a condition's answer among its studies
are :mod:`readme_answer`'s; every verdict is read by :func:`report_fields.shown_verdict`, the one function the
generated pages share. Nothing here computes a statistic of returns: estimates, intervals and minimum detectable
effects are the reports' (a group-sequential design's MDE is taken at its last boundary, from the report's
per-seed differences and boundaries, with the package's own functions).

    python -m docs.generate.plain_answer            # write the figures into docs/results/figures/
    python -m docs.generate.plain_answer --check    # compare the committed figures with fresh ones
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from docs.generate import paper_budgets, readme_answer
from docs.generate.files import RESULTS, TABLE2, write_or_check
from docs.generate.readme_answer import (
    CONDITIONS,
    PRIMARY,
    SWITCHES,
    Condition,
    Measured,
    _reports,
    measurements,
    seed_range,
    steps_text,
    the_answer,
)
from docs.generate.report_fields import BOTH_SOLVE, NEITHER_LEARNS, dig, emphasised, estimate_name, number, shown_verdict
from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.inference import minimum_detectable_effect
from sb3_ablation.study.analyse.sequential import nominal_alpha
from sb3_ablation.study.render.answer_figures import ForestRow, plot_forest

FIGURES = RESULTS / "figures"
#: the README's answer block may not grow past this (bytes)
README_LIMIT = 4096
#: the tasks in the order the answer takes them: the MuJoCo tasks the TD3 paper ablated first
TASK_ORDER = ("Hopper-v5", "HalfCheetah-v5", "LunarLanderContinuous-v3", "Pendulum-v1")
#: the summary table's short forms of the regime cases (its legend spells them out)
SHORT = {BOTH_SOLVE: "cannot tell: both solve", NEITHER_LEARNS: "cannot tell: neither learns"}
OVERESTIMATION = "overestimation"


def ordered_conditions() -> list[Condition]:
    """The conditions with a committed report, by :data:`TASK_ORDER` and, within a task, in :data:`CONDITIONS`' order."""
    found = [c for c in CONDITIONS if any((readme_answer.STUDIES / s.folder / "report.json").exists() for s in c.sources)]
    return sorted(found, key=lambda c: TASK_ORDER.index(c.env) if c.env in TASK_ORDER else len(TASK_ORDER))


def condition_title(condition: Condition, steps: int) -> str:
    """``Hopper-v5, 300k steps, the TD3 paper's hyperparameters, [64, 64] networks``."""
    return f"{condition.env}, {steps_text(steps)} steps, {condition.settings}"


def condition_short(condition: Condition, steps: int) -> str:
    """A column title: ``Hopper 300k, paper`` (the task without its version: the conditions name it in full)."""
    settings = "paper" if "paper" in condition.settings else "zoo"
    return f"{condition.env.split('-v')[0].removesuffix('Continuous')} {steps_text(steps)}, {settings}"


def slug(condition: Condition, steps: int) -> str:
    """The condition's file name stem: ``hopper-300k-paper``."""
    return condition_short(condition, steps).lower().replace(" ", "-").replace(",", "")


@dataclass(frozen=True)
class Finding:
    """
    What one study (the condition's answer) measured of one component's removal.

    :param condition: the task condition
    :param switch: the component
    :param measured: the answer's comparison (:func:`readme_answer.the_answer`)
    """

    condition: Condition
    switch: str
    measured: Measured

    @property
    def variant(self) -> str:
        return f"no_{self.switch}"

    @property
    def entry(self) -> dict:
        return self.measured.entry

    @property
    def verdict(self) -> str:
        """The verdict as the report shows it."""
        return shown_verdict(self.entry, self.measured.env_entry)

    @property
    def steps(self) -> int:
        return int(self.measured.env_entry["training_steps"])


def findings(condition: Condition) -> list[Finding]:
    """The condition's answer for each component it measures, in :data:`readme_answer.SWITCHES`' order."""
    reports = _reports(condition.sources)
    found = []
    for switch in SWITCHES:
        measured = measurements(condition, f"no_{switch}", reports)
        if measured:
            found.append(Finding(condition, switch, the_answer(measured)))
    return found


def td3_progress(m: Measured) -> float | None:
    """TD3's final-window mean minus the measured random policy's return (report.json's ``learning.budget``): the
    progress a removal's effect is a share of (``None`` where the report lacks either, or TD3 made no progress)."""
    budget = dig(m.env_entry, "learning", "budget") or {}
    mean, random_value = budget.get("td3_mean"), budget.get("random")
    if mean is None or random_value is None or mean <= random_value:
        return None
    return float(mean - random_value)


def share(value: float, progress: float) -> str:
    """``-69%``: a difference as a share of TD3's progress."""
    return f"{100 * value / progress:+,.0f}%"


def detectable(m: Measured, variant: str) -> float | None:
    """
    The smallest difference the comparison's seeds detect with the plan's power at the boundary its test used: the
    report's ``mde`` (a fixed design's is at its family's first level); for a group-sequential design, at the nominal
    level of the boundary of the look that decided (the last look where none did), from the report's per-seed
    differences. ``None`` where the report has neither.
    """
    sequential = dig(m.env_entry, "outcomes", PRIMARY, "sequential") or {}
    decision = dig(sequential, "decisions", variant) or {}
    boundaries = decision.get("boundaries")
    mde = m.entry.get("mde")
    if boundaries:
        look = decision.get("look")
        look = look if look is not None else max(int(sequential.get("reached") or len(boundaries)), 1) - 1
        differences = np.asarray(m.entry.get("differences") or [], dtype=float)[: m.entry.get("n") or None]
        power = dig(m.report, "plan", "power") or 0.8
        if len(differences) >= 2:
            mde = minimum_detectable_effect(
                float(differences.std(ddof=1)), len(differences), nominal_alpha(boundaries)[look], power
            )
    return float(mde) if mde is not None and math.isfinite(mde) else None


def along_training(m: Measured, variant: str) -> str:
    """Where in training the effect shows, in the words of the report's analysis of effects along training
    (``envs.<env>.along_training.comparisons.<variant>.where``: where the simultaneous band excludes 0); empty where the
    report has no such analysis."""
    where = dig(m.env_entry, "along_training", "comparisons", variant, "where")
    if not where:
        return ""
    where = where.rstrip(".").removesuffix(" (simultaneous 95% band)")  # the clause names the band once
    return f" Along training (removed minus TD3, simultaneous 95% band over the steps; descriptive): {where}."


def mechanism(m: Measured, variant: str) -> str:
    """The overestimation at the end, removed minus TD3, as an estimate with its interval (descriptive: a secondary
    outcome is outside the primary's verdicts); empty where the report did not measure it."""
    entry = dig(m.env_entry, "outcomes", OVERESTIMATION, "variants", variant)
    if not entry or entry.get("effect") is None:
        return ""
    return (
        " Overestimation at the end (critic 1's Q minus the discounted return, removed minus TD3; descriptive): "
        f"{estimate_name(entry.get('test'))} {number(entry['effect'])}{interval(entry)}."
    )


def interval(entry: dict) -> str:
    ci = entry.get("ci")
    return f" [{number(ci[0])}, {number(ci[1])}]" if ci and None not in ci else ""


def verdict_words(finding: Finding) -> str:
    """The verdict in plain words: what it says about removing the component."""
    verdict, entry = finding.verdict, finding.entry
    if verdict == "differs":
        return f"{emphasised(verdict)}: removing it {'lowers' if entry['effect'] < 0 else 'raises'} the return"
    if verdict == "equivalent":
        margin = entry.get("margin")
        within = f" of ±{margin:,.1f}" if margin is not None else ""
        return f"{emphasised(verdict)}: the difference lies within the declared margin{within}"
    if verdict == "unresolved":
        return "unresolved: the plan's test detected no difference, which is not 'no effect'"
    return verdict


def sentence(finding: Finding) -> str:
    """One sentence a student can quote: the estimate in return units and as a share of TD3's progress, the verdict in
    plain words, what the seeds could have detected, where in training the effect shows, and the mechanism."""
    m, entry = finding.measured, finding.entry
    estimate = f"{estimate_name(entry.get('test'))} {number(entry['effect'])}{interval(entry)}"
    progress = td3_progress(m)
    shares = ""
    if progress is not None:
        ci = entry.get("ci")
        bounds = f" [{share(ci[0], progress)}, {share(ci[1], progress)}]" if ci and None not in ci else ""
        shares = f", {share(entry['effect'], progress)}{bounds} of TD3's progress from the random policy ({progress:,.0f})"
    mde = detectable(m, finding.variant)
    seeds = m.seeds
    power = dig(m.report, "plan", "power") or 0.8
    could = (
        f" These {len(seeds)} seeds could have detected a difference of about ±{abs(mde):,.0f} ({power:.0%} power at the "
        "plan's boundary)."
        if mde is not None
        else ""
    )
    return (
        f"**{finding.switch}**: removing it changed the final-window return by {estimate}{shares} ({m.label}, seeds "
        f"{seed_range(seeds)}). Verdict: {verdict_words(finding)}.{could}"
        + along_training(m, finding.variant)
        + mechanism(m, finding.variant)
    )


def short_cell(finding: Finding | None) -> str:
    """A summary table's cell: the verdict, short, and the estimate."""
    if finding is None:
        return "—"
    verdict = SHORT.get(finding.verdict, finding.verdict)
    return f"{emphasised(verdict)} {number(finding.entry['effect'])}"


def summary_table(conditions: list[Condition], by_condition: dict[int, list[Finding]]) -> list[str]:
    """Rows: components; columns: task conditions; cells: the verdict as shown and the estimate."""
    columns = [c for c in conditions if by_condition[id(c)]]
    header = "| removed | " + " | ".join(condition_short(c, by_condition[id(c)][0].steps) for c in columns) + " |"
    lines = [header, "|---|" + "---|" * len(columns)]
    for switch in SWITCHES:
        cells = []
        for c in columns:
            cells.append(short_cell(next((f for f in by_condition[id(c)] if f.switch == switch), None)))
        lines.append(f"| {switch} | " + " | ".join(cells) + " |")
    return lines


LEGEND = (
    "Cell: the return with the component removed minus TD3's (mean over the last 10% of training) and the verdict "
    "under the study's plan, bold where its error control gives one. unresolved: not detected, which is not 'no "
    "effect'; cannot tell: both solve: both arms reach the task's ceiling at this budget. zoo, paper: rl-zoo's or the "
    "TD3 paper's hyperparameters; [64, 64] networks."
)


def _names(items: list[Finding], conjunction: str = "and") -> str:
    names = [f.switch for f in items]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def _seeds(seeds: list[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {seed_range(seeds)}"


#: the order of a paragraph's verdict groups: the verdicts first, then what the seeds could not tell
GROUP_ORDER = ("lowers", "raises", "equivalent", BOTH_SOLVE, NEITHER_LEARNS, "unresolved")


def condition_clause(
    condition: Condition, found: list[Finding], resumed_count: bool = False, paper_values: bool = True
) -> str:
    """One condition in a task's paragraph: TD3's progress, the components grouped by verdict, (``paper_values``) the
    paper's values where the condition runs its settings, and (``resumed_count``) how many runs resumed from a
    checkpoint."""
    lead = found[0].measured
    fraction = dig(lead.env_entry, "learning", "budget", "fraction")
    reference = dig(lead.env_entry, "learning", "budget", "reference_budget")
    progress = (
        f" (TD3 at {fraction:.0%} of the way from random to the {steps_text(reference)} reference)"
        if fraction is not None and reference
        else ""
    )
    groups: dict[str, list[Finding]] = {}
    for finding in found:
        key = finding.verdict
        if key == "differs":
            key = "lowers" if finding.entry["effect"] < 0 else "raises"
        groups.setdefault(key, []).append(finding)
    parts = []
    ranked = sorted(groups.items(), key=lambda kv: GROUP_ORDER.index(kv[0]) if kv[0] in GROUP_ORDER else len(GROUP_ORDER))
    for rank, (key, items) in enumerate(ranked):
        # the last group after others, when long, by count: the table above names each component's verdict
        names = f"the other {len(items)}" if rank and rank == len(ranked) - 1 and len(items) > 2 else _names(items)
        if key in ("lowers", "raises"):
            parts.append(f"removing {_names(items, 'or')} {key} the return (**differs**)")
        elif key == "unresolved":
            mdes = sorted(m for m in (detectable(f.measured, f.variant) for f in items) if m is not None)
            reach = f" (detectable: ±{mdes[0]:,.0f} to ±{mdes[-1]:,.0f})" if len(mdes) > 1 else ""
            reach = f" (detectable: ±{mdes[0]:,.0f})" if len(mdes) == 1 else reach
            parts.append(f"{names}: unresolved{reach}")
        else:
            parts.append(f"{names}: {emphasised(key)}")
    paper = paper_effects(condition.env) if condition.paper_task and paper_values else {}
    values = [f"{f.switch} {paper[f.variant]:+,.0f}" for f in found if f.variant in paper]
    if values:
        parts.append(f"the TD3 paper at 1M steps: {', '.join(values)}")
    resumed = _resumed_count(condition, found) if resumed_count else ""
    note = f" {resumed}" if resumed else ""
    settings = "the paper's settings" if "paper" in condition.settings else "rl-zoo's settings"
    return f"At {steps_text(found[0].steps)} steps, {settings}{progress}: {'; '.join(parts)}.{note}"


def _resumed_count(condition: Condition, found: list[Finding]) -> str:
    """The README's note of the resumed runs: the runs themselves where they are one group, else how many."""
    groups = resumed(condition, found)
    if len(groups) == 1:
        (_, variant, step), seeds = next(iter(groups.items()))
        return f"({variant} {_seeds(seeds)} resumed from a checkpoint at step {step:,}.)"
    count = sum(len(seeds) for seeds in groups.values())
    return f"({plural(count, 'run')} resumed from a checkpoint.)" if count else ""


def resumed_in(folder: Path) -> dict[tuple[str, str, int], list[int]]:
    """The runs of a study folder that resumed from a checkpoint, as its report.json's ``provenance.resumed`` lists
    them (env, variant, seed, step: from the records' ``resumed_from``): (env, variant, step) -> seeds."""
    report = json.loads((folder / "report.json").read_text())
    groups: dict[tuple[str, str, int], list[int]] = {}
    for env, variant, seed, step in dig(report, "provenance", "resumed") or []:
        groups.setdefault((env, variant, int(step)), []).append(int(seed))
    return {key: sorted(seeds) for key, seeds in sorted(groups.items())}


def resumed(condition: Condition, found: list[Finding]) -> dict[tuple[str, str, int], list[int]]:
    """The runs of the answer's studies in ``condition`` (TD3 and the variants it compares) that resumed from a
    checkpoint: (study, variant, step) -> seeds."""
    variants = {"td3", *(f.variant for f in found)}
    return {
        (folder, variant, step): seeds
        for folder in dict.fromkeys(f.measured.source.folder for f in found)
        for (env, variant, step), seeds in resumed_in(readme_answer.STUDIES / folder).items()
        if env == condition.env and variant in variants
    }


def resumed_text(groups: dict[tuple[str, str, int], list[int]]) -> str:
    """``Runs resumed from a checkpoint (their records' `resumed_from`): hopper-paper-300k: td3 seeds 10-19 from step
    50,000.`` (empty for none); the first key of each group names where the runs belong."""
    parts = [f"{where}: {variant} {_seeds(seeds)} from step {step:,}" for (where, variant, step), seeds in groups.items()]
    return f"Runs resumed from a checkpoint (their records' `resumed_from`): {'; '.join(parts)}." if parts else ""


def task_paragraphs(
    conditions: list[Condition],
    by_condition: dict[int, list[Finding]],
    resumed_count: bool = False,
    paper_values: bool = True,
) -> list[str]:
    """One paragraph per task: each of its conditions' clause (:func:`condition_clause`)."""
    lines = []
    for env in dict.fromkeys(c.env for c in conditions):
        clauses = [
            condition_clause(c, by_condition[id(c)], resumed_count, paper_values)
            for c in conditions
            if c.env == env and by_condition[id(c)]
        ]
        if clauses:
            lines += ["", f"**{env}.** " + " ".join(clauses)]
    return lines


def paper_effects(env: str) -> dict[str, float]:
    """The TD3 paper's Table 2 differences (removed minus TD3, 1M steps) for ``env``'s task; empty if it has none."""
    table = yaml.safe_load(TABLE2.read_text())
    task = env.split("-v")[0]
    if task not in table["tasks"]:
        return {}
    rows = {row["variant"]: row[task] for row in table["rows"] if row.get("variant")}
    return {variant: value - rows["td3"] for variant, value in rows.items() if variant != "td3"}


def figure_path(condition: Condition, found: list[Finding], folder: Path = FIGURES) -> Path:
    return folder / f"answer-{slug(condition, found[0].steps)}.png"


def write_figure(condition: Condition, found: list[Finding], folder: Path = FIGURES) -> Path:
    """The condition's forest plot (:func:`~sb3_ablation.study.render.answer_figures.plot_forest`)."""
    paper = paper_effects(condition.env)
    rows = [
        ForestRow(
            f.switch,
            float(f.entry["effect"]),
            tuple(f.entry["ci"]) if f.entry.get("ci") and None not in f.entry["ci"] else None,
            detectable(f.measured, f.variant),
            SHORT.get(f.verdict, f.verdict),
            paper.get(f.variant),
        )
        for f in found
    ]
    path = figure_path(condition, found, folder)
    folder.mkdir(parents=True, exist_ok=True)
    plot_forest(
        condition_title(condition, found[0].steps),
        rows,
        f"final-window return, removed minus TD3 ({estimate_name(found[0].entry.get('test'))})",
        path,
    )
    return path


def _all() -> tuple[list[Condition], dict[int, list[Finding]]]:
    conditions = ordered_conditions()
    return conditions, {id(c): findings(c) for c in conditions}


def readme_block(link: Callable[[str], str] = lambda page: f"docs/results/{page}") -> str:
    """The README's answer: the summary table, one paragraph per task, links (at most :data:`README_LIMIT` bytes)."""
    conditions, by_condition = _all()
    # the side-by-side table, once the 1M study has a report, gives the paper's values: the paragraphs leave them out
    paper_table = paper_budgets.readme_lines(readme_answer.STUDIES)
    paper_link = (
        ""
        if paper_table
        else "; the TD3 paper's Table 2 (1M steps, [400, 300] networks: a verdict unlike the paper's is a finding at these "
        "budgets)"
    )
    lines = [
        "Which components matter: what removing each from TD3 did to the return, per task condition (task, budget, "
        "hyperparameters).",
        "",
        *summary_table(conditions, by_condition),
        "",
        LEGEND,
        *task_paragraphs(conditions, by_condition, resumed_count=True, paper_values=not paper_table),
        *paper_table,
        "",
        f"Per component, a sentence with its interval; per condition, a figure; the tables behind them; each study's "
        f"report{paper_link}: [Results]({link('index.md')}).",
    ]
    return "\n".join(lines) + "\n"


def results_section(figures: str = "figures") -> str:
    """The Results page's opening: the README's answer, then per condition its figure and one sentence per component."""
    conditions, by_condition = _all()
    lines = [
        *summary_table(conditions, by_condition),
        "",
        LEGEND,
        *task_paragraphs(conditions, by_condition),
    ]
    for condition in conditions:
        found = by_condition[id(condition)]
        if not found:
            continue
        title = condition_title(condition, found[0].steps)
        lines += [
            "",
            f"### {title}",
            "",
            f"![{title}]({figures}/{figure_path(condition, found).name})",
            "",
            *(f"- {sentence(f)}" for f in found),
        ]
        note = resumed_text(resumed(condition, found))
        if note:
            lines += ["", note]
    return "\n".join(lines) + "\n"


def write_figures(folder: Path = FIGURES) -> list[Path]:
    """Every condition's figure into ``folder``."""
    conditions, by_condition = _all()
    return [write_figure(c, by_condition[id(c)], folder) for c in conditions if by_condition[id(c)]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the committed figures with fresh ones")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {FIGURES / path.name: path.read_bytes() for path in write_figures(Path(tmp))}
    gone = sorted(path for path in FIGURES.glob("answer-*.png") if path not in fresh)
    return write_or_check(fresh, args.check, "python -m docs.generate.plain_answer", gone)


if __name__ == "__main__":
    sys.exit(main())
