"""The README's answer to the exercise, generated from the committed studies' report.json files.

Writes the block between ``<!-- answer:start -->`` and ``<!-- answer:end -->`` in README.md; ``--check`` fails (exit 1)
when the committed block differs from a fresh generation (tests/docs/test_docs.py runs it). The library knows neither
README nor the repository's study folders: this script does.

One answer per question: per task condition (task, budget, hyperparameters) one table, one row per component, every
estimate on one sign convention (the component removed from full TD3, minus full TD3). Each row gives the answer's
verdict and named estimate, the replicates of the same condition side by side with their seeds, a
secondary outcome where it disagrees with the primary, the failure rates and, per condition, TD3's own progress at the
budget. The detail (factorial effects, sequential looks, the tuned arms, the paper's rows, each plan's record) is
:func:`detail`, which opens docs/results/index.md after the answer.

Fields read from report.json (all by key; a field that is missing prints nothing): ``plan_declared``,
``amendments``, ``provenance.reused``; per env ``training_steps``, ``seeds``, ``outcomes`` (per variant ``verdict``,
``test``, ``effect``, ``ci``, ``n``, ``differences``; the baseline's ``mean``; ``sequential``), ``failures``
(``variants.*.did_not_learn`` / ``critic_diverged``) and, where present, ``learning`` (``budget``, ``ceiling``,
``two_arm``); ``replication``; ``sections`` (the factorial analysis with its ``learning`` where present, the tuned
study's comparisons).

    python -m docs.generate.readme_answer          # rewrite the block
    python -m docs.generate.readme_answer --check  # compare only
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from docs.generate.files import ROOT, STUDIES, TABLE2, write_or_check
from docs.generate.report_fields import dig, emphasised, estimate_name, number, plan_phrase, shown_verdict, test_verdict
from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.learning_region import AT_FLOOR
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.plan.designs import roman
from sb3_ablation.study.plan.learning_rules import LearningRules, paper_reference, random_return
from sb3_ablation.study.render.labels import qualified_verdict
from sb3_ablation.switches import SWITCHES

START, END = "<!-- answer:start -->", "<!-- answer:end -->"
PRIMARY = "final_window"
SECONDARY = {"last": "last evaluation", "auc": "area under the curve", "overestimation": "overestimation"}
RETURN_OUTCOMES = ("final_window", "last", "auc")  # outcomes on the return scale, whose direction the primary shares
DECISIVE = ("differs", "equivalent")


@dataclass(frozen=True)
class Source:
    """
    One study's measurement of a task condition.

    :param folder: the study folder under docs/studies/
    :param design: its design, in words
    :param part: ``envs`` (the study's analysis), or ``replication`` (its seeds outside the plan's, analysed apart)
    """

    folder: str
    design: str
    part: str = "envs"


@dataclass(frozen=True)
class Condition:
    """
    A task condition: one task, one budget, one set of hyperparameters, measured by one or more studies.

    :param env: the task
    :param settings: the hyperparameters, in words
    :param sources: the studies that measure TD3 minus each component in this condition (replicates of each other)
    :param paper_task: the TD3 paper's task name in docs/generate/td3_paper_table2.yml where its rows go beside ("": none)
    """

    env: str
    settings: str
    sources: tuple[Source, ...]
    paper_task: str = ""


# Replicates: the committed studies of a condition with at least 10 seeds per comparison. The 5-seed studies
# (pendulum-batched, pendulum-factorial, hopper-factorial) are left out; the Hopper half fraction has no cell with a
# single component removed, so it measures no "TD3 minus X" and appears in the detail only.
CONDITIONS = (
    Condition(
        "Pendulum-v1",
        "rl-zoo's hyperparameters, [64, 64] networks",
        (
            Source("pendulum-sequential", "group-sequential replication"),
            Source("pendulum", "leave-one-out"),
            Source("pendulum-2x6", "2^6 factorial: the cell without the component against the TD3 cell"),
            Source("pendulum-tuned", "tuned study: the arm with TD3's hyperparameters"),
        ),
    ),
    Condition("Hopper-v5", "rl-zoo's hyperparameters, [64, 64] networks", (Source("multitask", "leave-one-out"),)),
    Condition(
        "Hopper-v5",
        "the TD3 paper's hyperparameters, [64, 64] networks",
        (Source("hopper-paper-300k", "group-sequential"),),
        paper_task="Hopper",
    ),
    # the TD3 paper's budget on fresh seeds (study_files/hopper_paper_1m.yml): shown once its report is committed
    Condition(
        "Hopper-v5",
        "the TD3 paper's hyperparameters, [64, 64] networks",
        (Source("hopper-paper-1m", "fixed design, fresh seeds"),),
        paper_task="Hopper",
    ),
    Condition(
        "HalfCheetah-v5",
        "rl-zoo's hyperparameters, [64, 64] networks",
        (Source("multitask", "leave-one-out"), Source("multitask", "replication on fresh seeds", part="replication")),
    ),
    Condition(
        "LunarLanderContinuous-v3", "rl-zoo's hyperparameters, [64, 64] networks", (Source("multitask", "leave-one-out"),)
    ),
)
FACTORIALS = (("pendulum-2x6", "Pendulum-v1"), ("hopper-half-fraction", "Hopper-v5"))
TUNED = ("pendulum-tuned", "Pendulum-v1", "Removed with TD3's hyperparameters, and with its own")
# the TD3 paper's question where TD3 learns: (folder, env, the paper's task name in docs/generate/td3_paper_table2.yml)
PAPER_300K = ("hopper-paper-300k", "Hopper-v5", "Hopper")


def report(folder: str) -> dict:
    return json.loads((STUDIES / folder / "report.json").read_text())


def _reports(sources: tuple[Source, ...]) -> dict[str, dict]:
    return {s.folder: report(s.folder) for s in sources if (STUDIES / s.folder / "report.json").exists()}


def cell(entry: dict | None, name: str = "") -> str:
    """A comparison's verdict and estimate, e.g. ``**differs** HL -27`` (``—``: no comparison; ``name``: the
    estimate's name, where the entry has no ``test`` to take it from)."""
    if entry is None:
        return "—"
    name = name or (estimate_name(entry["test"]) if entry.get("test") else "")
    value = f"{name} {number(entry['effect'])}" if name else number(entry["effect"])
    return f"{emphasised(shown_verdict(entry))} {value}"


