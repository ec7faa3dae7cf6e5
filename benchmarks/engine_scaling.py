"""
Agent-steps per second of the batched engine for K agents of mixed variants (Pendulum-v1, [64, 64]): one BatchedTD3
holding all K (a mixed group, ``--group-size``) against the same K agents in per-variant groups (one BatchedTD3 per
variant, trained one after another, as the default grouping does), and SB3's TD3 (one agent) as the reference.

The K agents cycle through the 32 cells of the switches an agent may have on its own (clipped_double_q x
target_networks x target_policy_smoothing x delayed_policy_update x deterministic_policy). Each setting is timed
for ``--steps`` steps of each agent after its ``learning_starts`` (not timed; on the CPU in process CPU time, one
thread, on a GPU in wall time), ``--repeats`` times, settings interleaved; the medians, minima and maxima are printed
(and written with ``--json``).

    OMP_NUM_THREADS=1 python benchmarks/engine_scaling.py --agents 1 10 64 --steps 100 --repeats 3 \
        --json benchmarks/results/engine_scaling_cpu.json
    python benchmarks/engine_scaling.py --device cuda --agents 1 10 64 640 --factorial-steps 2000 \
        --json benchmarks/results/engine_scaling_cuda.json       # see benchmarks/gpu_check.sh

With ``--engines`` it compares the engines instead, for TD3 on each env of ``--envs`` ([64, 64]): SB3's TD3 and
AblatableTD3 (one agent), and K TD3 agents in one BatchedTD3, eager (``--engine batched``) and with its update step
compiled (``--engine batched-compiled``; compiled during the warm-up, its seconds reported apart), every setting in
each repeat, interleaved, so that ratios measured side by side hold on a machine shared with other jobs:

    OMP_NUM_THREADS=1 python benchmarks/engine_scaling.py --engines --envs Pendulum-v1 Hopper-v5 --agents 1 10 64 \
        --steps 100 --repeats 3 --json benchmarks/results/engine_scaling_compiled_cpu.json

With ``--factorial-steps N`` it also reports the wall time of the whole 2^6 x 10-seed Pendulum factorial (N steps
per run) trained by the study runner with ``--engine batched --group-size 640`` (one worker: one process at a
time), meant for a GPU.
"""

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch as th

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from stable_baselines3 import TD3
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.batched.mixing import MIXABLE_SWITCHES
from sb3_ablation.bench.measure import cpu_model_name

LEARNING_STARTS = 100
SETTINGS = dict(learning_starts=LEARNING_STARTS, batch_size=256, policy_kwargs=dict(net_arch=[64, 64]))
#: the cells of the mixable switches (2^5 = 32), TD3 first
CELLS = [
    dict(zip(MIXABLE_SWITCHES, values, strict=True))
    for values in itertools.product((True, False), repeat=len(MIXABLE_SWITCHES))
]


def _noise(dimensions: int = 1) -> NormalActionNoise:
    return NormalActionNoise(np.zeros(dimensions), 0.1 * np.ones(dimensions))


def _batched(switches: list[dict[str, bool]], device: str, mixed: bool, replay_on_device: bool | None = None) -> BatchedTD3:
    env = make_vec_env("Pendulum-v1", n_envs=len(switches), seed=0)
    settings = dict(SETTINGS, seed=0, device=device, action_noise=_noise(), replay_on_device=replay_on_device)
    if mixed:
        return BatchedTD3("MlpPolicy", env, agent_switches=switches, **settings)
    return BatchedTD3("MlpPolicy", env, **switches[0], **settings)


def _timed_learn(model, steps: int) -> float:
    """
    Seconds of ``steps`` steps of each agent after ``learning_starts`` (the warm-up is not timed): the process's CPU
    time on the CPU (one thread: stable on a machine shared with other jobs), wall time on a GPU.
    """
    model.learn(LEARNING_STARTS + 1)
    on_cpu = model.device.type == "cpu"
    clock = time.process_time if on_cpu else time.perf_counter
    if not on_cpu:
        th.cuda.synchronize()
    started = clock()
    model.learn(steps, reset_num_timesteps=False)
    if not on_cpu:
        th.cuda.synchronize()
    return clock() - started


def agent_steps_per_second(
    n_agents: int,
    steps: int,
    device: str,
    mixed: bool,
    replay_on_device: bool | None = None,
    mixed_group_size: int | None = None,
) -> float:
    """
    Agent-steps per second of ``n_agents`` agents cycling through CELLS: mixed groups, or per-variant groups.

    :param replay_on_device: BatchedTD3's setting (``None``: its default, the batches gathered on a GPU)
    :param mixed_group_size: mixed groups of at most this many agents, consecutive ones (``None``: one group of all)
    """
    switches = [CELLS[agent % len(CELLS)] for agent in range(n_agents)]
    if mixed:
        size = mixed_group_size or n_agents
        groups = [switches[start : start + size] for start in range(0, n_agents, size)]
        elapsed = sum(_timed_learn(_batched(group, device, True, replay_on_device), steps) for group in groups)
        return n_agents * steps / elapsed
    elapsed = 0.0
    for cell in CELLS:
        members = [agent_switches for agent_switches in switches if agent_switches == cell]
        if members:
            elapsed += _timed_learn(_batched(members, device, False, replay_on_device), steps)
    return n_agents * steps / elapsed


