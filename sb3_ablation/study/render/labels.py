"""How the report gives a verdict (every table, sentence and JSON field), one formatter for all:
:func:`qualified_verdict`.

- An ``equivalent`` where every run of both arms failed says nothing about the component: it reads
  :data:`CANNOT_TELL_FLOOR`; one where both arms sit at the task's ceiling is true by construction (the margin and the
  ceiling tolerance are of one size): it reads :data:`CANNOT_TELL_CEILING`
  (:func:`~sb3_ablation.study.analyse.learning.equivalence_label`).
- Under the ``partitioned`` rule, one whose seeds cannot rule out rare failures of the variant that would cost the
  margin is withheld with its reason in one line (``cannot tell: 10 seeds cannot rule out ...``,
  :func:`~sb3_ablation.study.analyse.two_part.rare_failure_guard`).
- One where an arm has failures the return test cannot see is withheld (``unresolved (failures in an arm)``), and so
  is a factorial effect's averaged over floor cells (``unresolved (averaged over floor cells)``,
  :func:`~sb3_ablation.study.analyse.learning_region.floor_label`); a ``differs`` averaged over floor cells keeps its
  verdict with the label (``differs (averaged over floor cells)``).
- A number that is not a verdict under the plan's error control (a secondary outcome, a family of one, seeds outside
  the plan's) is :data:`DESCRIPTIVE`: printed as an estimate with its interval, never in a verdict's words.

Only a plain ``differs`` or ``equivalent`` is printed in bold (:func:`~sb3_ablation.study.render.tables.verdict_cell`).
In report.json ``verdict`` is the verdict as shown, ``test_verdict`` the test's own result and ``label`` what changed it
(:func:`~sb3_ablation.study.render.json_parts.verdict_json`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT
from sb3_ablation.study.analyse.learning_region import AT_FLOOR, AVERAGED_OVER_FLOOR
from sb3_ablation.study.analyse.two_part import FAILURES_IN_AN_ARM, RARE_FAILURES

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.learning import EnvLearning

#: an ``equivalent`` where both arms sit at the task's ceiling, as the report gives it
CANNOT_TELL_CEILING = "cannot tell: both arms solve the task at this budget"
#: an ``equivalent`` where no run of either arm learned, as the report gives it
CANNOT_TELL_FLOOR = "cannot tell: neither arm learns"
#: the shown verdict of a number that is not a verdict under the plan's error control
DESCRIPTIVE = "descriptive"
#: the regimes in plain words, where a label names them (an aggregate's ``at floor on Hopper-v5``)
PLAIN_REGIMES = {AT_FLOOR: "neither arm learns", AT_CEILING: "both arms solve the task"}


def qualified_verdict(verdict: str, label: str | None) -> str:
    """
    A verdict as the report gives it (module docstring); every other verdict, and one without a label, as it is.

    :param verdict: the comparison's verdict (the test's)
    :param label: what it carries (:attr:`~sb3_ablation.study.analyse.learning.EnvLearning.labels` of a variant, a
        factorial effect's label, an aggregate's; ``None``: none)
    """
    if label is None:
        return verdict
    if verdict == DIFFERS and label == AVERAGED_OVER_FLOOR:
        return f"{DIFFERS} ({AVERAGED_OVER_FLOOR})"
    if verdict != EQUIVALENT:
        return verdict
    if label in (FAILURES_IN_AN_ARM, AVERAGED_OVER_FLOOR):
        return f"unresolved ({label})"
    if label == AT_FLOOR:
        return CANNOT_TELL_FLOOR
    if label == AT_CEILING:
        return CANNOT_TELL_CEILING
    if is_rare_failures(label):
        return label
    return f"{verdict} ({plain_label(label)})"


def is_rare_failures(label: str | None) -> bool:
    """Whether a label is the line of :func:`~sb3_ablation.study.analyse.two_part.rare_failure_guard`."""
    return label is not None and label.startswith(RARE_FAILURES)


def plain_label(label: str) -> str:
    """A label with its regimes in plain words (``at floor on Hopper-v5`` -> ``neither arm learns on Hopper-v5``)."""
    for regime, words in PLAIN_REGIMES.items():
        label = label.replace(regime, words)
    return label


def is_plain(shown: str) -> bool:
    """A verdict shown without a label or regime: the only ones printed in bold."""
    return shown in (DIFFERS, EQUIVALENT)


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
    """A comparison's label as its outcome takes it: ``at ceiling`` and the rare failures' guard (what failures would
    cost, in return units) only for an outcome in return units."""
    return None if (label == AT_CEILING or is_rare_failures(label)) and not is_return else label


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
        rare = [label for label in found.values() if is_rare_failures(label)]
        if rare:  # withheld on one task, withheld for the aggregate
            labels[variant] = rare[0]
            continue
        by_label: dict[str, list[str]] = {}
        for env, label in found.items():
            if label is not None:
                by_label.setdefault(label, []).append(env)
        labels[variant] = "; ".join(f"{label} on {', '.join(envs)}" for label, envs in by_label.items()) or None
    return labels
