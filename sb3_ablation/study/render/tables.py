"""Markdown tables of a report: each outcome's family of comparisons, and the failure outcome."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.failures import LEARNING_RULES
from sb3_ablation.study.analyse.inference import DIFFERS
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.analyse.report_model import NO_MARGIN_PLANNED
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.variants import parse_variant
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.labels import DESCRIPTIVE, is_plain, qualified_verdict

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.failures import EnvFailures, FailureCount
    from sb3_ablation.study.analyse.report_model import Margin, OutcomeResult
    from sb3_ablation.study.analyse.statistics import VariantStats
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan


def verdict_cell(verdict: str, within_margin: bool = False, label: str | None = None) -> str:
    """
    A verdict in a table as the report gives it (:func:`~sb3_ablation.study.render.labels.qualified_verdict`): only a
    plain ``differs`` or ``equivalent`` in bold, a labelled one (a regime, a floor) never.
    """
    shown = qualified_verdict(verdict, label)
    if not is_plain(shown):
        return shown
    return f"**{shown}**" + (" (within the margin)" if shown == DIFFERS and within_margin else "")


def margin_how(how: str) -> str:
    """How a margin was set, in plain words (``none: ...; declare one`` -> ``none: ...; a plan may declare one``)."""
    how = how.removeprefix("none: ")
    return how.replace("; declare one", "; a plan may declare one")


def margin_text(margin: Margin, digits: int = 1) -> str:
    """``±53.4 (2.1 seed SDs, 5% of the reference span)``: the margin in the three units a reader judges it by;
    ``none (...): no equivalence can be shown`` where there is none."""
    if margin.value != margin.value:  # NaN: no margin
        return f"none ({margin_how(margin.how)}): no equivalence can be shown"
    units = [f"{fmt(margin.seed_sds, 1)} seed SDs of the baseline"] if margin.seed_sds == margin.seed_sds else []
    if margin.span_share is not None:
        units.append(f"{margin.span_share:.0%} of the reference span")
    return f"±{fmt(margin.value, digits)} ({', '.join([*units, margin.how])})"


def _per_seed(seeds: tuple[int, ...], values: tuple[float, ...], digits: int = 1) -> str:
    if not seeds:
        return ", ".join(fmt(v, digits) for v in values)
    return ", ".join(f"s{seed}: {fmt(value, digits)}" for seed, value in zip(seeds, values, strict=True))


def seed_counts(stats: dict[str, VariantStats]) -> str:
    counts = sorted({s.n_runs for s in stats.values()})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def bootstrap_method(reps: int, n: int | str) -> str:
    return f"IQM, 95% stratified-bootstrap CI, {reps:,} resamples, n = {n} seeds"


def describe(variant: str) -> str:
    try:
        return parse_variant(variant).describe()
    except ValueError:
        return ""


def too_few_runs_note(result: OutcomeResult, baseline: str | None) -> str:
    """Why a section has no intervals and no verdict other than 'unresolved'."""
    stats = result.stats
    n = min(s.n_runs for s in stats.values())
    base_n = stats[baseline].n_runs if baseline in stats else n
    counts = seed_counts(stats)
    return (
        f"**No claim where a variant has fewer than {MIN_RUNS} runs** "
        f"(here {counts} run{'' if counts == '1' else 's'} per variant): every comparison is `unresolved`, untested. "
        f"A bootstrap of {plural(n, 'value')} is no confidence interval, and an exact permutation test on {base_n} "
        f"against {plural(n, 'run')} cannot go below p = {result.min_permutation_p:.2g}, before any correction. "
        "The tables show each seed's value and each seed's difference to the baseline; read them as a description of "
        f"these runs, not as evidence. Run at least {MIN_RUNS} seeds for intervals and tests."
    )


def outcome_table(
    result: OutcomeResult,
    baseline: str | None,
    digits: int = 1,
    what: bool = True,
    labels: Mapping[str, str | None] | None = None,
    descriptive: bool = False,
) -> list[str]:
    """
    The table of one outcome. With enough runs: IQM with its bootstrap CI (not corrected), the paired estimate with the
    test's interval, raw and adjusted p, the verdict, the minimum detectable effect and the seeds needed. With too
    few: each seed's value and each seed's difference to the baseline.

    :param labels: variant -> the label of its ``equivalent`` (:mod:`~sb3_ablation.study.render.labels`)
    :param descriptive: the outcome's comparisons are not verdicts under the plan's error control (a secondary
        outcome): no verdict, MDE or seeds needed, only the estimates
    """
    stats, comparisons = result.stats, result.comparisons
    first = "| variant | what it is | runs |" if what else "| variant | runs |"
    rule = "|---|---|---:|" if what else "|---|---:|"
    tested = any(not c.reason.startswith("n =") for c in comparisons.values())
    if tested:
        lines = [
            f"{first} IQM [95% bootstrap CI, not corrected] | paired Δ vs {baseline} [95% CI] | p no difference "
            "(adjusted) | p not equivalent (adjusted) | verdict | MDE (80% power) | seeds needed |",
            rule + "---:|---:|---:|---:|:---|---:|---:|",
        ]
    else:
        lines = [f"{first} per seed | mean | Δ vs {baseline} per seed | mean of per-seed Δ |", rule + "---|---:|---|---:|"]
    for variant, s in stats.items():
        cells = [variant, *([describe(variant)] if what else []), str(s.n_runs)]
        c = comparisons.get(variant)
        if tested:
            cells.append(f"{fmt(s.iqm, digits)} {fmt_ci(s.iqm_ci, digits)}")
            if variant == baseline or c is None:
                cells += ["—"] * 6
            elif c.reason.startswith("n ="):
                cells += [fmt(c.effect, digits), "n/a", "n/a", f"unresolved ({c.reason})", "n/a", "n/a"]
            else:
                needed = str(c.seeds_needed) if c.seeds_needed else "> 1,000"
                label = (labels or {}).get(variant)
                verdict = verdict_cell(c.verdict, c.within_margin, label) + (f" ({c.reason})" if c.reason else "")
                if descriptive:
                    verdict = DESCRIPTIVE  # the estimate and its interval beside it, no verdict's word
                cells += [
                    f"{fmt(c.effect, digits)} {fmt_ci(c.ci, digits)} (n = {c.n})",
                    f"{fmt_p(c.p_raw)} ({fmt_p(c.p_adjusted)})",
                    "none planned"
                    if result.margin.how == NO_MARGIN_PLANNED
                    else f"{fmt_p(c.p_equivalence)} ({fmt_p(c.p_equivalence_adjusted)})",
                    verdict,
                    "—" if descriptive else fmt(c.mde, digits),
                    "—" if descriptive or c.verdict != "unresolved" else needed,
                ]
        else:
            cells += [_per_seed(s.seeds, s.per_seed, digits), fmt(s.mean, digits)]
            if variant == baseline or s.diff is None:
                cells += ["—", "—"]
            else:
                cells += [_per_seed(s.paired_seeds, s.paired_diffs, digits), fmt(s.paired_diff, digits)]
        lines.append("| " + " | ".join(cells) + " |")
    return [*([] if descriptive else per_cell_heading(result)), *lines, ""]


def per_cell_heading(result: OutcomeResult) -> list[str]:
    """A factorial's per-cell table that cannot reach a verdict (or one of the two) at its seeds says so above it."""
    a = result.per_cell
    if a is None or not a.label:
        return []
    equivalent = f"{a.smallest_p_equivalent:.2g}" if a.smallest_p_equivalent == a.smallest_p_equivalent else "no margin"
    what = "no verdict but unresolved is possible in this table" if not (a.differs or a.equivalent) else (
        "an equivalence can still be shown" if a.equivalent else "a difference can still be shown"
    )  # fmt: skip
    return [
        f"**{a.label[0].upper()}{a.label[1:]}** with these tests: {what} (the smallest p they can give with {a.n} "
        f"pairs: {a.smallest_p_differs:.2g} for a difference, {equivalent} for an equivalence; the family's first "
        f"step asks p <= {a.level:.2g}).",
        "",
    ]


