"""
The report's section of a study with per-variant tuning: per env and component, the effect of removing it with TD3's
hyperparameters and with the variant's own, each with its verdict, and how much of the effect re-tuning recovers
(:mod:`~sb3_ablation.study.analyse.tuning`); then the hyperparameters tuning chose. Also its part of report.json.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sb3_ablation.study.analyse.inference import EQUIVALENT
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.json_parts import number, verdict_json
from sb3_ablation.study.render.labels import shown_label
from sb3_ablation.study.render.section_type import Section
from sb3_ablation.study.render.tables import verdict_cell

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.report_model import EnvTuning, ReportModel, TunedComparison

TITLE = "Removed with TD3's hyperparameters, and with its own"


def tuning_sections(model: ReportModel) -> list[Section]:
    """
    The section of a study with a ``tuning:`` section (none otherwise).

    :param model: the report model (its tuning comparison and baseline)
    :return: one section, or none
    """
    comparison, baseline = model.tuning, model.baseline
    if comparison is None:
        return []
    tuning = comparison.tuning
    seeds = tuning["seeds"]
    space = ", ".join(f"{name} {_range(spec)}" for name, spec in tuning["search_space"].items())
    lines = [
        "Two answers per component. **With TD3's hyperparameters**: the variant against TD3, both with the study's "
        "hyperparameters (the comparison above: what happens when the component is removed and nothing else "
        "changes). **With its own**: the variant with its own tuned hyperparameters against TD3 with its own, on the "
        f"same seeds ({comparison.tuned_out.name}/, the same plan: its paired test, margins and one family-wise "
        "alpha per env): is the component still needed when the rest is re-tuned for its absence?",
        "",
        f"Tuning: every variant got {tuning['n_trials']} Optuna trials ({tuning['sampler']} sampler, "
        f"{tuning['pruner']} pruner), each training the tuning seeds {seeds[0]}-{seeds[-1]} (never a confirmatory "
        f"seed); a trial's value is the {tuning['aggregate']} over these seeds of the mean return at its last of "
        f"{tuning['n_evaluations']} evaluations. Search space: {space}; every other hyperparameter is the study's. "
        "A variant searched only the hyperparameters it uses (a switched-off component's unused ones are left out).",
        "",
        "Recovered by re-tuning: 1 - Δ own / Δ TD3's, the share of the effect that re-tuning closes. It is a ratio "
        "of two estimates, without an interval, and undefined when Δ with TD3's hyperparameters is 0 or not "
        "`differs`. Above 100%: re-tuned, the variant beats re-tuned TD3; below 0%: the gap widened.",
        "",
    ]
    json: dict[str, Any] = {"tuning": tuning, "tuned_study": comparison.tuned_out.name, "envs": {}}
    for env in comparison.envs:
        lines += _env_lines(env, baseline)
        json["envs"][env.env] = {
            "outcome": env.outcome_key,
            "comparisons": [_row_json(row, env.is_return) for row in env.comparisons],
            "chosen": env.chosen,
        }
    return [Section(TITLE, lines, json)]


def _range(spec: dict[str, Any]) -> str:
    if "choices" in spec:
        return "{" + ", ".join(map(str, spec["choices"])) + "}"
    scale = ", log" if spec.get("log") else (f", step {spec['step']}" if "step" in spec else "")
    return f"[{spec['low']}, {spec['high']}{scale}]"


def _answer(c: Comparison | None, label: str | None) -> tuple[str, str]:
    """The Δ cell (estimate, the test's interval, n) and the verdict cell (with its label and its adjusted p)."""
    if c is None:
        return "—", "not run yet"
    reason = f" ({c.reason})" if c.reason else ""
    # the p of the claim made: equivalence's for an `equivalent`, no difference's otherwise
    p = f"equivalence p {fmt_p(c.p_equivalence_adjusted)}" if c.verdict == EQUIVALENT else f"p {fmt_p(c.p_adjusted)}"
    return f"{fmt(c.effect)} {fmt_ci(c.ci)} (n = {c.n})", f"{verdict_cell(c.verdict, c.within_margin, label)}{reason}, {p}"


def _labels(row: TunedComparison, is_return: bool) -> tuple[str | None, str | None]:
    """The labels of a row's two answers (``at ceiling`` is about the return: not of an outcome in other units)."""
    return (shown_label(row.default_label, is_return), shown_label(row.own_label, is_return))


def _recovered(row: TunedComparison) -> str:
    if not math.isfinite(row.recovered):
        return row.recovered_note or "n/a"
    interval = f" [{row.recovered_ci[0]:.0%}, {row.recovered_ci[1]:.0%}]" if row.recovered_ci else ""
    return f"{row.recovered:.0%}{interval}"


def _env_lines(env: EnvTuning, baseline: str | None) -> list[str]:
    lines = [
        f"**{env.env}**, {env.outcome_name} (Δ = variant - {baseline}):",
        "",
        "| variant | Δ with TD3's hyperparameters [95% CI] | verdict | Δ with its own [95% CI] | verdict "
        "| recovered by re-tuning [95% bootstrap CI over seeds] |",
        "|---|---:|:---|---:|:---|---:|",
    ]
    for row in env.comparisons:
        default_label, own_label = _labels(row, env.is_return)
        default, own = _answer(row.default, default_label), _answer(row.own, own_label)
        lines.append(f"| {row.variant} | {default[0]} | {default[1]} | {own[0]} | {own[1]} | {_recovered(row)} |")
    lines.append("")
    if env.chosen:
        lines += [
            "Chosen hyperparameters (best trial of each variant's Optuna study):",
            "",
            "| variant | chosen values | best trial's value | trials (complete, pruned, failed) |",
            "|---|---|---:|---:|",
        ]
        for variant, result in env.chosen.items():
            values = ", ".join(f"{key} {_value(value)}" for key, value in result.get("hyperparams", {}).items())
            trials = result.get("trials", {})
            counts = f"{trials.get('complete', 0)}, {trials.get('pruned', 0)}, {trials.get('fail', 0)}"
            lines.append(f"| {variant} | {values} | {fmt(result.get('value'))} (trial {result.get('trial')}) | {counts} |")
        lines.append("")
    return lines


def _value(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _comparison_json(c: Comparison | None, label: str | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "n": c.n,
        "effect": number(c.effect),
        "ci": None if c.ci is None else [number(c.ci[0]), number(c.ci[1])],
        "p_adjusted": number(c.p_adjusted),
        "p_equivalence_adjusted": number(c.p_equivalence_adjusted),
        **verdict_json(c, label),
        "within_margin": c.within_margin,
    }


def _row_json(row: TunedComparison, is_return: bool) -> dict[str, Any]:
    default_label, own_label = _labels(row, is_return)
    return {
        "variant": row.variant,
        "default": _comparison_json(row.default, default_label),
        "own": _comparison_json(row.own, own_label),
        "recovered": number(row.recovered),
        "recovered_note": row.recovered_note,
        "recovered_ci": None if row.recovered_ci is None else [number(row.recovered_ci[0]), number(row.recovered_ci[1])],
    }
