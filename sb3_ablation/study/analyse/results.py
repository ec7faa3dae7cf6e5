"""The results of a study as arrays: every finished run of a study folder, grouped by env and variant.

This is the first step of the analysis (results -> inference and statistics -> report model -> markdown, figures and
JSON). It reads the run records through the store (:func:`~sb3_ablation.study.store.runs.iter_runs`; their one
format, :data:`~sb3_ablation.study.plan.records.RUN_FILE_FORMAT`): every key of a record's ``evaluations`` is an
evaluation metric, every key of its ``diagnostics`` a training diagnostic; see
:mod:`sb3_ablation.study.analyse.analysis` for what the report makes of them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.training_stats import ACTOR_STD, TARGET_Q_MEAN, TD_ERROR, TWIN_Q_GAP, q_mean_key
from sb3_ablation.study.plan.records import trained_by
from sb3_ablation.study.store.manifest import planned_runs, read_manifest
from sb3_ablation.study.store.runs import iter_runs, unreadable_runs

# The training diagnostics of a record, in the order the report shows them (q2_mean is left out: the twin gap
# |Q1 - Q2| says what a second critic adds)
DIAGNOSTICS = (q_mean_key(1), TWIN_Q_GAP, TARGET_Q_MEAN, TD_ERROR, ACTOR_STD)


def _as_array(values: Sequence[Any]) -> np.ndarray:
    """A JSON list of numbers as floats, ``null`` (a non-finite value, or nothing logged) as NaN."""
    return np.array([np.nan if value is None else value for value in values], dtype=np.float64)


@dataclass
class RunCurves:
    """
    One finished run: its evaluations and its training diagnostics.

    :param seed: the run's seed
    :param timesteps: timesteps of the evaluations
    :param values: evaluation metric (``mean_return``, ``overestimation``, ...) -> values at ``timesteps`` (a record
        converted from an earlier format may lack the overestimation)
    :param diagnostics_timesteps: timesteps of the diagnostics
    :param diagnostics: diagnostic (``q1_mean``, ``twin_q_gap``, ...) -> values at ``diagnostics_timesteps``
    :param episode_returns: per evaluation, the return of each evaluation episode
    :param warnings: the unique warnings the run raised
    :param value_episodes: per evaluation, the per-episode summaries of the overestimation measure (kept as recorded,
        for a later analysis to recompute the measure)
    """

    seed: int
    timesteps: np.ndarray
    values: dict[str, np.ndarray]
    diagnostics_timesteps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    episode_returns: list[np.ndarray] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    value_episodes: list[Any] = field(default_factory=list)

    def final(self, metric: str) -> float:
        """The metric at the end of training (its last evaluation or diagnostics window); NaN when not recorded."""
        values = self.curve(metric)[1]
        return float(values[-1]) if len(values) else math.nan

    def has(self, metric: str) -> bool:
        return metric in self.values or metric in self.diagnostics

    def curve(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """``(timesteps, values)`` of an evaluation metric or a training diagnostic (empty when the run lacks it)."""
        if metric in self.values:
            return self.timesteps, self.values[metric]
        if metric in self.diagnostics:
            return self.diagnostics_timesteps, self.diagnostics[metric]
        return np.zeros(0, dtype=np.int64), np.zeros(0)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunCurves:
        """Read a run record (as :func:`~sb3_ablation.study.store.runs.read_run` returns it)."""
        evaluations = dict(record["evaluations"])
        episode_returns = evaluations.pop("episode_returns", None) or []
        value_episodes = record.get("value_episodes") or []
        diagnostics = dict(record.get("diagnostics") or {})
        diagnostics_timesteps = diagnostics.pop("timesteps", [])
        return cls(
            seed=int(record["seed"]),
            timesteps=np.asarray(evaluations.pop("timesteps"), dtype=np.int64),
            values={name: _as_array(values) for name, values in evaluations.items()},
            diagnostics_timesteps=np.asarray(diagnostics_timesteps, dtype=np.int64),
            diagnostics={name: _as_array(values) for name, values in diagnostics.items()},
            episode_returns=[_as_array(returns) for returns in episode_returns],
            warnings=list(dict.fromkeys(record.get("warnings") or [])),
            value_episodes=list(value_episodes),
        )


@dataclass
class StudyData:
    """What a study folder holds, as the analysis needs it."""

    out: Path
    manifest: dict[str, Any]
    envs: list[str]
    variants: list[str]
    runs: dict[str, dict[str, list[RunCurves]]]  # env -> variant -> finished runs, by seed
    failed: list[dict[str, Any]] = field(default_factory=list)
    missing: list[tuple[str, str, int]] = field(default_factory=list)
    # warning message -> the (env, variant, seed) of every run, finished or failed, that raised it
    warnings: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    # the software a finished run was made with ("torch 2.13.0+cpu, ...") -> its (env, variant, seed)
    software: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    # the engine that trained a finished run ("process", "batched") -> its (env, variant, seed)
    engines: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)

    def seed_engine(self, env: str, seed: int) -> str | None:
        """The engine of an env's seed (one per seed: the study refuses to mix them), ``None`` without a run."""
        return next((engine for engine, keys in self.engines.items() if any(k[0] == env and k[2] == seed for k in keys)), None)

    def final_returns(self, env: str, variant: str) -> np.ndarray:
        return self.final_values(env, variant, "mean_return")[1]

    def final_values(self, env: str, variant: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """``(seeds, values)``: the metric at the end of training of each finished run that recorded it."""
        pairs = [(run.seed, run.final(metric)) for run in self.runs.get(env, {}).get(variant, [])]
        pairs = [(seed, value) for seed, value in pairs if math.isfinite(value)]
        return np.array([s for s, _ in pairs], dtype=np.int64), np.array([v for _, v in pairs], dtype=np.float64)


def load_study(out: str | os.PathLike[str]) -> StudyData:
    """
    Read a study folder: the manifest and every run record.

    :param out: the study's output folder
    :return: finished runs grouped by env and variant, failed runs, runs the manifest expects but nobody wrote, and
        the runs' warnings
    """
    manifest = read_manifest(out)
    envs, variants = list(manifest["envs"]), list(manifest["variants"])
    runs: dict[str, dict[str, list[RunCurves]]] = {}
    failed, done = [], set()
    warnings: dict[str, list[tuple[str, str, int]]] = {}
    software: dict[str, list[tuple[str, str, int]]] = {}
    engines: dict[str, list[tuple[str, str, int]]] = {}
    for record in iter_runs(out):
        key = (record["env"], record["variant"], int(record["seed"]))
        for message in dict.fromkeys(record.get("warnings") or []):
            warnings.setdefault(message, []).append(key)
        if record.get("status") != "ok":
            failed.append(record)
            continue
        if not (record.get("evaluations") or {}).get("timesteps"):
            failed.append({**record, "error": "no evaluations recorded"})
            continue
        done.add(key)
        versions = record.get("versions") or {}
        made_with = ", ".join(f"{name} {versions[name]}" for name in sorted(versions)) or "not recorded"
        software.setdefault(made_with, []).append(key)
        engines.setdefault(trained_by(record), []).append(key)
        runs.setdefault(record["env"], {}).setdefault(record["variant"], []).append(RunCurves.from_record(record))
        if record["env"] not in envs:
            envs.append(record["env"])
        if record["variant"] not in variants:
            variants.append(record["variant"])
    failed += unreadable_runs(out, envs, variants)  # named as such in the report; a rerun redoes them
    for by_variant in runs.values():
        for run_list in by_variant.values():
            run_list.sort(key=lambda run: run.seed)
    failed_keys = {(r["env"], r["variant"], int(r["seed"])) for r in failed}
    missing = [key for key in planned_runs(manifest) if key not in done and key not in failed_keys]
    return StudyData(Path(out), manifest, envs, variants, runs, failed, missing, warnings, software, engines)


def aligned_curves(runs: list[RunCurves], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """
    An evaluation metric or a training diagnostic of several runs at the timesteps all of them have.

    :param runs: the runs (those without the metric are left out)
    :param metric: ``mean_return``, ``overestimation``, ... or a diagnostic (``q1_mean``, ...)
    :return: ``(timesteps, values)`` with ``values`` of shape (runs with the metric, timesteps)
    """
    curves = [run.curve(metric) for run in runs if run.has(metric)]
    if not curves:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0))
    common = set(curves[0][0].tolist())
    for timesteps, _ in curves[1:]:
        common &= set(timesteps.tolist())
    grid = np.array(sorted(common), dtype=np.int64)
    rows = []
    for timesteps, values in curves:
        position = {int(t): i for i, t in enumerate(timesteps)}
        rows.append([values[position[int(t)]] for t in grid])
    return grid, np.array(rows, dtype=np.float64).reshape(len(curves), len(grid))
