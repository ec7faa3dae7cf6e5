"""
Before a study runs: about how long its runs will take on this machine, from a few timed steps.

One run of each env (its baseline's, else its first) is built as the study builds it and timed for a few steps of
each phase: building it, the warm-up of random actions (``learning_starts``), training steps, one evaluation. The
timing runs where the study's runs will: in as many fresh worker processes as the study starts (one torch thread
each), all timing at once, so that the pieces are timed with the cores as busy as the study will keep them, and the
workers' start-up (a fresh interpreter importing torch and the package) is timed too. A run's time is then
``build + warm-up steps x warm-up step + training steps x training step + evaluations x evaluation``, and the study's
the workers' start-up plus the sum over the runs to do, divided by the workers. Only the process engine is estimated
this way: the batched engine trains several runs in one process.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from dataclasses import dataclass, replace

from stable_baselines3.common.utils import set_random_seed

from sb3_ablation.common.utils import plural
from sb3_ablation.study.plan.config import StudyConfig, check_envs, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.backends import worker_pool
from sb3_ablation.study.run.episodes import run_episodes
from sb3_ablation.study.run.learning import RunSchedule
from sb3_ablation.study.run.manager import make_manager
from sb3_ablation.study.run.runner import check_before_writing
from sb3_ablation.study.store.runs import read_run, run_path

#: the steps timed in each phase (warm-up, training)
TIMED_STEPS = 200
#: the pieces of a run that are timed (the others are counted)
TIMED_PIECES = ("build", "warm_up_step", "training_step", "evaluation")
#: a study of fewer steps in all than this many times the timed steps is not timed (the timing would be a large share)
MIN_STEPS_TIMED = 20


@dataclass(frozen=True)
class RunCost:
    """
    The timed pieces of one run, in seconds.

    :param build: building the run (env, model, evaluation envs)
    :param warm_up_step: one step of the warm-up (random actions, no update)
    :param training_step: one step with its gradient update
    :param evaluation: one evaluation (its episodes)
    :param learning_starts: the run's warm-up, in steps
    :param n_timesteps: its budget
    :param evaluations: its evaluations
    """

    build: float
    warm_up_step: float
    training_step: float
    evaluation: float
    learning_starts: int
    n_timesteps: int
    evaluations: int

    @property
    def seconds(self) -> float:
        """The run's estimated time."""
        warm_up = min(self.learning_starts, self.n_timesteps)
        training = self.n_timesteps - warm_up
        return self.build + warm_up * self.warm_up_step + training * self.training_step + self.evaluations * self.evaluation


def time_run(task: RunTask, steps: int = TIMED_STEPS) -> RunCost:
    """
    Build ``task``'s run as the study does (writing nothing) and time ``steps`` steps of its warm-up and of its
    training, and one evaluation.

    :param task: the run
    :param steps: the steps timed in each phase
    """
    task = replace(task, record=None, checkpoint_freq=0, tensorboard_log=None)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a warm-up alone "trains nothing": that is what is timed)
        set_random_seed(task.seed)
        manager = make_manager(task)
        model, _ = manager.setup_experiment()
        schedule = RunSchedule.of(task, manager, model.gamma)
        evaluator = schedule.make_evaluator(manager, task.seed)
        build = time.perf_counter() - started
        learning_starts = int(model.learning_starts)
        model.learning_starts = steps  # the first `steps` steps are warm-up, the next `steps` train
        started = time.perf_counter()
        model.learn(steps)
        warm_up_step = (time.perf_counter() - started) / steps
        started = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
        training_step = (time.perf_counter() - started) / steps
        started = time.perf_counter()
        run_episodes(model, evaluator.eval_env, schedule.eval_episodes, task.seed, schedule.time_limit)
        evaluation = time.perf_counter() - started
        model.get_env().close()
        evaluator.eval_env.close()
    evaluations = schedule.n_timesteps // schedule.eval_freq + 1  # (and one before training)
    return RunCost(build, warm_up_step, training_step, evaluation, learning_starts, schedule.n_timesteps, evaluations)


def _time_run_in_worker(task: RunTask) -> tuple[float, RunCost]:
    """:func:`time_run` in a worker process, with the wall-clock time it began (the end of the worker's start-up)."""
    began = time.time()
    return began, time_run(task)


