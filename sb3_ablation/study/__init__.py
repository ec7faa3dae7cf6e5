"""The ablation study, in five layers; each imports only from itself and the layers before it in this list:

- plan: :mod:`~sb3_ablation.study.plan` — what a study is before anything runs: the variants
  (:mod:`~sb3_ablation.study.plan.variants`), the factorial designs (:mod:`~sb3_ablation.study.plan.designs`), the
  run task and record format
  (:mod:`~sb3_ablation.study.plan.records`), the settings and runs (:mod:`~sb3_ablation.study.plan.config`), the
  analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`) and the per-variant tuning
  (:mod:`~sb3_ablation.study.plan.tuning`);
- store: :mod:`~sb3_ablation.study.store` — what is on disk: run records (:mod:`~sb3_ablation.study.store.runs`),
  checkpoints and final models (:mod:`~sb3_ablation.study.store.checkpoints`), the manifest ``study.json``
  (:mod:`~sb3_ablation.study.store.manifest`) and the folder lock (:mod:`~sb3_ablation.study.store.lock`);
- run: :mod:`~sb3_ablation.study.run` — training and evaluating runs: one run (:mod:`~sb3_ablation.study.run.execute`)
  on rl_zoo3's experiment (:mod:`~sb3_ablation.study.run.manager`) with its schedule
  (:mod:`~sb3_ablation.study.run.learning`), checkpoints (:mod:`~sb3_ablation.study.run.checkpointing`), warnings
  (:mod:`~sb3_ablation.study.run.run_warnings`) and record (:mod:`~sb3_ablation.study.run.recording`); the evaluation
  callback (:mod:`~sb3_ablation.study.run.evaluation`, :mod:`~sb3_ablation.study.run.episodes`,
  :mod:`~sb3_ablation.study.run.overestimation`); batched seeds (:mod:`~sb3_ablation.study.run.batched`), the engines,
  the backends (processes or Ray), the driver (:mod:`~sb3_ablation.study.run.runner`) and the tuning phase
  (:mod:`~sb3_ablation.study.run.tuning`);
- analyse: :mod:`~sb3_ablation.study.analyse` — records to numbers: outcomes (:mod:`~sb3_ablation.study.analyse.results`,
  :mod:`~sb3_ablation.study.analyse.outcomes`), the robust paired tests (:mod:`~sb3_ablation.study.analyse.paired_tests`,
  :mod:`~sb3_ablation.study.analyse.paired_methods`), the verdicts of a family with one error rate
  (:mod:`~sb3_ablation.study.analyse.family_verdicts`), families of comparisons
  (:mod:`~sb3_ablation.study.analyse.inference`) and group-sequential looks
  (:mod:`~sb3_ablation.study.analyse.sequential`), failures, statistics, the per-env comparisons
  (:mod:`~sb3_ablation.study.analyse.analysis`), across tasks, factorial effects (:mod:`~sb3_ablation.study.analyse.effects`,
  :mod:`~sb3_ablation.study.analyse.factorial`), the engine check, the tuned arm
  (:mod:`~sb3_ablation.study.analyse.tuning`), the figures' data (:mod:`~sb3_ablation.study.analyse.figure_data`) and
  the tidy table (:mod:`~sb3_ablation.study.analyse.tidy`), all gathered by one call,
  :func:`~sb3_ablation.study.analyse.report.analyse_study`, into the report model
  (:mod:`~sb3_ablation.study.analyse.report_model`, dataclasses only); it renders nothing;
- render: :mod:`~sb3_ablation.study.render` — the report model, read alone, as markdown, figures, JSON and CSV
  (:mod:`~sb3_ablation.study.render.report`, :mod:`~sb3_ablation.study.render.extra_sections`,
  :mod:`~sb3_ablation.study.render.status`, :mod:`~sb3_ablation.study.render.figures`,
  :mod:`~sb3_ablation.study.render.report_json`, :mod:`~sb3_ablation.study.render.exports`), with one number formatter
  (:mod:`~sb3_ablation.study.render.format`); it imports types and constants from analyse, never a function that
  computes.

A report flows one way: store -> analyse (``analyse_study``) -> report model -> render (``render_report``).
Above the layers, :mod:`~sb3_ablation.study.flow` holds this package's two names: :func:`conduct` runs or resumes a
study (plain, tuned or in group-sequential looks) and :func:`write_report` does both steps of the report. The command
line (:mod:`sb3_ablation.cli`) sits on top. ``tests/unit/test_layers.py`` checks the order,
``tests/unit/test_report_flow.py`` that render computes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sb3_ablation.study.flow import conduct, write_report

__all__ = ["conduct", "write_report"]


def __getattr__(name: str) -> Any:
    # conduct and write_report import every layer: loaded when first asked for, so that a layer (plan, store, ...) is
    # imported without the analysis and matplotlib
    if name in __all__:
        from sb3_ablation.study import flow

        return getattr(flow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
