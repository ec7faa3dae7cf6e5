"""The agents' replay buffer with a mirror of its storage on the model's device, where the batches are gathered."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_ablation.batched.buffers import AgentReplayBuffer

#: the mirrored fields, in the order of ``ReplayBufferSamples`` (``dones``: those not due to timeouts, as sampled)
MIRRORED = ("observations", "actions", "next_observations", "dones", "rewards")


class DeviceAgentReplayBuffer(AgentReplayBuffer):
    """
    :class:`AgentReplayBuffer` whose batches are gathered on the model's device: the buffer keeps SB3's NumPy storage
    (what SB3's ``save_replay_buffer`` pickles and the study's checkpoints save, unchanged) and a mirror of it as
    tensors on ``device`` (the fields a sample reads, dones as those not due to timeouts; as large as the storage,
    allocated at the first sample). ``add`` copies the K new rows to the mirror (a small copy per env step);
    ``sample`` draws the indices on the host exactly as :class:`AgentReplayBuffer` does (the agents' NumPy streams: a
    single run's draws), copies the ``(K, batch_size)`` indices to the device once and gathers every field there,
    instead of copying the gathered ``(K, batch_size, ...)`` fields at every gradient step. The batches are the same,
    bit for bit.

    The mirror is rebuilt from the storage, in full, at the next ``sample`` whenever it may be stale: a fresh buffer,
    a write position the mirror has not followed (the storage written by other means than ``add``: a checkpoint
    restored into the buffer, ``reset``), a buffer unpickled (the mirror is never pickled) or moved to another device
    (SB3's ``load_replay_buffer`` sets the buffer's device). Observations and rewards normalized by a ``VecNormalize``
    are gathered on the host (its statistics are NumPy's).

    Takes the arguments of SB3's ``ReplayBuffer`` but the memory-efficient variant.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.optimize_memory_usage:
            raise ValueError(f"{type(self).__name__} has no memory-efficient variant (optimize_memory_usage)")
        self._drop_mirror()

    def _drop_mirror(self) -> None:
        #: the mirrored fields, flat (row ``pos * K + k`` is agent k's transition at ``pos``); ``None`` until a sample
        self._mirror: dict[str, th.Tensor] | None = None
        #: the write position and device the mirror follows: another position means the storage moved without it
        self._mirrored_position: tuple[int, bool] | None = None
        self._mirror_device: th.device | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the storage only: the mirror is rebuilt from it (not saved with the buffer, nor on another device)
        state = self.__dict__.copy()
        for name in ("_mirror", "_mirrored_position", "_mirror_device"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._drop_mirror()

    @classmethod
    def of(cls, buffer: AgentReplayBuffer) -> DeviceAgentReplayBuffer:
        """The device form of ``buffer``, sharing its storage (no copy): e.g. of a buffer SB3 loaded from a file."""
        device_buffer = cls.__new__(cls)
        device_buffer.__setstate__(dict(vars(buffer)))
        if device_buffer.optimize_memory_usage:
            raise ValueError(f"{cls.__name__} has no memory-efficient variant (optimize_memory_usage)")
        return device_buffer

    def on_host(self) -> AgentReplayBuffer:
        """The host form of this buffer, sharing its storage (no copy)."""
        buffer = AgentReplayBuffer.__new__(AgentReplayBuffer)
        buffer.__dict__.update(self.__getstate__())
        return buffer

    def _host_fields(self, rows: slice) -> dict[str, np.ndarray]:
        """The mirrored fields of the storage's ``rows``, flat (agents within each position), as ``sample`` uses them."""
        dones = self.dones[rows] * (1 - self.timeouts[rows])  # (the arithmetic of AgentReplayBuffer's gather)
        fields = {
            "observations": self.observations[rows],
            "actions": self.actions[rows],
            "next_observations": self.next_observations[rows],
            "dones": dones[..., None],
            "rewards": self.rewards[rows][..., None],
        }
        return {name: array.reshape(-1, *array.shape[2:]) for name, array in fields.items()}

    def _sync_mirror(self) -> dict[str, th.Tensor]:
        """The mirror, rebuilt from the storage if it may be stale (its filled rows copied to the device)."""
        position = (self.pos, self.full)
        if self._mirror is not None and self._mirrored_position == position and self._mirror_device == self.device:
            return self._mirror
        filled = self.buffer_size if self.full else self.pos
        mirror = {}
        # (only the filled rows: the others are never sampled, add writes them before a sample can draw them)
        for name, array in self._host_fields(slice(0, filled)).items():
            source = th.from_numpy(array)
            shape = (self.buffer_size * self.n_envs, *source.shape[1:])
            mirror[name] = th.empty(shape, dtype=source.dtype, device=self.device)
            mirror[name][: len(source)].copy_(source)
        self._mirror, self._mirrored_position, self._mirror_device = mirror, position, self.device
        return mirror

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """SB3's ``add``, then the K new rows copied to the mirror (when it follows the storage: else it is rebuilt)."""
        position = (self.pos, self.full)
        super().add(obs, next_obs, action, reward, done, infos)
        if self._mirror is None or self._mirrored_position != position or self._mirror_device != self.device:
            return
        rows = slice(position[0] * self.n_envs, (position[0] + 1) * self.n_envs)
        for name, array in self._host_fields(slice(position[0], position[0] + 1)).items():
            self._mirror[name][rows].copy_(th.from_numpy(array))
        self._mirrored_position = (self.pos, self.full)

    def _gather_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """
        The transitions at ``batch_inds[k]`` of agent k's column, gathered on the device from the mirror (on the host
        with a ``VecNormalize``: :meth:`AgentReplayBuffer._gather_samples`).

        :param batch_inds: the positions of agent k's transitions, ``(K, batch_size)``
        :param env: the ``VecNormalize`` whose statistics normalize the observations and rewards, if any
        """
        if env is not None:
            return super()._gather_samples(batch_inds, env)
        mirror = self._sync_mirror()
        flat_inds = batch_inds * self.n_envs + np.arange(self.n_envs)[:, None]  # (the mirror's rows, see _host_fields)
        rows = th.from_numpy(flat_inds.astype(np.int64, copy=False)).to(self.device)
        return ReplayBufferSamples(*(mirror[name][rows] for name in MIRRORED))


def placed_buffer(buffer: AgentReplayBuffer, on_device: bool) -> AgentReplayBuffer:
    """``buffer``'s form that gathers its batches on the device (``on_device``) or on the host, its storage shared."""
    if on_device and not isinstance(buffer, DeviceAgentReplayBuffer):
        return DeviceAgentReplayBuffer.of(buffer)
    if not on_device and isinstance(buffer, DeviceAgentReplayBuffer):
        return buffer.on_host()
    return buffer


__all__ = ["DeviceAgentReplayBuffer", "placed_buffer"]
