"""What a study hands a run and what a run hands back: :class:`RunTask` and the run record (:class:`RunRecord`).

A run record is written to ``<out>/runs/<env>/<variant>/seed_<k>.json.gz`` (see :mod:`~sb3_ablation.study.store`) in
format :data:`RUN_FILE_FORMAT`, the one format written and read (``tools/migrate_studies.py``, kept in the history, e.g.
``git show e02371f:tools/migrate_studies.py``, converted the committed studies' records of earlier formats).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

#: the record format: a study folder takes runs of its own format only (``settings.run_format`` of its manifest)
RUN_FILE_FORMAT = 3


@dataclass
class RunSettings:
    """
    What defines a run, in its task and in its record.

    :param env: the env id (``module:Env-v0`` imports ``module`` first)
    :param variant: the variant's name
    :param seed: the run's seed
    :param algo: rl_zoo3's algorithm name
    :param switches: the variant's switch values
    :param hyperparams: the resolved zoo hyperparameters, switches included
    :param eval_freq: steps between evaluations (in a task ``None``: a twentieth of the run; the record has the one used)
    :param eval_episodes: episodes per evaluation
    """

    env: str
    variant: str
    seed: int
    algo: str
    switches: dict[str, bool]
    hyperparams: dict[str, Any]
    eval_freq: int | None
    eval_episodes: int


@dataclass
class RunTask(RunSettings):
    """
    One run of a study, as the driver hands it to an engine: its :class:`RunSettings` and how to run and record it.

    :param eval_max_episode_steps: ``T`` of the evaluation episodes' score (``None``: the env's time limit)
    :param device: torch device
    :param checkpoint_freq: steps between checkpoints (``0``: none)
    :param tensorboard_log: the run's TensorBoard folder (``None``: none)
    :param record: where the run writes its record, final model and checkpoints (``None``: nowhere)
    :param eval_envs: envs the evaluation episodes run on side by side (``None``: one per episode, at most 16)
    :param keep_model: save the final model next to the record (``seed_<k>.zip``)
    :param plan_digest: the digest of the study's plan in force (:mod:`~sb3_ablation.study.plan.digest`), written into
        the record (``None``: the study declares no plan)
    :param group_size: the batched engine's most runs per group, variants mixed (``None``: one group per env and
        variant)
    :param compile_update: the batched engine compiles its update step (engine ``batched-compiled``)
    """

    eval_max_episode_steps: int | None = None
    device: str = "cpu"
    checkpoint_freq: int = 0
    tensorboard_log: str | None = None
    record: str | None = None
    eval_envs: int | None = None
    keep_model: bool = False
    plan_digest: str | None = None
    group_size: int | None = None
    compile_update: bool = False


class _Unset:
    """A record entry not set (left out of the JSON), unlike one set to ``None`` (written as null)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass
class RunRecord(RunSettings):
    """
    A run record of format :data:`RUN_FILE_FORMAT`, its entries in the order of the JSON file; an entry left
    :data:`UNSET` is not written (e.g. ``engine`` for the process engine).

    The run's :class:`RunSettings` (``eval_freq`` the one used, once known); then ``versions`` (library versions),
    ``source_digest`` (the digest of the package source that made it,
    :func:`~sb3_ablation.study.run.recording.source_digest`; absent in records made before it existed) and ``host``;
    ``plan_digest`` (the digest of the study's plan in force when the run was made,
    :mod:`~sb3_ablation.study.plan.digest`; not written where the study declares no plan, nor in records made before
    digests existed); ``status`` (``"ok"`` or ``"failed"``), ``error`` and ``traceback``; ``engine`` and ``group_size``
    (batched engine); ``random_streams`` (batched engine: ``"per_agent"``, each run's random streams its own, so its
    record does not depend on its group; records of the batched engine without it drew from streams shared by the
    group); ``evaluation`` (batched engine: ``"vectorised"`` where its agents' evaluation episodes ran in lockstep,
    their actions computed by the group's actor at once, so they may differ from a per-agent evaluation's in the last
    bits; absent: each agent evaluated on its own model); ``n_timesteps``; ``overestimation_method``
    (:func:`~sb3_ablation.study.run.overestimation.overestimation_method`); ``resumed_from`` (the checkpoint's step);
    ``model`` (the final model's file name next to the record when the study keeps models, else null) and
    ``vecnormalize`` (its VecNormalize statistics' file, when kept); ``evaluations``, ``value_episodes`` and
    ``diagnostics`` (see :class:`~sb3_ablation.study.run.evaluation.OverestimationEvalCallback`); ``eval_time_s``;
    ``warnings``; ``wall_time_s`` and ``finished_at`` (:func:`timestamp`); ``compile_s`` (the ``batched-compiled``
    engine: the seconds its group's process spent on the first step of each compiled part, compilation included,
    once per group; a resumed group pays it again).
    """

    format: int = RUN_FILE_FORMAT
    versions: dict[str, str] = UNSET
    source_digest: str = UNSET
    host: str = UNSET
    plan_digest: str = UNSET
    status: str = "failed"
    error: str | None = None
    traceback: str | None = None
    engine: str = UNSET
    group_size: int = UNSET
    random_streams: str = UNSET
    evaluation: str = UNSET
    n_timesteps: int = UNSET
    overestimation_method: dict[str, Any] = UNSET
    resumed_from: int = UNSET
    model: str | None = None
    vecnormalize: str = UNSET
    evaluations: dict[str, list[Any]] = field(default_factory=dict)
    value_episodes: list[list[dict[str, Any]]] = UNSET
    diagnostics: dict[str, list[Any]] = UNSET
    eval_time_s: float = UNSET
    warnings: list[str] = UNSET
    wall_time_s: float = UNSET
    compile_s: float = UNSET
    finished_at: str = UNSET

    @classmethod
    def of(cls, task: RunTask, **entries: Any) -> RunRecord:
        """The record of ``task`` before it has run (``"status": "failed"`` until done), with ``entries`` set."""
        settings = {item.name: getattr(task, item.name) for item in fields(RunSettings)}
        if task.plan_digest is not None:
            entries.setdefault("plan_digest", task.plan_digest)
        return cls(**settings, **entries)

    def to_json(self) -> dict[str, Any]:
        """The record as written: ``format`` first, then every entry set, in order."""
        entries = {item.name: getattr(self, item.name) for item in fields(self) if item.name != "format"}
        return {"format": self.format, **{key: value for key, value in entries.items() if value is not UNSET}}


def trained_by(record: dict[str, Any]) -> str:
    """The engine that trained a run, from its record as written (the process engine's records do not name it)."""
    return str(record.get("engine", "process"))


def timestamp() -> str:
    """A record's ``finished_at``: local time with its UTC offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def failed_record(task: RunTask, error: str, **entries: Any) -> dict[str, Any]:
    """The record of a run that never returned (its worker died), as written."""
    return RunRecord.of(task, error=error, finished_at=timestamp(), **entries).to_json()
