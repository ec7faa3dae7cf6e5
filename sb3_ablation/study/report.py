"""The report of a study: ``<out>/report.md`` and its PNG figures in ``<out>/figures/``.

The analysis reads in four steps: :mod:`~sb3_ablation.study.results` loads the runs into arrays,
:mod:`~sb3_ablation.study.statistics` estimates and compares, :mod:`~sb3_ablation.study.figures` draws, and this
module writes the markdown.

Two outcomes per run, treated alike: the **final return** (the mean return of the last evaluation, deterministic
episodes at the end of training) and the **overestimation at the end** (critic 1's Q(s, a) minus the discounted return
actually obtained, at the last evaluation, as in Fig. 1 of the TD3 paper). Each claim in the report names its method
next to it. With fewer than :data:`~sb3_ablation.study.statistics.MIN_RUNS` runs per variant the report makes no
claim: it shows per-seed values and per-seed differences and says why.

The across-env aggregate uses min/max-normalized scores (the lowest and highest final return of any run of the study
on that env), and in addition scores normalized between a random policy and rl-zoo's TD3 when every env has such
reference scores.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import write_text_atomic
from sb3_ablation.study.figures import (
    CurveEstimate,
    Panel,
    palette,
    plot_curve_panels,
    plot_intervals,
    plot_performance_profiles,
)
from sb3_ablation.study.results import DIAGNOSTICS, StudyData, aligned_curves, load_study
from sb3_ablation.study.statistics import (
    CURVE_REPS,
    DEFAULT_REPS,
    DEFAULT_SEED,
    MIN_RUNS,
    REFERENCE_SCORES,
    VariantStats,
    common_seeds,
    curve_estimates,
    env_reference,
    min_permutation_p,
    normalization_bounds,
    normalize,
    normalized_scores,
    outcome_statistics,
    performance_profile,
)
from sb3_ablation.study.store import safe_name
from sb3_ablation.study.variants import parse_variant

# the names this module had before the analysis was split, kept importable from here
final_return_statistics = outcome_statistics
__all__ = [
    "DEFAULT_REPS",
    "DEFAULT_SEED",
    "REFERENCE_SCORES",
    "final_return_statistics",
    "load_study",
    "normalized_scores",
    "write_report",
]

MAX_CURVES = 12
PROFILE_POINTS = 101

# what each diagnostic of a format-2 record is, for the panel titles (contracts: means over the training steps
# between two evaluations)
DIAGNOSTIC_LABELS = {
    "q1_mean": ("mean Q1(s, a) on replay batches", "Q value"),
    "twin_q_gap": ("twin-critic gap mean |Q1 - Q2|", "Q value"),
    "target_q_mean": ("mean TD target y", "Q value"),
    "td_error": ("TD error mean |Q1(s, a) - y|", "Q value"),
    "actor_std": ("Gaussian actor: mean pre-tanh std", "standard deviation"),
}


@dataclass(frozen=True)
class Outcome:
    """A measured outcome of a run, compared between variants the same way."""

    metric: str  # the evaluation key in the run record
    name: str  # as in "the IQM <name>"
    short: str  # table header
    show_poi: bool  # P(variant > baseline) is meaningful (higher is better)


FINAL_RETURN = Outcome("mean_return", "final return", "final return", show_poi=True)
OVERESTIMATION = Outcome("bias", "overestimation at the end of training", "overestimation at end", show_poi=False)


# ----------------------------------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def _fmt_ci(ci: tuple[float, float] | None, digits: int = 1) -> str:
    return "" if ci is None else f" [{_fmt(ci[0], digits)}, {_fmt(ci[1], digits)}]"


def _per_seed(seeds: tuple[int, ...], values: tuple[float, ...], digits: int = 1) -> str:
    if not seeds:
        return ", ".join(_fmt(v, digits) for v in values)
    return ", ".join(f"s{seed}: {_fmt(value, digits)}" for seed, value in zip(seeds, values, strict=True))


def _seed_counts(stats: dict[str, VariantStats]) -> str:
    counts = sorted({s.n_runs for s in stats.values()})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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


def _what_changed(variant: str) -> str:
    """How a variant reads in a sentence: 'switching off clipped_double_q', 'ref_sb3_td3', ..."""
    try:
        parsed = parse_variant(variant)
    except ValueError:
        return variant
    if parsed.is_reference:
        return parsed.describe()
    if variant.startswith("no_"):
        return "switching off " + " and ".join(part[3:] for part in variant.split("+"))
    return f"{variant} ({parsed.describe()})"


def _describe(variant: str) -> str:
    try:
        return parse_variant(variant).describe()
    except ValueError:
        return ""


def supports_claims(stats: dict[str, VariantStats], baseline: str | None) -> bool:
    """
    A table with intervals and a significance column: the baseline has enough runs, and so has at least one other
    variant (if there is one). Otherwise per-seed values only.
    """
    if baseline not in stats or stats[baseline].n_runs < stats[baseline].min_runs:
        return False
    others = [s for s in stats.values() if s.variant != baseline]
    return not others or any(s.supports_claims for s in others)


# ----------------------------------------------------------------------------------------------------------------------
# Tables and summaries
# ----------------------------------------------------------------------------------------------------------------------


def outcome_table(
    outcome: Outcome, stats: dict[str, VariantStats], baseline: str | None, digits: int = 1, what=True
) -> list[str]:
    """
    The table of one outcome. With enough runs: IQM and mean with CIs, Δ IQM with its CI, the paired difference with
    its t-interval, P(> baseline) and the significance decision. With too few: each seed's value and each seed's
    difference to the baseline, no interval and no significance column.
    """
    first = "| variant | what it is | runs |" if what else "| variant | runs |"
    rule = "|---|---|---:|" if what else "|---|---:|"
    if supports_claims(stats, baseline):
        header = (
            f"{first} IQM {outcome.short} [95% CI] | mean [95% CI] | Δ IQM vs {baseline} [95% CI] | "
            f"paired Δ vs {baseline} [95% t-interval] |" + (f" P(> {baseline}) [95% CI] |" if outcome.show_poi else "")
        )
        lines = [header + " significant |", rule + "---:|---:|---:|---:|" + ("---:|" if outcome.show_poi else "") + ":---:|"]
    else:
        header = f"{first} {outcome.short} per seed | mean | Δ vs {baseline} per seed | mean of per-seed Δ |"
        lines = [header, rule + "---|---:|---|---:|"]
    for variant, s in stats.items():
        cells = [variant, *([_describe(variant)] if what else []), str(s.n_runs)]
        if supports_claims(stats, baseline):
            too_few = f"n/a (n = {s.n_runs} < {s.min_runs})"
            cells += [
                f"{_fmt(s.iqm, digits)}{_fmt_ci(s.iqm_ci, digits)}" if s.iqm_ci else f"{_fmt(s.iqm, digits)}, {too_few}",
                f"{_fmt(s.mean, digits)}{_fmt_ci(s.mean_ci, digits)}",
            ]
            if variant == baseline:
                cells += ["—"] * (4 if outcome.show_poi else 3)
            elif not s.supports_claims:
                cells += [_fmt(s.diff, digits), _fmt(s.paired_diff, digits)]
                cells += ["n/a"] if outcome.show_poi else []
                cells += [f"no claim (n = {min(s.n_runs, s.baseline_runs)} < {s.min_runs})"]
            else:
                cells += [
                    f"{_fmt(s.diff, digits)}{_fmt_ci(s.diff_ci, digits)}",
                    f"{_fmt(s.paired_diff, digits)}{_fmt_ci(s.paired_ci, digits)} (n = {len(s.paired_diffs)})",
                ]
                cells += [f"{_fmt(s.poi, 2)}{_fmt_ci(s.poi_ci, 2)}"] if outcome.show_poi else []
                cells += ["**yes**" if s.significant else "no"]
        else:
            cells += [_per_seed(s.seeds, s.per_seed, digits), _fmt(s.mean, digits)]
            if variant == baseline or s.diff is None:
                cells += ["—", "—"]
            else:
                cells += [_per_seed(s.paired_seeds, s.paired_diffs, digits), _fmt(s.paired_diff, digits)]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def outcome_summary(outcome: Outcome, stats: dict[str, VariantStats], baseline: str, reps: int) -> list[str]:
    """Generated bullet points on one outcome: which differences to the baseline are real, each with its method."""
    others = [s for s in stats.values() if s.variant != baseline and s.diff is not None]
    base = stats[baseline]
    lines = []
    if outcome is OVERESTIMATION:
        level = f"{_fmt(base.iqm)}{_fmt_ci(base.iqm_ci)}" if base.iqm_ci else _fmt(base.iqm)
        method = bootstrap_method(reps, base.n_runs) if base.iqm_ci else f"IQM of {_plural(base.n_runs, 'run')}, no CI"
        lines.append(
            f"- Overestimation at the end of training (Q1(s, a) minus the discounted return) of {baseline}: {level} "
            f"({method})."
        )
    if not any(s.supports_claims for s in others):
        ranked = sorted(others, key=lambda s: -abs(s.paired_diff if s.paired_diff is not None else 0.0))
        if ranked:
            items = "; ".join(
                f"{s.variant} {_fmt(s.paired_diff)} ({_per_seed(s.paired_seeds, s.paired_diffs)})" for s in ranked
            )
            lines.append(
                f"- {outcome.name.capitalize()}, mean of per-seed differences to {baseline} (descriptive, no claim): {items}."
            )
        return lines
    claimed = [s for s in others if s.supports_claims]
    for s in sorted((s for s in claimed if s.significant), key=lambda s: s.diff):
        verb = "raised" if s.diff > 0 else "lowered"
        paired = (
            f"paired: {_fmt(s.paired_diff)}{_fmt_ci(s.paired_ci)}, {paired_method(len(s.paired_diffs))}"
            if s.paired_ci
            else "no paired interval"
        )
        poi = f"; P({s.variant} > {baseline}) = {_fmt(s.poi, 2)}" if outcome.show_poi else ""
        lines.append(
            f"- **{_what_changed(s.variant)}** {verb} the IQM {outcome.name} by {_fmt(abs(s.diff))} "
            f"({_fmt_ci(s.diff_ci).strip()}, {difference_method(reps, s.n_runs, s.baseline_runs)}; {paired}{poi})."
        )
    neutral = [s for s in claimed if not s.significant]
    if neutral:
        names = ", ".join(f"{s.variant} (Δ IQM {_fmt(s.diff)})" for s in neutral)
        lines.append(
            f"- No significant difference in the {outcome.name} (the 95% CI of the IQM difference includes 0; "
            f"{reps:,} bootstrap resamples): {names}."
        )
        paired_only = [s for s in neutral if s.paired_significant]
        if paired_only:
            names = ", ".join(f"{s.variant} ({_fmt(s.paired_diff)}{_fmt_ci(s.paired_ci)})" for s in paired_only)
            lines.append(
                f"  The paired comparison ({paired_method(len(paired_only[0].paired_diffs))}) excludes 0 for: {names}."
            )
    too_few = [s for s in others if not s.supports_claims]
    if too_few:
        names = ", ".join(f"{s.variant} (n = {s.n_runs})" for s in too_few)
        lines.append(f"- Too few runs for a claim (fewer than {MIN_RUNS}): {names}.")
    return lines


def too_few_runs_note(stats: dict[str, VariantStats], baseline: str | None) -> str:
    """Why a section has no intervals and no significance column."""
    n = min(s.n_runs for s in stats.values())
    base_n = stats[baseline].n_runs if baseline in stats else n
    counts = _seed_counts(stats)
    return (
        f"**No significance claim where a variant has fewer than {MIN_RUNS} runs** "
        f"(here {counts} run{'' if counts == '1' else 's'} per variant). "
        f"A bootstrap of {_plural(n, 'value')} is no confidence interval, and an exact "
        f"permutation test on {base_n} against {_plural(n, 'run')} cannot go below p = {min_permutation_p(base_n, n):.2g}. "
        "The tables show each seed's value and each seed's difference to the baseline (the runs of a seed share "
        "initial weights and evaluation episodes); read them as a description of these runs, not as evidence. "
        f"Run at least {MIN_RUNS} seeds for intervals and tests."
    )


def env_summary(
    env: str, returns: dict[str, VariantStats], bias: dict[str, VariantStats], baseline: str | None, reps: int
) -> str:
    """A short generated paragraph: which variants differ from the baseline in return and in overestimation."""
    if baseline not in returns:
        return f"No finished runs of the baseline ({baseline}) on {env}: no comparison."
    counts = _seed_counts(returns)
    head = f"Compared with {baseline} on {env}, with {counts} run{'' if counts == '1' else 's'} per variant:"
    lines = outcome_summary(FINAL_RETURN, returns, baseline, reps)
    if baseline in bias:
        lines += outcome_summary(OVERESTIMATION, bias, baseline, reps)
    if len(returns) == 1:
        lines.append(f"- Only {baseline} has finished runs.")
    return "\n".join([head, *lines])


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
    bias = Panel("value overestimation of critic 1", "Q1(s, a) - discounted return", {}, zero_line=True)
    diagnostics = [Panel(*DIAGNOSTIC_LABELS[key], {}) for key in DIAGNOSTICS]
    for i, variant in enumerate(shown):
        for panel, metric in zip([learning, bias, *diagnostics], ("mean_return", "bias", *DIAGNOSTICS), strict=True):
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
        "episodes minus the discounted return obtained from there to the end of the episode (as in Fig. 1 of the "
        "TD3 paper; above 0 = overestimation). Episodes cut by a time limit make the true return look smaller "
        f"near the cut.{diagnostics_note} Curves: {band}. A panel whose largest curve reaches over 100 times "
        "further from 0 than the typical variant's has a symlog y axis (linear up to the typical reach), as its "
        "title says.",
        "",
    ]


def _env_section(
    data: StudyData, env: str, baseline: str | None, colors: dict[str, Any], figures: Path, reps: int, seed: int
) -> list[str]:
    by_variant = data.runs.get(env, {})
    env_variants = [v for v in data.variants if v in by_variant]
    lines = [f"## {env}", ""]
    if not env_variants:
        return [*lines, "No finished runs.", ""]
    stats = {}
    for outcome in (FINAL_RETURN, OVERESTIMATION):
        finals = {v: data.final_values(env, v, outcome.metric) for v in env_variants}
        scores = {v: values for v, (_, values) in finals.items()}
        stats[outcome] = outcome_statistics(
            scores, baseline, reps=reps, seed=seed, seeds={v: seeds for v, (seeds, _) in finals.items()}
        )
    returns, bias = stats[FINAL_RETURN], stats[OVERESTIMATION]
    lines += [env_summary(env, returns, bias, baseline, reps), ""]
    if min(s.n_runs for s in returns.values()) < MIN_RUNS:
        lines += [too_few_runs_note(returns, baseline), ""]
    claims = supports_claims(returns, baseline)
    method = bootstrap_method(reps, _seed_counts(returns)) if claims else "each seed, no interval"
    lines += [f"**Final return** ({method}):", ""]
    lines += outcome_table(FINAL_RETURN, returns, baseline)
    if bias:
        method = bootstrap_method(reps, _seed_counts(bias)) if supports_claims(bias, baseline) else "each seed, no interval"
        lines += [
            f"**Overestimation at the end of training** (Q1(s, a) - discounted return at the last evaluation; {method}):",
            "",
        ]
        lines += outcome_table(OVERESTIMATION, bias, baseline, what=False)
    if claims:
        lines += [
            f"Δ IQM: difference of IQMs with a 95% CI from {reps:,} independent stratified-bootstrap resamples of "
            "both variants' runs; *significant* when it excludes 0. Paired Δ: the mean of the per-seed differences "
            "(variant and baseline share seeds, hence initial weights and evaluation episodes) with a 95% Student-t "
            "interval.",
            "",
        ]

    # curves: with many variants (factorial) only the baseline and the most different ones stay readable
    shown = env_variants
    if len(env_variants) > MAX_CURVES:
        ranked = sorted((v for v in env_variants if v != baseline), key=lambda v: -abs(returns[v].diff or 0.0))
        shown = ([baseline] if baseline in env_variants else []) + ranked[: MAX_CURVES - 1]
        lines += [f"Curves show {baseline} and the {MAX_CURVES - 1} variants that differ most from it.", ""]
    name, curve_reps = safe_name(env), min(reps, CURVE_REPS)
    plot_intervals(f"{env}: final return", returns, colors, "final episode return", figures / f"{name}_final_return_ci.png")
    lines += _curve_figures(data, env, shown, colors, figures, curve_reps, seed)
    lines += _profile_figure(
        f"{env}: performance profile of final returns",
        {v: data.final_returns(env, v) for v in shown},
        colors,
        "final return x",
        figures / f"{name}_performance_profile.png",
        curve_reps,
        seed,
    )
    lines += [f"![{env}: final return IQM and mean, with 95% CIs or each run](figures/{name}_final_return_ci.png)", ""]
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


def _aggregate_section(
    data: StudyData, variants: list[str], baseline: str | None, colors: dict[str, Any], figures: Path, reps: int, seed: int
) -> list[str]:
    if len(data.envs) < 2:
        return []
    lines = ["## Across environments (normalized scores)", ""]
    # a study run task by task: aggregate the tasks every variant has runs on, and name the others
    covered = [env for env in data.envs if all(len(data.final_returns(env, v)) for v in variants)]
    if 2 <= len(covered) < len(data.envs):
        left_out = [env for env in data.envs if env not in covered]
        lines += [
            f"**Over {', '.join(covered)} only:** {', '.join(left_out)} not yet (not every variant has finished runs "
            "there). This section changes when they come in.",
            "",
        ]
        data = dataclasses.replace(data, envs=covered)
    complete = [v for v in variants if all(len(data.final_returns(env, v)) for env in data.envs)]
    seeds = common_seeds(data, complete)
    if not complete or not seeds:
        return [*lines, "No variant has finished runs on every env with a common seed.", ""]
    methods = ["minmax"] + (["reference"] if all(env_reference(env) for env in data.envs) else [])
    lines += [
        f"Each variant's runs of the seeds every variant finished on every env ({len(seeds)}: "
        f"{', '.join(map(str, seeds))}), one normalized score per env; row k of two variants is the same seed, so the "
        "paired Δ averages each seed's difference over the envs. Stratified bootstrap: runs resampled within each env.",
        "",
    ]
    for method in methods:
        matrices, how = normalized_scores(data, complete, method=method)
        stats = outcome_statistics(matrices, baseline, reps=reps, seed=seed, seeds=dict.fromkeys(matrices, seeds))
        label = "min/max-normalized" if method == "minmax" else "reference-normalized"
        lines += [f"### {label.capitalize()} score", "", f"{how}.", ""]
        if len(seeds) < MIN_RUNS:
            lines += [too_few_runs_note(stats, baseline), ""]
        else:
            lines += [
                f"Brackets: {bootstrap_method(reps, len(seeds))} per env; Δ IQM and paired Δ as in the env sections.",
                "",
            ]
        lines += outcome_table(
            Outcome("mean_return", f"{label} score", f"{label} score", show_poi=True), stats, baseline, digits=3, what=False
        )
        suffix = "" if method == "minmax" else "_reference"
        plot_intervals(
            f"All envs: {label} final score",
            stats,
            colors,
            f"{label} score",
            figures / f"aggregate_normalized_score{suffix}.png",
        )
        lines += [f"![All envs: {label} final score](figures/aggregate_normalized_score{suffix}.png)", ""]
        if method == "minmax":
            bounds = normalization_bounds(data, complete, method)[0]
            lines += _aggregate_curves(data, complete, seeds, bounds, colors, figures, min(reps, CURVE_REPS), seed)
            lines += _profile_figure(
                "All envs: performance profile of min/max-normalized final scores",
                matrices,
                colors,
                "min/max-normalized score x",
                figures / "aggregate_performance_profile.png",
                min(reps, CURVE_REPS),
                seed,
            )
    return lines


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


def _software_lines(data: StudyData) -> list[str]:
    """The versions the finished runs were made with; where they differ, which runs used which."""
    if not data.software:
        return []
    if len(data.software) == 1:
        return [f"Software of every run: {next(iter(data.software))}.", ""]
    lines = [
        "Software of the runs (several versions: each run is a run of the same settings and seed, but runs made with "
        "different versions are not bit-identical to each other):",
        "",
    ]
    for software, keys in sorted(data.software.items(), key=lambda item: -len(item[1])):
        lines.append(f"- {software}: {_plural(len(keys), 'run')}, {_runs_by_env_variant(keys, data)}")
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


def write_report(
    out: str | os.PathLike, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED, baseline: str | None = None
) -> Path:
    """
    Write ``<out>/report.md`` and its figures (``<out>/figures/*.png``).

    :param out: the study folder
    :param reps: bootstrap replications for the final-outcome statistics (curves and profiles use at most 2,000)
    :param seed: bootstrap seed
    :param baseline: variant to compare against (default ``td3``, or the study's first variant without it)
    :return: the report's path
    """
    import matplotlib

    matplotlib.use("Agg")
    data = load_study(out)
    out = Path(out)
    figures = out / "figures"
    variants = [v for v in data.variants if any(v in data.runs.get(env, {}) for env in data.envs)]
    baseline = baseline or ("td3" if "td3" in data.variants else (variants[0] if variants else None))
    colors = palette(data.variants)
    settings = data.manifest.get("settings", {})
    lines = [
        f"# Ablation study report: {', '.join(data.envs)}",
        "",
        f"Study folder `{out}`. Variants: {', '.join(data.variants)}; seeds: {', '.join(map(str, data.manifest['seeds']))}; "
        f"training steps: {_training_steps(data.manifest)}{_overrides(settings)}; evaluation every "
        f"{settings.get('eval_freq') or 'n_timesteps/20'} steps with {settings.get('eval_episodes')} deterministic episodes. "
        f"Baseline: **{baseline}**.",
        "",
        "Final return = the mean return of the last evaluation of a run (at the end of training). Overestimation at "
        "the end = critic 1's Q(s, a) minus the discounted return, at the last evaluation. IQM = interquartile mean "
        "(the mean of the middle 50% of runs). Brackets are 95% confidence intervals, each named where it is used: "
        f"stratified bootstrap (rliable, {reps:,} resamples, seed {seed}) for IQM, mean and Δ IQM; a Student-t interval "
        f"for the paired Δ (the mean of per-seed differences). With fewer than {MIN_RUNS} runs per variant there are "
        "no intervals and no significance claims, only per-seed values.",
        "",
    ]
    lines += _software_lines(data)
    if data.failed or data.missing:
        lines += [f"**Incomplete study:** {len(data.failed)} failed and {len(data.missing)} missing runs (see the end).", ""]
    for env in data.envs:
        lines += _env_section(data, env, baseline, colors, figures, reps, seed)
    lines += _aggregate_section(data, variants, baseline, colors, figures, reps, seed)
    lines += _warnings_section(data)
    lines += _failures_section(data)
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
