"""``sb3-ablation train`` / ``python -m sb3_ablation train``: rl_zoo3's ``train`` with our algorithms registered.

Every rl_zoo3 flag works as documented by rl-baselines3-zoo (``--algo``, ``--env``, ``-f``, ``--hyperparams``,
``--conf-file``, ``-optimize``, ``--n-trials``, ``--sampler``, ``--pruner``, ``--storage``, ...): the parser is built
from rl_zoo3's own options, and the run is rl_zoo3's (its ``train()`` body, :func:`sb3_ablation.zoo.adapter.run_train`,
with our experiment manager). Different here:

- ``--num-threads`` defaults to 1 (rl_zoo3: -1, PyTorch's choice): one thread is the fastest for these small networks
  on a CPU, as in the study's workers; ``--num-threads -1`` gives PyTorch's choice back.
- ``--tune-switches [SWITCH ...]``: with ``-optimize``, tune these component switches of ``ablatable_td3`` (all six
  when none is named) as categorical parameters; by default they are held at the config's values.
- ``--trial-seeds K`` and ``--trial-aggregate {mean,iqm}``: with ``-optimize``, each trial trains K seeds of its
  hyperparameters (``--seed`` to ``--seed`` + K - 1), batched when the engine takes the configuration, and its value is
  the mean (default) or interquartile mean of the seeds' last evaluations; the pruner sees the same aggregate of each
  evaluation (:mod:`sb3_ablation.zoo.trials`). K = 1 (default) is rl_zoo3's one-seed trial.
- ``--export-best FILE``: with ``-optimize``, where the best trial is written as a zoo YAML entry
  (default ``<log folder>/<algo>/best_<env>.yml``).
- ``-optimize`` stores its study in SQLite by default (``<log folder>/<algo>/optuna.db``, study ``<algo>_<env>``),
  so a second run adds trials to the same study; ``--storage`` takes any Optuna RDB URL or a ``.log`` journal file.

Bad input (unknown algorithm, environment, switch or hyperparameter, a value of the wrong type, an unreadable config,
a trained agent of another algorithm, ``--track`` without wandb, ``-tb`` without tensorboard, ``--device cuda``
without CUDA, an env whose simulator is not installed) ends with one ``error:`` line naming the culprit and exit
status 2, and no run folder is left behind. A budget at or below ``learning_starts`` (nothing would be trained) is
refused too, with or without ``-optimize`` (as ``study`` refuses it), naming the fix: a lower ``learning_starts``, or
``--quick``, which sets it to a tenth of ``-n`` for a short try. A run that would not evaluate (``--eval-freq`` beyond
the budget) starts with a one-line warning. rl_zoo3's preamble (the env, the seed, the entry) is printed once the run
is set up: a refused run prints its error line alone.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sb3_ablation import SWITCHES
from sb3_ablation.common.devices import device_problem
from sb3_ablation.common.saved_models import IncompatibleModelError
from sb3_ablation.zoo.adapter import (
    command_parser,
    evaluate_command_line_value,
    run_train,
    zoo_algorithm_class,
    zoo_algorithm_names,
    zoo_argument_names,
)
from sb3_ablation.zoo.export import export_best
from sb3_ablation.zoo.hyperparams import (
    ALGOS,
    OWN_ALGOS,
    ZooConfigError,
    check_action_space,
    check_algo,
    check_env_id,
)
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.trials import MultiSeedExperimentManager

PROG = "sb3-ablation train"
DESCRIPTION = "Train (or tune with -optimize) an agent with rl_zoo3; ablatable_td3 and ddpg_scratch added."
NUM_THREADS_HELP = (
    "Number of threads for PyTorch (default: 1, the fastest for these small networks on a CPU, as in the study's "
    "workers; -1: PyTorch's own choice, rl_zoo3's default)"
)

__all__ = ["check_budget", "main", "parse_key_values", "run_command"]


def _add_own_options(parser: argparse.ArgumentParser) -> None:
    """The options this package adds to rl_zoo3's ``train``."""
    group = parser.add_argument_group("sb3-ablation options (in addition to rl_zoo3's)")
    group.add_argument(
        "--tune-switches",
        nargs="*",
        metavar="SWITCH",
        default=None,
        help="with -optimize and ablatable_td3: also tune these component switches (all six if none is named); "
        "by default they are held at the values of the config / --hyperparams",
    )
    group.add_argument(
        "--trial-seeds",
        type=int,
        default=1,
        metavar="K",
        help="with -optimize: seeds each trial trains (--seed, --seed+1, ..., --seed+K-1; batched for ablatable_td3 "
        "when the batched engine takes the configuration, else in turn); default 1: rl_zoo3's one unseeded run",
    )
    group.add_argument(
        "--trial-aggregate",
        choices=("mean", "iqm"),
        default=None,
        help="with -optimize: a trial's value, and what the pruner sees at each evaluation, over its seeds: the mean "
        "(default) or the interquartile mean (iqm, rliable's) of the seeds' mean evaluation rewards",
    )
    group.add_argument(
        "--quick",
        action="store_true",
        help="a short try: learning_starts a tenth of the budget given with -n (e.g. -n 3000 --quick: learning_starts "
        "300), so that a budget below the entry's learning_starts still trains",
    )
    group.add_argument(
        "--export-best",
        metavar="FILE",
        default=None,
        help="with -optimize: zoo YAML file the best trial is written to (default: <log folder>/<algo>/best_<env>.yml)",
    )


