"""One run of a study (the process engine's unit of work), built exactly as ``sb3-ablation train`` builds it,
checkpointed, and recorded.

A run is rl_zoo3's experiment (:func:`~sb3_ablation.study.run.manager.make_manager`): the
:class:`~sb3_ablation.zoo.experiment.AblationExperimentManager` that ``train`` uses (same hyperparameter reading,
preprocessing, env stack with wrappers, VecNormalize, frame stacking and VecTransposeImage, zoo ``callback:`` entries,
model constructor and seeding), told only to write no log folder and to create no EvalCallback: the study's own
evaluation takes its place (:mod:`~sb3_ablation.study.run.evaluation`). With the same seed, a study run and
``sb3-ablation train`` therefore end with bit-identical weights on CPU. Its budget and evaluations are read from the
built experiment once (:class:`~sb3_ablation.study.run.learning.RunSchedule`); checkpoints and resuming are
:mod:`~sb3_ablation.study.run.checkpointing`'s, the record :mod:`~sb3_ablation.study.run.recording`'s.
"""

from __future__ import annotations

import contextlib
import io
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import set_random_seed

from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.checkpointing import add_checkpointer, try_resume
from sb3_ablation.study.run.evaluation import OverestimationEvalCallback
from sb3_ablation.study.run.learning import RunSchedule
from sb3_ablation.study.run.manager import make_manager
from sb3_ablation.study.run.recording import finish_record, new_record
from sb3_ablation.study.run.run_warnings import RunWarnings
from sb3_ablation.study.store.checkpoints import MODEL_FILE, RunCheckpoints, save_final_model
from sb3_ablation.study.store.runs import write_run


@dataclass
class BuiltRun:
    """
    A run ready to learn: fresh, or brought to its last checkpoint.

    :param model: the algorithm
    :param schedule: its budget, evaluations and ``learn()`` arguments
    :param evaluator: its evaluation callback
    :param callbacks: every callback of its ``learn()`` (the zoo's, the evaluation, the checkpoints)
    :param resumed_from: the step of the checkpoint it resumes (``None``: a fresh run)
    :param wall_time_before: the wall time of the runs it resumes
    """

    model: Any
    schedule: RunSchedule
    evaluator: OverestimationEvalCallback
    callbacks: list[BaseCallback]
    resumed_from: int | None = None
    wall_time_before: float = 0.0


def execute_run(task: RunTask) -> dict[str, Any]:
    """
    Train and evaluate one (env, variant, seed), resuming from its last checkpoint if there is one; keep the final
    model next to the record when the study keeps models, and remove the checkpoints once the record is written.
    Never raises for a failing run: the record says ``"status": "failed"`` with the error and traceback, and keeps the
    evaluations made before the failure (and the checkpoints, so that a retry resumes).

    :param task: see :func:`sb3_ablation.study.plan.config.make_tasks`
    :return: the run record as written (JSON-ready), also written to ``task.record`` when that is set
    """
    # one thread per run: parallel runs on separate cores instead of threads fighting over them
    th.set_num_threads(1)
    started = time.time()
    record = new_record(task)
    record_path = Path(task.record) if task.record else None
    checkpoints = RunCheckpoints(record_path) if record_path is not None else None
    run_warnings = RunWarnings()
    run: BuiltRun | None = None
    try:
        with run_warnings.capture(), contextlib.redirect_stdout(io.StringIO()):
            run = _build_run(task, checkpoints, run_warnings)
            run.schedule.note_in(record)
            if run.resumed_from is not None:
                record.resumed_from = run.resumed_from
            run.schedule.learn(run.model, run.callbacks, done=int(run.model.num_timesteps))
            run.model.get_env().close()
            run.evaluator.eval_env.close()
            if record_path is not None and task.keep_model:
                save_final_model(run.model, record, record_path)
        record.status = "ok"
    except Exception as error:  # a failing run is recorded, never stops the study
        record.error = f"{type(error).__name__}: {error}"
        record.traceback = traceback.format_exc()
    wall_time_s = time.time() - started + (run.wall_time_before if run is not None else 0.0)
    written = finish_record(record, run.evaluator if run is not None else None, run_warnings, wall_time_s)
    if record_path is not None:
        write_run(record_path, written)
        if checkpoints is not None and record.status == "ok":
            checkpoints.remove()
    return written


def _build_run(task: RunTask, checkpoints: RunCheckpoints | None, run_warnings: RunWarnings) -> BuiltRun:
    """The run, from its last checkpoint when there is one it can resume, else fresh."""
    latest = checkpoints.latest() if checkpoints is not None else None
    for attempt in (latest, None) if latest is not None else (None,):
        # as rl_zoo3's train does before building anything
        set_random_seed(task.seed)
        # (rl_zoo3's --trained-agent continuation loads the checkpoint's model; try_resume the rest)
        manager = make_manager(task, trained_agent=str(attempt / MODEL_FILE) if attempt is not None else "")
        model, _ = manager.setup_experiment()
        schedule = RunSchedule.of(task, manager, model.gamma)
        evaluator = schedule.make_evaluator(manager, task.seed)
        checkpointer, episodes = add_checkpointer(model, task, checkpoints, str(manager.env_name), evaluator, run_warnings)
        callbacks = [*manager.callbacks, evaluator, *([checkpointer] if checkpointer is not None else [])]
        if attempt is None:
            return BuiltRun(model, schedule, evaluator, callbacks)

        def close(model: Any = model, evaluator: OverestimationEvalCallback = evaluator) -> None:
            model.get_env().close()
            evaluator.eval_env.close()

        model, state = try_resume(attempt, model, checkpointer, episodes, close)
        if state is None:
            continue
        return BuiltRun(model, schedule, evaluator, callbacks, int(model.num_timesteps), state["wall_time_s"])
    raise AssertionError("unreachable")
