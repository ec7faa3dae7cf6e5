"""Where a study keeps its results: run records, final models and in-run checkpoints (all written atomically).

Layout of a study folder::

    <out>/study.json                                  the manifest (settings the folder is tied to)
    <out>/runs/<env>/<variant>/seed_<k>.json          the run record (:mod:`~sb3_ablation.study.records`)
    <out>/runs/<env>/<variant>/seed_<k>.zip           its final model (``AblatableTD3.load``)
    <out>/runs/<env>/<variant>/seed_<k>_vecnormalize.pkl   its VecNormalize statistics, when it normalizes
    <out>/runs/<env>/<variant>/seed_<k>.checkpoint/   checkpoints of a run in progress (removed when it is done)
    <out>/runs/<env>/<variant>/seeds_<k>_<l>.checkpoint/   the same for a batched group of seeds k, l, ...
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import platform
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import atomic_path, read_json, write_json_atomic
from sb3_ablation.study.config import StudyConfig, StudyError, to_jsonable
from sb3_ablation.study.records import RUN_FILE_FORMAT, SAME_EVALUATIONS, RunRecord, trained_by

MANIFEST_NAME = "study.json"
MANIFEST_FORMAT = 1


def safe_name(text: str) -> str:
    """A file-system-safe version of an env id or variant name (``module:Env-v0`` -> ``module_Env-v0``)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def env_folder(out: str | os.PathLike, env_id: str) -> Path:
    """The runs of one env: ``<out>/runs/<env>``."""
    return Path(out) / "runs" / safe_name(env_id)


def run_path(out: str | os.PathLike, env_id: str, variant: str, seed: int) -> Path:
    """The record of one run: ``<out>/runs/<env>/<variant>/seed_<seed>.json``."""
    return env_folder(out, env_id) / safe_name(variant) / f"seed_{seed}.json"


def model_path(record_path: str | os.PathLike) -> Path:
    """The final model next to a run record (``seed_<k>.zip``)."""
    return Path(record_path).with_suffix(".zip")


def vecnormalize_path(record_path: str | os.PathLike) -> Path:
    """The final VecNormalize statistics next to a run record (``seed_<k>_vecnormalize.pkl``)."""
    path = Path(record_path)
    return path.with_name(f"{path.stem}_vecnormalize.pkl")


def read_run(path: str | os.PathLike) -> dict | None:
    """A run file's record, or ``None`` when it is missing or unreadable (then the run is redone)."""
    record = read_json(path)
    return record if isinstance(record, dict) else None


