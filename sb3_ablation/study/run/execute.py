"""One run of a study, built exactly as ``sb3-ablation train`` builds it, checkpointed, and recorded.

A run is rl_zoo3's experiment: :class:`StudyRunManager` is the :class:`~sb3_ablation.zoo.experiment.
AblationExperimentManager` that ``train`` uses (same hyperparameter reading, preprocessing, env stack with wrappers,
VecNormalize, frame stacking and VecTransposeImage, zoo ``callback:`` entries, model constructor and seeding), told
only to write no log folder and to create no EvalCallback: the study's own evaluation takes its place. With the same
seed, a study run and ``sb3-ablation train`` therefore end with bit-identical weights on CPU.

Checkpoints (:class:`RunCheckpointCallback`) are taken at the first rollout start after every ``checkpoint_freq``
steps, once that step's gradient updates are done. The training envs themselves (e.g. Box2D or MuJoCo simulators) are
not picklable in general, so :class:`EpisodeReplay` keeps what brings each one back: its random generator's state and
the arguments of its last reset, and the actions of its episode since. Resuming reloads model, replay buffer and
VecNormalize statistics through rl_zoo3's ``--trained-agent`` continuation, resets each env from its saved generator
state and steps it through its episode's actions again (the envs are deterministic given both; the observation
reached must equal the checkpoint's, or the run starts over), then restores the VecEnv wrappers' own state (e.g.
VecNormalize's running return, VecFrameStack's stack), the action noise, the RNG states (Python, NumPy, torch, the
action space's) and the evaluation and diagnostics history. A resumed run ends with exactly the result of an
uninterrupted one.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib
import io
import os
import platform
import random
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sb3_ablation.study.plan.records import RunRecord, RunTask, timestamp
from sb3_ablation.study.store.checkpoints import RunCheckpoints, save_final_model
from sb3_ablation.study.store.runs import finite_or_none, write_run

#: most envs one evaluation runs side by side (its episodes are split evenly over them)
MAX_EVAL_ENVS = 16


def library_versions() -> dict[str, str]:
    """Versions of the libraries a run depends on, recorded with every run."""
    import gymnasium
    import stable_baselines3
    import torch

    import sb3_ablation

    return {
        "sb3_ablation": sb3_ablation.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def _zoo_manager_class() -> type:
    from sb3_ablation.zoo.experiment import AblationExperimentManager

    class StudyRunManager(AblationExperimentManager):
        """``train``'s experiment manager, writing no log folder (the study keeps its own files)."""

        def create_log_folder(self) -> None:
            pass

        def _save_config(self, saved_hyperparams: dict[str, Any]) -> None:
            pass

        #: T of the evaluation episodes' score (:class:`~sb3_ablation.study.run.evaluation.ReturnPastTimeLimit`)
        eval_time_limit: int | None = None
        #: the training envs are wrapped last in :class:`EpisodeRecorder` (the run takes checkpoints)
        record_episodes: bool = False

        def create_envs(self, n_envs: int, eval_env: bool = False, no_log: bool = False) -> Any:
            outer: Callable[..., gym.Env]
            if eval_env and self.eval_time_limit is not None:
                outer = functools.partial(_wrap_evaluation_env, time_limit=self.eval_time_limit)
            elif not eval_env and self.record_episodes:
                outer = record_episodes
            else:
                return super().create_envs(n_envs, eval_env=eval_env, no_log=True)  # no Monitor CSV files
            # rl_zoo3 takes each env's wrapper from self.env_wrapper only (and puts it outside Monitor): for these envs
            # the zoo's own wrapper goes inside ours, for this call
            zoo_wrapper = self.env_wrapper
            self.env_wrapper = functools.partial(outer, inner=zoo_wrapper)
            try:
                return super().create_envs(n_envs, eval_env=eval_env, no_log=True)
            finally:
                self.env_wrapper = zoo_wrapper

    return StudyRunManager


def _wrap_evaluation_env(env: gym.Env, inner: Callable[[gym.Env], gym.Env] | None, time_limit: int) -> gym.Env:
    from sb3_ablation.study.run.evaluation import ReturnPastTimeLimit

    return ReturnPastTimeLimit(inner(env) if inner is not None else env, time_limit)


