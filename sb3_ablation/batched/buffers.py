"""The agents' replay buffer of a batched group: SB3's ``ReplayBuffer`` with one column per agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize


class AgentReplayBuffer(ReplayBuffer):
    """
    SB3's ``ReplayBuffer`` with one column per agent (``n_envs`` = K, env k is agent k's): ``sample`` draws ``batch_size``
    transitions from each agent's own column and returns them agents first, ``(K, batch_size, ...)``. Each agent sees
    a buffer of ``buffer_size // K`` transitions, as a single-env buffer of that size. The batches are gathered on the
    host and copied to the device (:class:`~sb3_ablation.batched.device_buffer.DeviceAgentReplayBuffer` gathers them
    on the device).
    """

    def sample(
        self,
        batch_size: int,
        env: VecNormalize | None = None,
        generators: Sequence[np.random.RandomState] | None = None,
    ) -> ReplayBufferSamples:
        """
        :param batch_size: the transitions drawn for each agent
        :param env: the ``VecNormalize`` whose statistics normalize the observations and rewards, if any
        :param generators: agent k's indices are drawn from ``generators[k]`` as a single-env buffer draws them from
            NumPy's global stream (without: every agent's from the global stream, agent after agent)
        :return: the agents' batches, ``(K, batch_size, ...)``
        """
        return self._gather_samples(self._agent_indices(batch_size, generators), env)

    def _agent_indices(self, batch_size: int, generators: Sequence[np.random.RandomState] | None = None) -> np.ndarray:
        """
        The positions of the transitions agent k samples, ``(K, batch_size)``: drawn on the host from NumPy streams,
        whatever the device, as a single run draws them.

        :param batch_size: the transitions drawn for each agent
        :param generators: as in :meth:`sample`
        """
        upper_bound = self.buffer_size if self.full else self.pos
        if generators is None:
            generators = [cast(np.random.RandomState, np.random)] * self.n_envs
        return np.stack([generator.randint(0, upper_bound, size=batch_size) for generator in generators])

    def _gather_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """
        The transitions at ``batch_inds[k]`` of agent k's column, gathered on the host and copied to the device.

        :param batch_inds: the positions of agent k's transitions, ``(K, batch_size)`` (:meth:`_agent_indices`)
        :param env: as in :meth:`sample`
        """
        agents = np.arange(self.n_envs)[:, None]

        def gather(array: np.ndarray) -> np.ndarray:
            return array[batch_inds, agents]

        data = (
            self._normalize_obs(gather(self.observations), env),
            gather(self.actions),
            self._normalize_obs(gather(self.next_observations), env),
            # Only dones that are not due to timeouts
            (gather(self.dones) * (1 - gather(self.timeouts)))[..., None],
            self._normalize_reward(gather(self.rewards)[..., None], env),
        )
        # (flat observations: SB3's normalization returns arrays here, not dicts)
        return ReplayBufferSamples(*(self.to_torch(cast(np.ndarray, array)) for array in data))


__all__ = ["AgentReplayBuffer"]