def _interval(entry: dict) -> str:
    ci = entry.get("ci")
    return f" [{number(ci[0])}, {number(ci[1])}]" if ci and None not in ci else ""


def steps_text(steps: int) -> str:
    """``20k``, ``1M``."""
    return f"{steps // 1_000_000}M" if steps % 1_000_000 == 0 else f"{steps // 1000:,}k"


def seed_range(seeds: list[int]) -> str:
    """``10-19`` for consecutive seeds, else the list."""
    if not seeds:
        return "no seeds"
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(map(str, seeds))


@dataclass(frozen=True)
class Measured:
    """One study's comparison of one component's removal with TD3 in a condition."""

    source: Source
    report: dict
    env_entry: dict
    entry: dict

    @property
    def seeds(self) -> list[int]:
        """The seeds of the comparison (a sequential design's first ``n`` in its order)."""
        order = dig(self.env_entry, "outcomes", PRIMARY, "sequential", "seed_order") or self.env_entry["seeds"]
        return list(order[: self.entry.get("n") or len(order)])

    @property
    def declared_first(self) -> bool:
        return (self.report.get("plan_declared") or {}).get("finished_runs") == 0

    @property
    def label(self) -> str:
        return f"{self.source.folder}{', replication' if self.source.part == 'replication' else ''}"


def env_entry(study: dict, source: Source, env: str) -> dict | None:
    return dig(study, source.part, env)


