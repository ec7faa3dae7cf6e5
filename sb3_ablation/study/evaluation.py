"""Periodic evaluation with the TD3 paper's value-overestimation measure."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization


class TrainingDivergedError(FloatingPointError):
    """Training produced NaN or infinite values (losses, network weights or Q-values)."""


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """
    Discounted return from every step to the end of the episode: ``G_t = sum_k gamma^k r_{t+k}``.

    :param rewards: rewards of one episode, in order
    :param gamma: discount factor
    :return: ``G_t`` for each step ``t``
    """
    returns = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


class OverestimationEvalCallback(BaseCallback):
    """
    Every ``eval_freq`` environment steps (and before training and at its end), run ``n_eval_episodes`` episodes of the
    deterministic policy on a separate evaluation env and record the mean return and the value overestimation of
    critic 1 as in the TD3 paper (Fujimoto et al., 2018, Fig. 1): at every state and action visited in those episodes,
    ``Q1(s, a)`` against the discounted return actually obtained from there to the end of the episode
    (``sum_k gamma^k r_{t+k}``; for time-limit-truncated episodes the sum stops at the truncation, as in the paper).

    The history is in ``self.history``: lists ``timesteps``, ``mean_return``, ``std_return``, ``mean_q``,
    ``mean_discounted_return`` and ``bias`` (mean of ``Q1(s, a) - G_t``).
    Non-finite returns, Q-values or network weights raise :class:`TrainingDivergedError`.

    :param eval_env: the evaluation env (wrapped in ``Monitor`` so episode returns are the env's own)
    :param eval_freq: evaluate every this many environment steps
    :param n_eval_episodes: episodes per evaluation
    :param verbose: 1 prints each evaluation
    """

    def __init__(self, eval_env: VecEnv, eval_freq: int, n_eval_episodes: int = 10, verbose: int = 0):
        super().__init__(verbose=verbose)
        self.eval_env = eval_env
        self.eval_freq = eval_freq
        self.n_eval_episodes = n_eval_episodes
        self.next_eval = 0
        self.history: dict[str, list[float]] = {
            key: [] for key in ("timesteps", "mean_return", "std_return", "mean_q", "mean_discounted_return", "bias")
        }

    def _on_training_start(self) -> None:
        self.next_eval = self.num_timesteps
        self._maybe_evaluate()

    def _on_step(self) -> bool:
        self._maybe_evaluate()
        return True

    def _on_training_end(self) -> None:
        if not self.history["timesteps"] or self.history["timesteps"][-1] != self.num_timesteps:
            self.evaluate()

    def _maybe_evaluate(self) -> None:
        if self.num_timesteps >= self.next_eval:
            self.evaluate()
            while self.next_eval <= self.num_timesteps:
                self.next_eval += self.eval_freq

    def evaluate(self) -> dict[str, float]:
        """Run one evaluation now and append it to the history."""
        model = self.model
        if model.get_vec_normalize_env() is not None:
            # same observation statistics as training (as SB3's EvalCallback does)
            sync_envs_normalization(self.training_env, self.eval_env)

        n_envs = self.eval_env.num_envs
        trajectories: list[list[tuple[Any, np.ndarray, float]]] = [[] for _ in range(n_envs)]
        observations, actions, returns = [], [], []

        def collect(locals_: dict[str, Any], _globals: dict[str, Any]) -> None:
            # evaluate_policy calls this once per env per step, with the obs the action was taken in
            i = locals_["i"]
            obs = locals_["observations"]
            obs_i = {key: value[i] for key, value in obs.items()} if isinstance(obs, dict) else obs[i]
            trajectories[i].append((obs_i, np.asarray(locals_["actions"][i]), float(locals_["reward"])))
            if locals_["done"]:
                episode = trajectories[i]
                trajectories[i] = []
                rewards = np.array([step[2] for step in episode])
                observations.extend(step[0] for step in episode)
                actions.extend(step[1] for step in episode)
                returns.append(discounted_returns(self._critic_rewards(rewards), model.gamma))

        episode_returns, _ = evaluate_policy(
            model, self.eval_env, n_eval_episodes=self.n_eval_episodes, deterministic=True,
            return_episode_rewards=True, callback=collect, warn=False,
        )  # fmt: skip
        mean_return = float(np.mean(episode_returns))
        q_values = self._critic_1(observations, actions)
        true_returns = np.concatenate(returns) if returns else np.zeros(0)
        self._check_finite(mean_return, q_values)

        result = {
            "timesteps": int(self.num_timesteps),
            "mean_return": mean_return,
            "std_return": float(np.std(episode_returns)),
            "mean_q": float(np.mean(q_values)) if len(q_values) else float("nan"),
            "mean_discounted_return": float(np.mean(true_returns)) if len(true_returns) else float("nan"),
            "bias": float(np.mean(q_values - true_returns)) if len(q_values) else float("nan"),
        }
        for key, value in result.items():
            self.history[key].append(value)
        if self.verbose >= 1:
            print(
                f"eval at {result['timesteps']} steps: return {mean_return:.1f}, mean Q {result['mean_q']:.1f}, "
                f"discounted return {result['mean_discounted_return']:.1f}, bias {result['bias']:.1f}"
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
            q_values = self.model.critic.q1_forward(obs_tensor, action_tensor)
        return q_values.cpu().numpy().reshape(-1).astype(np.float64)

    def _check_finite(self, mean_return: float, q_values: np.ndarray) -> None:
        step = self.num_timesteps
        if not np.isfinite(mean_return):
            raise TrainingDivergedError(f"evaluation return is {mean_return} at step {step} (the env gave non-finite rewards)")
        for name, module in (("actor", self.model.actor), ("critic", self.model.critic)):
            for parameter in module.parameters():
                if not th.isfinite(parameter).all():
                    raise TrainingDivergedError(f"{name} weights became NaN/inf by step {step} (a NaN or infinite loss)")
        if not np.isfinite(q_values).all():
            raise TrainingDivergedError(f"critic Q-values are NaN/inf at step {step}")
