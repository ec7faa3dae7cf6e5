"""The models the throughput benchmark compares, and the replay buffer content they all train on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3 import DDPG as SB3DDPG
from stable_baselines3 import TD3 as SB3TD3
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_ablation import DDPG, SWITCHES, AblatableTD3

ENV_ID = "Pendulum-v1"
SEED = 0
# rl-zoo's Pendulum-v1 hyperparameters for TD3/DDPG (the parts that matter for a gradient step)
GAMMA = 0.98
LEARNING_RATE = 1e-3

TD3_MODELS = ("sb3_td3", "td3", *(f"td3_no_{switch}" for switch in SWITCHES), "td3_speed")
DDPG_MODELS = ("sb3_ddpg", "ddpg", "ddpg_speed")
MODEL_NAMES = TD3_MODELS + DDPG_MODELS


def baseline_of(name: str) -> str:
    """
    The SB3 model a model is compared with.

    :param name: a model name from ``MODEL_NAMES``
    :return: ``"sb3_td3"`` for the TD3 family, ``"sb3_ddpg"`` for the DDPG family
    """
    return "sb3_ddpg" if name in DDPG_MODELS else "sb3_td3"


def model_class_and_kwargs(name: str) -> tuple[type[OffPolicyAlgorithm], dict[str, Any]]:
    """
    The class and the extra constructor arguments behind a model name.

    :param name: one of ``MODEL_NAMES``: ``sb3_td3``, ``sb3_ddpg``, ``td3`` (AblatableTD3 defaults),
        ``td3_no_<switch>`` (one switch off), ``td3_speed``/``ddpg_speed`` (``speed_mode=True``), ``ddpg`` (ours)
    :return: (algorithm class, keyword arguments that select the variant)
    """
    named: dict[str, tuple[type[OffPolicyAlgorithm], dict[str, Any]]] = {
        "sb3_td3": (SB3TD3, {}),
        "sb3_ddpg": (SB3DDPG, {}),
        "td3": (AblatableTD3, {}),
        "td3_speed": (AblatableTD3, {"speed_mode": True}),
        "ddpg": (DDPG, {}),
        "ddpg_speed": (DDPG, {"speed_mode": True}),
    }
    if name in named:
        return named[name]
    if name.startswith("td3_no_") and name[len("td3_no_") :] in SWITCHES:
        return AblatableTD3, {name[len("td3_no_") :]: False}
    raise ValueError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")


def build_model(name: str, env: str | gym.Env, net_arch: Sequence[int], **kwargs: Any) -> OffPolicyAlgorithm:
    """
    Build one model with rl-zoo's Pendulum-v1 settings and a silent logger, so ``train()`` can be called directly.

    :param name: model name (see ``model_class_and_kwargs``)
    :param env: environment or environment id
    :param net_arch: hidden layer sizes of actor and critics
    :param kwargs: further constructor arguments (buffer_size, batch_size, learning_starts, action_noise, ...)
    :return: the model
    """
    model_class, variant_kwargs = model_class_and_kwargs(name)
    settings: dict[str, Any] = dict(
        learning_rate=LEARNING_RATE,
        gamma=GAMMA,
        train_freq=1,
        gradient_steps=1,
        policy_kwargs=dict(net_arch=list(net_arch)),
        seed=SEED,
        device="cpu",
        verbose=0,
    )
    settings.update(kwargs)
    if variant_kwargs.get("replay_buffer") is False:
        # without a replay buffer AblatableTD3 keeps the newest transition alone and learns from it (batch 1)
        settings.pop("buffer_size", None)
        settings.pop("batch_size", None)
    model = model_class("MlpPolicy", env, **settings, **variant_kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def speed_mode_description(model: OffPolicyAlgorithm) -> str | None:
    """:return: what the model's speed mode chose, in words (None for a model without speed mode)"""
    info = getattr(model, "speed_mode_info", None)
    return None if info is None else str(info)


def collect_random_transitions(env_id: str, n_transitions: int, seed: int = SEED) -> dict[str, np.ndarray]:
    """
    Collect transitions with uniformly random actions, laid out like SB3's ``ReplayBuffer`` arrays (one env).

    :param env_id: Gymnasium environment id (continuous actions)
    :param n_transitions: how many transitions
    :param seed: seed of the environment and of the action sampler
    :return: arrays ``observations``, ``next_observations``, ``actions`` (scaled to [-1, 1], as TD3 stores them),
        ``rewards``, ``dones`` and ``timeouts``, each with the leading shape ``(n_transitions, 1)``
    """
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    action_space = env.action_space
    assert isinstance(action_space, gym.spaces.Box), f"{env_id} has no continuous actions"
    low, high = action_space.low, action_space.high
    observations, next_observations, actions, rewards, dones, timeouts = [], [], [], [], [], []
    obs, _ = env.reset(seed=seed)
    for _ in range(n_transitions):
        scaled_action = rng.uniform(-1.0, 1.0, size=low.shape).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(low + 0.5 * (scaled_action + 1.0) * (high - low))
        observations.append(obs)
        next_observations.append(next_obs)
        actions.append(scaled_action)
        rewards.append(reward)
        dones.append(terminated or truncated)
        timeouts.append(truncated and not terminated)
        obs = env.reset()[0] if terminated or truncated else next_obs
    env.close()
    return {
        "observations": np.asarray(observations, dtype=np.float32)[:, None],
        "next_observations": np.asarray(next_observations, dtype=np.float32)[:, None],
        "actions": np.asarray(actions, dtype=np.float32)[:, None],
        "rewards": np.asarray(rewards, dtype=np.float32)[:, None],
        "dones": np.asarray(dones, dtype=np.float32)[:, None],
        "timeouts": np.asarray(timeouts, dtype=np.float32)[:, None],
    }


def fill_replay_buffer(buffer: ReplayBuffer, transitions: dict[str, np.ndarray]) -> int:
    """
    Copy transitions into a replay buffer as if they had been added one by one.

    A buffer smaller than the data (AblatableTD3 with ``replay_buffer=False`` keeps one transition) gets the most
    recent transitions that fit.

    :param buffer: SB3 replay buffer with one environment
    :param transitions: arrays from ``collect_random_transitions``
    :return: the number of transitions stored
    """
    n_stored = min(len(transitions["observations"]), buffer.buffer_size)
    for field, values in transitions.items():
        destination = getattr(buffer, field, None)
        if destination is None:  # e.g. next_observations with optimize_memory_usage=True
            continue
        destination[:n_stored] = values[len(values) - n_stored :].reshape(destination[:n_stored].shape)
    buffer.pos = n_stored % buffer.buffer_size
    buffer.full = n_stored == buffer.buffer_size
    return n_stored
