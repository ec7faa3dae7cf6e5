"""The report of a study: ``<out>/report.md``, ``<out>/report.json`` and the PNG figures in ``<out>/figures/``.

Compute, then render: :func:`~sb3_ablation.study.analyse.analysis.build_model` computes every estimate and verdict under the
study's analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`) into a report model, and this module renders the model as
markdown, figures (:mod:`~sb3_ablation.study.render.figures`) and JSON.

Each comparison of a variant with the baseline gets one of three verdicts, with the test named next to it: ``differs``
(paired t-test, Holm-corrected within its family), ``equivalent`` (two one-sided tests for the plan's margin, Holm
as well) or ``unresolved`` (with the minimum detectable effect at 80% power and the seeds that would detect the observed
effect). IQMs with stratified-bootstrap CIs (rliable) are effect sizes, not corrected for multiple comparisons. With
fewer than :data:`~sb3_ablation.study.analyse.statistics.MIN_RUNS` seed pairs there is no test: the tables show per-seed
values and per-seed differences and say why. Across envs: a sign test per component over all seed pairs, the
aggregate under min/max and reference normalization side by side, and components whose effects change sign between
envs named task-dependent.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import write_json_atomic, write_text_atomic
from sb3_ablation.common.training_stats import ACTOR_STD, TARGET_Q_MEAN, TD_ERROR, TWIN_Q_GAP, q_mean_key
from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.analysis import (
    OLD_MEASURE,
    AcrossTasks,
    EnvResult,
    OutcomeResult,
    ReportModel,
    build_model,
    outcome_values,
)
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT
from sb3_ablation.study.analyse.results import DIAGNOSTICS, StudyData, aligned_curves, load_study
from sb3_ablation.study.analyse.statistics import (
    CURVE_REPS,
    DEFAULT_REPS,
    DEFAULT_SEED,
    MIN_RUNS,
    REFERENCE_SCORES,
    VariantStats,
    curve_estimates,
    min_permutation_p,
    normalize,
    normalized_scores,
    performance_profile,
)
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.variants import baseline_name
from sb3_ablation.study.render.engine_check import engine_sections
from sb3_ablation.study.render.factorial import factorial_sections
from sb3_ablation.study.render.figures import (
    CurveEstimate,
    Panel,
    palette,
    plot_curve_panels,
    plot_intervals,
    plot_performance_profiles,
)
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.json import model_json
from sb3_ablation.study.render.summaries import primary_name, summary_across_tasks, summary_per_task
from sb3_ablation.study.store.manifest import planned_runs
from sb3_ablation.study.store.runs import safe_name

__all__ = [
    "DEFAULT_REPS",
    "DEFAULT_SEED",
    "REFERENCE_SCORES",
    "findings_markdown",
    "findings_parts",
    "load_study",
    "normalized_scores",
    "quote_findings",
    "quoted_findings",
    "study_model",
    "write_report",
]

MAX_CURVES = 12
PROFILE_POINTS = 101
FINDINGS_START, FINDINGS_END = "<!-- generated:findings:start -->", "<!-- generated:findings:end -->"

# what each diagnostic of a format-2 record is, for the panel titles (contracts: means over the training steps
# between two evaluations)
DIAGNOSTIC_LABELS = {
    q_mean_key(1): ("mean Q1(s, a) on replay batches", "Q value"),
    TWIN_Q_GAP: ("twin-critic gap mean |Q1 - Q2|", "Q value"),
    TARGET_Q_MEAN: ("mean TD target y", "Q value"),
    TD_ERROR: ("TD error mean |Q1(s, a) - y|", "Q value"),
    ACTOR_STD: ("Gaussian actor: mean pre-tanh std", "standard deviation"),
}
VERDICT_CELLS = {DIFFERS: "**differs** (paired t, Holm)", EQUIVALENT: "**equivalent** (TOST, Holm)"}


# ----------------------------------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------------------------------


def _per_seed(seeds: tuple[int, ...], values: tuple[float, ...], digits: int = 1) -> str:
    if not seeds:
        return ", ".join(fmt(v, digits) for v in values)
    return ", ".join(f"s{seed}: {fmt(value, digits)}" for seed, value in zip(seeds, values, strict=True))


def _seed_counts(stats: dict[str, VariantStats]) -> str:
    counts = sorted({s.n_runs for s in stats.values()})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _training_steps(manifest: dict) -> str:
    """Each env's training steps as its runs used them (the resolved zoo hyperparameters in the manifest)."""
    steps = {
        env: {
            int(float(hp["n_timesteps"]))
            for hp in manifest.get("hyperparams", {}).get(env, {}).values()
            if "n_timesteps" in hp
        }
        for env in manifest.get("envs", [])
    }
    if not any(steps.values()):
        return str(manifest.get("settings", {}).get("n_timesteps") or "the zoo default of each env")
    every_env = set().union(*steps.values())
    if len(every_env) == 1 and all(steps.values()):
        return f"{every_env.pop():,}"
    return ", ".join(f"{env} {'/'.join(f'{n:,}' for n in sorted(v)) or '?'}" for env, v in steps.items())


