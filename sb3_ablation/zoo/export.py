"""Export the best trial of an Optuna study as a zoo-format YAML entry that ``train`` (and the ablation study) accept.

Usage::

    python -m sb3_ablation.zoo.export --algo ddpg_scratch --env LunarLanderContinuous-v3 \\
        --storage sqlite:///tune.db --study-name lunar -o tuned.yml
    python -m sb3_ablation train --algo ddpg_scratch --env LunarLanderContinuous-v3 --conf-file tuned.yml

The entry is the configuration the study was tuned from (saved in the study by ``train -optimize``) with the best
trial's parameters on top. Writing it replaces only that environment's entry of an existing file, atomically.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import optuna
import optuna.storages.journal
import yaml
from torch import nn

from sb3_ablation.common.io import write_text_atomic
from sb3_ablation.zoo.adapter import OneLineArgumentParser, convert_trial_params, evaluate_config_value
from sb3_ablation.zoo.hyperparams import (
    ZooConfigError,
    check_algo,
    check_env_id,
    check_hyperparams,
    load_hyperparams,
)
from sb3_ablation.zoo.registry import register

#: Study user attribute holding the zoo entry a study was tuned from (written by ``train -optimize``).
ZOO_ENTRY_ATTR = "sb3_ablation:zoo_entry"
#: Trial user attributes of a multi-seed trial (:mod:`sb3_ablation.zoo.trials`): its seeds and their aggregate.
TRIAL_SEEDS_ATTR = "trial_seeds"
AGGREGATE_ATTR = "trial_aggregate"
#: Keys whose zoo form is a Python expression string evaluated by rl_zoo3.
EXPRESSION_KEYS = ("policy_kwargs", "replay_buffer_kwargs")


def optuna_storage(storage: str, create: bool = True) -> str | optuna.storages.BaseStorage:
    """
    :param storage: an Optuna RDB URL (``sqlite:///tune.db``, ``postgresql://...``) or a journal file ending in
        ``.log`` (shared by several processes or machines through the file system), as rl_zoo3 accepts them
    :param create: create the folder of a SQLite or journal file; otherwise the file must exist already
    :return: what ``optuna.create_study`` / ``optuna.load_study`` take
    :raise ZooConfigError: when ``create`` is false and the SQLite or journal file does not exist
    """
    path = (
        storage
        if storage.endswith(".log")
        else storage.removeprefix("sqlite:///")
        if storage.startswith("sqlite:///")
        else None
    )
    if path is not None:
        if create:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        elif not Path(path).is_file():
            raise ZooConfigError(f"Optuna storage {storage}: file {path} not found")
    if storage.endswith(".log"):
        return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(storage))
    return storage


def _expression(value: Any) -> str:
    """Write a value back as the Python expression rl_zoo3 evaluates (``nn.ReLU`` for torch modules)."""
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{key}={_expression(item)}" for key, item in value.items()) + ")"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_expression(item) for item in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, type):
        name = value.__name__
        if getattr(nn, name, None) is value:
            return f"nn.{name}"
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def to_zoo_entry(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """
    :param hyperparams: zoo hyperparameters, possibly with Python objects (``policy_kwargs`` as a dict, tuples)
    :return: the same entry in plain YAML types (expressions as strings, tuples as lists), as the YAML files hold it
    """
    entry: dict[str, Any] = {}
    for key, value in hyperparams.items():
        if key in EXPRESSION_KEYS and isinstance(value, dict):
            value = _expression(value)
        elif isinstance(value, tuple):
            value = list(value)
        entry[key] = value
    return entry


def _merge_policy_kwargs(base: Any, tuned: Any) -> Any:
    """The tuned network size on top of the config's other policy arguments (activation function, ...)."""
    if tuned is None:
        return base
    base = evaluate_config_value(base) if isinstance(base, str) else dict(base or {})
    return {**base, **tuned}


def best_trial_entry(
    storage: str, study_name: str, algo: str, env_id: str, conf_file: str | None = None
) -> tuple[dict[str, Any], optuna.trial.FrozenTrial]:
    """
    :param storage: the study's storage (RDB URL or ``.log`` journal file)
    :param study_name: the study's name
    :param algo: the algorithm it tuned (``ablatable_td3``, ``ddpg_scratch``, ``td3``, ``ddpg``)
    :param env_id: the environment it tuned on
    :param conf_file: config to take the untuned hyperparameters from when the study does not hold them
    :return: the zoo entry of the best trial (plain YAML types, checked) and the trial
    :raise ZooConfigError: no such study, no completed trial, or an entry the algorithm does not accept
    """
    check_algo(algo)
    check_env_id(env_id)
    register()  # our converters
    optuna_store = optuna_storage(storage, create=False)
    try:
        study = optuna.load_study(study_name=study_name, storage=optuna_store)
    except KeyError:
        names = optuna.get_all_study_names(optuna_store)
        raise ZooConfigError(f"no study {study_name!r} in {storage} (studies: {', '.join(names) or 'none'})") from None
    try:
        trial = study.best_trial
    except ValueError:
        raise ZooConfigError(f"study {study_name!r} in {storage} has no completed trial yet") from None

    base = study.user_attrs.get(ZOO_ENTRY_ATTR)
    if base is None or conf_file is not None:
        base = load_hyperparams(algo, env_id, conf_file=conf_file)
    tuned = convert_trial_params(algo, trial.params)
    entry = dict(base)
    if tuned.get("noise_type", "") is None:
        # "no action noise" is the absence of both keys in rl-zoo's format
        entry.pop("noise_type", None)
        entry.pop("noise_std", None)
        tuned.pop("noise_type")
        tuned.pop("noise_std", None)
    tuned.pop("action_noise", None)  # a noise object is never a trial parameter, only noise_type/noise_std are
    if "policy_kwargs" in tuned:
        tuned["policy_kwargs"] = _merge_policy_kwargs(entry.get("policy_kwargs"), tuned["policy_kwargs"])
    entry.update(tuned)
    entry = to_zoo_entry(entry)
    check_hyperparams(algo, entry, f"best trial {trial.number} of study {study_name!r}")
    return dict(sorted(entry.items())), trial


def write_entry(path: str | os.PathLike, env_id: str, entry: dict[str, Any], comment: str = "") -> None:
    """
    Write ``entry`` as the ``env_id`` entry of the zoo YAML file ``path`` (other entries of an existing file are
    kept), atomically: a temporary file in the same folder replaces the old one only once fully written.

    :param path: the YAML file
    :param env_id: the entry's name
    :param entry: zoo hyperparameters in plain YAML types
    :param comment: one line written as a YAML comment at the top
    :raise ZooConfigError: when an existing file is not a zoo YAML file
    """
    path = Path(path)
    entries: dict[str, Any] = {}
    if path.exists():
        try:
            entries = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as error:
            raise ZooConfigError(f"{path}: not valid YAML, not overwriting it ({error})".replace("\n", " ")) from None
        if not isinstance(entries, dict):
            raise ZooConfigError(f"{path}: not a zoo config (a mapping of environment ids), not overwriting it")
    entries[env_id] = entry
    text = (f"# {comment}\n" if comment else "") + yaml.safe_dump(entries, sort_keys=False, default_flow_style=False)
    write_text_atomic(path, text)


def export_best(
    storage: str, study_name: str, algo: str, env_id: str, output: str | os.PathLike, conf_file: str | None = None
) -> optuna.trial.FrozenTrial:
    """
    Write the best trial of a study as the ``env_id`` entry of the zoo YAML file ``output``.

    :return: the exported trial
    :raise ZooConfigError: see :func:`best_trial_entry` and :func:`write_entry`
    """
    entry, trial = best_trial_entry(storage, study_name, algo, env_id, conf_file)
    value = "mean reward"
    seeds = trial.user_attrs.get(TRIAL_SEEDS_ATTR)
    if seeds:  # a multi-seed trial (train -optimize --trial-seeds)
        value = f"{trial.user_attrs.get(AGGREGATE_ATTR, 'mean')} over seeds {seeds} of the mean reward"
    comment = f"best trial {trial.number} of Optuna study {study_name!r} ({storage}): {value} {trial.value:.4g}"
    write_entry(output, env_id, entry, comment)
    return trial


def main(argv: list[str] | None = None) -> int:
    """``python -m sb3_ablation.zoo.export``: see the module docstring."""
    parser = OneLineArgumentParser(
        prog="sb3-ablation export", description="Write the best trial of an Optuna study as a zoo-format YAML entry."
    )
    parser.add_argument("--algo", required=True, help="algorithm the study tuned, e.g. ablatable_td3")
    parser.add_argument("--env", required=True, help="environment id the study tuned on")
    parser.add_argument("--storage", required=True, help="Optuna storage: RDB URL (sqlite:///tune.db) or journal file (.log)")
    parser.add_argument("--study-name", required=True, help="name of the study")
    parser.add_argument("-o", "--output", required=True, help="zoo YAML file to write (its other entries are kept)")
    parser.add_argument("-conf", "--conf-file", help="take the untuned hyperparameters from this config, not from the study")
    args = parser.parse_args(argv)
    try:
        trial = export_best(args.storage, args.study_name, args.algo, args.env, args.output, args.conf_file)
    except ZooConfigError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    print(f"Wrote trial {trial.number} (value {trial.value:.4g}) as the {args.env} entry of {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
