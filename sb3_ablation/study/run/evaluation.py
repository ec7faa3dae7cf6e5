"""
Periodic evaluation of a run (:class:`OverestimationEvalCallback`): the return of the deterministic policy, the value
overestimation of critic 1 (:mod:`~sb3_ablation.study.run.overestimation`), and the training diagnostics between
evaluations.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, cast

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, is_vecenv_wrapped, sync_envs_normalization

from sb3_ablation.study.run.episodes import EpisodeLoop, EvalEpisode, evaluation_seed, run_episodes
from sb3_ablation.study.run.overestimation import ReturnPastTimeLimit, episode_summary, measure_from_episodes

#: the keys of ``history``, in the order of a record's ``evaluations``
HISTORY_KEYS = (
    "timesteps",
    "mean_return",
    "std_return",
    "episode_returns",
    "overestimation",
    "relative_overestimation",
    "value_states",
)


class TrainingDivergedError(FloatingPointError):
    """Training produced NaN or infinite values (losses, network weights or Q-values)."""


class ActorCriticModel(Protocol):
    """What the evaluation reads of a model besides SB3's BaseAlgorithm: TD3's actor, critic and discount."""

    gamma: float
    actor: th.nn.Module
    critic: ContinuousCritic


class OverestimationEvalCallback(BaseCallback):
    """
    Every ``eval_freq`` environment steps (and before training and at its end), run ``n_eval_episodes`` episodes of the
    deterministic policy on a separate evaluation env; record their scores and the value overestimation of critic 1
    (:mod:`~sb3_ablation.study.run.overestimation`: returns run past the time limit when the env's envs are wrapped in
    :class:`~sb3_ablation.study.run.overestimation.ReturnPastTimeLimit`).

    The episodes of one evaluation run side by side on the vectorized ``eval_env`` (one batched prediction per step,
    one batched Q evaluation per evaluation), with SB3's :func:`~stable_baselines3.common.evaluation.evaluate_policy`
    protocol: complete episodes, split evenly over the envs in advance so short episodes are not favoured, scored by
    ``Monitor`` (:func:`~sb3_ablation.study.run.episodes.run_episodes`). Evaluation ``i`` seeds its envs with
    :func:`~sb3_ablation.study.run.episodes.evaluation_seed` ``(seed, i)``, so it sees the same
    episodes in every run with that seed, and its result does not depend on earlier evaluations (a resumed run
    evaluates exactly like an uninterrupted one).

    Between evaluations it collects the training diagnostics of each ``train()`` call (the model's
    ``training_diagnostics``: ``q1_mean``, ...; see :mod:`sb3_ablation.common.training_stats`): per diagnostic, its mean
    over the ``train()`` calls since the previous evaluation that computed it (e.g. a Gaussian actor's ``actor_std``
    comes from the calls that updated the actor).

    ``self.history``: one list per key of :data:`HISTORY_KEYS` (``episode_returns`` per evaluation in seed order:
    env 0's episodes, then env 1's, ...); ``self.value_episodes``: the episode summaries
    (:func:`~sb3_ablation.study.run.overestimation.episode_summary`); ``self.diagnostics``: ``timesteps`` and one list
    per diagnostic ever logged (``None`` where a window had no training). Non-finite returns, Q-values or network
    weights raise :class:`TrainingDivergedError`.

    The episodes of an evaluation may come from elsewhere: a caller that runs them itself (the batched engine, which
    computes all its agents' actions at once) drives :meth:`episode_loop` and hands them over (:meth:`hand_over`) for
    the evaluation that the next hook runs (:meth:`evaluation_due`, :meth:`final_evaluation_due`).

    :param eval_env: the evaluation env (wrapped in ``Monitor`` so episode returns are the env's own; each env wrapped
        last in ``ReturnPastTimeLimit`` for the returns past the time limit)
    :param eval_freq: evaluate every this many environment steps
    :param n_eval_episodes: episodes per evaluation
    :param seed: the run's seed (chooses the evaluation episodes)
    :param verbose: 1 prints each evaluation
    """

    def __init__(self, eval_env: VecEnv, eval_freq: int, n_eval_episodes: int = 10, seed: int = 0, verbose: int = 0):
        super().__init__(verbose=verbose)
        self.eval_env = eval_env
        self.eval_freq = eval_freq
        self.n_eval_episodes = n_eval_episodes
        self.seed = seed
        #: T, where an episode's score ends (``None``: at its end); the env runs episodes on past it for the returns
        self.time_limit: int | None = None
        if eval_env.env_is_wrapped(ReturnPastTimeLimit)[0]:
            self.time_limit = int(eval_env.get_attr("score_time_limit", indices=[0])[0])
            if is_vecenv_wrapped(eval_env, VecMonitor):
                raise ValueError("ReturnPastTimeLimit needs Monitor on each env, not VecMonitor (it scores T steps)")
        self.next_eval = 0
        self.eval_time_s = 0.0
        self.history: dict[str, list] = {key: [] for key in HISTORY_KEYS}
        self.diagnostics: dict[str, list] = {"timesteps": []}
        #: per evaluation, the summary of each episode (kept beside ``history``, whose values are numbers)
        self.value_episodes: list[list[dict[str, Any]]] = []
        # diagnostics of the train() calls since the last evaluation, one value per call that computed it
        self._window: dict[str, list[float]] = {}
        self._seen_updates: int | None = None
        # the next evaluation's episodes run by a caller, and its time running them (see hand_over)
        self._handed_over: tuple[list[EvalEpisode], float] | None = None

    # -- state that a checkpoint carries ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything this callback carries from one step to the next (restored by :meth:`set_state`)."""
        keys = ("next_eval", "eval_time_s", "history", "value_episodes", "diagnostics", "_window", "_seen_updates")
        return {key: getattr(self, key) for key in keys}

    def set_state(self, state: dict[str, Any]) -> None:
        """
        Restore :meth:`state`.

        :raise ValueError: the state is of another record format (its earlier evaluations lack this one's keys)
        """
        if set(state.get("history", {})) != set(self.history) or "value_episodes" not in state:
            raise ValueError("the checkpoint's evaluations are of another record format")
        self.next_eval, self.eval_time_s = state["next_eval"], state["eval_time_s"]
        self.history, self.value_episodes, self.diagnostics = state["history"], state["value_episodes"], state["diagnostics"]
        self._window, self._seen_updates = state["_window"], state["_seen_updates"]

    # -- callback hooks -----------------------------------------------------------------------------------------------

    def _on_training_start(self) -> None:
        self._maybe_evaluate()

    def _on_rollout_start(self) -> None:
        # right after train(): its values are in the window before a checkpoint is taken
        self.collect_diagnostics()

    def _on_step(self) -> bool:
        self.collect_diagnostics()
        self._maybe_evaluate()
        return True

    def _on_training_end(self) -> None:
        self.collect_diagnostics()
        if self.final_evaluation_due():
            self.evaluate()

    def evaluation_due(self, num_timesteps: int) -> bool:
        """Whether ``on_training_start`` or ``on_step`` evaluates when the model is at ``num_timesteps`` steps."""
        return num_timesteps >= self.next_eval

    def final_evaluation_due(self) -> bool:
        """Whether ``on_training_end`` evaluates (the last step was not evaluated)."""
        return not self.history["timesteps"] or self.history["timesteps"][-1] != self.num_timesteps

    def _maybe_evaluate(self) -> None:
        if self.evaluation_due(self.num_timesteps):
            self.evaluate()
            while self.next_eval <= self.num_timesteps:
                self.next_eval += self.eval_freq

    def collect_diagnostics(self) -> None:
        """
        Read the diagnostics of the last ``train()`` call, once per call (``_n_updates`` tells a new call); a model
        without ``training_diagnostics`` (e.g. SB3's own TD3) records none.
        """
        n_updates = getattr(self.model, "_n_updates", 0)
        if n_updates == self._seen_updates:
            return
        self._seen_updates = n_updates
        for key, value in getattr(self.model, "training_diagnostics", {}).items():
            self._window.setdefault(key, []).append(float(value))

    def _close_diagnostics_window(self) -> None:
        n_before = len(self.diagnostics["timesteps"])
        self.diagnostics["timesteps"].append(int(self.num_timesteps))
        for key in self._window.keys() - self.diagnostics.keys():
            self.diagnostics[key] = [None] * n_before  # a diagnostic that appears late: nothing before
        for key, values in self.diagnostics.items():
            if key != "timesteps":
                window = self._window.get(key)
                values.append(float(np.mean(window)) if window else None)
        self._window = {}

    # -- one evaluation -----------------------------------------------------------------------------------------------

    @property
    def actor_critic(self) -> ActorCriticModel:
        """The model evaluated, as the actor-critic model (a TD3 or DDPG) it is."""
        return cast(ActorCriticModel, self.model)

    def _sync_normalization(self) -> None:
        if self.model.get_vec_normalize_env() is not None:
            # same observation statistics as training (as SB3's EvalCallback does)
            sync_envs_normalization(self.training_env, self.eval_env)

    def _next_seed(self) -> int:
        return evaluation_seed(self.seed, len(self.history["timesteps"]))

    def episode_loop(self) -> EpisodeLoop:
        """
        The episodes of the next evaluation, for a caller that supplies the actions (the deterministic policy's, as
        ``predict(..., deterministic=True)`` gives them): its env seeded and reset as :meth:`evaluate` does.
        """
        self._sync_normalization()
        return EpisodeLoop(self.eval_env, self.n_eval_episodes, self._next_seed(), self.time_limit)

    def hand_over(self, episodes: list[EvalEpisode], seconds: float) -> None:
        """
        Give the next evaluation its episodes, run by the caller (:meth:`episode_loop`) in ``seconds`` (counted in
        ``eval_time_s``): the next hook that evaluates uses them instead of running its own.
        """
        self._handed_over = (episodes, seconds)

    def discard_handed_over(self) -> None:
        """Drop episodes handed over that no evaluation used."""
        self._handed_over = None

    def evaluate(self) -> dict[str, Any]:
        """
        Run one evaluation now and append it to the history: on the episodes handed over (:meth:`hand_over`), else on
        episodes run here with the model's ``predict``.
        """
        started = time.perf_counter()
        episodes: list[EvalEpisode] | None = None
        if self._handed_over is not None:
            episodes, seconds = self._handed_over
            self.eval_time_s += seconds
        self._handed_over = None
        if episodes is None:
            self._sync_normalization()
            episodes = run_episodes(self.model, self.eval_env, self.n_eval_episodes, self._next_seed(), self.time_limit)
        episode_returns = [episode.final_score for episode in episodes]
        mean_return = float(np.mean(episode_returns))
        q_values = self._critic_1(
            [obs for episode in episodes for obs in episode.observations],
            [action for episode in episodes for action in episode.actions],
        )
        self._check_finite(mean_return, q_values)

        value_episodes, start, gamma = [], 0, self.actor_critic.gamma
        for episode in episodes:
            scored = len(episode.observations)  # the scored steps t < T
            rewards = self._critic_rewards(np.array(episode.rewards))
            value_episodes.append(episode_summary(q_values[start : start + scored], rewards, episode.terminated, gamma))
            start += scored

        result = {
            "timesteps": int(self.num_timesteps),
            "mean_return": mean_return,
            "std_return": float(np.std(episode_returns)),
            "episode_returns": episode_returns,
            **measure_from_episodes(value_episodes),
        }
        for key, value in result.items():
            self.history[key].append(value)
        self.value_episodes.append(value_episodes)
        self._close_diagnostics_window()
        self.eval_time_s += time.perf_counter() - started
        if self.verbose >= 1:
            print(
                f"eval at {result['timesteps']} steps: return {mean_return:.1f}, "
                f"overestimation {result['overestimation']:.1f} ({result['relative_overestimation']:.1%})"
            )
        return result

    def _critic_rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Rewards on the scale the critic learned (VecNormalize may scale them during training)."""
        vec_normalize = self.model.get_vec_normalize_env()
        if vec_normalize is not None and vec_normalize.norm_reward:
            return vec_normalize.normalize_reward(rewards)
        return rewards

    def _critic_1(self, observations: list[Any], actions: list[np.ndarray]) -> np.ndarray:
        """Critic 1's Q(s, a) for a batch of visited states and the actions the policy took there."""
        if not observations:
            return np.zeros(0)
        policy = self.model.policy
        if isinstance(observations[0], dict):
            obs_batch: Any = {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}
        else:
            obs_batch = np.stack(observations)
        # predict() returned actions in the env's bounds; the critic was trained on actions scaled to [-1, 1]
        scaled_actions = policy.scale_action(np.stack(actions))
        with th.no_grad():
            obs_tensor, _ = policy.obs_to_tensor(obs_batch)
            action_tensor = th.as_tensor(scaled_actions, dtype=th.float32, device=policy.device)
            # (SB3 types the observations as a tensor; the critic's features extractor takes dict observations too)
            q_values = self.actor_critic.critic.q1_forward(obs_tensor, action_tensor)  # type: ignore[arg-type]
        return q_values.cpu().numpy().reshape(-1).astype(np.float64)

    def _check_finite(self, mean_return: float, q_values: np.ndarray) -> None:
        step = self.num_timesteps
        if not np.isfinite(mean_return):
            raise TrainingDivergedError(f"evaluation return is {mean_return} at step {step} (the env gave non-finite rewards)")
        for name, module in (("actor", self.actor_critic.actor), ("critic", self.actor_critic.critic)):
            for parameter in module.parameters():
                if not th.isfinite(parameter).all():
                    raise TrainingDivergedError(f"{name} weights became NaN/inf by step {step} (a NaN or infinite loss)")
        if not np.isfinite(q_values).all():
            raise TrainingDivergedError(f"critic Q-values are NaN/inf at step {step}")
