"""The batched engine: the runs of one (env, variant), all its seeds, trained together in one process by BatchedTD3.

Each run k is first built as the process engine builds it (rl_zoo3's experiment for its seed: hyperparameters, env,
action noise, initial weights), then the K models become one :class:`~sb3_ablation.batched.BatchedTD3` (env k and
agent k's initial weights are run k's). Every agent is evaluated with the study's protocol on its own evaluation env
(:class:`~sb3_ablation.study.run.evaluation.OverestimationEvalCallback`, on run k's model holding agent k's weights), and
gets its own record, final model and status: an agent whose evaluation fails (e.g. NaN weights) is recorded as failed
while the others go on.

A group is checkpointed as a run of the process engine is (:class:`~sb3_ablation.study.run.execute.RunCheckpointCallback`,
every ``checkpoint_freq`` steps of each agent, into ``seeds_<k>_<l>....checkpoint/`` next to the records): the batched
model as a whole (every agent's weights and Adam moments, SB3's ``save``), its replay buffer (every agent's column),
the training envs' episodes, RNG states, action noise, and each agent's evaluation history and failure. A killed
group, run again with the same seeds pending, resumes there and ends with exactly the records and final models of
an uninterrupted one; the checkpoints are removed once the group is done.
"""

from __future__ import annotations

import contextlib
import io
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

from sb3_ablation.study.plan.records import RunRecord, RunTask, failed_record
from sb3_ablation.study.run.execute import (
    add_checkpointer,
    captured_warnings,
    finish_record,
    make_evaluator,
    make_manager,
    manager_learn_kwargs,
    new_record,
    try_resume,
)
from sb3_ablation.study.store.checkpoints import RunCheckpoints, save_final_model
from sb3_ablation.study.store.runs import write_run

if TYPE_CHECKING:
    from sb3_ablation.batched import BatchedTD3

ENGINE = "batched"


@dataclass
class RunGroup:
    """The runs of one (env, variant) that one process trains together: the batched engine's unit of work."""

    env: str
    variant: str
    runs: list[RunTask]


def make_groups(tasks: list[RunTask]) -> list[RunGroup]:
    """The tasks grouped by (env, variant), in order of first appearance: one group is one process's work."""
    groups: dict[tuple[str, str], list[RunTask]] = defaultdict(list)
    for task in tasks:
        groups[(task.env, task.variant)].append(task)
    return [RunGroup(env, variant, runs) for (env, variant), runs in groups.items()]


def group_checkpoints(tasks: list[RunTask]) -> RunCheckpoints | None:
    """
    The checkpoints of a group: ``seeds_<k>_<l>....checkpoint/`` next to its records (named by its seeds, so that a
    group of other seeds never resumes from them), or ``None`` when its runs have no record files.
    """
    if not tasks[0].record:
        return None
    seeds = "_".join(str(task.seed) for task in tasks)
    return RunCheckpoints(Path(tasks[0].record).with_name(f"seeds_{seeds}"))


def failed_group(group: RunGroup, error: str) -> list[dict[str, Any]]:
    """The records of a group that never returned (its worker died)."""
    return [failed_record(task, error, engine=ENGINE) for task in group.runs]


