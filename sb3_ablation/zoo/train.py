"""``sb3-ablation train`` / ``python -m sb3_ablation train``: rl_zoo3's ``train`` with our algorithms registered.

Every rl_zoo3 flag works as documented by rl-baselines3-zoo (``--algo``, ``--env``, ``-f``, ``--hyperparams``,
``--conf-file``, ``-optimize``, ``--n-trials``, ``--sampler``, ``--pruner``, ``--storage``, ...). Added here:

- ``--tune-switches [SWITCH ...]``: with ``-optimize``, tune these component switches of ``ablatable_td3`` (all six
  when none is named) as categorical parameters; by default they are held at the config's values.
- ``--export-best FILE``: with ``-optimize``, where the best trial is written as a zoo YAML entry
  (default ``<log folder>/<algo>/best_<env>.yml``).
- ``-optimize`` stores its study in SQLite by default (``<log folder>/<algo>/optuna.db``, study ``<algo>_<env>``),
  so a second run adds trials to the same study; ``--storage`` takes any Optuna RDB URL or a ``.log`` journal file.

Bad input (unknown algorithm, environment, switch or hyperparameter, a value of the wrong type, an unreadable config)
ends with one ``error:`` line naming the culprit and exit status 2, and no run folder is left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PROG = "sb3-ablation train"


def _own_parser() -> argparse.ArgumentParser:
    """The options this package adds to rl_zoo3's ``train``."""
    parser = argparse.ArgumentParser(prog=PROG, add_help=False, allow_abbrev=False)
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
        "--export-best",
        metavar="FILE",
        default=None,
        help="with -optimize: zoo YAML file the best trial is written to (default: <log folder>/<algo>/best_<env>.yml)",
    )
    return parser


def _peek_parser() -> argparse.ArgumentParser:
    """The rl_zoo3 ``train`` options read here before handing over (same names and defaults as rl_zoo3's)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("-f", "--log-folder", default="logs")
    parser.add_argument("-n", "--n-timesteps", type=int, default=None)
    parser.add_argument("-conf", "--conf-file", default=None)
    parser.add_argument("-params", "--hyperparams", nargs="+", default=None)
    parser.add_argument("--env-kwargs", nargs="+", default=None)
    parser.add_argument("--eval-env-kwargs", nargs="+", default=None)
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("-i", "--trained-agent", default="")
    parser.add_argument("-optimize", "--optimize-hyperparameters", action="store_true")
    parser.add_argument("--storage", default=None)
    parser.add_argument("--study-name", default=None)
    return parser


def parse_key_values(flag: str, items: list[str] | None) -> dict[str, Any]:
    """
    Evaluate ``key:value`` items exactly as rl_zoo3's ``StoreDict`` does, but fail with one clear line.

    :raise ZooConfigError: naming the item that is not ``key:value`` or whose value is not a Python expression
    """
    from rl_zoo3 import utils

    from sb3_ablation.zoo.hyperparams import ZooConfigError

    parsed: dict[str, Any] = {}
    for item in items or []:
        key, separator, value = item.partition(":")
        if not separator or not key:
            raise ZooConfigError(f"{flag} {item!r}: expected key:value, e.g. clipped_double_q:False")
        try:
            parsed[key] = eval(value, vars(utils))
        except Exception as error:
            raise ZooConfigError(
                f"{flag} {item!r}: could not evaluate {value!r} ({type(error).__name__}: {error}); "
                "values are Python expressions, e.g. learning_rate:1e-3 clipped_double_q:False policy:\"'MlpPolicy'\""
            ) from None
    return parsed


def check_budget(flag: str, value: int | None) -> None:
    """:raise ZooConfigError: a budget given as zero or below (rl_zoo3 would silently take its default instead)"""
    from sb3_ablation.zoo.hyperparams import ZooConfigError

    if value is not None and value <= 0:
        raise ZooConfigError(f"{flag} {value}: expected a positive number of timesteps")


def _one_line_error(parser: argparse.ArgumentParser, message: str) -> None:
    """``ArgumentParser.error`` without the usage block: one line, exit status 2."""
    parser.exit(2, f"{parser.prog}: error: {message} (see --help)\n")


@contextlib.contextmanager
def one_line_usage_errors() -> Iterator[None]:
    """Inside, every argparse parser (ours and rl_zoo3's) reports a usage error on one line."""
    # A patch of argparse's class for the command's duration: rl_zoo3 builds its parsers inside its functions, with
    # no way to pass a parser class or an error handler
    with patched(argparse.ArgumentParser, "error", _one_line_error):
        yield


@contextlib.contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    """Temporarily replace ``target.name`` (restored afterwards, also on error)."""
    original = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, original)


