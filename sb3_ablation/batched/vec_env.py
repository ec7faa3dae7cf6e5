"""The VecEnv of a BatchedTD3 group: env k is agent k's, seeded as agent k's single run seeds its env."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv


def identity_env(env: gym.Env) -> gym.Env:
    return env


class AgentSeededVecEnv(DummyVecEnv):
    """
    SB3's ``DummyVecEnv`` whose env k is agent k's, seeded with agent k's seed as a single-env run seeds its env
    (``VecEnv.seed`` would give env k the seed ``seed + k``).

    :param env_fns: the agents' envs, as for ``DummyVecEnv``
    :param agent_seeds: agent k's seed
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], agent_seeds: Sequence[int]):
        super().__init__(list(env_fns))
        if len(agent_seeds) != self.num_envs:
            raise ValueError(f"{len(agent_seeds)} seeds for {self.num_envs} envs")
        self.agent_seeds = [int(seed) for seed in agent_seeds]

    @classmethod
    def of_models(cls, models: Sequence[BaseAlgorithm], caller: str) -> AgentSeededVecEnv:
        """
        The VecEnv of single-env models (each on one plain env, seeded): env k is model k's env, with its seed.

        :param caller: who asks, for the errors
        """
        envs = []
        for model in models:
            env = model.get_env()
            if type(env) is not DummyVecEnv or env.num_envs != 1:
                raise ValueError(f"{caller} needs agents on one plain env each, got {env}")
            envs.append(env.envs[0])
        seeds = [model.seed for model in models]
        if any(seed is None for seed in seeds):
            raise ValueError(f"{caller} needs seeded agents, got seeds {seeds}")
        env_fns = [functools.partial(identity_env, env) for env in envs]  # DummyVecEnv takes env constructors
        return cls(env_fns, [int(seed) for seed in seeds if seed is not None])

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """
        Seed env k with agent k's seed at the next reset, when ``seed`` is agent 0's (the model's seed: SB3's
        ``set_random_seed`` passes it); any other seed shifts every agent's seed by the same amount.
        """
        if seed is None:
            return super().seed(seed)
        # `_seeds` is where SB3's VecEnv.seed itself puts the seeds of the next reset (DummyVecEnv.reset passes
        # `_seeds[k]` to env k, then clears them); this override of seed() sets other values there, as its contract
        # allows. SB3 has no public per-env seed, and wrapping each env to shift its seed instead would put a wrapper
        # around the envs that the study's checkpoints find by type (tests/unit/test_zoo_adapter.py checks SB3's use)
        self._seeds = [agent_seed + seed - self.agent_seeds[0] for agent_seed in self.agent_seeds]
        return self._seeds


__all__ = ["AgentSeededVecEnv", "identity_env"]