def measurements(condition: Condition, variant: str, reports: dict[str, dict]) -> list[Measured]:
    """Every source's comparison of ``variant`` with TD3 in ``condition``, in the condition's order."""
    found = []
    for source in condition.sources:
        study = reports.get(source.folder)
        entry = env_entry(study, source, condition.env) if study else None
        comparison = dig(entry, "outcomes", PRIMARY, "variants", variant)
        if study is not None and entry is not None and comparison is not None and comparison.get("effect") is not None:
            # a sequential design's verdict is its decision (open until the next look)
            decision = dig(entry, "outcomes", PRIMARY, "sequential", "decisions", variant)
            shown = shown_verdict(comparison, entry, decision)
            found.append(Measured(source, study, entry, {**comparison, "verdict_shown": shown}))
    return found


def the_answer(found: list[Measured]) -> Measured:
    """The declared rule: the study whose plan was declared before its first run, then the most seeds, then the
    condition's order (a confirmatory study before a re-analysis)."""
    return max(found, key=lambda m: (m.declared_first, m.entry.get("n") or 0, -found.index(m)))


def verdict_text(entry: dict, env: dict) -> str:
    """The verdict as the report shows it (:func:`report_fields.shown_verdict`), in bold only where it is one."""
    return emphasised(shown_verdict(entry, env))


def estimate(entry: dict, env: dict, interval: bool = True, named: bool = True) -> str:
    """``**differs** HL -27 [-307, -14]``: verdict, (optionally) the estimate's name, the estimate and (optionally) its
    95% interval; ``**differs** -27`` without either, as a summary table's cell reads."""
    name = f"{estimate_name(entry.get('test'))} " if named else ""
    return f"{verdict_text(entry, env)} {name}{number(entry['effect'])}{_interval(entry) if interval else ''}"


def replicates_text(answer: Measured, found: list[Measured]) -> str:
    others = [m for m in found if m is not answer]
    if not others:
        return "—"
    items = [f"{m.label} (seeds {seed_range(m.seeds)}): {estimate(m.entry, m.env_entry, interval=False)}" for m in others]
    # side by side, with their seeds, and no test of agreement: the studies share seeds (their TD3 arms correlate),
    # which a test of independent samples ignores, and a test that does not reject would say nothing of agreement
    return "; ".join(items)


def _rate(item: dict | None) -> str:
    return "?" if not item else f"{item['failed']}/{item['n']}"


def failures_text(m: Measured, variant: str) -> str:
    """Did not learn (and critic diverged, where any did): removed vs TD3. From ``learning.two_arm`` where the report
    has it (with its exact test), else from ``failures``."""
    baseline = m.report.get("baseline") or "td3"
    rates = dig(m.env_entry, "learning", "variants", variant, "failure_rate")
    if isinstance(rates, dict) and "variant" in rates and "baseline" in rates:
        text = f"{_rate(rates['variant'])} vs {_rate(rates['baseline'])}"
        if rates.get("p_adjusted") is not None:
            text += f" ({rates.get('verdict')}, exact p adjusted {rates['p_adjusted']:.2g})"
        return text
    failures = dig(m.env_entry, "failures", "variants") or {}
    removed, td3 = failures.get(variant) or {}, failures.get(baseline) or {}
    if not removed:
        return "—"
    if not removed.get("did_not_learn"):
        return "no rule"
    text = f"{_rate(removed.get('did_not_learn'))} vs {_rate(td3.get('did_not_learn'))}"
    diverged = [(removed.get("critic_diverged") or {}), (td3.get("critic_diverged") or {})]
    if any(d.get("failed") for d in diverged):
        text += f"; critic diverged {_rate(diverged[0])} vs {_rate(diverged[1])}"
    return text


def disagrees(primary: dict, secondary: dict, outcome: str) -> bool:
    """The declared rule: a secondary outcome is shown where it reaches a verdict (differs or equivalent) that the
    primary does not have, or both differ in opposite directions (return outcomes only)."""
    primary_result, secondary_result = test_verdict(primary), test_verdict(secondary)
    if secondary_result in DECISIVE and secondary_result != primary_result:
        return True
    both_differ = secondary_result == primary_result == "differs"
    return both_differ and outcome in RETURN_OUTCOMES and (secondary["effect"] > 0) != (primary["effect"] > 0)