def _overrides(settings: dict) -> str:
    """The study's overrides of the zoo hyperparameters (other than the training steps), as the study file gives them."""
    overrides = {**settings.get("hyperparams", {})}
    for env, by_env in (settings.get("env_hyperparams") or {}).items():
        overrides.update({f"{key} ({env})": value for key, value in by_env.items() if key != "n_timesteps"})
    if not overrides:
        return ""
    return "; zoo hyperparameters otherwise, with " + ", ".join(f"{key}: {value}" for key, value in overrides.items())


def bootstrap_method(reps: int, n: int | str) -> str:
    return f"IQM, 95% stratified-bootstrap CI, {reps:,} resamples, n = {n} seeds"


def difference_method(reps: int, n_x: int, n_y: int) -> str:
    return f"difference of IQMs, 95% CI from {reps:,} independent stratified-bootstrap resamples, n = {n_x} vs {n_y} seeds"


def paired_method(n: int) -> str:
    return f"mean of {n} per-seed differences, 95% Student-t interval"


def _describe(variant: str) -> str:
    from sb3_ablation.study.plan.variants import parse_variant

    try:
        return parse_variant(variant).describe()
    except ValueError:
        return ""


def too_few_runs_note(stats: dict[str, VariantStats], baseline: str | None) -> str:
    """Why a section has no intervals and no verdict other than 'unresolved'."""
    n = min(s.n_runs for s in stats.values())
    base_n = stats[baseline].n_runs if baseline in stats else n
    counts = _seed_counts(stats)
    return (
        f"**No claim where a variant has fewer than {MIN_RUNS} runs** "
        f"(here {counts} run{'' if counts == '1' else 's'} per variant): every comparison is `unresolved`, untested. "
        f"A bootstrap of {plural(n, 'value')} is no confidence interval, a t-test on so few pairs rests on an "
        f"assumption it cannot check, and an exact permutation test on {base_n} against {plural(n, 'run')} cannot go "
        f"below p = {min_permutation_p(base_n, n):.2g}, before any correction for the comparisons of a family. "
        "The tables show each seed's value and each seed's difference to the baseline (the runs of a seed share "
        "initial weights and evaluation episodes); read them as a description of these runs, not as evidence. "
        f"Run at least {MIN_RUNS} seeds for intervals and tests."
    )


def outcome_table(result: OutcomeResult, baseline: str | None, digits: int = 1, what: bool = True) -> list[str]:
    """
    The table of one outcome. With enough runs: IQM with its bootstrap CI (not corrected), the paired difference with
    its t-interval, raw and Holm-adjusted p, the verdict with its test, the minimum detectable effect and the seeds
    needed. With too few: each seed's value and each seed's difference to the baseline.
    """
    stats, comparisons = result.stats, result.comparisons
    first = "| variant | what it is | runs |" if what else "| variant | runs |"
    rule = "|---|---|---:|" if what else "|---|---:|"
    tested = any(not c.reason for c in comparisons.values())
    if tested:
        lines = [
            f"{first} IQM [95% bootstrap CI, not corrected] | paired Δ vs {baseline} [95% t CI] | p | p Holm | "
            "verdict | MDE (80% power) | seeds needed |",
            rule + "---:|---:|---:|---:|:---|---:|---:|",
        ]
    else:
        lines = [f"{first} per seed | mean | Δ vs {baseline} per seed | mean of per-seed Δ |", rule + "---|---:|---|---:|"]
    for variant, s in stats.items():
        cells = [variant, *([_describe(variant)] if what else []), str(s.n_runs)]
        c = comparisons.get(variant)
        if tested:
            cells.append(f"{fmt(s.iqm, digits)} {fmt_ci(s.iqm_ci, digits)}")
            if variant == baseline or c is None:
                cells += ["—"] * 6
            elif c.reason:
                cells += [fmt(c.effect, digits), "n/a", "n/a", f"unresolved ({c.reason})", "n/a", "n/a"]
            else:
                needed = str(c.seeds_needed) if c.seeds_needed else "> 1,000"
                cells += [
                    f"{fmt(c.effect, digits)} {fmt_ci(c.ci, digits)} (n = {c.n})",
                    fmt_p(c.p_raw),
                    fmt_p(c.p_adjusted),
                    VERDICT_CELLS.get(c.verdict, "unresolved"),
                    fmt(c.mde, digits),
                    "—" if c.verdict != "unresolved" else needed,
                ]
        else:
            cells += [_per_seed(s.seeds, s.per_seed, digits), fmt(s.mean, digits)]
            if variant == baseline or s.diff is None:
                cells += ["—", "—"]
            else:
                cells += [_per_seed(s.paired_seeds, s.paired_diffs, digits), fmt(s.paired_diff, digits)]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _table_legend(result: OutcomeResult, alpha: float, power: float) -> str:
    family = max((c.family_size for c in result.comparisons.values()), default=0)
    return (
        f"Paired Δ: mean of per-seed differences (variant - baseline; a seed's runs share initial weights and evaluation "
        f"episodes) with its 95% Student-t interval. p: paired t-test, two-sided; p Holm: Holm-adjusted over the "
        f"{family} comparisons of this family. **differs**: p Holm <= {alpha:g}; **equivalent**: two one-sided "
        f"t-tests (Holm) place the difference within ±{fmt(result.margin)} ({result.margin_how}); unresolved: "
        f"neither. MDE: the smallest true difference detected with {power:.0%} power at this n and level "
        f"{alpha:g}/{family} (Holm's strictest step); seeds needed: the seeds that would detect the observed Δ so."
    )


