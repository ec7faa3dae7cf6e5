"""Each agent's own random number streams: what a single run draws from the process's global streams."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.noise import (
    ActionNoise,
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    VectorizedActionNoise,
)


class AgentStream:
    """
    The random number streams of one agent, standing in for those a single run draws from: NumPy's global stream
    (replay sampling, exploration noise), PyTorch's global generator on the model's device (target policy smoothing,
    the Gaussian actor's samples) and the model's action space (random actions before ``learning_starts``).

    Where they live. The torch generator is on the model's device, with the tensors it fills: on a GPU, no draw of the
    training step goes through the host. The NumPy streams stay on the host on purpose, whatever the device: they are
    the draws SB3 makes in a single run (the replay indices, the exploration noise), which an agent reproduces only
    with NumPy's own generator; the ``(K, batch_size)`` replay indices are then copied to the device once per step
    (:class:`~sb3_ablation.batched.device_buffer.DeviceAgentReplayBuffer`).

    :param numpy: NumPy's legacy generator (the global stream's algorithm: the same draws from the same state)
    :param torch: PyTorch's generator on the model's device
    :param action_space: a copy of the action space with its own generator
    """

    def __init__(self, numpy: np.random.RandomState, torch: th.Generator, action_space: spaces.Space):
        self.numpy = numpy
        self.torch = torch
        self.action_space = action_space

    @classmethod
    def from_seed(cls, seed: int, action_space: spaces.Space, device: th.device | str = "cpu") -> AgentStream:
        """The streams a single run of seed ``seed`` starts with (SB3's ``set_random_seed``), before building anything."""
        generator = th.Generator(device=device)
        generator.manual_seed(seed)
        space = copy.deepcopy(action_space)
        space.seed(seed)
        return cls(np.random.RandomState(seed), generator, space)

    @classmethod
    def of_process(cls, action_space: spaces.Space, device: th.device | str = "cpu") -> AgentStream:
        """
        The process's global streams as they are now, and ``action_space``'s: taken right after a single run of the
        agent was built, they are the streams that run would train with.
        """
        numpy = np.random.RandomState()
        numpy.set_state(np.random.get_state())
        generator = th.Generator(device=device)
        device = th.device(device)
        generator.set_state(th.cuda.get_rng_state(device) if device.type == "cuda" else th.get_rng_state())
        return cls(numpy, generator, copy.deepcopy(action_space))

    def get_state(self) -> dict[str, Any]:
        """The streams' state (plain arrays and dicts), for checkpoints."""
        return {
            "numpy": self.numpy.get_state(),
            "torch": self.torch.get_state(),
            "action_space": copy.deepcopy(self.action_space.np_random.bit_generator.state),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state`."""
        self.numpy.set_state(state["numpy"])
        self.torch.set_state(state["torch"])
        self.action_space.np_random.bit_generator.state = state["action_space"]

    def __getstate__(self) -> dict[str, Any]:
        # (a generator on a device does not pickle in every PyTorch version: its state does)
        return {**self.get_state(), "device": str(self.torch.device), "space": self.action_space}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.numpy = np.random.RandomState()
        self.torch = th.Generator(device=state["device"])
        self.action_space = state["space"]
        self.set_state(state)

    def action_noise(self, noise: ActionNoise) -> np.ndarray:
        """
        One draw of ``noise`` from this agent's NumPy stream: the draw a single run makes from the global stream
        (SB3's normal and Ornstein-Uhlenbeck noise computed here with the same arithmetic; any other noise is called
        with the global stream swapped for the agent's).
        """
        if type(noise) is NormalActionNoise:
            return self.numpy.normal(noise._mu, noise._sigma).astype(noise._dtype)
        if type(noise) is OrnsteinUhlenbeckActionNoise:
            value = (
                noise.noise_prev
                + noise._theta * (noise._mu - noise.noise_prev) * noise._dt
                + noise._sigma * np.sqrt(noise._dt) * self.numpy.normal(size=noise._mu.shape)
            )
            noise.noise_prev = value
            return value.astype(noise._dtype)
        saved = np.random.get_state()
        np.random.set_state(self.numpy.get_state())
        try:
            return noise()
        finally:
            self.numpy.set_state(np.random.get_state())
            np.random.set_state(saved)


def agent_normal(like: th.Tensor, streams: Sequence[AgentStream], stds: Sequence[float | None] | None = None) -> th.Tensor:
    """
    Gaussian draws shaped as ``like`` (agents first), agent k's part drawn from agent k's generator with mean 0 and
    standard deviation ``stds[k]`` (1 without ``stds``): what a single run's ``normal_(0, std)`` on a tensor of its
    part's shape draws from the global generator. An agent whose std is ``None`` draws nothing (its part is zero).
    """
    draws = th.zeros_like(like, memory_format=th.contiguous_format)
    for agent, stream in enumerate(streams):
        std = 1.0 if stds is None else stds[agent]
        if std is not None:
            draws[agent].normal_(0.0, std, generator=stream.torch)
    return draws


def with_agent_noise(
    scaled_actions: np.ndarray, action_noise: ActionNoise, streams: Sequence[AgentStream], sampling: Sequence[bool] | None
) -> np.ndarray:
    """
    The agents' scaled actions with their exploration noise, agent k's drawn from its stream
    (:meth:`AgentStream.action_noise`), clipped to [-1, 1] as SB3's ``_sample_action`` does.

    :param action_noise: the group's noise (a ``VectorizedActionNoise``: agent k's is its k-th)
    :param sampling: whether agent k has a Gaussian actor, where the agents differ in that: only the deterministic
        ones then explore with action noise (the others by sampling themselves); ``None``: every agent
    """
    noises = action_noise.noises if isinstance(action_noise, VectorizedActionNoise) else [action_noise]
    if sampling is None:
        draws = [stream.action_noise(noise) for stream, noise in zip(streams, noises, strict=True)]
        return np.clip(scaled_actions + np.stack(draws), -1, 1)
    scaled_actions = np.array(scaled_actions)
    for agent, (stream, noise) in enumerate(zip(streams, noises, strict=True)):
        if not sampling[agent]:
            scaled_actions[agent] = np.clip(scaled_actions[agent] + stream.action_noise(noise), -1, 1)
    return scaled_actions


def check_trainable_streams(streams: Sequence[AgentStream], device: th.device, name: str) -> None:
    """
    :param name: the model's class name, for the error
    :raise ValueError: a stream's generator is on another device type than the model: each torch draw of training is
        from agent k's generator, on the tensors' device, and a generator's state does not move between device types
        (a group loaded on another device than its streams' is evaluated, not trained)
    """
    for stream in streams:
        if stream.torch.device.type != device.type:
            raise ValueError(
                f"{name}'s random streams are on {stream.torch.device}, the model on {device}: "
                f"to train it, load it with device='{stream.torch.device.type}'"
            )


__all__ = ["AgentStream", "agent_normal", "check_trainable_streams", "with_agent_noise"]
