"""In-run checkpoints (a killed run resumes from its last one) and final models."""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.io import atomic_path, read_json, write_json_atomic
from sb3_ablation.study.plan.records import RunRecord
from sb3_ablation.study.store.runs import model_path, run_stem, vecnormalize_path

#: a checkpoint's files: the model as SB3 saves it (rl_zoo3's ``--trained-agent`` continuation loads it), the filled
#: part of its replay buffer (:func:`save_replay_buffer`) and the run's state
MODEL_FILE, REPLAY_BUFFER_FILE, STATE_FILE = "model.zip", "replay_buffer.pkl.gz", "state.pkl"
#: gzip level of the replay buffer: its floats hardly compress, its flags (dones, timeouts) do, at any level
REPLAY_BUFFER_COMPRESSION = 1
#: a replay buffer's attributes that are not saved: the spaces and device come with the buffer it is restored into,
#: an env (HerReplayBuffer's) is not picklable
NOT_SAVED = ("observation_space", "action_space", "device", "env")
#: the attributes a restore sets (besides the storage): the write position
POSITION = ("pos", "full")


class RunCheckpoints:
    """
    The checkpoints of one run: ``<record>.checkpoint/step_<n>/`` holds ``model.zip`` and ``<env>/vecnormalize.pkl``
    (the names rl_zoo3's ``--trained-agent`` continuation reads), ``replay_buffer.pkl.gz`` (the filled part of the
    replay buffer, restored by :meth:`restore_replay_buffer` into the fresh model's) and ``state.pkl`` (RNG states,
    action noise, the training envs' episodes and the run's evaluation history). A step folder is written under a
    temporary name and renamed when complete; ``latest.json`` then points at it and older folders are removed. A run
    killed at any moment leaves either the previous checkpoint or the new one.

    :param record_path: the run's record file
    """

    def __init__(self, record_path: str | os.PathLike[str]):
        self.folder = run_stem(record_path).with_suffix(".checkpoint")
        self.pointer = self.folder / "latest.json"

    def latest(self) -> Path | None:
        """The newest complete checkpoint folder, or ``None``."""
        pointer = read_json(self.pointer)
        if not isinstance(pointer, dict) or "folder" not in pointer:
            return None
        folder = self.folder / str(pointer["folder"])
        return folder if (folder / STATE_FILE).is_file() and (folder / MODEL_FILE).is_file() else None

    def save(self, model: Any, env_name: str, state: dict[str, Any], timesteps: int | None = None) -> Path:
        """
        Save a checkpoint of ``model`` (with the filled part of its replay buffer and its VecNormalize statistics) and
        ``state``.

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
        model.save(tmp / MODEL_FILE)
        save_replay_buffer(model.replay_buffer, tmp / REPLAY_BUFFER_FILE)
        vec_normalize = model.get_vec_normalize_env()
        if vec_normalize is not None:
            (tmp / env_name).mkdir()
            vec_normalize.save(tmp / env_name / "vecnormalize.pkl")
        with open(tmp / STATE_FILE, "wb") as file:
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
        with open(folder / STATE_FILE, "rb") as file:
            state: dict[str, Any] = pickle.load(file)
        return state

    @staticmethod
    def restore_replay_buffer(folder: Path, model: Any) -> None:
        """Put the checkpoint's replay buffer into ``model``'s, freshly built (:func:`restore_replay_buffer`)."""
        restore_replay_buffer(model.replay_buffer, folder / REPLAY_BUFFER_FILE)

    def remove(self) -> None:
        """Remove every checkpoint of the run (done once it has finished)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _is_storage(value: Any, buffer_size: int) -> bool:
    """A buffer's storage: an array with one row per buffer position, or a dict of them (dict observations)."""
    if isinstance(value, dict):
        return bool(value) and all(_is_storage(item, buffer_size) for item in value.values())
    return isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == buffer_size


def _rows(value: Any, rows: int) -> Any:
    return {key: item[:rows] for key, item in value.items()} if isinstance(value, dict) else value[:rows]


