"""The report of a study: ``<out>/report.md``, ``<out>/report.json``, the PNG figures in ``<out>/figures/`` and
the tidy ``<out>/evaluations.csv`` (:mod:`~sb3_ablation.study.render.exports`).

One way: :func:`~sb3_ablation.study.analyse.report.analyse_study` loads the study and computes every estimate, verdict
and figure's data under its analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`) into a report model
(:mod:`~sb3_ablation.study.analyse.report_model`); this module renders the model alone as markdown, figures
(:mod:`~sb3_ablation.study.render.figures`) and JSON (:func:`~sb3_ablation.study.render.report_json.write_report_json`).

Each comparison of a variant with the baseline gets one of three verdicts, with the test named next to it:
``differs`` (the plan's paired test, Wilcoxon signed-rank by default), ``equivalent`` (two one-sided tests within the
plan's margin) or ``unresolved`` (with the minimum detectable effect and the seeds that would detect the observed
effect); both claims share one family-wise alpha (:mod:`~sb3_ablation.study.analyse.family_verdicts`, or the
group-sequential looks of :mod:`~sb3_ablation.study.analyse.sequential` where the plan declares them). IQMs with
stratified-bootstrap CIs (rliable) are effect sizes, not corrected for multiple comparisons. With fewer than
:data:`~sb3_ablation.study.analyse.statistics.MIN_RUNS` seed pairs there is no test: the tables show per-seed values and
differences and say why. Failures, margins in three units, the task-level meta-analysis across envs and the extra
sections (factorial, engines, tuning: :mod:`~sb3_ablation.study.render.extra_sections`) come from the report model; the
runs' status, software, warnings and failures from :mod:`~sb3_ablation.study.render.status`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

from sb3_ablation.common.io import write_text_atomic
from sb3_ablation.common.training_stats import ACTOR_STD, TARGET_Q_MEAN, TD_ERROR, TWIN_Q_GAP, q_mean_key
from sb3_ablation.study.analyse.figure_data import MAX_CURVES
from sb3_ablation.study.analyse.results import DIAGNOSTICS
from sb3_ablation.study.analyse.statistics import DEFAULT_REPS, DEFAULT_SEED, MIN_RUNS
from sb3_ablation.study.render.across import across_section
from sb3_ablation.study.render.committed import answer_sentence
from sb3_ablation.study.render.exports import EVALUATIONS_CSV, write_evaluations_csv
from sb3_ablation.study.render.extra_sections import extra_sections
from sb3_ablation.study.render.figures import (
    Panel,
    curve_band,
    iqm_caption,
    palette,
    plot_curve_panels,
    plot_intervals,
    plot_performance_profiles,
    profile_band,
)
from sb3_ablation.study.render.labels import CANNOT_TELL_CEILING, CANNOT_TELL_FLOOR, aggregate_labels, labels_of
from sb3_ablation.study.render.learning import task_learning_lines
from sb3_ablation.study.render.plan import plan_banner, plan_section
from sb3_ablation.study.render.report_json import write_report_json
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
from sb3_ablation.study.render.summaries import findings_markdown, learning_of
from sb3_ablation.study.render.tables import (
    failures_table,
    outcome_table,
    table_legend,
    too_few_runs_note,
)
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import EnvFigures, EnvResult, ProfileEstimate, ReportModel
    from sb3_ablation.study.analyse.results import StudyData

__all__ = ["DEFAULT_REPS", "DEFAULT_SEED", "render_report", "status_markdown"]

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


def warm_up_steps(manifest: dict[str, Any], env: str) -> int:
    """The shortest warm-up (``learning_starts``) of the env's runs in a study's manifest (0: not recorded)."""
    starts = [hp.get("learning_starts") for hp in manifest.get("hyperparams", {}).get(env, {}).values()]
    return min((int(float(s)) for s in starts if s is not None), default=0)


def _curve_figures(env: str, figures_data: EnvFigures, colors: dict[str, Any], figures: Path, warm_up: int = 0) -> list[str]:
    """
    Learning curves and the overestimation (its warm-up shaded) next to the training diagnostics; returns the
    markdown for them.
    """
    name, curves = safe_name(env), figures_data.curves
    band = curve_band(figures_data.curve_reps, [curves["mean_return"][v].n_runs for v in figures_data.shown])
    learning = Panel("return", "episode return (mean of evaluation episodes)", curves["mean_return"])
    bias = Panel(
        "value overestimation of critic 1", "Q1(s, a) - discounted return", curves["overestimation"], zero_line=True,
        untrained_until=warm_up,
    )  # fmt: skip
    diagnostics = [Panel(*DIAGNOSTIC_LABELS[key], curves[key]) for key in DIAGNOSTICS]
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
    lines = [f"## {env}", ""]
    env_variants = [v for v in data.variants if v in data.runs.get(env, {})]
    primary = e.outcome(plan.primary)
    if primary is None or e.figures is None:
        return [*lines, "No finished runs.", ""]
    if min(s.n_runs for s in primary.stats.values()) < MIN_RUNS:
        lines += [too_few_runs_note(primary, baseline), ""]
    answer = model.committed_answers.get(e.env)
    if answer is not None:
        lines += [f"**Too few seeds here for a verdict.** {answer_sentence(answer)}", ""]
    learning = learning_of(model, env)
    if learning is not None:
        lines += task_learning_lines(learning, baseline, plan.alpha, plan.test)
        lines += ["### Tables and figures", ""]
    for result in e.outcomes:
        tag = "primary" if result.primary else "secondary, descriptive: estimates, no verdict"
        labels = labels_of(learning, result.outcome.is_return)
        lines += [f"**{result.outcome.name.capitalize()}** ({tag}; {result.outcome.definition}):", ""]
        lines += outcome_table(result, baseline, what=result.primary, labels=labels, descriptive=not result.primary)
        if result.sequential is not None:
            lines += looks_lines(result.sequential, plan.alpha, labels)
        if any(not c.reason.startswith("n =") for c in result.comparisons.values()):
            lines += [table_legend(result, plan), ""]
    lines += [iqm_caption(model.reps, [s.n_runs for s in primary.stats.values()]), ""]
    lines += failures_table(e.failures, baseline, learning.threshold if learning is not None else None)

    region = next((f.learning.region for f in model.factorial if f.env == env and f.learning is not None), None)
    if region is not None and not region.is_whole_design:
        lines += [
            f"Curves show {baseline} and the cells of the learning region (with {', '.join(region.enabling)} on), "
            f"{len(e.figures.shown)} of {len(env_variants)} variants: the other cells' runs fail (see the factorial "
            "analysis).",
            "",
        ]
    elif len(env_variants) > MAX_CURVES:
        lines += [f"Curves show {baseline} and the {MAX_CURVES - 1} variants that differ most from it.", ""]
    name = safe_name(env)
    plot_intervals(
        f"{env}: {primary.outcome.name}", primary.stats, colors, primary.outcome.short, figures / f"{name}_primary_ci.png"
    )
    warm_up = warm_up_steps(model.data.manifest, env) if model.data is not None else 0
    lines += _curve_figures(env, e.figures, colors, figures, warm_up)
    lines += _profile_figure(
        f"{env}: performance profile of the {primary.outcome.name}",
        e.figures.profile,
        e.figures.curve_reps,
        colors,
        f"{primary.outcome.short} x",
        figures / f"{name}_performance_profile.png",
    )
    lines += [f"![{env}: {primary.outcome.name}, IQM and mean, with 95% CIs or each run](figures/{name}_primary_ci.png)", ""]
    return lines


def _profile_figure(
    title: str, profile: ProfileEstimate | None, reps: int, colors: dict[str, Any], xlabel: str, path: Path
) -> list[str]:
    """
    rliable's performance profile (the fraction of runs above each score: one minus the ECDF of the runs, with
    stratified-bootstrap bands), which is why the report draws no separate ECDF.
    """
    if profile is None:
        return []
    plot_performance_profiles(title, profile.profiles, profile.cis, profile.taus, colors, xlabel, path)
    band = profile_band(reps, profile.counts)
    return [f"![{title}](figures/{path.name})", "", f"Performance profile (rliable): fraction of runs above x ({band}).", ""]


def verdicts_paragraph(model: ReportModel) -> str:
    """
    What the verdicts mean and the error control they hold to (the Method section's, not the findings'): only the
    verdicts the plan's claims rule can give (a plan with ``claims: differs`` makes no equivalence claims).
    """
    unresolved = (
        "which is not evidence that the component does nothing (its minimum detectable effect says what these seeds "
        "could have seen)"
    )
    descriptive = (
        "Only the primary outcome's comparisons are verdicts: a secondary outcome, a family of one or an interval not "
        "adjusted for the family is descriptive, an estimate with its interval."
    )
    if model.plan.claim_rule == "differs":
        return (
            f"**differs** = the plan's paired test rejects no difference; unresolved = it does not, {unresolved}; "
            "the plan makes no equivalence claims. A factorial effect's `differs` averaged over cells where nothing "
            f"learns says so (`differs (averaged over floor cells)`). {descriptive} {model.guarantee}"
        )
    if model.plan.claim_rule == "partitioned":
        rare = (
            "An `equivalent` of a variant with the baseline is given only where its seeds bound what rare failures "
            "could cost: the exact one-sided upper bound of the variant's failure rate, at the comparison's share of "
            "alpha, times what a failed run loses at least (the baseline's mean return minus the failure threshold) is "
            "at most the margin; elsewhere it reads `cannot tell: N seeds cannot rule out rare failures that would cost "
            "the margin` with the seeds that would (the package's calibration, docs/calibration.md: a variant that "
            "fails on a few seeds often has no failure in a 10-seed sample)."
        )
    else:
        rare = (
            "No equivalence test keeps a false `equivalent` at alpha when a variant fails on only a few seeds (the "
            "package's calibration, docs/calibration.md: such failures are often absent from a 10-seed sample): an "
            "`equivalent` does not exclude rare failures."
        )
    return (
        "**differs** = the plan's paired test rejects no difference; **equivalent** = two one-sided tests place the "
        f"difference within the margin; unresolved = neither, {unresolved}. Where both arms sit at the task's "
        f"ceiling an equivalence is true by construction and reads `{CANNOT_TELL_CEILING}`; where no run of either arm "
        f"learned it reads `{CANNOT_TELL_FLOOR}`; one where an arm has failed runs is withheld (`unresolved (failures "
        "in an arm)`; each task's 'Where TD3 learns' says why), and so is a factorial effect's averaged over cells "
        "where nothing learns, whose `differs` says so (`differs (averaged over floor cells)`). "
        f"{descriptive} {rare} {model.guarantee}"
    )


#: the terms the student glossary (docs/glossary.md) explains, as a report writes them
GLOSSARY_TERMS = (
    "family", "Wilcoxon", "HL", "MDE", "IQM", "McNemar", "look", "Pocock", "final window", "learning region",
    "half fraction", "aliased",
)  # fmt: skip


def glossary_line(text: str, out: Path) -> list[str]:
    """
    One line naming the glossary's terms a report uses, with a link to the glossary: relative where the report is a
    committed study's (``docs/studies/<name>/report.md``, next to the docs), else the page's path in the package's
    repository (as the report names its other docs pages); none where the report uses no such term.

    :param text: the report's text
    :param out: its folder
    """
    # acronyms as written (HL, not "hl"); the other terms in any case (a plan writes "pocock", a sentence "Family")
    used = [
        term for term in GLOSSARY_TERMS if re.search(rf"\b{re.escape(term)}", text, 0 if term.isupper() else re.IGNORECASE)
    ]
    if not used:
        return []
    docs = out.resolve().parent.parent
    where = "[glossary](../../glossary.md)" if (docs / "glossary.md").is_file() else "glossary (docs/glossary.md)"
    return [f"Terms used here ({', '.join(used)}) are explained in plain words in the student {where}.", ""]


def _banner_texts(lines: list[str]) -> list[str]:
    """The warnings of :func:`~sb3_ablation.study.render.plan.plan_banner`, one text each."""
    return [line[2:] for line in lines if line.startswith("> ")]


def _headline(text: str) -> str:
    """A warning's first, bold part, for the short list under the findings (the whole text is in the Method)."""
    if not text.startswith("**") or "**" not in text[2:]:
        return text
    head = text[2 : text.index("**", 2)].rstrip(":. ")
    return text if head.lower() == "plan history" else f"{head}."


