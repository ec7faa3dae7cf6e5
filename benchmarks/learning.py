"""Learning benchmark with rl-zoo's hyperparameters (not part of CI: minutes per run).

Trains AblatableTD3 (all components on), our DDPG and SB3's TD3 over several seeds and prints the final evaluation
returns: on Pendulum-v1 full TD3 should reach a mean return better than -200 (rl-zoo reports -152 +- 90 for SB3's
TD3). ``--speed-mode`` compares AblatableTD3's default mode with ``speed_mode=True`` instead (same algorithm, not
bit-exact), with a study report's own verdict (``compare_family``: the paired test over the shared seeds): it should
not be ``differs``. The hyperparameters are the package's zoo entry for ``--env`` (zoo_configs/ablatable_td3.yml:
rl-zoo's TD3 values).

    OMP_NUM_THREADS=1 python benchmarks/learning.py                       # Pendulum-v1, 5 seeds x 3 algorithms
    OMP_NUM_THREADS=1 python benchmarks/learning.py --speed-mode --seeds 10
    OMP_NUM_THREADS=1 python benchmarks/learning.py --speed-mode --env Hopper-v5 --steps 100000 --net-arch 64,64
    OMP_NUM_THREADS=1 python benchmarks/learning.py --seeds 2 --steps 3000 --net-arch 64,64   # a smaller run
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise

# runnable from a checkout without installing the package
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sb3_ablation.bench.cli import parse_model_list, parse_net_archs
from sb3_ablation.bench.models import MODEL_NAMES, build_model
from sb3_ablation.bench.tables import format_table
from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.analyse.inference import compare_family
from sb3_ablation.study.analyse.statistics import MIN_RUNS, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.render.format import fmt_ci, fmt_p
from sb3_ablation.study.render.json_parts import comparison_json

ENV_ID = "Pendulum-v1"
ZOO_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo_configs", "ablatable_td3.yml")
DEFAULT_ALGOS = ("td3", "ddpg", "sb3_td3")
SPEED_MODE_ALGOS = ("td3", "td3_speed")
DESCRIPTIONS = {
    "td3": "AblatableTD3 (defaults)",
    "td3_speed": "AblatableTD3 (speed_mode=True)",
    "ddpg": "DDPG (ours)",
    "ddpg_speed": "DDPG (ours, speed_mode=True)",
    "sb3_td3": "SB3 TD3",
    "sb3_ddpg": "SB3 DDPG",
}
TD3_TARGET_RETURN = -200.0


def zoo_hyperparams(env_id: str = ENV_ID) -> dict[str, Any]:
    """
    The zoo hyperparameters of an environment: the package's ``zoo_configs/ablatable_td3.yml`` (rl-zoo's TD3 values).

    :param env_id: environment id (a key of that file)
    :return: the raw zoo entry (``n_timesteps``, ``gamma``, ``noise_std``, ``policy_kwargs`` as a string, ...)
    """
    with open(ZOO_CONFIG) as file:
        entries = yaml.safe_load(file)
    if env_id not in entries:
        known = ", ".join(key for key in entries if key != "default")
        raise ValueError(f"--env: no zoo entry for {env_id!r} in {ZOO_CONFIG}; expected one of {known}")
    return entries[env_id]


def run_configuration(args: argparse.Namespace) -> dict[str, Any]:
    """
    The training settings: the zoo entry of ``--env`` with the command-line overrides applied.

    :param args: parsed command line
    :return: ``env_id``, ``steps``, ``net_arch``, ``eval_episodes``, the constructor arguments under ``model_kwargs``
        and ``full_zoo_setting`` (whether steps, net_arch and learning_starts are rl-zoo's own)
    """
    zoo = zoo_hyperparams(args.env)
    if zoo.get("noise_type") != "normal":
        raise ValueError(f"expected normal action noise in the zoo's {args.env} entry, found {zoo.get('noise_type')!r}")
    # policy_kwargs is a Python expression in rl-zoo's files, e.g. "dict(net_arch=[400, 300])"
    zoo_net_arch = eval(zoo["policy_kwargs"], {"__builtins__": {}, "dict": dict})["net_arch"]
    steps = int(zoo["n_timesteps"]) if args.steps is None else args.steps
    # learning only starts after learning_starts random steps: keep half of a shortened run for learning
    learning_starts = min(int(zoo["learning_starts"]), steps // 2) if args.learning_starts is None else args.learning_starts
    model_kwargs = {
        # SB3's defaults where the zoo entry (e.g. MuJoCo's) keeps them
        "gamma": float(zoo.get("gamma", 0.99)),
        "buffer_size": int(zoo.get("buffer_size", 1_000_000)),
        "batch_size": int(zoo.get("batch_size", 256)),
        "learning_starts": learning_starts,
        "train_freq": int(zoo["train_freq"]),
        "gradient_steps": int(zoo["gradient_steps"]),
        "learning_rate": float(zoo["learning_rate"]),
        "noise_std": float(zoo["noise_std"]),
    }
    net_arch = args.net_arch or zoo_net_arch
    full_zoo_setting = (steps, net_arch, learning_starts) == (
        int(zoo["n_timesteps"]),
        zoo_net_arch,
        int(zoo["learning_starts"]),
    )
    return {
        "env_id": args.env,
        "full_zoo_setting": full_zoo_setting,
        "steps": steps,
        "net_arch": net_arch,
        "eval_episodes": args.eval_episodes,
        "model_kwargs": model_kwargs,
    }


def _init_worker() -> None:
    th.set_num_threads(1)


def train_and_evaluate(algo: str, seed: int, config: dict[str, Any]) -> dict[str, Any]:
    """
    Train one model and evaluate its deterministic policy (runs in a worker process).

    :param algo: model name (see ``sb3_ablation.bench.models.MODEL_NAMES``)
    :param seed: seed of the model and the training environment (evaluation uses ``seed + 10_000``)
    :param config: from ``run_configuration``
    :return: algorithm, seed, mean evaluation return and training seconds
    """
    th.set_num_threads(1)
    kwargs = dict(config["model_kwargs"])
    noise_std = kwargs.pop("noise_std")
    train_env = make_vec_env(config["env_id"], n_envs=1)
    action_dim = train_env.action_space.shape[0]
    action_noise = NormalActionNoise(np.zeros(action_dim), noise_std * np.ones(action_dim))
    model = build_model(algo, train_env, config["net_arch"], seed=seed, action_noise=action_noise, **kwargs)
    start = time.perf_counter()
    model.learn(total_timesteps=config["steps"])
    seconds = time.perf_counter() - start
    eval_env = make_vec_env(config["env_id"], n_envs=1, seed=seed + 10_000)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=config["eval_episodes"], deterministic=True)
    eval_env.close()
    return {"algo": algo, "seed": seed, "return": float(mean_return), "train_seconds": seconds}


def run_all(algos: list[str], seeds: list[int], config: dict[str, Any], workers: int) -> list[dict[str, Any]]:
    """
    Run every (algorithm, seed) pair, in ``workers`` spawned processes (one torch thread each).

    :return: the results in completion order
    """
    # seed-major order, so that an interrupted run still has every algorithm on the first seeds
    jobs = [(algo, seed) for seed in seeds for algo in algos]
    results = []

    def report(result: dict[str, Any]) -> None:
        results.append(result)
        print(
            f"  [{len(results)}/{len(jobs)}] {result['algo']} seed {result['seed']}: return {result['return']:.1f}"
            f" ({result['train_seconds']:.0f} s)",
            file=sys.stderr,
            flush=True,
        )

    if workers == 1:
        _init_worker()
        for algo, seed in jobs:
            report(train_and_evaluate(algo, seed, config))
        return results
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker) as pool:
        futures = [pool.submit(train_and_evaluate, algo, seed, config) for algo, seed in jobs]
        for future in as_completed(futures):
            report(future.result())
    return results


def returns_by_algo(results: list[dict[str, Any]], algos: list[str]) -> dict[str, list[float]]:
    """:return: algorithm -> evaluation returns ordered by seed"""
    return {algo: [r["return"] for r in sorted(results, key=lambda r: r["seed"]) if r["algo"] == algo] for algo in algos}


def results_table(returns: dict[str, list[float]], seeds: list[int]) -> str:
    """:return: markdown table with mean, std and per-seed returns"""
    headers = ["algorithm", "name", "mean", "std", *(f"seed {seed}" for seed in seeds)]
    rows = []
    for algo, values in returns.items():
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        rows.append([DESCRIPTIONS.get(algo, algo), algo, f"{statistics.mean(values):.1f}", f"{std:.1f}"])
        rows[-1] += [f"{value:.1f}" for value in values]
    return format_table(headers, rows)


def speed_mode_comparison(default: list[float], speed: list[float], seeds: list[int]) -> dict[str, Any]:
    """
    Speed mode against the default, decided as a study's report decides a comparison: the IQM of each (effect sizes)
    and the verdict of the report's ``compare_family`` on the per-seed differences (speed - default, same seed: same
    initial weights, env and evaluation episodes) with the default plan's paired test at alpha = 0.05; no margin is
    declared, so the verdict is ``differs`` or ``unresolved``.

    :param default: final returns of the default mode, ordered by seed
    :param speed: final returns of the speed mode, ordered by seed
    :param seeds: the seeds of both
    :return: ``iqm_default``, ``iqm_speed``, ``iqm_difference``, the ``paired`` comparison (as in report.json) and a
        one-line ``summary``
    """
    scores = {"td3": np.asarray(default), "td3_speed": np.asarray(speed)}
    stats = outcome_statistics(scores, baseline="td3", seeds={name: seeds for name in scores})
    speed_stats = stats["td3_speed"]
    plan = AnalysisPlan()
    comparison = compare_family(
        {"td3_speed": np.asarray(speed_stats.paired_diffs)},
        plan.alpha,
        math.nan,
        plan.power,
        MIN_RUNS,
        plan.test,
        0,
        plan.equivalence_test,
    )["td3_speed"]
    result = {
        "iqm_default": stats["td3"].iqm,
        "iqm_speed": speed_stats.iqm,
        "iqm_difference": speed_stats.diff,
        "paired": comparison_json(comparison),
    }
    reason = f" ({comparison.reason})" if comparison.reason else ""
    interval = f" {fmt_ci(comparison.ci)}" if comparison.ci else ""
    result["summary"] = (
        f"speed mode - default over {comparison.n} seeds: IQM {speed_stats.diff:+.1f}; paired estimate "
        f"{comparison.effect:+.1f}{interval}, p {fmt_p(comparison.p_raw)}: {comparison.verdict}{reason} "
        f"({comparison.test})"
    )
    return result


def make_parser() -> argparse.ArgumentParser:
    """:return: the command-line parser"""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--algos",
        default=",".join(DEFAULT_ALGOS),
        help=f"comma-separated, from {', '.join(MODEL_NAMES)} (default %(default)s)",
    )
    parser.add_argument("--env", default=ENV_ID, help="environment with a zoo entry (default %(default)s)")
    parser.add_argument("--speed-mode", action="store_true", help="compare AblatableTD3 default vs speed_mode=True instead")
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (default %(default)s)")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed, first-seed + 1, ... (default 0)")
    parser.add_argument("--steps", type=int, help="training steps per run (default: the zoo's n_timesteps)")
    parser.add_argument(
        "--learning-starts", type=int, help="random steps before learning (default: rl-zoo's, at most steps/2)"
    )
    parser.add_argument("--net-arch", help="hidden layer sizes, e.g. 64,64 (default: the zoo's)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="evaluation episodes per run (default %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="parallel processes, one torch thread each (default 2)")
    parser.add_argument("--json", metavar="PATH", help="also save the results as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """
    Run the learning benchmark and print its table.

    :param argv: command-line arguments without the program name; ``sys.argv[1:]`` when None
    :return: exit code
    """
    parser = make_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        algos = list(SPEED_MODE_ALGOS) if args.speed_mode else parse_model_list(args.algos, "--algos")
        if args.net_arch is not None:
            args.net_arch = parse_net_archs([args.net_arch])
            if len(args.net_arch) != 1:
                raise ValueError(f"--net-arch: expected one architecture such as 400,300, got {len(args.net_arch)}")
            args.net_arch = args.net_arch[0]
        for option in ("seeds", "eval_episodes", "workers"):
            if getattr(args, option) <= 0:
                raise ValueError(f"--{option.replace('_', '-')}: expected a positive integer, got {getattr(args, option)}")
        if not algos:
            raise ValueError("--algos: expected at least one algorithm")
        config = run_configuration(args)
        if config["steps"] <= config["model_kwargs"]["learning_starts"]:
            raise ValueError(f"--steps: {config['steps']} leaves no step after learning_starts")
    except ValueError as error:
        parser.error(str(error))

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    header = (
        f"{config['env_id']}, rl-zoo TD3 hyperparameters: {config['steps']} steps, net_arch {config['net_arch']}, "
        f"{config['model_kwargs']}; {len(seeds)} seeds, {config['eval_episodes']} deterministic evaluation episodes"
    )
    print(header, file=sys.stderr, flush=True)
    results = run_all(algos, seeds, config, min(args.workers, len(algos) * len(seeds)))
    returns = returns_by_algo(results, algos)

    print(f"# Learning benchmark: {header}\n")
    print(results_table(returns, seeds) + "\n")
    comparison = None
    if "td3" in returns and config["env_id"] == ENV_ID:
        mean = statistics.mean(returns["td3"])
        verdict = "better than" if mean > TD3_TARGET_RETURN else "NOT better than"
        print(f"AblatableTD3 mean return {mean:.1f}: {verdict} {TD3_TARGET_RETURN:.0f} (rl-zoo reports -152 +- 90)")
        if config["full_zoo_setting"] is False:
            print("(that target is for rl-zoo's full setting: 20000 steps, net_arch [400, 300], learning_starts 10000)")
    if "td3" in returns and "td3_speed" in returns:
        comparison = speed_mode_comparison(returns["td3"], returns["td3_speed"], seeds)
        print(comparison["summary"])
    if args.json:
        record = {"config": config, "seeds": seeds, "results": results, "returns": returns, "comparison": comparison}
        write_json_atomic(args.json, record)
        print(f"results saved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
