"""The factorial analysis of a study whose variants form a 2^k design or a regular fraction of one.

Effects are on the standard (Yates) scale: the mean outcome at + (component on) minus the mean at - (removed); an
interaction AB is half the difference between A's effect at B+ and at B-. Each effect is computed within each seed
from that seed's cells (a seed is a block: its runs share initial weights and evaluation episodes) and the per-seed
effects are tested with the plan's paired test. Main effects form one family, two-factor interactions another, each
with one family-wise alpha for ``differs`` and ``equivalent`` (the equivalence margin is the outcome's, applied on the
Yates scale); three-factor interactions are estimates without verdicts. In a fraction every estimate carries its
aliases. A main effect here averages over the other components' levels: a different question from leave-one-out's
"remove it from full TD3", and the two disagree exactly where the component interacts with others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.effects import (
    PairSummary,
    SufficientSet,
    pair_summary,
    per_seed_effects,
    smallest_sufficient_set,
)
from sb3_ablation.study.analyse.inference import Comparison, compare_family
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import Design, alias_structure, effect_words, find_design, word_name
from sb3_ablation.study.plan.variants import parse_variant

#: interaction plots and plain-words summaries for this many of the strongest pairs
STRONGEST_PAIRS = 4


@dataclass
class FactorialResult:
    outcome: str
    design: Design
    seeds: list[int]
    incomplete_seeds: list[int]
    main: dict[str, Comparison]  # word -> per-seed Yates effect comparison
    two: dict[str, Comparison]
    three: dict[str, float]  # estimates only
    aliases: dict[str, tuple[str, ...]]
    cell_means: dict[str, float]  # variant -> mean over seeds
    pairs: list[PairSummary]  # the strongest two-factor interactions
    sufficient: SufficientSet | None
    margin: float

    def name(self, word: str) -> str:
        return word_name(word, self.design.factors)


def analyse_outcome(
    data: StudyData, env: str, design: Design, variant_of: dict[str, str], key: str, plan: AnalysisPlan, margin: float
) -> FactorialResult | None:
    """The factorial analysis of one outcome (``None`` with fewer than 2 seeds that ran every cell)."""
    names = [variant_of["".join("+" if cell[f] else "-" for f in design.factors)] for cell in design.cells]
    per_variant = {}
    for name in names:
        run_seeds, run_values = outcome_values(data, env, name, key, plan)
        per_variant[name] = dict(zip(run_seeds.tolist(), run_values.tolist(), strict=True))
    all_seeds = sorted(set().union(*(set(v) for v in per_variant.values())))
    seeds = [s for s in all_seeds if all(s in per_variant[n] for n in names)]
    if len(seeds) < 2:
        return None
    values = np.array([[per_variant[n][s] for s in seeds] for n in names])  # (cells, seeds)
    words = effect_words(design.k, 3 if design.k >= 3 else 2)
    effects = per_seed_effects(design, values, words)
    by_order = {order: [w for w in words if len(w) == order] for order in (1, 2, 3)}
    rows = {w: effects[words.index(w)] for w in words}
    main = compare_family(
        {w: rows[w] for w in by_order[1]}, plan.alpha, margin, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test
    )
    two = compare_family(
        {w: rows[w] for w in by_order[2]}, plan.alpha, margin, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test
    )
    three = {w: float(rows[w].mean()) for w in by_order[3]}
    estimates = {w: float(rows[w].mean()) for w in by_order[1] + by_order[2]}
    strongest = sorted(by_order[2], key=lambda w: -abs(estimates[w]))[:STRONGEST_PAIRS]
    pairs = [pair_summary(design, values, *(design.factors[design.letters.index(c)] for c in w)) for w in strongest]
    # a return outcome only: the set keeps what the return needs (higher is better)
    sufficient = None
    if key != "overestimation" and math.isfinite(margin):
        sufficient = smallest_sufficient_set(design, values, margin)
    return FactorialResult(
        key, design, seeds, [s for s in all_seeds if s not in seeds], main, two, three, alias_structure(design, 3),
        dict(zip(names, values.mean(axis=1).tolist(), strict=True)), pairs, sufficient, margin,
    )  # fmt: skip


def study_design(data: StudyData, env: str) -> tuple[Design, dict[str, str]] | None:
    """The design the env's variants form (see :func:`~sb3_ablation.study.plan.designs.find_design`)."""
    variants = [parse_variant(name) for name in data.runs.get(env, {})]
    return find_design({v.name: v.switches for v in variants if not v.is_reference})