def filled_rows(buffer: Any) -> int:
    """
    The rows of a replay buffer that hold data: all once it is full, else those before its write position and the
    one at it (where the memory-efficient buffer keeps the last next observation; zeros otherwise).
    """
    return int(buffer.buffer_size if buffer.full else min(buffer.pos + 1, buffer.buffer_size))


def _pickled_state(buffer: Any) -> dict[str, Any]:
    """
    The attributes that pickling ``buffer`` saves: its ``__getstate__``'s where it defines one (a buffer's copy of its
    storage on a device, e.g. ``DeviceAgentReplayBuffer``'s, is not saved: it is rebuilt from the storage), else all.
    """
    getstate = getattr(type(buffer), "__getstate__", None)
    if getstate is None or getstate is getattr(object, "__getstate__", None):
        return dict(vars(buffer))
    return dict(getstate(buffer))


def save_replay_buffer(buffer: Any, path: str | os.PathLike[str]) -> None:
    """
    Save an SB3 replay buffer's filled rows (:func:`filled_rows`) and its other attributes, pickled and gzip-compressed:
    a buffer preallocated for a million transitions and holding a few thousand is saved as a few thousand.

    :param buffer: SB3's ``ReplayBuffer`` or a subclass (its storage: arrays with one row per position, or dicts of them)
    :param path: the file
    """
    rows = filled_rows(buffer)
    storage, attributes = {}, {}
    for name, value in _pickled_state(buffer).items():
        if name in NOT_SAVED:
            continue
        if _is_storage(value, buffer.buffer_size):
            storage[name] = _rows(value, rows)  # views: pickling writes their rows only
        else:
            attributes[name] = value
    with gzip.open(path, "wb", compresslevel=REPLAY_BUFFER_COMPRESSION) as file:
        pickle.dump({"rows": rows, "storage": storage, "attributes": attributes}, file, protocol=pickle.HIGHEST_PROTOCOL)


def restore_replay_buffer(buffer: Any, path: str | os.PathLike[str]) -> None:
    """
    Restore :func:`save_replay_buffer`'s file into a fresh buffer of the same settings (as the model's constructor or
    ``load`` preallocates it: zeros, nothing written), bit for bit: its rows are copied in, the rest stays zeros as in
    the buffer saved, and its write position (and any other state) is set.

    :raise ValueError: the buffer is not fresh, or the file holds a buffer of other settings (another size or shape)
    """
    if buffer.pos or buffer.full:
        raise ValueError("a replay buffer is restored into a fresh one only")
    with gzip.open(path, "rb") as file:
        saved = pickle.load(file)
    rows, storage, attributes = saved["rows"], saved["storage"], saved["attributes"]
    mine = vars(buffer)
    if set(storage) != {name for name, value in mine.items() if _is_storage(value, buffer.buffer_size)}:
        raise ValueError(f"the checkpoint's replay buffer holds {sorted(storage)}, this one other arrays")
    differing = [name for name, value in attributes.items() if name not in POSITION and not _same(value, mine.get(name))]
    if differing:
        raise ValueError(f"the checkpoint's replay buffer has other settings: {', '.join(differing)}")
    pairs = []
    for name, value in storage.items():
        target = mine[name]
        for key in value if isinstance(value, dict) else [None]:
            source, into = (value, target) if key is None else (value[key], target[key])
            if source.shape != (rows, *into.shape[1:]) or source.dtype != into.dtype:
                raise ValueError(f"the checkpoint's replay buffer has another {name}: {source.dtype}{list(source.shape)}")
            pairs.append((into, source))
    for into, source in pairs:  # (checked first: a buffer is restored whole or not at all)
        into[:rows] = source
    for name in POSITION:
        setattr(buffer, name, attributes[name])


def _same(a: Any, b: Any) -> bool:
    """Equal settings (arrays and tuples of numbers compared by value)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b) and a.dtype == b.dtype
    try:
        return bool(a == b)
    except Exception:
        return False


def save_final_model(model: Any, record: RunRecord, record_path: str | os.PathLike[str]) -> None:
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
