"""
Runs per hour of the ablation study: one worker process against two (issue: at least 1.8x on 2 cores), or the
process engine against the batched engine, both on two workers (``--compare engines``: at least 1.6x).

The same small study (Pendulum-v1, [64, 64] networks) runs into fresh folders with each setting, alternating,
``--repeats`` times each; prints runs per hour (median, min, max) and the ratio of medians.

    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py            # about 6 minutes on an idle 2-core CPU
    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py --compare engines --runs 5 --variants td3 \
        no_target_policy_smoothing --repeats 3 --json benchmarks/results/study_engines.json   # about 5 minutes

``--compare groupings``: the wall time of the committed 2^6 Pendulum design (``study_files/pendulum_2x6.yml``: 64 cells
x 10 seeds, 20,000 steps, the first ``learning_starts`` = 10,000 of them random warm-up actions, 21 evaluations of 10
episodes) on this CPU with the batched engine's per-variant groups (64 groups of 10 seeds) against mixed groups sized to
the cores (:func:`~sb3_ablation.study.run.batched.core_group_size`), extrapolated from a slice: for each class of runs
that can share a group (the values of the switches of the whole group), per-variant groups of every ``--cell-stride``-th
cell and the class's first mixed group are timed for ``--steps`` warm-up and ``--steps`` training steps of each agent
(process CPU time, one thread), and the cost of building a run and evaluating it 21 times is timed once with the study
runner; the extrapolation (CPU seconds per agent-step times 10,000 warm-up and 10,000 training steps of each run, plus
the per-run cost, the groups then scheduled on the workers in order, each taking the next group when free) is written
out term by term:

    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py --compare groupings --steps 60 \
        --json benchmarks/results/study_scaling_2x6.json                                      # about 5 minutes
"""

import argparse
import ast
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise

from sb3_ablation.batched import BatchedTD3
from sb3_ablation.batched.mixing import MIXABLE_SWITCHES
from sb3_ablation.bench.measure import cpu_model_name
from sb3_ablation.study.plan.config import StudyConfig, load_config_file, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.batched import core_group_size, mixing_key
from sb3_ablation.study.run.runner import run_study


