"""
Checkpoints of a run (or batched group) and resuming from them.

Checkpoints (:class:`RunCheckpointCallback`) are taken at the first rollout start after every ``checkpoint_freq``
steps, once that step's gradient updates are done, through
:class:`~sb3_ablation.study.store.checkpoints.RunCheckpoints` (the model, the filled part of its replay buffer, the
VecNormalize statistics and the run's state). The training envs themselves (e.g. Box2D or MuJoCo simulators) are not
picklable in general, so :class:`EpisodeReplay` keeps what brings each one back: its random generator's state and
the arguments of its last reset, and the actions of its episode since. Resuming (:func:`try_resume`) loads the
model (rl_zoo3's ``--trained-agent`` continuation, or the batched model's ``load``) and restores its replay buffer,
resets each env from its saved generator state and steps it through its episode's actions again (the envs are
deterministic given both; the observation reached must equal the checkpoint's, or the run starts over), then restores
the VecEnv wrappers' own state (e.g. VecNormalize's running return, VecFrameStack's stack), the action noise, the RNG
states (Python, NumPy, torch, the action space's) and the evaluation and diagnostics history. A resumed run ends
with exactly the result of an uninterrupted one.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

from sb3_ablation.common.random_streams import process_random_state, set_process_random_state
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.run_warnings import RunWarnings
from sb3_ablation.study.store.checkpoints import RunCheckpoints


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
    wrappers = []
    while isinstance(venv, VecEnvWrapper):
        wrappers.append(venv)
        venv = venv.venv
    return wrappers


def _rng_states(model: Any) -> dict[str, Any]:
    return {**process_random_state(), "action_space": copy.deepcopy(model.action_space.np_random.bit_generator.state)}


def _set_rng_states(model: Any, states: dict[str, Any]) -> None:
    set_process_random_state(states)
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
    :param run_warnings: the run's warnings (those so far are saved too: the resumed part will not raise them again)
    """

    def __init__(
        self,
        checkpoints: RunCheckpoints,
        checkpoint_freq: int,
        env_name: str,
        evaluator: Any,
        episodes: EpisodeReplay,
        run_warnings: RunWarnings,
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
        self.run_warnings.resume(state["warnings"])

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
            "warnings": self.run_warnings.messages(),
        }
        # the one copy of the live state
        self.checkpoints.save(self.model, self.env_name, copy.deepcopy(state), timesteps=steps)


def add_checkpointer(
    model: Any,
    task: RunTask,
    checkpoints: RunCheckpoints | None,
    env_name: str,
    evaluator: Any,
    run_warnings: RunWarnings,
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
    (it returns the model to continue, loaded from the checkpoint; without it ``model`` is, by rl_zoo3's
    continuation), then its replay buffer (``RunCheckpoints.restore_replay_buffer``), envs and RNGs
    (:func:`_resume`), then the callbacks' state (:meth:`RunCheckpointCallback.resume_from`).

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
        RunCheckpoints.restore_replay_buffer(folder, model)
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
