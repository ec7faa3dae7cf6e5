"""
Periodic evaluation: the return of the deterministic policy, the value overestimation of critic 1, and the training
diagnostics between evaluations.

**The overestimation measure.** At the states ``s_t`` the evaluation episodes visit and the actions ``a_t`` the policy
takes there, critic 1's ``Q1(s_t, a_t)`` is compared with the discounted return ``G_t = sum_j gamma^j r_{t+j}`` the
episode actually obtained from there. The critic learns the value *without* the time limit (SB3 bootstraps
time-limit truncations), so a return that stops at the time limit ``T`` misses the tail ``gamma^(T-t) V(s_T)``: on
average ``gamma (1 - gamma^T) / (T (1 - gamma))`` of the value for a constant reward (~24% on Pendulum, ~10% at
``T = 1000``, ``gamma = 0.99``), an artifact that looks like overestimation. So the evaluation episodes run *past* the
time limit, for the return only: the evaluation env's limit is ``T + k`` with ``k = ceil(log(0.01) / log(gamma))``
(:func:`tail_steps`, 228 steps at ``gamma = 0.98``, 459 at 0.99), the score of an episode (``mean_return``,
``episode_returns``) is its return over its first ``T`` steps only, exactly the number an evaluation cut at ``T``
gives, and the measure uses the states ``t < T`` with ``G_t`` summed to the episode's end (termination, or step
``T + k``). The return then misses at most ``gamma^(T+k-t) V(s_{T+k}) <= gamma^k V(s_{T+k}) < 1%`` of the value at
the end state; an episode that terminates has exact returns. Where an episode is cut at ``L`` steps by something
else (no :class:`ReturnPastTimeLimit` around the env, or an env's own truncation), only its states ``t <= L - k``
are measured, with the same bound. This is not the TD3 paper's procedure (Fujimoto et al., 2018, Fig. 1, compared Q
at states sampled from the replay buffer with Monte Carlo returns from those states): ours uses the states of the
evaluation episodes of the deterministic policy, with their returns run past the time limit.

Per evaluation the history (a run record's ``evaluations``) keeps, besides ``timesteps``, ``mean_return``,
``std_return`` and ``episode_returns``:

- ``overestimation``: mean of ``Q1(s_t, a_t) - G_t`` over the measured states (returns past the time limit),
- ``relative_overestimation``: ``overestimation / mean |G_t|`` over the same states,
- ``value_states``: how many states were measured,
- ``mean_q``, ``mean_discounted_return``, ``bias``: the measure of record format 2, kept for comparison: over all
  states ``t < T``, with ``G_t`` *cut at the time limit* (the artifact above included);

and beside it ``value_episodes`` (a run record's ``value_episodes``): per evaluation one summary per episode (same
order as ``episode_returns``), from which the numbers above can be recomputed (:func:`measure_from_episodes`):
``steps`` (steps the episode ran, up to ``T + k``), ``terminated`` (it ended by termination: exact returns),
``states``, ``q_sum``, ``return_sum``, ``abs_return_sum`` (over the measured states, which are its first ``states``
steps), ``cut_states`` (``min(steps, T)``), ``cut_q_sum``, ``cut_return_sum`` (over its first ``cut_states`` steps,
``G_t`` cut at ``T``).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, is_vecenv_wrapped, sync_envs_normalization

#: the evaluation seeds are drawn from this entropy, the run's seed and the evaluation's index
EVAL_SEED_ENTROPY = 10_000
#: the return past the time limit neglects at most this fraction of the value at its last state (``gamma^k``)
TAIL_TOLERANCE = 0.01
#: ``record["overestimation_method"]["name"]``
METHOD_NAME = "return past the time limit"


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


def tail_steps(gamma: float, tolerance: float = TAIL_TOLERANCE) -> int | None:
    """
    ``k``, the fewest steps with ``gamma^k <= tolerance``: how far past the time limit an evaluation episode runs so
    that its returns miss less than ``tolerance`` of the value (``None`` for ``gamma >= 1``: no finite ``k``).
    """
    if gamma >= 1:
        return None
    if gamma <= 0:
        return 0
    return math.ceil(math.log(tolerance) / math.log(gamma))


def overestimation_method(gamma: float, time_limit: int | None) -> dict[str, Any]:
    """``record["overestimation_method"]``: how the run's ``overestimation`` was measured."""
    return {
        "name": METHOD_NAME,
        "states": "every state t < time_limit of the evaluation episodes (deterministic policy)",
        "returns": "discounted to termination or to time_limit + tail_steps (where cut earlier at L: t <= L - tail_steps)",
        "gamma": gamma,
        "time_limit": time_limit,
        "tail_steps": tail_steps(gamma),
        "tail_tolerance": TAIL_TOLERANCE,
    }