def secondary_text(m: Measured, variant: str) -> str:
    items = []
    for outcome, name in SECONDARY.items():
        entry = dig(m.env_entry, "outcomes", outcome, "variants", variant)
        if entry is None or entry.get("effect") is None or not disagrees(m.entry, entry, outcome):
            continue
        # a secondary outcome is outside the primary's verdicts: its estimate and interval, no verdict words
        items.append(f"{name}: {estimate_name(entry.get('test'))} {number(entry['effect'])}{_interval(entry)}")
    return "; ".join(items) or "—"


def budget_progress(m: Measured, env: str) -> str:
    """TD3's final-window return as a fraction of the span from the measured random return to the reference at the
    paper's budget: ``learning.budget`` where the report has it, else computed from TD3's mean and references.yml."""
    budget = dig(m.env_entry, "learning", "budget")
    if isinstance(budget, dict) and budget.get("fraction") is not None:
        mean, fraction = budget["td3_mean"], budget["fraction"]
        random_value, reference, steps = budget["random"], budget["reference"], budget["reference_budget"]
        source = ""
    else:
        measured, paper = random_return(env), paper_reference(env)
        mean = dig(m.env_entry, "outcomes", PRIMARY, "baseline", "mean")
        if measured is None or paper is None or mean is None:
            return ""
        random_value, (steps, reference, source) = measured[0], paper
        fraction = (mean - random_value) / (reference - random_value)
        source = f", {source.split(':')[0]}"
    ceiling = dig(m.env_entry, "learning", "ceiling")
    at_ceiling = " **At ceiling**: TD3 and the variants sit within the declared distance of the reference." if (
        isinstance(ceiling, dict) and ceiling.get("at_ceiling")
    ) else ""  # fmt: skip
    return (
        f"TD3's final-window mean {mean:,.1f} ({m.label}) is {fraction:.0%} of the way from the random policy "
        f"({random_value:,.1f}, measured) to the reference at {steps_text(steps)} steps ({reference:,.1f}{source})."
        + at_ceiling
    )


def failure_rule(m: Measured) -> str:
    """The "did not learn" rule the failure column applies: ``learning.threshold`` where the report has it, else
    ``failures.threshold``."""
    rule = dig(m.env_entry, "learning", "did_not_learn")
    if isinstance(rule, dict) and "threshold" in rule:
        fraction = rule.get("learning_fraction")
        share = f"{fraction:.0%} of" if isinstance(fraction, int | float) else "a declared share of"
        threshold, how = rule.get("threshold"), f"the measured random return plus {share} the span to the reference"
    else:
        source = m.env_entry.get("failures") or {}
        threshold, how = source.get("threshold"), source.get("threshold_how") or ""
    if threshold is None:
        return f"Did not learn: no rule in this report ({how})."
    return f"Did not learn: final-window return below {threshold:,.1f} ({how})."


def condition_lines(condition: Condition) -> list[str]:
    reports = _reports(condition.sources)
    rows: list[str] = []
    used: list[Measured] = []
    lead: Measured | None = None
    for switch in SWITCHES:
        variant = f"no_{switch}"
        found = measurements(condition, variant, reports)
        if not found:
            continue
        answer = the_answer(found)
        lead = lead or answer
        used += [m for m in found if all(m.source != u.source for u in used)]
        rows.append(
            f"| {switch} | {estimate(answer.entry, answer.env_entry)} ({answer.label}, seeds {seed_range(answer.seeds)})"
            f" | {replicates_text(answer, found)} | {failures_text(answer, variant)} | {secondary_text(answer, variant)} |"
        )
    if lead is None:
        return []
    steps = lead.env_entry["training_steps"]
    studies = "; ".join(
        f"{m.label}: {m.source.design}, seeds {seed_range(m.env_entry['seeds'])}"
        + (f", {plural(m.entry['family_size'], 'comparison')} in its family" if m.entry.get("family_size") else "")
        + f", {plan_phrase(m.report)}"
        for m in sorted(used, key=lambda m: condition.sources.index(m.source))
    )
    lines = [
        "",
        f"**{condition.env}, {steps_text(steps)} steps, {condition.settings}.** {budget_progress(lead, condition.env)} "
        f"{failure_rule(lead)} Studies: {studies}.",
        "",
        "| removed | answer: verdict, estimate [95% CI] (study, seeds) | replicates side by side (study, seeds) "
        "| did not learn: removed vs TD3 | secondary outcome whose own test disagrees (descriptive: estimate [95% CI]) |",
        "|---|---|---|---|---|",
        *rows,
    ]
    return lines + paper_sentence(condition, lead)


