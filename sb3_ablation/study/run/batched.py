"""The batched engine: the runs of one (env, variant), all its seeds (or with a group size, runs of mixed variants),
trained together in one process by BatchedTD3.

Each run k is first built as the process engine builds it (rl_zoo3's experiment for its seed: hyperparameters, env,
action noise, initial weights), then the K models become one :class:`~sb3_ablation.batched.BatchedTD3` (env k, agent
k's initial weights and its random number streams are run k's: the process's streams as run k leaves them after
being built, where the process engine starts learning). An agent's record is therefore the same in a group of any
size (a function of its configuration and seed). Every agent is evaluated with the study's protocol on its own
evaluation env (:class:`~sb3_ablation.study.run.evaluation.OverestimationEvalCallback`, on run k's model holding
agent k's weights), and gets its own record, final model and status: an agent whose evaluation fails (e.g. NaN
weights) is recorded as failed while the others go on. On a CUDA device the agents' evaluation episodes run in
lockstep, every agent's actions computed by one call of the group's actor (:class:`AgentEvaluations`; its records
say ``"evaluation": "vectorised"``).

A group is checkpointed as a run of the process engine is
(:class:`~sb3_ablation.study.run.checkpointing.RunCheckpointCallback`, every ``checkpoint_freq`` steps of each agent,
into ``seeds_<k>_<l>....checkpoint/`` next to the records): the batched model as a whole (every agent's weights and
Adam moments, SB3's ``save``), the filled part of its replay buffer (every agent's column), the training envs'
episodes, RNG states, action noise, and each agent's evaluation history and failure. A killed
group, run again with the same seeds pending, resumes there and ends with exactly the records and final models of
an uninterrupted one; the checkpoints are removed once the group is done.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import get_device, set_random_seed

from sb3_ablation.batched import BatchedTD3
from sb3_ablation.batched.mixing import MIXABLE_SWITCHES
from sb3_ablation.batched.streams import AgentStream
from sb3_ablation.study.plan.records import RunTask, failed_record
from sb3_ablation.study.run.checkpointing import add_checkpointer, try_resume
from sb3_ablation.study.run.episodes import EpisodeLoop
from sb3_ablation.study.run.evaluation import OverestimationEvalCallback
from sb3_ablation.study.run.learning import RunSchedule
from sb3_ablation.study.run.manager import make_manager
from sb3_ablation.study.run.recording import finish_record, new_record
from sb3_ablation.study.run.run_warnings import RunWarnings
from sb3_ablation.study.store.checkpoints import MODEL_FILE, RunCheckpoints, save_final_model
from sb3_ablation.study.store.runs import write_run
from sb3_ablation.td3.policies import GaussianActor

ENGINE = "batched"
#: the batched engine whose update step is compiled (:mod:`~sb3_ablation.batched.update`)
COMPILED_ENGINE = "batched-compiled"
#: the records' ``random_streams``: each agent draws from its own streams (its record does not depend on its group)
RANDOM_STREAMS = "per_agent"
#: the records' ``evaluation`` where the agents' evaluation episodes ran in lockstep (absent: each agent's on its own)
VECTORISED_EVALUATION = "vectorised"


@dataclass
class RunGroup:
    """
    The runs that one process trains together, the batched engine's unit of work: the seeds of one (env, variant), or
    with a group size, up to that many runs of one env whose variants differ only in switches an agent may have on its
    own (:data:`~sb3_ablation.batched.mixing.MIXABLE_SWITCHES`).

    :param env: the env id
    :param variant: the variant's name (a mixed group: its variants' names joined by ``+``)
    :param runs: the runs
    :param vectorised_evaluation: evaluate the agents in lockstep, their actions computed at once
        (:class:`AgentEvaluations`); ``None``: on a CUDA device only
    """

    env: str
    variant: str
    runs: list[RunTask]
    vectorised_evaluation: bool | None = None

    def evaluates_vectorised(self) -> bool:
        """Whether the group's agents are evaluated in lockstep (:attr:`vectorised_evaluation`, resolved)."""
        if self.vectorised_evaluation is not None:
            return self.vectorised_evaluation
        return get_device(self.runs[0].device).type == "cuda"

    def record_entries(self) -> dict[str, Any]:
        """What each record of the group says of how it ran: the engine, its random streams, a vectorised evaluation."""
        engine = COMPILED_ENGINE if self.runs[0].compile_update else ENGINE
        entries: dict[str, Any] = dict(engine=engine, random_streams=RANDOM_STREAMS)
        if self.evaluates_vectorised():
            entries["evaluation"] = VECTORISED_EVALUATION
        return entries