def _plan_section(model: ReportModel, data: StudyData) -> list[str]:
    plan = model.plan
    lines = ["## Analysis plan", ""]
    if model.declared is None:
        lines += [
            "The study declared no analysis plan in `study.json` (made before plans existed): the report uses "
            "the defaults below" + (", changed by the report's options." if model.plan_changes else ".")
        ]
    else:
        lines += ["The study declared its plan in `study.json`" + (
            "; **the plan used here differs from it**: " + "; ".join(model.plan_changes) + "."
            if model.plan_changes else "; the report follows it.")]  # fmt: skip
    if model.declared is None and model.plan_changes:
        lines[-1] += " Changed from the defaults: " + "; ".join(model.plan_changes) + "."
    latest = data.manifest.get("config", {}).get("analysis")
    if model.declared is not None and latest and AnalysisPlan.from_dict(latest) != model.declared:
        lines[-1] += (
            " A later invocation of the study gave another plan: "
            + "; ".join(AnalysisPlan.from_dict(latest).differences(model.declared))
            + "."
        )
    windows = ", ".join(f"{e.env} {plural(len(e.window), 'evaluation')} ({e.window[0]:,}-{e.window[-1]:,} of "
                        f"{e.training_steps:,} steps)" for e in model.envs if e.window)  # fmt: skip
    margins = "; ".join(f"{e.env} ±{fmt(result.margin)} ({result.margin_how})"
                        for e in model.envs if (result := e.outcome(plan.primary)))  # fmt: skip
    names = {o.outcome.key: o.outcome for e in model.envs for o in e.outcomes}
    secondary = "; ".join(f"{names[k].name} ({names[k].definition})" for k in plan.secondary if k in names)
    primary = names.get(plan.primary)
    lines += [
        "",
        f"- Primary outcome: **{primary.name if primary else plan.primary}** "
        f"({primary.definition if primary else ''}); per env: {windows or 'no runs'}.",
        f"- Secondary outcomes: {secondary or 'none'}.",
        f"- Families: one per env and outcome (every variant against {model.baseline}), and one per normalization for "
        f"the aggregate across envs; Holm-Bonferroni within each family at alpha = {plan.alpha:g}.",
        f"- Equivalence margin ±δ of the primary outcome, per env: {margins or 'none'}. Each secondary return outcome: "
        f"the same rule on its own values (or the plan's margin of the env); overestimation: "
        f"{plan.reference_fraction:.0%} of the task's reference span in discounted value per state.",
        f"- Power {plan.power:.0%} for the minimum detectable effect and the seeds needed; at least {MIN_RUNS} seed "
        "pairs for any test.",
        "",
    ]
    return lines


def findings_parts(model: ReportModel) -> dict[str, str]:
    """
    The generated findings, per task and across tasks, each a markdown block. README quotes them between
    ``<!-- generated:<study>:<part>:start -->`` and ``<!-- generated:<study>:<part>:end -->``.
    """
    note = ""
    if any(OLD_MEASURE in o.outcome.name for e in model.envs for o in e.outcomes):
        note = f"\nOverestimation here is the {OLD_MEASURE} (the runs predate the measure past the time limit).\n"
    parts = {"per-task": "\n".join(summary_per_task(model)).rstrip() + "\n" + note}
    across = summary_across_tasks(model)
    if across:
        parts["across-tasks"] = "\n".join(across).rstrip() + "\n"
    return parts


