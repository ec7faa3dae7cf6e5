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
import contextlib
import glob
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.save_util import load_from_zip_file

from sb3_ablation.common.saved_models import IncompatibleModelError
from sb3_ablation.zoo.adapter import (
    ZooCommand,
    command_parser,
    find_trained_model,
    run_zoo_command,
    zoo_algorithm_names,
)
from sb3_ablation.zoo.hyperparams import ALGOS, OWN_ALGOS, ZooConfigError, check_algo, check_env_id
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.train import check_budget, check_device, parse_key_values, run_command

PROG = "sb3-ablation enjoy"
#: ``--help``'s description of each command that loads a trained model
DESCRIPTIONS = {
    "enjoy": "Run a trained agent with rl_zoo3's enjoy (ablatable_td3 and ddpg_scratch added): the model that `train` "
    "wrote into <-f>/<algo>/<env>_<id>/, from the latest experiment that holds one (or --exp-id), for -n steps.",
    "record_video": "Record a video (mp4) of a trained agent with rl_zoo3's record_video (ablatable_td3 and "
    "ddpg_scratch added): the model that `train` wrote into <-f>/<algo>/<env>_<id>/, from the latest experiment that "
    "holds one (or --exp-id). Needs moviepy.",
}


def _experiments(folder: str, algo: str, env_id: str) -> list[int]:
    """The ids of the experiment folders ``<folder>/<algo>/<env>_<id>``, latest first."""
    ids = []
    for path in glob.glob(os.path.join(glob.escape(os.path.join(folder, algo)), f"{glob.escape(env_id)}_*")):
        suffix = path.rsplit("_", 1)[-1]
        if suffix.isdigit() and os.path.isdir(path):
            ids.append(int(suffix))
    return sorted(ids, reverse=True)


def _find_model(args: argparse.Namespace) -> tuple[int, str]:
    """
    The experiment and model file to load: ``--exp-id``'s, or (``--exp-id 0``, the default) the latest experiment
    that holds the model asked for (rl_zoo3 takes the latest folder, even one that an ``-optimize`` run left without
    a model).

    :raise ZooConfigError: no such folder (naming ``-f`` and the folders searched), or no model in it (naming
        ``--exp-id`` and the experiments that hold one)
    """
    where = os.path.join(args.folder, args.algo)

    def lookup(exp_id: int) -> str:
        return find_trained_model(
            exp_id, args.folder, args.algo, args.env, args.load_best, args.load_checkpoint, args.load_last_checkpoint
        )

    experiments = _experiments(args.folder, args.algo, args.env)
    if not os.path.isdir(where) or (not experiments and not os.path.isfile(os.path.join(where, f"{args.env}.zip"))):
        default = " (-f defaults to rl-zoo's rl-trained-agents)" if args.folder == "rl-trained-agents" else ""
        found = "no folder" if not os.path.isdir(where) else f"no {args.env}_<id> folder in"
        raise ZooConfigError(
            f"no trained {args.algo} model for {args.env}: {found} {where}; pass -f with the log folder train wrote "
            f"into, e.g. -f logs{default}"
        )
    holding = {}
    for exp_id in experiments:
        with contextlib.suppress(AssertionError, ValueError):
            holding[exp_id] = lookup(exp_id)
    if args.exp_id == 0 and holding:
        latest = max(holding)
        return latest, holding[latest]
    if args.exp_id in holding:
        return args.exp_id, holding[args.exp_id]
    try:  # --exp-id -1 (the model directly in <folder>/<algo>), or rl_zoo3's own message for what is missing
        return args.exp_id, lookup(args.exp_id)
    except (AssertionError, ValueError) as error:
        searched = f"{args.env}_{args.exp_id}" if args.exp_id > 0 else f"{args.env}_<id>"
        if holding:
            ids = ", ".join(f"{args.env}_{exp_id}" for exp_id in sorted(holding))
            hint = f"the experiments that hold one: {ids} (pass --exp-id {max(holding)})"
        else:
            hint = "none of its experiments holds one"
        if args.exp_id > 0 and not os.path.isdir(os.path.join(where, searched)):
            raise ZooConfigError(f"no experiment folder {where}/{searched} (--exp-id {args.exp_id}); {hint}") from None
        what = str(error).split(", path: ")[0].rstrip(".")  # rl_zoo3's "No model found for <algo> on <env>"
        raise ZooConfigError(f"{what} in {where}/{searched} (--exp-id {args.exp_id}); {hint}") from None


def check_model(args: argparse.Namespace) -> int | None:
    """
    Find the model ``enjoy`` / ``record_video`` would load, with rl_zoo3's own lookup, and check that ``--algo`` loads it.

    :param args: the command's arguments, parsed by :func:`sb3_ablation.zoo.adapter.command_parser`
    :return: the experiment id of the model (``--exp-id``, or for ``--exp-id 0`` the latest that holds a model);
        None when rl_zoo3 is to fetch a pretrained agent of SB3's
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
    if "rl-trained-agents" in args.folder and args.algo not in OWN_ALGOS:
        return None  # rl_zoo3 downloads SB3's pretrained agents from the Hugging Face hub there (none for ours)
    exp_id, model_path = _find_model(args)
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
    return exp_id


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
        algos = ", ".join(sorted(set(zoo_algorithm_names()) | set(ALGOS)))
        changes: dict[str, dict[str, Any]] = {
            "algo": {"choices": None, "help": f"RL algorithm: {algos} (default: ppo)"},
            "env": {"type": str},
        }
        args = command_parser(command, prog, DESCRIPTIONS[command], changes).parse_args(argv)
        if check is not None:
            check()
        exp_id = check_model(args)
        # the experiment found, which rl_zoo3 would not pick by itself when a later folder holds no model
        run_zoo_command(command, argv if exp_id is None else [*argv, "--exp-id", str(exp_id)])
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