def train_parser() -> argparse.ArgumentParser:
    """rl_zoo3's ``train`` options (with our ``--num-threads`` default) and ours, with one-line usage errors."""
    changes: dict[str, dict[str, Any]] = {
        # checked by check_algo, which names the closest algorithm; the help lists them (as rl_zoo3's choices would)
        "algo": {
            "choices": None,
            "help": f"RL algorithm: {', '.join(sorted(set(zoo_algorithm_names()) | set(ALGOS)))} (default: ppo)",
        },
        "n_timesteps": {"default": None},  # given or not (rl_zoo3's -1 means "the config's")
        "num_threads": {"default": 1, "help": NUM_THREADS_HELP},
    }
    parser = command_parser("train", PROG, DESCRIPTION, changes)
    _add_own_options(parser)
    return parser


def parse_key_values(flag: str, items: list[str] | None) -> dict[str, Any]:
    """
    Evaluate ``key:value`` items exactly as rl_zoo3's ``StoreDict`` does, but fail with one clear line.

    :raise ZooConfigError: naming the item that is not ``key:value`` or whose value is not a Python expression
    """
    parsed: dict[str, Any] = {}
    for item in items or []:
        key, separator, value = item.partition(":")
        if not separator or not key:
            raise ZooConfigError(f"{flag} {item!r}: expected key:value, e.g. clipped_double_q:False")
        try:
            parsed[key] = evaluate_command_line_value(value)
        except Exception as error:
            raise ZooConfigError(
                f"{flag} {item!r}: could not evaluate {value!r} ({type(error).__name__}: {error}); "
                "values are Python expressions, e.g. learning_rate:1e-3 clipped_double_q:False policy:\"'MlpPolicy'\""
            ) from None
    return parsed


def check_budget(flag: str, value: int | None) -> None:
    """:raise ZooConfigError: a budget given as zero or below (rl_zoo3 would silently take its default instead)"""
    if value is not None and value <= 0:
        raise ZooConfigError(f"{flag} {value}: expected a positive number of timesteps")


def check_device(device: str) -> None:
    """
    :raise ZooConfigError: ``--device`` asks for a CUDA device that this machine does not have (SB3 would run on the
        CPU without a word), or is not a device at all
    """
    problem = device_problem(device)
    if problem is not None:
        raise ZooConfigError(problem)


def check_installed(module: str, what: str, install: str) -> None:
    """:raise ZooConfigError: ``module`` cannot be imported; the message says what needs it and how to install it"""
    try:
        importlib.import_module(module)
    except ImportError:
        raise ZooConfigError(f"{what} needs {module}, which is not installed: {install}") from None


