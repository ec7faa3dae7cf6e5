"""The report model as plain JSON (``report.json``): every number the markdown shows, and more."""

from __future__ import annotations

import math
from typing import Any

from sb3_ablation.study.analyse.analysis import ReportModel
from sb3_ablation.study.analyse.failures import FailureCount
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.model import EnvResult
from sb3_ablation.study.analyse.statistics import VariantStats
from sb3_ablation.study.render.sequential import looks_json
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
        "within_margin": c.within_margin,
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


def _count_json(count: FailureCount | None) -> dict | None:
    if count is None:
        return None
    return {"failed": count.failed, "n": count.n, "ci": list(count.ci), "p_vs_baseline": _number(count.p_vs_baseline)}


def _env_json(e: EnvResult, baseline: str | None) -> dict[str, Any]:
    return {
        "training_steps": e.training_steps,
        "primary_window_timesteps": e.window,
        "untrained_return": _number(e.untrained),
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
                "margin": _number(o.margin.value),
                "margin_how": o.margin.how,
                "margin_seed_sds": _number(o.margin.seed_sds),
                "margin_span_share": _number(o.margin.span_share),
                "baseline": baseline_json(o.stats.get(baseline or "")),
                "variants": {v: comparison_json(c, o.stats.get(v)) for v, c in o.comparisons.items()},
                # only where the plan declares looks: reports of fixed designs keep their shape
                **({"sequential": looks_json(o.sequential)} if o.sequential is not None else {}),
            }
            for o in e.outcomes
        },
        "failures": {
            "threshold": _number(e.failures.threshold),
            "threshold_how": e.failures.threshold_how,
            "divergence_bound": _number(e.failures.divergence_bound),
            "variants": {
                v: {
                    "did_not_learn": _count_json(f.did_not_learn),
                    "critic_diverged": _count_json(f.diverged),
                    "worst_quarter_mean": _number(f.worst_mean),
                }
                for v, f in e.failures.variants.items()
            },
        },
    }


def model_json(model: ReportModel) -> dict:
    """The report model as plain JSON (``report.json``)."""
    across = None
    if model.across:
        aggregate = model.across.aggregate
        across = {
            "envs": model.across.envs,
            "seeds": model.across.seeds,
            "components": {
                c.variant: {
                    "per_env": {
                        env: {"d_z": d, "variance": var, "verdict": verdict} for env, (d, var, verdict) in c.effects.items()
                    },
                    "combined": _number(c.meta.estimate),
                    "ci": [_number(c.meta.ci_low), _number(c.meta.ci_high)],
                    "p": _number(c.meta.p),
                    "p_adjusted": _number(c.p_adjusted),
                    "tau2": _number(c.meta.tau2),
                    "i2": _number(c.meta.i2),
                    "q": _number(c.meta.q),
                    "p_heterogeneity": _number(c.p_heterogeneity),
                    "p_heterogeneity_adjusted": _number(c.p_heterogeneity_adjusted),
                    "task_dependent": c.task_dependent,
                    "signs": c.signs,
                }
                for c in model.across.components
            },
            "aggregate": None
            if aggregate is None
            else {
                "how": aggregate.how,
                "margin": _number(aggregate.margin),
                "variants": {v: comparison_json(c, aggregate.stats.get(v)) for v, c in aggregate.comparisons.items()},
            },
        }
    return {
        "plan": model.plan.to_dict(),
        "declared_plan": model.declared.to_dict() if model.declared else None,
        "plan_declared": model.declared_at,
        "plan_changes": model.plan_changes,
        "error_control": model.guarantee,
        "baseline": model.baseline,
        "bootstrap": {"reps": model.reps, "seed": model.seed},
        "envs": {e.env: _env_json(e, model.baseline) for e in model.envs},
        "replication": None if model.replication is None else {e.env: _env_json(e, model.baseline) for e in model.replication},
        "across_envs": across,
        "sections": {s.title: s.json for s in model.sections},
        "summary": {"per_task": summary_per_task(model), "across_tasks": summary_across_tasks(model)},
    }
