"""``sb3-ablation enjoy`` / ``python -m sb3_ablation enjoy``: rl_zoo3's ``enjoy`` with our algorithms registered.

All of rl_zoo3's ``enjoy`` flags work (``--algo``, ``--env``, ``-f``, ``--exp-id``, ``-n``, ``--no-render``,
``--load-best``, ``--load-checkpoint``, ``--deterministic``, ...): the arguments are checked with a parser built from
rl_zoo3's own, then rl_zoo3's ``enjoy`` runs on them. A model that cannot be found, a model of another algorithm than
``--algo`` (e.g. a PPO model for ``ablatable_td3``: the line says what the file holds and which ``--algo`` loads it),
an unknown algorithm or environment, a model file that cannot be read, ``--device cuda`` without CUDA and ``-n`` of
zero or below end with one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.save_util import load_from_zip_file

from sb3_ablation.common.saved_models import IncompatibleModelError
from sb3_ablation.zoo.adapter import ZooCommand, command_parser, find_trained_model, run_zoo_command
from sb3_ablation.zoo.hyperparams import ALGOS, OWN_ALGOS, ZooConfigError, check_algo, check_env_id
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.train import check_budget, check_device, parse_key_values, run_command

PROG = "sb3-ablation enjoy"


def check_model(args: argparse.Namespace) -> None:
    """
    Find the model ``enjoy`` / ``record_video`` would load, with rl_zoo3's own lookup, and check that ``--algo`` loads it.

    :param args: the command's arguments, parsed by :func:`sb3_ablation.zoo.adapter.command_parser`
    :raise ZooConfigError: unknown algorithm or environment, bad ``--env-kwargs``, no model where it should be, a
        model file that cannot be read or that holds a model of another algorithm
    """
    for module in args.gym_packages if "gym_packages" in args else ():
        importlib.import_module(module)
    check_algo(args.algo)
    check_env_id(args.env)
    check_budget("-n", args.n_timesteps)
    if "device" in args:
        check_device(args.device)
    parse_key_values("--env-kwargs", args.env_kwargs)
    if "rl-trained-agents" in args.folder:
        return  # rl_zoo3 downloads missing pretrained agents from the Hugging Face hub there
    try:
        model_path = find_trained_model(
            args.exp_id,
            args.folder,
            args.algo,
            args.env,
            args.load_best,
            args.load_checkpoint,
            args.load_last_checkpoint,
        )
    except (AssertionError, ValueError) as error:
        raise ZooConfigError(f"no trained {args.algo} model for {args.env} in {args.folder}: {error}") from None
    try:  # a truncated or corrupt file: one line here rather than a traceback from deep inside SB3's load
        load_from_zip_file(model_path, device="cpu")
    except Exception as error:
        raise ZooConfigError(f"{model_path}: not a readable model file ({type(error).__name__}: {error})") from None
    if args.algo in OWN_ALGOS:
        try:
            ALGOS[args.algo].check_saved_model(model_path)  # type: ignore[attr-defined]
        except IncompatibleModelError as error:
            other = f": use --algo {error.saved.zoo_algos[0]}" if error.saved.zoo_algos else f": {error.saved.loader}"
            raise ZooConfigError(
                f"{model_path} holds {error.saved.describe()}, which --algo {args.algo} does not load{other}"
            ) from None


def run_trained_model_command(prog: str, command: ZooCommand, argv: list[str], check: Callable[[], None] | None = None) -> int:
    """
    Run an rl_zoo3 command that loads a trained model (``enjoy``, ``record_video``) with our algorithms registered,
    after checking its arguments and that the model exists and is of ``--algo``.

    :param prog: the command's name, for messages and ``--help``
    :param command: rl_zoo3's command
    :param argv: the command's arguments
    :param check: checks what the command needs before anything else (raises :class:`ZooConfigError`)
    :return: exit status (0: done, 2: bad input)
    """

    def body() -> int:
        register()  # before the parser: rl_zoo3's lists our algorithms
        # the algorithm is checked by check_algo, which names the closest one; the env id is kept as given (rl_zoo3's
        # EnvironmentName replaces its slashes)
        changes: dict[str, dict[str, Any]] = {"algo": {"choices": None}, "env": {"type": str}}
        args = command_parser(command, prog, changes=changes).parse_args(argv)
        if check is not None:
            check()
        check_model(args)
        run_zoo_command(command, argv)
        return 0

    return run_command(prog, body)


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: rl_zoo3 ``enjoy`` arguments; ``sys.argv[1:]`` by default
    :return: exit status (0: done, 2: bad input)
    """
    return run_trained_model_command(PROG, "enjoy", sys.argv[1:] if argv is None else list(argv))


if __name__ == "__main__":
    sys.exit(main())
