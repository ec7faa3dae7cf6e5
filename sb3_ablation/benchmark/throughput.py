"""Training throughput of AblatableTD3 and our DDPG against SB3's TD3 and DDPG (``sb3-ablation bench``).

Everything runs in one process with one torch thread (by default), so the numbers compare the algorithms and not the
scheduler. Three measurements:

1. Gradient steps per second of ``model.train()``: every model gets the same replay buffer content (random Pendulum-v1
   transitions collected once), the same batch size and the same network architecture; the models are timed in turns
   within each repeat (interleaved, rotating the order), so a slow patch of the shared machine hits all of them alike.
   The ratio to SB3 is the ratio of medians: TD3-family rows against SB3's TD3, DDPG rows against SB3's DDPG.
2. The share of a gradient step spent in matrix-multiply kernels (``torch.profiler``): the work a faster
   implementation cannot remove, hence how far a model is from the hardware limit.
3. Environment steps per second of whole ``learn()`` runs on Pendulum-v1 (data collection plus training).

No part of this is a test: it prints tables (markdown, ready for the README) and optionally saves JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3 import DDPG as SB3DDPG
from stable_baselines3 import TD3 as SB3TD3
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_ablation import DDPG, SWITCHES, AblatableTD3

ENV_ID = "Pendulum-v1"
SEED = 0
# rl-zoo's Pendulum-v1 hyperparameters for TD3/DDPG (the parts that matter for a gradient step)
GAMMA = 0.98
LEARNING_RATE = 1e-3

TD3_MODELS = ("sb3_td3", "td3", *(f"td3_no_{switch}" for switch in SWITCHES), "td3_speed")
DDPG_MODELS = ("sb3_ddpg", "ddpg", "ddpg_speed")
MODEL_NAMES = TD3_MODELS + DDPG_MODELS
DEFAULT_LEARN_MODELS = ("sb3_td3", "td3", "td3_speed")

# Matrix-multiply kernels as the CPU profiler names them: nn.Linear runs aten::addmm forward and aten::mm backward;
# oneDNN-fused linear layers (torch.compile on CPU) show up as mkldnn::_linear_pointwise.
MATMUL_OPS = frozenset(
    {"aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::addmv", "aten::mv", "aten::dot"}
)
MATMUL_PREFIXES = ("mkldnn::_linear", "aten::mkldnn_linear", "aten::_addmm_activation")

# Speed targets (issue 5): minimal gradient-step ratio to SB3's TD3 per (model, net_arch)
TARGET_RATIOS = {("td3", (400, 300)): 1.15, ("td3", (64, 64)): 1.3, ("td3_speed", (64, 64)): 1.5}

# (default, --quick) values of the size options
SIZES = {
    "net_arch": ([[400, 300], [64, 64]], [[32, 32]]),
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


class ModelUnavailable(Exception):
    """A model that this version of the code cannot build (e.g. a speed mode not implemented yet)."""


def baseline_of(name: str) -> str:
    """
    The SB3 model a model is compared with.

    :param name: a model name from ``MODEL_NAMES``
    :return: ``"sb3_td3"`` for the TD3 family, ``"sb3_ddpg"`` for the DDPG family
    """
    return "sb3_ddpg" if name in DDPG_MODELS else "sb3_td3"


def model_class_and_kwargs(name: str) -> tuple[type[OffPolicyAlgorithm], dict[str, Any]]:
    """
    The class and the extra constructor arguments behind a model name.

    :param name: one of ``MODEL_NAMES``: ``sb3_td3``, ``sb3_ddpg``, ``td3`` (AblatableTD3 defaults),
        ``td3_no_<switch>`` (one switch off), ``td3_speed``/``ddpg_speed`` (``speed_mode=True``), ``ddpg`` (ours)
    :return: (algorithm class, keyword arguments that select the variant)
    """
    if name == "sb3_td3":
        return SB3TD3, {}
    if name == "sb3_ddpg":
        return SB3DDPG, {}
    if name == "td3":
        return AblatableTD3, {}
    if name == "td3_speed":
        return AblatableTD3, {"speed_mode": True}
    if name == "ddpg":
        return DDPG, {}
    if name == "ddpg_speed":
        return DDPG, {"speed_mode": True}
    if name.startswith("td3_no_") and name[len("td3_no_") :] in SWITCHES:
        return AblatableTD3, {name[len("td3_no_") :]: False}
    raise ValueError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")


def build_model(name: str, env: str | gym.Env, net_arch: Sequence[int], **kwargs: Any) -> OffPolicyAlgorithm:
    """
    Build one model with rl-zoo's Pendulum-v1 settings and a silent logger, so ``train()`` can be called directly.

    :param name: model name (see ``model_class_and_kwargs``)
    :param env: environment or environment id
    :param net_arch: hidden layer sizes of actor and critics
    :param kwargs: further constructor arguments (buffer_size, batch_size, learning_starts, action_noise, ...)
    :return: the model
    :raises ModelUnavailable: when the class does not accept the variant's arguments (e.g. no ``speed_mode`` yet)
    """
    model_class, variant_kwargs = model_class_and_kwargs(name)
    settings = dict(
        learning_rate=LEARNING_RATE,
        gamma=GAMMA,
        train_freq=1,
        gradient_steps=1,
        policy_kwargs=dict(net_arch=list(net_arch)),
        seed=SEED,
        device="cpu",
        verbose=0,
    )
    settings.update(kwargs)
    if variant_kwargs.get("replay_buffer") is False:
        # without a replay buffer AblatableTD3 keeps the newest transition alone and learns from it (batch 1)
        settings.pop("buffer_size", None)
        settings.pop("batch_size", None)
    try:
        model = model_class("MlpPolicy", env, **settings, **variant_kwargs)
    except TypeError as error:
        if "speed_mode" in variant_kwargs and "speed_mode" in str(error):
            raise ModelUnavailable(f"{model_class.__name__} does not accept speed_mode yet") from error
        raise
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def collect_random_transitions(env_id: str, n_transitions: int, seed: int = SEED) -> dict[str, np.ndarray]:
    """
    Collect transitions with uniformly random actions, laid out like SB3's ``ReplayBuffer`` arrays (one env).

    :param env_id: Gymnasium environment id (continuous actions)
    :param n_transitions: how many transitions
    :param seed: seed of the environment and of the action sampler
    :return: arrays ``observations``, ``next_observations``, ``actions`` (scaled to [-1, 1], as TD3 stores them),
        ``rewards``, ``dones`` and ``timeouts``, each with the leading shape ``(n_transitions, 1)``
    """
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    low, high = env.action_space.low, env.action_space.high
    observations, next_observations, actions, rewards, dones, timeouts = [], [], [], [], [], []
    obs, _ = env.reset(seed=seed)
    for _ in range(n_transitions):
        scaled_action = rng.uniform(-1.0, 1.0, size=low.shape).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(low + 0.5 * (scaled_action + 1.0) * (high - low))
        observations.append(obs)
        next_observations.append(next_obs)
        actions.append(scaled_action)
        rewards.append(reward)
        dones.append(terminated or truncated)
        timeouts.append(truncated and not terminated)
        obs = env.reset()[0] if terminated or truncated else next_obs
    env.close()
    return {
        "observations": np.asarray(observations, dtype=np.float32)[:, None],
        "next_observations": np.asarray(next_observations, dtype=np.float32)[:, None],
        "actions": np.asarray(actions, dtype=np.float32)[:, None],
        "rewards": np.asarray(rewards, dtype=np.float32)[:, None],
        "dones": np.asarray(dones, dtype=np.float32)[:, None],
        "timeouts": np.asarray(timeouts, dtype=np.float32)[:, None],
    }


def fill_replay_buffer(buffer: ReplayBuffer, transitions: dict[str, np.ndarray]) -> int:
    """
    Copy transitions into a replay buffer as if they had been added one by one.

    A buffer smaller than the data (AblatableTD3 with ``replay_buffer=False`` keeps one transition) gets the most
    recent transitions that fit.

    :param buffer: SB3 replay buffer with one environment
    :param transitions: arrays from ``collect_random_transitions``
    :return: the number of transitions stored
    """
    n_stored = min(len(transitions["observations"]), buffer.buffer_size)
    for field, values in transitions.items():
        destination = getattr(buffer, field, None)
        if destination is None:  # e.g. next_observations with optimize_memory_usage=True
            continue
        destination[:n_stored] = values[len(values) - n_stored :].reshape(destination[:n_stored].shape)
    buffer.pos = n_stored % buffer.buffer_size
    buffer.full = n_stored == buffer.buffer_size
    return n_stored


def is_matmul_op(op_name: str) -> bool:
    """:return: whether a profiler event name is a matrix-multiply kernel"""
    return op_name in MATMUL_OPS or op_name.startswith(MATMUL_PREFIXES)


def profile_gradient_steps(model: OffPolicyAlgorithm, n_steps: int) -> dict[str, float]:
    """
    Self CPU time of every operator per gradient step, from ``torch.profiler``.

    :param model: a model with a filled buffer and a logger (trained with its own ``batch_size``)
    :param n_steps: gradient steps to profile
    :return: operator name -> seconds per gradient step (self time: children excluded), largest first
    """
    # one untimed warm-up round first: the profiler's first recorded steps carry its start-up costs
    schedule = th.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)
    with th.profiler.profile(activities=[th.profiler.ProfilerActivity.CPU], schedule=schedule) as profiler:
        for _ in range(2):
            model.train(gradient_steps=n_steps, batch_size=model.batch_size)
            profiler.step()
    events = sorted(profiler.key_averages(), key=lambda event: event.self_cpu_time_total, reverse=True)
    # ProfilerStep* is the schedule's own marker, its self time is everything outside operators
    return {e.key: e.self_cpu_time_total * 1e-6 / n_steps for e in events if not e.key.startswith("ProfilerStep")}


def time_interleaved(
    run_functions: dict[str, Callable[[], Any]],
    work_per_run: int,
    repeats: int,
    on_repeat: Callable[[int], None],
    prepare: Callable[[str], None] | None = None,
) -> dict[str, list[float]]:
    """
    Time several workloads in turns: each repeat runs every workload once, the order rotating between repeats.

    :param run_functions: name -> function doing ``work_per_run`` units of work
    :param work_per_run: units of work (gradient or environment steps) per call
    :param repeats: number of rounds
    :param on_repeat: called after each round with its index (progress)
    :param prepare: called with the name before each timed call, untimed (e.g. to build a fresh model)
    :return: name -> units of work per second, one value per repeat
    """
    names = list(run_functions)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            if prepare is not None:
                prepare(name)
            gc.collect()
            start = time.perf_counter()
            run_functions[name]()
            rates[name].append(work_per_run / (time.perf_counter() - start))
        on_repeat(repeat)
    return rates


def summarize(rates: dict[str, list[float]], net_arch: Sequence[int]) -> list[dict[str, Any]]:
    """
    Median, min, max and the ratio to the SB3 baseline (from medians, and the spread of per-repeat ratios).

    :param rates: name -> rate per repeat (from ``time_interleaved``)
    :param net_arch: the architecture the rates belong to
    :return: one row per model
    """
    rows = []
    for name, values in rates.items():
        baseline = baseline_of(name)
        row: dict[str, Any] = {
            "net_arch": list(net_arch),
            "model": name,
            "per_repeat": values,
            "median": statistics.median(values),
            "min": min(values),
            "max": max(values),
            "baseline": baseline if baseline in rates else None,
        }
        if baseline in rates:
            ratios = [value / base for value, base in zip(values, rates[baseline], strict=True)]
            row["ratio"] = row["median"] / statistics.median(rates[baseline])
            row["ratio_min"], row["ratio_max"] = min(ratios), max(ratios)
        rows.append(row)
    return rows


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], label_columns: int = 2) -> str:
    """
    An aligned markdown table.

    :param headers: column titles
    :param rows: cells (strings), one list per row
    :param label_columns: how many leading columns hold labels (left-aligned); the others hold numbers (right-aligned)
    :return: the table
    """
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    right = [i >= label_columns for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if r else ":" + "-" * (w + 1) for w, r in zip(widths, right, strict=True)) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def _arch_label(net_arch: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, net_arch)) + "]"


def _ratio_cells(row: dict[str, Any]) -> list[str]:
    if "ratio" not in row:
        return ["n/a", "n/a"]
    return [f"{row['ratio']:.2f}x", f"{row['ratio_min']:.2f}-{row['ratio_max']:.2f}"]


def gradient_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of gradient steps per second"""
    headers = ["net_arch", "model", "steps/s median", "min", "max", "vs SB3", "vs SB3 range", "matmul share", "matmul-bound"]
    cells = []
    for row in rows:
        profiled = row.get("matmul_share") is not None
        cells.append(
            [
                _arch_label(row["net_arch"]),
                row["model"],
                f"{row['median']:.1f}",
                f"{row['min']:.1f}",
                f"{row['max']:.1f}",
                *_ratio_cells(row),
                f"{100 * row['matmul_share']:.0f}%" if profiled else "-",
                f"{row['matmul_bound_steps_per_s']:.0f}" if profiled else "-",
            ]
        )
    return format_table(headers, cells)