def status_markdown(data: StudyData) -> str:
    """
    How far a study is, for README (``<!-- generated:<study>:status:start/end -->``): its finished runs of the planned
    ones (:func:`~sb3_ablation.study.store.manifest.planned_runs`) and the seeds each engine trained.
    """
    planned = len(planned_runs(data.manifest))
    finished = sum(len(keys) for keys in data.engines.values())
    engines = "; ".join(
        f"{plural(len(keys), 'run')} of seeds {_seed_ranges({seed for _, _, seed in keys})} by the {engine} engine"
        for engine, keys in sorted(data.engines.items(), key=lambda item: min(seed for _, _, seed in item[1]))
    )
    left = planned - finished
    rest = f"; {left} to run or rerun ({len(data.failed)} failed)" if left else ""
    seeds = _seed_ranges(set(data.manifest["seeds"]))
    return f"**Status: {finished} of {planned} runs finished** (seeds {seeds}; {engines}{rest}).\n"


def _seed_ranges(seeds: set[int]) -> str:
    """``0-4, 7``: sorted seeds with runs of consecutive ones joined."""
    runs: list[list[int]] = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _quoted_findings_pattern(study: str, part: str) -> tuple[re.Pattern[str], str, str]:
    """The pattern of a quoted findings block, and its start and end markers."""
    start, end = f"<!-- generated:{study}:{part}:start -->\n", f"<!-- generated:{study}:{part}:end -->"
    return re.compile(re.escape(start) + "(.*?)" + re.escape(end), flags=re.S), start, end


def quoted_findings(text: str, study: str, part: str) -> str | None:
    """What ``text`` (e.g. README) quotes of ``study``'s ``part`` findings (:func:`findings_parts`); None: no markers."""
    match = _quoted_findings_pattern(study, part)[0].search(text)
    return match.group(1) if match else None


def quote_findings(text: str, study: str, parts: dict[str, str]) -> str:
    """
    ``text`` with the blocks between each part's markers replaced by that part of ``parts`` (:func:`findings_parts`).

    :raise ValueError: ``text`` has no markers for a part
    """
    for part, findings in parts.items():
        pattern, start, end = _quoted_findings_pattern(study, part)
        if pattern.search(text) is None:
            raise ValueError(f"no <!-- generated:{study}:{part}:start/end --> markers to quote the findings between")
        # backslashes escaped: the findings are inserted as they are
        text = pattern.sub((start + findings + end).replace("\\", "\\\\"), text)
    return text


def findings_markdown(model: ReportModel) -> str:
    """The generated findings as the report prints them (per task, then across tasks)."""
    parts = findings_parts(model)
    text = "Per task:\n\n" + parts["per-task"]
    if "across-tasks" in parts:
        text += "\nAcross tasks:\n\n" + parts["across-tasks"]
    return text


# ----------------------------------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------------------------------


def _curve(runs, metric: str, reps: int, seed: int) -> CurveEstimate | None:
    timesteps, values = aligned_curves(runs, metric)
    if not values.size:
        return None
    point, ci = curve_estimates(values, reps=reps, seed=seed)
    return CurveEstimate(timesteps, point, ci, values)