def check_trained_agent(algo: str, path: str) -> None:
    """:raise ZooConfigError: ``path`` is not a model file that ``algo`` continues from (missing, or another algorithm)"""
    if not (path.endswith(".zip") and Path(path).is_file()):
        raise ZooConfigError(f"--trained-agent {path}: expected an existing .zip file")
    if algo in OWN_ALGOS:
        try:
            ALGOS[algo].check_saved_model(path)  # type: ignore[attr-defined]
        except IncompatibleModelError as error:
            other = f": use --algo {error.saved.zoo_algos[0]}" if error.saved.zoo_algos else ""
            raise ZooConfigError(
                f"--trained-agent {path} holds {error.saved.describe()}, which {algo} does not load{other}"
            ) from None
        except ValueError as error:
            raise ZooConfigError(f"--trained-agent {error}") from None


def _check(args: argparse.Namespace) -> None:
    """Check what rl_zoo3 would only fail on with a traceback (or not at all) before anything runs or is written."""
    for module in args.gym_packages:
        importlib.import_module(module)
    check_algo(args.algo)
    check_env_id(args.env)
    check_budget("-n", args.n_timesteps)
    check_device(args.device)
    if args.track:
        check_installed("wandb", "--track (Weights & Biases)", "pip install wandb")
    if args.track or args.tensorboard_log:
        check_installed(
            "tensorboard", "-tb (TensorBoard logs)", "pip install tensorboard (or pip install 'sb3-ablation[tensorboard]')"
        )
    parse_key_values("--hyperparams", args.hyperparams)
    env_kwargs = parse_key_values("--env-kwargs", args.env_kwargs)
    parse_key_values("--eval-env-kwargs", args.eval_env_kwargs)
    check_action_space(args.algo, args.env, env_kwargs)
    conf = args.conf_file
    if conf is not None and conf.endswith((".yml", ".yaml", ".py")) and not Path(conf).is_file():
        raise ZooConfigError(f"--conf-file {conf}: file not found")
    if args.trained_agent:
        check_trained_agent(args.algo, args.trained_agent)
    if args.tune_switches is not None:
        if args.algo != "ablatable_td3":
            raise ZooConfigError(f"--tune-switches: only ablatable_td3 has component switches, not {args.algo}")
        if not args.optimize_hyperparameters:
            raise ZooConfigError("--tune-switches only applies with -optimize")
    if args.trial_seeds < 1:
        raise ZooConfigError(f"--trial-seeds {args.trial_seeds}: expected a positive number of seeds")
    if (args.trial_seeds != 1 or args.trial_aggregate is not None) and not args.optimize_hyperparameters:
        raise ZooConfigError("--trial-seeds and --trial-aggregate only apply with -optimize")
    if args.export_best is not None and not args.optimize_hyperparameters:
        raise ZooConfigError(
            "--export-best only applies with -optimize (use `python -m sb3_ablation.zoo.export` for a stored study)"
        )


def _apply_quick(args: argparse.Namespace) -> None:
    """``--quick``: ``learning_starts`` a tenth of ``-n``, as a ``--hyperparams`` item (so that args.yml records it)."""
    if args.n_timesteps is None:
        raise ZooConfigError("--quick makes a short try of the budget given with -n: add -n, e.g. -n 3000 --quick")
    if "learning_starts" in parse_key_values("--hyperparams", args.hyperparams):
        raise ZooConfigError("--quick sets learning_starts, which --hyperparams sets too: give one of them")
    args.hyperparams = [*(args.hyperparams or []), f"learning_starts:{quick_learning_starts(args.n_timesteps)}"]


def _optimization_defaults(args: argparse.Namespace) -> None:
    """SQLite storage and a fixed study name by default, so that studies persist and a second run extends them."""
    if args.storage is None:
        database = (Path(args.log_folder) / args.algo / "optuna.db").resolve()
        args.storage = f"sqlite:///{database}"
    if args.study_name is None:
        args.study_name = f"{args.algo}_{args.env}"
    print(f"Optuna study {args.study_name!r} in {args.storage}")