def table_legend(result: OutcomeResult, plan: AnalysisPlan) -> str:
    family = max((c.family_size for c in result.comparisons.values()), default=0)
    same = plan.equivalence_test == plan.test
    step = "Shaffer's step-down: at most one of a comparison's two claims can be false" if same else "Holm's step-down"
    if plan.claim_rule == "partitioned":
        step = "claims partitioned: both claims of a comparison at its share of alpha, Holm's step-down over the comparisons"
    if result.sequential is not None:
        step = "the group-sequential looks below decide instead of adjusted p-values, n/a here"
    no_equivalence = plan.claim_rule == "differs"
    if no_equivalence:
        step = "Holm's step-down" if result.sequential is None else step
    estimates = (
        f"Paired Δ: the {TEST_NAMES[plan.test]} estimate of the per-seed differences (variant - baseline; a seed's runs "
        f"share initial weights and evaluation episodes) with its 95% interval. p no difference: that test, two-sided; "
        + (
            "p not equivalent: none planned (claims: differs)"
            if no_equivalence
            else f"p not equivalent: two one-sided tests at the margin (TOST) with the {TEST_NAMES[plan.equivalence_test]}"
            + ("" if same else ", which failures pull down, so a variant that fails more often is not called equivalent")
        )
    )
    if not result.primary:
        return (
            f"{estimates}; adjusted: over the outcome's {family} comparisons. Descriptive: a secondary outcome is no "
            "verdict under the plan's error control (which holds for the primary outcome), so its rows give estimates "
            "with their intervals and p-values, no verdict."
        )
    margin = margin_text(result.margin)
    equivalent = (
        "no `equivalent` (the plan makes no equivalence claims)"
        if no_equivalence
        else f"**equivalent**: the TOST places the difference within the margin {margin}"
        if result.margin.value == result.margin.value
        else f"no `equivalent` (margin {margin})"
    )
    shared = "one family-wise" if no_equivalence else "both kinds of claims sharing one family-wise"
    return (
        f"{estimates}; adjusted: over the family's {family} comparisons, {shared} "
        f"alpha = {plan.alpha:g} ({step}). **differs**: the test rejects no difference; {equivalent}; unresolved: "
        f"neither. MDE: the smallest true difference a paired t-test would detect with {plan.power:.0%} power at this "
        "n and the first step's level (an approximation for the rank test); seeds needed: the seeds that would detect "
        "the observed Δ so."
    )