def _curve_figures(
    data: StudyData, env: str, shown: list[str], colors: dict[str, Any], figures: Path, reps: int, seed: int
) -> list[str]:
    """Learning curves and the overestimation next to the training diagnostics; returns the markdown for them."""
    by_variant, name = data.runs[env], safe_name(env)
    band = (
        f"IQM over runs, 95% stratified-bootstrap band ({reps:,} resamples) where a variant has {MIN_RUNS}+ runs, "
        "else each run"
    )
    learning = Panel("return", "episode return (mean of evaluation episodes)", {})
    # the measure past the time limit where the records have it, else the old one with its artifact
    new_measure = any(run.has("overestimation") for runs in by_variant.values() for run in runs)
    bias_metric = "overestimation" if new_measure else "bias"
    bias_title = "value overestimation of critic 1" + ("" if new_measure else " (old measure, time-limit artifact)")
    bias = Panel(bias_title, "Q1(s, a) - discounted return", {}, zero_line=True)
    diagnostics = [Panel(*DIAGNOSTIC_LABELS[key], {}) for key in DIAGNOSTICS]
    for i, variant in enumerate(shown):
        for panel, metric in zip([learning, bias, *diagnostics], ("mean_return", bias_metric, *DIAGNOSTICS), strict=True):
            curve = _curve(by_variant[variant], metric, reps, seed + i)
            if curve is not None:
                panel.curves[variant] = curve
    plot_curve_panels(f"{env}: learning curves ({band})", [learning], colors, figures / f"{name}_learning_curves.png")
    lines = [f"![{env}: learning curves](figures/{name}_learning_curves.png)", "", f"Learning curves: {band}.", ""]
    logged = [panel for panel in diagnostics if panel.curves]
    if not bias.curves and not logged:
        return lines
    title = f"{env}: value overestimation and training diagnostics"
    plot_curve_panels(
        title, [panel for panel in (bias, *logged) if panel.curves], colors, figures / f"{name}_overestimation.png"
    )
    diagnostics_note = (
        f" Next to it the training diagnostics the runs logged ({'; '.join(panel.title for panel in logged)}), each "
        "the mean over the training steps between two evaluations."
        if logged
        else " The runs logged no training diagnostics (run records of format 1)."
    )
    return [
        *lines,
        f"![{title}](figures/{name}_overestimation.png)",
        "",
        "Overestimation: at each evaluation, critic 1's Q(s, a) at the states and actions of the evaluation "
        "episodes minus the discounted return obtained from there (above 0 = overestimation). "
        + (
            "The return runs past the time limit (the measure without the time-limit artifact)."
            if new_measure
            else f"This is the {OLD_MEASURE}: the return stops at the time limit while the critic learns the uncut "
            "value, so near a cut the difference is too large by the missing tail."
        )
        + f"{diagnostics_note} Curves: {band}. A panel whose largest curve reaches over 100 times "
        "further from 0 than the typical variant's has a symlog y axis (linear up to the typical reach), as its "
        "title says.",
        "",
    ]


def _env_section(model: ReportModel, data: StudyData, e: EnvResult, colors: dict[str, Any], figures: Path) -> list[str]:
    env, baseline, plan = e.env, model.baseline, model.plan
    reps, seed = model.reps, model.seed
    lines = [f"## {env}", ""]
    env_variants = [v for v in data.variants if v in data.runs.get(env, {})]
    primary = e.outcome(plan.primary)
    if primary is None:
        return [*lines, "No finished runs.", ""]
    if min(s.n_runs for s in primary.stats.values()) < MIN_RUNS:
        lines += [too_few_runs_note(primary.stats, baseline), ""]
    for result in e.outcomes:
        tag = "primary" if result.primary else "secondary"
        lines += [f"**{result.outcome.name.capitalize()}** ({tag}; {result.outcome.definition}):", ""]
        lines += outcome_table(result, baseline, what=result.primary)
        if any(not c.reason for c in result.comparisons.values()):
            lines += [_table_legend(result, plan.alpha, plan.power), ""]
    lines += [f"IQM brackets: {bootstrap_method(reps, _seed_counts(primary.stats))} (effect sizes, not corrected).", ""]

    shown = env_variants
    if len(env_variants) > MAX_CURVES:
        effects = {v: abs(c.effect) for v, c in primary.comparisons.items()}
        ranked = sorted((v for v in env_variants if v != baseline), key=lambda v: -effects.get(v, 0.0))
        shown = ([baseline] if baseline in env_variants else []) + ranked[: MAX_CURVES - 1]
        lines += [f"Curves show {baseline} and the {MAX_CURVES - 1} variants that differ most from it.", ""]
    name, curve_reps = safe_name(env), min(reps, CURVE_REPS)
    plot_intervals(
        f"{env}: {primary.outcome.name}", primary.stats, colors, primary.outcome.short, figures / f"{name}_primary_ci.png"
    )
    lines += _curve_figures(data, env, shown, colors, figures, curve_reps, seed)
    lines += _profile_figure(
        f"{env}: performance profile of the {primary.outcome.name}",
        {v: outcome_values(data, env, v, plan.primary, plan)[1] for v in shown},
        colors,
        f"{primary.outcome.short} x",
        figures / f"{name}_performance_profile.png",
        curve_reps,
        seed,
    )
    lines += [f"![{env}: {primary.outcome.name}, IQM and mean, with 95% CIs or each run](figures/{name}_primary_ci.png)", ""]
    return lines