def _zoo_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """The namespace rl_zoo3's parser would have made of the same command line (what the run and args.yml get)."""
    zoo = argparse.Namespace(**{name: getattr(args, name) for name in zoo_argument_names("train")})
    for name, flag in (
        ("hyperparams", "--hyperparams"),
        ("env_kwargs", "--env-kwargs"),
        ("eval_env_kwargs", "--eval-env-kwargs"),
    ):
        items = getattr(args, name)
        setattr(zoo, name, None if items is None else parse_key_values(flag, items))  # as rl_zoo3's StoreDict
    zoo.n_timesteps = -1 if args.n_timesteps is None else args.n_timesteps
    return zoo


def learning_starts_of(algo: str, hyperparams: dict[str, Any]) -> float | None:
    """The run's ``learning_starts``: the entry's (with the overrides), else the algorithm's default; None without one."""
    learning_starts = hyperparams.get("learning_starts")
    algo_class = zoo_algorithm_class(algo)
    parameters = inspect.signature(algo_class).parameters if algo_class is not None else {}
    if learning_starts is None and "learning_starts" in parameters:
        learning_starts = parameters["learning_starts"].default
    if isinstance(learning_starts, (int, float)) and not isinstance(learning_starts, bool):
        return learning_starts
    return None


def quick_learning_starts(n_timesteps: int) -> int:
    """``--quick``'s ``learning_starts``: a tenth of the budget."""
    return max(1, n_timesteps // 10)


def short_budget_problem(algo: str, hyperparams: dict[str, Any], n_timesteps: int, budget_source: str) -> str | None:
    """
    ``train``'s and ``train -optimize``'s rule for a budget that would train nothing (``study``'s is the same, in
    :func:`sb3_ablation.study.plan.config.check_budget`).

    :param algo: the rl_zoo3 algorithm
    :param hyperparams: its hyperparameters (the entry with the overrides)
    :param n_timesteps: the budget
    :param budget_source: where the budget comes from, e.g. ``-n 200``
    :return: the refusal, naming the fix, when the budget is at or below ``learning_starts``; else None
    """
    learning_starts = learning_starts_of(algo, hyperparams)
    if learning_starts is None or n_timesteps > learning_starts:
        return None
    return (
        f"the budget ({budget_source}) is at or below learning_starts ({learning_starts:g}), so nothing would be "
        f"trained: lower learning_starts (--hyperparams learning_starts:{quick_learning_starts(n_timesteps)}) or add "
        "--quick (learning_starts a tenth of -n)"
    )


def budget_warnings(
    algo: str, hyperparams: dict[str, Any], n_timesteps: int, budget_source: str, eval_freq: int, optimizing: bool
) -> list[str]:
    """
    The warnings of a run that would not evaluate (one that would not train is refused: :func:`short_budget_problem`).

    :param algo: the rl_zoo3 algorithm
    :param hyperparams: its hyperparameters (the entry with the overrides)
    :param n_timesteps: the budget
    :param budget_source: where the budget comes from, e.g. ``-n 200``
    :param eval_freq: ``--eval-freq`` (not used when optimizing)
    :param optimizing: with ``-optimize``
    :return: one line: an ``--eval-freq`` beyond the budget (no evaluation); or none
    """
    n_envs = int(hyperparams.get("n_envs", 1))
    # rl_zoo3 counts --eval-freq in steps of all envs together and evaluates every eval_freq // n_envs VecEnv steps
    vec_steps = -(-n_timesteps // n_envs)
    if not optimizing and eval_freq > 0 and max(eval_freq // n_envs, 1) > vec_steps:
        return [
            f"--eval-freq {eval_freq} is beyond the budget ({budget_source}): no evaluation would happen "
            "(pass a smaller --eval-freq, or -1 for none)"
        ]
    return []


class HeldOutput:
    """
    Holds what is printed to ``sys.stdout`` (rl_zoo3's ~20 lines of preamble: the env, the seed, the entry) until
    :meth:`release`, which prints it, once the run is set up and starts; a run refused before then prints its one
    error line alone.
    """

    def __enter__(self) -> HeldOutput:
        self.stdout, self.held = sys.stdout, io.StringIO()
        sys.stdout = self.held
        return self

    def release(self) -> None:
        """Print what was held, and let further output through."""
        if sys.stdout is self.held:
            sys.stdout = self.stdout
            self.stdout.write(self.held.getvalue())

    def __exit__(self, error_type: type[BaseException] | None, *rest: Any) -> None:
        if error_type is None or not issubclass(error_type, (ZooConfigError, SystemExit)):
            self.release()  # (an unexpected error: the preamble may help to read its traceback)
        elif sys.stdout is self.held:
            sys.stdout = self.stdout


def _train_manager_class(trial_seeds: int = 1, trial_aggregate: str = "mean", output: HeldOutput | None = None) -> type:
    class TrainExperimentManager(MultiSeedExperimentManager):
        """
        ``train``'s experiment manager: refuses a budget that would train nothing, says (on stderr, as the run
        starts) when it would not evaluate, and prints rl_zoo3's preamble only then.
        """

        budget_warnings: tuple[str, ...] = ()

        def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
            hyperparams, saved_hyperparams = super().read_hyperparameters()
            if self.n_timesteps > 0:
                n_timesteps, source = self.n_timesteps, f"-n {self.n_timesteps}"
            else:
                n_timesteps = int(hyperparams["n_timesteps"])
                source = f"n_timesteps {n_timesteps} in {self.config_source}"
            problem = short_budget_problem(self.algo, hyperparams, n_timesteps, source)
            if problem is not None:
                raise ZooConfigError(problem)
            self.budget_warnings = tuple(
                budget_warnings(self.algo, hyperparams, n_timesteps, source, self.eval_freq, self.optimize_hyperparameters)
            )
            return hyperparams, saved_hyperparams

        def starting(self) -> None:
            if output is not None:
                output.release()
            for warning in self.budget_warnings:
                print(f"{PROG}: warning: {warning}", file=sys.stderr)

    TrainExperimentManager.trial_seeds = trial_seeds
    TrainExperimentManager.trial_aggregate = trial_aggregate
    return TrainExperimentManager


def run_command(prog: str, body: Callable[[], int]) -> int:
    """
    Run a command's body: a configuration error becomes one ``error:`` line and exit status 2, argparse's exits
    (errors already printed, ``--help``) their own status.

    :param prog: the command's name, for the error line
    :param body: the command; returns its exit status
    :return: the exit status
    """
    try:
        return body()
    except ZooConfigError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as error:
        return error.code if isinstance(error.code, int) else (0 if error.code is None else 1)


def main(argv: list[str] | None = None, search_space: dict[str, dict[str, Any]] | None = None) -> int:
    """
    :param argv: rl_zoo3 ``train`` arguments plus ours (see the module docstring); ``sys.argv[1:]`` by default
    :param search_space: with ``-optimize`` and ``ablatable_td3``: sample only these hyperparameters, in these ranges
        (:func:`~sb3_ablation.zoo.hyperparams_opt.sample_declared_params`; a study's ``tuning.search_space``)
    :return: exit status (0: done, 2: bad input)
    """
    argv = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        register()  # before the parser: rl_zoo3's lists our algorithms
        args = train_parser().parse_args(argv)
        register(SWITCHES if args.tune_switches == [] else tuple(args.tune_switches or ()), search_space)
        _check(args)
        if args.quick:
            _apply_quick(args)
        with HeldOutput() as preamble:
            if args.optimize_hyperparameters:
                _optimization_defaults(args)
            manager_class = _train_manager_class(args.trial_seeds, args.trial_aggregate or "mean", preamble)
            run_train(_zoo_arguments(args), manager_class)
        if args.optimize_hyperparameters:
            output = args.export_best or str(Path(args.log_folder) / args.algo / f"best_{args.env}.yml")
            try:
                trial = export_best(args.storage, args.study_name, args.algo, args.env, output, args.conf_file)
                print(f"Best trial {trial.number} (value {trial.value:.4g}) written as the {args.env} entry of {output}")
            except ZooConfigError as error:  # e.g. every trial pruned: nothing to export, the study itself is fine
                print(f"{PROG}: warning: best trial not exported: {error}", file=sys.stderr)
        return 0

    return run_command(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
