"""The parts of ``report.json`` (:mod:`~sb3_ablation.study.render.report_json` writes the whole): a comparison, a
baseline's values, failure counts and an env's results as plain JSON, non-finite numbers as null."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.render.labels import DESCRIPTIVE, qualified_verdict
from sb3_ablation.study.render.sequential import looks_json

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.failures import FailureCount
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.report_model import EnvResult
    from sb3_ablation.study.analyse.statistics import VariantStats


def number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def verdict_json(c: Comparison, label: str | None = None, descriptive: bool = False) -> dict[str, Any]:
    """
    A comparison's verdict as plain JSON, the one place that defines these keys:

    - ``verdict``: the verdict as the report shows it (:func:`~sb3_ablation.study.render.labels.qualified_verdict`):
      ``differs``, ``equivalent``, ``unresolved``, ``cannot tell: both arms solve the task at this budget``, ``cannot
      tell: neither arm learns``, ``unresolved (failures in an arm)``, ``unresolved (averaged over floor cells)``,
      ``differs (averaged over floor cells)``, ``cannot tell: N seeds cannot rule out rare failures that would cost
      the margin; M seeds without a failure would`` (the ``partitioned`` rule's failure guard, whose line is also
      its ``label``), or ``descriptive`` where the number is not a verdict under the plan's
      error control (a secondary outcome, seeds outside the plan's): quote that one;
    - ``test_verdict``: the test's own result, before any label (``differs``, ``equivalent``, ``unresolved``);
    - ``label``: what changed it (``at floor``, ``at ceiling``, ``failures in an arm``, ``averaged over floor cells``;
      null: nothing);
    - ``descriptive``: true where the number is not a verdict under the plan's error control;
    - ``qualified_verdict``: the same as ``verdict`` (kept for readers of older reports).

    :param label: what the comparison carries (:mod:`~sb3_ablation.study.render.labels`)
    :param descriptive: not a verdict under the plan's error control
    """
    shown = DESCRIPTIVE if descriptive else qualified_verdict(c.verdict, label)
    changed = label if qualified_verdict(c.verdict, label) != c.verdict else None
    return {
        "verdict": shown,
        "test_verdict": c.verdict,
        "label": changed,
        "descriptive": descriptive,
        "qualified_verdict": shown,
    }


def comparison_json(
    c: Comparison, s: VariantStats | None = None, label: str | None = None, descriptive: bool = False
) -> dict[str, Any]:
    """One comparison as plain JSON: its verdict (:func:`verdict_json`), estimate, interval, p-values and test."""
    entry = {
        **verdict_json(c, label, descriptive),
        "test": c.test,
        "reason": c.reason or None,
        "n": c.n,
        "effect": number(c.effect),
        "ci": [number(c.ci[0]), number(c.ci[1])] if c.ci else None,
        "p_raw": number(c.p_raw),
        "p_adjusted": number(c.p_adjusted),
        "p_equivalence": number(c.p_equivalence),
        "p_equivalence_adjusted": number(c.p_equivalence_adjusted),
        "margin": number(c.margin),
        "mde": number(c.mde),
        "seeds_needed": c.seeds_needed,
        "within_margin": c.within_margin,
        "family_size": c.family_size,
        "differences": list(c.differences),
    }
    if s is not None:
        entry["iqm"] = number(s.iqm)
        entry["iqm_ci_not_corrected"] = list(s.iqm_ci) if s.iqm_ci else None
    return entry


def baseline_json(s: VariantStats | None) -> dict | None:
    """The baseline's own value of an outcome: its runs, mean and IQM (``None`` where it has no runs)."""
    if s is None:
        return None
    return {"n": s.n_runs, "mean": number(s.mean), "iqm": number(s.iqm)}


def _count_json(count: FailureCount | None) -> dict | None:
    if count is None:
        return None
    return {"failed": count.failed, "n": count.n, "ci": list(count.ci), "p_vs_baseline": number(count.p_vs_baseline)}


def _outcome_label(label: str | None, is_return: bool) -> str | None:
    """A comparison's label on one outcome: ``at ceiling`` on return outcomes only
    (:func:`~sb3_ablation.study.render.labels.labels_of`)."""
    return None if label == AT_CEILING and not is_return else label


def env_json(
    e: EnvResult,
    baseline: str | None,
    labels: Mapping[str, str | None] | None = None,
    extra: Mapping[str, Any] | None = None,
    descriptive: bool = False,
) -> dict[str, Any]:
    """
    An env's results as plain JSON. A secondary outcome's comparisons are descriptive (:func:`verdict_json`).

    :param labels: variant -> the label of its ``equivalent`` (:mod:`~sb3_ablation.study.render.labels`)
    :param extra: more keys of the env (``learning``, ``committed_answer``)
    :param descriptive: every comparison is descriptive (seeds outside the plan's confirmatory seeds)
    """
    labels = labels or {}
    return {
        "training_steps": e.training_steps,
        "primary_window_timesteps": e.window,
        "untrained_return": number(e.untrained),
        "seeds": e.seeds,
        "references": {
            "random": e.references.random,
            "reference": e.references.reference,
            "sources": list(e.references.sources),
        },
        "outcomes": {
            o.outcome.key: {
                "name": o.outcome.name,
                "definition": o.outcome.definition,
                "primary": o.primary,
                "margin": number(o.margin.value),
                "margin_how": o.margin.how,
                "margin_seed_sds": number(o.margin.seed_sds),
                "margin_span_share": number(o.margin.span_share),
                "baseline": baseline_json(o.stats.get(baseline or "")),
                "variants": {
                    v: comparison_json(
                        c, o.stats.get(v), _outcome_label(labels.get(v), o.outcome.is_return), descriptive or not o.primary
                    )
                    for v, c in o.comparisons.items()
                },
                # only where the plan declares hypotheses at earlier budgets, which join this family
                **(
                    {
                        "earlier_budgets": [
                            {"name": r.name, "hypothesis": asdict(r.hypothesis), **comparison_json(r.comparison)}
                            for r in o.earlier
                        ]
                    }
                    if o.earlier
                    else {}
                ),
                # every arm at those budgets, described: estimates with 95% intervals, not adjusted, no verdicts
                **(
                    {
                        "earlier_budget_estimates": [
                            {
                                "budget": e.budget,
                                "descriptive": True,
                                "means": {v: number(m) for v, m in e.means.items()},
                                "estimates": {
                                    v: {"n": n, "estimate": number(x), "ci": [number(low), number(high)]}
                                    for v, (n, x, low, high) in e.estimates.items()
                                },
                            }
                            for e in o.earlier_estimates
                        ]
                    }
                    if o.earlier_estimates
                    else {}
                ),
                # only where the plan declares looks: reports of fixed designs keep their shape
                **(
                    {
                        "sequential": looks_json(
                            o.sequential, {v: _outcome_label(x, o.outcome.is_return) for v, x in labels.items()}
                        )
                    }
                    if o.sequential is not None
                    else {}
                ),
            }
            for o in e.outcomes
        },
        "failures": {
            "threshold": number(e.failures.threshold),
            "threshold_how": e.failures.threshold_how,
            "divergence_bound": number(e.failures.divergence_bound),
            # which definition counted them: "learning" (the rules of 'Where TD3 learns', ``learning``) or "plan"
            "rules": e.failures.rules,
            "variants": {
                v: {
                    "did_not_learn": _count_json(f.did_not_learn),
                    "critic_diverged": _count_json(f.diverged),
                    "worst_quarter_mean": number(f.worst_mean),
                }
                for v, f in e.failures.variants.items()
            },
        },
        **(extra or {}),
    }