def _aggregate_section(model: ReportModel, data: StudyData, colors: dict[str, Any], figures: Path) -> list[str]:
    if len(data.envs) < 2:
        return []
    lines = ["## Across environments (normalized scores)", ""]
    across: AcrossTasks | None = model.across
    if across is None or not across.seeds:
        return [*lines, "No variant has finished runs on every env with a common seed.", ""]
    if len(across.envs) < len(data.envs):
        left_out = [env for env in data.envs if env not in across.envs]
        lines += [
            f"**Over {', '.join(across.envs)} only:** {', '.join(left_out)} not yet (not every variant has finished runs "
            "there). This section changes when they come in.",
            "",
        ]
    plan, baseline = model.plan, model.baseline
    lines += [
        f"The primary outcome ({primary_name(model)}) of the seeds every variant finished on every env ({len(across.seeds)}: "
        f"{', '.join(map(str, across.seeds))}), normalized per env; a seed's paired difference is its normalized "
        "difference averaged over the envs.",
        "",
        "### Sign test per component",
        "",
        f"| variant | pairs higher than {baseline} | lower | ties | p (exact binomial) | p Holm | smallest possible p Holm "
        "| primary verdict per env | task-dependent |",
        "|---|---:|---:|---:|---:|---:|---:|---|:---:|",
    ]
    for t in across.sign_tests:
        per_env = ", ".join(f"{env}: {verdict} ({fmt(effect)})" for env, (verdict, effect) in t.verdicts.items())
        lines.append(
            f"| {t.variant} | {t.higher} | {t.lower} | {t.ties} | {fmt_p(t.p_raw)} | {fmt_p(t.p_adjusted)} | "
            f"{fmt_p(t.floor)} | {per_env} | {'**yes**' if t.task_dependent else 'no'} |"
        )
    lines += [
        "",
        "Task-dependent: the component `differs` (primary outcome) with opposite signs on different envs; its average "
        "over envs says nothing about any one of them.",
        "",
        "### Aggregate under both normalizations",
        "",
    ]
    aggregates = across.aggregates
    header = "| variant | " + " | ".join(
        f"{'min/max' if a.method == 'minmax' else 'reference'}: paired Δ [95% t CI] | p Holm | verdict" for a in aggregates
    )
    lines += [header + " |", "|---|" + "---:|---:|:---|" * len(aggregates)]
    for variant in next(iter(aggregates)).comparisons:
        cells = [variant]
        for a in aggregates:
            c = a.comparisons[variant]
            cells += [
                f"{fmt(c.effect, 3)} {fmt_ci(c.ci, 3)}",
                fmt_p(c.p_adjusted),
                VERDICT_CELLS.get(c.verdict, "unresolved") + (f" ({c.reason})" if c.reason else ""),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += (
        [""]
        + [
            f"- {a.how}; equivalence margin ±{fmt(a.margin, 3)} (the envs' margins, normalized, averaged)."
            for a in aggregates
        ]
        + [""]
    )
    for a in aggregates:
        label = "min/max-normalized" if a.method == "minmax" else "reference-normalized"
        suffix = "" if a.method == "minmax" else "_reference"
        plot_intervals(
            f"All envs: {label} {plan.primary}",
            a.stats,
            colors,
            f"{label} score",
            figures / f"aggregate_normalized_score{suffix}.png",
        )
        lines += [f"![All envs: {label} score](figures/aggregate_normalized_score{suffix}.png)", ""]
        if a.method == "minmax":
            sub = dataclasses.replace(data, envs=across.envs)
            bounds = {}
            for env in across.envs:
                finals = np.concatenate([data.final_returns(env, v) for v in a.stats])
                bounds[env] = (float(finals.min()), float(finals.max()))
            lines += _aggregate_curves(
                sub, list(a.stats), across.seeds, bounds, colors, figures, min(model.reps, CURVE_REPS), model.seed
            )
            lines += _profile_figure(
                f"All envs: performance profile of the min/max-normalized {plan.primary} outcome",
                a.scores,
                colors,
                "min/max-normalized score x",
                figures / "aggregate_performance_profile.png",
                min(model.reps, CURVE_REPS),
                model.seed,
            )
    return lines


def _profile_figure(
    title: str, scores: dict[str, np.ndarray], colors: dict[str, Any], xlabel: str, path: Path, reps: int, seed: int
) -> list[str]:
    """
    rliable's performance profile (the fraction of runs above each score: one minus the ECDF of the runs, with
    stratified-bootstrap bands), which is why the report draws no separate ECDF.
    """
    scores = {variant: values for variant, values in scores.items() if np.size(values)}
    if not scores:
        return []
    values = np.concatenate([np.ravel(s) for s in scores.values()])
    taus = np.linspace(values.min(), values.max(), PROFILE_POINTS)
    profiles, cis = performance_profile(scores, taus, reps=reps, seed=seed)
    plot_performance_profiles(title, profiles, cis, taus, colors, xlabel, path)
    band = f"95% stratified-bootstrap bands, {reps:,} resamples" if cis else f"no bands: fewer than {MIN_RUNS} runs"
    return [f"![{title}](figures/{path.name})", "", f"Performance profile (rliable): fraction of runs above x ({band}).", ""]


def _aggregate_curves(
    data: StudyData,
    variants: list[str],
    seeds: list[int],
    bounds: dict[str, tuple[float, float]],
    colors: dict[str, Any],
    figures: Path,
    reps: int,
    seed: int,
) -> list[str]:
    """The sample-efficiency view across envs: min/max-normalized return over the fraction of training done."""
    panel = Panel("all envs", "min/max-normalized return", {}, xlabel="fraction of training")
    for i, variant in enumerate(variants):
        per_env = []
        for env in data.envs:
            timesteps, values = aligned_curves([r for r in data.runs[env][variant] if r.seed in seeds], "mean_return")
            per_env.append((timesteps / max(timesteps[-1], 1), normalize(values, bounds[env])))
        fractions = per_env[0][0]
        if any(len(f) != len(fractions) or not np.allclose(f, fractions) for f, _ in per_env):
            return ["No across-env learning curves: the envs were evaluated at different fractions of training.", ""]
        stacked = np.stack([values for _, values in per_env], axis=1)  # (runs, envs, timesteps)
        point, ci = curve_estimates(stacked, reps=reps, seed=seed + i)
        panel.curves[variant] = CurveEstimate(fractions, point, ci, stacked.mean(axis=1))
    band = f"IQM over all runs of all envs, 95% stratified-bootstrap band ({reps:,} resamples, runs resampled within each env)"
    if len(seeds) < MIN_RUNS:
        band = f"IQM over all runs of all envs, no band (fewer than {MIN_RUNS} runs); thin lines: each seed's mean over envs"
    plot_curve_panels(f"Sample efficiency: {band}", [panel], colors, figures / "aggregate_learning_curves.png")
    return [
        "![All envs: min/max-normalized learning curves](figures/aggregate_learning_curves.png)",
        "",
        f"Sample efficiency: min/max-normalized return (bounds of the final returns, so earlier evaluations can be "
        f"below 0) over the fraction of training; {band}.",
        "",
    ]


def _warnings_section(data: StudyData) -> list[str]:
    """Each warning the runs raised, once, with the runs that raised it."""
    if not data.warnings:
        return []
    lines = ["## Run warnings", "", "Each warning once, with the runs that raised it:", ""]
    for message, keys in sorted(data.warnings.items()):
        lines.append(f"- `{message.splitlines()[0]}`: {_runs_by_env_variant(keys, data)}")
    return [*lines, ""]


# what the finished runs were made with, each: (StudyData field, the line where every run shares one value, the
# lead-in of the list of values and their runs where they differ)
MADE_WITH = (
    (
        "software",
        "Software of every run: {}.",
        "Software of the runs (several versions: each run is a run of the same settings and seed, but runs made with "
        "different versions are not bit-identical to each other):",
    ),
    (
        "engines",
        "Engine of every run: {}.",
        "Engines of the runs (each seed of a task is trained by one engine, so each paired comparison lies within one "
        "engine; the engines' runs are statistically, not bitwise, the same, and the section Engines checks that the "
        "effects agree):",
    ),
)


def _made_with_lines(groups: dict[str, list[tuple[str, str, int]]], data: StudyData, one: str, several: str) -> list[str]:
    """``one`` filled in where every run shares a value; else ``several`` and each value with the runs that have it."""
    if not groups:
        return []
    if len(groups) == 1:
        return [one.format(next(iter(groups))), ""]
    lines = [several, ""]
    for value, keys in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"- {value}: {plural(len(keys), 'run')}, {_runs_by_env_variant(keys, data)}")
    return [*lines, ""]


