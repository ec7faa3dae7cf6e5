"""The one module of ``sb3_ablation.zoo``, ``train``, ``enjoy`` and ``cli`` that touches rl_zoo3 (checked: 2.9.2).

Every other module reaches rl_zoo3 through the functions here (``tests/unit/test_zoo_adapter.py`` checks that no other
module imports it, and fails loudly when rl_zoo3 changes what is used here). What is used, by kind:

Public API, as rl_zoo3 documents it: :class:`ExperimentManager` (subclassed, and built with its constructor; its
public methods and attributes), ``get_model_path``, the TD3 sampler and off-policy converter of
``rl_zoo3.hyperparams_opt``, the ``train()`` / ``enjoy()`` functions and the ``record_video`` script.

Private names, read, called or extended but never replaced: ``ExperimentManager._preprocess_hyperparams`` and
``_preprocess_action_noise`` (rl_zoo3's hyperparameter preprocessing exists only as these methods, see
:func:`preprocess_hyperparams`); ``_save_config`` and ``_hyperparams``, behind the public ``write_files`` and
``model_hyperparams`` of :class:`ZooExperimentManager`; and the module namespaces in which rl_zoo3 evaluates
expressions: config values in ``rl_zoo3.exp_manager``'s, command-line ``key:value`` items in ``rl_zoo3.utils``' (its
``StoreDict``).

Mirrored code: the first part of ``ExperimentManager.objective`` (the sampling of a trial's hyperparameters, the
evaluation frequency, the trial's callbacks), in :meth:`ZooExperimentManager.sample_trial`,
:meth:`~ZooExperimentManager.trial_eval_freq` and :meth:`~ZooExperimentManager.trial_callbacks`, for the multi-seed
objective of :mod:`sb3_ablation.zoo.trials`; rl_zoo3's ``TrialEvalCallback`` and ``get_callback_list`` are used as
they are (the contract test holds the hash of rl_zoo3's ``objective``).

Patch points: two, each marked ``PATCH POINT`` below.

1. Registration (:func:`register_algorithm`): our algorithms, samplers and converters are added as new keys to the
   tables rl_zoo3 reads at call time (``rl_zoo3.utils.ALGOS``, ``rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER`` and
   ``HYPERPARAMS_CONVERTER``), the way rl-baselines3-zoo adds an algorithm; an existing key is never replaced.
2. Command arguments (:func:`_zoo_parse_args`): rl_zoo3's ``train()`` and ``enjoy()`` take no argument (neither
   parsed arguments, nor a parser, nor an argv): each builds its ``argparse`` parser inside and calls its
   ``parse_args()`` on ``sys.argv``, first thing; ``record_video`` is a script (its code runs under
   ``if __name__ == "__main__"``). So there is no way to hand rl_zoo3 our arguments, nor to get its options, but to
   be there when it parses: while one of them runs, ``argparse.ArgumentParser.parse_args`` is replaced, so that
   building our parser captures rl_zoo3's (stopped before anything else runs: :func:`zoo_command_parser`), and
   ``enjoy`` / ``record_video`` parse the argv we checked (:func:`run_zoo_command`). The replacement acts only in the
   thread that installed it and only on a parse of ``sys.argv`` (no arguments given); any other parse, in any thread,
   is argparse's own; one thread at a time installs it (a lock), so two commands in two threads cannot leave it
   installed. ``sys.argv`` and ``ArgumentParser.error`` are left alone.

rl_zoo3's ``train()`` is not called: :func:`run_train` is its body after the parsing (2.9.2), with the experiment
manager class as an argument, which rl_zoo3's own function does not take.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import inspect
import io
import os
import runpy
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import rl_zoo3.callbacks
import rl_zoo3.exp_manager
import rl_zoo3.hyperparams_opt
import rl_zoo3.utils
import stable_baselines3 as sb3
import torch as th
from huggingface_sb3 import EnvironmentName
from rl_zoo3.exp_manager import ExperimentManager
from rl_zoo3.hyperparams_opt import convert_offpolicy_params, sample_td3_params
from stable_baselines3 import HerReplayBuffer
from stable_baselines3.common.utils import set_random_seed

from sb3_ablation.common.arguments import OneLineArgumentParser

#: The rl_zoo3 version this module was checked against (its internals, the body of ``train()``, the parsers).
RL_ZOO3_CHECKED = "2.9.2"
#: The rl_zoo3 commands whose parser :func:`zoo_command_parser` captures.
ZooCommand = Literal["train", "enjoy", "record_video"]
#: A registered env id for managers built only to preprocess hyperparameters (see :func:`preprocess_hyperparams`).
PLACEHOLDER_ENV_ID = "Pendulum-v1"

__all__ = [
    "RL_ZOO3_CHECKED",
    "ExperimentManager",
    "OneLineArgumentParser",
    "ZooExperimentManager",
    "convert_offpolicy_params",
    "convert_trial_params",
    "evaluate_command_line_value",
    "evaluate_config_value",
    "find_trained_model",
    "preprocess_hyperparams",
    "read_zoo_entry",
    "register_algorithm",
    "register_zoo_envs",
    "run_train",
    "run_zoo_command",
    "sample_td3_params",
    "zoo_algorithm_class",
    "zoo_algorithm_names",
    "zoo_command_parser",
    "zoo_default_config",
]


# --- algorithms -------------------------------------------------------------------------------------------------


def zoo_algorithm_names() -> list[str]:
    """The algorithm names rl_zoo3 knows now (SB3's, sb3-contrib's, and ours once registered)."""
    return list(rl_zoo3.utils.ALGOS)


def zoo_algorithm_class(algo: str) -> type | None:
    """The class rl_zoo3 builds for ``algo``, or None."""
    return rl_zoo3.utils.ALGOS.get(algo)


def register_algorithm(name: str, algo_class: type, sampler: Callable[..., dict[str, Any]], converter: Callable) -> None:
    """
    Add an algorithm to rl_zoo3's algorithm, sampler and converter tables (idempotent for the same class).

    :raise RuntimeError: rl_zoo3 has ``name`` for another class already (an existing key is never replaced)
    """
    # PATCH POINT 1 (checked against rl_zoo3 2.9.2): rl_zoo3 reads these three module-level tables at call time
    # (train/enjoy/record_video: ALGOS; ExperimentManager.objective: HYPERPARAMS_SAMPLER; load_trial and export:
    # HYPERPARAMS_CONVERTER) and takes no algorithm as an argument; new keys are added, existing ones kept.
    registered = rl_zoo3.utils.ALGOS.get(name, algo_class)
    if registered is not algo_class:
        raise RuntimeError(f"rl_zoo3 already has an algorithm called {name!r} ({registered!r}); not replacing it")
    rl_zoo3.utils.ALGOS[name] = algo_class
    rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER[name] = sampler
    rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER[name] = converter


def convert_trial_params(algo: str, params: dict[str, Any]) -> dict[str, Any]:
    """An Optuna trial's parameters as zoo hyperparameters, with rl_zoo3's converter of ``algo``."""
    return rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER[algo](dict(params))


def register_zoo_envs() -> None:
    """Register rl_zoo3's own environments with Gymnasium (as rl_zoo3's commands do on import)."""
    # importing the module registers the envs: the import is what this function does
    import rl_zoo3.import_envs  # noqa: F401


class ZooExperimentManager(ExperimentManager):
    """
    rl_zoo3's ExperimentManager (same arguments) with two public handles on what rl_zoo3 keeps private:

    - ``write_files = False``: the run writes no log folder and no ``config.yml`` / ``args.yml`` / ``command.txt``
      (rl_zoo3 writes them in ``create_log_folder`` and the private ``_save_config``), e.g. for a study's runs;
    - :attr:`model_hyperparams`: the constructor arguments that ``setup_experiment`` built the model with (rl_zoo3's
      private ``_hyperparams``).
    """

    #: write the run's folder and config files (rl_zoo3's behaviour); False: write nothing
    write_files: bool = True

    @property
    def model_hyperparams(self) -> dict[str, Any]:
        """The model's constructor arguments after preprocessing (set by ``setup_experiment``)."""
        return self._hyperparams

    def sample_trial(self, trial: Any) -> tuple[dict[str, Any], dict[str, Any], int]:
        """
        ``ExperimentManager.objective``'s sampling (rl_zoo3 2.9.2, line for line): the config's preprocessed
        hyperparameters with the trial's sampled values on top, by rl_zoo3's sampler of the algorithm.

        :param trial: the Optuna trial
        :return: ``(model_kwargs, sampled_hyperparams, n_envs)``, ``n_envs`` being the number of training envs
        """
        kwargs = self._hyperparams.copy()
        n_envs = 1 if self.algo == "ars" else self.n_envs
        additional_args = {
            "using_her_replay_buffer": kwargs.get("replay_buffer_class") == HerReplayBuffer,
            "her_kwargs": kwargs.get("replay_buffer_kwargs", {}),
        }
        sampled_hyperparams = rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER[self.algo](
            trial, self.n_actions, n_envs, additional_args
        )
        kwargs.update(sampled_hyperparams)
        return kwargs, sampled_hyperparams, n_envs

    def trial_eval_freq(self) -> int:
        """``ExperimentManager.objective``'s evaluation frequency of a trial, in steps of the ``VecEnv``."""
        optuna_eval_freq = int(self.n_timesteps / self.n_evaluations)
        return max(optuna_eval_freq // self.n_envs, 1)

    def trial_callbacks(self, eval_env: Any, trial: Any, eval_freq: int, path: str | None) -> tuple[list[Any], Any]:
        """
        ``ExperimentManager.objective``'s callbacks: those of the config (``callback:``, new instances) and rl_zoo3's
        ``TrialEvalCallback``.

        :param eval_env: the evaluation ``VecEnv``
        :param trial: what the evaluation callback reports to (``report(value, step)``, ``should_prune()``)
        :param eval_freq: evaluate every ``eval_freq`` calls of the callback
        :param path: folder for the evaluations and best model (``None``: not written)
        :return: ``(callbacks, eval_callback)``, the latter last in the former
        """
        callbacks = rl_zoo3.utils.get_callback_list({"callback": self.specified_callbacks})
        eval_callback = rl_zoo3.callbacks.TrialEvalCallback(
            eval_env,
            trial,
            best_model_save_path=path,
            log_path=path,
            n_eval_episodes=self.n_eval_episodes,
            eval_freq=eval_freq,
            deterministic=self.deterministic_eval,
        )
        callbacks.append(eval_callback)
        return callbacks, eval_callback

    def create_log_folder(self) -> None:
        if self.write_files:
            super().create_log_folder()

    def _save_config(self, saved_hyperparams: dict[str, Any]) -> None:
        if self.write_files:
            super()._save_config(saved_hyperparams)


# --- configs and hyperparameters ---------------------------------------------------------------------------------


def zoo_default_config(algo: str) -> str:
    """The config rl_zoo3 reads for ``algo`` without ``--conf-file``: ``hyperparams/<algo>.yml`` of its package."""
    package = Path(rl_zoo3.exp_manager.__file__).parent
    root = package if (package / "hyperparams").is_dir() else package.parent  # as ExperimentManager.__init__ finds it
    return str(root / "hyperparams" / f"{algo}.yml")


def evaluate_config_value(text: str) -> Any:
    """Evaluate a config string (``policy_kwargs: "dict(...)"``) as rl_zoo3's ExperimentManager does."""
    return eval(text, vars(rl_zoo3.exp_manager))


def evaluate_command_line_value(text: str) -> Any:
    """Evaluate the value of a ``key:value`` command-line item as rl_zoo3's ``StoreDict`` does."""
    return eval(text, vars(rl_zoo3.utils))


def _reading_manager(algo: str, env_id: str, overrides: dict[str, Any] | None, conf_file: str | None) -> ExperimentManager:
    """An ExperimentManager built only to read or preprocess hyperparameters: it creates no folder."""
    return ExperimentManager(
        argparse.Namespace(),
        algo,
        env_id,
        log_folder=os.devnull,
        hyperparams=copy.deepcopy(overrides),
        config=conf_file,
        verbose=0,
    )


def read_zoo_entry(algo: str, env_id: str, overrides: dict[str, Any] | None, conf_file: str) -> Any:
    """
    The entry rl_zoo3 reads for ``env_id`` from ``conf_file`` (its own entry or ``default``), overrides applied,
    with ``ExperimentManager.read_hyperparameters`` (its printing swallowed). rl_zoo3's exceptions pass through.
    """
    manager = _reading_manager(algo, env_id, overrides, conf_file)
    with contextlib.redirect_stdout(io.StringIO()):  # rl_zoo3 prints the entry; the caller decides what to show
        hyperparams, _ = manager.read_hyperparameters()
    return hyperparams


def preprocess_hyperparams(
    hyperparams: dict[str, Any], env: Any, env_id: str | None = None
) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """
    rl_zoo3's preprocessing of a zoo entry, through an ExperimentManager built with its constructor: schedules,
    ``policy_kwargs`` strings, wrappers, callbacks, then the action noise sized for ``env``'s action space.

    :param hyperparams: a zoo entry (modified: pass a copy)
    :param env: anything with the ``action_space`` the noise is sized for
    :param env_id: the env's registered id; the manager reads no env id while preprocessing, so without one it is
        built for :data:`PLACEHOLDER_ENV_ID` (its constructor needs a registered id)
    :return: ``(model_kwargs, n_timesteps, settings)``: ``settings`` has the manager's ``n_envs``, ``normalize``,
        ``normalize_kwargs``, ``frame_stack``, ``env_kwargs``, ``monitor_kwargs`` and the preprocessed
        ``env_wrapper``, ``vec_env_wrapper`` and ``callbacks``
    """
    manager = _reading_manager("sb3_ablation", env_id or PLACEHOLDER_ENV_ID, None, None)
    with contextlib.redirect_stdout(io.StringIO()):
        # rl_zoo3 has its preprocessing only as these two (private) methods, which setup_experiment calls in this order
        model_kwargs, env_wrapper, callbacks, vec_env_wrapper = manager._preprocess_hyperparams(hyperparams)
        model_kwargs = manager._preprocess_action_noise(model_kwargs, {}, env)
    settings = {
        "n_envs": manager.n_envs,
        "normalize": manager.normalize,
        "normalize_kwargs": manager.normalize_kwargs,
        "env_wrapper": env_wrapper,
        "vec_env_wrapper": vec_env_wrapper,
        "frame_stack": manager.frame_stack,
        "env_kwargs": manager.env_kwargs,
        "monitor_kwargs": manager.monitor_kwargs,
        "callbacks": callbacks,
    }
    return model_kwargs, int(manager.n_timesteps), settings


def find_trained_model(
    exp_id: int,
    folder: str,
    algo: str,
    env_id: str,
    load_best: bool = False,
    load_checkpoint: int | None = None,
    load_last_checkpoint: bool = False,
) -> str:
    """
    The model file ``enjoy`` / ``record_video`` load, found with rl_zoo3's own lookup (``get_model_path``).

    :raise AssertionError, ValueError: as rl_zoo3 does (no run folder; no model file)
    """
    with contextlib.redirect_stdout(io.StringIO()):
        _, model_path, _ = rl_zoo3.utils.get_model_path(
            exp_id,
            folder,
            algo,
            EnvironmentName(env_id),
            load_best,
            None if load_checkpoint is None else str(load_checkpoint),  # (in a file name)
            load_last_checkpoint,
        )
    return model_path


# --- command lines -----------------------------------------------------------------------------------------------


class _ParserBuilt(Exception):
    """Raised by the replaced ``parse_args`` to hand over the parser an rl_zoo3 command built."""

    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__("rl_zoo3 command parser captured")
        self.parser = parser


#: Held while ``argparse.ArgumentParser.parse_args`` is replaced (re-entrant: a command may build a parser inside).
_PARSE_ARGS_LOCK = threading.RLock()


@contextlib.contextmanager
def _zoo_parse_args(argv: list[str] | None) -> Iterator[None]:
    """
    Inside, ``ArgumentParser.parse_args()`` called without arguments in this thread (as rl_zoo3's commands call it)
    raises :class:`_ParserBuilt` with its parser when ``argv`` is None, and parses ``argv`` otherwise; other threads,
    and calls with arguments, parse as usual.
    """
    # PATCH POINT 2 (checked against rl_zoo3 2.9.2): train() and enjoy() (rl_zoo3/train.py, rl_zoo3/enjoy.py) and the
    # record_video script build an argparse parser inside and call its parse_args() with no arguments, first thing,
    # reading sys.argv; neither the parser nor the arguments can be passed in (train() and enjoy() take no argument).
    # Restored on exit, also on error; the lock keeps another thread from saving our replacement as "the original".
    with _PARSE_ARGS_LOCK:
        original = argparse.ArgumentParser.parse_args
        owner = threading.get_ident()

        def parse_args(parser: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
            if args is not None or threading.get_ident() != owner:  # not rl_zoo3's parse of sys.argv in this thread
                return original(parser, args, namespace)
            if argv is None:
                raise _ParserBuilt(parser)
            return original(parser, argv, namespace)

        argparse.ArgumentParser.parse_args = parse_args  # type: ignore[assignment,method-assign]
        try:
            yield
        finally:
            argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]


def _call_zoo_command(command: ZooCommand) -> None:
    # only the command that runs is imported (rl_zoo3.enjoy alone takes ~0.1 s)
    if command == "train":
        import rl_zoo3.train

        rl_zoo3.train.train()
    elif command == "enjoy":
        import rl_zoo3.enjoy

        rl_zoo3.enjoy.enjoy()
    else:  # rl_zoo3 ships record_video as a script (its code runs under `if __name__ == "__main__"`)
        runpy.run_module("rl_zoo3.record_video", run_name="__main__")


def zoo_command_parser(command: ZooCommand) -> argparse.ArgumentParser:
    """
    The parser rl_zoo3's ``command`` builds (its options, types, defaults and help), captured before it parses
    anything; the command does not run.

    :raise RuntimeError: the command did not build and use a parser as rl_zoo3 2.9.2 does
    """
    with _zoo_parse_args(None):
        try:
            _call_zoo_command(command)
        except _ParserBuilt as built:
            return built.parser
    raise RuntimeError(f"rl_zoo3's {command} did not parse its arguments as in rl_zoo3 {RL_ZOO3_CHECKED}")


def run_zoo_command(command: ZooCommand, argv: list[str]) -> None:
    """Run rl_zoo3's ``enjoy`` or ``record_video`` on ``argv`` (``sys.argv`` is left as it is)."""
    with _zoo_parse_args(list(argv)):
        _call_zoo_command(command)


def _action_arguments(action: argparse.Action) -> tuple[Any, dict[str, Any]]:
    """The ``add_argument`` ``action`` and keywords that rebuild ``action``; rl_zoo3's ``StoreDict`` becomes a plain
    ``store`` of the ``key:value`` strings (evaluated later with one-line errors, see :func:`evaluate_command_line_value`)."""
    action_class: Any = type(action)
    if isinstance(action, rl_zoo3.utils.StoreDict):
        action_class = "store"
    accepted = inspect.signature(argparse.Action if action_class == "store" else action_class).parameters
    keywords = {"dest": action.dest, "default": action.default, "required": action.required, "help": action.help}
    for name in ("nargs", "const", "type", "choices", "metavar"):
        if name in accepted:
            keywords[name] = getattr(action, name)
    return action_class, keywords


def command_parser(
    command: ZooCommand,
    prog: str,
    description: str | None = None,
    changes: dict[str, dict[str, Any]] | None = None,
) -> OneLineArgumentParser:
    """
    Our parser of an rl_zoo3 command: rl_zoo3's options (rebuilt from :func:`zoo_command_parser`, same names, types,
    defaults and help) on a :class:`OneLineArgumentParser`.

    :param command: the rl_zoo3 command
    :param prog: the name in usage lines and errors
    :param description: the ``--help`` text above the options
    :param changes: ``dest`` -> ``add_argument`` keywords that replace rl_zoo3's (e.g. another default or help)
    """
    parser = OneLineArgumentParser(prog=prog, description=description)
    # (argparse lists a parser's options only in its `_actions`, which its own `parents=` copying reads too)
    for action in zoo_command_parser(command)._actions:
        if "-h" in action.option_strings:
            continue  # our parser has its own --help
        action_class, keywords = _action_arguments(action)
        keywords.update((changes or {}).get(action.dest, {}))
        parser.add_argument(*action.option_strings, action=action_class, **keywords)
    return parser


def zoo_argument_names(command: ZooCommand) -> list[str]:
    """The ``dest`` of every option of rl_zoo3's ``command`` (what its code reads from ``args``)."""
    return [action.dest for action in zoo_command_parser(command)._actions if "-h" not in action.option_strings]


def run_train(args: argparse.Namespace, manager_class: type[ExperimentManager] = ExperimentManager) -> None:
    """
    rl_zoo3's ``train()`` after its ``parse_args()`` (rl_zoo3 2.9.2, line for line), with ``manager_class`` where
    rl_zoo3 names ``ExperimentManager``. The env id, the trained agent and the algorithm are checked by the caller.

    :param args: the namespace rl_zoo3's train parser makes (every option of :func:`zoo_argument_names`, with the
        ``StoreDict`` options as dicts or None); written to the run's ``args.yml`` as rl_zoo3 writes it
    :param manager_class: :class:`ExperimentManager` or a subclass, built with rl_zoo3's arguments
    """
    register_zoo_envs()
    for env_module in args.gym_packages:
        importlib.import_module(env_module)

    env_id = args.env
    uuid_str = f"_{uuid.uuid4()}" if args.uuid else ""
    if args.seed < 0:
        # Seed but with a random one
        args.seed = np.random.randint(2**32 - 1, dtype="int64").item()

    set_random_seed(args.seed)

    # Setting num threads to 1 makes things run faster on cpu
    if args.num_threads > 0:
        if args.verbose > 1:
            print(f"Setting torch.num_threads to {args.num_threads}")
        th.set_num_threads(args.num_threads)

    print("=" * 10, env_id, "=" * 10)
    print(f"Seed: {args.seed}")

    run = None
    if args.track:
        wandb = importlib.import_module("wandb")  # (an optional dependency, checked by the caller)

        # Save command used for training in wandb too
        args.command = " ".join(sys.orig_argv)

        run_name = f"{args.env}__{args.algo}__{args.seed}__{int(time.time())}"
        tags = [*args.wandb_tags, f"v{sb3.__version__}"]
        run = wandb.init(
            name=run_name,
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            group=args.wandb_group,
            tags=tags,
            config=vars(args),
            sync_tensorboard=True,  # auto-upload sb3's tensorboard metrics
            monitor_gym=True,  # auto-upload the videos of agents playing the game
            save_code=True,  # optional
        )
        args.tensorboard_log = f"runs/{run_name}"

    exp_manager = manager_class(
        args,
        args.algo,
        env_id,
        args.log_folder,
        args.tensorboard_log,
        args.n_timesteps,
        args.eval_freq,
        args.eval_episodes,
        args.save_freq,
        args.hyperparams,
        args.env_kwargs,
        args.eval_env_kwargs,
        args.trained_agent,
        args.optimize_hyperparameters,
        args.storage,
        args.study_name,
        args.n_trials,
        args.max_total_trials,
        args.n_jobs,
        args.sampler,
        args.pruner,
        args.optimization_log_path,
        n_startup_trials=args.n_startup_trials,
        n_evaluations=args.n_evaluations,
        truncate_last_trajectory=args.truncate_last_trajectory,
        uuid_str=uuid_str,
        seed=args.seed,
        log_interval=args.log_interval,
        save_replay_buffer=args.save_replay_buffer,
        verbose=args.verbose,
        vec_env_type=args.vec_env,
        n_eval_envs=args.n_eval_envs,
        no_optim_plots=args.no_optim_plots,
        device=args.device,
        config=args.conf_file,
        show_progress=args.progress,
        trial_id=args.trial_id,
    )

    # Prepare experiment and launch hyperparameter optimization if needed
    results = exp_manager.setup_experiment()
    if results is not None:
        model, saved_hyperparams = results
        if args.track:
            # we need to save the loaded hyperparameters
            args.saved_hyperparams = saved_hyperparams
            assert run is not None  # make mypy happy
            run.config.setdefaults(vars(args))

        # Normal training
        if model is not None:
            exp_manager.learn(model)
            exp_manager.save_trained_model(model)
    else:
        exp_manager.hyperparameters_optimization()