def sb3_steps_per_second(steps: int, device: str) -> float:
    """Steps per second of SB3's TD3 with the same settings (one agent)."""
    model = TD3("MlpPolicy", "Pendulum-v1", seed=0, device=device, action_noise=_noise(), **SETTINGS)
    return steps / _timed_learn(model, steps)


def factorial_wall_time(steps: int, device: str) -> float:
    """
    Seconds of the 2^6 x 10-seed Pendulum factorial, ``steps`` steps per run (half of them warm-up), batched engine,
    groups of up to 640 (one per value of replay_buffer).
    """
    from sb3_ablation.study.plan.config import StudyConfig
    from sb3_ablation.study.run.runner import run_study

    with tempfile.TemporaryDirectory() as out:
        config = StudyConfig(
            envs=["Pendulum-v1"], variants=["factorial"], seeds=10, out=out, n_timesteps=steps, eval_freq=steps,
            eval_episodes=2, workers=1, device=device,
            # half of each run warm-up, as the committed design (10,000 of 20,000 steps)
            hyperparams={"policy_kwargs": "dict(net_arch=[64, 64])", "learning_starts": steps // 2},
            engine="batched", group_size=640, progress=False, checkpoint_freq=0,
        )  # fmt: skip
        started = time.perf_counter()
        result = run_study(config, log=lambda _: None)
        elapsed = time.perf_counter() - started
    if result.ok != 640:
        raise RuntimeError(f"{640 - result.ok} runs failed: {result.failed}")
    return elapsed


#: the engines of ``--engines``: one agent of SB3's TD3 and of AblatableTD3, K agents of BatchedTD3 eager and compiled
ENGINES = ("sb3_td3", "ablatable_td3", "batched", "batched-compiled")


def engine_rate(engine: str, env_id: str, n_agents: int, steps: int, compile_s: dict[str, float]) -> float:
    """
    Agent-steps per second of ``engine`` on ``env_id`` (TD3, [64, 64]; one agent for SB3's TD3 and AblatableTD3).

    :param compile_s: where the compiled engine's compile seconds (its first gradient step) go, by ``env K``
    """
    dimensions = int(np.prod(make_vec_env(env_id, n_envs=1).action_space.shape))
    if engine in ("sb3_td3", "ablatable_td3"):
        algo = TD3 if engine == "sb3_td3" else AblatableTD3
        model = algo("MlpPolicy", env_id, seed=0, action_noise=_noise(dimensions), **SETTINGS)
        return steps / _timed_learn(model, steps)
    env = make_vec_env(env_id, n_envs=n_agents, seed=0)
    compiled = engine == "batched-compiled"
    model = BatchedTD3("MlpPolicy", env, seed=0, action_noise=_noise(dimensions), compile_update=compiled, **SETTINGS)
    rate = n_agents * steps / _timed_learn(model, steps)
    if compiled:
        compile_s.setdefault(f"{env_id} {n_agents}", sum(model.update_step.compile_s.values()))
    return rate


def compare_engines(env_ids: list[str], agents: list[int], steps: int, repeats: int) -> dict:
    """The agent-steps per second of each engine of ENGINES (one repeat of every setting after another)."""
    rates: dict[str, dict[str, list[float]]] = {}
    compile_s: dict[str, float] = {}
    for _ in range(repeats):
        for env_id in env_ids:
            for engine in ENGINES:
                for n_agents in [1] if engine in ("sb3_td3", "ablatable_td3") else agents:
                    rate = engine_rate(engine, env_id, n_agents, steps, compile_s)
                    rates.setdefault(f"{env_id} {engine} {n_agents}", []).append(rate)
    results: dict = {"agent_steps_per_s": {key: _summary(values) for key, values in rates.items()}, "ratios": {}}
    results["compile_s"] = compile_s
    for env_id in env_ids:
        sb3 = rates[f"{env_id} sb3_td3 1"]
        for n_agents in agents:
            eager, compiled = rates[f"{env_id} batched {n_agents}"], rates[f"{env_id} batched-compiled {n_agents}"]
            results["ratios"][f"{env_id} {n_agents}"] = {
                # (each ratio of one repeat's rates, measured side by side)
                "compiled_over_eager": _summary([c / e for c, e in zip(compiled, eager, strict=True)]),
                "compiled_over_sb3": _summary([c / s for c, s in zip(compiled, sb3, strict=True)]),
                "eager_over_sb3": _summary([e / s for e, s in zip(eager, sb3, strict=True)]),
            }
    return results


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": float(np.median(values)), "min": min(values), "max": max(values), "all": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 10, 64, 640], help="the values of K")
    parser.add_argument("--steps", type=int, default=200, help="timed steps of each agent")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--factorial-steps", type=int, help="also time the 2^6 x 10-seed factorial, this many steps")
    parser.add_argument(
        "--replay-on-device",
        choices=("auto", "yes", "no"),
        default="auto",
        help="gather the replay batches on the device (BatchedTD3's replay_on_device; auto: off the CPU)",
    )
    parser.add_argument(
        "--mixed-group-size", type=int, help="mixed groups of at most this many agents (default: one group of all K)"
    )
    parser.add_argument("--engines", action="store_true", help="compare the engines (see the module docstring)")
    parser.add_argument("--envs", nargs="+", default=["Pendulum-v1"], help="the envs of --engines")
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--machine-note", default="", help="what else ran on the machine (into the JSON)")
    args = parser.parse_args()
    replay_on_device = {"auto": None, "yes": True, "no": False}[args.replay_on_device]
    if args.device == "cpu":
        th.set_num_threads(1)
    if args.engines:
        _print_engines(args)
        return
    rates: dict[str, dict[str, list[float]]] = {str(k): {"per_variant": [], "mixed": []} for k in args.agents}
    sb3: list[float] = []
    for _ in range(args.repeats):
        sb3.append(sb3_steps_per_second(args.steps, args.device))
        for n_agents in args.agents:
            for mixed in (False, True):
                rate = agent_steps_per_second(
                    n_agents, args.steps, args.device, mixed, replay_on_device, args.mixed_group_size
                )
                rates[str(n_agents)]["mixed" if mixed else "per_variant"].append(rate)
    result: dict = {
        "command": " ".join(sys.argv),
        "device": args.device if args.device == "cpu" else th.cuda.get_device_name(),
        "cpu": cpu_model_name(),
        "machine": args.machine_note,
        "threads": th.get_num_threads(),
        "torch": th.__version__,
        "steps": args.steps,
        "replay_on_device": args.replay_on_device,
        "mixed_group_size": args.mixed_group_size,
        "repeats": args.repeats,
        "sb3_td3_steps_per_s": _summary(sb3),
        "agent_steps_per_s": {},
    }
    print(f"{result['device']} ({result['cpu']}), agent-steps/s, median [min, max] of {args.repeats}")
    print(f"SB3 TD3 (one agent): {result['sb3_td3_steps_per_s']['median']:.0f} [{min(sb3):.0f}, {max(sb3):.0f}]")
    for n_agents, by_setting in rates.items():
        summary = {setting: _summary(values) for setting, values in by_setting.items()}
        ratios = [
            mixed / per_variant for mixed, per_variant in zip(by_setting["mixed"], by_setting["per_variant"], strict=True)
        ]
        summary["mixed_over_per_variant"] = _summary(ratios)
        result["agent_steps_per_s"][n_agents] = summary
        line = ", ".join(
            f"{setting} {summary[setting]['median']:.0f} [{summary[setting]['min']:.0f}, {summary[setting]['max']:.0f}]"
            for setting in ("per_variant", "mixed")
        )
        print(f"K={n_agents}: {line}; mixed / per-variant {summary['mixed_over_per_variant']['median']:.2f}")
    if args.json and args.factorial_steps:  # (written first without the factorial: it may run out of time)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.factorial_steps:
        seconds = factorial_wall_time(args.factorial_steps, args.device)
        result["factorial_2x6_10_seeds"] = {"steps_per_run": args.factorial_steps, "wall_time_s": seconds}
        print(f"2^6 x 10 seeds, {args.factorial_steps} steps per run: {seconds:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def _print_engines(args: argparse.Namespace) -> None:
    """``--engines``: run :func:`compare_engines`, print its table, write its JSON."""
    result = {
        "command": " ".join(sys.argv),
        "device": args.device,
        "cpu": cpu_model_name(),
        "machine": args.machine_note,
        "threads": th.get_num_threads(),
        "torch": th.__version__,
        "steps": args.steps,
        "repeats": args.repeats,
        "batch_size": SETTINGS["batch_size"],
        "net_arch": SETTINGS["policy_kwargs"]["net_arch"],
        **compare_engines(args.envs, args.agents, args.steps, args.repeats),
    }
    print(f"{result['cpu']}, one thread, agent-steps/s per CPU second, median [min, max] of {args.repeats}")
    for key, summary in result["agent_steps_per_s"].items():
        print(f"{key}: {summary['median']:.0f} [{summary['min']:.0f}, {summary['max']:.0f}]")
    for key, ratios in result["ratios"].items():
        print(key, ", ".join(f"{name} {ratio['median']:.2f}" for name, ratio in ratios.items()))
    print("compile s:", {key: round(value, 1) for key, value in result["compile_s"].items()})
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