def _runs_by_env_variant(keys: Iterable[tuple[str, str, int]], data: StudyData) -> str:
    """
    Runs named compactly: ``env variant (seeds 3, 4)`` once per (env, variant), ``all seeds`` where it is all, and
    ``env every variant (seeds 1, 2)`` where every variant of an env has the same seeds.
    """
    all_seeds = sorted(data.manifest.get("seeds", []))
    by_env: dict[str, dict[str, list[int]]] = {}
    for env, variant, seed in keys:
        by_env.setdefault(env, {}).setdefault(variant, []).append(seed)

    def which(seeds: Iterable[int]) -> str:
        seeds = sorted(seeds)
        return "all seeds" if seeds == all_seeds else ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))

    named = []
    for env, by_variant in sorted(by_env.items()):
        seed_sets = {tuple(sorted(seeds)) for seeds in by_variant.values()}
        if len(data.variants) > 1 and set(by_variant) == set(data.variants) and len(seed_sets) == 1:
            named.append(f"{env} every variant ({which(seed_sets.pop())})")
            continue
        named += [f"{env} {variant} ({which(seeds)})" for variant, seeds in sorted(by_variant.items())]
    return "; ".join(named)


def _failures_section(data: StudyData) -> list[str]:
    if not data.failed and not data.missing:
        return []
    lines = ["## Failed and missing runs", ""]
    if data.failed:
        lines += ["| env | variant | seed | error |", "|---|---|---:|---|"]
        for record in sorted(data.failed, key=lambda r: (r["env"], r["variant"], r["seed"])):
            error = (record.get("error") or "unknown error").splitlines()[0].replace("|", "\\|")
            lines.append(f"| {record['env']} | {record['variant']} | {record['seed']} | {error} |")
        lines.append("")
    if data.missing:
        lines += [
            f"Missing (never finished): {_runs_by_env_variant(data.missing, data)}.",
            "",
        ]
    lines += ["Rerun the study command to redo failed and missing runs; finished runs are kept.", ""]
    return lines


