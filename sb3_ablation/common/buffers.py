"""SB3's replay buffer with a faster sample that draws the same random numbers and returns the same batches."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

BufferT = TypeVar("BufferT", bound=ReplayBuffer)


def sharing_storage(buffer: ReplayBuffer, buffer_class: type[BufferT]) -> BufferT:
    """
    A ``buffer_class`` buffer with ``buffer``'s state (its arrays, not copied, and position): a new object, as
    ``copy.copy`` makes one, of another class with the same storage (the two buffers then share it).
    """
    shared = buffer_class.__new__(buffer_class)
    vars(shared).update(vars(buffer))
    return shared


class FastReplayBuffer(ReplayBuffer):
    """
    SB3's ``ReplayBuffer`` (same storage, so saved buffers stay interchangeable) whose sample gathers each field
    with one flat index into a fresh array wrapped without a copy, instead of a two-index gather followed by a
    copy into a new tensor: the same random draws and the same batch, in about half the time.
    Falls back to SB3's sampling with observation/reward normalization, the memory-efficient variant, or a GPU.
    """

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        if env is not None or self.optimize_memory_usage or self.device.type != "cpu":
            return super()._get_samples(batch_inds, env=env)
        # The same draw as SB3's `_get_samples`, keeping the random streams identical
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        flat_indices = batch_inds * self.n_envs + env_indices

        def gather(array: np.ndarray) -> np.ndarray:
            return array.reshape(-1, *array.shape[2:]).take(flat_indices, axis=0)

        dones = gather(self.dones) * (1 - gather(self.timeouts))
        return ReplayBufferSamples(
            th.from_numpy(gather(self.observations)),
            th.from_numpy(gather(self.actions)),
            th.from_numpy(gather(self.next_observations)),
            th.from_numpy(dones.reshape(-1, 1)),
            th.from_numpy(gather(self.rewards).reshape(-1, 1)),
        )
