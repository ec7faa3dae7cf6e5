"""The critic's values against what the task's rewards allow: the largest |reward| of a run's evaluation episodes
(:func:`largest_abs_reward`), critic 1's largest |Q| at the end (:func:`critic_value`), and the rule of
:mod:`~sb3_ablation.study.plan.learning_rules` that a critic diverged when its |Q| is beyond ``q_bound_factor`` times
max |reward| / (1 - gamma) (:func:`reward_bound_diverged`), which needs no published reference. The failure rules
(:mod:`~sb3_ablation.study.analyse.run_fates`) and the overestimation outcome
(:mod:`~sb3_ablation.study.analyse.outcomes`, which averages only sound critics) both apply it.

The divergence rule needs the largest |reward| of the run's own evaluation episodes. Records made since
``max_abs_reward`` is in ``value_episodes`` hold it exactly; for older ones see :func:`largest_abs_reward`.
"""

from __future__ import annotations

import math

from sb3_ablation.study.analyse.results import RunCurves, StudyData

#: the discount where a study's hyperparameters give none (SB3's default)
DEFAULT_GAMMA = 0.99


def largest_abs_reward(run: RunCurves, gamma: float, time_limit: int | None) -> tuple[float, bool] | None:
    """
    The largest |reward| of a run's evaluation episodes, and whether it was recorded (``False``: the lower bound of
    the module docstring); ``None``: the run recorded no evaluation episodes.
    """
    episodes = [episode for evaluation in run.value_episodes for episode in evaluation]
    if episodes and all("max_abs_reward" in episode for episode in episodes):
        return max(float(episode["max_abs_reward"]) for episode in episodes), True
    bounds = []
    for returns, evaluation in zip(run.episode_returns, run.value_episodes, strict=False):
        for score, episode in zip(returns, evaluation, strict=False):
            scored = min(int(episode["steps"]), time_limit or int(episode["steps"]))
            if scored and math.isfinite(score):
                bounds.append(abs(float(score)) / scored)
            if episode.get("states"):
                bounds.append((1 - gamma) * float(episode["abs_return_sum"]) / int(episode["states"]))
    if not bounds and run.episode_returns:  # no per-episode summaries: the score over the time limit alone
        steps = time_limit or 1
        bounds = [abs(float(s)) / steps for returns in run.episode_returns for s in returns if math.isfinite(s)]
    return (max(bounds), False) if bounds else None


def critic_value(run: RunCurves) -> float | None:
    """
    Critic 1's largest |Q| at the last evaluation: the largest over its episodes of |mean Q1(s, a)| over the measured
    states (inf where not finite); else the training diagnostic ``q1_mean`` at the end; ``None``: neither recorded.
    """
    if run.value_episodes:
        values = [
            abs(float(episode["q_sum"]) / int(episode["states"])) if episode["q_sum"] is not None else math.inf
            for episode in run.value_episodes[-1]
            if episode.get("states")
        ]
        if values:
            return max(value if math.isfinite(value) else math.inf for value in values)
    if run.has("q1_mean"):
        value = run.final("q1_mean")
        return abs(value) if math.isfinite(value) else math.inf
    return None


def study_gamma(data: StudyData, env: str) -> float:
    """The discount of an env's runs (the study's hyperparameters; SB3's default where they give none or several)."""
    gammas = {hp.get("gamma", DEFAULT_GAMMA) for hp in data.manifest.get("hyperparams", {}).get(env, {}).values()}
    return float(next(iter(gammas))) if len(gammas) == 1 else DEFAULT_GAMMA


def reward_bound_diverged(run: RunCurves, gamma: float, time_limit: int | None, q_bound_factor: float) -> bool | None:
    """
    Critic 1's |Q| at the end is beyond ``q_bound_factor * max |reward| / (1 - gamma)`` (``None``: the run recorded no
    Q or no rewards).
    """
    reward, q = largest_abs_reward(run, gamma, time_limit), critic_value(run)
    if reward is None or q is None:
        return None
    return bool(q > q_bound_factor * reward[0] / (1 - gamma))