def mean_cost(costs: list[RunCost]) -> RunCost:
    """The mean of the timed pieces of one run timed in several workers at once."""
    timed = {name: sum(getattr(cost, name) for cost in costs) / len(costs) for name in TIMED_PIECES}
    return replace(costs[0], **timed)


def time_in_workers(tasks: list[RunTask], workers: int) -> tuple[float, list[RunCost]]:
    """
    Start ``workers`` worker processes as the study does and time each task's run in every worker at once.

    :param tasks: the runs to time, one after the other
    :param workers: the worker processes
    :return: the workers' start-up (from starting them to the last one's first piece of work, in seconds), and each
        task's timed pieces (the mean over the workers)
    """
    started = time.time()
    with worker_pool(workers) as pool:
        timings = [[pool.submit(_time_run_in_worker, task) for _ in range(workers)] for task in tasks]
        results = [[future.result() for future in timing] for timing in timings]
    start_up = max(began for began, _ in results[0]) - started
    return start_up, [mean_cost([cost for _, cost in timed]) for timed in results]


@dataclass(frozen=True)
class StudyEstimate:
    """
    :param runs: the runs to do
    :param workers: the runs in parallel
    :param seconds: the estimated time, the workers' start-up included (``None``: not timed)
    :param why_not: why it was not timed
    :param start_up: the workers' start-up, in seconds
    """

    runs: int
    workers: int
    seconds: float | None
    why_not: str = ""
    start_up: float = 0.0

    def line(self) -> str:
        """One line: the runs and the estimate, or why there is none."""
        runs = f"{plural(self.runs, 'run')} on {plural(self.workers, 'worker')}"
        if self.seconds is None:
            return f"{runs} ({self.why_not})"
        return (
            f"{runs}: about {format_duration(self.seconds)} on this machine at its present load (the workers' start-up, "
            f"{format_duration(self.start_up)}, and {TIMED_STEPS} timed steps of each phase of one run per env, in "
            "every worker at once)"
        )


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``1 h 35 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def estimate_study(pending: list[RunTask], workers: int, engine: str, baseline: str | None) -> StudyEstimate:
    """
    :param pending: the runs to do
    :param workers: the runs in parallel
    :param engine: ``process`` (timed), else not timed (``batched``, ``untimed``)
    :param baseline: the baseline variant, timed where present
    """
    if not pending:
        return StudyEstimate(0, workers, None, "nothing to do")
    if engine != "process":
        return StudyEstimate(len(pending), workers, None, f"not timed for the {engine} engine")
    total_steps = sum(int(float(task.hyperparams.get("n_timesteps", 0))) for task in pending)
    if total_steps < MIN_STEPS_TIMED * 2 * TIMED_STEPS:
        return StudyEstimate(len(pending), workers, None, "too short to be worth timing")
    timed = []
    for env in dict.fromkeys(task.env for task in pending):
        of_env = [task for task in pending if task.env == env]
        timed.append(next((task for task in of_env if task.variant == baseline), of_env[0]))
    workers = max(1, min(workers, len(pending)))
    try:
        start_up, timed_costs = time_in_workers(timed, workers)
    except Exception as error:  # a run that cannot be built fails in the study, recorded; here it is not timed
        return StudyEstimate(len(pending), workers, None, f"not timed: {type(error).__name__}: {error}".split("\n")[0])
    costs = {task.env: cost for task, cost in zip(timed, timed_costs, strict=True)}
    seconds = sum(replace(costs[task.env], n_timesteps=_budget(task, costs[task.env])).seconds for task in pending)
    return StudyEstimate(len(pending), workers, start_up + seconds / workers, start_up=start_up)


def _budget(task: RunTask, cost: RunCost) -> int:
    """The task's budget (a variant may override the env's)."""
    return int(float(task.hyperparams.get("n_timesteps", cost.n_timesteps)))


def study_tasks(config: StudyConfig) -> tuple[list[RunTask], list[RunTask]]:
    """
    The study's runs, and those of them that have no finished record yet (as
    :func:`~sb3_ablation.study.run.runner.run_study` finds them).
    """
    check_envs(config.envs)  # the checks run_study makes first, in its order
    variants = config.variant_objects
    resolved = resolve_hyperparams(config, variants)
    check_before_writing(config, variants, resolved)
    tasks = make_tasks(config, variants, resolved)
    pending = []
    for task in tasks:
        previous = read_run(run_path(config.out, task.env, task.variant, task.seed))
        if previous is None or previous.get("status") != "ok":
            pending.append(task)
    return tasks, pending