def _count_cells(count: FailureCount | None) -> list[str]:
    if count is None or count.n == 0:
        return ["not judged", "—"]
    rate = f"{count.failed}/{count.n} ({count.rate:.0%}) [{count.ci[0]:.0%}, {count.ci[1]:.0%}]"
    return [rate, "—" if count.p_vs_baseline is None else fmt_p(count.p_vs_baseline)]


def failures_table(failures: EnvFailures, baseline: str | None, learning_threshold: float | None = None) -> list[str]:
    """
    Per variant: runs that did not learn, critics that diverged (each with its exact CI and McNemar p), worst runs; by
    the rules of 'Where TD3 learns' where the report applies them (the one definition of the report), else by the
    plan's failure outcome.

    :param learning_threshold: the threshold of the learning rules, where the report applies them but the failures
        were counted by the plan's outcome (said beside it, so that a reader does not take one count for the other)
    """
    bound = failures.divergence_bound
    if failures.rules == LEARNING_RULES:
        threshold = (
            "no did-not-learn rule on this task"
            if failures.threshold is None
            else f"did not learn: final-window return < {fmt(failures.threshold)}"
        )
        title = (
            f"**Failures, by the rules of 'Where TD3 learns'**, the one definition of this report ({threshold}; critic "
            "diverged: critic 1's largest |Q| beyond its bound, as defined there)."
        )
    else:
        threshold = "not assessed" if failures.threshold is None else f"final-window return < {fmt(failures.threshold)}"
        rules = ""
        if learning_threshold is not None and learning_threshold != failures.threshold:
            rules = (
                f" These are the plan's failure outcome, not the learning rules of 'Where TD3 learns' (did not learn: "
                f"final-window return < {fmt(learning_threshold)}), which its failure rates, the labels and the "
                "two-part comparisons use."
            )
        beyond = "" if bound is None or not math.isfinite(bound) else f" or beyond ±{fmt(bound)}"
        title = (
            f"**Failures, by the plan's failure outcome** (below the plan's threshold: {threshold}, "
            f"{failures.threshold_how}; critic diverged: overestimation not finite{beyond}).{rules}"
        )
    below = "did not learn" if failures.rules == LEARNING_RULES else "below the plan's threshold"
    lines = [
        title,
        "",
        f"| variant | {below} [95% exact CI] | McNemar p vs {baseline} | critic diverged [95% exact "
        f"CI] | McNemar p vs {baseline} | mean of the worst 25% runs' return |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant, f in failures.variants.items():
        cells = [variant, *_count_cells(f.did_not_learn), *_count_cells(f.diverged), fmt(f.worst_mean)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Rates: exact (Clopper-Pearson) 95% intervals; p: exact McNemar test on the seeds both variants ran, not "
        "corrected. Worst runs: the mean final-window return of the worst quarter of a variant's runs (a CVaR-style "
        "summary of its failures, beside the IQM, which trims them).",
        "",
    ]
    return lines
