"""The TD3 paper's Hopper budget beside ours: the paper's Table 2 row, the 1M study at 1M and at 300k (the same runs'
evaluations up to 300k), and the 300k study, in one table, with one sentence per component on what the data support.

Read from report.json only (``docs/studies/hopper-paper-1m`` and ``docs/studies/hopper-paper-300k``; the paper's row
from ``td3_paper_table2.yml``): the 1M study's verdicts and estimates at 1M, its declared hypothesis at 300k
(``earlier_budgets``) and every arm there, described (``earlier_budget_estimates``). Until the 1M study has a report,
:func:`section` gives nothing: the pages say nothing about runs that have not finished. Used by
:mod:`docs.generate.docs_results` (the Results page) and :mod:`docs.generate.readme_answer` (the README's answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from docs.generate.files import STUDIES, TABLE2
from docs.generate.readme_answer import _interval, estimate
from docs.generate.report_fields import dig, emphasised, number, shown_verdict

ONE_M, THREE_HUNDRED_K = "hopper-paper-1m", "hopper-paper-300k"
ENV, PAPER_TASK, BASELINE, EARLIER = "Hopper-v5", "Hopper", "td3", 300_000
PRIMARY = "final_window"
#: the paper's ablation rows this study runs, in its Table 2's order
VARIANTS = ("no_delayed_policy_update", "no_target_policy_smoothing", "no_clipped_double_q")


def paper_effects(table: dict) -> dict[str, float]:
    """Variant -> the paper's return of TD3 without the component minus TD3's, on Hopper at 1M."""
    rows = {row["variant"]: row[PAPER_TASK] for row in table["rows"] if row.get("variant")}
    return {v: rows[v] - rows[BASELINE] for v in VARIANTS}


def _mean(value: float | None) -> str:
    """An arm's mean return, without a sign (``n/a``: not known)."""
    return "n/a" if value is None else f"{value:,.0f}"


def _estimate(entry: dict, env: dict | None = None, decision: dict | None = None, intervals: bool = True) -> str:
    """``unresolved HL +757 [+241, +1,278]``: :func:`readme_answer.estimate` with the verdict as its report shows it
    (a sequential design's decision where it has one); without intervals ``unresolved +757``, as the README's summary
    table's cells read."""
    shown = {**entry, "verdict_shown": shown_verdict(entry, env, decision)}
    return estimate(shown, env or {}, interval=intervals, named=intervals)


def _at_1m(one_m: dict) -> tuple[dict, dict]:
    env = one_m["envs"][ENV]
    return env, env["outcomes"][PRIMARY]


def _earlier_hypothesis(outcome: dict, variant: str) -> dict | None:
    return next((h for h in outcome.get("earlier_budgets") or [] if dig(h, "hypothesis", "variant") == variant), None)


def side_by_side(one_m: dict, three_hundred_k: dict, table: dict, intervals: bool = True) -> list[str]:
    """
    The table: one row per source (the paper, this study at 1M, the same runs at 300k, the 300k study), one column
    per arm (TD3's mean return over the final 10% of training; each variant's difference from TD3 with its verdict).

    :param intervals: print each estimate's name and 95% interval (the README's shorter table leaves them to the
        Results page)
    """
    paper = paper_effects(table)
    td3_paper = next(row[PAPER_TASK] for row in table["rows"] if row.get("variant") == BASELINE)
    env, outcome = _at_1m(one_m)
    header = "| source | TD3 | " + " | ".join(v.removeprefix("no_") for v in VARIANTS) + " |"
    rows = [header, "|---|---:|" + "---|" * len(VARIANTS)]
    rows.append(
        f"| TD3 paper, Table 2 (1M, [400, 300], 10 seeds; no interval) | {_mean(td3_paper)} | "
        + " | ".join(number(paper[v]) for v in VARIANTS)
        + " |"
    )
    seeds = env.get("seeds") or []
    rows.append(
        f"| {ONE_M} at 1M (seeds {seeds[0]}-{seeds[-1]}) | {_mean(dig(outcome, 'baseline', 'mean'))} | "
        + " | ".join(
            _estimate(outcome["variants"][v], env, intervals=intervals) if v in outcome["variants"] else "—" for v in VARIANTS
        )
        + " |"
    )
    described = next((e for e in outcome.get("earlier_budget_estimates") or [] if e["budget"] == EARLIER), None)
    if described is not None:
        cells = []
        for v in VARIANTS:
            arm = described["estimates"].get(v)
            interval = _interval(arm) if arm is not None and intervals else ""
            name = "HL " if intervals else ""
            text = "—" if arm is None else f"{name}{number(arm['estimate'])}{interval}"
            hypothesis = _earlier_hypothesis(outcome, v)
            cells.append(
                f"{text} (declared, one-sided: {emphasised(shown_verdict(hypothesis))})"
                if hypothesis is not None
                else f"{text} (descriptive)"
            )
        rows.append(f"| {ONE_M} at 300k (same runs) | {_mean(described['means'].get(BASELINE))} | " + " | ".join(cells) + " |")
    old_env = three_hundred_k["envs"][ENV]
    old = old_env["outcomes"][PRIMARY]
    decisions = dig(old, "sequential", "decisions") or {}
    old_seeds = old_env.get("seeds") or []
    rows.append(
        f"| {THREE_HUNDRED_K} (seeds {old_seeds[0]}-{old_seeds[-1]}) | "
        f"{_mean(dig(old, 'baseline', 'mean'))} | "
        + " | ".join(
            _estimate(old["variants"][v], old_env, decisions.get(v), intervals) if v in old["variants"] else "—"
            for v in VARIANTS
        )
        + " |"
    )
    return rows


