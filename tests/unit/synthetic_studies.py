"""Small synthetic studies whose answer is known, shared by the unit tests of the report's analysis."""

from pathlib import Path

import numpy as np

from sb3_ablation.study.analyse.results import RunCurves, StudyData
from sb3_ablation.study.plan.variants import parse_variant, resolve_variants


def factorial_study(factors, final_return, seeds=10, env="Pendulum-v1"):
    """A factorial on ``env`` over ``factors``: each run's final return is ``final_return(switches, seed)``."""
    variants = [v.name for v in resolve_variants(["factorial:" + ",".join(factors)])]
    runs = {}
    for name in variants:
        switches = parse_variant(name).switches
        for seed in range(seeds):
            final = final_return(switches, seed)
            episode = {"steps": 200, "terminated": False, "states": 0, "q_sum": 0.0, "return_sum": 0.0,
                       "abs_return_sum": 0.0, "max_abs_reward": 16.3}  # fmt: skip
            runs.setdefault(name, []).append(RunCurves(
                seed=seed, timesteps=np.array([0, 20_000]), values={"mean_return": np.array([-1300.0, final])},
                episode_returns=[np.array([-1300.0]), np.array([final])], value_episodes=[[episode], [episode]],
            ))  # fmt: skip
    manifest = {"hyperparams": {env: {"ablatable_td3": {"n_timesteps": 20_000, "gamma": 0.98}}}}
    return StudyData(Path("synthetic"), manifest, [env], variants, {env: runs})


def curve_study(variants, returns, seeds=10, env="Pendulum-v1", budget=20_000, eval_freq=1_000):
    """
    A leave-one-out study on ``env`` whose learning curves are known: a run's mean returns at the evaluation steps
    (0, ``eval_freq``, ..., ``budget``) are ``returns(variant, seed, steps)``.
    """
    steps = np.arange(0, budget + 1, eval_freq)
    runs = {}
    for name in variants:
        for seed in range(seeds):
            values = np.asarray(returns(name, seed, steps), dtype=np.float64)
            runs.setdefault(name, []).append(RunCurves(
                seed=seed, timesteps=steps, values={"mean_return": values},
                episode_returns=[np.array([value]) for value in values],
            ))  # fmt: skip
    manifest = {"hyperparams": {env: {"ablatable_td3": {"n_timesteps": budget, "gamma": 0.98}}}}
    return StudyData(Path("synthetic"), manifest, [env], list(variants), {env: runs})


def write_pendulum_study(out, finals, seeds=range(10)):
    """
    A leave-one-out study on Pendulum-v1 at 20k steps (its reference budget, gamma 0.98) written as run records:
    ``finals`` maps each variant to ``seed -> final return``; each run climbs to it over three evaluations, with a
    small, sound overestimation.
    """
    from sb3_ablation.common.io import write_json_atomic
    from sb3_ablation.study.store.runs import run_path, write_run

    env, steps = "Pendulum-v1", [0, 10_000, 20_000]
    hyperparams = {env: {"ablatable_td3": {"n_timesteps": 20_000, "gamma": 0.98}}}
    write_json_atomic(
        out / "study.json", {"envs": [env], "variants": list(finals), "seeds": list(seeds), "settings": {},
                             "hyperparams": hyperparams},
    )  # fmt: skip
    for variant, final in finals.items():
        for seed in seeds:
            returns = [final(seed) - 100.0, final(seed) - 50.0, final(seed)]
            evaluations = {"timesteps": steps, "mean_return": returns, "std_return": [1.0] * 3, "mean_q": [1.0] * 3,
                           "mean_discounted_return": [0.0] * 3, "overestimation": [1.0] * 3,
                           "episode_returns": [[value] * 2 for value in returns]}  # fmt: skip
            record = {"format": 3, "env": env, "variant": variant, "seed": seed, "status": "ok", "error": None,
                      "evaluations": evaluations, "warnings": []}  # fmt: skip
            write_run(run_path(out, env, variant, seed), record)
