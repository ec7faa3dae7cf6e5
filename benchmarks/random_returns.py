"""The return of a uniform-random policy on tasks without a published random score: an outside anchor for a study's
equivalence margins and failure rule (``sb3_ablation/study/plan/references.yml``), measured once with seeds that no
study uses, never from a study's own runs.

    OMP_NUM_THREADS=1 python benchmarks/random_returns.py Pendulum-v1 LunarLanderContinuous-v3 --episodes 1000
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

#: seeds of the random-policy episodes (no study uses seeds this large)
FIRST_SEED = 1_000_000


def random_returns(env_id: str, episodes: int, first_seed: int = FIRST_SEED) -> np.ndarray:
    """The undiscounted returns of ``episodes`` episodes of uniformly random actions (episode k: seed first_seed + k)."""
    env = gym.make(env_id)
    returns = np.empty(episodes)
    for k in range(episodes):
        env.reset(seed=first_seed + k)
        env.action_space.seed(first_seed + k)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns[k] = total
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("envs", nargs="+", help="Gymnasium env ids")
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    for env_id in args.envs:
        returns = random_returns(env_id, args.episodes)
        sem = returns.std(ddof=1) / np.sqrt(len(returns))
        print(
            f"{env_id}: mean {returns.mean():.1f} (standard error {sem:.1f}) over {len(returns)} episodes, "
            f"seeds {FIRST_SEED}-{FIRST_SEED + len(returns) - 1}, gymnasium {gym.__version__}"
        )


if __name__ == "__main__":
    main()
