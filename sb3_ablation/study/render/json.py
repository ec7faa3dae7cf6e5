"""The report model as plain JSON (``report.json``): every number the markdown shows, and more."""

from __future__ import annotations

import math
from typing import Any

from sb3_ablation.study.analyse.analysis import ReportModel
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.statistics import VariantStats
from sb3_ablation.study.render.summaries import summary_across_tasks, summary_per_task


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def comparison_json(c: Comparison, s: VariantStats | None = None) -> dict[str, Any]:
    entry = {
        "verdict": c.verdict,
        "test": c.test,
        "reason": c.reason or None,
        "n": c.n,
        "effect": _number(c.effect),
        "ci": [_number(c.ci[0]), _number(c.ci[1])] if c.ci else None,
        "p_raw": _number(c.p_raw),
        "p_adjusted": _number(c.p_adjusted),
        "p_equivalence": _number(c.p_equivalence),
        "p_equivalence_adjusted": _number(c.p_equivalence_adjusted),
        "margin": _number(c.margin),
        "mde": _number(c.mde),
        "seeds_needed": c.seeds_needed,
        "family_size": c.family_size,
        "differences": list(c.differences),
    }
    if s is not None:
        entry["iqm"] = _number(s.iqm)
        entry["iqm_ci_not_corrected"] = list(s.iqm_ci) if s.iqm_ci else None
    return entry


def baseline_json(s: VariantStats | None) -> dict | None:
    """The baseline's own value of an outcome: its runs, mean and IQM (``None`` where it has no runs)."""
    if s is None:
        return None
    return {"n": s.n_runs, "mean": _number(s.mean), "iqm": _number(s.iqm)}


def model_json(model: ReportModel) -> dict:
    """The report model as plain JSON (``report.json``)."""
    envs = {}
    for e in model.envs:
        envs[e.env] = {
            "training_steps": e.training_steps,
            "primary_window_timesteps": e.window,
            "untrained_return": _number(e.untrained),
            "outcomes": {
                o.outcome.key: {
                    "name": o.outcome.name,
                    "definition": o.outcome.definition,
                    "primary": o.primary,
                    "margin": _number(o.margin),
                    "margin_how": o.margin_how,
                    "baseline": baseline_json(o.stats.get(model.baseline or "")),
                    "variants": {v: comparison_json(c, o.stats.get(v)) for v, c in o.comparisons.items()},
                }
                for o in e.outcomes
            },
        }
    across = None
    if model.across:
        across = {
            "envs": model.across.envs,
            "seeds": model.across.seeds,
            "sign_tests": {
                t.variant: {
                    "higher": t.higher,
                    "lower": t.lower,
                    "ties": t.ties,
                    "p_raw": _number(t.p_raw),
                    "p_adjusted": _number(t.p_adjusted),
                    "smallest_adjusted_p": _number(t.floor),
                    "task_dependent": t.task_dependent,
                }
                for t in model.across.sign_tests
            },
            "aggregates": {
                a.method: {
                    "how": a.how,
                    "margin": a.margin,
                    "variants": {v: comparison_json(c, a.stats.get(v)) for v, c in a.comparisons.items()},
                }
                for a in model.across.aggregates
            },
        }
    return {
        "plan": model.plan.to_dict(),
        "declared_plan": model.declared.to_dict() if model.declared else None,
        "plan_changes": model.plan_changes,
        "baseline": model.baseline,
        "bootstrap": {"reps": model.reps, "seed": model.seed},
        "envs": envs,
        "across_envs": across,
        "sections": {s.title: s.json for s in model.sections},
        "summary": {"per_task": summary_per_task(model), "across_tasks": summary_across_tasks(model)},
    }
