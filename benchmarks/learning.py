"""Learning benchmark on Pendulum-v1 with rl-zoo's hyperparameters (not part of CI: minutes per run).

Trains AblatableTD3 (all components on), our DDPG and SB3's TD3 over several seeds and prints the final evaluation
returns: full TD3 should reach a mean return better than -200 (rl-zoo reports -152 +- 90 for SB3's TD3).
``--speed-mode`` compares AblatableTD3's default mode with ``speed_mode=True`` instead (same algorithm, not bit-exact):
their returns should agree within noise.

    OMP_NUM_THREADS=1 python benchmarks/learning.py                       # 5 seeds x 3 algorithms, 20k steps
    OMP_NUM_THREADS=1 python benchmarks/learning.py --speed-mode
    OMP_NUM_THREADS=1 python benchmarks/learning.py --seeds 2 --steps 3000 --net-arch 64,64   # a smaller run
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np
import rl_zoo3
import torch as th
import yaml
from scipy import stats
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise

# runnable from a checkout without installing the package
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sb3_ablation.benchmark.cli import parse_model_list, parse_net_archs
from sb3_ablation.benchmark.models import MODEL_NAMES, build_model
from sb3_ablation.benchmark.tables import format_table
from sb3_ablation.study.config import write_json_atomic

ENV_ID = "Pendulum-v1"
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
    rl-zoo's TD3 hyperparameters for an environment, read from the YAML file shipped with rl_zoo3.

    :param env_id: environment id (a key of rl_zoo3's ``td3.yml``)
    :return: the raw zoo entry (``n_timesteps``, ``gamma``, ``noise_std``, ``policy_kwargs`` as a string, ...)
    """
    path = os.path.join(os.path.dirname(rl_zoo3.__file__), "hyperparams", "td3.yml")
    with open(path) as file:
        entries = yaml.safe_load(file)
    if env_id not in entries:
        raise ValueError(f"rl_zoo3's td3.yml has no entry for {env_id!r}")
    return entries[env_id]


def run_configuration(args: argparse.Namespace) -> dict[str, Any]:
    """
    The training settings: rl-zoo's Pendulum-v1 entry with the command-line overrides applied.

    :param args: parsed command line
    :return: ``steps``, ``net_arch``, ``eval_episodes``, the constructor arguments under ``model_kwargs`` and
        ``full_zoo_setting`` (whether steps, net_arch and learning_starts are rl-zoo's own)
    """
    zoo = zoo_hyperparams()
    if zoo.get("noise_type") != "normal":
        raise ValueError(f"expected normal action noise in rl-zoo's {ENV_ID} entry, found {zoo.get('noise_type')!r}")
    # policy_kwargs is a Python expression in rl-zoo's files, e.g. "dict(net_arch=[400, 300])"
    zoo_net_arch = eval(zoo["policy_kwargs"], {"__builtins__": {}, "dict": dict})["net_arch"]
    steps = int(zoo["n_timesteps"]) if args.steps is None else args.steps
    # learning only starts after learning_starts random steps: keep half of a shortened run for learning
    learning_starts = min(int(zoo["learning_starts"]), steps // 2) if args.learning_starts is None else args.learning_starts
    model_kwargs = {
        "gamma": float(zoo["gamma"]),
        "buffer_size": int(zoo["buffer_size"]),
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

    :param algo: model name (see ``sb3_ablation.benchmark.models.MODEL_NAMES``)
    :param seed: seed of the model and the training environment (evaluation uses ``seed + 10_000``)
    :param config: from ``run_configuration``
    :return: algorithm, seed, mean evaluation return and training seconds
    """
    th.set_num_threads(1)
    kwargs = dict(config["model_kwargs"])
    noise_std = kwargs.pop("noise_std")
    train_env = make_vec_env(ENV_ID, n_envs=1)
    action_dim = train_env.action_space.shape[0]
    action_noise = NormalActionNoise(np.zeros(action_dim), noise_std * np.ones(action_dim))
    model = build_model(algo, train_env, config["net_arch"], seed=seed, action_noise=action_noise, **kwargs)
    start = time.perf_counter()
    model.learn(total_timesteps=config["steps"])
    seconds = time.perf_counter() - start
    eval_env = make_vec_env(ENV_ID, n_envs=1, seed=seed + 10_000)
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


def speed_mode_comparison(default: list[float], speed: list[float]) -> str:
    """
    Difference of mean returns (speed mode - default) with Welch's 95% confidence interval and t-test.

    :return: one line of text
    """
    difference = statistics.mean(speed) - statistics.mean(default)
    if len(default) < 2 or len(speed) < 2:
        return f"speed mode - default: {difference:+.1f} (need at least 2 seeds each for a test)"
    test = stats.ttest_ind(speed, default, equal_var=False)
    low, high = test.confidence_interval(0.95)
    verdict = "equal within noise" if low <= 0 <= high else "DIFFERENT"
    return (
        f"speed mode - default: {difference:+.1f} (95% CI [{low:.1f}, {high:.1f}], Welch t-test p = {test.pvalue:.2f}): "
        f"{verdict}"
    )


def make_parser() -> argparse.ArgumentParser:
    """:return: the command-line parser"""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--algos",
        default=",".join(DEFAULT_ALGOS),
        help=f"comma-separated, from {', '.join(MODEL_NAMES)} (default %(default)s)",
    )
    parser.add_argument("--speed-mode", action="store_true", help="compare AblatableTD3 default vs speed_mode=True instead")
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (default %(default)s)")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed, first-seed + 1, ... (default 0)")
    parser.add_argument("--steps", type=int, help="training steps per run (default: rl-zoo's 20000)")
    parser.add_argument(
        "--learning-starts", type=int, help="random steps before learning (default: rl-zoo's, at most steps/2)"
    )
    parser.add_argument("--net-arch", help="hidden layer sizes, e.g. 64,64 (default: rl-zoo's 400,300)")
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
        f"Pendulum-v1, rl-zoo TD3 hyperparameters: {config['steps']} steps, net_arch {config['net_arch']}, "
        f"{config['model_kwargs']}; {len(seeds)} seeds, {config['eval_episodes']} deterministic evaluation episodes"
    )
    print(header, file=sys.stderr, flush=True)
    results = run_all(algos, seeds, config, min(args.workers, len(algos) * len(seeds)))
    returns = returns_by_algo(results, algos)

    print(f"# Learning benchmark: {header}\n")
    print(results_table(returns, seeds) + "\n")
    if "td3" in returns:
        mean = statistics.mean(returns["td3"])
        verdict = "better than" if mean > TD3_TARGET_RETURN else "NOT better than"
        print(f"AblatableTD3 mean return {mean:.1f}: {verdict} {TD3_TARGET_RETURN:.0f} (rl-zoo reports -152 +- 90)")
        if config["full_zoo_setting"] is False:
            print("(that target is for rl-zoo's full setting: 20000 steps, net_arch [400, 300], learning_starts 10000)")
    if "td3" in returns and "td3_speed" in returns:
        print(speed_mode_comparison(returns["td3"], returns["td3_speed"]))
    if args.json:
        write_json_atomic(args.json, {"config": config, "seeds": seeds, "results": results, "returns": returns})
        print(f"results saved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