def learn_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of ``learn()`` environment steps per second"""
    headers = ["net_arch", "model", "env steps/s median", "min", "max", "vs SB3", "vs SB3 range"]
    cells = [
        [
            _arch_label(row["net_arch"]),
            row["model"],
            f"{row['median']:.1f}",
            f"{row['min']:.1f}",
            f"{row['max']:.1f}",
            *_ratio_cells(row),
        ]
        for row in rows
    ]
    return format_table(headers, cells)


def operators_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of each row's costliest operators (microseconds per gradient step)"""
    cells = [
        [_arch_label(row["net_arch"]), row["model"], op, "yes" if is_matmul_op(op) else "", f"{microseconds:.1f}"]
        for row in rows
        for op, microseconds in row.get("top_ops_us_per_step", {}).items()
    ]
    return format_table(["net_arch", "model", "operator", "matmul", "us/step"], cells, label_columns=4)


def target_lines(rows: Sequence[dict[str, Any]], batch_size: int) -> list[str]:
    """:return: one line per speed target of issue 5 that the rows can check (they hold for batch size 256)"""
    lines = []
    for row in rows:
        target = TARGET_RATIOS.get((row["model"], tuple(row["net_arch"])))
        if target is not None and "ratio" in row and batch_size == 256:
            verdict = "met" if row["ratio"] >= target else "NOT met"
            label = _arch_label(row["net_arch"])
            lines.append(f"target: {row['model']} at {label} >= {target:.2f}x SB3's TD3: {row['ratio']:.2f}x, {verdict}")
    return lines + ([""] if lines else [])


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


