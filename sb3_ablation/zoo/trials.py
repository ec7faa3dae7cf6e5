"""Multi-seed Optuna trials for ``train -optimize --trial-seeds K``: each trial trains K seeds of its hyperparameters.

rl_zoo3 trains one unseeded model per trial, so the best trial is partly the luckiest seed. With ``--trial-seeds K``
(K > 1) a trial of :class:`MultiSeedExperimentManager` instead trains the seeds
``--seed``, ``--seed`` + 1, ..., ``--seed`` + K - 1 (the same seeds in every trial, so that trials differ only in
their hyperparameters), each as rl_zoo3 trains a trial's model: rl_zoo3's sampler, model, evaluation env and
``TrialEvalCallback`` (through :class:`~sb3_ablation.zoo.adapter.ZooExperimentManager`), evaluated every
``n_timesteps / n_evaluations`` steps. After each evaluation of all K seeds, the declared aggregate (:data:`AGGREGATES`)
of their mean rewards is reported to the trial (``trial.report``) and the pruner is asked (``trial.should_prune``), so
pruning sees the aggregate. The trial's value is the aggregate of each seed's last evaluation (rl_zoo3's value of a
one-seed trial).

Two engines:

- **batched**: when the algorithm is ``ablatable_td3`` and :class:`~sb3_ablation.batched.BatchedTD3` takes the
  configuration (one env per seed, no ``VecNormalize``, ``train_freq`` in steps, SB3's plain replay buffer), the K
  models rl_zoo3 would build become one BatchedTD3 (``BatchedTD3.from_agents``) that trains them in one ``learn``; at
  each evaluation, agent k's weights are copied to model k, which its ``TrialEvalCallback`` evaluates. The agents share
  the process's random number streams (statistically, not bitwise, separate runs).
- **in turn** (every other configuration): round-robin. Each round, every model ``learn``\\ s up to the next
  evaluation (``reset_num_timesteps=False``; its learning-rate schedule still sees the whole budget); its
  ``TrialEvalCallback`` evaluates at the same step counts as in a one-seed trial. Each model keeps its own random
  number streams (Python, NumPy, PyTorch), so a seed's run does not depend on K or on the other seeds (with
  ``--n-jobs`` above 1, trials in parallel threads share the process's streams).

Stored on each trial (``trial.user_attrs``, which export never reads): ``trial_seeds`` (the seeds),
``trial_aggregate`` (the aggregate's name), ``trial_engine`` (``batched`` or ``in turn``) and ``seed_values`` (each
seed's last evaluation, in the order of ``trial_seeds``; for a pruned trial, its last evaluation before pruning).
On the study: :data:`~sb3_ablation.zoo.experiment.STUDY_TRIAL_SEEDS_ATTR` and
:data:`~sb3_ablation.zoo.experiment.STUDY_AGGREGATE_ATTR`.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterator, Sequence
from pprint import pprint
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.common.aggregates import iqm
from sb3_ablation.common.random_streams import process_random_state, set_process_random_state
from sb3_ablation.zoo.adapter import zoo_algorithm_class
from sb3_ablation.zoo.experiment import AblationExperimentManager, trial_seeds
from sb3_ablation.zoo.export import AGGREGATE_ATTR, TRIAL_SEEDS_ATTR

if TYPE_CHECKING:
    from sb3_ablation.zoo.adapter import ZooExperimentManager


def _iqm(values: Sequence[float]) -> float:
    return iqm(np.asarray(values, dtype=np.float64))


#: The aggregates a trial's value can be over its seeds: ``mean``, and ``iqm``, the interquartile mean (rliable's:
#: ``scipy.stats.trim_mean(values, 0.25)``, the mean after ``int(0.25 K)`` values are cut from each end; for K < 4
#: it is the mean).
AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": lambda values: float(np.mean(np.asarray(values, dtype=np.float64))),
    "iqm": _iqm,
}
#: Trial user attributes (besides :data:`~sb3_ablation.zoo.export.TRIAL_SEEDS_ATTR` and
#: :data:`~sb3_ablation.zoo.export.AGGREGATE_ATTR`, which export reads).
SEED_VALUES_ATTR = "seed_values"
ENGINE_ATTR = "trial_engine"


def aggregate(name: str, values: Sequence[float]) -> float:
    """
    :param name: a key of :data:`AGGREGATES`
    :param values: one value per seed
    :return: their aggregate
    """
    return AGGREGATES[name](values)


class SeedReports:
    """
    What one seed's ``TrialEvalCallback`` reports to instead of the Optuna trial: its evaluations, in order. It never
    prunes; the trial is pruned on the aggregate (:class:`SeedAggregate`).
    """

    def __init__(self) -> None:
        self.values: list[float] = []

    def report(self, value: float, step: int) -> None:
        """:param value: the mean reward of evaluation ``step`` (1, 2, ...)"""
        if step != len(self.values) + 1:
            raise RuntimeError(f"evaluation {step} reported after {len(self.values)}")
        self.values.append(float(value))

    def should_prune(self) -> bool:
        return False


class SeedAggregate:
    """
    Reports to the trial the aggregate of each evaluation that every seed has made, and asks the pruner.

    :param trial: the Optuna trial
    :param reports: each seed's evaluations
    :param aggregate_name: a key of :data:`AGGREGATES`
    """

    def __init__(self, trial: optuna.Trial, reports: Sequence[SeedReports], aggregate_name: str) -> None:
        self.trial = trial
        self.reports = list(reports)
        self.aggregate_name = aggregate_name
        self.n_reported = 0
        self.pruned = False

    def report_complete(self) -> bool:
        """
        Report the evaluations that all seeds have made since the last call.

        :return: False when the pruner prunes the trial (then :attr:`pruned` is set)
        """
        complete = min(len(report.values) for report in self.reports)
        while self.n_reported < complete:
            values = [report.values[self.n_reported] for report in self.reports]
            self.n_reported += 1
            self.trial.report(aggregate(self.aggregate_name, values), self.n_reported)
            if self.trial.should_prune():
                self.pruned = True
                return False
        return True

    @property
    def last_values(self) -> list[float]:
        """Each seed's last evaluation reported to the trial."""
        return [report.values[self.n_reported - 1] for report in self.reports] if self.n_reported else []