def _one_level_down(lines: list[str]) -> list[str]:
    """Markdown lines with every heading one level lower (a section's ``## Analysis plan`` under ``## Method``)."""
    return [f"#{line}" if line.startswith("#") and line.lstrip("#").startswith(" ") else line for line in lines]


def render_report(model: ReportModel, out: str | os.PathLike) -> Path:
    """
    Render a report model: ``<out>/report.md``, ``<out>/report.json``, the figures (``<out>/figures/*.png``) and the
    tidy table of the evaluations (``<out>/evaluations.csv``), from the model alone.

    :param model: the study's report model (:func:`~sb3_ablation.study.analyse.report.analyse_study`)
    :param out: the study folder
    :return: the report's path
    """
    matplotlib.use("Agg")
    data = model.data
    if data is None:
        raise ValueError("the report model has no loaded study (model.data): make it with analyse_study")
    out = Path(out)
    figures = out / "figures"
    colors = palette(data.variants)
    settings = data.manifest.get("settings", {})
    study = (
        f"Study folder `{out}`. Variants: {', '.join(data.variants)}; seeds: {', '.join(map(str, data.manifest['seeds']))}; "
        f"training steps: {training_steps_text(data.manifest)}{overrides_text(settings)}; evaluation every "
        f"{settings.get('eval_freq') or 'n_timesteps/20'} steps with {settings.get('eval_episodes')} deterministic episodes. "
        f"Baseline: **{model.baseline}**."
    )
    warnings = _banner_texts(plan_banner(model))
    if data.failed or data.missing:
        warnings.insert(
            0, f"**Incomplete study:** {len(data.failed)} failed and {len(data.missing)} missing runs (see the end)."
        )
    # what a student reads first: the findings, the warnings on where they come from, per task where TD3 learns and
    # the tables, then the method (the study, the error control, the warnings in full, the plan)
    lines = [
        f"# Ablation study report: {', '.join(data.envs)}",
        "",
        "## Findings",
        "",
        FINDINGS_START,
        findings_markdown(model).rstrip(),
        FINDINGS_END,
        "",
    ]
    if warnings:
        lines += [
            "Before quoting these results (each in full under Method, 'Where the records come from'):",
            "",
            *[f"- {_headline(text)}" for text in warnings],
            "",
        ]
    for e in model.envs:
        lines += _env_section(model, data, e, colors, figures)
    aggregate = model.across.aggregate if model.across is not None else None
    labels = aggregate_labels(model.learning, list(aggregate.comparisons) if aggregate is not None else [])
    env_labels = {learning.env: labels_of(learning) for learning in model.learning}
    lines += across_section(model.across, data.envs, model.baseline, model.plan, colors, figures, labels, env_labels)
    for section in extra_sections(model):
        for name, draw in section.figures.items():
            draw(figures / name)
        lines += [f"## {section.title}", "", *section.lines, ""]
    method = ["## Study", "", study, "", "## Verdicts and error control", "", verdicts_paragraph(model), ""]
    method += glossary_line("\n".join(lines + method), out)
    if warnings:
        method += ["## Where the records come from", "", *[f"- {text}" for text in warnings], ""]
    method += list(plan_section(model, data))
    for field, one, several in MADE_WITH:
        method += made_with_lines(getattr(data, field), data, one, several)
    method += warnings_section(data)
    method += failures_section(data)
    method += [status_markdown(data)]
    lines += ["## Method", "", *_one_level_down(method)]
    write_report_json(model, out / "report.json")
    # the tidy table of every evaluation, for pandas, seaborn and rliable
    write_evaluations_csv(model.evaluations, out / EVALUATIONS_CSV)
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
