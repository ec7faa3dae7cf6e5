"""The ablation study, in four parts (each module imports only from the parts above it, and from its own part):

- plan: :mod:`~sb3_ablation.study.variants` (which switches each variant turns off),
  :mod:`~sb3_ablation.study.records` (the run task and the run record: what a run gets and what it writes, record
  format 3) and :mod:`~sb3_ablation.study.config` (settings, resolved zoo hyperparameters, one task per (env,
  variant, seed)), :mod:`~sb3_ablation.study.plan` (the declared analysis plan);
- store: :mod:`~sb3_ablation.study.store` (run records, final models, checkpoints, the manifest, the folder lock;
  every file goes through :mod:`sb3_ablation.common.io`'s atomic writes);
- run: :mod:`~sb3_ablation.study.execute` (one run: rl_zoo3's experiment as ``train`` builds it, evaluation,
  checkpoints), :mod:`~sb3_ablation.study.evaluation` (the overestimation evaluation and diagnostics callback),
  :mod:`~sb3_ablation.study.batched` (the seeds of one variant trained together),
  :mod:`~sb3_ablation.study.engines` (those two engines, chosen by name), :mod:`~sb3_ablation.study.backends` (worker
  processes or Ray) and :mod:`~sb3_ablation.study.runner` (the driver);
- analyse: :mod:`~sb3_ablation.study.results` (records to arrays), :mod:`~sb3_ablation.study.inference` (verdicts of
  a family of paired comparisons), :mod:`~sb3_ablation.study.statistics` (IQMs and bootstrap CIs),
  :mod:`~sb3_ablation.study.analysis` (the report model), :mod:`~sb3_ablation.study.factorial` (the factorial
  section), :mod:`~sb3_ablation.study.engine_check` (whether the engines agree, in a study whose seeds come from
  two), :mod:`~sb3_ablation.study.report` with :mod:`~sb3_ablation.study.figures` (markdown, JSON, figures) and
  :mod:`~sb3_ablation.study.answer` (README's answer to the exercise, from several studies' reports).

:mod:`~sb3_ablation.study.cli` is the command line of all four. ``tests/test_study_layout.py`` checks the parts'
order and that the modules import each other without cycles.
"""
