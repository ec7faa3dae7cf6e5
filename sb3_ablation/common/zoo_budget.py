"""The default training budget of ``learn()``: the env's ``n_timesteps`` in the shipped zoo config.

rl-zoo's YAML files give every tuned env a budget; ``model.learn()`` without ``total_timesteps`` uses it, so that
``AblatableTD3("MlpPolicy", "Pendulum-v1").learn()`` trains as long as ``sb3-ablation train`` would. The shipped
config is plain YAML (one entry per env id plus ``default``), read here, below the algorithms, without rl_zoo3; the
zoo's own code (:mod:`sb3_ablation.zoo.hyperparams`) reads configs with the same functions. An env without its own
entry (the ``default`` entry is a template, not a budget) or without a registered id gets a ``TypeError`` that names
``total_timesteps``, as a call without the argument got before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class ZooConfigError(ValueError):
    """Bad zoo input (algorithm, environment, config file, hyperparameter key or value): shown as one line."""


def config_dir() -> Path:
    """
    :return: the folder holding the shipped zoo configs: ``sb3_ablation/zoo_configs`` inside an installed wheel,
        ``zoo_configs/`` at the root of a source checkout (or an editable install).
    """
    package_dir = Path(__file__).resolve().parent.parent
    installed = package_dir / "zoo_configs"
    return installed if installed.is_dir() else package_dir.parent / "zoo_configs"


def read_config_entries(conf_file: str) -> dict[str, Any]:
    """
    The entries of a YAML zoo config (env id -> hyperparameters), as rl_zoo3 reads the file (``yaml.safe_load``).

    :param conf_file: the YAML file
    :raise ZooConfigError: a missing or unreadable file, or one that is not a mapping
    """
    try:
        entries = yaml.safe_load(Path(conf_file).read_text()) or {}
    except OSError as error:
        raise ZooConfigError(f"config file {conf_file}: not readable ({error})") from None
    except yaml.YAMLError as error:
        raise ZooConfigError(f"{conf_file}: not valid YAML ({error})".replace("\n", " ")) from None
    if not isinstance(entries, dict):
        raise ZooConfigError(f"{conf_file}: not a zoo config (a mapping of environment ids)")
    return entries


def entry_budget(entries: dict[str, Any], env_id: str, shown: str) -> int:
    """
    The ``n_timesteps`` of ``env_id``'s own entry (the ``default`` entry is a template for other envs, not a budget).

    :param entries: a config's entries
    :param env_id: the env id
    :param shown: the config as the message names it (e.g. ``zoo_configs/ablatable_td3.yml``)
    :raise ZooConfigError: ``env_id`` has no entry with ``n_timesteps`` there
    """
    entry = entries.get(env_id) if env_id != "default" else None
    if not isinstance(entry, dict) or "n_timesteps" not in entry:
        raise ZooConfigError(f"{env_id} has no n_timesteps in {shown}")
    return int(float(entry["n_timesteps"]))  # YAML's 1e6 is a float (rl_zoo3 takes int() of it)


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
    """The entries of the shipped ``zoo_configs/<config>.yml``."""
    return read_config_entries(str(config_dir() / f"{config}.yml"))


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
    try:
        return entry_budget(_entries(config), env_id, f"zoo_configs/{config}.yml"), env_id
    except ZooConfigError as error:
        raise TypeError(f"learn() needs total_timesteps: {error}; pass learn(total_timesteps=...)") from None


def env_budget(config: str, env_id: str) -> int | None:
    """
    :param config: the zoo config's name (``ablatable_td3``, ``ddpg_scratch``)
    :param env_id: the env id
    :return: the ``n_timesteps`` of the env's own entry in the shipped ``zoo_configs/<config>.yml``; None without one
    """
    try:
        return entry_budget(_entries(config), env_id, f"zoo_configs/{config}.yml")
    except ZooConfigError:
        return None
