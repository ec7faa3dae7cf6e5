"""rl_zoo3's ExperimentManager with the few hooks this package needs; everything else is rl_zoo3's own code.

The hooks override public methods only (``read_hyperparameters``, ``setup_experiment``, ``create_envs``,
``hyperparameters_optimization``, ``objective``) and read the manager's public attributes. ``objective`` is
rl_zoo3's own for one seed per trial; with several (:attr:`AblationExperimentManager.trial_seeds`), it is
:func:`sb3_ablation.zoo.trials.multi_seed_objective`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import warnings
from typing import Any, TypeVar, cast

import gymnasium as gym
import optuna
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv

from sb3_ablation.common.off_policy import OffPolicyActorCritic
from sb3_ablation.zoo.adapter import ZooExperimentManager
from sb3_ablation.zoo.export import ZOO_ENTRY_ATTR, optuna_storage, to_zoo_entry
from sb3_ablation.zoo.hyperparams import (
    ALGOS,
    OWN_ALGOS,
    ZooConfigError,
    check_env_id,
    check_hyperparams,
    default_config_file,
    drop_null_noise,
    entry_name,
    missing_dependency_message,
    read_entry,
)
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.trials import STUDY_AGGREGATE_ATTR, STUDY_TRIAL_SEEDS_ATTR, multi_seed_objective


class AblationExperimentManager(ZooExperimentManager):
    """
    rl_zoo3's ExperimentManager (same arguments; through :class:`~sb3_ablation.zoo.adapter.ZooExperimentManager`, with
    its ``write_files`` and ``model_hyperparams``), which additionally:

    - reads ``zoo_configs/<algo>.yml`` for our algorithms when no ``--conf-file`` is given;
    - checks the hyperparameters against the algorithm before anything is created (unknown key with the closest
      valid one, wrong value type, each naming the file and entry or ``--hyperparams``);
    - turns a failure while setting up the experiment into one :class:`ZooConfigError` line and removes the run
      folder it had created, so no half-written run is left in the log folder; an env that cannot be made is named
      as the cause (with its ``env_kwargs``), not the config;
    - accepts ``noise_type: null`` (no action noise), as an exported "no noise" trial has it;
    - saves the untuned zoo entry in the Optuna study, for exporting the best trial as a complete entry later;
    - trains :attr:`trial_seeds` seeds per trial, the trial's value being their :attr:`trial_aggregate`
      (:mod:`sb3_ablation.zoo.trials`; one seed: rl_zoo3's own objective), both saved in the study, which a later
      run must then use too.
    """

    #: seeds each trial trains (1: rl_zoo3's objective, one unseeded model)
    trial_seeds: int = 1
    #: the trial's value over its seeds, a key of :data:`sb3_ablation.zoo.trials.AGGREGATES`
    trial_aggregate: str = "mean"

    def __init__(self, args: Any, algo: str, env_id: str, log_folder: str, *positional: Any, **kwargs: Any) -> None:
        if kwargs.get("config") is None:
            kwargs["config"] = default_config_file(algo)
        super().__init__(args, algo, env_id, log_folder, *positional, **kwargs)
        self.env_id = env_id
        self.zoo_entry: dict[str, Any] = {}
        # folders that exist before this run: never removed on failure
        self._existed_before = {path: os.path.exists(path) for path in (log_folder, self.log_path, self.save_path)}

    @property
    def config_source(self) -> str:
        """The config file and entry in use, for messages."""
        return f"{self.config} [{entry_name(self.config, self.env_id)}]"

    def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
        # rl_zoo3 reads (and prints) the entry; errors reading it become one line naming the file
        read_entry(self.algo, self.env_id, self.custom_hyperparams, self.config)
        hyperparams, saved_hyperparams = super().read_hyperparameters()
        if self.algo in ALGOS:
            check_hyperparams(self.algo, hyperparams, self.config_source, override_keys=self.custom_hyperparams or ())
        if self.n_timesteps <= 0 and "n_timesteps" not in hyperparams:
            raise ZooConfigError(f"{self.config_source}: missing hyperparameter 'n_timesteps' (or pass -n)")
        self.zoo_entry = dict(saved_hyperparams)
        # `noise_type: null` is no action noise: without the keys (the saved config keeps them)
        return drop_null_noise(hyperparams), saved_hyperparams

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        try:
            return super().create_envs(n_envs, eval_env=eval_env, no_log=no_log)
        except gym.error.DependencyNotInstalled as error:
            raise ZooConfigError(missing_dependency_message(self.env_id, error)) from error
        except ZooConfigError:
            raise
        except Exception as error:
            if self.verbose >= 2:
                raise
            kwargs = self.eval_env_kwargs if eval_env else self.env_kwargs
            with_kwargs = f" with env_kwargs={kwargs}" if kwargs else ""
            raise ZooConfigError(
                f"could not make the {'evaluation' if eval_env else 'training'} env {self.env_id}{with_kwargs}: "
                f"{type(error).__name__}: {error} (--verbose 2 shows the traceback)"
            ) from error

    def setup_experiment(self) -> tuple[BaseAlgorithm, dict[str, Any]] | None:
        try:
            return super().setup_experiment()
        except ZooConfigError:
            self.remove_run_folder()
            raise
        except Exception as error:
            self.remove_run_folder()
            if self.verbose >= 2:
                raise
            raise ZooConfigError(
                f"{self.config_source}: could not set up {self.algo} on {self.env_id}: {type(error).__name__}: {error}"
                " (--verbose 2 shows the traceback)"
            ) from error

    def remove_run_folder(self) -> None:
        """Remove the run folder, and the log folders this run created if they are empty."""
        if not self._existed_before[self.save_path]:
            shutil.rmtree(self.save_path, ignore_errors=True)
        for folder in (self.log_path, self.log_folder):
            if not self._existed_before[folder]:
                with contextlib.suppress(OSError):
                    os.rmdir(folder)  # only when empty

    def starting(self) -> None:
        """Called once the run is set up, as its training (or its trials) start: a hook (``train`` prints then)."""

    def learn(self, model: BaseAlgorithm) -> None:
        self.starting()
        super().learn(model)

    def hyperparameters_optimization(self) -> None:
        if self.storage is not None and self.study_name is not None:
            try:
                study = optuna.create_study(
                    storage=optuna_storage(self.storage),
                    study_name=self.study_name,
                    load_if_exists=True,
                    direction="maximize",
                )
                self._check_trial_settings(study)
            except ZooConfigError:
                self.remove_run_folder()  # a refused run leaves nothing behind
                raise
            try:
                study.set_user_attr(ZOO_ENTRY_ATTR, to_zoo_entry(self.zoo_entry))
            except (TypeError, ValueError):  # a value that is not plain JSON (e.g. a class given via --hyperparams)
                warnings.warn("the untuned hyperparameters could not be saved in the study; export will read the config")
        self.starting()
        super().hyperparameters_optimization()

    def _check_trial_settings(self, study: optuna.Study) -> None:
        """
        Save the seeds per trial and the aggregate in the study; a study with trials keeps them (a study made before
        they were saved: one seed, the mean).

        :raise ZooConfigError: the study's trials were run with other settings (their values would not compare)
        """
        run = [trial for trial in study.get_trials(deepcopy=False) if trial.state != optuna.trial.TrialState.WAITING]
        stored = (
            study.user_attrs.get(STUDY_TRIAL_SEEDS_ATTR, 1 if run else None),
            study.user_attrs.get(STUDY_AGGREGATE_ATTR, "mean" if run else None),
        )
        if stored != (None, None) and stored != (self.trial_seeds, self.trial_aggregate):
            raise ZooConfigError(
                f"study {self.study_name!r} in {self.storage} has trials over {stored[0]} seed(s) with the {stored[1]} "
                f"as their value, not --trial-seeds {self.trial_seeds} --trial-aggregate {self.trial_aggregate}: "
                "use its settings, or another --study-name"
            )
        study.set_user_attr(STUDY_TRIAL_SEEDS_ATTR, self.trial_seeds)
        study.set_user_attr(STUDY_AGGREGATE_ATTR, self.trial_aggregate)

    def objective(self, trial: optuna.Trial) -> float:
        if self.trial_seeds == 1:
            return super().objective(trial)
        return multi_seed_objective(self, trial, self.trial_seeds, self.trial_aggregate)


class _ModelOnlyManager(AblationExperimentManager):
    """``train``'s experiment manager for :func:`zoo_model`: writes no log folder, config files or Monitor CSV files."""

    write_files = False

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        return super().create_envs(n_envs, eval_env=eval_env, no_log=True)


Model = TypeVar("Model", bound=OffPolicyActorCritic)


def zoo_model(
    algo_class: type[Model],
    env_id: str,
    changes: dict[str, Any],
    seed: int | None = None,
    verbose: int = 0,
    device: Any = "auto",
    tensorboard_log: str | None = None,
    conf_file: str | None = None,
) -> Model:
    """
    The model ``sb3-ablation train --algo <algo> --env <env_id> --seed <seed> --hyperparams <changes>`` builds, by the
    same experiment manager (the global seeding, the entry's reading, checks and preprocessing, the env stack and the
    constructor call), writing nothing; the entry's budget is kept on the model for ``learn()`` without one
    (see :meth:`sb3_ablation.common.off_policy.OffPolicyActorCritic.from_zoo`).

    :param algo_class: ``AblatableTD3`` or ``DDPG``
    :raise TypeError: a class without a zoo config of its own (e.g. ``BatchedTD3``)
    :raise ZooConfigError: unknown env, unknown hyperparameter, a value of the wrong type, an env that cannot be made
    """
    algo = next((name for name in OWN_ALGOS if ALGOS[name] is algo_class), None)
    if algo is None:
        own = " and ".join(ALGOS[name].__name__ for name in OWN_ALGOS)
        raise TypeError(f"{algo_class.__name__}.from_zoo: the zoo configs build {own} only")
    register()
    check_env_id(env_id)
    if seed is not None:
        set_random_seed(seed)  # as train does before it builds the experiment
    manager = _ModelOnlyManager(
        argparse.Namespace(),
        algo,
        env_id,
        log_folder=os.devnull,
        tensorboard_log=tensorboard_log or "",
        hyperparams=dict(changes),
        eval_freq=-1,
        seed=seed,  # (rl_zoo3 passes it on to make_vec_env and the model, which take None)
        verbose=verbose,
        device=device,
        config=conf_file,
    )
    # rl_zoo3 prints the entry it read; verbose 0 is silent, as a constructor is
    printout = contextlib.nullcontext() if verbose > 0 else contextlib.redirect_stdout(io.StringIO())
    with printout:
        built = manager.setup_experiment()
    assert built is not None  # (None only when optimizing)
    model = cast(Model, built[0])
    entry = f"{env_id}'s entry in zoo_configs/{algo}.yml" if conf_file is None else manager.config_source
    if "n_timesteps" in changes:
        source = f"given to from_zoo; the other settings are {entry}'s, with from_zoo's changes"
    else:
        source = f"the n_timesteps of {entry}; the other settings are that entry's too (from_zoo)"
    model._zoo_budget = (int(manager.n_timesteps), source)
    model._zoo_callbacks = tuple(manager.callbacks)
    return model
