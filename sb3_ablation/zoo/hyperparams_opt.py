"""Optuna samplers and converters for ``ablatable_td3`` and ``ddpg_scratch``, in rl_zoo3's sampler format.

They extend rl_zoo3's own TD3 sampler (learning rate, batch size, gamma, tau, train frequency = gradient steps,
noise type and std, network size) with the buffer size and, for TD3, the policy delay and target smoothing noise.
The component switches are held at the values of the config (so each ablation variant is tuned on its own) unless
they are named in ``tune_switches``; then each is a categorical parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna

from sb3_ablation.zoo.adapter import convert_offpolicy_params, sample_td3_params

#: Replay buffer sizes tried (categorical: they span orders of magnitude and must stay integers).
BUFFER_SIZES = [10_000, 100_000, 1_000_000]


def sample_ddpg_scratch_params(
    trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict[str, Any]
) -> dict[str, Any]:
    """
    Sampler for DDPG: rl_zoo3's TD3/DDPG sampler plus the replay buffer size.

    :param trial: the Optuna trial
    :param n_actions: size of the action space (for the action noise)
    :param n_envs: number of environments
    :param additional_args: rl_zoo3's extra sampler arguments (HER settings)
    :return: constructor arguments
    """
    hyperparams = sample_td3_params(trial, n_actions, n_envs, additional_args)
    if trial.params["noise_type"] is None:
        # rl_zoo3's sampler just leaves the noise out, which would keep the config's noise: make "no noise" explicit
        hyperparams["action_noise"] = None
    hyperparams["buffer_size"] = trial.suggest_categorical("buffer_size", BUFFER_SIZES)
    return hyperparams


def sample_ablatable_td3_params(
    trial: optuna.Trial,
    n_actions: int,
    n_envs: int,
    additional_args: dict[str, Any],
    tune_switches: Sequence[str] = (),
) -> dict[str, Any]:
    """
    Sampler for AblatableTD3: the DDPG parameters plus policy delay, target policy noise and its clip, and the
    component switches named in ``tune_switches`` (the others keep the config's values).

    :param trial: the Optuna trial
    :param n_actions: size of the action space (for the action noise)
    :param n_envs: number of environments
    :param additional_args: rl_zoo3's extra sampler arguments (HER settings)
    :param tune_switches: component switches to tune as categorical True/False parameters
    :return: constructor arguments
    """
    hyperparams = sample_ddpg_scratch_params(trial, n_actions, n_envs, additional_args)
    hyperparams["policy_delay"] = trial.suggest_int("policy_delay", 1, 4)
    hyperparams["target_policy_noise"] = trial.suggest_float("target_policy_noise", 0.05, 0.5)
    hyperparams["target_noise_clip"] = trial.suggest_float("target_noise_clip", 0.1, 1.0)
    for switch in tune_switches:
        hyperparams[switch] = trial.suggest_categorical(switch, [True, False])
    return hyperparams


def convert_ablation_params(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """
    Turn a trial's parameters (``trial.params``) back into zoo hyperparameters, as rl_zoo3 does with
    ``--storage ... --study-name ... --trial-id``: rl_zoo3's off-policy converter, with "no action noise" dropping
    the noise std too (``noise_type: None`` is then understood by our experiment manager).

    :param sampled_params: ``trial.params`` of one of our samplers
    :return: zoo hyperparameters (``policy_kwargs`` as a dict)
    """
    hyperparams = convert_offpolicy_params(dict(sampled_params))
    if hyperparams.get("noise_type", "") is None:
        hyperparams.pop("noise_std", None)
    return hyperparams
