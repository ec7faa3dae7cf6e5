"""The ablation study, in four parts:

- plan: :mod:`~sb3_ablation.study.variants` (which switches each variant turns off) and
  :mod:`~sb3_ablation.study.config` (settings, resolved zoo hyperparameters, one task per (env, variant, seed));
- execute: :mod:`~sb3_ablation.study.execute` (one run: rl_zoo3's experiment as ``train`` builds it, evaluation,
  checkpoints), :mod:`~sb3_ablation.study.evaluation` (the overestimation evaluation and diagnostics callback),
  :mod:`~sb3_ablation.study.backends` (worker processes or Ray) and :mod:`~sb3_ablation.study.runner` (the driver);
- store: :mod:`~sb3_ablation.study.store` (run records, final models, checkpoints, the manifest, the folder lock;
  every file goes through :mod:`sb3_ablation.common.io`'s atomic writes);
- analyse: :mod:`~sb3_ablation.study.plan` (the declared analysis plan), :mod:`~sb3_ablation.study.results` (records
  to arrays), :mod:`~sb3_ablation.study.inference` (verdicts of a family of paired comparisons),
  :mod:`~sb3_ablation.study.statistics` (IQMs and bootstrap CIs), :mod:`~sb3_ablation.study.analysis` (the report
  model) and :mod:`~sb3_ablation.study.report` with :mod:`~sb3_ablation.study.figures` (markdown, JSON, figures).
"""
