"""Run records on disk: paths, atomic reads and writes, and listing a study folder's runs.

Layout of a study folder::

    <out>/study.json                                  the manifest (:mod:`~sb3_ablation.study.store.manifest`)
    <out>/runs/<env>/<variant>/seed_<k>.json.gz       the run record (:mod:`~sb3_ablation.study.plan.records`),
                                                      gzip-compressed JSON (``zcat`` or :func:`read_run` reads it)
    <out>/runs/<env>/<variant>/seed_<k>.zip           its final model, when the study keeps models
    <out>/runs/<env>/<variant>/seed_<k>_vecnormalize.pkl   its VecNormalize statistics, when it normalizes
    <out>/runs/<env>/<variant>/seed_<k>.checkpoint/   checkpoints of a run in progress (removed when it is done)
    <out>/runs/<env>/<variant>/seeds_<k>_<l>.checkpoint/   the same for a batched group of seeds k, l, ...
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import atomic_path
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT


def safe_name(text: str) -> str:
    """A file-system-safe version of an env id or variant name (``module:Env-v0`` -> ``module_Env-v0``)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def env_folder(out: str | os.PathLike[str], env_id: str) -> Path:
    """The runs of one env: ``<out>/runs/<env>``."""
    return Path(out) / "runs" / safe_name(env_id)


#: the file name of a run record after ``seed_<k>``
RECORD_SUFFIX = ".json.gz"
#: where a study folder's run records are, as said to a person
RECORD_PATTERN = f"runs/<env>/<variant>/seed_<k>{RECORD_SUFFIX}"


def run_path(out: str | os.PathLike[str], env_id: str, variant: str, seed: int) -> Path:
    """The record of one run: ``<out>/runs/<env>/<variant>/seed_<seed>.json.gz``."""
    return env_folder(out, env_id) / safe_name(variant) / f"seed_{seed}{RECORD_SUFFIX}"


def run_stem(record_path: str | os.PathLike[str]) -> Path:
    """The record's path without its suffix (``.../seed_<k>``), which its model and checkpoints are named after."""
    path = Path(record_path)
    return path.with_name(path.name.removesuffix(RECORD_SUFFIX))


def model_path(record_path: str | os.PathLike[str]) -> Path:
    """The final model next to a run record (``seed_<k>.zip``)."""
    return run_stem(record_path).with_suffix(".zip")


def vecnormalize_path(record_path: str | os.PathLike[str]) -> Path:
    """The final VecNormalize statistics next to a run record (``seed_<k>_vecnormalize.pkl``)."""
    stem = run_stem(record_path)
    return stem.with_name(f"{stem.name}_vecnormalize.pkl")


def read_run(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """
    A run file's record, or ``None`` when it is missing, unreadable or of another record format than
    :data:`~sb3_ablation.study.plan.records.RUN_FILE_FORMAT` (then the run is redone).
    """
    record = _load(path)
    return record if isinstance(record, dict) else None


def _load(path: str | os.PathLike[str]) -> dict[str, Any] | str:
    """The record, or why it cannot be read."""
    try:
        with gzip.open(path, "rt") as file:
            record = json.load(file)
    except (OSError, EOFError, ValueError):
        return "corrupt or truncated"
    if not isinstance(record, dict):
        return "not a run record"
    if record.get("format") != RUN_FILE_FORMAT:
        return (
            f"record format {record.get('format')!r}, not {RUN_FILE_FORMAT}: tools/migrate_studies.py of the repository's "
            "history converts it (git show e02371f:tools/migrate_studies.py)"
        )
    return record


def write_run(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Write a run record atomically, gzip-compressed (non-finite floats become null: JSON has no NaN)."""
    data = json.dumps(finite_or_none(record), separators=(",", ":"), default=repr).encode()
    with atomic_path(path) as tmp:
        tmp.write_bytes(gzip.compress(data, mtime=0))  # mtime 0: the same record gives the same bytes


def record_paths(out: str | os.PathLike[str]) -> list[Path]:
    """The path of every run record under ``<out>/runs``, sorted (readable or not)."""
    return sorted((Path(out) / "runs").glob(f"*/*/seed_*{RECORD_SUFFIX}"))


def iter_runs(out: str | os.PathLike[str]) -> Iterable[dict[str, Any]]:
    """Every readable run record under ``<out>/runs``."""
    for path in record_paths(out):
        record = read_run(path)
        if record is not None:
            yield record


def unreadable_runs(out: str | os.PathLike[str], envs: Iterable[str], variants: Iterable[str]) -> list[dict[str, Any]]:
    """
    The run files under ``<out>/runs`` that exist but cannot be read (corrupt or truncated, or of another record
    format): rerunning the study redoes those runs.

    :return: for each, a failed-run entry (``env``, ``variant``, ``seed``, ``status: "unreadable"``, ``error``)
    """
    env_names, variant_names = {safe_name(e): e for e in envs}, {safe_name(v): v for v in variants}
    entries = []
    for path in record_paths(out):
        if isinstance(why := _load(path), str):
            env, variant = path.parent.parent.name, path.parent.name
            entries.append({
                "env": env_names.get(env, env),
                "variant": variant_names.get(variant, variant),
                "seed": int(seed) if (seed := run_stem(path).name.removeprefix("seed_")).isdigit() else -1,
                "status": "unreadable",
                "error": f"unreadable run record {path} ({why}); rerunning the study redoes the run",
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