def measure_from_episodes(value_episodes: list[dict[str, Any]]) -> dict[str, float | int]:
    """
    The overestimation of one evaluation from its ``value_episodes`` (see the module docstring): ``overestimation``,
    ``relative_overestimation`` and ``value_states`` (NaN where no state was measured).
    """
    states = sum(episode["states"] for episode in value_episodes)
    difference = sum(episode["q_sum"] - episode["return_sum"] for episode in value_episodes)
    abs_returns = sum(episode["abs_return_sum"] for episode in value_episodes)
    return {
        "overestimation": difference / states if states else float("nan"),
        "relative_overestimation": difference / abs_returns if abs_returns else float("nan"),
        "value_states": states,
    }


def evaluation_seed(run_seed: int, index: int) -> int:
    """
    The seed of the first episode of evaluation ``index`` (its episodes on the ``n`` eval envs start from this seed
    plus ``0..n-1``): the same for every variant of a run seed, so paired runs are evaluated on the same episodes.
    """
    return int(np.random.SeedSequence([EVAL_SEED_ENTROPY, run_seed, index]).generate_state(1)[0])


class ReturnPastTimeLimit(gym.Wrapper):
    """
    The outermost wrapper of each evaluation env, whose own time limit is ``time_limit + k``: at step ``time_limit``
    of an episode that goes on, it puts the score of its first ``time_limit`` steps in the info
    (``info["time_limit_return"]``, the ``Monitor``'s return as ``Monitor`` computes it had the episode ended there)
    and notes the env's random generator state, which the next unseeded reset restores. Then the next episode starts
    as it would have after a cut at ``time_limit``, even in envs whose steps draw random numbers (e.g. LunarLander).

    :param env: the env (wrapped in ``Monitor`` for the score; without it the callback sums the VecEnv's rewards)
    :param time_limit: ``T``, the step at which an episode's score is taken
    """

    def __init__(self, env: gym.Env, time_limit: int):
        super().__init__(env)
        self.score_time_limit = time_limit
        self.steps = 0
        self.generator_at_limit: Mapping[str, Any] | None = None
        self.monitor = _find_monitor(env)

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps == self.score_time_limit and not (terminated or truncated):
            self.generator_at_limit = copy.deepcopy(self.env.unwrapped.np_random.bit_generator.state)
            if self.monitor is not None:
                info["time_limit_return"] = round(sum(self.monitor.rewards), 6)  # Monitor's own formula
        return observation, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is None and self.generator_at_limit is not None:
            self.env.unwrapped.np_random.bit_generator.state = self.generator_at_limit
        self.generator_at_limit = None
        self.steps = 0
        return self.env.reset(seed=seed, options=options)


def _find_monitor(env: gym.Env) -> Monitor | None:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, Monitor):
            return env
        env = env.env
    return None


@dataclass
class _Episode:
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


class ActorCriticModel(Protocol):
    """What the evaluation reads of a model besides SB3's BaseAlgorithm: TD3's actor, critic and discount."""

    gamma: float
    actor: th.nn.Module
    critic: ContinuousCritic


