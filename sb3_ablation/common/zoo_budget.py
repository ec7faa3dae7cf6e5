"""The default training budget of ``learn()``: the env's ``n_timesteps`` in the shipped zoo config.

rl-zoo's YAML files give every tuned env a budget; ``model.learn()`` without ``total_timesteps`` uses it, so that
``AblatableTD3("MlpPolicy", "Pendulum-v1").learn()`` trains as long as ``sb3-ablation train`` would. The config is
found and read by the zoo's own code (:mod:`sb3_ablation.zoo.hyperparams`, imported only when needed). An env
without its own entry (the ``default`` entry is a template, not a budget) or without a registered id gets a
``TypeError`` that names ``total_timesteps``, as a call without the argument got before.
"""

from __future__ import annotations

from typing import Any


def env_id_of(env: Any) -> str | None:
    """
    The Gymnasium id of an env's (first) env: through a ``VecEnv`` and its wrappers (``VecNormalize``, ...) and the
    Gymnasium wrappers (``Monitor``, ``TimeLimit``, ...); None when it has no registered spec.
    """
    if env is None:
        return None
    try:
        spec = env.get_attr("spec", indices=[0])[0] if hasattr(env, "get_attr") else getattr(env, "spec", None)
    except Exception:  # an env whose spec cannot be read has no id to look up
        return None
    env_id = getattr(spec, "id", None)
    return env_id if isinstance(env_id, str) else None


def _entries(config: str) -> dict[str, Any]:
    """The entries of the shipped ``zoo_configs/<config>.yml``, read by the zoo's code."""
    # in the function: zoo.hyperparams imports rl_zoo3 (heavy) and the algorithms, which import this module (a cycle)
    from sb3_ablation.zoo.hyperparams import config_entries

    return config_entries(config)


def default_budget(config: str, env: Any) -> tuple[int, str]:
    """
    :param config: the zoo config's name: ``ablatable_td3`` (AblatableTD3, BatchedTD3) or ``ddpg_scratch`` (DDPG)
    :param env: the model's env
    :return: the env's ``n_timesteps`` in ``zoo_configs/<config>.yml``, and the env id
    :raise TypeError: the env has no entry there, or no registered id; the message names ``total_timesteps``
    """
    env_id = env_id_of(env)
    if env_id is None:
        what = "the model has no env" if env is None else "the env has no registered id (no gymnasium spec)"
        raise TypeError(
            f"learn() needs total_timesteps: {what}, so zoo_configs/{config}.yml has no n_timesteps for it; "
            "pass learn(total_timesteps=...)"
        )
    # in the function: rl_zoo3 is heavy, and zoo.hyperparams imports the algorithms, which import this module
    from sb3_ablation.zoo.hyperparams import ZooConfigError, zoo_budget

    try:
        return zoo_budget(config, env_id, _entries(config)), env_id
    except ZooConfigError as error:
        raise TypeError(f"learn() needs total_timesteps: {error}; pass learn(total_timesteps=...)") from None
