"""
Runs per hour of the ablation study: one worker process against two (issue: at least 1.8x on 2 cores), or the
process engine against the batched engine, both on two workers (``--compare engines``: at least 1.6x).

The same small study (Pendulum-v1, [64, 64] networks) runs into fresh folders with each setting, alternating,
``--repeats`` times each; prints runs per hour (median, min, max) and the ratio of medians.

    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py            # about 6 minutes on an idle 2-core CPU
    OMP_NUM_THREADS=1 python benchmarks/study_scaling.py --compare engines --runs 5 --variants td3 \
        no_target_policy_smoothing --repeats 3 --json benchmarks/results/study_engines.json   # about 5 minutes
"""

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.study.plan.config import StudyConfig
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", choices=("workers", "engines"), default="workers", help="what to compare")
    parser.add_argument("--runs", type=int, default=10, help="seeds per variant in each study (default 10)")
    parser.add_argument("--variants", nargs="+", default=["td3"], help="variants of each study (default td3)")
    parser.add_argument("--n-timesteps", type=int, default=5000, help="steps per run (default 5000)")
    parser.add_argument("--repeats", type=int, default=2, help="studies per setting, alternating (default 2)")
    parser.add_argument("--json", help="write the rates to this JSON file")
    args = parser.parse_args()
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
            "cpu": platform.processor() or platform.machine(), "command": " ".join(sys.argv),
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
