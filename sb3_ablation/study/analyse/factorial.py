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

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.inference import Comparison, compare_family
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import Design, alias_structure, effect_words, find_design, model_matrix, word_name
from sb3_ablation.study.plan.variants import canonical_name, parse_variant
from sb3_ablation.switches import SWITCHES

#: interaction plots and plain-words summaries for this many of the strongest pairs
STRONGEST_PAIRS = 4


@dataclass(frozen=True)
class PairSummary:
    """
    Two components together, from the cell means averaged over the other factors and seeds (relative to both on).

    :param without_a: removing a alone; :param without_b: removing b alone; :param without_both: removing both
    :param interaction: the Yates interaction: half of (both removed - a removed - b removed + none removed)
    """

    word: str
    name: str
    without_a: float
    without_b: float
    without_both: float
    interaction: float
    means: tuple[tuple[float, float], tuple[float, float]]  # [a on/off][b on/off]


@dataclass(frozen=True)
class SufficientSet:
    """The smallest set of components to keep such that removing all the others lowers the return by at most the margin."""

    keep: tuple[str, ...]
    predicted_drop: float  # the fitted model's prediction, full TD3 minus this cell
    observed_drop: float | None  # the design's own cell, where it has it
    cell: str  # the variant name of that cell


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
    pairs: list[PairSummary]
    sufficient: SufficientSet | None
    margin: float

    def name(self, word: str) -> str:
        return word_name(word, self.design.factors)


def per_seed_effects(design: Design, values: np.ndarray, words: list[str]) -> np.ndarray:
    """Yates effects per seed: ``(n_words, n_seeds)``, each the mean of the seed's cells at + minus the mean at -."""
    matrix = model_matrix(design.cells, design.factors, words)
    return matrix.T @ values / (len(design.cells) / 2)


def _pair(design: Design, means: np.ndarray, word: str) -> PairSummary:
    i, j = (design.letters.index(c) for c in word)
    a, b = design.factors[i], design.factors[j]
    table = [[float(np.mean([m for cell, m in zip(design.cells, means, strict=True) if cell[a] == on_a and cell[b] == on_b]))
              for on_b in (True, False)] for on_a in (True, False)]  # fmt: skip
    both_on = table[0][0]
    return PairSummary(
        word,
        word_name(word, design.factors),
        table[1][0] - both_on,
        table[0][1] - both_on,
        table[1][1] - both_on,
        (table[1][1] - table[1][0] - table[0][1] + table[0][0]) / 2,
        ((table[0][0], table[0][1]), (table[1][0], table[1][1])),
    )


def _sufficient_set(
    design: Design, estimates: dict[str, float], grand: float, margin: float, observed: dict[str, float]
) -> SufficientSet | None:
    if not math.isfinite(margin):
        return None
    words = list(estimates)

    def predict(cell: dict[str, bool]) -> float:
        row = model_matrix([cell], design.factors, words)[0]
        return grand + float(row @ np.array([estimates[w] for w in words])) / 2

    every_switch_on = dict.fromkeys(SWITCHES, True)
    full = predict(every_switch_on)
    for size in range(len(design.factors) + 1):
        candidates = []
        for keep in itertools.combinations(design.factors, size):
            cell = {**every_switch_on, **{f: f in keep for f in design.factors}}
            candidates.append((full - predict(cell), keep, cell))
        drop, keep, cell = min(candidates, key=lambda c: c[0])
        if drop <= margin:
            name = canonical_name(cell)
            seen = observed["td3"] - observed[name] if "td3" in observed and name in observed else None
            return SufficientSet(tuple(keep), drop, seen, name)
    return None


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
    means = values.mean(axis=1)
    estimates = {w: float(rows[w].mean()) for w in by_order[1] + by_order[2]}
    strongest = sorted(by_order[2], key=lambda w: -abs(estimates[w]))[:STRONGEST_PAIRS]
    observed = dict(zip(names, means.tolist(), strict=True))
    sufficient = _sufficient_set(design, estimates, float(means.mean()), margin, observed) if key != "overestimation" else None
    return FactorialResult(
        key, design, seeds, [s for s in all_seeds if s not in seeds], main, two, three, alias_structure(design, 3),
        observed, [_pair(design, means, w) for w in strongest], sufficient, margin,
    )  # fmt: skip


def half_normal_points(result: FactorialResult) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Daniel's plot: sorted |effects| (main and two-factor) against half-normal quantiles."""
    estimates = {w: abs(c.effect) for w, c in {**result.main, **result.two}.items() if math.isfinite(c.effect)}
    words = sorted(estimates, key=lambda w: estimates[w])
    m = len(words)
    quantiles = stats.norm.ppf(0.5 + 0.5 * (np.arange(1, m + 1) - 0.5) / m)
    return quantiles, np.array([estimates[w] for w in words]), words


def study_design(data: StudyData, env: str) -> tuple[Design, dict[str, str]] | None:
    """The design the env's variants form (see :func:`~sb3_ablation.study.plan.designs.find_design`)."""
    variants = [parse_variant(name) for name in data.runs.get(env, {})]
    return find_design({v.name: v.switches for v in variants if not v.is_reference})
