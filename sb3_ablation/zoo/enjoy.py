"""``sb3-ablation enjoy`` / ``python -m sb3_ablation enjoy``: rl_zoo3's ``enjoy`` with our algorithms registered.

All of rl_zoo3's ``enjoy`` flags work (``--algo``, ``--env``, ``-f``, ``--exp-id``, ``-n``, ``--no-render``,
``--load-best``, ``--load-checkpoint``, ``--deterministic``, ...). A model that cannot be found, an unknown algorithm
or environment, a model file that cannot be read and ``-n`` of zero or below end with one ``error:`` line and exit
status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from collections.abc import Callable
from typing import Any

PROG = "sb3-ablation enjoy"


def _peek_parser() -> argparse.ArgumentParser:
    """The rl_zoo3 ``enjoy`` / ``record_video`` options read here to find the model first (same defaults)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("-f", "--folder", default="rl-trained-agents")
    parser.add_argument("--exp-id", type=int, default=0)
    parser.add_argument("-n", "--n-timesteps", type=int, default=None)
    parser.add_argument("--load-best", action="store_true")
    parser.add_argument("--load-checkpoint", type=int, default=None)
    parser.add_argument("--load-last-checkpoint", action="store_true")
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("--env-kwargs", nargs="+", default=None)
    return parser


def check_model(argv: list[str]) -> None:
    """
    Find the model ``enjoy`` / ``record_video`` would load, with rl_zoo3's own lookup.

    :raise ZooConfigError: unknown algorithm or environment, bad ``--env-kwargs``, or no model where it should be
    """
    from huggingface_sb3 import EnvironmentName
    from rl_zoo3.utils import get_model_path
    from stable_baselines3.common.save_util import load_from_zip_file

    from sb3_ablation.zoo.hyperparams import ZooConfigError, check_algo, check_env_id
    from sb3_ablation.zoo.train import check_budget, parse_key_values

    peek, _ = _peek_parser().parse_known_args(argv)
    for module in peek.gym_packages:
        importlib.import_module(module)
    check_algo(peek.algo)
    check_env_id(peek.env)
    check_budget("-n", peek.n_timesteps)
    parse_key_values("--env-kwargs", peek.env_kwargs)
    if "rl-trained-agents" in peek.folder:
        return  # rl_zoo3 downloads missing pretrained agents from the Hugging Face hub there
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            _, model_path, _ = get_model_path(
                peek.exp_id,
                peek.folder,
                peek.algo,
                EnvironmentName(peek.env),
                peek.load_best,
                peek.load_checkpoint,
                peek.load_last_checkpoint,
            )
    except (AssertionError, ValueError) as error:
        raise ZooConfigError(f"no trained {peek.algo} model for {peek.env} in {peek.folder}: {error}") from None
    try:  # a truncated or corrupt file: one line here rather than a traceback from deep inside SB3's load
        load_from_zip_file(model_path, device="cpu")
    except Exception as error:
        raise ZooConfigError(f"{model_path}: not a readable model file ({type(error).__name__}: {error})") from None


def run_trained_model_command(
    prog: str, argv: list[str], run: Callable[[], Any], check: Callable[[], None] | None = None
) -> int:
    """
    Run an rl_zoo3 command that loads a trained model (``enjoy``, ``record_video``) with our algorithms registered,
    after checking that the model exists.

    :param prog: the command's name, for messages and ``--help``
    :param argv: the command's arguments
    :param run: calls rl_zoo3's command, which reads ``sys.argv``
    :param check: checks what the command needs before anything else (raises :class:`ZooConfigError`)
    :return: exit status (0: done, 2: bad input)
    """
    from sb3_ablation.zoo.registry import register
    from sb3_ablation.zoo.train import one_line_usage_errors, patched, run_command

    def body() -> int:
        register()
        if not ("-h" in argv or "--help" in argv):
            if check is not None:
                check()
            check_model(argv)
        with patched(sys, "argv", [prog, *argv]):
            run()
        return 0

    with one_line_usage_errors():
        return run_command(prog, body)


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: rl_zoo3 ``enjoy`` arguments; ``sys.argv[1:]`` by default
    :return: exit status (0: done, 2: bad input)
    """
    import rl_zoo3.enjoy

    return run_trained_model_command(PROG, sys.argv[1:] if argv is None else list(argv), rl_zoo3.enjoy.enjoy)


if __name__ == "__main__":
    sys.exit(main())
