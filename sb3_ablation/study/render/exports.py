"""A study's evaluations written for other tools: the tidy ``<out>/evaluations.csv`` (pandas, seaborn, rliable), which
every report writes, and rl-zoo's folder layout (``sb3-ablation report <out> --export zoo DIR``), which rl_zoo3's
``all_plots`` reads.

rl-zoo's layout, one folder per run::

    DIR/<variant>/<env>_<seed>/evaluations.npz

``<variant>`` stands where rl-zoo has the algorithm's name (``td3``, ``no_clipped_double_q``, ...: rl_zoo3's plot
scripts take it with ``--algos``, and label the curves with it), ``<env>`` is the env id (made file-system safe as in
the study folder) and ``<seed>`` the run's seed where rl-zoo numbers its runs. ``evaluations.npz`` has
``EvalCallback``'s arrays (see :class:`~sb3_ablation.study.analyse.tidy.ZooRun`): ``timesteps``, ``results`` (the
return of each evaluation episode, shape (n_evals, n_episodes)) and ``ep_lengths`` (each episode's scored length,
NaN where the records do not hold it). The study records no training episodes (the ``monitor.csv`` files of
rl-zoo's ``plot_train``), so that script finds nothing to draw.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_ablation.common.io import atomic_path, write_text_atomic
from sb3_ablation.study.analyse.tidy import COLUMNS
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.tidy import ZooRun

#: the tidy table's file name, next to ``report.md``
EVALUATIONS_CSV = "evaluations.csv"
#: the layouts ``report --export FORMAT DIR`` writes
EXPORT_FORMATS = ("zoo",)
#: the file of each run in rl-zoo's layout
ZOO_FILE = "evaluations.npz"


def write_evaluations_csv(rows: Iterable[dict[str, Any]], path: str | os.PathLike) -> Path:
    """
    Write the tidy table of a study's evaluations (the report model's ``evaluations``, from
    :func:`~sb3_ablation.study.analyse.tidy.evaluation_rows`) as CSV: a header, then one line per env, variant, seed
    and evaluation; an empty field where the record holds no value; numbers as Python writes them (they read back
    exactly).

    :param rows: the tidy table's rows
    :param path: where to write it (``<out>/evaluations.csv``, :data:`EVALUATIONS_CSV`)
    :return: the CSV's path
    """
    path = Path(path)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({key: "" if value is None else value for key, value in row.items()} for row in rows)
    write_text_atomic(path, text.getvalue())
    return path


def zoo_run_folder(folder: str | os.PathLike, env: str, variant: str, seed: int) -> Path:
    """A run's folder in rl-zoo's layout: ``<folder>/<variant>/<env>_<seed>`` (rl_zoo3 lowercases the algorithm)."""
    return Path(folder) / safe_name(variant).lower() / f"{safe_name(env)}_{seed}"


def unwritable(folder: str | os.PathLike) -> str | None:
    """
    Why files cannot be written under ``folder`` (``None``: they can), found without creating anything: its nearest
    existing folder (itself or a parent) must be a folder we may write in.
    """
    path = Path(folder).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    if not path.is_dir():
        return f"{path} is not a folder"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable"
    return None


def export_zoo(runs: Sequence[ZooRun], folder: str | os.PathLike) -> list[Path]:
    """
    Write every finished run's evaluations in rl-zoo's layout (see the module docstring), replacing the files of the
    same runs; other files under ``folder`` are left as they are.

    :param runs: the study's finished runs in ``EvalCallback``'s format
        (:func:`~sb3_ablation.study.analyse.tidy.zoo_runs`)
    :param folder: the export's root, what rl_zoo3's ``all_plots`` takes with ``--exp-folders``
    :return: the files written
    """
    written = []
    for run in runs:
        path = zoo_run_folder(folder, run.env, run.variant, run.seed) / ZOO_FILE
        with atomic_path(path) as tmp, open(tmp, "wb") as file:
            np.savez(file, timesteps=run.timesteps, results=run.results, ep_lengths=run.ep_lengths)
        written.append(path)
    return written