class WholeBudgetProgress(BaseCallback):
    """
    For a model that learns its budget in several ``learn(..., reset_num_timesteps=False)`` calls: the progress that
    schedules (learning rate, ...) see is that of the whole budget, as in one ``learn(total_timesteps)`` call.

    :param total_timesteps: the whole budget
    """

    def __init__(self, total_timesteps: int) -> None:
        super().__init__()
        self.total_timesteps = total_timesteps

    def _on_training_start(self) -> None:
        # SB3's `_setup_learn` sets `_total_timesteps` to the end of this call, before the callbacks start; SB3 computes
        # the progress remaining from it (`_update_current_progress_remaining`), the loop of `learn` from a local copy.
        # (tests/unit/test_zoo_adapter.py checks SB3's use)
        self.model._total_timesteps = self.total_timesteps

    def _on_step(self) -> bool:
        return True


class BatchedSeedEvaluation(BaseCallback):
    """
    For a :class:`~sb3_ablation.batched.BatchedTD3` of the K seeds: every ``eval_freq`` steps, agent k's weights are
    copied to model k, which its ``TrialEvalCallback`` (built with ``eval_freq=1``) evaluates; then the aggregate is
    reported. Stops the training when the trial is pruned.

    :param agents: the seeds' single models (their evaluation copies)
    :param seed_callbacks: each seed's ``TrialEvalCallback``
    :param eval_freq: steps of each agent between evaluations
    :param seed_aggregate: reports the aggregate to the trial
    """

    def __init__(
        self, agents: Sequence[Any], seed_callbacks: Sequence[BaseCallback], eval_freq: int, seed_aggregate: SeedAggregate
    ) -> None:
        super().__init__()
        self.agents = list(agents)
        self.seed_callbacks = list(seed_callbacks)
        self.eval_freq = eval_freq
        self.seed_aggregate = seed_aggregate

    def _on_training_start(self) -> None:
        for agent, callback in zip(self.agents, self.seed_callbacks, strict=True):
            agent.set_logger(self.model.logger)  # (the agents never learn: their callbacks log to the group's logger)
            callback.init_callback(agent)

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq != 0:
            return True
        for index, (agent, callback) in enumerate(zip(self.agents, self.seed_callbacks, strict=True)):
            self.model.copy_agent_to(index, agent)  # type: ignore[attr-defined]
            callback.on_step()
        return self.seed_aggregate.report_complete()


