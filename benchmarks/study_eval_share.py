"""Share of a study run's time spent in evaluations: episodes one after another on one env, or side by side.

    OMP_NUM_THREADS=1 python benchmarks/study_eval_share.py --env LunarLanderContinuous-v3 --n-timesteps 6000

Each mode trains the same run (same seed, same weights: evaluations change no random draw) and reports the
evaluation time, the run's wall time and the share. Repeats alternate the modes so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.run.execute import execute_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="LunarLanderContinuous-v3")
    parser.add_argument("--n-timesteps", type=int, default=6000)
    parser.add_argument("--eval-freq", type=int, default=1000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--net-arch", default="[64, 64]")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    config = StudyConfig(
        envs=[args.env], variants=["td3"], seeds=1, out="unused", n_timesteps=args.n_timesteps,
        eval_freq=args.eval_freq, eval_episodes=args.eval_episodes, checkpoint_freq=0, progress=False,
        hyperparams={"learning_starts": 1000, "policy_kwargs": f"dict(net_arch={args.net_arch})"},
    )  # fmt: skip
    variants = config.variant_objects
    task = replace(make_tasks(config, variants, resolve_hyperparams(config, variants))[0], record=None)
    modes = {"one env, episodes in sequence": 1, f"{args.eval_episodes} envs side by side": args.eval_episodes}
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode, n_envs in modes.items():
            record = execute_run(replace(task, eval_envs=n_envs))
            assert record["status"] == "ok", record["traceback"]
            times[mode].append((record["eval_time_s"], record["wall_time_s"]))
    n_evaluations = len(record["evaluations"]["timesteps"])
    print(
        f"{args.env}, net_arch={args.net_arch}, {args.n_timesteps} steps, {args.eval_episodes} episodes every "
        f"{args.eval_freq} steps ({n_evaluations} evaluations), median of {args.repeats}"
    )
    for mode, values in times.items():
        evaluation = statistics.median(v[0] for v in values)
        total = statistics.median(v[1] for v in values)
        print(f"  {mode:<32} evaluation {evaluation:6.1f} s of {total:6.1f} s run: {100 * evaluation / total:4.1f}%")


if __name__ == "__main__":
    main()
