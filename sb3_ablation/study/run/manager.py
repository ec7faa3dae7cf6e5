"""
The rl_zoo3 experiment of one run: ``sb3-ablation train``'s experiment manager, writing no log folder, with the
study's evaluation envs and, for a run that takes checkpoints, training envs that note their episodes.
"""

# sb3_ablation.zoo (rl_zoo3, heavy) is imported in the functions that build a run: the study's runner imports this
# module before it checks the study's envs, whose one-line errors should not wait for rl_zoo3.

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.checkpointing import record_episodes
from sb3_ablation.study.run.overestimation import ReturnPastTimeLimit


def _zoo_manager_class() -> type:
    from sb3_ablation.zoo.experiment import AblationExperimentManager

    class StudyRunManager(AblationExperimentManager):
        """``train``'s experiment manager, writing no log folder (the study keeps its own files)."""

        def create_log_folder(self) -> None:
            pass

        def _save_config(self, saved_hyperparams: dict[str, Any]) -> None:
            pass

        #: T of the evaluation episodes' score (:class:`~sb3_ablation.study.run.overestimation.ReturnPastTimeLimit`)
        eval_time_limit: int | None = None
        #: the training envs are wrapped last in :class:`~sb3_ablation.study.run.checkpointing.EpisodeRecorder`
        record_episodes: bool = False

        def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> Any:
            outer: Callable[..., gym.Env]
            if eval_env and self.eval_time_limit is not None:
                outer = functools.partial(_wrap_evaluation_env, time_limit=self.eval_time_limit)
            elif not eval_env and self.record_episodes:
                outer = record_episodes
            else:
                return super().create_envs(n_envs, eval_env=eval_env, no_log=True)  # no Monitor CSV files
            # rl_zoo3 takes each env's wrapper from self.env_wrapper only (and puts it outside Monitor): for these envs
            # the zoo's own wrapper goes inside ours, for this call
            zoo_wrapper = self.env_wrapper
            self.env_wrapper = functools.partial(outer, inner=zoo_wrapper)
            try:
                return super().create_envs(n_envs, eval_env=eval_env, no_log=True)
            finally:
                self.env_wrapper = zoo_wrapper

    return StudyRunManager


def _wrap_evaluation_env(env: gym.Env, inner: Callable[[gym.Env], gym.Env] | None, time_limit: int) -> gym.Env:
    return ReturnPastTimeLimit(inner(env) if inner is not None else env, time_limit)


def make_manager(task: RunTask, trained_agent: str = "") -> Any:
    """
    The rl_zoo3 experiment of one run, as ``sb3-ablation train --algo <algo> --env <env> --seed <seed>
    --hyperparams <the study's resolved hyperparameters> --eval-freq -1`` sets it up; its training envs note their
    episodes (for the checkpoints) when the run records and takes checkpoints (``task.record`` and
    ``task.checkpoint_freq``).

    :param task: see :func:`sb3_ablation.study.plan.config.make_tasks`
    :param trained_agent: a checkpoint's ``model.zip`` to continue from (rl_zoo3's ``--trained-agent``)
    """
    from sb3_ablation.zoo.registry import register

    register()
    module, _, env_name = task.env.rpartition(":")
    if module:
        importlib.import_module(module)
    manager = _zoo_manager_class()(
        argparse.Namespace(),
        task.algo,
        env_name,
        log_folder=os.devnull,
        hyperparams=copy.deepcopy(task.hyperparams),
        trained_agent=trained_agent,
        eval_freq=-1,
        seed=task.seed,
        log_interval=-1,
        verbose=0,
        device=task.device,
        tensorboard_log=task.tensorboard_log or "",
    )
    manager.record_episodes = bool(task.record and task.checkpoint_freq)
    return manager


def evaluation_time_limit(task: RunTask, manager: Any) -> int | None:
    """
    ``T``, the step at which an evaluation episode's score ends: the study's ``eval_max_episode_steps``, else the
    env's own time limit (``max_episode_steps`` of its env_kwargs or of its registration; ``None`` if it has none).
    """
    return (
        task.eval_max_episode_steps
        or manager.env_kwargs.get("max_episode_steps")
        or gym.spec(manager.env_name.gym_id).max_episode_steps
    )


def create_evaluation_envs(manager: Any, n_envs: int, time_limit: int | None, tail: int | None) -> Any:
    """
    The evaluation envs of a run, as train's EvalCallback gets them (no reward normalization, frozen statistics), with
    the training env's env_kwargs; with a time limit ``T`` each env runs ``tail`` steps past it and scores ``T``
    (:class:`~sb3_ablation.study.run.overestimation.ReturnPastTimeLimit`).
    """
    manager.eval_env_kwargs = dict(manager.env_kwargs)
    if time_limit is not None:
        manager.eval_env_kwargs["max_episode_steps"] = time_limit + (tail or 0)
        manager.eval_time_limit = time_limit
    return manager.create_envs(n_envs, eval_env=True)
