"""A study's evaluations as plain data for other tools: a tidy table (one row per env, variant, seed and evaluation)
and each run's evaluations in Stable-Baselines3's ``EvalCallback`` format (what rl-zoo's plot scripts read).

Both read the finished runs' records through the store (:func:`~sb3_ablation.study.store.runs.iter_runs`); failed
runs are left out, as in the report. :mod:`sb3_ablation.study.render.exports` writes them (``evaluations.csv`` next to
the report, and ``report --export zoo DIR``).

What the records hold per evaluation: the return of each evaluation episode (``episode_returns``, the score over its
first ``T`` steps), their mean and spread (``mean_return``, ``std_return``), the overestimation measure
(``overestimation``, ``relative_overestimation``, ``value_states``) and, per episode, its ``value_episodes`` summary
(steps run, termination, the sums of critic 1's ``Q1(s, a)`` and of the discounted returns over the measured states;
see :mod:`~sb3_ablation.study.run.overestimation`). Records written before the overestimation measure (e.g. the
committed ``pendulum`` study) hold the returns only.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from sb3_ablation.study.store.manifest import read_manifest
from sb3_ablation.study.store.runs import iter_runs
from sb3_ablation.switches import SWITCHES

#: the columns of :func:`evaluation_rows` before the switches (one column per switch follows, in ``SWITCHES`` order)
EVALUATION_COLUMNS = (
    "env",
    "variant",
    "algo",
    "seed",
    "evaluation",
    "timesteps",
    "n_episodes",
    "mean_return",
    "std_return",
    "q_estimate",
    "discounted_return",
    "overestimation",
    "relative_overestimation",
    "value_states",
)
#: every column of :func:`evaluation_rows`, in order
COLUMNS = (*EVALUATION_COLUMNS, *SWITCHES)


def _finished_runs(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of the finished runs (status ``ok``, with evaluations), by env and variant as the manifest lists
    them (others after, by name), then by seed."""
    manifest = read_manifest(out)
    envs, variants = list(manifest["envs"]), list(manifest["variants"])
    records = [r for r in iter_runs(out) if r.get("status") == "ok" and (r.get("evaluations") or {}).get("timesteps")]

    def order(record: dict[str, Any]) -> tuple[int, str, int, str, int]:
        env, variant = record["env"], record["variant"]
        return (
            envs.index(env) if env in envs else len(envs),
            env,
            variants.index(variant) if variant in variants else len(variants),
            variant,
            int(record["seed"]),
        )

    return sorted(records, key=order)


def _value_sums(episodes: list[dict[str, Any]] | None) -> tuple[float | None, float | None]:
    """``(mean Q1(s, a), mean discounted return)`` over the measured states of one evaluation (``None`` without)."""
    if not episodes:
        return None, None
    states = sum(episode["states"] for episode in episodes)
    if not states:
        return None, None
    return sum(episode["q_sum"] for episode in episodes) / states, sum(episode["return_sum"] for episode in episodes) / states


def _at(values: list[Any] | None, i: int) -> Any:
    """Entry ``i`` of a record's list (``None`` where the record has no such list or entry)."""
    return values[i] if values is not None and i < len(values) else None


