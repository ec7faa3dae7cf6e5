"""A run's record: begun before the run (:func:`new_record`), completed after it (:func:`finish_record`)."""

from __future__ import annotations

import functools
import hashlib
import platform
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import stable_baselines3
import torch

import sb3_ablation
from sb3_ablation.study.plan.records import RunRecord, RunTask, timestamp
from sb3_ablation.study.run.run_warnings import RunWarnings
from sb3_ablation.study.store.runs import finite_or_none


def library_versions() -> dict[str, str]:
    """Versions of the libraries a run depends on, recorded with every run."""
    return {
        "sb3_ablation": sb3_ablation.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


@functools.cache
def source_digest() -> str:
    """
    The SHA-256 of the package's source that runs (:func:`tree_digest` of the installed ``sb3_ablation`` folder). A
    record carries it, so that anyone can check which code made it: ``git worktree add /tmp/c COMMIT`` and run
    ``python -c "from sb3_ablation.study.run.recording import source_digest; print(source_digest())"`` there.
    """
    return tree_digest(Path(sb3_ablation.__file__).parent)


def tree_digest(root: Path) -> str:
    """
    :param root: a folder
    :return: the SHA-256 of every file under it (caches left out), each as its path relative to ``root``, a NUL, its
        bytes' SHA-256 and a newline, in path order
    """
    files = sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(root).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def new_record(task: RunTask, **entries: Any) -> RunRecord:
    """
    The record of a run before it has run: its settings, versions, the digest of the source that runs it
    (:func:`source_digest`) and host, ``"status": "failed"`` until done.
    """
    return RunRecord.of(task, versions=library_versions(), source_digest=source_digest(), host=platform.node(), **entries)


def finish_record(record: RunRecord, evaluator: Any, run_warnings: RunWarnings, wall_time_s: float) -> dict[str, Any]:
    """
    The record with the run's evaluations, diagnostics, warnings and times, as written (ready for JSON).

    :param evaluator: the run's evaluation callback (``None``: the run failed before it was built)
    """
    if evaluator is not None:
        record.evaluations = evaluator.history
        record.value_episodes = evaluator.value_episodes
        record.diagnostics = evaluator.diagnostics
        record.eval_time_s = evaluator.eval_time_s
    record.warnings = run_warnings.messages()
    record.wall_time_s = wall_time_s
    record.finished_at = timestamp()
    return finite_or_none(record.to_json())
