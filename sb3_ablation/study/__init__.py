"""The ablation study, in five layers; each imports only from itself and the layers above it in this list:

- plan: :mod:`~sb3_ablation.study.plan` — what a study is before anything runs: the variants
  (:mod:`~sb3_ablation.study.plan.variants`), the factorial designs (:mod:`~sb3_ablation.study.plan.designs`), the
  run task and record format
  (:mod:`~sb3_ablation.study.plan.records`), the settings and runs (:mod:`~sb3_ablation.study.plan.config`) and the
  analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`);
- store: :mod:`~sb3_ablation.study.store` — what is on disk: run records (:mod:`~sb3_ablation.study.store.runs`),
  checkpoints and final models (:mod:`~sb3_ablation.study.store.checkpoints`), the manifest ``study.json``
  (:mod:`~sb3_ablation.study.store.manifest`) and the folder lock (:mod:`~sb3_ablation.study.store.lock`);
- run: :mod:`~sb3_ablation.study.run` — training and evaluating runs: one run (:mod:`~sb3_ablation.study.run.execute`)
  on rl_zoo3's experiment (:mod:`~sb3_ablation.study.run.manager`) with its schedule
  (:mod:`~sb3_ablation.study.run.learning`), checkpoints (:mod:`~sb3_ablation.study.run.checkpointing`), warnings
  (:mod:`~sb3_ablation.study.run.run_warnings`) and record (:mod:`~sb3_ablation.study.run.recording`); the evaluation
  callback (:mod:`~sb3_ablation.study.run.evaluation`, :mod:`~sb3_ablation.study.run.episodes`,
  :mod:`~sb3_ablation.study.run.overestimation`); batched seeds (:mod:`~sb3_ablation.study.run.batched`), the engines,
  the backends (processes or Ray) and the driver (:mod:`~sb3_ablation.study.run.runner`);
- analyse: :mod:`~sb3_ablation.study.analyse` — records to numbers: outcomes (:mod:`~sb3_ablation.study.analyse.results`,
  :mod:`~sb3_ablation.study.analyse.outcomes`), the robust paired tests (:mod:`~sb3_ablation.study.analyse.paired_tests`,
  :mod:`~sb3_ablation.study.analyse.paired_methods`), the verdicts of a family with one error rate
  (:mod:`~sb3_ablation.study.analyse.family_verdicts`), families of comparisons
  (:mod:`~sb3_ablation.study.analyse.inference`), failures, statistics, the report model
  (:mod:`~sb3_ablation.study.analyse.analysis`), across tasks, factorial effects (:mod:`~sb3_ablation.study.analyse.effects`,
  :mod:`~sb3_ablation.study.analyse.factorial`); it returns dataclasses and renders nothing;
- render: :mod:`~sb3_ablation.study.render` — the report model as markdown, figures and JSON
  (:mod:`~sb3_ablation.study.render.report`, :mod:`~sb3_ablation.study.render.figures`,
  :mod:`~sb3_ablation.study.render.json`), with one number formatter (:mod:`~sb3_ablation.study.render.format`).

The command line (:mod:`sb3_ablation.cli`) sits on top. ``tests/unit/test_layers.py`` checks the order.
"""
