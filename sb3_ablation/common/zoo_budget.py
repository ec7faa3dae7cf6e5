"""The default training budget of ``learn()``: the env's ``n_timesteps`` in the shipped zoo config.

rl-zoo's YAML files give every tuned env a budget; ``model.learn()`` without ``total_timesteps`` uses it, so that
``AblatableTD3("MlpPolicy", "Pendulum-v1").learn()`` trains as ``sb3-ablation train`` would. An env without its own
entry (the ``default`` entry is a template, not a budget) gets an error that names ``total_timesteps``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml


def config_dir() -> Path:
    """
    :return: the folder holding the shipped zoo configs: ``sb3_ablation/zoo_configs`` inside an installed wheel,
        ``zoo_configs/`` at the root of a source checkout (or an editable install).
    """
    package_dir = Path(__file__).resolve().parent.parent
    installed = package_dir / "zoo_configs"
    return installed if installed.is_dir() else package_dir.parent / "zoo_configs"


@functools.cache
def _entries(config: str) -> dict[str, Any]:
    with open(config_dir() / f"{config}.yml") as file:
        return yaml.safe_load(file) or {}


def env_id_of(env: Any) -> str | None:
    """The Gymnasium id of a (vectorized, wrapped) env's first env, ``None`` when it has no registered spec."""
    if env is None:
        return None
    spec = env.get_attr("spec")[0] if hasattr(env, "get_attr") else getattr(env, "spec", None)
    return getattr(spec, "id", None)


def default_budget(config: str, env: Any) -> tuple[int, str]:
    """
    :param config: the zoo config's name (``ablatable_td3``, ``ddpg_scratch``)
    :param env: the model's env
    :return: the env's ``n_timesteps`` in ``zoo_configs/<config>.yml``, and the env id
    :raise TypeError: the env has no entry there (or no id), naming ``total_timesteps``
    """
    env_id = env_id_of(env)
    entry = _entries(config).get(env_id) if env_id and env_id != "default" else None
    if not entry or "n_timesteps" not in entry:
        what = f"{env_id} has no n_timesteps in zoo_configs/{config}.yml" if env_id else "the env has no registered id"
        raise TypeError(f"learn() needs total_timesteps: {what}; pass learn(total_timesteps=...)")
    return int(float(entry["n_timesteps"])), env_id  # type: ignore[return-value]
