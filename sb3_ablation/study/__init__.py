"""The ablation study, in five layers; each imports only from itself and the layers above it in this list:

- plan: :mod:`~sb3_ablation.study.plan` — what a study is before anything runs: the variants
  (:mod:`~sb3_ablation.study.plan.variants`), the factorial designs, the run task and record format
  (:mod:`~sb3_ablation.study.plan.records`), the settings and runs (:mod:`~sb3_ablation.study.plan.config`) and the
  analysis plan (:mod:`~sb3_ablation.study.plan.analysis_plan`);
- store: :mod:`~sb3_ablation.study.store` — what is on disk: run records (:mod:`~sb3_ablation.study.store.runs`),
  checkpoints and final models (:mod:`~sb3_ablation.study.store.checkpoints`), the manifest ``study.json``
  (:mod:`~sb3_ablation.study.store.manifest`) and the folder lock (:mod:`~sb3_ablation.study.store.lock`);
- run: :mod:`~sb3_ablation.study.run` — training and evaluating runs: one run (:mod:`~sb3_ablation.study.run.execute`),
  the evaluation callback (:mod:`~sb3_ablation.study.run.evaluation`), batched seeds
  (:mod:`~sb3_ablation.study.run.batched`), the engines, the backends (processes or Ray) and the driver
  (:mod:`~sb3_ablation.study.run.runner`);
- analyse: :mod:`~sb3_ablation.study.analyse` — records to numbers: outcomes (:mod:`~sb3_ablation.study.analyse.results`),
  inference, statistics, the report model (:mod:`~sb3_ablation.study.analyse.analysis`), factorial effects and the
  engines' agreement; it returns dataclasses and renders nothing;
- render: :mod:`~sb3_ablation.study.render` — the report model as markdown, figures and JSON
  (:mod:`~sb3_ablation.study.render.report`, :mod:`~sb3_ablation.study.render.figures`).

The command line (:mod:`sb3_ablation.cli`) sits on top. ``tests/unit/test_layers.py`` checks the order.
"""
