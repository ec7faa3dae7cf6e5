"""``sb3-ablation bench``: training throughput of AblatableTD3 and our DDPG against SB3's TD3 and DDPG.

Everything runs in one process with one torch thread (by default), so the numbers compare the algorithms and not the
scheduler. Three measurements, each timed in turns within each repeat (interleaved, rotating the order) so that a slow
patch of a shared machine hits all models alike; ratios to SB3 are ratios of medians, with the range of per-repeat
ratios:

1. Gradient steps per second of ``model.train()``: every model gets the same replay buffer content (random Pendulum-v1
   transitions collected once), the same batch size and the same network architecture. TD3-family rows are compared
   with SB3's TD3, DDPG rows with SB3's DDPG. The share of a step spent in matrix-multiply kernels
   (``torch.profiler``) says how far a model is from the hardware limit.
2. Environment steps per second of whole ``learn()`` runs on Pendulum-v1 (data collection plus training), with the
   milliseconds per step spent in training, action selection, the environment, storing the transition and the rest of
   SB3's loop.
3. The hardware: CPU model, bfloat16 support and its measured speed, and what the speed mode chose per architecture.

No part of this is a test: it prints tables (markdown, ready for the README) and optionally saves JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import torch as th

from sb3_ablation.bench.measure import bench_gradient_steps, bench_learn, hardware_info
from sb3_ablation.bench.models import ENV_ID, MODEL_NAMES, collect_random_transitions
from sb3_ablation.bench.tables import (
    gradient_table,
    hardware_line,
    learn_table,
    operators_table,
    speed_mode_lines,
    target_lines,
)
from sb3_ablation.common.arguments import OneLineArgumentParser
from sb3_ablation.common.io import write_json_atomic

DEFAULT_LEARN_MODELS = ("sb3_td3", "td3", "td3_speed")
# (default, --quick) values of the size options
SIZES = {
    "net_arch": ([[400, 300], [256, 256], [64, 64]], [[32, 32]]),
    "batch_size": (256, 32),
    "buffer_transitions": (20_000, 300),
    "steps": (200, 4),
    "repeats": (5, 2),
    "warmup": (50, 2),
    "profile_steps": (20, 2),
    "learn_steps": (2_000, 150),
    "learn_repeats": (3, 2),
    "learning_starts": (100, 50),
}


def parse_net_archs(values: Sequence[str]) -> list[list[int]]:
    """
    Parse ``--net-arch`` values: each is one or more architectures separated by spaces, e.g. ``"400,300 64,64"``.

    :param values: the raw option values
    :return: list of architectures (lists of positive layer sizes)
    """
    archs = []
    for token in " ".join(values).split():
        try:
            arch = [int(size) for size in token.split(",")]
        except ValueError:
            arch = []
        if not arch or min(arch) <= 0:
            raise ValueError(f"--net-arch: expected comma-separated positive layer sizes such as 400,300, got {token!r}")
        archs.append(arch)
    if not archs:
        raise ValueError("--net-arch: expected at least one architecture such as 400,300")
    return archs


def parse_model_list(value: str, option: str) -> list[str]:
    """
    Parse a comma-separated list of model names (``none`` or an empty string for no models).

    :param value: the raw option value
    :param option: the option's name, for the error message
    :return: the names, in the given order, without duplicates
    """
    names = [] if value.strip().lower() in ("", "none") else [name.strip() for name in value.split(",")]
    for name in names:
        if name not in MODEL_NAMES:
            raise ValueError(f"{option}: unknown model {name!r}; expected names from {', '.join(MODEL_NAMES)}")
    return list(dict.fromkeys(names))


def make_parser() -> OneLineArgumentParser:
    """:return: the command-line parser of ``sb3-ablation bench``"""
    parser = OneLineArgumentParser(
        prog="sb3-ablation bench",
        description="Training throughput of AblatableTD3 and our DDPG against SB3's TD3 and DDPG, on Pendulum-v1.",
    )
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma-separated models for the gradient-step timing")
    parser.add_argument(
        "--net-arch", action="append", help='architectures, repeatable or space-separated: "400,300 256,256 64,64" (default)'
    )
    parser.add_argument("--batch-size", type=int, help="minibatch size (default 256)")
    parser.add_argument("--buffer-transitions", type=int, help="random transitions in the shared buffer (default 20000)")
    parser.add_argument("--steps", type=int, help="gradient steps per timed call (default 200)")
    parser.add_argument("--repeats", type=int, help="interleaved timing rounds (default 5)")
    parser.add_argument("--warmup", type=int, help="untimed gradient steps per model first (default 50)")
    parser.add_argument("--profile-steps", type=int, help="gradient steps under the profiler (default 20)")
    parser.add_argument("--no-profile", action="store_true", help="skip the matrix-multiply share")
    parser.add_argument(
        "--profile-top", type=int, default=0, metavar="N", help="also list each model's N costliest operators (self time)"
    )
    parser.add_argument(
        "--learn-models", default=",".join(DEFAULT_LEARN_MODELS), help="models for the learn() timing ('none' to skip)"
    )
    parser.add_argument("--learn-steps", type=int, help="environment steps per learn() run, 0 to skip (default 2000)")
    parser.add_argument("--learn-repeats", type=int, help="interleaved learn() rounds (default 3)")
    parser.add_argument("--learning-starts", type=int, help="learning_starts of the learn() runs (default 100)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test (explicit options still win)")
    parser.add_argument("--json", metavar="PATH", help="also save all results as JSON")
    return parser


def resolve_options(args: argparse.Namespace) -> argparse.Namespace:
    """Fill unset size options from the default or ``--quick`` sizes, and validate them (``ValueError`` if bad)."""
    for option, (full, quick) in SIZES.items():
        if getattr(args, option) is None:
            setattr(args, option, quick if args.quick else full)
        elif option == "net_arch":
            args.net_arch = parse_net_archs(args.net_arch)
    args.models = parse_model_list(args.models, "--models")
    args.learn_models = parse_model_list(args.learn_models, "--learn-models")
    positive = ["batch_size", "buffer_transitions", "steps", "repeats", "learn_repeats", "profile_steps", "threads"]
    for option in positive:
        if getattr(args, option) <= 0:
            raise ValueError(f"--{option.replace('_', '-')}: expected a positive integer, got {getattr(args, option)}")
    for option in ("warmup", "learn_steps", "learning_starts", "profile_top"):
        if getattr(args, option) < 0:
            raise ValueError(f"--{option.replace('_', '-')}: expected a non-negative integer, got {getattr(args, option)}")
    if args.learn_models and args.learn_steps and args.learning_starts >= args.learn_steps:
        raise ValueError(f"--learning-starts: {args.learning_starts} leaves no training in {args.learn_steps} learn() steps")
    if not args.models and not (args.learn_models and args.learn_steps):
        raise ValueError("--models: nothing to measure (no models, and no learn() models or --learn-steps 0)")
    return args


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def print_report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Print the benchmark's tables and summary lines."""
    gradient_rows, learn_rows = results["gradient_steps"], results["learn"]
    print(f"# sb3-ablation bench on {ENV_ID}, batch {args.batch_size}\n")
    print(f"Hardware: {hardware_line(results['hardware'])}\n")
    choices = speed_mode_lines(gradient_rows + learn_rows)
    if choices:
        print("Speed mode chose:\n" + "\n".join(f"- {line}" for line in choices) + "\n")
    if gradient_rows:
        print(f"## Gradient steps per second (model.train, same filled buffer, {args.steps} steps x {args.repeats} repeats)\n")
        print(gradient_table(gradient_rows) + "\n")
        print(
            "vs SB3: ratio of medians to SB3's TD3 (DDPG rows: SB3's DDPG); range: min-max of per-repeat ratios. "
            "matmul share: time in matrix-multiply kernels / median step time; matmul-bound: steps/s if nothing else cost."
        )
        if any(row["model"] == "td3_no_replay_buffer" for row in gradient_rows):
            print("td3_no_replay_buffer learns from the newest transition alone: its steps use a batch of 1.")
        print()
        if args.profile_top and not args.no_profile:
            print(f"## Costliest operators per gradient step (self CPU time, torch.profiler, top {args.profile_top})\n")
            print(operators_table(gradient_rows) + "\n")
    if learn_rows:
        print(
            f"## learn() environment steps per second ({args.learn_steps} steps, learning_starts {args.learning_starts}, "
            f"{args.learn_repeats} interleaved repeats)\n"
        )
        print(learn_table(learn_rows) + "\n")
        print(
            "ms columns: milliseconds per environment step (one extra run per model, timed by phase): train (gradient "
            "steps), action (exploration action), env step, store (replay buffer), loop (the rest: callbacks, logging).\n"
        )
    targets = target_lines("gradient steps", gradient_rows, args.batch_size)
    targets += target_lines("learn()", learn_rows, args.batch_size)
    if targets:
        print("\n".join(targets) + "\n")


