"""
What one run is given once its zoo experiment is built: :class:`RunSchedule`, its budget, its evaluations and the
arguments of ``learn()``, read from the experiment once and handed on explicitly (to ``learn()``, to the evaluation
callback and to the record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sb3_ablation.study.plan.records import RunRecord, RunTask
from sb3_ablation.study.run.evaluation import OverestimationEvalCallback
from sb3_ablation.study.run.manager import create_evaluation_envs, evaluation_time_limit
from sb3_ablation.study.run.overestimation import overestimation_method, tail_steps

#: most envs one evaluation runs side by side (its episodes are split evenly over them)
MAX_EVAL_ENVS = 16


def manager_learn_kwargs(manager: Any) -> dict[str, Any]:
    """The ``learn()`` arguments rl_zoo3's ``ExperimentManager.learn`` passes besides the callbacks."""
    if manager.log_interval > -1:
        return {"log_interval": manager.log_interval}
    return {"log_interval": None} if manager.log_interval < -1 else {}


@dataclass(frozen=True)
class RunSchedule:
    """
    The budget and evaluations of one run, and the arguments of its ``learn()``.

    :param n_timesteps: the run's budget: the zoo hyperparameter ``n_timesteps`` as rl_zoo3's experiment read it
    :param eval_freq: steps between evaluations: the task's, else a twentieth of the budget
    :param eval_episodes: episodes per evaluation
    :param eval_envs: envs an evaluation runs its episodes on side by side (the task's, else one per episode, at most
        :data:`MAX_EVAL_ENVS`)
    :param time_limit: ``T``, where an evaluation episode's score ends
        (:func:`~sb3_ablation.study.run.manager.evaluation_time_limit`; ``None``: at its end)
    :param gamma: the model's discount factor (sets ``k``, the steps evaluation episodes run past ``T``)
    :param learn_kwargs: ``learn()``'s arguments besides the budget and callbacks (:func:`manager_learn_kwargs`)
    """

    n_timesteps: int
    eval_freq: int
    eval_episodes: int
    eval_envs: int
    time_limit: int | None
    gamma: float
    learn_kwargs: dict[str, Any]

    @classmethod
    def of(cls, task: RunTask, manager: Any, gamma: float) -> RunSchedule:
        """The schedule of ``task`` in its built experiment ``manager`` (whose model has discount ``gamma``)."""
        n_timesteps = int(manager.n_timesteps)
        return cls(
            n_timesteps=n_timesteps,
            eval_freq=task.eval_freq or max(1, n_timesteps // 20),
            eval_episodes=task.eval_episodes,
            eval_envs=task.eval_envs or min(task.eval_episodes, MAX_EVAL_ENVS),
            time_limit=evaluation_time_limit(task, manager),
            gamma=gamma,
            learn_kwargs=manager_learn_kwargs(manager),
        )

    def make_evaluator(self, manager: Any, seed: int) -> OverestimationEvalCallback:
        """
        The run's evaluation callback, on evaluation envs of ``manager`` whose episodes are scored over their first
        ``T`` steps and run ``k`` steps further for the returns of the overestimation measure.
        """
        envs = create_evaluation_envs(manager, self.eval_envs, self.time_limit, tail_steps(self.gamma))
        return OverestimationEvalCallback(envs, self.eval_freq, self.eval_episodes, seed=seed)

    def note_in(self, record: RunRecord) -> None:
        """Write the run's ``n_timesteps``, ``eval_freq`` and ``overestimation_method`` into its record."""
        record.n_timesteps = self.n_timesteps
        record.eval_freq = self.eval_freq
        record.overestimation_method = overestimation_method(self.gamma, self.time_limit)

    def learn(self, model: Any, callbacks: list[Any], done: int) -> None:
        """
        Train ``model`` to the budget: ``done`` steps of each run are done (0 for a fresh model; a resumed one
        continues its step count).
        """
        model.learn(self.n_timesteps - done, callback=callbacks, reset_num_timesteps=done == 0, **self.learn_kwargs)
