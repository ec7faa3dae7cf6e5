"""
The overestimation measure of the study's evaluations, and the evaluation env's wrapper it needs.

At the states ``s_t`` the evaluation episodes visit and the actions ``a_t`` the policy takes there, critic 1's
``Q1(s_t, a_t)`` is compared with the discounted return ``G_t = sum_j gamma^j r_{t+j}`` the episode actually obtained
from there. The critic learns the value *without* the time limit (SB3 bootstraps time-limit truncations), so a return
that stops at the time limit ``T`` misses the tail ``gamma^(T-t) V(s_T)``: on average
``gamma (1 - gamma^T) / (T (1 - gamma))`` of the value for a constant reward (~24% on Pendulum, ~10% at ``T = 1000``,
``gamma = 0.99``), an artifact that looks like overestimation. So the evaluation episodes run *past* the time limit,
for the return only: the evaluation env's limit is ``T + k`` with ``k = ceil(log(0.01) / log(gamma))``
(:func:`tail_steps`, 228 steps at ``gamma = 0.98``, 459 at 0.99), the score of an episode (``mean_return``,
``episode_returns``) is its return over its first ``T`` steps only, exactly the number an evaluation cut at ``T``
gives (:class:`ReturnPastTimeLimit`), and the measure uses the states ``t < T`` with ``G_t`` summed to the episode's
end (termination, or step ``T + k``). The return then misses at most ``gamma^(T+k-t) V(s_{T+k}) <= gamma^k
V(s_{T+k}) < 1%`` of the value at the end state; an episode that terminates has exact returns. Where an episode is
cut at ``L`` steps by something else (no :class:`ReturnPastTimeLimit` around the env, or an env's own truncation),
only its states ``t <= L - k`` are measured, with the same bound. This is not the TD3 paper's procedure (Fujimoto et
al., 2018, Fig. 1, compared Q at states sampled from the replay buffer with Monte Carlo returns from those states):
ours uses the states of the evaluation episodes of the deterministic policy, with their returns run past the time
limit.

Per evaluation a run record's ``evaluations`` keep, besides ``timesteps``, ``mean_return``, ``std_return`` and
``episode_returns``:

- ``overestimation``: mean of ``Q1(s_t, a_t) - G_t`` over the measured states,
- ``relative_overestimation``: ``overestimation / mean |G_t|`` over the same states,
- ``value_states``: how many states were measured;

and beside them ``value_episodes``: per evaluation one summary per episode (:func:`episode_summary`, same order as
``episode_returns``), from which the numbers above are recomputed (:func:`measure_from_episodes`): ``steps`` (steps
the episode ran, up to ``T + k``), ``terminated`` (it ended by termination: exact returns), ``states``, ``q_sum``,
``return_sum`` and ``abs_return_sum`` (over the measured states, which are its first ``states`` steps), and
``max_abs_reward`` (the largest |reward| of all its steps, on the critic's scale: ``max_abs_reward / (1 - gamma)``
bounds the values of these rewards, the scale of the divergence rule of
:mod:`~sb3_ablation.study.plan.learning_rules`; records made before it lack it).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor

#: the return past the time limit neglects at most this fraction of the value at its last state (``gamma^k``)
TAIL_TOLERANCE = 0.01
#: ``record["overestimation_method"]["name"]``
METHOD_NAME = "return past the time limit"


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


def measured_states(scored_states: int, steps: int, terminated: bool, tail: int | None) -> int:
    """
    How many of an episode's first ``scored_states`` states have a known return: all of them when it terminated, else
    those at least ``tail`` steps before its last step (``t <= steps - tail``; none when ``tail`` is ``None``).
    """
    if terminated:
        return scored_states
    if tail is None:
        return 0
    return max(0, min(scored_states, steps - tail + 1))


def episode_summary(q_values: np.ndarray, rewards: np.ndarray, terminated: bool, gamma: float) -> dict[str, Any]:
    """
    One entry of ``value_episodes``: an episode's measured states and their sums.

    :param q_values: critic 1's ``Q1(s_t, a_t)`` at the episode's scored states ``t < T``
    :param rewards: the rewards of all its steps (past ``T`` too), on the critic's scale
    :param terminated: it ended by termination (its returns are exact)
    :param gamma: the discount
    """
    returns = discounted_returns(rewards, gamma)[: len(q_values)]  # G_t to the episode's end, past T
    n = measured_states(len(q_values), len(rewards), terminated, tail_steps(gamma))
    return {
        "steps": len(rewards),
        "terminated": terminated,
        "states": n,
        "q_sum": float(q_values[:n].sum()),
        "return_sum": float(returns[:n].sum()),
        "abs_return_sum": float(np.abs(returns[:n]).sum()),
        "max_abs_reward": float(np.abs(rewards).max()) if len(rewards) else 0.0,
    }


def measure_from_episodes(value_episodes: list[dict[str, Any]]) -> dict[str, float | int]:
    """
    The overestimation of one evaluation from its ``value_episodes``: ``overestimation``, ``relative_overestimation``
    and ``value_states`` (NaN where no state was measured).
    """
    states = sum(episode["states"] for episode in value_episodes)
    difference = sum(episode["q_sum"] - episode["return_sum"] for episode in value_episodes)
    abs_returns = sum(episode["abs_return_sum"] for episode in value_episodes)
    return {
        "overestimation": difference / states if states else float("nan"),
        "relative_overestimation": difference / abs_returns if abs_returns else float("nan"),
        "value_states": states,
    }


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
