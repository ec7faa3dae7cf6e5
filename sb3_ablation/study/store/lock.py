"""The study folder's lock: one study process writes a folder at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from sb3_ablation.study.plan.config import StudyError

LOCK_NAME = ".study.lock"


@contextlib.contextmanager
def study_lock(out: str | os.PathLike[str]) -> Iterator[None]:
    """
    Hold ``<out>/.study.lock`` while a study writes into ``out``: a second study on the same folder fails at once
    with one line. The lock is the kernel's (``flock``): it goes with the process, so a killed study leaves none. The
    file's text (``pid <pid> on <host>``) names the study that holds it; a study that ends removes it, and a file
    left behind by a killed one (SIGKILL) is not a lock.

    :param out: the study folder (created with its parents)
    :raise StudyLockedError: another study holds the folder
    :raise StudyError: the folder cannot be created or written
    """
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        file = open(folder / LOCK_NAME, "a+")  # noqa: SIM115 (closed by the `with file` below)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        where = f" ({error.filename})" if error.filename and str(error.filename) != str(out) else ""
        raise StudyError(
            f"output folder {str(out)!r} cannot be written: {reason}{where}; pick a folder you can write with --out"
        ) from None
    with file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            raise StudyLockedError(_held_message(file.read().strip(), out)) from None
        if not _same_file(file, folder / LOCK_NAME):
            # the study that held it has just ended and removed the file: another may be creating a new one
            raise StudyLockedError(f"another study has just written into {out}; run the command again")
        file.seek(0)
        file.truncate()
        file.write(f"pid {os.getpid()} on {platform.node()}")
        file.flush()
        try:
            yield
        finally:
            # removed while still locked, so that no lock file stays behind (a study that opened it meanwhile finds
            # it gone once it gets the lock, above)
            with contextlib.suppress(OSError):
                (folder / LOCK_NAME).unlink()
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def _same_file(file: IO[str], path: Path) -> bool:
    """:return: whether ``path`` still names the open ``file`` (it may have been removed and made again)"""
    try:
        return os.path.samestat(os.fstat(file.fileno()), os.stat(path))
    except OSError:
        return False


def _held_message(holder: str, out: str | os.PathLike[str]) -> str:
    """
    :param holder: the lock file's text, ``pid <pid> on <host>`` (empty: not written yet)
    :param out: the study folder
    :return: the one line that says who holds the lock, as far as this machine can tell
    """
    match = re.fullmatch(r"pid (\d+) on (.*)", holder)
    wait = "wait for it to finish or use another --out"
    if match is None:
        return f"another study is writing into {out}; {wait}"
    pid, host = int(match.group(1)), match.group(2)
    if host != platform.node():
        # the lock is held now, so that study runs; this machine cannot look at its process
        return (
            f"another study (pid {pid} on {host}, another machine) is writing into {out}; {wait} (the lock ends with "
            "that process, even a killed one)"
        )
    if not _alive(pid):
        # the holder has locked the folder but not yet written its own pid over the last study's
        return f"another study is writing into {out} (the lock file still names pid {pid}, which has ended); {wait}"
    return f"another study (pid {pid} on {host}) is writing into {out}; {wait}"


def _alive(pid: int) -> bool:
    """:return: whether a process ``pid`` runs on this machine (one of another user counts)"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class StudyLockedError(StudyError):
    """Another study is writing into the same output folder."""
