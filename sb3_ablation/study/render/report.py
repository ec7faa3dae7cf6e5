"""The report of a study: ``<out>/report.md``, ``<out>/report.json``, the PNG figures in ``<out>/figures/`` and
the tidy ``<out>/evaluations.csv`` (:mod:`~sb3_ablation.study.render.exports`).

Compute, then render: :func:`~sb3_ablation.study.analyse.analysis.build_model` computes every estimate and verdict under the
study's analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`) into a report model, and this module renders the model as
markdown, figures (:mod:`~sb3_ablation.study.render.figures`) and JSON.

Each comparison of a variant with the baseline gets one of three verdicts, with the test named next to it:
``differs`` (the plan's paired test, Wilcoxon signed-rank by default), ``equivalent`` (two one-sided tests within the
plan's margin) or ``unresolved`` (with the minimum detectable effect and the seeds that would detect the observed
effect); both claims share one family-wise alpha (:mod:`~sb3_ablation.study.analyse.family_verdicts`, or the
group-sequential looks of :mod:`~sb3_ablation.study.analyse.sequential` where the plan declares them). IQMs with
stratified-bootstrap CIs (rliable) are effect sizes, not corrected for multiple comparisons. With fewer than
:data:`~sb3_ablation.study.analyse.statistics.MIN_RUNS` seed pairs there is no test: the tables show per-seed values and
differences and say why. Failures, margins in three units, the task-level meta-analysis across envs and the extra
sections (factorial, engines, tuning) come from the report model; the runs' status, software, warnings and failures
from :mod:`~sb3_ablation.study.render.status`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

from sb3_ablation.common.io import write_json_atomic, write_text_atomic
from sb3_ablation.common.training_stats import ACTOR_STD, TARGET_Q_MEAN, TD_ERROR, TWIN_Q_GAP, q_mean_key
from sb3_ablation.study.analyse.analysis import ReportModel, build_model
from sb3_ablation.study.analyse.model import EnvResult
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.results import DIAGNOSTICS, StudyData, aligned_curves, load_study
from sb3_ablation.study.analyse.statistics import (
    CURVE_REPS,
    DEFAULT_REPS,
    DEFAULT_SEED,
    MIN_RUNS,
    curve_estimates,
    performance_profile,
)
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.variants import baseline_name
from sb3_ablation.study.render.across import across_section
from sb3_ablation.study.render.engine_check import engine_sections
from sb3_ablation.study.render.exports import write_evaluations_csv
from sb3_ablation.study.render.factorial import factorial_sections
from sb3_ablation.study.render.figures import (
    CurveEstimate,
    Panel,
    curve_band,
    iqm_caption,
    palette,
    plot_curve_panels,
    plot_intervals,
    plot_performance_profiles,
    profile_band,
)
from sb3_ablation.study.render.json import model_json
from sb3_ablation.study.render.plan import plan_banner, plan_section
from sb3_ablation.study.render.sequential import looks_lines
from sb3_ablation.study.render.status import (
    MADE_WITH,
    failures_section,
    made_with_lines,
    overrides_text,
    status_markdown,
    training_steps_text,
    warnings_section,
)
from sb3_ablation.study.render.summaries import findings_markdown
from sb3_ablation.study.render.tables import (
    failures_table,
    outcome_table,
    table_legend,
    too_few_runs_note,
)
from sb3_ablation.study.render.tuning import tuning_sections
from sb3_ablation.study.store.runs import safe_name

__all__ = ["DEFAULT_REPS", "DEFAULT_SEED", "load_study", "status_markdown", "study_model", "write_report"]

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


# ----------------------------------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------------------------------


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
    band = curve_band(reps, [len(by_variant[variant]) for variant in shown])
    learning = Panel("return", "episode return (mean of evaluation episodes)", {})
    bias = Panel("value overestimation of critic 1", "Q1(s, a) - discounted return", {}, zero_line=True)
    diagnostics = [Panel(*DIAGNOSTIC_LABELS[key], {}) for key in DIAGNOSTICS]
    for i, variant in enumerate(shown):
        for panel, metric in zip([learning, bias, *diagnostics], ("mean_return", "overestimation", *DIAGNOSTICS), strict=True):
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
        "episodes minus the discounted return obtained from there (above 0 = overestimation); the return runs past "
        f"the time limit.{diagnostics_note} Curves: {band}. A panel whose largest curve reaches over 100 times "
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
        if result.sequential is not None:
            lines += looks_lines(result.sequential, plan.alpha)
        if any(not c.reason.startswith("n =") for c in result.comparisons.values()):
            lines += [table_legend(result, plan), ""]
    lines += [iqm_caption(reps, [s.n_runs for s in primary.stats.values()]), ""]
    lines += failures_table(e.failures, baseline)

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
    band = profile_band(reps, [np.size(values) for values in scores.values()])
    return [f"![{title}](figures/{path.name})", "", f"Performance profile (rliable): fraction of runs above x ({band}).", ""]


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
    model = build_model(data, plan, declared, baseline, reps, seed, data.manifest.get("analysis_declared"))
    # the extra sections: a factorial analysis where the variants form a 2^k design; the engines' agreement where
    # the seeds come from more than one engine; both answers of a study that tuned every variant for itself
    sections = factorial_sections(data, model.envs, plan) + engine_sections(data, model.envs, baseline, plan)
    sections += tuning_sections(data, model.envs, baseline, plan, reps, seed)
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
    Write ``<out>/report.md``, ``<out>/report.json``, the figures (``<out>/figures/*.png``) and the tidy table of the
    evaluations (``<out>/evaluations.csv``, :func:`~sb3_ablation.study.render.exports.write_evaluations_csv`).

    :param out: the study folder
    :param reps: bootstrap replications of the IQM intervals (curves and profiles use at most 2,000)
    :param seed: bootstrap seed
    :param baseline: variant to compare against (default ``td3``, or the study's first variant without it)
    :param model_hook: called with the report model and the study data before rendering, e.g. to append a
        :class:`~sb3_ablation.study.analyse.analysis.Section`
    :param plan_changes: changes to the declared analysis plan (``alpha``, ``primary``, ``margins``, ...)
    :return: the report's path
    """
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
        f"training steps: {training_steps_text(data.manifest)}{overrides_text(settings)}; evaluation every "
        f"{settings.get('eval_freq') or 'n_timesteps/20'} steps with {settings.get('eval_episodes')} deterministic episodes. "
        f"Baseline: **{model.baseline}**.",
        "",
        status_markdown(data),
    ]
    lines = [*lines[:2], *plan_banner(model), *lines[2:]]
    lines += plan_section(model, data)
    for field, one, several in MADE_WITH:
        lines += made_with_lines(getattr(data, field), data, one, several)
    if data.failed or data.missing:
        lines += [f"**Incomplete study:** {len(data.failed)} failed and {len(data.missing)} missing runs (see the end).", ""]
    lines += [
        "## Findings",
        "",
        "Generated from the verdicts below: **differs** = the plan's paired test rejects no difference; **equivalent** "
        "= two one-sided tests place the difference within the margin; **unresolved** = neither, which is not evidence "
        f"that the component does nothing (its minimum detectable effect says what these seeds could have seen). "
        f"{model.guarantee}",
        "",
        FINDINGS_START,
        findings_markdown(model).rstrip(),
        FINDINGS_END,
        "",
    ]
    for e in model.envs:
        lines += _env_section(model, data, e, colors, figures)
    lines += across_section(model.across, data.envs, model.baseline, model.plan, colors, figures)
    for section in model.sections:
        for name, draw in section.figures.items():
            draw(figures / name)
        lines += [f"## {section.title}", "", *section.lines, ""]
    lines += warnings_section(data)
    lines += failures_section(data)
    write_json_atomic(out / "report.json", model_json(model))
    write_evaluations_csv(out)  # the tidy table of every evaluation, for pandas, seaborn and rliable
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