def paper_sentence(condition: Condition, lead: Measured) -> list[str]:
    """The TD3 paper's "TD3 - X" rows at 1M steps, beside a condition that runs its settings."""
    if not condition.paper_task:
        return []
    table = yaml.safe_load(TABLE2.read_text())
    paper = {row["variant"]: row[condition.paper_task] for row in table["rows"] if row.get("variant")}
    variants = dig(lead.env_entry, "outcomes", PRIMARY, "variants") or {}
    rows = [f"{v.removeprefix('no_')} {paper[v] - paper['td3']:+,.0f}" for v in variants if v in paper]
    looks = dig(lead.env_entry, "outcomes", PRIMARY, "sequential") or {}
    state = ""
    if looks.get("looks"):
        reached, planned = looks.get("reached", 0), len(looks["looks"])
        state = (
            f" All {planned} looks are done ({looks['looks'][-1]} seeds): the verdicts above are final."
            if reached >= planned
            else f" This study is at look {reached} of {planned}; `open` awaits the next."
        )
    decisions = looks.get("decisions") or {}
    directions = [
        f"{v.removeprefix('no_')}: "
        + paper_direction(
            {**entry, "verdict": shown_verdict(entry, lead.env_entry, decisions.get(v))}, paper[v] - paper["td3"]
        )
        for v, entry in variants.items()
        if v in paper
    ]
    if not rows:
        return []
    return [
        "",
        f"The TD3 paper at 1M steps (its Table 2, removed minus TD3): {'; '.join(rows)}.{state} The paper's "
        f"direction: {'; '.join(directions)} (an interval is not a verdict under the plan's error control).",
    ]


def paper_direction(entry: dict, paper_effect: float) -> str:
    """Whether a comparison reproduces the direction of the paper's effect: by its verdict, else by its 95% interval
    (named as such: an interval is not a verdict under the plan's error control)."""
    effect, ci = entry.get("effect"), entry.get("ci") or [None, None]
    same = (effect or 0) * paper_effect > 0
    if entry.get("verdict") == "differs":
        return "reproduced" if same else "**opposite to the paper** (differs): a finding at this budget"
    if None not in ci and (ci[0] > 0 or ci[1] < 0):
        side = "the paper's side" if (ci[0] > 0) == (paper_effect > 0) else "the other side"
        return f"95% interval on {side} of 0 (descriptive: no verdict under the plan)"
    return "not detected"