class OverestimationEvalCallback(BaseCallback):
    """
    Every ``eval_freq`` environment steps (and before training and at its end), run ``n_eval_episodes`` episodes of the
    deterministic policy on a separate evaluation env; record their scores and the value overestimation of critic 1
    (see the module docstring: returns run past the time limit when the env's envs are wrapped in
    :class:`ReturnPastTimeLimit`).

    The episodes of one evaluation run side by side on the vectorized ``eval_env`` (one batched prediction per step,
    one batched Q evaluation per evaluation), with SB3's :func:`~stable_baselines3.common.evaluation.evaluate_policy`
    protocol: complete episodes, split evenly over the envs in advance so short episodes are not favoured, scored by
    ``Monitor``. Evaluation ``i`` seeds its envs with :func:`evaluation_seed` ``(seed, i)``, so it sees the same
    episodes in every run with that seed, and its result does not depend on earlier evaluations (a resumed run
    evaluates exactly like an uninterrupted one).

    Between evaluations it collects the training diagnostics of each ``train()`` call (the model's
    ``training_diagnostics``: ``q1_mean``, ...; see :mod:`sb3_ablation.common.training_stats`): per diagnostic, its mean
    over the ``train()`` calls since the previous evaluation that computed it (e.g. a Gaussian actor's ``actor_std``
    comes from the calls that updated the actor).

    ``self.history``: one list per key of the module docstring (``episode_returns`` per evaluation in seed order:
    env 0's episodes, then env 1's, ...); ``self.value_episodes``: the episode summaries; ``self.diagnostics``:
    ``timesteps`` and one list per diagnostic ever logged (``None`` where a window had no training). Non-finite
    returns, Q-values or network weights raise
    :class:`TrainingDivergedError`.

    :param eval_env: the evaluation env (wrapped in ``Monitor`` so episode returns are the env's own; each env wrapped
        last in :class:`ReturnPastTimeLimit` for the returns past the time limit)
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
                "overestimation",
                "relative_overestimation",
                "value_states",
            )
        }
        self.diagnostics: dict[str, list] = {"timesteps": []}
        #: per evaluation, the summary of each episode (kept beside ``history``, whose values are numbers)
        self.value_episodes: list[list[dict[str, Any]]] = []
        # diagnostics of the train() calls since the last evaluation, one value per call that computed it
        self._window: dict[str, list[float]] = {}
        self._seen_updates: int | None = None

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
        if not self.history["timesteps"] or self.history["timesteps"][-1] != self.num_timesteps:
            self.evaluate()

    def _maybe_evaluate(self) -> None:
        if self.num_timesteps >= self.next_eval:
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

    def evaluate(self) -> dict[str, Any]:
        """Run one evaluation now and append it to the history."""
        started = time.perf_counter()
        model = self.model
        if model.get_vec_normalize_env() is not None:
            # same observation statistics as training (as SB3's EvalCallback does)
            sync_envs_normalization(self.training_env, self.eval_env)

        episodes = self._run_episodes(evaluation_seed(self.seed, len(self.history["timesteps"])))
        episode_returns = [episode.final_score for episode in episodes]
        mean_return = float(np.mean(episode_returns))
        q_values = self._critic_1(
            [obs for episode in episodes for obs in episode.observations],
            [action for episode in episodes for action in episode.actions],
        )
        self._check_finite(mean_return, q_values)

        gamma = self.actor_critic.gamma
        tail = tail_steps(gamma)
        cut_returns, value_episodes, start = [], [], 0
        for episode in episodes:
            n_cut = len(episode.observations)  # the scored steps t < T
            q = q_values[start : start + n_cut]
            start += n_cut
            rewards = self._critic_rewards(np.array(episode.rewards))
            cut = discounted_returns(rewards[:n_cut], gamma)  # G_t cut at T (format 2's measure)
            full = discounted_returns(rewards, gamma)[:n_cut]  # G_t to the episode's end, past T
            n = _measured_states(n_cut, len(rewards), episode.terminated, tail)
            cut_returns.append(cut)
            value_episodes.append({
                "steps": len(rewards), "terminated": episode.terminated,
                "states": n, "q_sum": float(q[:n].sum()), "return_sum": float(full[:n].sum()),
                "abs_return_sum": float(np.abs(full[:n]).sum()),
                "cut_states": n_cut, "cut_q_sum": float(q.sum()), "cut_return_sum": float(cut.sum()),
            })  # fmt: skip
        discounted = np.concatenate(cut_returns)

        result = {
            "timesteps": int(self.num_timesteps),
            "mean_return": mean_return,
            "std_return": float(np.std(episode_returns)),
            "mean_q": float(np.mean(q_values)) if len(q_values) else float("nan"),
            "mean_discounted_return": float(np.mean(discounted)) if len(discounted) else float("nan"),
            "bias": float(np.mean(q_values - discounted)) if len(q_values) else float("nan"),
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
                f"eval at {result['timesteps']} steps: return {mean_return:.1f}, mean Q {result['mean_q']:.1f}, "
                f"overestimation {result['overestimation']:.1f} ({result['relative_overestimation']:.1%}), "
                f"bias cut at the time limit {result['bias']:.1f}"
            )
        return result

    def _run_episodes(self, seed: int) -> list[_Episode]:
        """
        The episodes of one evaluation, env 0's first: :func:`~stable_baselines3.common.evaluation.evaluate_policy`'s
        loop (episode counts per env fixed in advance, deterministic ``predict``), keeping the states and actions of
        the first ``T`` steps and the rewards of all steps; the score is the ``Monitor``'s return of the first ``T``.
        """
        env, n_envs, limit = self.eval_env, self.eval_env.num_envs, self.time_limit
        monitored = is_vecenv_wrapped(env, VecMonitor) or env.env_is_wrapped(Monitor)[0]
        targets = [(self.n_eval_episodes + i) // n_envs for i in range(n_envs)]
        finished: list[list[_Episode]] = [[] for _ in range(n_envs)]
        running = [_Episode() for _ in range(n_envs)]
        env.seed(seed)  # env j's first episode gets seed + j
        observations = env.reset()
        states = None
        episode_starts = np.ones(n_envs, dtype=bool)
        while any(len(finished[i]) < targets[i] for i in range(n_envs)):
            actions, states = self.model.predict(
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
                if limit is None or len(episode.rewards) < limit:
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
                    episode.score = float(info["episode"]["r"]) if monitored else float(np.sum(episode.rewards[:limit]))
                episode.terminated = not info.get("TimeLimit.truncated", False)
                finished[i].append(episode)
                running[i] = _Episode()
            observations = new_observations
        return [episode for per_env in finished for episode in per_env]

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


def _measured_states(cut_states: int, steps: int, terminated: bool, tail: int | None) -> int:
    """
    How many of an episode's first ``cut_states`` states have a known return: all of them when it terminated, else
    those at least ``tail`` steps before its last step (``t <= steps - tail``; none when ``tail`` is ``None``).
    """
    if terminated:
        return cut_states
    if tail is None:
        return 0
    return max(0, min(cut_states, steps - tail + 1))