def mixing_key(task: RunTask) -> str:
    """What the runs of one group share: everything of a task but its variant, seed, record and mixable switches."""
    settings = dataclasses.asdict(task)
    for name in ("variant", "seed", "record", "tensorboard_log", "switches"):
        settings.pop(name)
    settings["hyperparams"] = {key: value for key, value in settings["hyperparams"].items() if key not in MIXABLE_SWITCHES}
    settings["fixed_switches"] = {name: value for name, value in task.switches.items() if name not in MIXABLE_SWITCHES}
    return json.dumps(settings, sort_keys=True, default=repr)


def make_groups(tasks: list[RunTask]) -> list[RunGroup]:
    """
    The tasks grouped, in order of first appearance, one group per process: by (env, variant) when the tasks have no
    ``group_size`` (a study of a design gets one by default: :func:`default_group_size`); else runs that can share
    a BatchedTD3 (:func:`mixing_key`), variants mixed, at most ``group_size`` per group. A run's record does not
    depend on its group.
    """
    if tasks and tasks[0].group_size is not None:
        size = tasks[0].group_size
        mixable: dict[str, list[RunTask]] = defaultdict(list)
        for task in tasks:
            mixable[mixing_key(task)].append(task)
        chunks = [runs[start : start + size] for runs in mixable.values() for start in range(0, len(runs), size)]
        return [RunGroup(runs[0].env, "+".join(dict.fromkeys(task.variant for task in runs)), runs) for runs in chunks]
    groups: dict[tuple[str, str], list[RunTask]] = defaultdict(list)
    for task in tasks:
        groups[(task.env, task.variant)].append(task)
    return [RunGroup(env, variant, runs) for (env, variant), runs in groups.items()]


def default_group_size(tasks: list[RunTask], design: bool) -> int | None:
    """
    The group size of a batched study that sets none (``--group-size``). On a CUDA device, a factorial design (or a
    fraction), whose cells differ mostly in switches an agent may have on its own, gets one group of every run
    (every cell and seed) that can share a BatchedTD3: a single process fills the device, where several would
    contend for it, and the device computes the union of the agents' components (two critics, the actor at every
    update, a Gaussian head) alongside at little cost (the two values of ``replay_buffer`` still form groups of
    their own). On CPU, one group per (env, variant), as for every other study: there each agent of a mixed group
    pays for that union, and for the committed 2^6 Pendulum design (10 seeds: per-variant groups of 10 already
    batch well) groups sized to the cores (:func:`core_group_size`) were measured slower, 1.70 h against 1.54 h on 2
    cores (``benchmarks/results/study_scaling_2x6.json``); mixed groups pay on CPU where a variant has few seeds
    (``benchmarks/results/engine_scaling_cpu_32cells.json``), with ``--group-size``.

    A run's record does not depend on its group, so this changes nothing but the wall time; the size is computed from
    every run of the study (not the pending ones), so that a resumed study forms the same groups and finds their
    checkpoints.

    :param tasks: every run of the study
    :param design: whether the study's variants are a factorial design or a fraction of one
    :return: the group size, ``None``: one group per (env, variant)
    """
    if design and tasks and th.device(tasks[0].device).type == "cuda":
        return len(tasks)
    return None


