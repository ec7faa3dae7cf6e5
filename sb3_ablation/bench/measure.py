"""Measurements of the throughput benchmark: interleaved timing, the profiler's matrix-multiply share, where the time
of a ``learn()`` step goes, and the hardware the numbers come from."""

from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.preprocessing import get_action_dim

from sb3_ablation.bench.models import ENV_ID, baseline_of, build_model, fill_replay_buffer, speed_mode_description
from sb3_ablation.common.mixed_precision import bfloat16_speedup, cpu_has_bfloat16_instructions

# Matrix-multiply kernels as the CPU profiler names them: nn.Linear runs aten::addmm forward and aten::mm backward;
# oneDNN-fused linear layers (torch.compile on CPU) show up as mkldnn::_linear_pointwise.
MATMUL_OPS = frozenset(
    {"aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::addmv", "aten::mv", "aten::dot"}
)
MATMUL_PREFIXES = ("mkldnn::_linear", "aten::mkldnn_linear", "aten::_addmm_activation")
# The parts of a learn() step timed separately; the rest of the step is SB3's loop (callbacks, logging, bookkeeping)
LEARN_PHASES = ("train", "action", "env step", "store")


def is_matmul_op(op_name: str) -> bool:
    """:return: whether a profiler event name is a matrix-multiply kernel"""
    return op_name in MATMUL_OPS or op_name.startswith(MATMUL_PREFIXES)


def cpu_model_name() -> str:
    """:return: the CPU's model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)"""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_info(threads: int) -> dict[str, Any]:
    """
    The machine the numbers come from, with its bfloat16 support and a measured bfloat16 speed-up.

    :param threads: torch threads of the benchmark
    :return: CPU model, CPU count, torch threads, whether the CPU has native bfloat16 products, the bfloat16 / float32
        speed of a 256x400x300 layer's products (the speed mode's measurement), library versions
    """
    has_bfloat16 = cpu_has_bfloat16_instructions()
    return {
        "cpu": cpu_model_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "cpu_capability": th.backends.cpu.get_cpu_capability(),
        "bfloat16_instructions": has_bfloat16,
        "bfloat16_speedup_256x400x300": bfloat16_speedup(th.device("cpu"), 256, 400, 300) if has_bfloat16 else None,
        "torch": th.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


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


class PhaseTimer:
    """
    Wall time of the parts of ``learn()``: the instance's ``train``, ``_sample_action`` and ``_store_transition``
    and its env's ``step`` are wrapped (on the instance only) to add up their time.

    :param model: a model about to ``learn()``; its env must be set
    """

    def __init__(self, model: OffPolicyAlgorithm):
        self.seconds = dict.fromkeys(LEARN_PHASES, 0.0)
        targets = {"train": model, "action": model, "store": model, "env step": model.get_env()}
        methods = {"train": "train", "action": "_sample_action", "store": "_store_transition", "env step": "step"}
        # Instrumentation, on this benchmark's own instances only: neither SB3's learn() nor its callbacks mark where
        # these calls begin and end, and the same code must time SB3's models and ours
        for phase, owner in targets.items():
            setattr(owner, methods[phase], self._timed(phase, getattr(owner, methods[phase])))

    def _timed(self, phase: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - start

        return timed


def learn_model(options: argparse.Namespace, name: str, net_arch: list[int]) -> OffPolicyAlgorithm:
    """:return: a fresh model for a timed ``learn()`` run (rl-zoo's Pendulum action noise 0.1)"""
    action_dim = get_action_dim(gym.make(ENV_ID).action_space)
    return build_model(
        name,
        ENV_ID,
        net_arch,
        buffer_size=options.learn_steps,
        batch_size=options.batch_size,
        learning_starts=options.learning_starts,
        action_noise=NormalActionNoise(np.zeros(action_dim), 0.1 * np.ones(action_dim)),
    )


def bench_gradient_steps(
    options: argparse.Namespace, net_arch: list[int], transitions: dict[str, np.ndarray], progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    """
    Gradient steps per second (and the matrix-multiply share) of every model at one architecture.

    :param options: the benchmark's resolved options (see ``sb3_ablation.bench.cli``)
    :param net_arch: hidden layer sizes
    :param transitions: the replay buffer content every model trains on
    :param progress: receives one line per finished repeat
    :return: one summary row per model
    """
    models: dict[str, OffPolicyAlgorithm] = {}
    for name in options.models:
        models[name] = build_model(
            name, ENV_ID, net_arch, buffer_size=options.buffer_transitions, batch_size=options.batch_size, learning_starts=0
        )
        buffer = models[name].replay_buffer
        assert buffer is not None  # built with the model
        fill_replay_buffer(buffer, transitions)
        if options.warmup:
            models[name].train(gradient_steps=options.warmup, batch_size=models[name].batch_size)
    rates = time_interleaved(
        {
            name: functools.partial(model.train, gradient_steps=options.steps, batch_size=model.batch_size)
            for name, model in models.items()
        },
        options.steps,
        options.repeats,
        lambda r: progress(f"  gradient steps {net_arch}: repeat {r + 1}/{options.repeats} done"),
    )
    rows = summarize(rates, net_arch)
    for row in rows:
        row["speed_mode"] = speed_mode_description(models[row["model"]])
        row["matmul_share"] = row["matmul_bound_steps_per_s"] = None
        if not options.no_profile:
            op_seconds = profile_gradient_steps(models[row["model"]], options.profile_steps)
            matmul_seconds = sum(seconds for op, seconds in op_seconds.items() if is_matmul_op(op))
            if options.profile_top:
                row["top_ops_us_per_step"] = {
                    op: 1e6 * seconds for op, seconds in list(op_seconds.items())[: options.profile_top]
                }
            # share of the unprofiled median step time: the profiler's own overhead stays out of the denominator
            row["matmul_share"] = matmul_seconds * row["median"]
            row["matmul_bound_steps_per_s"] = 1.0 / matmul_seconds if matmul_seconds > 0 else None
    return rows


def bench_learn(options: argparse.Namespace, net_arch: list[int], progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """
    Environment steps per second of whole ``learn()`` runs (a fresh model per run, built outside the timed call),
    and where the time of a step went: each model's last run is timed by phase.

    :param options: the benchmark's resolved options (see ``sb3_ablation.bench.cli``)
    :param net_arch: hidden layer sizes
    :param progress: receives one line per finished repeat
    :return: one summary row per model, with ``phases_ms``: milliseconds per environment step by phase
    """
    models: dict[str, OffPolicyAlgorithm] = {}

    def prepare(name: str) -> None:
        models[name] = learn_model(options, name, net_arch)

    def learn(name: str) -> None:
        models[name].learn(total_timesteps=options.learn_steps)  # the model `prepare` built for this repeat

    rates = time_interleaved(
        {name: functools.partial(learn, name) for name in options.learn_models},
        options.learn_steps,
        options.learn_repeats,
        lambda r: progress(f"  learn() {net_arch}: repeat {r + 1}/{options.learn_repeats} done"),
        prepare=prepare,
    )
    rows = summarize(rates, net_arch)
    for row in rows:
        model = learn_model(options, row["model"], net_arch)
        row["speed_mode"] = speed_mode_description(model)
        timer = PhaseTimer(model)
        start = time.perf_counter()
        model.learn(total_timesteps=options.learn_steps)
        total = time.perf_counter() - start
        phases = {phase: 1e3 * seconds / options.learn_steps for phase, seconds in timer.seconds.items()}
        phases["loop"] = 1e3 * total / options.learn_steps - sum(phases.values())
        row["phases_ms"] = phases
    return rows