def tables() -> str:
    """The answer's tables: per task condition, one row per component with the answer's verdict and interval, the
    replicates side by side, the failure rates and the secondary outcomes whose own tests disagree."""
    lines = [
        "One table per task condition (task, budget, hyperparameters), one row per component. Every estimate is the "
        "return of TD3 with the component removed minus full TD3's, on the primary outcome, the mean return over the "
        "final 10% of training: negative means removing it hurts. HL: the Hodges-Lehmann estimate of the Wilcoxon "
        "signed-rank test, with its exact 95% CI; mean: the mean difference. `unresolved` is not 'no effect'. "
        "The answer is the study whose plan was declared before its first run, then the one with the most seeds; "
        "the other studies of the same condition are shown beside it with their seeds, not pooled and not tested "
        "against it (studies that share seeds are not independent samples). A secondary outcome is shown, as an "
        "estimate with its interval, where its own test reaches a verdict or direction unlike the primary's. "
        "Factorial main effects average "
        "over cells that never learn: they are in the detail.",
        *(line for condition in CONDITIONS for line in condition_lines(condition)),
        *tuned_lines(),
        *region_lines(),
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------------------------
# The tuned study: each component removed with TD3's hyperparameters and with its own
# ----------------------------------------------------------------------------------------------------------------------


def _condition_spread(folder: str, env: str, variant: str) -> str:
    """`` (the condition's 4 studies: -283 to -27)``: the range of the estimates of the condition that
    ``folder`` replicates ("" where it has no other study)."""
    for condition in CONDITIONS:
        if condition.env == env and any(s.folder == folder and s.part == "envs" for s in condition.sources):
            found = measurements(condition, variant, _reports(condition.sources))
            if len(found) > 1:
                effects = sorted(m.entry["effect"] for m in found)
                return f" (the condition's {len(found)} studies: {number(effects[0])} to {number(effects[-1])})"
    return ""


def tuned_lines() -> list[str]:
    """The components whose removal differs with either set of hyperparameters, both arms side by side, with the
    spread of the condition's estimates of the same removal. The tuned study's "share of the effect recovered" ratio is
    not given: its denominator is one of those estimates, which spread widely over the condition's studies (the
    study's own report gives it for its seeds, with a bootstrap interval over them)."""
    folder, env, title = TUNED
    if not (STUDIES / folder / "report.json").exists():
        return []
    study = report(folder)
    section, name = study["sections"][title], estimate_name(TEST_NAMES.get(study["plan"]["test"]))
    tuning = section["tuning"]
    rows, others = [], []
    for row in section["envs"][env]["comparisons"]:
        default, own = row["default"], row["own"]
        if default is None or own is None or "differs" not in (shown_verdict(default), shown_verdict(own)):
            others.append(row)
            continue
        rows.append(
            f"{row['variant'].removeprefix('no_')} {cell(own, name)}{_interval(own)} with its own against "
            f"{cell(default, name)}{_interval(default)} with TD3's" + _condition_spread(folder, env, row["variant"])
        )
    if not rows:
        return []
    equivalent = all(r["default"] and r["own"] and shown_verdict(r["default"]) == shown_verdict(r["own"]) == "equivalent"
                     for r in others)  # fmt: skip
    rest = "the others equivalent with both" if equivalent else "no other `differs` with either"
    return [
        "",
        f"Re-tuned for itself ({folder}, {tuning['n_trials']} Optuna trials x {len(tuning['seeds'])} tuning seeds per "
        f"variant over {', '.join(tuning['search_space'])}, then seeds tuning never saw; {rest}): "
        + "; ".join(rows)
        + ". No share of the effect 'recovered' by re-tuning is given here: its denominator is one of the "
        "condition's estimates, which spread widely over the condition's studies (the range in brackets); the "
        f"study's [report]({folder}.md) gives that ratio for its own seeds, with a bootstrap interval.",
    ]


# ----------------------------------------------------------------------------------------------------------------------
# The detail (docs/results/index.md): factorials, sequential looks, the paper's rows, each study's plan
# ----------------------------------------------------------------------------------------------------------------------


def region_lines() -> list[str]:
    """Where a factorial's report has its ``learning`` key: each component removed within the region where TD3
    learns, the factorial's answer closest to "removed from TD3" (nothing where the key is missing)."""
    lines = []
    for folder, env in FACTORIALS:
        if not (STUDIES / folder / "report.json").exists():
            continue
        factorial = dig(report(folder), "sections", f"{env}: factorial analysis") or {}
        region = _learning_region_lines(factorial)
        if region:
            lines += ["", f"Within the learning region of {folder} ({env}):", "", *region]
    return lines


def _learning_region_lines(section: dict) -> list[str]:
    """Where the report has the factorial's ``learning`` key: its region and each component's effect within it,
    flipped to the removal convention."""
    learning = section.get("learning")
    if not isinstance(learning, dict):
        return []
    lines = []
    region = learning.get("region")
    if isinstance(region, dict) and region.get("enabling"):
        cells = f"{region.get('n_cells')} of {region.get('design_cells')} cells" if region.get("n_cells") else "the cells"
        kept = " and ".join(region["enabling"])
        lines.append(f"- learning region: {cells}, those with {kept} on (found from the failures alone; rule in the report).")
    factors = learning.get("factors") or {}
    effects = {name: (f or {}).get("conditional") for name, f in factors.items()}
    items = [
        f"{name} {verdict_text(e, {})} {estimate_name(e.get('test'))} {number(-e['effect'])}{_interval(_flipped(e))}"
        for name, e in effects.items()
        if isinstance(e, dict) and "verdict" in e and e.get("effect") is not None
    ]
    if items:
        lines.append("- removed within the learning region (sign flipped): " + "; ".join(items) + ".")
    return lines


def _flipped(entry: dict) -> dict:
    """A "with minus without" effect's interval on the removal convention."""
    ci = entry.get("ci")
    return {**entry, "ci": [-ci[1], -ci[0]] if ci and None not in ci else ci}


def _smallest_set_line(keep: dict, margin: float) -> str:
    """The smallest sufficient set: a verdict only where the report has the equivalence test of its own cell
    (``verdict``, with ``ci`` and ``p_equivalence`` where present); otherwise "not tested"."""
    kept = ", ".join(keep["keep"]) or "none"
    observed = keep.get("observed_drop")
    seen = f", its cell's observed loss {observed:,.1f}" if observed is not None else ""
    confirmation = keep.get("confirmation")
    if isinstance(confirmation, dict):
        verdict = "confirmed" if keep.get("confirmed") else "not confirmed"
        test = f"**{verdict}** by the equivalence test of its own cell against TD3{_interval(confirmation)}"
        if confirmation.get("p_equivalence_adjusted") is not None:
            test += f", equivalence p adjusted {confirmation['p_equivalence_adjusted']:.2g}"
    else:
        test = "not tested (a model prediction and one cell's point estimate, no test)"
    return (
        f"- smallest set of components to keep within the margin of {margin:,.1f}: **{kept}** (model-predicted loss "
        f"{keep['predicted_drop']:,.1f}{seen}): {test}."
    )


def floor_cells(env: dict) -> list[str]:
    """The design's cells where at least the learning rules' share of runs did not learn (report.json's
    ``failures``): a main effect averages over them, so its ``equivalent`` is labelled "at floor"."""
    share = LearningRules().region_failure_rate
    cells = []
    for variant, rates in (dig(env, "failures", "variants") or {}).items():
        did_not_learn = (rates or {}).get("did_not_learn")
        if did_not_learn and did_not_learn["n"] and did_not_learn["failed"] / did_not_learn["n"] >= share:
            cells.append(variant)
    return cells


def factorial_lines(folder: str, env: str) -> list[str]:
    """A factorial design's effects, sign-flipped to the removal convention and labelled as averages over the design."""
    if not (STUDIES / folder / "report.json").exists():
        return []
    study = report(folder)
    factorial = study["sections"][f"{env}: factorial analysis"]
    section = factorial["outcomes"][PRIMARY]
    steps = study["envs"][env]["training_steps"]
    seeds, relation = len(section["seeds"]), factorial["design"]["defining_relation"]
    factors = len(factorial["design"]["factors"])
    cells = 2**factors // 2 ** len(relation)
    title, details = f"All 2^{factors} = {cells} combinations on {env}", []
    if relation:
        resolution = factorial["resolution"]
        title = f"The {cells}-cell fraction on {env}"
        details.append(
            f"I = {' = '.join(relation)}, resolution {roman(resolution)}: each main effect is aliased with interactions "
            f"of {resolution - 1} or more factors"
        )
    first: dict = next(iter(section["main_effects"].values()), {})
    details += [
        f"{seeds} seeds per cell, {cells * seeds} runs of {steps // 1000}k steps",
        f"{len(floor_cells(study['envs'][env]))} of its {cells} cells at a floor (half or more of their runs did not learn)",
        f"{estimate_name(first.get('test'))} of the per-seed effects",
        plan_phrase(study),
    ]
    floor = bool(floor_cells(study["envs"][env]))
    main = []
    for name, e in section["main_effects"].items():
        # a report written before the floor label: the label the analysis gives an effect averaged over floor cells
        labelled = e if e.get("verdict_shown") else {"verdict": qualified_verdict(e["verdict"], AT_FLOOR if floor else None)}
        shown = emphasised(shown_verdict(labelled))
        main.append(f"{name} {shown} {number(-e['effect'])}")
    lines = [
        "",
        f"**{title}** ({'; '.join(details)}):",
        "",
        "- main effects, sign flipped to 'removed minus kept' and averaged over every combination of the others, "
        "cells where TD3 never learns included (not the effect of removing the component from TD3): " + "; ".join(main) + ".",
        *_learning_region_lines(factorial),
    ]
    keep = section.get("smallest_sufficient_set")
    if keep:
        lines.append(_smallest_set_line(keep, section["margin"]))
    return lines


def sequential_lines(folder: str, env: str) -> list[str]:
    """Where each comparison of a group-sequential study stopped."""
    outcome = dig(report(folder), "envs", env, "outcomes", PRIMARY) if (STUDIES / folder).exists() else None
    looks = (outcome or {}).get("sequential")
    if not looks:
        return []
    groups: dict[tuple[int, str], list[str]] = {}
    last = len(looks["looks"]) - 1
    for variant, decision in looks["decisions"].items():
        if decision["verdict"] == "open":
            where = (last + 1, "open (runs of the next look missing)")
        elif decision["look"] is not None:
            n = looks["looks"][decision["look"]]
            where = (decision["look"], f"decided at look {decision['look'] + 1} ({n} seeds)")
        else:
            where = (last, f"unresolved at the last look ({looks['looks'][-1]} seeds)")
        entry = (outcome or {})["variants"].get(variant)
        shown = cell(None if entry is None else {**entry, "verdict_shown": shown_verdict(entry, None, decision)})
        groups.setdefault(where, []).append(f"{variant.removeprefix('no_')} {shown}")
    return [
        "",
        f"**Looks of {folder} on {env}** (looks at {' and '.join(map(str, looks['looks']))} seeds, "
        f"{looks['boundary']} alpha spending, one family-wise alpha = 0.05 over all looks):",
        "",
        *(f"- {where}: " + "; ".join(items) + "." for (_, where), items in sorted(groups.items())),
    ]


def plan_record_lines() -> list[str]:
    """Each study's plan as its manifest records it (report.json's ``plan_declared``, its note in full)."""
    folders = sorted({s.folder for c in CONDITIONS for s in c.sources} | {f for f, _ in FACTORIALS})
    lines = ["", "**Each study's plan, as its manifest records it:**", ""]
    for folder in folders:
        if not (STUDIES / folder / "report.json").exists():
            continue
        study = report(folder)
        note = (study.get("plan_declared") or {}).get("note")
        lines.append(f"- {folder}: {plan_phrase(study)}{f' ({note})' if note else ''}.")
    return lines


def detail() -> str:
    """The answer's detail, for docs/results/index.md."""
    lines = [
        "The factorial designs, on the removal convention (their main effects flipped), where each comparison of the "
        "sequential designs stopped, and each study's plan.",
        *(line for folder, env in FACTORIALS for line in factorial_lines(folder, env)),
        *sequential_lines("pendulum-sequential", "Pendulum-v1"),
        *sequential_lines(*PAPER_300K[:2]),
        *plan_record_lines(),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare README's block with a fresh generation")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    if START not in text or END not in text:
        print(f"{args.readme}: no {START} ... {END} markers", file=sys.stderr)
        return 1
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    from docs.generate import plain_answer  # the README's block is the plain answer, which reads this module's conditions

    new = f"{before}{START}\n{plain_answer.readme_block()}{END}{after}"
    return write_or_check({args.readme: new}, args.check, "python -m docs.generate.readme_answer")


if __name__ == "__main__":
    sys.exit(main())
