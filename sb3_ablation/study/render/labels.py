"""How the report gives a verdict (every table, sentence and JSON field): an ``equivalent`` carries the label of
:func:`~sb3_ablation.study.analyse.learning.equivalence_label` (``equivalent (at floor)``, ``equivalent (at ceiling)``),
one where an arm has failures the return test cannot see is withheld (``unresolved (failures in an arm)``), and so is
a factorial effect's averaged over floor cells (``unresolved (at floor)``,
:func:`~sb3_ablation.study.analyse.learning_region.floor_label`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.analyse.inference import EQUIVALENT
from sb3_ablation.study.analyse.learning_region import AT_FLOOR, AVERAGED_OVER_FLOOR
from sb3_ablation.study.analyse.two_part import FAILURES_IN_AN_ARM

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.learning import EnvLearning


def qualified_verdict(verdict: str, label: str | None) -> str:
    """
    A verdict as the report gives it (module docstring): ``equivalent`` with its label, or withheld where an arm has
    failures or a factorial effect averages over floor cells; every other verdict, and an ``equivalent`` without a
    label, as it is.

    :param verdict: the comparison's verdict
    :param label: what it carries (:attr:`~sb3_ablation.study.analyse.learning.EnvLearning.labels` of a variant, a
        factorial effect's label; ``None``: none)
    """
    if verdict != EQUIVALENT or label is None:
        return verdict
    if label == FAILURES_IN_AN_ARM:
        return f"unresolved ({label})"
    if label == AVERAGED_OVER_FLOOR:
        return f"unresolved ({AT_FLOOR})"
    return f"{verdict} ({label})"


def labels_of(learning: EnvLearning | None, is_return: bool = True) -> dict[str, str | None]:
    """
    The labels of a task's comparisons of one outcome (none where the task has no learning analysis). ``at ceiling``
    is about the return: an outcome in other units (overestimation) is not labelled by it; a floor or failures are
    about the runs, whatever is measured on them.

    :param is_return: the outcome is in return units
    """
    if learning is None:
        return {}
    return {v: shown_label(label, is_return) for v, label in learning.labels.items()}


def shown_label(label: str | None, is_return: bool = True) -> str | None:
    """A comparison's label as its outcome takes it: ``at ceiling`` only for an outcome in return units."""
    return None if label == AT_CEILING and not is_return else label


def aggregate_labels(learnings: list[EnvLearning], variants: list[str]) -> dict[str, str | None]:
    """
    The labels of an aggregate across tasks: a variant's ``equivalent`` there averages over every task, so it carries
    what any task's carries: withheld where a task has failures in an arm, else the tasks' floor and ceiling labels
    with their tasks (``at floor on Hopper-v5``); ``None`` where no task labels it.
    """
    labels: dict[str, str | None] = {}
    for variant in variants:
        found = {learning.env: learning.labels.get(variant) for learning in learnings}
        if FAILURES_IN_AN_ARM in found.values():
            labels[variant] = FAILURES_IN_AN_ARM
            continue
        by_label: dict[str, list[str]] = {}
        for env, label in found.items():
            if label is not None:
                by_label.setdefault(label, []).append(env)
        labels[variant] = "; ".join(f"{label} on {', '.join(envs)}" for label, envs in by_label.items()) or None
    return labels