def run_command(prog: str, body: Callable[[], int]) -> int:
    """
    Run a command's body: a configuration error becomes one ``error:`` line and exit status 2, argparse's exits
    (errors already printed, ``--help``) their own status.

    :param prog: the command's name, for the error line
    :param body: the command; returns its exit status
    :return: the exit status
    """
    from sb3_ablation.zoo.hyperparams import ZooConfigError

    try:
        return body()
    except ZooConfigError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as error:
        return error.code if isinstance(error.code, int) else (0 if error.code is None else 1)


def _check(peek: argparse.Namespace, own: argparse.Namespace) -> None:
    """Check what rl_zoo3 would only fail on with a traceback (or not at all) before anything runs."""
    from sb3_ablation.zoo.hyperparams import ZooConfigError, check_action_space, check_algo, check_env_id

    for module in peek.gym_packages:
        importlib.import_module(module)
    check_algo(peek.algo)
    check_env_id(peek.env)
    check_budget("-n", peek.n_timesteps)
    parse_key_values("--hyperparams", peek.hyperparams)
    env_kwargs = parse_key_values("--env-kwargs", peek.env_kwargs)
    parse_key_values("--eval-env-kwargs", peek.eval_env_kwargs)
    check_action_space(peek.algo, peek.env, env_kwargs)
    conf = peek.conf_file
    if conf is not None and conf.endswith((".yml", ".yaml", ".py")) and not Path(conf).is_file():
        raise ZooConfigError(f"--conf-file {conf}: file not found")
    if peek.trained_agent and not (peek.trained_agent.endswith(".zip") and Path(peek.trained_agent).is_file()):
        raise ZooConfigError(f"--trained-agent {peek.trained_agent}: expected an existing .zip file")
    if own.tune_switches is not None:
        if peek.algo != "ablatable_td3":
            raise ZooConfigError(f"--tune-switches: only ablatable_td3 has component switches, not {peek.algo}")
        if not peek.optimize_hyperparameters:
            raise ZooConfigError("--tune-switches only applies with -optimize")
    if own.export_best is not None and not peek.optimize_hyperparameters:
        raise ZooConfigError(
            "--export-best only applies with -optimize (use `python -m sb3_ablation.zoo.export` for a stored study)"
        )


def _optimization_defaults(peek: argparse.Namespace, rest: list[str]) -> list[str]:
    """SQLite storage and a fixed study name by default, so that studies persist and a second run extends them."""
    extra = []
    if peek.storage is None:
        database = (Path(peek.log_folder) / peek.algo / "optuna.db").resolve()
        peek.storage = f"sqlite:///{database}"
        extra += ["--storage", peek.storage]
    if peek.study_name is None:
        peek.study_name = f"{peek.algo}_{peek.env}"
        extra += ["--study-name", peek.study_name]
    if extra:
        print(f"Optuna study {peek.study_name!r} in {peek.storage}")
    return rest + extra


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: rl_zoo3 ``train`` arguments plus ours (see the module docstring); ``sys.argv[1:]`` by default
    :return: exit status (0: done, 2: bad input)
    """
    with one_line_usage_errors():
        return _main(sys.argv[1:] if argv is None else list(argv))


def _main(argv: list[str]) -> int:
    own_parser = _own_parser()
    own, rest = own_parser.parse_known_args(argv)

    import rl_zoo3.train

    from sb3_ablation import SWITCHES
    from sb3_ablation.zoo.experiment import AblationExperimentManager
    from sb3_ablation.zoo.export import export_best
    from sb3_ablation.zoo.hyperparams import ZooConfigError
    from sb3_ablation.zoo.registry import register

    tune_switches = SWITCHES if own.tune_switches == [] else tuple(own.tune_switches or ())

    def body() -> int:
        register(tune_switches)
        if "-h" in rest or "--help" in rest:
            with patched(sys, "argv", [PROG, "--help"]), contextlib.suppress(SystemExit):
                rl_zoo3.train.train()
            own_parser.print_help()
            return 0
        peek, _ = _peek_parser().parse_known_args(rest)
        _check(peek, own)
        zoo_argv = _optimization_defaults(peek, rest) if peek.optimize_hyperparameters else rest
        # rl_zoo3's train() reads sys.argv and builds `ExperimentManager` by its module-level name, taking no manager
        # class: replacing that name for this call is the only way in short of copying train() (about 270 lines)
        with patched(sys, "argv", [PROG, *zoo_argv]), patched(rl_zoo3.train, "ExperimentManager", AblationExperimentManager):
            rl_zoo3.train.train()
        if peek.optimize_hyperparameters:
            output = own.export_best or str(Path(peek.log_folder) / peek.algo / f"best_{peek.env}.yml")
            try:
                trial = export_best(peek.storage, peek.study_name, peek.algo, peek.env, output, peek.conf_file)
                print(f"Best trial {trial.number} (value {trial.value:.4g}) written as the {peek.env} entry of {output}")
            except ZooConfigError as error:  # e.g. every trial pruned: nothing to export, the study itself is fine
                print(f"{PROG}: warning: best trial not exported: {error}", file=sys.stderr)
        return 0

    return run_command(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