def make_manager(task: RunTask, trained_agent: str = "") -> Any:
    """
    The rl_zoo3 experiment of one run, as ``sb3-ablation train --algo <algo> --env <env> --seed <seed>
    --hyperparams <the study's resolved hyperparameters> --eval-freq -1`` sets it up.

    :param task: see :func:`sb3_ablation.study.plan.config.make_tasks`
    :param trained_agent: a checkpoint's ``model.zip`` to continue from (rl_zoo3's ``--trained-agent``)
    """
    from sb3_ablation.zoo.registry import register

    register()
    module, _, env_name = task.env.rpartition(":")
    if module:
        importlib.import_module(module)
    manager = _zoo_manager_class()(
        argparse.Namespace(),
        task.algo,
        env_name,
        log_folder=os.devnull,
        hyperparams=copy.deepcopy(task.hyperparams),
        trained_agent=trained_agent,
        eval_freq=-1,
        seed=task.seed,
        log_interval=-1,
        verbose=0,
        device=task.device,
        tensorboard_log=task.tensorboard_log or "",
    )
    manager.record_episodes = bool(task.record and task.checkpoint_freq)
    return manager


@contextlib.contextmanager
def captured_warnings(into: dict[str, None]) -> Iterator[None]:
    """Collect the warnings raised inside (as ``"Category: message"``, each once) instead of printing them."""

    def record(message: Warning | str, category: type[Warning], *_args: Any, **_kwargs: Any) -> None:
        into[f"{category.__name__}: {message}"] = None

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        # deprecations of libraries (e.g. SWIG types of Box2D at import) say nothing about the run
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.showwarning = record
        yield


class EpisodeRecorder(gym.Wrapper):
    """
    The outermost wrapper of a training env whose run takes checkpoints: it notes what brings the env back to where it
    is (``self.episode``): its random generator's state before its last reset and that reset's arguments, the actions
    it has been stepped with since, and the observation it returned last (to check a replay). What the env does is
    unchanged.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        #: ``generator``, ``reset_kwargs``, ``actions`` and ``last_obs`` of the episode so far
        self.episode: dict[str, Any] = {}

    def reset(self, **kwargs: Any) -> Any:
        generator = copy.deepcopy(self.env.unwrapped.np_random.bit_generator.state)
        obs, info = self.env.reset(**kwargs)
        # the observation is copied only when a checkpoint is taken
        self.episode = {"generator": generator, "reset_kwargs": copy.deepcopy(kwargs), "actions": [], "last_obs": obs}
        return obs, info

    def step(self, action: Any) -> Any:
        self.episode["actions"].append(copy.deepcopy(action))
        result = self.env.step(action)
        self.episode["last_obs"] = result[0]
        return result

    def replay(self, episode: dict[str, Any]) -> Any:
        """Reset from ``episode``'s generator state and arguments, step through its actions; return the last obs."""
        self.env.unwrapped.np_random.bit_generator.state = episode["generator"]
        obs, _ = self.reset(**episode["reset_kwargs"])
        for action in episode["actions"]:
            obs = self.step(action)[0]
        return obs


def record_episodes(env: gym.Env, inner: Callable[[gym.Env], gym.Env] | None = None) -> EpisodeRecorder:
    """rl_zoo3's ``env_wrapper`` of a training env that checkpoints: the zoo's own wrapper (``inner``), then ours."""
    return EpisodeRecorder(inner(env) if inner is not None else env)


#: the state each VecEnv wrapper carries from one step to the next, saved with a checkpoint (a wrapper not listed
#: here has state the checkpoint would miss: its run takes no checkpoints)
VEC_WRAPPER_STATE: dict[str, tuple[str, ...]] = {
    "VecNormalize": ("obs_rms", "ret_rms", "returns", "old_obs", "old_reward"),
    "VecFrameStack": ("stacked_obs",),
    "VecTransposeImage": (),
    "VecMonitor": ("episode_returns", "episode_lengths", "episode_count"),
}


