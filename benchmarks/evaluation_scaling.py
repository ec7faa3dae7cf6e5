"""
Evaluation time of a batched group of K agents (Pendulum-v1, [64, 64], the study's evaluation: 10 episodes on 10
envs side by side, each run past the time limit for the overestimation's returns), each agent evaluated on its own
(one ``predict`` per agent and step) against all agents in lockstep (one call of the group's actor per step,
``RunGroup(vectorised_evaluation=True)``, the default on CUDA); and how far the two evaluations' returns are apart
on trained weights.

    OMP_NUM_THREADS=1 python benchmarks/evaluation_scaling.py --agents 10 64 --repeats 3
    python benchmarks/evaluation_scaling.py --device cuda --agents 10 64 --repeats 2 --agreement-steps 1000 \
        --json "$OUT/evaluation_scaling_cuda.json"                     # see benchmarks/gpu_check.sh
    python benchmarks/evaluation_scaling.py --device cuda --agents 640 --repeats 1 --agreement-steps 0  # minutes

Timing: a group of K TD3 runs is built as the batched engine builds it, and all its agents are evaluated at once
(``AgentEvaluations.evaluate_now``: the episodes, then critic 1's values on the visited states), each mode in turn,
``--repeats`` times, the modes' order alternating, so that machine load hits both alike; the median, minimum and
maximum over the repeats are printed (and written with ``--json``, after each group size). The time is wall time (on
CUDA after a synchronisation).

Agreement (``--agreement-seeds``, ``--agreement-steps``): one group of TD3 seeds trained and evaluated both ways (the
training is the same: an evaluation draws no random number), the evaluations' mean returns compared: the largest
absolute difference, and how many evaluations are bit-identical (``same_training``: whether the two trainings gave
the same diagnostics, as they do on one device and thread count).

On the CPU most of an evaluation is the envs' own stepping (Pendulum, Monitor and the evaluation wrappers in a
``DummyVecEnv``, about 25 us per env step); the lockstep saves the per-agent ``predict`` calls (about 60 us each on
this CPU, more on a GPU, where each is a round trip to the device).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch as th

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.batched import RunGroup, _build_group, execute_group
from sb3_ablation.study.run.run_warnings import RunWarnings

MODES = {"per_agent": False, "vectorised": True}


def _tasks(n_agents: int, steps: int, device: str, eval_freq: int, learning_starts: int) -> list[RunTask]:
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=n_agents, out="unused", n_timesteps=steps, eval_freq=eval_freq,
        eval_episodes=10, engine="batched", device=device, checkpoint_freq=0, progress=False,
        hyperparams={"learning_starts": learning_starts, "policy_kwargs": "dict(net_arch=[64, 64])"},
    )  # fmt: skip
    variants = config.variant_objects
    return [
        dataclasses.replace(task, record=None) for task in make_tasks(config, variants, resolve_hyperparams(config, variants))
    ]


def _group(tasks: list[RunTask], vectorised: bool) -> list[dict[str, Any]]:
    records = execute_group(RunGroup("Pendulum-v1", "td3", [dataclasses.replace(task) for task in tasks], vectorised))
    failed = [record["traceback"] for record in records if record["status"] != "ok"]
    if failed:
        raise RuntimeError(failed[0])
    return records


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _built(n_agents: int, device: str) -> Any:
    """A fresh group of ``n_agents`` TD3 runs (untrained: an evaluation's time does not depend on the weights)."""
    tasks = _tasks(n_agents, 2, device, eval_freq=1, learning_starts=1)
    with contextlib.redirect_stdout(io.StringIO()):
        built = _build_group(tasks, None, RunWarnings(), vectorised=False)
    built.evaluations.init_callback(built.batched)
    return built


def timing(agents: list[int], repeats: int, device: str, report: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """
    Each group size's time of one evaluation of all its agents (s), per mode, over the repeats; ``report`` gets the
    results so far after each group size.
    """
    results: dict[str, Any] = {}
    for n in agents:
        built = _built(n, device)
        evaluations = built.evaluations
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        for repeat in range(repeats):
            for mode in list(MODES) if repeat % 2 == 0 else list(reversed(MODES)):
                evaluations.vectorised = MODES[mode]
                if device.startswith("cuda"):
                    th.cuda.synchronize()
                started = time.perf_counter()
                evaluations.evaluate_now()
                times[mode].append(time.perf_counter() - started)
                failures = [failure for failure in evaluations.failures if failure is not None]
                if failures:
                    raise RuntimeError(failures[0][1])
                print(f"  K={n:4d}, repeat {repeat}, {mode:10s}: {times[mode][-1]:7.2f} s", flush=True)
        per_agent, vectorised = (_summary(times[mode]) for mode in MODES)
        results[str(n)] = {
            "per_agent_s": per_agent,
            "vectorised_s": vectorised,
            "speedup_median": per_agent["median"] / vectorised["median"],
            "speedup_per_repeat": [a / b for a, b in zip(times["per_agent"], times["vectorised"], strict=True)],
            "per_agent_runs_s": times["per_agent"],
            "vectorised_runs_s": times["vectorised"],
        }
        report(results)
        built.batched.get_env().close()
        for evaluator in evaluations.evaluators:
            evaluator.eval_env.close()
    return results


def agreement(seeds: int, steps: int, device: str) -> dict[str, Any]:
    """How far the mean returns of the two evaluations of the same trained group are apart."""
    tasks = _tasks(seeds, steps, device, eval_freq=steps // 10, learning_starts=steps // 10)
    per_agent, vectorised = (_group(tasks, MODES[mode]) for mode in MODES)
    differences, identical, total = [], 0, 0
    same_training = all(a["diagnostics"] == b["diagnostics"] for a, b in zip(per_agent, vectorised, strict=True))
    for alone, lockstep in zip(per_agent, vectorised, strict=True):
        for a, b in zip(alone["evaluations"]["mean_return"], lockstep["evaluations"]["mean_return"], strict=True):
            differences.append(abs(a - b))
            identical += a == b
            total += 1
    returns = [abs(value) for record in per_agent for value in record["evaluations"]["mean_return"]]
    return {
        "seeds": seeds,
        "steps": steps,
        "same_training": same_training,
        "evaluations": total,
        "bit_identical_evaluations": identical,
        "max_abs_difference_of_mean_return": max(differences),
        "median_abs_difference_of_mean_return": statistics.median(differences),
        "median_abs_mean_return": statistics.median(returns),
        "final_mean_returns": [record["evaluations"]["mean_return"][-1] for record in per_agent],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, nargs="*", default=[10, 64], help="group sizes timed (none: no timing)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--agreement-seeds", type=int, default=5)
    parser.add_argument("--agreement-steps", type=int, default=2000, help="0: no agreement measure")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    th.set_num_threads(1)
    started = time.time()
    results: dict[str, Any] = {
        "benchmark": "evaluation_scaling",
        "command": " ".join(sys.argv),
        "device": args.device,
        "device_name": th.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor(),
        "torch": th.__version__,
        "setting": "Pendulum-v1, TD3 [64, 64], one evaluation of every agent: 10 episodes on 10 envs",
    }

    def report(timings: dict[str, Any]) -> None:
        results["timing"] = timings
        results["wall_time_s"] = time.time() - started
        if args.json:  # (after each group size: a run cut short keeps what it measured)
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")

    results["timing"] = timing(args.agents, args.repeats, args.device, report)
    if args.agreement_steps:
        results["agreement"] = agreement(args.agreement_seeds, args.agreement_steps, args.device)
        report(results["timing"])
    for n, values in results["timing"].items():
        per_agent, vectorised = values["per_agent_s"], values["vectorised_s"]
        print(
            f"K={n:>4}: per agent {per_agent['median']:7.2f} s [{per_agent['min']:.2f}, {per_agent['max']:.2f}], "
            f"vectorised {vectorised['median']:7.2f} s [{vectorised['min']:.2f}, {vectorised['max']:.2f}], "
            f"x{values['speedup_median']:.2f}"
        )
    if "agreement" in results:
        print("agreement:", json.dumps(results["agreement"]))


if __name__ == "__main__":
    main()
