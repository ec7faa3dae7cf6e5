"""The across-tasks section: each component's effect combined over tasks, its heterogeneity, and the aggregate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.render.figures import plot_intervals
from sb3_ablation.study.render.format import fmt, fmt_ci, fmt_p
from sb3_ablation.study.render.labels import qualified_verdict
from sb3_ablation.study.render.tables import verdict_cell

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import AcrossTasks
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan


def across_section(
    across: AcrossTasks | None, envs: list[str], baseline: str | None, plan: AnalysisPlan, colors: dict[str, Any],
    figures: Path, labels: Mapping[str, str | None] | None = None,
    env_labels: Mapping[str, Mapping[str, str | None]] | None = None,
) -> list[str]:  # fmt: skip
    """
    The markdown (and the aggregate's figure) of the across-tasks analysis; nothing for a single-env study.

    :param labels: variant -> the label of its aggregate ``equivalent``
        (:func:`~sb3_ablation.study.render.labels.aggregate_labels`)
    :param env_labels: env -> variant -> the label of its verdict there (each task's verdict as its section gives it)
    """
    if len(envs) < 2:
        return []
    lines = ["## Across tasks", ""]
    if across is None or not across.seeds:
        return [*lines, "No variant has finished runs on every env with a common seed.", ""]
    if len(across.envs) < len(envs):
        left_out = ", ".join(env for env in envs if env not in across.envs)
        lines += [f"**Over {', '.join(across.envs)} only:** {left_out} not yet (not every variant has finished there).", ""]
    k = len(across.envs)
    lines += [
        f"The task is the unit: per env, the primary outcome's standardized paired effect (mean difference over its SD, "
        f"d_z); over the {k} envs, a random-effects meta-analysis (DerSimonian-Laird tau², Hartung-Knapp interval on "
        f"{k - 1} degrees of freedom), so each task weighs by its precision, none by its seed count. Task-dependent: "
        f"Cochran's Q rejects the same effect on every task (Holm over the components, alpha = {plan.alpha:g}); with "
        f"{k} tasks this test has little power, so 'not shown' is no evidence of one effect on every task. The combined "
        "effect and the Q test are descriptive (no family of the plan).",
        "",
        "| variant | d_z per env (verdict) | combined d_z [95% CI] | p | p Holm | tau² | I² | Q p (Holm) | task-dependent |",
        "|---|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for c in across.components:
        dependent = f"Q test rejects one effect ({c.signs})" if c.task_dependent else "not shown"
        per_env = ", ".join(
            f"{env}: {fmt(d, 2)} ({qualified_verdict(verdict, (env_labels or {}).get(env, {}).get(c.variant))})"
            for env, (d, _, verdict) in c.effects.items()
        )
        lines.append(
            f"| {c.variant} | {per_env} | {fmt(c.meta.estimate, 2)} {fmt_ci((c.meta.ci_low, c.meta.ci_high), 2)} | "
            f"{fmt_p(c.meta.p)} | {fmt_p(c.p_adjusted)} | {fmt(c.meta.tau2, 3)} | {fmt(100 * c.meta.i2, 0)}% | "
            f"{fmt_p(c.p_heterogeneity)} ({fmt_p(c.p_heterogeneity_adjusted)}) | {dependent} |"
        )
    lines.append("")
    a = across.aggregate
    if a is None:
        return [*lines, "No aggregate: not every env has a published reference return to normalize by.", ""]
    lines += [
        "### Aggregate",
        "",
        f"{a.how}. One value per seed (the mean over the envs), compared with {baseline}'s by the {TEST_NAMES[plan.test]} "
        f"test, one family-wise alpha for differs and equivalent; margin ±{fmt(a.margin, 3)} (the envs' margins, "
        "normalized, averaged; none where an env has no margin).",
        "",
        f"| variant | normalized Δ vs {baseline} [95% CI] | p adjusted | verdict |",
        "|---|---:|---:|:---|",
    ]
    for variant, comparison in a.comparisons.items():
        verdict = verdict_cell(comparison.verdict, comparison.within_margin, (labels or {}).get(variant))
        verdict += f" ({comparison.reason})" if comparison.reason else ""
        effect = f"{fmt(comparison.effect, 3)} {fmt_ci(comparison.ci, 3)}"
        lines.append(f"| {variant} | {effect} | {fmt_p(comparison.p_adjusted)} | {verdict} |")
    plot_intervals(f"All envs: reference-normalized {plan.primary}", a.stats, colors, "normalized score",
                   figures / "aggregate_normalized_score.png")  # fmt: skip
    return [*lines, "", "![All envs: reference-normalized score](figures/aggregate_normalized_score.png)", ""]