@contextlib.contextmanager
def own_random_streams(states: list[dict[str, Any]], index: int) -> Iterator[None]:
    """Inside, the process's random number streams are ``states[index]``, which then holds where they ended."""
    set_process_random_state(states[index])
    try:
        yield
    finally:
        states[index] = process_random_state()


def _batched_model(algo: str, models: Sequence[BaseAlgorithm], kwargs: dict[str, Any]) -> tuple[Any, str]:
    """The BatchedTD3 of the seeds' models, or None and why not."""
    if zoo_algorithm_class(algo) is not AblatableTD3:
        return None, f"{algo} has no batched engine"
    try:
        return BatchedTD3.from_agents(models, kwargs), ""  # type: ignore[arg-type]
    except ValueError as error:  # a configuration the batched engine does not take (it says which, in one line)
        return None, str(error)


def multi_seed_objective(manager: ZooExperimentManager, trial: optuna.Trial, n_seeds: int, aggregate_name: str) -> float:
    """
    The objective of a trial over ``n_seeds`` seeds (see the module docstring); what rl_zoo3's
    ``ExperimentManager.objective`` does for one unseeded model, done for each seed.

    :param manager: the experiment manager (set up for ``-optimize``)
    :param trial: the Optuna trial
    :param n_seeds: number of seeds (K)
    :param aggregate_name: a key of :data:`AGGREGATES`
    :return: the aggregate of each seed's last evaluation
    :raise optuna.TrialPruned: pruned on the aggregate, or a seed's training failed on its hyperparameters (NaN), as
        rl_zoo3 prunes it
    """
    seeds = trial_seeds(manager.seed, n_seeds)
    trial.set_user_attr(TRIAL_SEEDS_ATTR, seeds)
    trial.set_user_attr(AGGREGATE_ATTR, aggregate_name)
    kwargs, sampled_hyperparams, n_envs = manager.sample_trial(trial)
    eval_freq = manager.trial_eval_freq()
    algo_class = zoo_algorithm_class(manager.algo)
    assert algo_class is not None
    # as rl_zoo3: quiet trials, unless in debug mode (--verbose 2)
    verbose = manager.verbose if manager.verbose >= 2 else 0

    models: list[BaseAlgorithm] = []
    envs: list[Any] = []
    reports = [SeedReports() for _ in seeds]
    seed_callbacks: list[list[BaseCallback]] = []
    eval_callbacks: list[Any] = []
    states: list[dict[str, Any]] = []
    seed_aggregate = SeedAggregate(trial, reports, aggregate_name)
    try:
        for seed, report in zip(seeds, reports, strict=True):
            env = manager.create_envs(n_envs, no_log=True)
            envs.append(env)
            # each model its own copy of stateful arguments (an Ornstein-Uhlenbeck noise)
            model_kwargs = {**kwargs, "action_noise": copy.deepcopy(kwargs.get("action_noise"))}
            models.append(
                algo_class(env=env, tensorboard_log=None, seed=seed, verbose=verbose, device=manager.device, **model_kwargs)
            )
            states.append(process_random_state())  # (the model's seed set the streams)
            eval_env = manager.create_envs(n_envs=manager.n_eval_envs, eval_env=True)
            envs.append(eval_env)
            path = None
            if manager.optimization_log_path is not None:
                path = os.path.join(manager.optimization_log_path, f"trial_{trial.number!s}", f"seed_{seed}")
            callbacks, eval_callback = manager.trial_callbacks(eval_env, report, eval_freq, path)
            seed_callbacks.append(callbacks)
            eval_callbacks.append(eval_callback)

        batched, why_not = _batched_model(manager.algo, models, kwargs) if n_envs == 1 else (None, "n_envs > 1")
        trial.set_user_attr(ENGINE_ATTR, "batched" if batched is not None else "in turn")
        if manager.verbose >= 1 and batched is None:
            print(f"Trial {trial.number}: {n_seeds} seeds in turn ({why_not})")
        try:
            if batched is not None:
                for callback in eval_callbacks:
                    callback.eval_freq = 1  # evaluated when BatchedSeedEvaluation calls it
                callbacks = [callback for callback in seed_callbacks[0] if callback is not eval_callbacks[0]]
                callbacks.append(BatchedSeedEvaluation(models, eval_callbacks, eval_freq, seed_aggregate))
                batched.learn(manager.n_timesteps, callback=callbacks)
            else:
                _learn_in_turn(models, seed_callbacks, states, manager.n_timesteps, eval_freq * n_envs, seed_aggregate)
        except (AssertionError, ValueError) as error:
            # as rl_zoo3: random hyperparameters can generate NaN; such a trial is pruned
            print(error)
            print("============")
            print("Sampled hyperparams:")
            pprint(sampled_hyperparams)
            raise optuna.TrialPruned() from error
    finally:
        for env in envs:  # free the envs, also when the trial failed
            env.close()

    if seed_aggregate.pruned:
        trial.set_user_attr(SEED_VALUES_ATTR, seed_aggregate.last_values)
        raise optuna.TrialPruned()
    values = [float(callback.last_mean_reward) for callback in eval_callbacks]
    trial.set_user_attr(SEED_VALUES_ATTR, values)
    return aggregate(aggregate_name, values)