def write_run(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Write a run record atomically (non-finite floats become null: JSON has no NaN)."""
    write_json_atomic(path, finite_or_none(record))


def iter_runs(out: str | os.PathLike) -> Iterable[dict]:
    """Every run record under ``<out>/runs``."""
    for path in sorted((Path(out) / "runs").glob("*/*/seed_*.json")):
        record = read_run(path)
        if record is not None:
            yield record


def unreadable_runs(out: str | os.PathLike, envs: Iterable[str], variants: Iterable[str]) -> list[dict]:
    """
    The run files under ``<out>/runs`` that exist but cannot be read (corrupt or truncated): rerunning the study
    redoes those runs.

    :return: for each, a failed-run entry (``env``, ``variant``, ``seed``, ``status: "unreadable"``, ``error``)
    """
    env_names, variant_names = {safe_name(e): e for e in envs}, {safe_name(v): v for v in variants}
    entries = []
    for path in sorted((Path(out) / "runs").glob("*/*/seed_*.json")):
        if read_run(path) is None:
            env, variant = path.parent.parent.name, path.parent.name
            entries.append({
                "env": env_names.get(env, env),
                "variant": variant_names.get(variant, variant),
                "seed": int(path.stem.removeprefix("seed_")) if path.stem.removeprefix("seed_").isdigit() else -1,
                "status": "unreadable",
                "error": f"unreadable run record {path} (corrupt or truncated); rerunning the study redoes the run",
            })  # fmt: skip
    return entries


def finite_or_none(value: Any) -> Any:
    """JSON has no NaN: store non-finite floats as null (read back as NaN by the report)."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    return value


class RunCheckpoints:
    """
    The checkpoints of one run: ``<record>.checkpoint/step_<n>/`` holds ``model.zip``, ``replay_buffer.pkl``,
    ``<env>/vecnormalize.pkl`` (the names rl_zoo3's ``--trained-agent`` continuation reads) and ``state.pkl`` (RNG
    states, action noise, the training envs' episodes and the run's evaluation history). A step folder is written
    under a temporary name and renamed when complete; ``latest.json`` then points at it and older folders are
    removed. A run killed at any moment leaves either the previous checkpoint or the new one.

    :param record_path: the run's record file
    """

    def __init__(self, record_path: str | os.PathLike):
        self.folder = Path(record_path).with_suffix(".checkpoint")
        self.pointer = self.folder / "latest.json"

    def latest(self) -> Path | None:
        """The newest complete checkpoint folder, or ``None``."""
        pointer = read_json(self.pointer)
        if not isinstance(pointer, dict) or "folder" not in pointer:
            return None
        folder = self.folder / str(pointer["folder"])
        return folder if (folder / "state.pkl").is_file() and (folder / "model.zip").is_file() else None

    def save(self, model: Any, env_name: str, state: dict[str, Any], timesteps: int | None = None) -> Path:
        """
        Save a checkpoint of ``model`` (with its replay buffer and VecNormalize statistics) and ``state``.

        :param model: the algorithm
        :param env_name: rl_zoo3's env name (the folder its continuation reads ``vecnormalize.pkl`` from)
        :param state: picklable state of the run (RNG states, callbacks)
        :param timesteps: the run's steps (default ``model.num_timesteps``; a batched group's: per agent)
        :return: the checkpoint folder
        """
        timesteps = int(model.num_timesteps if timesteps is None else timesteps)
        name = f"step_{timesteps}"
        tmp = self.folder / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        model.save(tmp / "model.zip")
        model.save_replay_buffer(tmp / "replay_buffer.pkl")
        vec_normalize = model.get_vec_normalize_env()
        if vec_normalize is not None:
            (tmp / env_name).mkdir()
            vec_normalize.save(tmp / env_name / "vecnormalize.pkl")
        with open(tmp / "state.pkl", "wb") as file:
            pickle.dump(state, file)
        final = self.folder / name
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        write_json_atomic(self.pointer, {"folder": name, "timesteps": timesteps, "pid": os.getpid()})
        for old in self.folder.iterdir():
            if old.is_dir() and old != final:
                shutil.rmtree(old, ignore_errors=True)
        return final

    @staticmethod
    def read_state(folder: Path) -> dict[str, Any]:
        with open(folder / "state.pkl", "rb") as file:
            return pickle.load(file)

    def remove(self) -> None:
        """Remove every checkpoint of the run (done once it has finished)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def save_final_model(model: Any, record: RunRecord, record_path: str | os.PathLike) -> None:
    """
    Save the final model (and VecNormalize statistics) next to the run record, atomically, and name their files in
    ``record`` (``model``, ``vecnormalize``: relative to the record's folder).
    """
    with atomic_path(model_path(record_path)) as tmp:
        model.save(tmp)
    record.model = model_path(record_path).name
    vec_normalize = model.get_vec_normalize_env()
    if vec_normalize is not None:
        with atomic_path(vecnormalize_path(record_path)) as tmp:
            vec_normalize.save(tmp)
        record.vecnormalize = vecnormalize_path(record_path).name


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        diffs = []
        for key in sorted(set(old) | set(new)):
            diffs += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return diffs
    return [] if old == new else [f"{prefix.rstrip('.')} ({json.dumps(old)} there, {json.dumps(new)} now)"]


def _restrict_env_hyperparams(settings: dict, envs: set[str]) -> dict:
    return {
        **settings,
        "env_hyperparams": {env: hp for env, hp in (settings.get("env_hyperparams") or {}).items() if env in envs},
    }


def open_manifest(config: StudyConfig, resolved_hyperparams: dict[str, dict[str, dict]], versions: dict[str, str]) -> dict:
    """
    Create the study manifest, or check an existing one and extend its lists of envs, variants and seeds.

    :param config: this invocation's settings
    :param resolved_hyperparams: ``{env_id: {algo: zoo hyperparameters}}`` as each run will use them
    :param versions: library versions
    :return: the manifest as written
    :raises StudyError: the folder holds a study made with different run settings
    """
    path = Path(config.out) / MANIFEST_NAME
    # the record format too: runs of another format were evaluated on other episodes and cannot be pooled
    settings = {**config.run_settings(), "run_format": RUN_FILE_FORMAT}
    pinned = {"settings": settings, "hyperparams": to_jsonable(resolved_hyperparams)}
    manifest = None
    if path.exists():
        try:
            with open(path) as file:
                manifest = json.load(file)
        except json.JSONDecodeError as error:
            raise StudyError(f"{path} is not a study manifest ({error}); use another --out") from None
        # the engine is a seed's, not the folder's (check_seed_engines); manifests of an earlier version pinned it
        manifest["settings"] = {key: value for key, value in manifest.get("settings", {}).items() if key != "engine"}
        old_pinned = {"settings": manifest["settings"], "hyperparams": manifest.get("hyperparams", {})}
        if old_pinned["settings"].get("run_format") in SAME_EVALUATIONS:
            # e.g. a committed format-2 study takes new seeds of format 3; its manifest keeps the format it was made with
            old_pinned["settings"] = {**old_pinned["settings"], "run_format": RUN_FILE_FORMAT}
        # per-env settings of envs present in both can conflict; the others belong to one side only
        shared_envs = set(manifest.get("envs", [])) & set(config.envs)
        old_pinned["settings"] = _restrict_env_hyperparams(old_pinned["settings"], shared_envs)
        pinned_now = {**pinned, "settings": _restrict_env_hyperparams(pinned["settings"], shared_envs)}
        # only hyperparameters of envs present in both can conflict; new envs just extend the study
        old_pinned["hyperparams"] = {
            env: old_pinned["hyperparams"][env] for env in old_pinned["hyperparams"] if env in pinned["hyperparams"]
        }
        new_pinned = {
            "settings": pinned_now["settings"],
            "hyperparams": {env: hp for env, hp in pinned["hyperparams"].items() if env in old_pinned["hyperparams"]},
        }
        # algorithms only one side uses (e.g. a reference row added now) cannot conflict either
        for env in new_pinned["hyperparams"]:
            common = set(new_pinned["hyperparams"][env]) & set(old_pinned["hyperparams"][env])
            new_pinned["hyperparams"][env] = {algo: new_pinned["hyperparams"][env][algo] for algo in common}
            old_pinned["hyperparams"][env] = {algo: old_pinned["hyperparams"][env][algo] for algo in common}
        # the settings as given explain a mismatch best; the resolved hyperparameters catch an edited zoo config
        diffs = _differences(old_pinned["settings"], new_pinned["settings"]) or _differences(
            old_pinned["hyperparams"], new_pinned["hyperparams"], "zoo hyperparameters of "
        )
        if diffs:
            raise StudyError(
                f"{config.out} holds a study made with different settings: {'; '.join(diffs)}. "
                "Use another --out, or the same settings to resume it"
            )
    created = manifest is None
    manifest = manifest or {"format": MANIFEST_FORMAT, "settings": pinned["settings"], "hyperparams": {}}
    manifest["settings"].setdefault("env_hyperparams", {}).update(pinned["settings"].get("env_hyperparams") or {})
    for env, by_algo in pinned["hyperparams"].items():
        manifest["hyperparams"].setdefault(env, {}).update(by_algo)
    # the runs planned: each invocation's grid; a manifest of an earlier version planned its lists' whole product
    grids = manifest.get("grids") or ([] if created else [_whole_grid(manifest)])
    grid: dict[str, list] = {"envs": list(config.envs), "variants": list(config.variants), "seeds": sorted(config.seeds)}
    manifest["grids"] = grids if set(_grid_runs([grid])) <= set(_grid_runs(grids)) else [*grids, grid]
    for key in ("envs", "variants", "seeds"):
        manifest[key] = list(dict.fromkeys([*manifest.get(key, []), *grid[key]]))
    manifest["seeds"] = sorted(manifest["seeds"])
    manifest["versions"] = versions
    manifest["config"] = to_jsonable({k: v for k, v in asdict(config).items() if k not in ("progress",)})
    if created:
        # the plan is declared with the study: a later one is the report's to compare with it (config.analysis), and
        # a study made before plans existed keeps declaring none when it takes more runs
        manifest["analysis"] = to_jsonable(config.analysis)
    write_json_atomic(path, manifest)
    return manifest


def _whole_grid(manifest: dict) -> dict[str, list]:
    return {key: list(manifest.get(key, [])) for key in ("envs", "variants", "seeds")}


def planned_runs(manifest: dict) -> list[tuple[str, str, int]]:
    """
    The ``(env, variant, seed)`` of every run a study plans: the union of its invocations' grids (envs x variants x
    seeds), so that more seeds of a few variants (``--variants td3,no_clipped_double_q --seeds 10 11 ... 19``) do not plan
    them for every variant; a manifest without grids (an earlier version's) plans its lists' whole product.
    """
    return _grid_runs(manifest.get("grids") or [_whole_grid(manifest)])


def _grid_runs(grids: list[dict[str, list]]) -> list[tuple[str, str, int]]:
    runs = (
        (env, variant, int(seed))
        for grid in grids
        for env in grid["envs"]
        for variant in grid["variants"]
        for seed in grid["seeds"]
    )
    return list(dict.fromkeys(runs))


def check_seed_engines(out: str | os.PathLike, tasks: Iterable[tuple[str, int]], engine: str) -> None:
    """
    Refuse to train a seed of an env with another engine than its finished runs: the analysis compares a seed's
    runs with each other (paired differences, the seed as a block), so each comparison stays within one engine. Other
    seeds may come from another engine (the report names which engine trained which runs).

    :param out: the study folder
    :param tasks: the ``(env, seed)`` of the runs to train
    :param engine: the engine that would train them
    :raises StudyError: a finished run of one of these seeds was trained by another engine
    """
    for env, seed in dict.fromkeys(tasks):
        for path in sorted(env_folder(out, env).glob(f"*/seed_{seed}.json")):
            record = read_run(path)
            if record is not None and record.get("status") == "ok" and trained_by(record) != engine:
                other = trained_by(record)
                raise StudyError(
                    f"{env} seed {seed} has runs of the {other} engine ({path}), and a seed's runs are compared "
                    f"with each other: train it with --engine {other}, or use other seeds for --engine {engine}"
                )


def read_manifest(out: str | os.PathLike) -> dict:
    """Read ``<out>/study.json``, with a one-line error when the folder is not a study."""
    path = Path(out) / MANIFEST_NAME
    if not path.is_file():
        raise StudyError(f"{out} is not a study folder (no {MANIFEST_NAME}); run `sb3-ablation study --out {out}` first")
    try:
        with open(path) as file:
            manifest = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StudyError(f"{path} is not a readable study manifest ({error})") from None
    if not isinstance(manifest, dict) or not all(key in manifest for key in ("envs", "variants", "seeds")):
        raise StudyError(f"{path} is not a study manifest (no envs, variants and seeds)")
    return manifest


LOCK_NAME = ".study.lock"


@contextlib.contextmanager
def study_lock(out: str | os.PathLike) -> Iterator[None]:
    """
    Hold ``<out>/.study.lock`` while a study writes into ``out``: a second study on the same folder fails at once
    with one line. The lock is the kernel's (``flock``): it goes with the process, so a killed study leaves none.

    :raise StudyLockedError: another study holds the folder
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a+") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "another process"
            raise StudyLockedError(
                f"another study ({holder}) is writing into {out}; wait for it to finish or use another --out"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(f"pid {os.getpid()} on {platform.node()}")
        file.flush()
        try:
            yield
        finally:
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)


class StudyLockedError(StudyError):
    """Another study is writing into the same output folder."""
