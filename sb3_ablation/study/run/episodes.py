"""The episodes of one evaluation: which ones (:func:`evaluation_seed`) and how they are run (:func:`run_episodes`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, is_vecenv_wrapped

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


def run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, seed: int, time_limit: int | None) -> list[EvalEpisode]:
    """
    The episodes of one evaluation, env 0's first: :func:`~stable_baselines3.common.evaluation.evaluate_policy`'s loop
    (episode counts per env fixed in advance, so short episodes are not favoured; deterministic ``predict``), keeping
    the states and actions of the first ``time_limit`` steps and the rewards of all steps; the score is the
    ``Monitor``'s return of the first ``time_limit`` steps
    (:class:`~sb3_ablation.study.run.overestimation.ReturnPastTimeLimit` puts it in the info).

    :param model: the policy
    :param env: the evaluation env (its env ``j`` is seeded ``seed + j``)
    :param n_episodes: episodes in all
    :param seed: the seed of env 0's first episode
    :param time_limit: ``T``, the steps scored (``None``: all)
    """
    n_envs = env.num_envs
    monitored = is_vecenv_wrapped(env, VecMonitor) or env.env_is_wrapped(Monitor)[0]
    targets = [(n_episodes + i) // n_envs for i in range(n_envs)]
    finished: list[list[EvalEpisode]] = [[] for _ in range(n_envs)]
    running = [EvalEpisode() for _ in range(n_envs)]
    env.seed(seed)  # env j's first episode gets seed + j
    observations = env.reset()
    states = None
    episode_starts = np.ones(n_envs, dtype=bool)
    while any(len(finished[i]) < targets[i] for i in range(n_envs)):
        actions, states = model.predict(
            observations,  # type: ignore[arg-type]  # VecEnvObs admits tuples; these envs give arrays or dicts
            state=states,
            episode_start=episode_starts,
            deterministic=True,
        )
        new_observations, rewards, dones, infos = env.step(actions)
        for i in range(n_envs):
            if len(finished[i]) >= targets[i]:
                continue
            episode, info = running[i], infos[i]
            if time_limit is None or len(episode.rewards) < time_limit:
                obs = observations
                episode.observations.append({k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i])
                episode.actions.append(np.asarray(actions[i]))
            episode.rewards.append(float(rewards[i]))
            episode_starts[i] = dones[i]
            if "time_limit_return" in info:
                episode.score = float(info["time_limit_return"])
            if not dones[i] or (monitored and "episode" not in info):
                continue  # a "done" that is no episode end for Monitor (e.g. a lost life) does not count either
            if episode.score is None:
                # Monitor's return, as evaluate_policy takes it; without Monitor the sum of the first T rewards
                episode.score = float(info["episode"]["r"]) if monitored else float(np.sum(episode.rewards[:time_limit]))
            episode.terminated = not info.get("TimeLimit.truncated", False)
            finished[i].append(episode)
            running[i] = EvalEpisode()
        observations = new_observations
    return [episode for per_env in finished for episode in per_env]