def main(argv: list[str] | None = None) -> int:
    """
    Run the benchmark and print its tables.

    :param argv: command-line arguments (without the program name); ``sys.argv[1:]`` when None
    :return: exit code
    """
    parser = make_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        args = resolve_options(args)
    except ValueError as error:
        parser.error(str(error))

    previous_threads = th.get_num_threads()
    th.set_num_threads(args.threads)
    try:
        hardware = hardware_info(args.threads)
        _progress(f"sb3-ablation bench: {hardware_line(hardware)}")
        transitions = collect_random_transitions(ENV_ID, args.buffer_transitions)
        gradient_rows: list[dict[str, Any]] = []
        learn_rows: list[dict[str, Any]] = []
        for net_arch in args.net_arch:
            if args.models:
                gradient_rows += bench_gradient_steps(args, net_arch, transitions, _progress)
            if args.learn_models and args.learn_steps:
                learn_rows += bench_learn(args, net_arch, _progress)
    finally:
        th.set_num_threads(previous_threads)

    results = {"hardware": hardware, "gradient_steps": gradient_rows, "learn": learn_rows}
    print_report(args, results)
    if args.json:
        config = {key: value for key, value in vars(args).items() if key != "json"}
        write_json_atomic(args.json, {"config": config, **results})
        print(f"results saved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