class EpisodeReplay:
    """
    The training envs of a DummyVecEnv, each wrapped last in :class:`EpisodeRecorder`, and its VecEnv wrappers: their
    state for a checkpoint (:attr:`episodes`, :meth:`vec_wrapper_states`), and what brings fresh ones back to it.

    :param venv: the training VecEnv (VecEnv wrappers listed in :data:`VEC_WRAPPER_STATE` around a DummyVecEnv)
    :raise TypeError: the VecEnv is not a DummyVecEnv (its envs live in other processes), an env is not wrapped in
        :class:`EpisodeRecorder`, or a VecEnv wrapper's state is unknown
    """

    def __init__(self, venv: Any):
        from stable_baselines3.common.vec_env import DummyVecEnv

        self.base = venv.unwrapped
        if not isinstance(self.base, DummyVecEnv):
            raise TypeError(f"checkpoints need a DummyVecEnv (vec_env_class: dummy), not {type(self.base).__name__}")
        self.recorders = [env for env in self.base.envs if isinstance(env, EpisodeRecorder)]
        if len(self.recorders) != len(self.base.envs):
            raise TypeError("checkpoints need each training env wrapped last in EpisodeRecorder")
        self.wrappers = _vec_wrappers(venv)
        unknown = [type(wrapper).__name__ for wrapper in self.wrappers if type(wrapper).__name__ not in VEC_WRAPPER_STATE]
        if unknown:
            raise TypeError(f"the state of VecEnv wrapper {unknown[0]} is unknown to the checkpoints")

    @property
    def episodes(self) -> list[dict[str, Any]]:
        """Each env's episode so far (not copied: the checkpoint copies its whole state once)."""
        return [recorder.episode for recorder in self.recorders]

    def vec_wrapper_states(self) -> list[dict[str, Any]]:
        """Each VecEnv wrapper's state (:data:`VEC_WRAPPER_STATE`), outermost first; not copied either."""
        return [
            {name: getattr(wrapper, name) for name in VEC_WRAPPER_STATE[type(wrapper).__name__]} for wrapper in self.wrappers
        ]

    def replay(self, episodes: list[dict[str, Any]]) -> None:
        """
        Bring each env back to the end of its saved episode: reset it from the saved generator state with the saved
        arguments, then step it with the saved actions.

        :raise RuntimeError: an env does not come back to the saved observation
        """
        for index, (recorder, episode) in enumerate(zip(self.recorders, episodes, strict=True)):
            if not _same_obs(recorder.replay(episode), episode["last_obs"]):
                raise RuntimeError(f"training env {index} did not come back to the checkpoint's observation")
        self.base._reset_seeds()  # the load seeded the VecEnv's next reset; the uninterrupted run had none pending

    def set_vec_wrapper_states(self, states: list[dict[str, Any]]) -> None:
        """
        Restore :meth:`vec_wrapper_states` (a checkpoint may hold more of a wrapper's attributes: only its state is
        taken).
        """
        for wrapper, state in zip(self.wrappers, states, strict=True):
            for name in VEC_WRAPPER_STATE[type(wrapper).__name__]:
                setattr(wrapper, name, state[name])


def _same_obs(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[key], b[key]) for key in a)
    return np.array_equal(a, b)


