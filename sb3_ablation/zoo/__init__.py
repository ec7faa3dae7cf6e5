"""RL Zoo integration: ``ablatable_td3`` and ``ddpg_scratch`` in rl_zoo3's train / enjoy / record-video / Optuna.

Modules: :mod:`~sb3_ablation.zoo.adapter` (the only module that touches rl_zoo3: its internals, its two patch points),
:mod:`~sb3_ablation.zoo.hyperparams` (zoo configs: load, check, split), :mod:`~sb3_ablation.zoo.registry`
(registration with rl_zoo3), :mod:`~sb3_ablation.zoo.hyperparams_opt` (Optuna samplers),
:mod:`~sb3_ablation.zoo.experiment` (rl_zoo3's ExperimentManager with checks), :mod:`~sb3_ablation.zoo.trials`
(multi-seed Optuna trials), :mod:`~sb3_ablation.zoo.train`,
:mod:`~sb3_ablation.zoo.enjoy`, :mod:`~sb3_ablation.zoo.record_video` and :mod:`~sb3_ablation.zoo.export`
(command lines).
"""
