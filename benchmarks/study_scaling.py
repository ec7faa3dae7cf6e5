"""
Runs per hour of the ablation study with one worker process against two (issue: at least 1.8x on 2 cores).

The same small study (Pendulum-v1, [64, 64] networks) runs into fresh folders with --workers 1 and --workers 2,
alternating, ``--repeats`` times each; prints runs per hour (median, min, max) and the ratio of medians.

    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py            # about 6 minutes on an idle 2-core CPU
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.study.config import StudyConfig
from sb3_ablation.study.runner import run_study


def runs_per_hour(workers: int, runs: int, n_timesteps: int) -> float:
    """Run one fresh study with ``workers`` processes; return finished runs per hour of wall time."""
    with tempfile.TemporaryDirectory() as out:
        config = StudyConfig(
            envs=["Pendulum-v1"],
            variants=["td3"],
            seeds=list(range(runs)),
            out=out,
            n_timesteps=n_timesteps,
            eval_freq=n_timesteps // 2,
            eval_episodes=2,
            hyperparams={"learning_starts": n_timesteps // 5, "policy_kwargs": "dict(net_arch=[64, 64])"},
            workers=workers,
            progress=False,
        )
        started = time.perf_counter()
        result = run_study(config, log=lambda _: None)
        elapsed = time.perf_counter() - started
    if result.ok != runs:
        raise RuntimeError(f"{runs - result.ok} runs failed: {result.failed}")
    return runs / elapsed * 3600


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs per study (default 10)")
    parser.add_argument("--n-timesteps", type=int, default=5000, help="steps per run (default 5000)")
    parser.add_argument("--repeats", type=int, default=2, help="studies per worker count, alternating (default 2)")
    args = parser.parse_args()
    rates: dict[int, list[float]] = {1: [], 2: []}
    for repeat in range(args.repeats):
        for workers in (1, 2):
            rates[workers].append(runs_per_hour(workers, args.runs, args.n_timesteps))
            print(f"repeat {repeat + 1}/{args.repeats}, {workers} worker(s): {rates[workers][-1]:.0f} runs/hour", flush=True)
    print(f"\n{args.runs} runs of {args.n_timesteps} steps (Pendulum-v1, [64, 64]) per study, {args.repeats} repeats\n")
    print("| workers | runs/hour median | min | max |")
    print("|---:|---:|---:|---:|")
    for workers, values in rates.items():
        print(f"| {workers} | {np.median(values):.0f} | {min(values):.0f} | {max(values):.0f} |")
    ratio = np.median(rates[2]) / np.median(rates[1])
    verdict = "met" if ratio >= 1.8 else "NOT met"
    print(f"\nspeed-up of 2 workers over 1: {ratio:.2f}x (target >= 1.8x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