def reading(variant: str, entry: dict, env: dict, paper_effect: float) -> str:
    """
    What one component's 1M comparison supports among the three readings of the 300k result: a budget effect (the
    component pays off late: the paper's loss appears at 1M with these networks), a network effect or a finding
    against the paper (which these runs, on [64, 64] networks only, cannot tell apart).
    """
    name, verdict = variant.removeprefix("no_"), shown_verdict(entry, env)
    effect, ci = entry.get("effect") or 0.0, entry.get("ci") or [None, None]
    text = f"{name}: at 1M {_estimate(entry, env)} (the paper: {number(paper_effect)})"
    if verdict == "differs" and effect * paper_effect > 0:
        return f"{text}. The paper's direction at its budget with [64, 64] networks: the budget reading is supported."
    if verdict == "differs":
        return (
            f"{text}. Opposite to the paper at its budget: a finding against the paper with [64, 64] networks, which "
            "these runs cannot tell from a network effect (the paper used [400, 300])."
        )
    known = None not in ci
    outside = known and (paper_effect < ci[0] or paper_effect > ci[1])
    lead = f"{text}. Not a verdict: these {entry.get('n')} seed pairs cannot tell the three readings apart"
    if outside:
        return (
            f"{lead}; the paper's value lies outside the 95% interval (descriptive), so a loss of the paper's size is "
            "not what these runs estimate, which points to the networks or a finding against the paper rather than "
            "the budget."
        )
    if known and (ci[0] > 0 or ci[1] < 0):
        # the interval is the comparison's own; the verdict is the family's (Holm over the plan's hypotheses)
        adjusted = entry.get("p_adjusted")
        under = f" (adjusted p {adjusted:.3g})" if adjusted is not None else ""
        return (
            f"{lead}; the 95% interval holds the paper's value and not 0, but it is not adjusted for the plan's "
            f"{entry.get('family_size')} hypotheses, under whose error control the test did not reject{under}: an "
            "estimate on the paper's side (descriptive), which leans to the budget reading without showing it."
        )
    return f"{lead}; the 95% interval holds both 0 and the paper's value."


def _reports(studies: Path) -> tuple[dict, dict] | None:
    one_m_report, old_report = studies / ONE_M / "report.json", studies / THREE_HUNDRED_K / "report.json"
    if not (one_m_report.exists() and old_report.exists()):
        return None
    return json.loads(one_m_report.read_text()), json.loads(old_report.read_text())


def section(studies: Path = STUDIES, heading: str = "###") -> list[str]:
    """The side-by-side table and one reading per component, or nothing before the 1M study has a report."""
    reports = _reports(studies)
    if reports is None:
        return []
    one_m, old = reports
    table = yaml.safe_load(TABLE2.read_text())
    env, outcome = _at_1m(one_m)
    paper = paper_effects(table)
    return [
        f"{heading} Hopper-v5 at the paper's budget, beside 300k",
        "",
        "The return of TD3 without each component minus TD3's, over the final 10% of training (TD3's own mean in its "
        "column), from the paper and from our runs ([64, 64] networks) at two budgets; each verdict as its report gives "
        f"it under its plan's error control ([{ONE_M}]({ONE_M}.md), [{THREE_HUNDRED_K}]({THREE_HUNDRED_K}.md)).",
        "",
        *side_by_side(one_m, old, table),
        "",
        *[f"- {reading(v, outcome['variants'][v], env, paper[v])}" for v in VARIANTS if v in outcome["variants"]],
    ]


def readme_lines(studies: Path = STUDIES) -> list[str]:
    """The README's shorter table (estimates without intervals), or nothing before the 1M study has a report."""
    reports = _reports(studies)
    if reports is None:
        return []
    return [
        "",
        "Hopper-v5 at the paper's 1M beside 300k (TD3: mean return; others: removed minus TD3):",
        "",
        *side_by_side(*reports, yaml.safe_load(TABLE2.read_text()), intervals=False),
    ]
