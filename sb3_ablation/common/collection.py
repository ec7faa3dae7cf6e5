"""
A lean data-collection step for off-policy algorithms, bit-exact with SB3's.

SB3's ``collect_rollouts`` spends most of a small network's environment step outside the environment: switching the
policy between training and evaluation mode twice per step (a recursive ``nn.Module.train`` over every submodule;
our policies' ``set_training_mode`` writes the flags of the modules listed by :func:`training_flag_modules`), and
``predict``'s general-purpose input handling. The pieces here do the same arithmetic on the same arrays in the same
order (so the same actions, the same buffer and the same random draws), with less Python around it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.preprocessing import is_image_space
from torch import nn

if TYPE_CHECKING:  # the mixin's host, for the type checker (at run time a mixin has no base)
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm as _OffPolicyAlgorithm
else:
    _OffPolicyAlgorithm = object


def training_flag_modules(networks: list[nn.Module]) -> list[nn.Module] | None:
    """
    The modules whose ``training`` flag ``nn.Module.train`` sets on ``networks``, listed once so that a policy's
    ``set_training_mode`` can write the flags without the recursive walk (SB3 switches the mode twice per environment
    step; for a small network the walk costs more than the forward pass).

    :return: the modules, or None where a module overrides ``train`` (then only calling it is exact)
    """
    modules = [module for network in networks for module in network.modules()]
    return modules if all(type(module).train is nn.Module.train for module in modules) else None


class LeanCollectionMixin(_OffPolicyAlgorithm):
    """
    Off-policy algorithm mixin: the exploration action of a step computed with less overhead than ``predict``, and
    transitions stored without a deep copy. Anything unusual (dict or image observations, VecNormalize, gSDE) takes
    SB3's own code path.
    """

    def _configure_lean_collection(self) -> None:
        """Choose the lean exploration step where the observations allow it (call after the policy is built)."""
        space = self.observation_space
        self._lean_observations = isinstance(space, spaces.Box) and not is_image_space(space) and not self.use_sde

    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None = None, n_envs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        lean = getattr(self, "_lean_observations", False) and self.num_timesteps >= learning_starts
        last_obs = self._last_obs
        if not lean or not isinstance(last_obs, np.ndarray) or last_obs.shape[1:] != self.observation_space.shape:
            return super()._sample_action(learning_starts, action_noise, n_envs)
        policy = self.policy
        action_space = cast(spaces.Box, self.action_space)  # (the algorithms refuse other action spaces)
        # SB3's `predict` on a batch of flat observations: the same tensor, forward pass and numpy arithmetic
        policy.set_training_mode(False)
        with th.no_grad():
            predicted = policy._predict(th.as_tensor(last_obs, device=self.device), deterministic=False)
        actions = predicted.cpu().numpy().reshape((-1, *action_space.shape))
        unscaled_action = policy.unscale_action(actions) if policy.squash_output else actions
        if not policy.squash_output:
            unscaled_action = np.clip(unscaled_action, action_space.low, action_space.high)
        # Then SB3's `_sample_action`: rescale to [-1, 1], add the exploration noise, clip
        scaled_action = policy.scale_action(unscaled_action)
        if action_noise is not None:
            scaled_action = np.clip(scaled_action + action_noise(), -1, 1)
        return policy.unscale_action(scaled_action), scaled_action

    def _store_transition(
        self,
        replay_buffer: Any,
        buffer_action: np.ndarray,
        new_obs: np.ndarray | dict[str, np.ndarray],
        reward: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        if self._vec_normalize_env is not None or not isinstance(new_obs, np.ndarray):
            return super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)
        # SB3's `_store_transition` for plain arrays: a copy of the new observations (not a deep copy of anything
        # else), with the terminal observation of finished episodes in place of the reset one
        self._last_original_obs = self._last_obs
        next_obs = new_obs.copy()
        for index in np.flatnonzero(dones):
            terminal_obs = infos[index].get("terminal_observation")
            if terminal_obs is not None:
                next_obs[index] = terminal_obs
        replay_buffer.add(self._last_original_obs, next_obs, buffer_action, reward, dones, infos)
        self._last_obs = new_obs
