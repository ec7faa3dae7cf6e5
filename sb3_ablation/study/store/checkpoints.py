"""In-run checkpoints (a killed run resumes from its last one) and final models."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

from sb3_ablation.common.io import atomic_path, read_json, write_json_atomic
from sb3_ablation.study.plan.records import RunRecord
from sb3_ablation.study.store.runs import model_path, run_stem, vecnormalize_path


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
        self.folder = run_stem(record_path).with_suffix(".checkpoint")
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
