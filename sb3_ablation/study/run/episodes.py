"""
The episodes of one evaluation: which ones (:func:`evaluation_seed`) and how they are run (:class:`EpisodeLoop`,
driven by :func:`run_episodes`, or by a caller that supplies the actions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, is_vecenv_wrapped
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs

#: the evaluation seeds are drawn from this entropy, the run's seed and the evaluation's index
EVAL_SEED_ENTROPY = 10_000


def evaluation_seed(run_seed: int, index: int) -> int:
    """
    The seed of the first episode of evaluation ``index`` (its episodes on the ``n`` eval envs start from this seed
    plus ``0..n-1``): the same for every variant of a run seed, so paired runs are evaluated on the same episodes.
    """
    return int(np.random.SeedSequence([EVAL_SEED_ENTROPY, run_seed, index]).generate_state(1)[0])


@dataclass
class EvalEpisode:
    """One evaluation episode: the states and actions of its scored steps, the rewards of all its steps."""

    observations: list[Any] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    score: float | None = None
    terminated: bool = False

    @property
    def final_score(self) -> float:
        """The score of the episode once it has ended."""
        if self.score is None:
            raise ValueError("the episode has no score before it ends")
        return self.score


class EpisodeLoop:
    """
    The episodes of one evaluation, stepped by a caller that supplies the actions: the loop of
    :func:`run_episodes`, which drives it with ``model.predict``, so that other callers (the batched engine's
    evaluation of all its agents at once) run the same loop. While :attr:`running`, act on :attr:`observations` and
    :meth:`step`; then :attr:`episodes` holds the episodes, env 0's first.

    :param env: the evaluation env (its env ``j`` is seeded ``seed + j``; seeded and reset here)
    :param n_episodes: episodes in all
    :param seed: the seed of env 0's first episode
    :param time_limit: ``T``, the steps scored (``None``: all)
    """

    def __init__(self, env: VecEnv, n_episodes: int, seed: int, time_limit: int | None):
        self.env = env
        self.time_limit = time_limit
        n_envs = env.num_envs
        self._monitored = is_vecenv_wrapped(env, VecMonitor) or env.env_is_wrapped(Monitor)[0]
        self._targets = [(n_episodes + i) // n_envs for i in range(n_envs)]
        self._finished: list[list[EvalEpisode]] = [[] for _ in range(n_envs)]
        self._running = [EvalEpisode() for _ in range(n_envs)]
        env.seed(seed)  # env j's first episode gets seed + j
        #: the observations to act on next, one per env
        self.observations: VecEnvObs = env.reset()
        #: whether each env's last step ended its episode (``predict``'s ``episode_start``)
        self.episode_starts = np.ones(n_envs, dtype=bool)

    @property
    def running(self) -> bool:
        """Whether an env still has episodes to run (else :attr:`episodes` is complete)."""
        return any(len(finished) < target for finished, target in zip(self._finished, self._targets, strict=True))

    @property
    def episodes(self) -> list[EvalEpisode]:
        """The finished episodes, env 0's first."""
        return [episode for per_env in self._finished for episode in per_env]

    def step(self, actions: np.ndarray) -> None:
        """Step the envs with the actions taken in :attr:`observations` (one per env, in the env's bounds)."""
        observations, time_limit = self.observations, self.time_limit
        new_observations, rewards, dones, infos = self.env.step(actions)
        for i in range(self.env.num_envs):
            if len(self._finished[i]) >= self._targets[i]:
                continue
            episode, info = self._running[i], infos[i]
            if time_limit is None or len(episode.rewards) < time_limit:
                obs = observations
                episode.observations.append({k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i])
                episode.actions.append(np.asarray(actions[i]))
            episode.rewards.append(float(rewards[i]))
            self.episode_starts[i] = dones[i]
            if "time_limit_return" in info:
                episode.score = float(info["time_limit_return"])
            if not dones[i] or (self._monitored and "episode" not in info):
                continue  # a "done" that is no episode end for Monitor (e.g. a lost life) does not count either
            if episode.score is None:
                # Monitor's return, as evaluate_policy takes it; without Monitor the sum of the first T rewards
                score = float(info["episode"]["r"]) if self._monitored else float(np.sum(episode.rewards[:time_limit]))
                episode.score = score
            episode.terminated = not info.get("TimeLimit.truncated", False)
            self._finished[i].append(episode)
            self._running[i] = EvalEpisode()
        self.observations = new_observations


def run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, seed: int, time_limit: int | None) -> list[EvalEpisode]:
    """
    The episodes of one evaluation, env 0's first: :func:`~stable_baselines3.common.evaluation.evaluate_policy`'s loop
    (episode counts per env fixed in advance, so short episodes are not favoured; deterministic ``predict``), keeping
    the states and actions of the first ``time_limit`` steps and the rewards of all steps; the score is the
    ``Monitor``'s return of the first ``time_limit`` steps
    (:class:`~sb3_ablation.study.run.overestimation.ReturnPastTimeLimit` puts it in the info). The loop is
    :class:`EpisodeLoop`'s, driven by ``model.predict(..., deterministic=True)``.

    :param model: the policy
    :param env: the evaluation env (its env ``j`` is seeded ``seed + j``)
    :param n_episodes: episodes in all
    :param seed: the seed of env 0's first episode
    :param time_limit: ``T``, the steps scored (``None``: all)
    """
    loop = EpisodeLoop(env, n_episodes, seed, time_limit)
    states = None
    while loop.running:
        actions, states = model.predict(
            loop.observations,  # type: ignore[arg-type]  # VecEnvObs admits tuples; these envs give arrays or dicts
            state=states,
            episode_start=loop.episode_starts,
            deterministic=True,
        )
        loop.step(actions)
    return loop.episodes
