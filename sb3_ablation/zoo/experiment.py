"""rl_zoo3's ExperimentManager with the few hooks this package needs; everything else is rl_zoo3's own code.

The hooks override public methods only (``read_hyperparameters``, ``setup_experiment``, ``create_envs``,
``hyperparameters_optimization``) and read the manager's public attributes. ``objective`` is rl_zoo3's own, one seed
per trial; :class:`sb3_ablation.zoo.trials.MultiSeedExperimentManager` trains several
(:attr:`AblationExperimentManager.trial_seeds`).

This module never imports :mod:`~sb3_ablation.zoo.trials` (which imports the batched engine):
``AblatableTD3.from_zoo`` imports it, inside the method, and so loads only the zoo's modules beyond what
``import sb3_ablation`` has loaded (``tests/unit/test_layers.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
from typing import Any, TypeVar, cast

import gymnasium as gym
import optuna
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv

from sb3_ablation import __version__
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

#: Study user attribute holding the study's fixed settings (:meth:`AblationExperimentManager.study_settings`).
STUDY_SETTINGS_ATTR = "sb3_ablation:fixed_settings"
#: Study user attributes: the number of seeds per trial and the aggregate (the same for every trial of a study).
STUDY_TRIAL_SEEDS_ATTR = "sb3_ablation:trial_seeds"
STUDY_AGGREGATE_ATTR = "sb3_ablation:trial_aggregate"


def trial_seeds(seed: int, n_seeds: int) -> list[int]:
    """The seeds of every trial: ``seed``, ``seed + 1``, ..., ``seed + n_seeds - 1``."""
    return [seed + index for index in range(n_seeds)]


def _differences(stored: dict[str, Any], settings: dict[str, Any]) -> str:
    """``key stored, here new`` for each setting (and fixed hyperparameter) that differs, in one line."""
    found = []
    for key in sorted(set(stored) | set(settings)):
        old, new = stored.get(key), settings.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            found += [
                f"{name} {old.get(name)!r}, here {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)
            ]
        else:
            found.append(f"{key} {old!r}, here {new!r}")
    return "; ".join(found)


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or in it."""
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


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
    - saves :attr:`trial_seeds` and :attr:`trial_aggregate` in the study, which a later run must then use too (here
      one seed per trial, rl_zoo3's own objective; more: :class:`~sb3_ablation.zoo.trials.MultiSeedExperimentManager`).
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
        except OSError as error:
            self.remove_run_folder()
            if error.filename is None or self.verbose >= 2:
                raise
            # e.g. a log folder that cannot be made: the path and the system's reason, not the config
            path = os.fsdecode(error.filename)
            flag = f" (-f {self.log_folder})" if _inside(path, self.log_folder) else ""
            raise ZooConfigError(f"cannot create {path}{flag}: {error.strerror or type(error).__name__}") from error
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
        fresh = False
        if self.storage is not None and self.study_name is not None:
            verbosity = optuna.logging.get_verbosity()
            optuna.logging.set_verbosity(optuna.logging.WARNING)  # ("Using an existing study": said below if it matters)
            try:
                storage = optuna_storage(self.storage)
                fresh = self.study_name not in {summary.study_name for summary in optuna.get_all_study_summaries(storage)}
                study = optuna.create_study(
                    storage=storage,
                    study_name=self.study_name,
                    load_if_exists=True,
                    direction="maximize",
                )
                self._check_study_settings(study)
            except ZooConfigError:
                self.remove_run_folder()  # a refused run leaves nothing behind
                raise
            finally:
                optuna.logging.set_verbosity(verbosity)
        self.starting()
        # rl_zoo3 loads the study created above: "Using an existing study" is said only of one that existed before
        quiet = FreshStudyFilter() if fresh else None
        study_logger = logging.getLogger("optuna.study.study")
        if quiet is not None:
            study_logger.addFilter(quiet)
        try:
            super().hyperparameters_optimization()
        finally:
            if quiet is not None:
                study_logger.removeFilter(quiet)

    def study_settings(self) -> dict[str, Any]:
        """
        What every trial of an Optuna study shares and its value depends on, besides the tuned hyperparameters (plain
        JSON, as the study stores it): the algorithm, the env, the fixed hyperparameters (the entry with
        ``--hyperparams``, its ``n_timesteps`` the budget), the seeds of each trial (their number when one unseeded
        run), the aggregate over them, the evaluations, and this package's version.
        """
        fixed = {**self.zoo_entry, "n_timesteps": int(self.n_timesteps)}
        settings = {
            "algo": self.algo,
            "env": self.env_id,
            "fixed_hyperparams": to_zoo_entry(fixed),
            "trial_seeds": trial_seeds(self.seed, self.trial_seeds) if self.trial_seeds > 1 else 1,
            "trial_aggregate": self.trial_aggregate,
            "n_evaluations": self.n_evaluations,
            "eval_episodes": self.n_eval_episodes,
            "version": __version__,
        }
        return json.loads(json.dumps(settings, default=repr))  # (as the storage gives it back: lists, not tuples)

    def _check_study_settings(self, study: optuna.Study) -> None:
        """
        Save the study's fixed settings (:meth:`study_settings`) and the entry that export reads; a study that has
        them keeps them (a study made before they were saved: the seeds per trial and the aggregate, one seed and the
        mean if none were saved).

        :raise ZooConfigError: the study's trials were run with other fixed settings (their values would not compare)
        """
        settings = self.study_settings()
        stored = study.user_attrs.get(STUDY_SETTINGS_ATTR)
        where = f"study {self.study_name!r} in {self.storage}"
        if stored is not None and stored != settings:
            seeds = stored.get("trial_seeds")
            # (without --seed, train draws one: the study's seeds are then given again with --seed)
            again = ""
            if isinstance(seeds, list) and seeds and seeds != settings["trial_seeds"]:
                again = f" (its seeds: --seed {seeds[0]} --trial-seeds {len(seeds)})"
            raise ZooConfigError(
                f"{where} was tuned with other fixed settings ({_differences(stored, settings)}): its trials would not "
                f"compare with these; pass a new --study-name (e.g. {self.study_name}_2), or the study's settings{again}"
            )
        run = [trial for trial in study.get_trials(deepcopy=False) if trial.state != optuna.trial.TrialState.WAITING]
        if stored is None and run:  # a study saved by an earlier version of this package
            earlier = (study.user_attrs.get(STUDY_TRIAL_SEEDS_ATTR, 1), study.user_attrs.get(STUDY_AGGREGATE_ATTR, "mean"))
            if earlier != (self.trial_seeds, self.trial_aggregate):
                raise ZooConfigError(
                    f"{where} has trials over {earlier[0]} seed(s) with the {earlier[1]} as their value, not "
                    f"--trial-seeds {self.trial_seeds} --trial-aggregate {self.trial_aggregate}: use its settings, or "
                    f"a new --study-name (e.g. {self.study_name}_2)"
                )
        study.set_user_attr(STUDY_SETTINGS_ATTR, settings)
        study.set_user_attr(STUDY_TRIAL_SEEDS_ATTR, self.trial_seeds)
        study.set_user_attr(STUDY_AGGREGATE_ATTR, self.trial_aggregate)
        # what export puts under the best trial's parameters: the entry the trials ran with, budget included
        study.set_user_attr(ZOO_ENTRY_ATTR, settings["fixed_hyperparams"])

    def objective(self, trial: optuna.Trial) -> float:
        if self.trial_seeds != 1:
            raise ValueError(
                f"trial_seeds {self.trial_seeds}: {type(self).__name__} trains one seed per trial; several need "
                "sb3_ablation.zoo.trials.MultiSeedExperimentManager"
            )
        return super().objective(trial)


class _ModelOnlyManager(AblationExperimentManager):
    """``train``'s experiment manager for :func:`zoo_model`: writes no log folder, config files or Monitor CSV files."""

    write_files = False

    def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> VecEnv:
        return super().create_envs(n_envs, eval_env=eval_env, no_log=True)


Model = TypeVar("Model", bound=OffPolicyActorCritic)


class FreshStudyFilter(logging.Filter):
    """Drops Optuna's "Using an existing study" of a study this run has just created."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Using an existing study")


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
    config = conf_file or default_config_file(algo)
    shown = f"zoo_configs/{algo}.yml" if conf_file is None else conf_file
    own_entry = entry_name(config, env_id) != "default"
    if not own_entry and "n_timesteps" not in changes:
        # the default entry is a template (rl-zoo's 1M steps for an unknown task), not a budget tuned for this env
        raise ZooConfigError(
            f"{env_id} has no entry in {shown}, only its 'default' template: pass n_timesteps=... to train with the "
            f"template's settings ({algo_class.__name__}.from_zoo({env_id!r}, n_timesteps=100000)), or build the "
            "model with the constructor"
        )
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
    entry = f"{env_id}'s entry in {shown}" if own_entry else f"the 'default' entry of {shown}"
    if "n_timesteps" in changes:
        source = f"given to from_zoo; the other settings are those of {entry}, with from_zoo's changes"
    else:
        source = f"the n_timesteps of {entry}; the other settings are that entry's too (from_zoo)"
    model._zoo_budget = (int(manager.n_timesteps), source)
    model._zoo_callbacks = tuple(manager.callbacks)
    return model
