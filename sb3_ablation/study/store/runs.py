"""Run records on disk: paths, atomic reads and writes, and listing a study folder's runs.

Layout of a study folder::

    <out>/study.json                                  the manifest (:mod:`~sb3_ablation.study.store.manifest`)
    <out>/runs/<env>/<variant>/seed_<k>.json          the run record (:mod:`~sb3_ablation.study.plan.records`)
    <out>/runs/<env>/<variant>/seed_<k>.zip           its final model, when the study keeps models
    <out>/runs/<env>/<variant>/seed_<k>_vecnormalize.pkl   its VecNormalize statistics, when it normalizes
    <out>/runs/<env>/<variant>/seed_<k>.checkpoint/   checkpoints of a run in progress (removed when it is done)
    <out>/runs/<env>/<variant>/seeds_<k>_<l>.checkpoint/   the same for a batched group of seeds k, l, ...
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import read_json, write_json_atomic


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
