"""The batched engine: the runs of one (env, variant), all its seeds, trained together in one process by BatchedTD3.

Each run k is first built as the process engine builds it (rl_zoo3's experiment for its seed: hyperparameters, env,
action noise, initial weights), then the K models become one :class:`~sb3_ablation.batched.BatchedTD3` (env k and
agent k's initial weights are run k's). Every agent is evaluated with the study's protocol on its own evaluation env
(:class:`~sb3_ablation.study.evaluation.OverestimationEvalCallback`, on run k's model holding agent k's weights), and
gets its own record, final model and status: an agent whose evaluation fails (e.g. NaN weights) is recorded as failed
while the others go on. There are no checkpoints inside a group: a killed group starts its runs over.
"""

from __future__ import annotations

import contextlib
import io
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

from sb3_ablation.study.backends import failed_record
from sb3_ablation.study.execute import (
    captured_warnings,
    finish_record,
    make_evaluator,
    make_manager,
    manager_learn_kwargs,
    new_record,
)
from sb3_ablation.study.store import save_final_model, write_run

ENGINE = "batched"


def make_groups(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks grouped by (env, variant), in order of first appearance: one group is one process's work."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for task in tasks:
        groups[(task["env"], task["variant"])].append(task)
    return [{"env": env, "variant": variant, "runs": runs} for (env, variant), runs in groups.items()]


def failed_group(group: dict[str, Any], error: str) -> list[dict[str, Any]]:
    """The records of a group that never returned (its worker died)."""
    return [{**failed_record(task, error), "engine": ENGINE} for task in group["runs"]]


class AgentEvaluations(BaseCallback):
    """
    The per-run evaluation callbacks of a BatchedTD3's agents. Before each of their hooks, run k's model (``agents[k]``)
    is brought to agent k's state: its step and update counts, the diagnostics of the last ``train()`` (in its logger),
    and, when an evaluation is due, agent k's weights. A callback that raises marks its agent failed
    (``self.failures[k]``, the error and traceback) and is called no more; the other agents go on.

    :param agents: run k's AblatableTD3 model, one per agent (never trained itself)
    :param evaluators: run k's evaluation callback, one per agent
    """

    def __init__(self, agents: list[Any], evaluators: list[Any]):
        super().__init__()
        self.agents = agents
        self.evaluators = evaluators
        self.failures: list[tuple[str, str] | None] = [None] * len(agents)

    def _init_callback(self) -> None:
        for agent, evaluator in zip(self.agents, self.evaluators, strict=True):
            agent.set_logger(Logger(folder=None, output_formats=[]))
            evaluator.init_callback(agent)

    def _sync(self, evaluating: bool) -> None:
        batched = self.model
        for index, agent in enumerate(self.agents):
            if evaluating:
                batched.copy_agent_to(index, agent)
            agent.num_timesteps, agent._n_updates = batched.agent_timesteps, batched._n_updates
            for key, value in batched.agent_diagnostics[index].items():
                agent.logger.record(f"train/{key}", value)

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
        steps = self.model.agent_timesteps
        self._sync(evaluating=any(steps >= evaluator.next_eval for evaluator in self.evaluators))
        self._each("on_step")
        return True

    def _on_training_end(self) -> None:
        self._sync(evaluating=True)
        self._each("on_training_end")


def execute_group(group: dict[str, Any]) -> list[dict[str, Any]]:
    """
    Train and evaluate the runs of one (env, variant) together; write each run's record (and final model) as the process
    engine does. Never raises for failing runs: their records say ``"status": "failed"``.

    :param group: see :func:`make_groups` (each run a task of :func:`sb3_ablation.study.config.make_tasks`)
    :return: the run records, in the group's order
    """
    import torch as th
    from stable_baselines3.common.utils import set_random_seed

    from sb3_ablation.batched import BatchedTD3

    th.set_num_threads(1)  # one thread per group: parallel groups on separate cores
    started = time.time()
    tasks = group["runs"]
    records = [{**new_record(task), "engine": ENGINE, "group_size": len(tasks)} for task in tasks]
    run_warnings: dict[str, None] = {}
    evaluations: AgentEvaluations | None = None
    group_error = None
    try:
        with captured_warnings(run_warnings), contextlib.redirect_stdout(io.StringIO()):
            agents, managers, evaluators = [], [], []
            for task, record in zip(tasks, records, strict=True):
                set_random_seed(task["seed"])  # as the process engine does before building run k
                manager = make_manager(task)
                model, _ = manager.setup_experiment()
                if manager.callbacks or manager.normalize:
                    raise ValueError("the batched engine runs no zoo callback: entries and no normalize: True")
                agents.append(model)
                managers.append(manager)
                evaluators.append(make_evaluator(task, manager, record, model.gamma))
            batched = BatchedTD3.from_agents(agents, managers[0]._hyperparams)
            evaluations = AgentEvaluations(agents, evaluators)
            batched.learn(records[0]["n_timesteps"], callback=evaluations, **manager_learn_kwargs(managers[0]))
            batched.get_env().close()
            for evaluator in evaluators:
                evaluator.eval_env.close()
    except Exception as error:  # the whole group failed (building it, or training)
        group_error = (f"{type(error).__name__}: {error}", traceback.format_exc())
    wall_time_s = (time.time() - started) / len(tasks)  # the group's time, shared by its runs
    finished = []
    for index, (task, record) in enumerate(zip(tasks, records, strict=True)):
        failure = group_error or (evaluations.failures[index] if evaluations is not None else None)
        if failure is None:
            try:
                record.update(save_final_model(agents[index], task["record"]) if task.get("record") else {})
                record["status"] = "ok"
            except Exception as error:
                failure = (f"{type(error).__name__}: {error}", traceback.format_exc())
        if failure is not None:
            record["error"], record["traceback"] = failure
        evaluator = evaluations.evaluators[index] if evaluations is not None else None
        record = finish_record(record, evaluator, run_warnings, wall_time_s)
        if task.get("record"):
            write_run(Path(task["record"]), record)
        finished.append(record)
    return finished
