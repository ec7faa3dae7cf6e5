"""How far TD3 itself had come at a study's budget, and whether a task is at its ceiling.

*Budget progress* (:func:`budget_progress`): TD3's mean final-window return as a fraction of the span from the random
policy's return (measured by this package) to the reference at the paper's budget: 0 is random, 1 the paper's TD3.

*Ceiling* (:func:`ceiling`): TD3 and every variant compared end within ``ceiling_fraction`` of that span below the
reference, and their means within as much of each other: the task is solved at this budget, so an ``equivalent``
there says the task is too easy, not that TD3 does not need the component: it carries :data:`AT_CEILING`
(:func:`~sb3_ablation.study.render.labels.qualified_verdict` gives it with the verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.plan.learning_rules import LearningRules, paper_reference, random_return

AT_CEILING = "at ceiling"


@dataclass(frozen=True)
class BudgetProgress:
    """
    :param env: the task
    :param budget: the study's training steps
    :param td3_mean: TD3's mean final-window return over its seeds
    :param n: its seeds
    :param random: the random policy's return (measured)
    :param reference: the reference return at the paper's budget
    :param reference_budget: that budget
    :param fraction: ``(td3_mean - random) / (reference - random)``
    :param best: the largest single-seed return, as the same fraction
    """

    env: str
    budget: int | None
    td3_mean: float
    n: int
    random: float
    reference: float
    reference_budget: int
    fraction: float
    best: float


def budget_progress(env: str, td3_returns: Sequence[float] | np.ndarray, budget: int | None) -> BudgetProgress | None:
    """TD3's progress at the study's budget (module docstring); ``None``: no measured random return or reference."""
    measured, reference = random_return(env), paper_reference(env)
    values = np.asarray(td3_returns, dtype=float)
    values = values[np.isfinite(values)]
    if measured is None or reference is None or not len(values):
        return None
    span = reference[1] - measured[0]
    mean = float(values.mean())
    return BudgetProgress(
        env, budget, mean, len(values), measured[0], reference[1], reference[0], (mean - measured[0]) / span,
        (float(values.max()) - measured[0]) / span,
    )  # fmt: skip


@dataclass(frozen=True)
class Ceiling:
    """
    :param at_ceiling: every mean within ``distance`` below the reference (or above it) and within ``distance`` of
        each other
    :param distance: ``ceiling_fraction`` of the span, in return units
    :param lowest: the lowest mean (its variant)
    :param spread: the largest mean minus the lowest
    :param reference: the reference return at the paper's budget
    """

    at_ceiling: bool
    distance: float
    lowest: tuple[str, float]
    spread: float
    reference: float


def ceiling(env: str, means: Mapping[str, float], rules: LearningRules) -> Ceiling | None:
    """
    Whether TD3 and the variants (``means``: variant -> mean final-window return) sit at the task's ceiling; ``None``:
    no measured random return or reference, or no finite mean.
    """
    measured, reference = random_return(env), paper_reference(env)
    finite = {variant: float(m) for variant, m in means.items() if math.isfinite(m)}
    if measured is None or reference is None or not finite:
        return None
    distance = rules.ceiling_fraction * (reference[1] - measured[0])
    lowest = min(finite.items(), key=lambda item: item[1])
    spread = max(finite.values()) - lowest[1]
    at = lowest[1] >= reference[1] - distance and spread <= distance
    return Ceiling(bool(at), distance, lowest, spread, reference[1])