class AgentEvaluations(BaseCallback):
    """
    The per-run evaluation callbacks of a BatchedTD3's agents. Before each of their hooks, run k's model (``agents[k]``)
    is brought to agent k's state: its step and update counts, the diagnostics of the last ``train()``
    (``training_diagnostics``, agent k's of the batched model's ``agent_diagnostics``), and, when an evaluation is due,
    agent k's weights. A callback that raises marks its agent failed
    (``self.failures[k]``, the error and traceback) and is called no more; the other agents go on.

    :param agents: run k's AblatableTD3 model, one per agent (never trained itself)
    :param evaluators: run k's evaluation callback, one per agent
    """

    def __init__(self, agents: list[Any], evaluators: list[Any]):
        super().__init__()
        self.agents = agents
        self.evaluators = evaluators
        self.failures: list[tuple[str, str] | None] = [None] * len(agents)
        for agent in agents:
            # a callback takes its model's logger at init (the agents are never trained: nothing is logged there)
            agent.set_logger(Logger(folder=None, output_formats=[]))

    def state(self) -> dict[str, Any]:
        """
        What a checkpoint of the group keeps of its agents' evaluations (restored by :meth:`set_state`). The
        diagnostics of the last ``train()`` are not kept: each evaluator has read them before the checkpoint.
        """
        return {"evaluators": [evaluator.state() for evaluator in self.evaluators], "failures": self.failures}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state` (a checkpoint's ``"logged"``, the agents' logged values, is not needed: ignored)."""
        for evaluator, evaluator_state in zip(self.evaluators, state["evaluators"], strict=True):
            evaluator.set_state(evaluator_state)
        self.failures = state["failures"]

    def _init_callback(self) -> None:
        for agent, evaluator in zip(self.agents, self.evaluators, strict=True):
            evaluator.init_callback(agent)

    @property
    def batched(self) -> BatchedTD3:
        """The model this callback runs on: the group's BatchedTD3."""
        return cast("BatchedTD3", self.model)

    def _sync(self, evaluating: bool) -> None:
        batched = self.batched
        for index, agent in enumerate(self.agents):
            if evaluating:
                batched.copy_agent_to(index, agent)
            agent.num_timesteps, agent._n_updates = batched.agent_timesteps, batched._n_updates
            agent.training_diagnostics = batched.agent_diagnostics[index]

    def _each(self, hook: str, *args: Any) -> None:
        for index, evaluator in enumerate(self.evaluators):
            if self.failures[index] is None:
                try:
                    getattr(evaluator, hook)(*args)
                except Exception as error:
                    self.failures[index] = (f"{type(error).__name__}: {error}", traceback.format_exc())

    def _on_training_start(self) -> None:
        self._sync(evaluating=True)
        self._each("on_training_start", self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        self._sync(evaluating=False)
        self._each("on_rollout_start")

    def _on_step(self) -> bool:
        steps = self.batched.agent_timesteps
        self._sync(evaluating=any(steps >= evaluator.next_eval for evaluator in self.evaluators))
        self._each("on_step")
        return True

    def _on_training_end(self) -> None:
        self._sync(evaluating=True)
        self._each("on_training_end")


def execute_group(group: RunGroup) -> list[dict[str, Any]]:
    """
    Train and evaluate the runs of one (env, variant) together, resuming from the group's last checkpoint if there is
    one; write each run's record (and final model) as the process engine does, and remove the checkpoints once the
    group is done. Never raises for failing runs: their records say ``"status": "failed"`` (a group that fails as a
    whole keeps its checkpoints, so that a retry resumes).

    :param group: see :func:`make_groups` (each run a task of :func:`sb3_ablation.study.plan.config.make_tasks`)
    :return: the run records as written, in the group's order
    """
    import torch as th

    th.set_num_threads(1)  # one thread per group: parallel groups on separate cores
    started = time.time()
    tasks = group.runs
    records = [new_record(task, engine=ENGINE, group_size=len(tasks)) for task in tasks]
    checkpoints = group_checkpoints(tasks)
    run_warnings: dict[str, None] = {}
    evaluations: AgentEvaluations | None = None
    group_error = None
    resumed_wall_time_s = 0.0
    try:
        with captured_warnings(run_warnings), contextlib.redirect_stdout(io.StringIO()):
            batched, evaluations, callbacks, learn_kwargs, state = _build_group(tasks, records, checkpoints, run_warnings)
            if state is not None:
                resumed_wall_time_s = state["wall_time_s"]
            batched.learn(
                records[0].n_timesteps - batched.agent_timesteps,
                callback=callbacks,
                reset_num_timesteps=batched.num_timesteps == 0,
                **learn_kwargs,
            )
            _close_group(batched, evaluations)
    except Exception as error:  # the whole group failed (building it, or training)
        group_error = (f"{type(error).__name__}: {error}", traceback.format_exc())
    wall_time_s = (time.time() - started + resumed_wall_time_s) / len(tasks)  # the group's time, shared by its runs
    finished = []
    for index, (task, record) in enumerate(zip(tasks, records, strict=True)):
        failure = group_error or (evaluations.failures[index] if evaluations is not None else None)
        if failure is None and evaluations is not None:  # (evaluations is None only after a group error)
            try:
                if task.record and task.keep_model:
                    save_final_model(evaluations.agents[index], record, task.record)
                record.status = "ok"
            except Exception as error:
                failure = (f"{type(error).__name__}: {error}", traceback.format_exc())
        if failure is not None:
            record.error, record.traceback = failure
        evaluator = evaluations.evaluators[index] if evaluations is not None else None
        written = finish_record(record, evaluator, run_warnings, wall_time_s)
        if task.record:
            write_run(Path(task.record), written)
        finished.append(written)
    if checkpoints is not None and group_error is None:
        checkpoints.remove()
    return finished


def _close_group(batched: Any, evaluations: AgentEvaluations) -> None:
    batched.get_env().close()
    for evaluator in evaluations.evaluators:
        evaluator.eval_env.close()


def _build_group(
    tasks: list[RunTask],
    records: list[RunRecord],
    checkpoints: RunCheckpoints | None,
    run_warnings: dict[str, None],
) -> tuple[Any, AgentEvaluations, list[BaseCallback], dict[str, Any], dict[str, Any] | None]:
    """
    The batched model (fresh, or from the group's last checkpoint), the agents' evaluations, all callbacks, the
    arguments of ``learn()``, and the checkpoint's state (``None`` for a fresh start).
    """
    from stable_baselines3.common.utils import set_random_seed

    from sb3_ablation.batched import BatchedTD3

    latest = checkpoints.latest() if checkpoints is not None else None
    for attempt in (latest, None) if latest is not None else (None,):
        agents, managers, evaluators = [], [], []
        for task, record in zip(tasks, records, strict=True):
            set_random_seed(task.seed)  # as the process engine does before building run k
            manager = make_manager(task)
            model, _ = manager.setup_experiment()
            if manager.callbacks or manager.normalize:
                raise ValueError("the batched engine runs no zoo callback: entries and no normalize: True")
            agents.append(model)
            managers.append(manager)
            evaluators.append(make_evaluator(task, manager, record, model.gamma))
        fresh = BatchedTD3.from_agents(agents, managers[0]._hyperparams)
        evaluations = AgentEvaluations(agents, evaluators)
        checkpointer, episodes = add_checkpointer(
            fresh, tasks[0], checkpoints, str(managers[0].env_name), evaluations, run_warnings
        )
        callbacks = [evaluations, *([checkpointer] if checkpointer is not None else [])]
        learn_kwargs = manager_learn_kwargs(managers[0])
        if attempt is None:
            return fresh, evaluations, callbacks, learn_kwargs, None

        def load(folder: Path, fresh: Any = fresh) -> Any:
            # SB3's load of the whole batched model (weights, Adam moments, counters), on the fresh one's envs
            loaded = BatchedTD3.load(folder / "model.zip", env=fresh.get_env(), device=fresh.device, force_reset=False)
            loaded.load_replay_buffer(folder / "replay_buffer.pkl")
            return loaded

        def close(fresh: Any = fresh, evaluations: AgentEvaluations = evaluations) -> None:
            _close_group(fresh, evaluations)

        batched, state = try_resume(attempt, fresh, checkpointer, episodes, close, load)
        if state is None:
            continue
        for record in records:
            record.resumed_from = batched.agent_timesteps
        return batched, evaluations, callbacks, learn_kwargs, state
    raise AssertionError("unreachable")
