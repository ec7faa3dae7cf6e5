"""Zoo-format hyperparameters: find, load, check and split them, with rl_zoo3's own preprocessing.

The YAML files follow rl-baselines3-zoo's format (one entry per environment id plus ``default``). Loading and
preprocessing (schedules, ``policy_kwargs`` strings, action noise, wrappers, normalisation) are delegated to
rl_zoo3's ExperimentManager (through :mod:`sb3_ablation.zoo.adapter`) so a config means exactly what it means to
``rl_zoo3.train``.
On top of that, :func:`check_hyperparams` rejects keys the algorithm does not take and values of the wrong type
with one message naming the key, the closest valid key and the file, before anything is built.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
from collections.abc import Iterable
from pathlib import Path
from types import NoneType
from typing import Any

import gymnasium as gym
import stable_baselines3 as sb3
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.noise import ActionNoise

from sb3_ablation import DDPG, AblatableTD3
from sb3_ablation.common.suggestions import did_you_mean
from sb3_ablation.common.zoo_budget import ZooConfigError, config_dir, entry_budget, env_id_of, read_config_entries
from sb3_ablation.zoo import adapter

#: rl_zoo3 names of the algorithms the zoo integration knows: ours and SB3's own, which keep their meaning.
ALGOS: dict[str, type[BaseAlgorithm]] = {
    "ablatable_td3": AblatableTD3,
    "ddpg_scratch": DDPG,
    "td3": sb3.TD3,
    "ddpg": sb3.DDPG,
}
#: The algorithms this package adds (their configs are shipped in ``zoo_configs/``).
OWN_ALGOS = ("ablatable_td3", "ddpg_scratch")

#: rl_zoo3's own keys, consumed by its ExperimentManager before the model is built -> accepted value types.
ZOO_KEYS: dict[str, tuple[type, ...]] = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "normalize": (bool, str, dict),
    "env_wrapper": (str, list, dict, NoneType),
    "vec_env_wrapper": (str, list, dict, NoneType),
    "frame_stack": (int, NoneType),
    "callback": (str, list, dict, NoneType),
    "noise_type": (str, NoneType),
    "noise_std": (int, float),
    "env_kwargs": (dict, NoneType),
    "monitor_kwargs": (dict, str),
}
#: Constructor arguments whose zoo form is not the type of their default value.
CONSTRUCTOR_TYPES: dict[str, tuple[type, ...]] = {
    "policy": (str, type),
    "learning_rate": (int, float, str),  # str: an rl_zoo3 schedule such as "lin_1e-3"
    "train_freq": (int, list, tuple),  # e.g. [1, "episode"]
    "policy_kwargs": (dict, str, NoneType),  # str: Python evaluated by rl_zoo3, e.g. "dict(net_arch=[400, 300])"
    "replay_buffer_class": (str, type, NoneType),
    "replay_buffer_kwargs": (dict, str, NoneType),
    "action_noise": (ActionNoise, NoneType),
}
#: Constructor arguments that the command line sets (rl_zoo3 passes them itself), with the flag to use instead.
COMMAND_LINE_KEYS = {"env": "--env", "seed": "--seed", "verbose": "--verbose", "device": "--device", "tensorboard_log": "-tb"}
#: What the environment-side keys default to when an entry leaves them out (rl_zoo3's defaults).
ENV_SETTING_DEFAULTS: dict[str, Any] = {
    "n_envs": 1,
    "normalize": False,
    "normalize_kwargs": {},
    "env_wrapper": None,
    "vec_env_wrapper": None,
    "frame_stack": None,
    "env_kwargs": {},
    "monitor_kwargs": {},
    "callbacks": [],
}


def _type_names(types: tuple[type, ...]) -> str:
    names = {NoneType: "null", bool: "true/false", int: "an integer", float: "a number", str: "a string"}
    if int in types and float in types:  # "an integer or a number" reads oddly
        types = tuple(t for t in types if t is not int)
    return " or ".join(names.get(t, t.__name__) for t in types)


def default_config_file(algo: str) -> str:
    """
    :param algo: rl_zoo3 algorithm name
    :return: the config rl_zoo3 reads for ``algo`` when no ``--conf-file`` is given: ours for our algorithms,
        rl_zoo3's shipped ``hyperparams/<algo>.yml`` for all others (SB3's ``td3`` and ``ddpg`` included).
    """
    if algo in OWN_ALGOS:
        return str(config_dir() / f"{algo}.yml")
    return adapter.zoo_default_config(algo)


def check_algo(algo: str) -> None:
    """:raise ZooConfigError: when ``algo`` is not an rl_zoo3 algorithm (ours registered or not)."""
    known = sorted(set(adapter.zoo_algorithm_names()) | set(ALGOS))
    if algo not in known:
        raise ZooConfigError(
            f"unknown algorithm {algo!r}{did_you_mean(algo, known, separator='; ')} (expected one of {', '.join(known)})"
        )


def check_env_id(env_id: str) -> None:
    """:raise ZooConfigError: when ``env_id`` is not registered with Gymnasium, naming the closest registered id."""
    adapter.register_zoo_envs()
    if env_id not in gym.envs.registry:
        raise ZooConfigError(f"unknown environment {env_id!r}{did_you_mean(env_id, gym.envs.registry, separator='; ')}")


#: Algorithms that act in continuous (Box) action spaces only: ours, SB3's TD3 and DDPG, and SAC / TQC.
CONTINUOUS_ONLY = (*OWN_ALGOS, "td3", "ddpg", "sac", "tqc")


def check_action_space(algo: str, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
    """
    Make the env once and check that ``algo`` can act in it, before anything is written (rl_zoo3 would fail later,
    on its action-noise assertion, and blame the config).

    :param algo: the algorithm
    :param env_id: a registered Gymnasium env id
    :param env_kwargs: the env's keyword arguments (``--env-kwargs``)
    :raise ZooConfigError: the env needs a simulator that is not installed (whatever the algorithm), or ``algo``
        needs continuous actions and the env's are not a ``Box``
    """
    try:
        env = gym.make(env_id, **(env_kwargs or {}))
    except gym.error.DependencyNotInstalled as error:
        raise ZooConfigError(missing_dependency_message(env_id, error)) from None
    except Exception:  # e.g. a bad env_kwarg: the run's own set-up reports it, with its context
        return
    try:
        space = env.action_space
    finally:
        env.close()
    if algo in CONTINUOUS_ONLY and not isinstance(space, gym.spaces.Box):
        raise ZooConfigError(
            f"{algo} needs continuous (Box) actions, but {env_id} has {space}; "
            "pick a continuous-action env, e.g. Pendulum-v1 or LunarLanderContinuous-v3"
        )


#: Simulators that an extra of this package installs: the start of an env's entry point -> (name, extra).
SIMULATOR_EXTRAS = {"gymnasium.envs.mujoco": ("MuJoCo", "mujoco"), "gymnasium.envs.box2d": ("Box2D", "box2d")}


def missing_dependency_message(env_id: str, error: Exception) -> str:
    """
    :return: what ``env_id`` needs and how to install it (for an env that cannot be made because a library is
        missing), with Gymnasium's own message
    """
    entry_point = str(getattr(gym.envs.registry.get(env_id), "entry_point", ""))
    for prefix, (name, extra) in SIMULATOR_EXTRAS.items():
        if entry_point.startswith(prefix):
            install = f"pip install 'sb3-ablation[{extra}]'" if extra == "mujoco" else f"pip install 'gymnasium[{extra}]'"
            return f"{env_id} needs {name}, which is not installed: {install} (gymnasium: {error})"
    return f"{env_id} cannot be made: {error}"


def entry_name(conf_file: str, env_id: str) -> str:
    """
    :return: the entry of ``conf_file`` that rl_zoo3 uses for ``env_id`` (the env id itself, or ``default``);
        for Python configs, ``env_id``
    """
    if not conf_file.endswith((".yml", ".yaml")):
        return env_id
    with contextlib.suppress(OSError, yaml.YAMLError):
        entries = yaml.safe_load(Path(conf_file).read_text()) or {}
        if env_id not in entries and "default" in entries:
            return "default"
    return env_id


def _evaluate(key: str, text: str, where: str) -> Any:
    """Evaluate a Python-expression value the way rl_zoo3 does (in its ExperimentManager's namespace)."""
    try:
        return adapter.evaluate_config_value(text)
    except Exception as error:
        raise ZooConfigError(f"{where}: {key}: could not evaluate {text!r} ({type(error).__name__}: {error})") from None


def check_hyperparams(algo: str, hyperparams: dict[str, Any], source: str, override_keys: Iterable[str] = ()) -> None:
    """
    Check a zoo entry against the algorithm's constructor and rl_zoo3's own keys, before anything is built.

    :param algo: one of :data:`ALGOS`
    :param hyperparams: the zoo entry (overrides applied)
    :param source: where the entry comes from, for the message (e.g. ``"zoo_configs/ablatable_td3.yml [Pendulum-v1]"``)
    :param override_keys: keys that came from ``--hyperparams`` (reported as such)
    :raise ZooConfigError: naming the first bad key, the closest valid key and where it comes from
    """
    algo_class = ALGOS[algo]
    parameters = inspect.signature(algo_class.__init__).parameters
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    constructor = {
        name: p for name, p in parameters.items() if name not in ("self", *COMMAND_LINE_KEYS) and not name.startswith("_")
    }
    valid = sorted(set(constructor) | set(ZOO_KEYS))
    override_keys = set(override_keys)

    for key, value in hyperparams.items():
        where = "--hyperparams" if key in override_keys else source
        if key in COMMAND_LINE_KEYS:
            raise ZooConfigError(
                f"{where}: {key!r} is set on the command line ({COMMAND_LINE_KEYS[key]}), not as a hyperparameter"
            )
        if key in ZOO_KEYS:
            types = ZOO_KEYS[key]
        elif key in constructor:
            default = constructor[key].default
            if key in CONSTRUCTOR_TYPES:
                types = CONSTRUCTOR_TYPES[key]
            elif default is inspect.Parameter.empty or default is None:
                continue  # no default type to check against
            elif isinstance(default, bool):
                types = (bool,)
            elif isinstance(default, float):
                types = (int, float)
            else:
                types = (type(default),)
        elif accepts_any:
            continue
        else:
            others = [name for name, other in ALGOS.items() if key in inspect.signature(other.__init__).parameters]
            hint = f" (it is a hyperparameter of {', '.join(others)})" if others else did_you_mean(key, valid, separator="; ")
            raise ZooConfigError(f"{where}: unknown hyperparameter {key!r} for {algo}{hint}")

        # bool is an int to Python, but true/false for a count (or 0/1 for a switch) is a mistake
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            raise ZooConfigError(f"{where}: {key} must be {_type_names(types)}, got {value!r} ({type(value).__name__})")
        _check_value(key, value, where)

    if "policy" in constructor and constructor["policy"].default is inspect.Parameter.empty and "policy" not in hyperparams:
        raise ZooConfigError(f"{source}: missing hyperparameter 'policy' (e.g. policy: 'MlpPolicy')")


def _is_train_freq_pair(value: list | tuple) -> bool:
    return len(value) == 2 and isinstance(value[0], int) and value[1] in ("step", "episode")


def _check_value(key: str, value: Any, where: str) -> None:
    """The value checks rl_zoo3 itself would only fail on later, with a traceback."""
    if key in ("policy_kwargs", "replay_buffer_kwargs", "monitor_kwargs", "normalize") and isinstance(value, str):
        if not isinstance(_evaluate(key, value, where), dict):
            raise ZooConfigError(f'{where}: {key} must evaluate to a dict, e.g. "dict(net_arch=[400, 300])", got {value!r}')
    elif key == "learning_rate" and isinstance(value, str):
        schedule, _, initial = value.partition("_")
        try:
            float(initial)
        except ValueError:
            raise ZooConfigError(
                f"{where}: learning_rate must be a number or a schedule like 'lin_1e-3', got {value!r}"
            ) from None
        if schedule != "lin":
            raise ZooConfigError(f"{where}: learning_rate schedule must be 'lin_<initial value>', got {value!r}")
    elif key == "noise_type" and value is not None and not ("normal" in value or "ornstein-uhlenbeck" in value):
        raise ZooConfigError(f"{where}: noise_type must be 'normal', 'ornstein-uhlenbeck' or null, got {value!r}")
    elif key in ("n_timesteps", "n_envs") and value <= 0:
        raise ZooConfigError(f"{where}: {key} must be positive, got {value!r}")
    elif key == "train_freq" and isinstance(value, (list, tuple)) and not _is_train_freq_pair(value):
        raise ZooConfigError(f"{where}: train_freq must be an integer or [n, 'step' | 'episode'], got {value!r}")


def read_entry(
    algo: str, env_id: str, overrides: dict[str, Any] | None = None, conf_file: str | None = None
) -> dict[str, Any]:
    """
    Read the zoo entry for ``env_id`` with rl_zoo3's reader, without checking it.

    :raise ZooConfigError: for a missing or unreadable file, or a file with neither ``env_id`` nor ``default``
    """
    check_env_id(env_id)
    conf_file = conf_file or default_config_file(algo)
    if conf_file.endswith((".yml", ".yaml", ".py")) and not os.path.isfile(conf_file):
        raise ZooConfigError(f"config file {conf_file} not found")
    try:
        hyperparams = adapter.read_zoo_entry(algo, env_id, overrides, conf_file)
    except yaml.YAMLError as error:
        raise ZooConfigError(f"{conf_file}: not valid YAML ({error})".replace("\n", " ")) from None
    except ValueError as error:  # "Hyperparameters not found for ..."
        raise ZooConfigError(f"{conf_file}: no entry for {env_id} and no 'default' entry ({error})") from None
    except (OSError, ImportError, KeyError, AttributeError) as error:
        raise ZooConfigError(f"{conf_file}: could not read hyperparameters ({type(error).__name__}: {error})") from None
    if not isinstance(hyperparams, dict):
        raise ZooConfigError(f"{conf_file} [{entry_name(conf_file, env_id)}]: expected a mapping of hyperparameters")
    return dict(hyperparams)


def config_entries(algo: str, conf_file: str | None = None) -> dict[str, Any]:
    """
    The entries of a YAML zoo config (env id -> hyperparameters), read as rl_zoo3 reads the file.

    :param algo: the algorithm, for its default config
    :param conf_file: the YAML file (default: the config of ``algo``, e.g. ``zoo_configs/ablatable_td3.yml``)
    :raise ZooConfigError: a missing or unreadable file, or one that is not a mapping
    """
    return read_config_entries(conf_file or default_config_file(algo))


def zoo_budget(algo: str, env_id: str, entries: dict[str, Any] | None = None) -> int:
    """
    The training budget that ``algo``'s shipped config gives ``env_id``: the ``n_timesteps`` of its own entry (the
    ``default`` entry is a template for other envs, not a budget for this one).

    :param algo: ``ablatable_td3`` or ``ddpg_scratch`` (or another of :data:`ALGOS`)
    :param env_id: the env id
    :param entries: the config's entries (default: :func:`config_entries` of ``algo``)
    :raise ZooConfigError: ``env_id`` has no entry with ``n_timesteps`` there
    """
    entries = config_entries(algo) if entries is None else entries
    shown = f"zoo_configs/{algo}.yml" if algo in OWN_ALGOS else default_config_file(algo)
    return entry_budget(entries, env_id, shown)


def load_hyperparams(
    algo: str, env_id: str, overrides: dict[str, Any] | None = None, conf_file: str | None = None
) -> dict[str, Any]:
    """
    The zoo-format hyperparameters of ``algo`` on ``env_id``, checked.

    :param algo: ``ablatable_td3``, ``ddpg_scratch``, or SB3's ``td3`` / ``ddpg`` (then rl_zoo3's YAML is read)
    :param env_id: Gymnasium environment id; the file's ``default`` entry is used when it has no entry for it
    :param overrides: hyperparameters applied on top (already parsed Python values, e.g. ``{"clipped_double_q": False}``)
    :param conf_file: YAML (or Python) config to read instead of the default one for ``algo``
    :return: e.g. ``{"n_timesteps": 20000, "policy": "MlpPolicy", "noise_type": "normal", "noise_std": 0.1,
        "policy_kwargs": "dict(net_arch=[400, 300])", ...}``
    :raise ZooConfigError: unknown algorithm or environment, unreadable file, unknown key or value of the wrong type
    """
    check_algo(algo)
    if algo not in ALGOS:
        raise ZooConfigError(f"load_hyperparams supports {', '.join(ALGOS)}, not {algo!r}")
    conf_file = conf_file or default_config_file(algo)
    hyperparams = read_entry(algo, env_id, overrides, conf_file)
    check_hyperparams(algo, hyperparams, f"{conf_file} [{entry_name(conf_file, env_id)}]", override_keys=overrides or ())
    return hyperparams


def split_hyperparams(
    hyperparams: dict[str, Any], env: Any, env_id: str | None = None
) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """
    Turn a zoo entry into constructor arguments, the training budget and the environment settings, with rl_zoo3's
    own preprocessing (schedules, ``policy_kwargs`` strings, action noise objects, wrappers, callbacks).

    :param hyperparams: a zoo entry, e.g. from :func:`load_hyperparams` (not modified)
    :param env: the (vectorized) environment, or anything with its ``action_space`` (to size the action noise)
    :param env_id: the env's id (default: the id of ``env``'s spec, if it has one; the preprocessing does not read it)
    :return: ``(model_kwargs, n_timesteps, env_settings)``; ``model_kwargs`` include ``policy`` and go to the
        constructor with ``env``; ``env_settings`` has ``n_envs``, ``normalize``, ``normalize_kwargs``,
        ``env_wrapper`` and ``vec_env_wrapper`` (callables or None), ``frame_stack``, ``env_kwargs``,
        ``monitor_kwargs`` and ``callbacks`` (callback instances), with rl_zoo3's defaults filled in
    :raise ZooConfigError: when ``n_timesteps`` is missing
    """
    if "n_timesteps" not in hyperparams:
        raise ZooConfigError("missing hyperparameter 'n_timesteps'")
    env_id = env_id or env_id_of(env)
    registered = env_id if env_id is not None and env_id in gym.envs.registry else None
    model_kwargs, n_timesteps, settings = adapter.preprocess_hyperparams(
        drop_null_noise(copy.deepcopy(hyperparams)), env, registered
    )
    env_settings = copy.deepcopy(ENV_SETTING_DEFAULTS)
    env_settings.update(
        n_envs=settings["n_envs"],
        normalize=bool(settings["normalize"]),
        normalize_kwargs=settings["normalize_kwargs"],
        env_wrapper=settings["env_wrapper"],
        vec_env_wrapper=settings["vec_env_wrapper"],
        frame_stack=settings["frame_stack"],
        env_kwargs=settings["env_kwargs"] or {},
        monitor_kwargs=settings["monitor_kwargs"] or {},
        callbacks=settings["callbacks"],
    )
    return model_kwargs, n_timesteps, env_settings


def drop_null_noise(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """
    Accept ``noise_type: null`` as "no action noise": rl_zoo3 alone would pass ``noise_type`` (and ``noise_std``)
    on to the constructor. This is also how a tuned "no noise" trial comes back from the study.

    :param hyperparams: hyperparameters, modified in place
    :return: ``hyperparams``
    """
    if "noise_type" in hyperparams and hyperparams["noise_type"] is None:
        del hyperparams["noise_type"]
        hyperparams.pop("noise_std", None)
    return hyperparams