def _learn_in_turn(
    models: Sequence[BaseAlgorithm],
    seed_callbacks: Sequence[list[BaseCallback]],
    states: list[dict[str, Any]],
    n_timesteps: int,
    eval_steps: int,
    seed_aggregate: SeedAggregate,
) -> None:
    """
    Round-robin: each round, each model learns up to the next evaluation (its own callbacks evaluate it), then the
    aggregate of the evaluations all seeds have made is reported; stops when the trial is pruned.

    :param eval_steps: timesteps between evaluations (all envs together)
    """
    target = 0
    while target < n_timesteps:
        target = min(target + eval_steps, n_timesteps)
        for index, (model, callbacks) in enumerate(zip(models, seed_callbacks, strict=True)):
            # (a rollout can end past the target: the model then learns less the next round)
            if model.num_timesteps < target:
                with own_random_streams(states, index):
                    model.learn(
                        target - model.num_timesteps,
                        callback=[*callbacks, WholeBudgetProgress(n_timesteps)],
                        reset_num_timesteps=False,
                    )
        if not seed_aggregate.report_complete():
            return


class MultiSeedExperimentManager(AblationExperimentManager):
    """
    :class:`~sb3_ablation.zoo.experiment.AblationExperimentManager` whose trials train
    :attr:`~sb3_ablation.zoo.experiment.AblationExperimentManager.trial_seeds` seeds each, the trial's value being
    their :attr:`~sb3_ablation.zoo.experiment.AblationExperimentManager.trial_aggregate`
    (:func:`multi_seed_objective`; one seed: rl_zoo3's own objective).
    """

    def objective(self, trial: optuna.Trial) -> float:
        if self.trial_seeds == 1:
            return super().objective(trial)
        return multi_seed_objective(self, trial, self.trial_seeds, self.trial_aggregate)


__all__ = [
    "AGGREGATES",
    "AGGREGATE_ATTR",
    "ENGINE_ATTR",
    "SEED_VALUES_ATTR",
    "TRIAL_SEEDS_ATTR",
    "BatchedSeedEvaluation",
    "MultiSeedExperimentManager",
    "SeedAggregate",
    "SeedReports",
    "WholeBudgetProgress",
    "aggregate",
    "multi_seed_objective",
    "own_random_streams",
]
