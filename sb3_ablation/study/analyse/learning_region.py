"""Effects where TD3 learns: the learning region of a factorial and each component's effect within it.

A main effect averages a component's effect over every level of the others, cells where nothing learns included; a
component's effect there is zero by construction, so the average halves the effect and shrinks its variance. The
*learning region* (:func:`learning_region`) is found from the failure outcome alone, by one rule for every task
(:class:`~sb3_ablation.study.plan.learning_rules.LearningRules`): among the cells still in the region, the removal whose
cells fail most often, pooled over their seeds, makes learning impossible when that rate is at least
``region_failure_rate``; the region keeps that component on, and the rule is applied again within it, until no removal
fails that often. The *conditional effects* (:func:`conditional_effects`) are then each remaining component's effect
within the region: per seed, the mean return of the region's cells with it on minus with it off, tested with the plan's
paired test and equivalence test in one family.

A main effect whose estimate averages over cells outside the region (:func:`floor_label`) keeps its place but never
reads ``equivalent``, and a ``differs`` of it says so: it is labelled as averaged over floor cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, Comparison, compare_family
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import Design
from sb3_ablation.study.plan.learning_rules import LearningRules

#: the label of an equivalence that averages over cells where nothing learns
AT_FLOOR = "at floor"


@dataclass(frozen=True)
class Removal:
    """One step of the region rule: removing ``factor`` in the region of that step fails ``failed`` of ``n`` runs."""

    factor: str
    failed: int
    n: int

    @property
    def rate(self) -> float:
        return self.failed / self.n if self.n else math.nan


@dataclass(frozen=True)
class LearningRegion:
    """
    :param enabling: the components that make learning possible, in the order the rule found them (kept on)
    :param rows: the region's cells (rows of the design)
    :param steps: each step's removals, worst first: what the rule saw (the last step found none at the level)
    :param level: the rule's ``region_failure_rate``
    """

    enabling: tuple[str, ...]
    rows: tuple[int, ...]
    steps: tuple[tuple[Removal, ...], ...]
    level: float

    @property
    def is_whole_design(self) -> bool:
        """No component was needed: the region is every cell (no main effect averages over a floor)."""
        return not self.enabling


def learning_region(design: Design, failed: np.ndarray, rules: LearningRules) -> LearningRegion:
    """
    The learning region (module docstring).

    :param design: the design
    :param failed: ``(cells, seeds)``: 1 the run failed, 0 it learned, NaN no run
    :param rules: the declared rules
    """
    failed = np.asarray(failed, dtype=float)
    rows = np.arange(len(design.cells))
    enabling: list[str] = []
    steps = []
    while True:
        removals = []
        for j, factor in enumerate(design.factors):
            off = rows[design.signs[rows, j] < 0]
            if factor in enabling or not len(off) or not np.any(design.signs[rows, j] > 0):
                continue
            flags = failed[off].ravel()
            flags = flags[np.isfinite(flags)]
            removals.append(Removal(factor, int(flags.sum()), len(flags)))
        removals.sort(key=lambda r: -r.rate if r.n else 0.0)
        steps.append(tuple(removals))
        if not removals or not removals[0].n or removals[0].rate < rules.region_failure_rate:
            return LearningRegion(tuple(enabling), tuple(int(r) for r in rows), tuple(steps), rules.region_failure_rate)
        enabling.append(removals[0].factor)
        rows = rows[design.signs[rows, design.factors.index(removals[0].factor)] > 0]


@dataclass(frozen=True)
class ConditionalEffects:
    """
    :param region: the learning region
    :param factors: the components that vary within it
    :param effects: factor -> its effect within the region (per-seed contrasts, the plan's tests, one family)
    :param seeds: the seeds with a run in every cell of the region
    """

    region: LearningRegion
    factors: tuple[str, ...]
    effects: dict[str, Comparison]
    seeds: tuple[int, ...]


def conditional_effects(
    design: Design,
    values: np.ndarray,
    seeds: list[int],
    region: LearningRegion,
    plan: AnalysisPlan,
    margin: float,
) -> ConditionalEffects:
    """
    Each component's effect within the learning region (module docstring).

    :param design: the design
    :param values: ``(cells, seeds)`` outcomes (NaN: no run; a seed missing a region cell is left out)
    :param seeds: the seeds of the columns
    :param region: :func:`learning_region`
    :param plan: the plan (alpha, test, equivalence test, power)
    :param margin: the equivalence margin (on the per-seed contrast's scale)
    """
    rows = np.array(region.rows)
    array = np.asarray(values, dtype=float)[rows]
    complete = np.all(np.isfinite(array), axis=0)
    signs = design.signs[rows]
    factors = tuple(f for j, f in enumerate(design.factors) if len(set(signs[:, j].tolist())) == 2)
    contrasts = {
        factor: array[signs[:, j] > 0][:, complete].mean(axis=0) - array[signs[:, j] < 0][:, complete].mean(axis=0)
        for factor in factors
        for j in [design.factors.index(factor)]
    }
    effects = compare_family(
        contrasts, plan.alpha, margin, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test, plan.claim_rule
    )
    return ConditionalEffects(region, factors, effects, tuple(s for s, c in zip(seeds, complete, strict=True) if c))


#: the label of a factorial effect's verdict that averages over cells outside the learning region (the report withholds
#: an ``equivalent``: ``unresolved (averaged over floor cells)``, and labels a ``differs``)
AVERAGED_OVER_FLOOR = "averaged over floor cells"


def floor_label(comparison: Comparison, region: LearningRegion) -> str | None:
    """
    What a main effect's (or an interaction's) verdict must carry: :data:`AVERAGED_OVER_FLOOR` for an ``equivalent``
    or a ``differs`` where the effect averages over cells outside the learning region (the report gives ``unresolved
    (averaged over floor cells)`` and ``differs (averaged over floor cells)``,
    :func:`~sb3_ablation.study.render.labels.qualified_verdict`); ``None``: the verdict stands.
    """
    if comparison.verdict in (DIFFERS, EQUIVALENT) and not region.is_whole_design:
        return AVERAGED_OVER_FLOOR
    return None
