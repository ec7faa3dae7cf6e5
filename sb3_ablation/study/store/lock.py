"""The study folder's lock: one study process writes a folder at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
from collections.abc import Iterator
from pathlib import Path

from sb3_ablation.study.plan.config import StudyError

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
