"""Atomic file writes: a reader (or a process killed mid-write) sees the old file or the new one, never half of one.

One helper serves the whole package: :func:`atomic_path` hands out a temporary path in the target's folder, and
``os.replace`` puts it in place only once it was written completely (and flushed to disk). Anything that can save to
a path (``model.save``, ``VecNormalize.save``, ``save_replay_buffer``, ``json.dump`` via :func:`write_json_atomic`)
goes through it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# the process's umask (read once: setting it is the only way to read it): files get the permissions open() gives
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """
    A temporary path to write ``path`` through; on success it replaces ``path``, on error it is removed.

    :param path: the file to (re)write; its folder is created if needed
    :return: the temporary path (same folder, same suffix, so writers that add a suffix leave it alone)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(handle)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private
    try:
        yield tmp
        with open(tmp, "rb+") as file:  # the data is on disk before the name points at it
            os.fsync(file.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as JSON (objects JSON does not know become their ``repr``) to ``path`` atomically."""
    write_text_atomic(path, json.dumps(data, indent=1, default=repr))


def read_json(path: str | os.PathLike) -> Any | None:
    """The JSON content of ``path``, or ``None`` when it is missing or unreadable."""
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError):
        return None