def write_json_atomic(path: str, data: Any) -> None:
    """Write JSON through a temporary file in the same folder and ``os.replace``, so no half-written file is left."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, tmp_path = tempfile.mkstemp(dir=folder, prefix=".bench-", suffix=".json.tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(data, file, indent=2)
        os.replace(tmp_path, path)
    except BaseException:
        os.unlink(tmp_path)
        raise


def make_parser() -> argparse.ArgumentParser:
    """:return: the command-line parser of ``sb3-ablation bench``"""
    parser = argparse.ArgumentParser(
        prog="sb3-ablation bench",
        description="Training throughput of AblatableTD3 and our DDPG against SB3's TD3 and DDPG, on Pendulum-v1.",
    )
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma-separated models for the gradient-step timing")
    parser.add_argument(
        "--net-arch", action="append", help='architectures, repeatable or space-separated: "400,300 64,64" (the default)'
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


def _resolve_options(args: argparse.Namespace) -> argparse.Namespace:
    """Fill unset size options from the default or ``--quick`` sizes, and validate them."""
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


def bench_gradient_steps(
    args: argparse.Namespace, net_arch: list[int], transitions: dict[str, np.ndarray], skipped: dict
) -> list[dict[str, Any]]:
    """
    Gradient steps per second (and the matrix-multiply share) of every model at one architecture.

    :return: one summary row per model that could be built
    """
    models: dict[str, OffPolicyAlgorithm] = {}
    for name in args.models:
        try:
            models[name] = build_model(
                name, ENV_ID, net_arch, buffer_size=args.buffer_transitions, batch_size=args.batch_size, learning_starts=0
            )
        except ModelUnavailable as reason:
            skipped[name] = str(reason)
            continue
        fill_replay_buffer(models[name].replay_buffer, transitions)
        if args.warmup:
            models[name].train(gradient_steps=args.warmup, batch_size=models[name].batch_size)
    if not models:
        return []
    label = _arch_label(net_arch)
    rates = time_interleaved(
        {
            name: (lambda m=model: m.train(gradient_steps=args.steps, batch_size=m.batch_size))
            for name, model in models.items()
        },
        args.steps,
        args.repeats,
        lambda r: _progress(f"  gradient steps {label}: repeat {r + 1}/{args.repeats} done"),
    )
    rows = summarize(rates, net_arch)
    for row in rows:
        row["matmul_share"] = row["matmul_bound_steps_per_s"] = None
        if not args.no_profile:
            op_seconds = profile_gradient_steps(models[row["model"]], args.profile_steps)
            matmul_seconds = sum(seconds for op, seconds in op_seconds.items() if is_matmul_op(op))
            if args.profile_top:
                row["top_ops_us_per_step"] = {
                    op: 1e6 * seconds for op, seconds in list(op_seconds.items())[: args.profile_top]
                }
            # share of the unprofiled median step time: the profiler's own overhead stays out of the denominator
            row["matmul_share"] = matmul_seconds * row["median"]
            row["matmul_bound_steps_per_s"] = 1.0 / matmul_seconds if matmul_seconds > 0 else None
    return rows


def bench_learn(args: argparse.Namespace, net_arch: list[int], skipped: dict) -> list[dict[str, Any]]:
    """
    Environment steps per second of whole ``learn()`` runs (a fresh model per run, built outside the timed call).

    :return: one summary row per model that could be built
    """
    action_dim = gym.make(ENV_ID).action_space.shape[0]
    models: dict[str, OffPolicyAlgorithm] = {}

    def prepare(name: str) -> None:
        models[name] = build_model(
            name,
            ENV_ID,
            net_arch,
            buffer_size=args.learn_steps,
            batch_size=args.batch_size,
            learning_starts=args.learning_starts,
            action_noise=NormalActionNoise(np.zeros(action_dim), 0.1 * np.ones(action_dim)),
        )

    names = []
    for name in args.learn_models:
        try:
            prepare(name)
            names.append(name)
        except ModelUnavailable as reason:
            skipped[name] = str(reason)
    if not names:
        return []
    label = _arch_label(net_arch)
    rates = time_interleaved(
        {name: (lambda n=name: models[n].learn(total_timesteps=args.learn_steps)) for name in names},
        args.learn_steps,
        args.learn_repeats,
        lambda r: _progress(f"  learn() {label}: repeat {r + 1}/{args.learn_repeats} done"),
        prepare=prepare,
    )
    return summarize(rates, net_arch)


def main(argv: list[str] | None = None) -> int:
    """
    Run the benchmark and print its tables.

    :param argv: command-line arguments (without the program name); ``sys.argv[1:]`` when None
    :return: exit code
    """
    parser = make_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        args = _resolve_options(args)
    except ValueError as error:
        parser.error(str(error))

    previous_threads = th.get_num_threads()
    th.set_num_threads(args.threads)
    try:
        header = (
            f"sb3-ablation bench: {ENV_ID}, torch {th.__version__}, stable-baselines3 {stable_baselines3.__version__}, "
            f"{args.threads} torch thread(s), {os.cpu_count()} CPU(s); batch {args.batch_size}, "
            f"{args.steps} gradient steps x {args.repeats} interleaved repeats"
        )
        _progress(header)
        transitions = collect_random_transitions(ENV_ID, args.buffer_transitions)
        skipped: dict[str, str] = {}
        gradient_rows: list[dict[str, Any]] = []
        learn_rows: list[dict[str, Any]] = []
        for net_arch in args.net_arch:
            if args.models:
                gradient_rows += bench_gradient_steps(args, net_arch, transitions, skipped)
            if args.learn_models and args.learn_steps:
                learn_rows += bench_learn(args, net_arch, skipped)
    finally:
        th.set_num_threads(previous_threads)

    print(f"# {header}\n")
    if gradient_rows:
        print("## Gradient steps per second (model.train, same filled buffer)\n")
        print(gradient_table(gradient_rows) + "\n")
        print(
            "vs SB3: ratio of medians to SB3's TD3 (DDPG rows: SB3's DDPG); range: min-max of per-repeat ratios. "
            "matmul share: time in matrix-multiply kernels / median step time; matmul-bound: steps/s if nothing else cost."
        )
        if any(row["model"] == "td3_no_replay_buffer" for row in gradient_rows):
            print("td3_no_replay_buffer learns from the newest transition alone: its steps use a batch of 1.")
        print()
        for line in target_lines(gradient_rows, args.batch_size):
            print(line)
        if args.profile_top and not args.no_profile:
            print(f"## Costliest operators per gradient step (self CPU time, torch.profiler, top {args.profile_top})\n")
            print(operators_table(gradient_rows) + "\n")
    if learn_rows:
        print(
            f"## learn() environment steps per second ({args.learn_steps} steps, learning_starts {args.learning_starts}, "
            f"{args.learn_repeats} interleaved repeats)\n"
        )
        print(learn_table(learn_rows) + "\n")
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")

    if args.json:
        config = {key: value for key, value in vars(args).items() if key != "json"}
        system = {
            "torch": th.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
        }
        results = {"config": config, "system": system, "gradient_steps": gradient_rows, "learn": learn_rows}
        write_json_atomic(args.json, {**results, "skipped": skipped})
        print(f"results saved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
