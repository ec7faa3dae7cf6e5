"""``report.json``: the report model as plain JSON, every number the markdown shows and more, written by one function,
:func:`write_report_json`, from the model alone. The README's answer and the docs' results pages (``docs/generate/``) read
this file, never the study's records. A new field of the report model gets its key here (or in its section's
renderer, :mod:`~sb3_ablation.study.render.extra_sections`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.render.along_training import along_training_json
from sb3_ablation.study.render.committed import answer_sentence
from sb3_ablation.study.render.extra_sections import extra_sections
from sb3_ablation.study.render.json_parts import comparison_json, env_json, number
from sb3_ablation.study.render.labels import aggregate_labels, labels_of, qualified_verdict
from sb3_ablation.study.render.learning import task_learning_json
from sb3_ablation.study.render.plan import plan_provenance_json
from sb3_ablation.study.render.summaries import learning_of, summary_across_tasks, summary_per_task

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import EnvResult, ReportModel


def _env(model: ReportModel, e: EnvResult) -> dict[str, Any]:
    """An env of the report with its labels, where TD3 learns (``learning``) and the committed answer it points to
    (``committed_answer``, null where it has seeds enough for a verdict, or none answers it)."""
    learning = learning_of(model, e.env)
    answer = model.committed_answers.get(e.env)
    extra = {
        "along_training": along_training_json(model, e.env),
        "learning": None
        if learning is None
        else task_learning_json(learning, model.baseline, model.plan.alpha, model.plan.test),
        "committed_answer": None
        if answer is None
        else {
            "study": answer.study,
            "page": answer.page,
            "report_json": answer.report_json,
            "seeds": answer.seeds,
            "training_steps": answer.training_steps,
            "sentence": answer_sentence(answer),
        },
    }
    return env_json(e, model.baseline, labels_of(learning), extra)


def model_json(model: ReportModel) -> dict:
    """
    The report model as plain JSON (``report.json``).

    Per env (``envs.<env>``), besides its outcomes and failures:

    - every comparison (``outcomes.<outcome>.variants.<variant>``, and the aggregate's, a factorial's effects, the
      sequential decisions, the plan versions' tables) has ``verdict``, the verdict as the report shows it, and
      ``test_verdict``, the test's own result: :func:`~sb3_ablation.study.render.json_parts.verdict_json` defines these keys
      and ``label``, ``descriptive``, ``qualified_verdict`` (a secondary outcome's and a replication's comparisons
      are ``descriptive``);
    - ``failures.rules``: which definition counted the failures (``learning``: the rules of ``learning``, the one the
      report uses wherever it applies them; ``plan``: the plan's failure outcome);
    - ``learning``: where TD3 learns (:func:`~sb3_ablation.study.render.learning.task_learning_json`): the failure rules,
      TD3's budget progress, the ceiling, and per variant its failures against the baseline's and its return among
      the runs that learned;
    - ``committed_answer``: the committed study a task with too few seeds for a verdict points to
      (:mod:`~sb3_ablation.study.render.committed`), null otherwise;
    - ``along_training``: each comparison's return difference at every evaluation step with pointwise and simultaneous
      95% bands, the steps where the simultaneous band excludes 0 and its sentence
      (:func:`~sb3_ablation.study.render.along_training.along_training_json`; descriptive, null: not computed).
    """
    across = None
    env_labels = {learning.env: labels_of(learning) for learning in model.learning}
    if model.across:
        labels = aggregate_labels(model.learning, list(model.across.aggregate.comparisons) if model.across.aggregate else [])
        aggregate = model.across.aggregate
        across = {
            "envs": model.across.envs,
            "seeds": model.across.seeds,
            "components": {
                c.variant: {
                    "per_env": {
                        env: {
                            "d_z": d,
                            "variance": var,
                            "verdict": qualified_verdict(verdict, env_labels.get(env, {}).get(c.variant)),
                            "test_verdict": verdict,
                        }
                        for env, (d, var, verdict) in c.effects.items()
                    },
                    "combined": number(c.meta.estimate),
                    "ci": [number(c.meta.ci_low), number(c.meta.ci_high)],
                    "p": number(c.meta.p),
                    "p_adjusted": number(c.p_adjusted),
                    "tau2": number(c.meta.tau2),
                    "i2": number(c.meta.i2),
                    "q": number(c.meta.q),
                    "p_heterogeneity": number(c.p_heterogeneity),
                    "p_heterogeneity_adjusted": number(c.p_heterogeneity_adjusted),
                    "task_dependent": c.task_dependent,
                    "signs": c.signs,
                }
                for c in model.across.components
            },
            "aggregate": None
            if aggregate is None
            else {
                "how": aggregate.how,
                "margin": number(aggregate.margin),
                "variants": {
                    v: comparison_json(c, aggregate.stats.get(v), labels.get(v)) for v, c in aggregate.comparisons.items()
                },
            },
        }
    return {
        "plan": model.plan.to_dict(),
        "declared_plan": model.declared.to_dict() if model.declared else None,
        "plan_declared": model.declared_at,
        "plan_changes": model.plan_changes,
        "provenance": plan_provenance_json(model),
        "error_control": model.guarantee,
        "baseline": model.baseline,
        "bootstrap": {"reps": model.reps, "seed": model.seed},
        "envs": {e.env: _env(model, e) for e in model.envs},
        # seeds outside the plan's confirmatory seeds: descriptive, no verdicts
        "replication": None
        if model.replication is None
        else {e.env: env_json(e, model.baseline, descriptive=True) for e in model.replication},
        "across_envs": across,
        "sections": {s.title: s.json for s in extra_sections(model)},
        "summary": {"per_task": summary_per_task(model), "across_tasks": summary_across_tasks(model)},
    }


def write_report_json(model: ReportModel, path: str | os.PathLike) -> Path:
    """
    Write the report model as ``report.json``.

    :param model: the study's report model
    :param path: the file to write (``<study>/report.json``)
    :return: its path
    """
    path = Path(path)
    write_json_atomic(path, model_json(model))
    return path