def evaluation_rows(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """
    The tidy table of a study's evaluations: one row per env, variant, seed and evaluation of every finished run.

    Columns (:data:`COLUMNS`): ``env``, ``variant``, ``algo`` (rl-zoo's algorithm), ``seed``; ``evaluation`` (its
    index in the run, from 0) and ``timesteps`` (training steps done); ``n_episodes`` (evaluation episodes);
    ``mean_return`` and ``std_return`` (the mean and the standard deviation of the episodes' returns, as recorded);
    ``q_estimate`` and ``discounted_return`` (critic 1's mean ``Q1(s, a)`` and the mean discounted return obtained from
    the same measured states, on the critic's reward scale), ``overestimation`` (their difference, as recorded),
    ``relative_overestimation`` and ``value_states`` (how many states were measured); then one column per switch, the
    variant's value (``None`` for the reference rows, which have no switches). A value the record does not hold (no
    overestimation measure, a non-finite value stored as null) is ``None``.

    :param out: the study folder
    :return: the rows, as dicts keyed by column, ordered by env and variant (as the manifest lists them), seed and
        evaluation
    """
    rows = []
    for record in _finished_runs(out):
        evaluations: dict[str, list[Any]] = record["evaluations"]
        value_episodes = record.get("value_episodes") or []
        switches = record.get("switches") or {}
        for i, timesteps in enumerate(evaluations["timesteps"]):
            returns = _at(evaluations.get("episode_returns"), i)
            q_estimate, discounted_return = _value_sums(_at(value_episodes, i))
            row = {
                "env": record["env"],
                "variant": record["variant"],
                "algo": record.get("algo"),
                "seed": int(record["seed"]),
                "evaluation": i,
                "timesteps": int(timesteps),
                "n_episodes": len(returns) if returns is not None else None,
                "mean_return": _at(evaluations.get("mean_return"), i),
                "std_return": _at(evaluations.get("std_return"), i),
                "q_estimate": q_estimate,
                "discounted_return": discounted_return,
                "overestimation": _at(evaluations.get("overestimation"), i),
                "relative_overestimation": _at(evaluations.get("relative_overestimation"), i),
                "value_states": _at(evaluations.get("value_states"), i),
            }
            rows.append({**row, **{switch: switches.get(switch) for switch in SWITCHES}})
    return rows


@dataclass
class ZooRun:
    """
    One finished run's evaluations in Stable-Baselines3's ``EvalCallback`` format (``evaluations.npz``).

    :param env: the env id
    :param variant: the variant's name
    :param seed: the run's seed
    :param timesteps: the training steps of each evaluation, shape (n_evals,)
    :param results: the return of each evaluation episode, shape (n_evals, n_episodes); a record without per-episode
        returns gives the evaluation's mean return as its one column
    :param ep_lengths: each evaluation episode's length up to the time limit of its score, shape (n_evals, n_episodes),
        from the record's ``value_episodes``; NaN where the record holds no episode lengths
    """

    env: str
    variant: str
    seed: int
    timesteps: np.ndarray
    results: np.ndarray
    ep_lengths: np.ndarray


def _as_floats(values: list[float | None]) -> np.ndarray:
    return np.array([math.nan if value is None else value for value in values], dtype=np.float64)


def _episode_lengths(record: dict[str, Any], results: np.ndarray) -> np.ndarray:
    """
    Each evaluation episode's scored length: the steps it ran (``value_episodes``; an episode runs past the time
    limit ``T`` for its return only) cut at ``T``. NaN (for every episode) where the record does not hold them.
    """
    value_episodes = record.get("value_episodes") or []
    time_limit = (record.get("overestimation_method") or {}).get("time_limit")
    shape = results.shape
    if len(value_episodes) != shape[0] or any(len(episodes) != shape[1] for episodes in value_episodes):
        return np.full(shape, math.nan)
    steps = np.array([[episode["steps"] for episode in episodes] for episodes in value_episodes], dtype=np.int64)
    return np.minimum(steps, time_limit) if time_limit is not None else steps


def zoo_runs(out: str | os.PathLike[str]) -> list[ZooRun]:
    """
    Every finished run of a study in ``EvalCallback``'s format (see :class:`ZooRun`), ordered as
    :func:`evaluation_rows`.

    :param out: the study folder
    """
    runs = []
    for record in _finished_runs(out):
        evaluations = record["evaluations"]
        per_episode = evaluations.get("episode_returns") or []
        # every evaluation with the same number of episode returns (all(): none missing or empty)
        if len(per_episode) == len(evaluations["timesteps"]) and all(per_episode) and len(set(map(len, per_episode))) == 1:
            results = np.array([_as_floats(returns) for returns in per_episode])
        else:  # no (or uneven) per-episode returns: each evaluation's mean is all there is
            results = _as_floats(evaluations["mean_return"]).reshape(-1, 1)
        runs.append(
            ZooRun(
                env=record["env"],
                variant=record["variant"],
                seed=int(record["seed"]),
                timesteps=np.asarray(evaluations["timesteps"], dtype=np.int64),
                results=results,
                ep_lengths=_episode_lengths(record, results),
            )
        )
    return runs