def _vec_wrappers(venv: Any) -> list[Any]:
    """The VecEnv wrappers around the DummyVecEnv, outermost first."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    wrappers = []
    while isinstance(venv, VecEnvWrapper):
        wrappers.append(venv)
        venv = venv.venv
    return wrappers


def _rng_states(model: Any) -> dict[str, Any]:
    import torch as th

    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": th.get_rng_state(),
        "cuda": th.cuda.get_rng_state_all() if th.cuda.is_available() else None,
        "action_space": copy.deepcopy(model.action_space.np_random.bit_generator.state),
    }


def _set_rng_states(model: Any, states: dict[str, Any]) -> None:
    import torch as th

    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    th.set_rng_state(states["torch"])
    if states["cuda"] is not None and th.cuda.is_available():
        th.cuda.set_rng_state_all(states["cuda"])
    model.action_space.np_random.bit_generator.state = states["action_space"]


def run_timesteps(model: Any) -> int:
    """Environment steps of each run ``model`` trains: ``num_timesteps``, or per agent for a BatchedTD3."""
    return int(getattr(model, "agent_timesteps", model.num_timesteps))


class RunCheckpointCallback(BaseCallback):
    """
    Checkpoint the run at the first rollout start after every ``checkpoint_freq`` steps (so after that step's
    gradient updates), through :class:`~sb3_ablation.study.store.checkpoints.RunCheckpoints`. Steps are each run's
    (:func:`run_timesteps`): a batched group is checkpointed on its agents' schedule.

    :param checkpoints: where the checkpoints go
    :param checkpoint_freq: steps between checkpoints
    :param env_name: rl_zoo3's env name (folder of the VecNormalize statistics)
    :param evaluator: the run's evaluation callback (or a group's ``AgentEvaluations``): its ``state()`` is saved with
        the checkpoint
    :param episodes: the training envs' episodes so far
    :param run_warnings: warnings of the run so far (saved too: the resumed part will not raise them again)
    """

    def __init__(
        self,
        checkpoints: RunCheckpoints,
        checkpoint_freq: int,
        env_name: str,
        evaluator: Any,
        episodes: EpisodeReplay,
        run_warnings: dict[str, None],
    ):
        super().__init__()
        self.checkpoints = checkpoints
        self.checkpoint_freq = checkpoint_freq
        self.env_name = env_name
        self.evaluator = evaluator
        self.episodes = episodes
        self.run_warnings = run_warnings
        self.next_checkpoint = checkpoint_freq
        self.started = time.time()
        self.wall_time_before = 0.0  # of the runs this one resumes
        self._resumed_action_noise: Any = None

    def resume_from(self, state: dict[str, Any]) -> None:
        """
        Continue the checkpointed run's schedule, wall time, evaluation history, warnings and action noise (``learn()``
        resets the noise first).
        """
        self.next_checkpoint = state["next_checkpoint"]
        self.wall_time_before = state["wall_time_s"]
        self._resumed_action_noise = state["action_noise"]
        self.evaluator.set_state(state["evaluator"])
        self.run_warnings.update(dict.fromkeys(state["warnings"]))

    def _on_training_start(self) -> None:
        if self._resumed_action_noise is not None:
            self.model.action_noise = self._resumed_action_noise
            self._resumed_action_noise = None

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        steps = run_timesteps(self.model)
        if steps < self.next_checkpoint:
            return
        self.next_checkpoint = (steps // self.checkpoint_freq + 1) * self.checkpoint_freq
        state = {
            "rng": _rng_states(self.model),
            # SB3's load() drops these (it resets the env); the resumed envs must come back to them
            "last_obs": self.model._last_obs,
            "last_original_obs": self.model._last_original_obs,
            "episodes": self.episodes.episodes,
            "vec_wrappers": self.episodes.vec_wrapper_states(),
            # Ornstein-Uhlenbeck noise carries its last value; the zoo's continuation builds a fresh one
            "action_noise": self.model.action_noise,
            "wall_time_s": self.wall_time_before + time.time() - self.started,
            "evaluator": self.evaluator.state(),
            "next_checkpoint": self.next_checkpoint,
            "warnings": list(self.run_warnings),
        }
        # the one copy of the live state
        self.checkpoints.save(self.model, self.env_name, copy.deepcopy(state), timesteps=steps)


def add_checkpointer(
    model: Any,
    task: RunTask,
    checkpoints: RunCheckpoints | None,
    env_name: str,
    evaluator: Any,
    run_warnings: dict[str, None],
) -> tuple[RunCheckpointCallback | None, EpisodeReplay | None]:
    """
    The checkpoint callback of a run (or batched group) and the record of its training envs' episodes, or
    ``(None, None)`` when it takes no checkpoints (no checkpoint folder, ``checkpoint_freq`` 0, or no DummyVecEnv:
    then a warning says so).
    """
    if checkpoints is None or not task.checkpoint_freq:
        return None, None
    try:
        episodes = EpisodeReplay(model.get_env())
    except TypeError as error:
        warnings.warn(f"no checkpoints in this run: {error}")
        return None, None
    checkpointer = RunCheckpointCallback(checkpoints, task.checkpoint_freq, env_name, evaluator, episodes, run_warnings)
    return checkpointer, episodes


def try_resume(
    folder: Path,
    model: Any,
    checkpointer: RunCheckpointCallback | None,
    episodes: EpisodeReplay | None,
    close: Callable[[], None],
    load: Callable[[Path], Any] | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """
    Bring a freshly built run (or batched group) to its checkpoint in ``folder``: ``load(folder)`` first when given
    (it returns the model to continue, loaded from the checkpoint), then envs and RNGs (:func:`_resume`), then the
    callbacks' state (:meth:`RunCheckpointCallback.resume_from`).

    :param close: closes the run's envs (when the checkpoint cannot be resumed)
    :return: the model and the checkpoint's state, or ``(model, None)`` when the checkpoint cannot be resumed (a
        warning says why; the envs are closed and the run is to be built again and start over)
    """
    try:
        if checkpointer is None or episodes is None:
            raise RuntimeError("this run takes no checkpoints (checkpoint_freq 0, or no DummyVecEnv)")
        state = RunCheckpoints.read_state(folder)
        if load is not None:
            model = load(folder)
        _resume(model, state, episodes)
        checkpointer.resume_from(state)  # raises on an evaluator state of another record format
    except Exception as error:  # an unusable checkpoint: start over rather than fail the run
        warnings.warn(f"checkpoint {folder} not resumed ({type(error).__name__}: {error}); the run starts over")
        close()
        return model, None
    return model, state


def _resume(model: Any, state: dict[str, Any], episodes: EpisodeReplay) -> None:
    """
    Put the freshly built envs and the global RNGs where the checkpointed run was (the action noise follows at the
    start of ``learn()``: :meth:`RunCheckpointCallback.resume_from`).

    :raise RuntimeError: the envs do not come back to the checkpoint's observations (then the run starts over)
    """
    episodes.replay(state["episodes"])
    episodes.set_vec_wrapper_states(state["vec_wrappers"])
    model._last_obs = state["last_obs"]
    model._last_original_obs = state["last_original_obs"]
    _set_rng_states(model, state["rng"])


def execute_run(task: RunTask) -> dict[str, Any]:
    """
    Train and evaluate one (env, variant, seed), resuming from its last checkpoint if there is one; keep the final
    model next to the record and remove the checkpoints once done. Never raises for a failing run: the record says
    ``"status": "failed"`` with the error and traceback, and keeps the evaluations made before the failure (and the
    checkpoints, so that a retry resumes).

    :param task: see :func:`sb3_ablation.study.plan.config.make_tasks`
    :return: the run record as written (JSON-ready), also written to ``task.record`` when that is set
    """
    import torch as th

    # one thread per run: parallel runs on separate cores instead of threads fighting over them
    th.set_num_threads(1)
    started = time.time()
    record = new_record(task)
    record_path = Path(task.record) if task.record else None
    checkpoints = RunCheckpoints(record_path) if record_path is not None else None
    run_warnings: dict[str, None] = {}
    evaluator = None
    resumed_wall_time_s = 0.0  # of the runs this one resumes
    try:
        with captured_warnings(run_warnings), contextlib.redirect_stdout(io.StringIO()):
            model, manager, evaluator, callbacks, resumed_wall_time_s = _build_run(task, checkpoints, run_warnings, record)
            model.learn(
                record.n_timesteps - model.num_timesteps,
                callback=callbacks,
                reset_num_timesteps=model.num_timesteps == 0,
                **manager_learn_kwargs(manager),
            )
            model.get_env().close()
            evaluator.eval_env.close()
            if record_path is not None and task.keep_model:
                save_final_model(model, record, record_path)
        record.status = "ok"
    except Exception as error:  # a failing run is recorded, never stops the study
        record.error = f"{type(error).__name__}: {error}"
        record.traceback = traceback.format_exc()
    wall_time_s = time.time() - started + resumed_wall_time_s
    written = finish_record(record, evaluator, run_warnings, wall_time_s)
    if record_path is not None:
        write_run(record_path, written)
        if checkpoints is not None and record.status == "ok":
            checkpoints.remove()
    return written


def finish_record(record: RunRecord, evaluator: Any, run_warnings: dict[str, None], wall_time_s: float) -> dict[str, Any]:
    """The record with the run's evaluations, diagnostics, warnings and times, as written (ready for JSON)."""
    if evaluator is not None:
        record.evaluations = evaluator.history
        record.value_episodes = evaluator.value_episodes
        record.diagnostics = evaluator.diagnostics
        record.eval_time_s = evaluator.eval_time_s
    record.warnings = list(run_warnings)
    record.wall_time_s = wall_time_s
    record.finished_at = timestamp()
    return finite_or_none(record.to_json())