def runs_per_hour(
    workers: int, runs: int, n_timesteps: int, engine: str = "process", variants: list[str] | None = None
) -> float:
    """
    Run one fresh study with ``workers`` processes; return finished runs per hour of wall time.

    :param runs: seeds per variant
    """
    variants = variants or ["td3"]
    with tempfile.TemporaryDirectory() as out:
        config = StudyConfig(
            envs=["Pendulum-v1"],
            variants=variants,
            seeds=list(range(runs)),
            out=out,
            n_timesteps=n_timesteps,
            eval_freq=n_timesteps // 2,
            eval_episodes=2,
            hyperparams={"learning_starts": n_timesteps // 5, "policy_kwargs": "dict(net_arch=[64, 64])"},
            workers=workers,
            engine=engine,
            progress=False,
        )
        started = time.perf_counter()
        result = run_study(config, log=lambda _: None)
        elapsed = time.perf_counter() - started
    total = runs * len(variants)
    if result.ok != total:
        raise RuntimeError(f"{total - result.ok} runs failed: {result.failed}")
    return total / elapsed * 3600


def _design_settings() -> dict[str, Any]:
    """The committed 2^6 Pendulum design's study settings."""
    return load_config_file("pendulum_2x6")


def _class_cpu_seconds(switches: list[dict[str, bool]], group_size: int, steps: int, zoo: dict[str, Any]) -> dict:
    """
    CPU seconds per agent-step of warm-up and of training for agents of one class (``switches``, one per agent), in
    groups of at most ``group_size`` agents (per-variant: one group per cell), each group timed for ``steps`` warm-up
    then ``steps`` training steps of each agent.
    """
    net_arch = ast.literal_eval(zoo["policy_kwargs"].removeprefix("dict(net_arch=").removesuffix(")"))
    settings = dict(
        learning_starts=steps, batch_size=256, gamma=zoo["gamma"], buffer_size=zoo["buffer_size"],
        learning_rate=zoo["learning_rate"], policy_kwargs=dict(net_arch=net_arch),
    )  # fmt: skip
    warmup = training = 0.0
    for start in range(0, len(switches), group_size):
        members = switches[start : start + group_size]
        env = make_vec_env("Pendulum-v1", n_envs=len(members), seed=0)
        noise = NormalActionNoise(np.zeros(1), zoo["noise_std"] * np.ones(1))
        fixed = {name: value for name, value in members[0].items() if name not in MIXABLE_SWITCHES}
        model = BatchedTD3("MlpPolicy", env, agent_switches=members, seed=0, action_noise=noise, **fixed, **settings)
        started = time.process_time()
        model.learn(steps)  # the warm-up: random actions, no update
        warmup += time.process_time() - started
        started = time.process_time()
        model.learn(steps, reset_num_timesteps=False)
        training += time.process_time() - started
    agent_steps = len(switches) * steps
    return {"warmup_s_per_agent_step": warmup / agent_steps, "training_s_per_agent_step": training / agent_steps}


def _run_overhead_s() -> float:
    """CPU seconds of building one run and evaluating it as the design does (21 evaluations of 10 episodes)."""
    settings = _design_settings()
    with tempfile.TemporaryDirectory() as out:
        config = StudyConfig(
            envs=["Pendulum-v1"], variants=["td3"], seeds=[0, 1], out=out, n_timesteps=100, eval_freq=5,
            eval_episodes=settings["eval_episodes"], hyperparams={**settings["hyperparams"], "learning_starts": 50},
            workers=1, engine="batched", progress=False, checkpoint_freq=0,
        )  # fmt: skip
        started = time.perf_counter()
        result = run_study(config, log=lambda _: None)
        elapsed = time.perf_counter() - started
    if result.ok != 2:
        raise RuntimeError(f"runs failed: {result.failed}")
    return elapsed / 2  # (50 warm-up and 50 training steps of each run included: negligible)


def _schedule(group_seconds: list[float], workers: int) -> float:
    """Wall time of groups run in order on ``workers`` processes, each taking the next group when free."""
    free = [0.0] * workers
    for seconds in group_seconds:
        free[free.index(min(free))] += seconds
    return max(free)


def compare_groupings(args: argparse.Namespace) -> int:
    """The design's wall time with per-variant and default mixed groups (see the module's docstring)."""
    settings = _design_settings()
    config = StudyConfig(**{**settings, "out": tempfile.mkdtemp()}, engine="batched", progress=False)
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    names = ("gamma", "buffer_size", "learning_rate", "noise_std", "learning_starts", "policy_kwargs")
    zoo = {name: tasks[0].hyperparams[name] for name in names}  # the resolved zoo entry of the design
    n_seeds, budget = len(config.seeds), int(tasks[0].hyperparams.get("n_timesteps", config.n_timesteps or 0))
    learning_starts = int(tasks[0].hyperparams["learning_starts"])
    default_size = core_group_size(tasks, args.workers)
    classes: dict[str, list[RunTask]] = {}
    for task in tasks:
        classes.setdefault(mixing_key(task), []).append(task)
    overhead = _run_overhead_s()
    print(f"building and evaluating one run (21 evaluations of 10 episodes): {overhead:.2f} s", flush=True)
    groupings: dict[str, dict[str, Any]] = {"per_variant": {"groups": []}, "mixed": {"groups": []}}
    measured = []
    for runs in classes.values():
        cells = list(dict.fromkeys(json.dumps(task.switches, sort_keys=True) for task in runs))
        # timed: per-variant groups of every --cell-stride-th cell (10 seeds each), and the class's first mixed group
        # (the study's order: seeds outermost, so it holds every cell)
        sampled = {
            "per_variant": [json.loads(cell) for cell in cells[:: args.cell_stride] for _ in range(n_seeds)],
            "mixed": [json.loads(cell) for _ in range(n_seeds) for cell in cells][:default_size],
        }
        fixed = {name: value for name, value in runs[0].switches.items() if name not in MIXABLE_SWITCHES}
        row: dict[str, Any] = {"fixed_switches": fixed, "runs": len(runs), "cells": len(cells)}
        for grouping, size in (("per_variant", n_seeds), ("mixed", default_size)):
            costs = _class_cpu_seconds(sampled[grouping], size, args.steps, zoo)
            costs["timed_agents"] = len(sampled[grouping])
            per_run = learning_starts * costs["warmup_s_per_agent_step"]
            per_run += (budget - learning_starts) * costs["training_s_per_agent_step"] + overhead
            sizes = [min(size, len(runs) - start) for start in range(0, len(runs), size)]
            groupings[grouping]["groups"] += [n * per_run for n in sizes]
            row[grouping] = {**costs, "group_size": size, "groups": len(sizes), "cpu_s_per_run": per_run}
            print(f"{fixed}: {grouping} groups of {size}: {per_run:.1f} CPU s per run", flush=True)
        measured.append(row)
    for grouping, entry in groupings.items():
        entry["cpu_s"] = sum(entry["groups"])
        entry["wall_s"] = _schedule(entry["groups"], args.workers)
        print(f"{grouping}: {len(entry['groups'])} groups, {entry['wall_s'] / 3600:.2f} h on {args.workers} workers")
    if args.json:
        result = {
            "command": " ".join(sys.argv), "design": "study_files/pendulum_2x6.yml (2^6 x 10 seeds, 20,000 steps)",
            "cpu": cpu_model_name(), "machine": args.machine_note, "workers": args.workers, "timed_steps": args.steps,
            "cell_stride": args.cell_stride,
            "model": "per run: learning_starts x warm-up s/agent-step + (n_timesteps - learning_starts) x training "
            "s/agent-step + building and 21 evaluations (timed once); a group costs the sum over its runs; groups "
            "scheduled in order on the workers, each taking the next group when free. CPU time of one thread: the "
            "wall time assumes each worker has a core of its own",
            "timing_settings": {**zoo, "batch_size": 256, "note": "the design's resolved hyperparameters"},
            "run_overhead_s": overhead, "classes": measured,
            "extrapolated": {
                grouping: {"groups": len(entry["groups"]), "cpu_h": entry["cpu_s"] / 3600, "wall_h": entry["wall_s"] / 3600}
                for grouping, entry in groupings.items()
            },
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", choices=("workers", "engines", "groupings"), default="workers", help="what to compare")
    parser.add_argument("--steps", type=int, default=100, help="groupings: timed steps of each agent (default 100)")
    parser.add_argument("--workers", type=int, default=2, help="groupings: worker processes (default 2)")
    parser.add_argument(
        "--cell-stride", type=int, default=3, help="groupings: time every N-th cell's per-variant group (default 3)"
    )
    parser.add_argument("--machine-note", default="", help="groupings: what else ran on the machine (into the JSON)")
    parser.add_argument("--runs", type=int, default=10, help="seeds per variant in each study (default 10)")
    parser.add_argument("--variants", nargs="+", default=["td3"], help="variants of each study (default td3)")
    parser.add_argument("--n-timesteps", type=int, default=5000, help="steps per run (default 5000)")
    parser.add_argument("--repeats", type=int, default=2, help="studies per setting, alternating (default 2)")
    parser.add_argument("--json", help="write the rates to this JSON file")
    args = parser.parse_args()
    if args.compare == "groupings":
        return compare_groupings(args)
    # (label, workers, engine); the first is the baseline
    if args.compare == "workers":
        settings, target = [("1 worker", 1, "process"), ("2 workers", 2, "process")], 1.8
    else:
        settings, target = [("process, 2 workers", 2, "process"), ("batched, 2 workers", 2, "batched")], 1.6
    rates: dict[str, list[float]] = {label: [] for label, _, _ in settings}
    for repeat in range(args.repeats):
        for label, workers, engine in settings:
            rates[label].append(runs_per_hour(workers, args.runs, args.n_timesteps, engine, args.variants))
            print(f"repeat {repeat + 1}/{args.repeats}, {label}: {rates[label][-1]:.0f} runs/hour", flush=True)
    n_runs = args.runs * len(args.variants)
    print(f"\n{n_runs} runs of {args.n_timesteps} steps (Pendulum-v1, [64, 64]) per study, {args.repeats} repeats\n")
    print("| setting | runs/hour median | min | max |")
    print("|---|---:|---:|---:|")
    for label, values in rates.items():
        print(f"| {label} | {np.median(values):.0f} | {min(values):.0f} | {max(values):.0f} |")
    (base, *_), (other, *_) = settings
    ratio = np.median(rates[other]) / np.median(rates[base])
    per_repeat = [b / a for a, b in zip(rates[base], rates[other], strict=True)]
    verdict = "met" if ratio >= target else "NOT met"
    spread = f"per repeat {min(per_repeat):.2f}-{max(per_repeat):.2f}"
    print(f"\n{other} over {base}: {ratio:.2f}x ({spread}; target >= {target}x: {verdict})")
    if args.json:
        result = {
            "compare": args.compare, "variants": args.variants, "seeds_per_variant": args.runs, "runs_per_study": n_runs,
            "n_timesteps": args.n_timesteps, "repeats": args.repeats, "net_arch": [64, 64], "env": "Pendulum-v1",
            "runs_per_hour": rates, "median": {label: float(np.median(values)) for label, values in rates.items()},
            "ratio_of_medians": float(ratio), "per_repeat_ratios": per_repeat, "target": target,
            "cpu": cpu_model_name(), "command": " ".join(sys.argv),
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