def core_group_size(tasks: list[RunTask], workers: int) -> int:
    """
    Mixed groups sized to the cores: the runs that can share a group (those of one value of the switches of the whole
    group) split into as many groups as there are workers, ``ceil(runs / classes / workers)`` runs each, so that each
    worker trains a group of each class (the largest batches that leave no core idle while another works through a
    class that costs more: without a replay buffer a step costs far less). For ``--group-size``; see
    :func:`default_group_size` for why it is not the CPU's default.

    :param tasks: every run of the study
    :param workers: the worker processes
    """
    classes = len({mixing_key(task) for task in tasks})
    return -(-len(tasks) // (classes * max(workers, 1)))


def group_checkpoints(tasks: list[RunTask]) -> RunCheckpoints | None:
    """
    The checkpoints of a group: ``seeds_<k>_<l>....checkpoint/`` next to its records (named by its seeds, so that a
    group of other seeds never resumes from them), or ``None`` when its runs have no record files. A group of several
    variants: ``group_<hash of its variants and seeds>.checkpoint/`` next to its first run's record.
    """
    if not tasks[0].record:
        return None
    if len({task.variant for task in tasks}) > 1:
        runs = ",".join(f"{task.variant}:{task.seed}" for task in tasks)
        return RunCheckpoints(Path(tasks[0].record).with_name(f"group_{hashlib.sha256(runs.encode()).hexdigest()[:16]}"))
    seeds = "_".join(str(task.seed) for task in tasks)
    return RunCheckpoints(Path(tasks[0].record).with_name(f"seeds_{seeds}"))


def failed_group(group: RunGroup, error: str) -> list[dict[str, Any]]:
    """The records of a group that never returned (its worker died)."""
    return [failed_record(task, error, **group.record_entries()) for task in group.runs]


def agent_deterministic_actions(batched: BatchedTD3, observations: np.ndarray) -> np.ndarray:
    """
    Each agent's deterministic actions, as ``predict(observations[k], deterministic=True)`` of a plain model holding
    agent k's weights computes them, for all agents in one call of the group's actor: the observations as a tensor,
    the actor's forward (a Gaussian actor's deterministic action is the tanh of its mean, for the group's
    deterministic agents as for its Gaussian ones; computed without building the distribution, whose argument
    checks would refuse the NaN weights of one agent for all), the actions unscaled to the env's bounds (or clipped
    to them, unsquashed).

    The group's products are batched over the agents: they round like a plain model's in most layers but not in
    every one (e.g. a layer with one output), so the actions may differ from ``predict``'s in the last bits. An
    agent's actions do not depend on the other agents (nor on their observations).

    :param batched: the group's model
    :param observations: agent k's observations at ``[k]``, shape ``(K, n, *obs_shape)``
    :return: agent k's actions at ``[k]``, shape ``(K, n, *action_shape)``
    """
    policy = batched.policy
    policy.set_training_mode(False)
    with th.no_grad():
        obs_tensor = th.as_tensor(observations, device=policy.device)
        actor = policy.actor
        if isinstance(actor, GaussianActor):
            mean_actions, _ = actor.get_action_dist_params(obs_tensor)
            action_tensor = th.tanh(mean_actions)
        else:
            action_tensor = actor(obs_tensor)
    action_space = batched.action_space
    actions = action_tensor.cpu().numpy().reshape((*observations.shape[:2], *action_space.shape))  # type: ignore[misc]
    if policy.squash_output:
        return policy.unscale_action(actions)
    return np.clip(actions, action_space.low, action_space.high)  # type: ignore[attr-defined]


def agents_with_finite_actor(batched: BatchedTD3) -> list[bool]:
    """Whether each agent's actor weights are all finite (every parameter of the group's actor is stacked by agent)."""
    finite = th.ones(batched.n_agents, dtype=th.bool, device=batched.device)
    for parameter in batched.actor.parameters():
        finite &= th.isfinite(parameter.detach()).flatten(1).all(dim=1)
    return [bool(value) for value in finite.tolist()]


class AgentEvaluations(BaseCallback):
    """
    The per-run evaluation callbacks of a BatchedTD3's agents. Before each of their hooks, run k's model (``agents[k]``)
    is brought to agent k's state: its step and update counts, the diagnostics of the last ``train()``
    (``training_diagnostics``, agent k's of the batched model's ``agent_diagnostics``), and, when an evaluation is due,
    agent k's weights. A callback that raises marks its agent failed
    (``self.failures[k]``, the error and traceback) and is called no more; the other agents go on.

    Vectorised evaluation (``vectorised``): when the agents are due for an evaluation, their episodes run first, in
    lockstep: at each step the observations of every agent's evaluation envs, stacked ``(K, n_envs, obs)``, get their
    actions from one call of the group's actor (:func:`agent_deterministic_actions`), instead of one ``predict`` per
    agent and step (each a round trip to the device). Each agent's evaluation callback then finishes its evaluation
    with these episodes (:meth:`OverestimationEvalCallback.hand_over`): critic 1's values on run k's model, the checks,
    the history, as on its own. An agent whose actor weights are not all finite runs its episodes on its own (its
    evaluation fails as it does there). The episodes are the same episodes (envs, seeds, episode counts), but the
    group's actor rounds its products otherwise than a plain model (:func:`agent_deterministic_actions`), so the
    actions, and through them the returns, may differ from a per-agent evaluation's in the last bits; an agent's
    record stays a function of its configuration and seed (the same alone and in any group).

    :param agents: run k's AblatableTD3 model, one per agent (never trained itself)
    :param evaluators: run k's evaluation callback, one per agent
    :param vectorised: run the agents' evaluation episodes in lockstep (the runs' evaluation envs must have the same
        number of envs)
    """

    def __init__(self, agents: list[Any], evaluators: list[OverestimationEvalCallback], vectorised: bool = False):
        super().__init__()
        self.agents = agents
        self.evaluators = evaluators
        self.vectorised = vectorised
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

    def _fail(self, index: int, error: Exception) -> None:
        self.failures[index] = (f"{type(error).__name__}: {error}", traceback.format_exc())

    def _each(self, hook: str, *args: Any) -> None:
        for index, evaluator in enumerate(self.evaluators):
            if self.failures[index] is None:
                try:
                    getattr(evaluator, hook)(*args)
                except Exception as error:
                    self._fail(index, error)
                evaluator.discard_handed_over()

    def _run_episodes_in_lockstep(self, due: list[bool]) -> None:
        """
        Run the episodes of the agents ``due`` for an evaluation (and not failed) in lockstep, and hand each agent's
        over to its evaluation callback; an agent whose episodes raise is marked failed.
        """
        if not self.vectorised or not any(due):
            return
        started = time.perf_counter()
        finite = agents_with_finite_actor(self.batched)
        loops: dict[int, EpisodeLoop] = {}
        for index, evaluator in enumerate(self.evaluators):
            if due[index] and self.failures[index] is None and finite[index]:
                try:
                    loops[index] = evaluator.episode_loop()
                except Exception as error:
                    self._fail(index, error)
        running = {index: loop for index, loop in loops.items() if loop.running}
        while running:
            # (flat Box observations, as BatchedTD3 takes them)
            current = {index: cast(np.ndarray, loop.observations) for index, loop in running.items()}
            first = next(iter(current.values()))
            # the agents not running act on zeros (their actions are dropped; an agent's do not depend on the others')
            observations = np.zeros((len(self.evaluators), *first.shape), dtype=first.dtype)
            for index, agent_observations in current.items():
                if agent_observations.shape != first.shape:
                    raise ValueError(
                        f"vectorised evaluation needs evaluation envs of one shape: agent {index}'s observations are "
                        f"{agent_observations.shape}, another's {first.shape}"
                    )
                observations[index] = agent_observations
            actions = agent_deterministic_actions(self.batched, observations)
            for index, loop in list(running.items()):
                try:
                    loop.step(actions[index].copy())
                except Exception as error:
                    self._fail(index, error)
                    del loops[index]
                if index not in loops or not loop.running:
                    del running[index]
        seconds = (time.perf_counter() - started) / max(len(loops), 1)  # (the lockstep's time, shared by its agents)
        for index, loop in loops.items():
            self.evaluators[index].hand_over(loop.episodes, seconds)

    def evaluate_now(self) -> None:
        """
        Evaluate every agent that has not failed, now (outside ``learn``: e.g. to time an evaluation), as a hook that
        finds them due does: agent k's weights copied into run k's model, the episodes in lockstep where vectorised.
        """
        self._sync(evaluating=True)
        self._run_episodes_in_lockstep([True] * len(self.evaluators))
        self._each("evaluate")

    def _on_training_start(self) -> None:
        self._sync(evaluating=True)
        steps = self.batched.agent_timesteps
        self._run_episodes_in_lockstep([evaluator.evaluation_due(steps) for evaluator in self.evaluators])
        self._each("on_training_start", self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        self._sync(evaluating=False)
        self._each("on_rollout_start")

    def _on_step(self) -> bool:
        steps = self.batched.agent_timesteps
        due = [evaluator.evaluation_due(steps) for evaluator in self.evaluators]
        self._sync(evaluating=any(due))
        self._run_episodes_in_lockstep(due)
        self._each("on_step")
        return True

    def _on_training_end(self) -> None:
        self._sync(evaluating=True)
        self._run_episodes_in_lockstep([evaluator.final_evaluation_due() for evaluator in self.evaluators])
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
    th.set_num_threads(1)  # one thread per group: parallel groups on separate cores
    started = time.time()
    tasks = group.runs
    vectorised = group.evaluates_vectorised()
    records = [new_record(task, group_size=len(tasks), **group.record_entries()) for task in tasks]
    checkpoints = group_checkpoints(tasks)
    run_warnings = RunWarnings()
    built: BuiltGroup | None = None
    group_error = None
    try:
        with run_warnings.capture(), contextlib.redirect_stdout(io.StringIO()):
            built = _build_group(trained_runs(tasks), checkpoints, run_warnings, vectorised)
            for record, schedule in zip(records, built.schedules[: len(records)], strict=True):
                schedule.note_in(record)
                if built.resumed_from is not None:
                    record.resumed_from = built.resumed_from
            # (the runs of a group share their settings: the first one's schedule is every one's)
            built.schedules[0].learn(built.batched, built.callbacks, done=int(built.batched.agent_timesteps))
            if built.batched.compile_update:  # (paid once by the group: each record states it)
                for record in records:
                    record.compile_s = sum(built.batched.update_step.compile_s.values())
            _close_group(built.batched, built.evaluations)
    except Exception as error:  # the whole group failed (building it, or training)
        group_error = (f"{type(error).__name__}: {error}", traceback.format_exc())
    evaluations = built.evaluations if built is not None else None
    wall_time_before = built.wall_time_before if built is not None else 0.0
    wall_time_s = (time.time() - started + wall_time_before) / len(tasks)  # the group's time, shared by its runs
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


def trained_runs(tasks: list[RunTask]) -> list[RunTask]:
    """
    The runs that a group's BatchedTD3 trains: the group's, and for a lone run of the compiled engine a copy of it
    beside it (trained, never recorded). Compiled, one agent alone takes other arithmetic than in a group of two or
    more (measured on torch 2.13's CPU build: ``tests/integration/test_batched_compiled.py``), so that engine never
    trains an agent alone: a lone run costs two agents' steps, and its record is the one it has in any group.
    """
    if len(tasks) == 1 and tasks[0].compile_update:
        return [tasks[0], dataclasses.replace(tasks[0], record=None, keep_model=False, tensorboard_log=None)]
    return tasks


def _close_group(batched: Any, evaluations: AgentEvaluations) -> None:
    batched.get_env().close()
    for evaluator in evaluations.evaluators:
        evaluator.eval_env.close()


@dataclass
class BuiltGroup:
    """
    A group ready to learn: fresh, or brought to its last checkpoint.

    :param batched: the group's BatchedTD3
    :param schedules: each run's budget, evaluations and ``learn()`` arguments
    :param evaluations: the agents' evaluations
    :param callbacks: every callback of its ``learn()`` (the evaluations, the checkpoints)
    :param resumed_from: the step (per agent) of the checkpoint it resumes (``None``: a fresh group)
    :param wall_time_before: the wall time of the groups it resumes
    """

    batched: Any
    schedules: list[RunSchedule]
    evaluations: AgentEvaluations
    callbacks: list[BaseCallback]
    resumed_from: int | None = None
    wall_time_before: float = 0.0


def _shared(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """The resolved hyperparameters of a task that the agents of a group share: all but the mixable switches."""
    return {key: value for key, value in hyperparams.items() if key not in MIXABLE_SWITCHES}


def _build_group(
    tasks: list[RunTask], checkpoints: RunCheckpoints | None, run_warnings: RunWarnings, vectorised: bool
) -> BuiltGroup:
    """
    The batched model of the group, from its last checkpoint when there is one it can resume, else fresh.

    :param vectorised: evaluate the agents in lockstep (:class:`AgentEvaluations`)
    """

    latest = checkpoints.latest() if checkpoints is not None else None
    for attempt in (latest, None) if latest is not None else (None,):
        agents: list[Any] = []
        managers: list[Any] = []
        schedules: list[RunSchedule] = []
        evaluators: list[OverestimationEvalCallback] = []
        streams: list[AgentStream] = []
        for task in tasks:
            set_random_seed(task.seed)  # as the process engine does before building run k
            manager = make_manager(task)
            model, _ = manager.setup_experiment()
            if manager.callbacks or manager.normalize:
                raise ValueError("the batched engine runs no zoo callback: entries and no normalize: True")
            if _shared(task.hyperparams) != _shared(tasks[0].hyperparams):
                raise ValueError(f"the runs of a batched group need the same hyperparameters; {task.variant}'s differ")
            schedule = RunSchedule.of(task, manager, model.gamma)
            agents.append(model)
            managers.append(manager)
            schedules.append(schedule)
            evaluators.append(schedule.make_evaluator(manager, task.seed))
            # where the process engine starts learning run k: its random streams from here on are agent k's
            streams.append(AgentStream.of_process(model.action_space, model.device))
        fresh = BatchedTD3.from_agents(agents, managers[0]._hyperparams, streams, compile_update=tasks[0].compile_update)
        evaluations = AgentEvaluations(agents, evaluators, vectorised)
        checkpointer, episodes = add_checkpointer(
            fresh, tasks[0], checkpoints, str(managers[0].env_name), evaluations, run_warnings
        )
        callbacks = [evaluations, *([checkpointer] if checkpointer is not None else [])]
        if attempt is None:
            return BuiltGroup(fresh, schedules, evaluations, callbacks)

        def load(folder: Path, fresh: Any = fresh) -> Any:
            # SB3's load of the whole batched model (weights, Adam moments, counters), on the fresh one's envs
            return BatchedTD3.load(
                folder / MODEL_FILE, env=fresh.get_env(), device=fresh.device, force_reset=False,
                compile_update=fresh.compile_update,
            )  # fmt: skip

        def close(fresh: Any = fresh, evaluations: AgentEvaluations = evaluations) -> None:
            _close_group(fresh, evaluations)

        batched, state = try_resume(attempt, fresh, checkpointer, episodes, close, load)
        if state is None:
            continue
        return BuiltGroup(batched, schedules, evaluations, callbacks, int(batched.agent_timesteps), state["wall_time_s"])
    raise AssertionError("unreachable")
