"""Optuna samplers and converters for ``ablatable_td3`` and ``ddpg_scratch``, in rl_zoo3's sampler format.

They extend rl_zoo3's own TD3 sampler (learning rate, batch size, gamma, tau, train frequency = gradient steps,
noise type and std, network size) with the buffer size and, for TD3, the policy delay and target smoothing noise.
The component switches are held at the values of the config (so each ablation variant is tuned on its own) unless
they are named in ``tune_switches``; then each is a categorical parameter.

A declared search space (:func:`sample_declared_params`, e.g. a study's ``tuning.search_space``) samples only the
hyperparameters it names, in its ranges; every other one keeps the config's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from stable_baselines3.common.noise import NormalActionNoise

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
    if "one_minus_gamma" not in sampled_params:  # a trial of a declared search space (the full samplers sample it)
        return convert_declared_params(sampled_params)
    hyperparams = convert_offpolicy_params(dict(sampled_params))
    if hyperparams.get("noise_type", "") is None:
        hyperparams.pop("noise_std", None)
    return hyperparams


#: Search-space entries sampled as integers when both bounds are integers (a hyperparameter the zoo keeps as an int).
INTEGER_PARAMS = ("batch_size", "buffer_size", "learning_starts", "train_freq", "gradient_steps", "policy_delay")


def sample_declared_params(
    trial: optuna.Trial,
    n_actions: int,
    n_envs: int,
    additional_args: dict[str, Any],
    space: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """
    Sampler over a declared search space: each named hyperparameter from its range, nothing else (the config's
    values stay). ``noise_std`` is the std of rl-zoo's normal action noise (as ``noise_type: normal`` builds it).

    :param trial: the Optuna trial
    :param n_actions: size of the action space (for the action noise)
    :param n_envs: number of environments (not used)
    :param additional_args: rl_zoo3's extra sampler arguments (not used)
    :param space: hyperparameter -> ``{"low", "high"[, "log" | "step"]}`` or ``{"choices": [...]}``
    :return: constructor arguments
    """
    hyperparams: dict[str, Any] = {}
    for name, spec in (space or {}).items():
        if "choices" in spec:
            value = trial.suggest_categorical(name, list(spec["choices"]))
        elif name in INTEGER_PARAMS and isinstance(spec["low"], int) and isinstance(spec["high"], int):
            value = trial.suggest_int(name, spec["low"], spec["high"], step=spec.get("step", 1), log=spec.get("log", False))
        else:
            value = trial.suggest_float(
                name, float(spec["low"]), float(spec["high"]), step=spec.get("step"), log=spec.get("log", False)
            )
        hyperparams[name] = value
    if "noise_std" in hyperparams:
        noise_std = hyperparams.pop("noise_std")
        hyperparams["action_noise"] = NormalActionNoise(mean=np.zeros(n_actions), sigma=noise_std * np.ones(n_actions))
    return hyperparams


def convert_declared_params(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """
    A trial's parameters of :func:`sample_declared_params` as zoo hyperparameters: the same keys, ``noise_std`` with
    ``noise_type: normal``.

    :param sampled_params: ``trial.params``
    :return: zoo hyperparameters
    """
    hyperparams = dict(sampled_params)
    if "noise_std" in hyperparams:
        hyperparams["noise_type"] = "normal"
    return hyperparams
