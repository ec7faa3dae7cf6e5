"""Periodic evaluation with the TD3 paper's value-overestimation measure, and the training diagnostics between them."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

#: the ``train/<key>`` values that DDPG.train / AblatableTD3.train log and a run records (contracts: diagnostics)
DIAGNOSTIC_KEY = re.compile(r"^train/(q\d+_mean|twin_q_gap|target_q_mean|td_error|actor_std)$")
#: the evaluation seeds are drawn from this entropy, the run's seed and the evaluation's index
EVAL_SEED_ENTROPY = 10_000


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


def evaluation_seed(run_seed: int, index: int) -> int:
    """
    The seed of the first episode of evaluation ``index`` (its episodes on the ``n`` eval envs start from this seed
    plus ``0..n-1``): the same for every variant of a run seed, so paired runs are evaluated on the same episodes.
    """
    return int(np.random.SeedSequence([EVAL_SEED_ENTROPY, run_seed, index]).generate_state(1)[0])


class OverestimationEvalCallback(BaseCallback):
    """
    Every ``eval_freq`` environment steps (and before training and at its end), run ``n_eval_episodes`` episodes of the
    deterministic policy on a separate evaluation env and record the mean return and the value overestimation of
    critic 1 as in the TD3 paper (Fujimoto et al., 2018, Fig. 1): at every state and action visited in those episodes,
    ``Q1(s, a)`` against the discounted return actually obtained from there to the end of the episode
    (``sum_k gamma^k r_{t+k}``; for time-limit-truncated episodes the sum stops at the truncation, as in the paper).

    The episodes of one evaluation run side by side on the vectorized ``eval_env`` (one batched prediction per step,
    one batched Q evaluation per evaluation), with SB3's :func:`evaluate_policy` protocol: complete episodes, split
    evenly over the envs in advance so short episodes are not favoured. Evaluation ``i`` seeds its envs with
    :func:`evaluation_seed` ``(seed, i)``, so it sees the same episodes in every run with that seed, and its result
    does not depend on earlier evaluations (a resumed run evaluates exactly like an uninterrupted one).

    Between evaluations it collects the training diagnostics that ``train()`` logs (``train/q1_mean``, ...; see
    :data:`DIAGNOSTIC_KEY`): their mean over the ``train()`` calls since the previous evaluation.

    ``self.history``: lists ``timesteps``, ``mean_return``, ``std_return``, ``mean_q``, ``mean_discounted_return``,
    ``bias`` (mean of ``Q1(s, a) - G_t``) and ``episode_returns`` (per evaluation, the return of each episode in seed
    order); ``self.diagnostics``: ``timesteps`` and one list per diagnostic ever logged (``None`` where a window had
    no training). Non-finite returns, Q-values or network weights raise :class:`TrainingDivergedError`.

    :param eval_env: the evaluation env (wrapped in ``Monitor`` so episode returns are the env's own)
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
        self.next_eval = 0
        self.eval_time_s = 0.0
        self.history: dict[str, list] = {
            key: []
            for key in (
                "timesteps",
                "mean_return",
                "std_return",
                "mean_q",
                "mean_discounted_return",
                "bias",
                "episode_returns",
            )
        }
        self.diagnostics: dict[str, list] = {"timesteps": []}
        # train/<key> values logged since the last evaluation, one per train() call
        self._window: dict[str, list[float]] = {}
        self._seen_updates: int | None = None

    # -- state that a checkpoint carries ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything this callback carries from one step to the next (restored by :meth:`set_state`)."""
        keys = ("next_eval", "eval_time_s", "history", "diagnostics", "_window", "_seen_updates")
        return {key: getattr(self, key) for key in keys}

    def set_state(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)

    # -- callback hooks -----------------------------------------------------------------------------------------------

    def _on_training_start(self) -> None:
        self._maybe_evaluate()

    def _on_rollout_start(self) -> None:
        # right after train(): read its values before anything else (a checkpoint, a new logger) can intervene
        self.collect_diagnostics()

    def _on_step(self) -> bool:
        self.collect_diagnostics()
        self._maybe_evaluate()
        return True

    def _on_training_end(self) -> None:
        self.collect_diagnostics()
        if not self.history["timesteps"] or self.history["timesteps"][-1] != self.num_timesteps:
            self.evaluate()

    def _maybe_evaluate(self) -> None:
        if self.num_timesteps >= self.next_eval:
            self.evaluate()
            while self.next_eval <= self.num_timesteps:
                self.next_eval += self.eval_freq

    def collect_diagnostics(self) -> None:
        """Read the values the last ``train()`` call logged, once per call (``_n_updates`` tells a new call)."""
        n_updates = getattr(self.model, "_n_updates", 0)
        if n_updates == self._seen_updates:
            return
        self._seen_updates = n_updates
        for key, value in self.model.logger.name_to_value.items():
            match = DIAGNOSTIC_KEY.match(key)
            if match:
                self._window.setdefault(match.group(1), []).append(float(value))

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

    def evaluate(self) -> dict[str, Any]:
        """Run one evaluation now and append it to the history."""
        started = time.perf_counter()
        model = self.model
        if model.get_vec_normalize_env() is not None:
            # same observation statistics as training (as SB3's EvalCallback does)
            sync_envs_normalization(self.training_env, self.eval_env)

        n_envs = self.eval_env.num_envs
        trajectories: list[list[tuple[Any, np.ndarray, float]]] = [[] for _ in range(n_envs)]
        returns_by_env: list[list[float]] = [[] for _ in range(n_envs)]
        observations, actions, true_returns = [], [], []

        def collect(locals_: dict[str, Any], _globals: dict[str, Any]) -> None:
            # evaluate_policy calls this for each env whose episodes still count, with the obs the action was taken in
            i = locals_["i"]
            obs = locals_["observations"]
            obs_i = {key: value[i] for key, value in obs.items()} if isinstance(obs, dict) else obs[i]
            trajectories[i].append((obs_i, np.asarray(locals_["actions"][i]), float(locals_["reward"])))
            info = locals_["info"]
            if locals_["done"] and ("episode" in info or not locals_["is_monitor_wrapped"]):
                episode, trajectories[i] = trajectories[i], []
                rewards = np.array([step[2] for step in episode])
                returns_by_env[i].append(float(info["episode"]["r"]) if "episode" in info else float(rewards.sum()))
                observations.extend(step[0] for step in episode)
                actions.extend(step[1] for step in episode)
                true_returns.append(discounted_returns(self._critic_rewards(rewards), model.gamma))

        # env j's first episode gets seed + j
        self.eval_env.seed(evaluation_seed(self.seed, len(self.history["timesteps"])))
        evaluate_policy(
            model, self.eval_env, n_eval_episodes=self.n_eval_episodes, deterministic=True,
            return_episode_rewards=True, callback=collect, warn=False,
        )  # fmt: skip
        episode_returns = [value for per_env in returns_by_env for value in per_env]
        mean_return = float(np.mean(episode_returns))
        q_values = self._critic_1(observations, actions)
        discounted = np.concatenate(true_returns) if true_returns else np.zeros(0)
        self._check_finite(mean_return, q_values)

        result = {
            "timesteps": int(self.num_timesteps),
            "mean_return": mean_return,
            "std_return": float(np.std(episode_returns)),
            "mean_q": float(np.mean(q_values)) if len(q_values) else float("nan"),
            "mean_discounted_return": float(np.mean(discounted)) if len(discounted) else float("nan"),
            "bias": float(np.mean(q_values - discounted)) if len(q_values) else float("nan"),
            "episode_returns": episode_returns,
        }
        for key, value in result.items():
            self.history[key].append(value)
        self._close_diagnostics_window()
        self.eval_time_s += time.perf_counter() - started
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