def study_model(
    out: str | os.PathLike,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
    baseline: str | None = None,
    **plan_changes: Any,
) -> tuple[ReportModel, StudyData]:
    """
    Load a study and compute its report model under its declared plan (the defaults where it declared none), changed
    by ``plan_changes`` (fields of :class:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan`; ``None``: unchanged).
    """
    data = load_study(out)
    declared_dict = data.manifest.get("analysis")
    declared = AnalysisPlan.from_dict(declared_dict) if declared_dict is not None else None
    plan = (declared or AnalysisPlan()).with_overrides(**plan_changes)
    variants = [v for v in data.variants if any(v in data.runs.get(env, {}) for env in data.envs)]
    baseline = baseline or baseline_name(data.variants) or (variants[0] if variants else None)
    model = build_model(data, plan, declared, baseline, reps, seed)
    # the extra sections: a factorial analysis where the variants form a 2^k design; the engines' agreement where
    # the seeds come from more than one engine
    sections = factorial_sections(data, model.envs, plan) + engine_sections(data, model.envs, baseline, plan)
    return dataclasses.replace(model, sections=sections), data


def write_report(
    out: str | os.PathLike,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
    baseline: str | None = None,
    model_hook=None,
    **plan_changes: Any,
) -> Path:
    """
    Write ``<out>/report.md``, ``<out>/report.json`` and the figures (``<out>/figures/*.png``).

    :param out: the study folder
    :param reps: bootstrap replications of the IQM intervals (curves and profiles use at most 2,000)
    :param seed: bootstrap seed
    :param baseline: variant to compare against (default ``td3``, or the study's first variant without it)
    :param model_hook: called with the report model and the study data before rendering, e.g. to append a
        :class:`~sb3_ablation.study.analyse.analysis.Section`
    :param plan_changes: changes to the declared analysis plan (``alpha``, ``primary``, ``margins``, ...)
    :return: the report's path
    """
    import matplotlib

    matplotlib.use("Agg")
    model, data = study_model(out, reps, seed, baseline, **plan_changes)
    if model_hook is not None:
        model_hook(model, data)
    out = Path(out)
    figures = out / "figures"
    colors = palette(data.variants)
    settings = data.manifest.get("settings", {})
    lines = [
        f"# Ablation study report: {', '.join(data.envs)}",
        "",
        f"Study folder `{out}`. Variants: {', '.join(data.variants)}; seeds: {', '.join(map(str, data.manifest['seeds']))}; "
        f"training steps: {_training_steps(data.manifest)}{_overrides(settings)}; evaluation every "
        f"{settings.get('eval_freq') or 'n_timesteps/20'} steps with {settings.get('eval_episodes')} deterministic episodes. "
        f"Baseline: **{model.baseline}**.",
        "",
    ]
    lines += _plan_section(model, data)
    for field, one, several in MADE_WITH:
        lines += _made_with_lines(getattr(data, field), data, one, several)
    if data.failed or data.missing:
        lines += [f"**Incomplete study:** {len(data.failed)} failed and {len(data.missing)} missing runs (see the end).", ""]
    lines += [
        "## Findings",
        "",
        "Generated from the verdicts below: **differs** = the Holm-corrected paired t-test rejects; **equivalent** = "
        "the Holm-corrected two one-sided tests place the difference within the margin; **unresolved** = neither, "
        "which is not evidence that the component does nothing (its minimum detectable effect says what these seeds "
        "could have seen).",
        "",
        FINDINGS_START,
        findings_markdown(model).rstrip(),
        FINDINGS_END,
        "",
    ]
    for e in model.envs:
        lines += _env_section(model, data, e, colors, figures)
    lines += _aggregate_section(model, data, colors, figures)
    for section in model.sections:
        for name, draw in section.figures.items():
            draw(figures / name)
        lines += [f"## {section.title}", "", *section.lines, ""]
    lines += _warnings_section(data)
    lines += _failures_section(data)
    write_json_atomic(out / "report.json", model_json(model))
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