def new_record(task: RunTask, **entries: Any) -> RunRecord:
    """The record of a run before it has run: its settings, versions and host, ``"status": "failed"`` until done."""
    return RunRecord.of(task, versions=library_versions(), host=platform.node(), **entries)


def evaluation_time_limit(task: RunTask, manager: Any) -> int | None:
    """
    ``T``, the step at which an evaluation episode's score ends: the study's ``eval_max_episode_steps``, else the
    env's own time limit (``max_episode_steps`` of its env_kwargs or of its registration; ``None`` if it has none).
    """
    import gymnasium as gym

    return (
        task.eval_max_episode_steps
        or manager.env_kwargs.get("max_episode_steps")
        or gym.spec(manager.env_name.gym_id).max_episode_steps
    )


def make_evaluator(task: RunTask, manager: Any, record: RunRecord, gamma: float) -> Any:
    """
    The run's evaluation callback, on an evaluation env as train's EvalCallback gets it (no reward normalization,
    frozen statistics), with the training env's env_kwargs; its episodes are scored over their first ``T`` steps
    (:func:`evaluation_time_limit`) and run ``k`` steps further for the returns of the overestimation measure (see
    :mod:`sb3_ablation.study.run.evaluation`). Notes the run's ``n_timesteps``, ``eval_freq`` and
    ``overestimation_method`` in ``record``.

    :param gamma: the model's discount factor (sets ``k``)
    """
    from sb3_ablation.study.run.evaluation import OverestimationEvalCallback, overestimation_method, tail_steps

    record.n_timesteps = manager.n_timesteps
    eval_freq = task.eval_freq or max(1, manager.n_timesteps // 20)
    record.eval_freq = eval_freq
    time_limit, tail = evaluation_time_limit(task, manager), tail_steps(gamma)
    manager.eval_env_kwargs = dict(manager.env_kwargs)
    if time_limit is not None:
        manager.eval_env_kwargs["max_episode_steps"] = time_limit + (tail or 0)
        manager.eval_time_limit = time_limit
    record.overestimation_method = overestimation_method(gamma, time_limit)
    n_eval_envs = task.eval_envs or min(task.eval_episodes, MAX_EVAL_ENVS)
    return OverestimationEvalCallback(
        manager.create_envs(n_eval_envs, eval_env=True), eval_freq, task.eval_episodes, seed=task.seed
    )


def manager_learn_kwargs(manager: Any) -> dict[str, Any]:
    """The ``learn()`` arguments rl_zoo3's ``ExperimentManager.learn`` passes besides the callbacks."""
    if manager.log_interval > -1:
        return {"log_interval": manager.log_interval}
    return {"log_interval": None} if manager.log_interval < -1 else {}


def _build_run(
    task: RunTask, checkpoints: RunCheckpoints | None, run_warnings: dict[str, None], record: RunRecord
) -> tuple[Any, Any, Any, list[BaseCallback], float]:
    """
    The model (fresh or from the last checkpoint), its manager, the evaluation callback, all callbacks, and the wall
    time of the runs it resumes.
    """
    from stable_baselines3.common.utils import set_random_seed

    latest = checkpoints.latest() if checkpoints is not None else None
    for attempt in (latest, None) if latest is not None else (None,):
        # as rl_zoo3's train does before building anything
        set_random_seed(task.seed)
        manager = make_manager(task, trained_agent=str(attempt / "model.zip") if attempt is not None else "")
        model, _ = manager.setup_experiment()
        evaluator = make_evaluator(task, manager, record, model.gamma)
        checkpointer, episodes = add_checkpointer(model, task, checkpoints, str(manager.env_name), evaluator, run_warnings)
        callbacks = [*manager.callbacks, evaluator, *([checkpointer] if checkpointer is not None else [])]
        if attempt is None:
            return model, manager, evaluator, callbacks, 0.0

        def close(model: Any = model, evaluator: Any = evaluator) -> None:
            model.get_env().close()
            evaluator.eval_env.close()

        model, state = try_resume(attempt, model, checkpointer, episodes, close)
        if state is None:
            continue
        record.resumed_from = int(model.num_timesteps)
        return model, manager, evaluator, callbacks, state["wall_time_s"]
    raise AssertionError("unreachable")
