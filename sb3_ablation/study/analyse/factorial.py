"""The factorial analysis of a study whose variants form a 2^k design or a regular fraction of one.

Effects are on the standard (Yates) scale: the mean outcome at + (component on) minus the mean at - (removed); an
interaction AB is half the difference between A's effect at B+ and at B-. Each effect is computed within each seed
from that seed's cells (a seed is a block: its runs share initial weights and evaluation episodes) and the per-seed
effects are tested with the plan's paired test. Main effects form one family, two-factor interactions another, each
with one family-wise alpha for ``differs`` and ``equivalent``; three-factor interactions are estimates without
verdicts. In a fraction every estimate carries its aliases. A main effect here averages over the other components'
levels: a different question from leave-one-out's "remove it from full TD3", and the two disagree exactly where the
component interacts with others.

Equivalence margins are the outcome's margin δ on the *simple-effect scale*, the scale of a removal's effect: a main
effect (mean on minus mean removed) is on it already. A two-factor interaction of Yates size I lets A's two simple
effects (with B on and with B removed) differ by 2I, so "A acts the same whatever B" within δ is ``|2I| <= δ``: the
interaction's equivalence test runs at ±δ/2 on the Yates scale (:attr:`FactorialResult.interaction_margin`), which
for the plan's tests (location-scale equivariant) is the same test as the difference of the simple effects at ±δ.

The smallest sufficient set (:func:`~sb3_ablation.study.analyse.effects.smallest_sufficient_set`) is ``confirmed``
only where its own cell passes the equivalence test against all components on in the per-cell family of comparisons
with the baseline (:func:`~sb3_ablation.study.analyse.effects.confirm_sufficient`). Whether that per-cell family can
reach any verdict at its seeds at all is :func:`attainable_verdicts`, from the tests' smallest attainable p-values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.effects import (
    PairSummary,
    SufficientSet,
    confirm_sufficient,
    pair_summary,
    per_seed_effects,
    smallest_sufficient_set,
)
from sb3_ablation.study.analyse.inference import Comparison, compare_family
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.paired_methods import smallest_p
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import Design, alias_structure, effect_words, find_design, word_name
from sb3_ablation.study.plan.variants import parse_variant

#: interaction plots and plain-words summaries for this many of the strongest pairs
STRONGEST_PAIRS = 4


@dataclass
class FactorialResult:
    """
    One outcome's factorial analysis (module docstring).

    :param margin: the outcome's equivalence margin, on the simple-effect scale (that of the main effects)
    :param interaction_margin: the two-factor interactions' margin on the Yates scale, ``margin / 2``: their simple
        effects differ by at most ``margin``
    """

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
    interaction_margin: float = math.nan

    def name(self, word: str) -> str:
        return word_name(word, self.design.factors)


def analyse_outcome(
    data: StudyData,
    env: str,
    design: Design,
    variant_of: dict[str, str],
    key: str,
    plan: AnalysisPlan,
    margin: float,
    cells: Mapping[str, Comparison] | None = None,
    failed: Mapping[str, int] | None = None,
) -> FactorialResult | None:
    """
    The factorial analysis of one outcome (``None`` with fewer than 2 seeds that ran every cell).

    :param margin: the outcome's equivalence margin (simple-effect scale, module docstring)
    :param cells: variant -> its comparison with the all-on cell in the per-cell family (the report's comparisons with
        the baseline, where the baseline is the all-on cell), which confirms the smallest sufficient set or not
    :param failed: variant -> its failed runs (either arm's failures withhold the confirmation)
    """
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
        {w: rows[w] for w in by_order[1]},
        plan.alpha,
        margin,
        plan.power,
        MIN_RUNS,
        plan.test,
        0,
        plan.equivalence_test,
        plan.claim_rule,
    )
    # the margin on the simple-effect scale: the Yates interaction within ±margin / 2 (module docstring)
    interaction_margin = margin / 2
    two = compare_family(
        {w: rows[w] for w in by_order[2]},
        plan.alpha, interaction_margin, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test, plan.claim_rule,
    )  # fmt: skip
    three = {w: float(rows[w].mean()) for w in by_order[3]}
    estimates = {w: float(rows[w].mean()) for w in by_order[1] + by_order[2]}
    strongest = sorted(by_order[2], key=lambda w: -abs(estimates[w]))[:STRONGEST_PAIRS]
    pairs = [pair_summary(design, values, *(design.factors[design.letters.index(c)] for c in w)) for w in strongest]
    # a return outcome only: the set keeps what the return needs (higher is better)
    sufficient = None
    if key != "overestimation" and math.isfinite(margin):
        sufficient = smallest_sufficient_set(design, values, margin)
        if sufficient.in_design:
            cell, every_on = _variant(variant_of, design, sufficient.switches), _variant(variant_of, design, None)
            failures = ((failed or {}).get(cell, 0), (failed or {}).get(every_on, 0))
            sufficient = confirm_sufficient(sufficient, (cells or {}).get(cell), failures)
    return FactorialResult(
        key, design, seeds, [s for s in all_seeds if s not in seeds], main, two, three, alias_structure(design, 3),
        dict(zip(names, values.mean(axis=1).tolist(), strict=True)), pairs, sufficient, margin, interaction_margin,
    )  # fmt: skip


def _variant(variant_of: Mapping[str, str], design: Design, switches: Mapping[str, bool] | None) -> str:
    """The variant of a cell (``None``: all components on)."""
    return variant_of["".join("+" if switches is None or switches[f] else "-" for f in design.factors)]


@dataclass(frozen=True)
class Attainable:
    """
    Which verdicts a family of comparisons can reach at its seeds, from its tests' smallest attainable p-values.

    :param n: the most pairs of a comparison in the family
    :param level: the level the step-down's first step asks of a hypothesis (nothing passes a later step without
        one passing the first)
    :param smallest_p_differs: the smallest two-sided p of the paired test at ``n`` pairs
    :param smallest_p_equivalent: the smallest p of the equivalence test (two one-sided tests: the smallest one-sided
        p; NaN: no margin)
    :param differs: whether a ``differs`` is attainable (``smallest_p_differs <= level``)
    :param equivalent: whether an ``equivalent`` is
    """

    n: int
    level: float
    smallest_p_differs: float
    smallest_p_equivalent: float
    differs: bool
    equivalent: bool

    @property
    def label(self) -> str:
        """``cannot decide at n = 10``, ``cannot reach differs at n = 10`` (or ``equivalent``), or "" """
        if not (self.differs or self.equivalent):
            return f"cannot decide at n = {self.n}"
        if not self.differs:
            return f"cannot reach differs at n = {self.n}"
        return "" if self.equivalent or math.isnan(self.smallest_p_equivalent) else f"cannot reach equivalent at n = {self.n}"


def attainable_verdicts(comparisons: Mapping[str, Comparison], test: str, equivalence_test: str) -> Attainable | None:
    """
    Which verdicts a family (e.g. a factorial's cells against TD3) can reach at its seeds (:class:`Attainable`).

    The family's step-down (:func:`~sb3_ablation.study.analyse.family_verdicts.decide_family`) first asks p <= alpha
    over the number of comparisons (Shaffer, one test for both claims) or of hypotheses (Holm, two tests); an exact
    test's smallest p falls with n (:func:`~sb3_ablation.study.analyse.paired_methods.smallest_p`; two one-sided tests
    reach half the two-sided one). Where even that is above the first level, no hypothesis is ever rejected.

    :param comparisons: the family (:func:`~sb3_ablation.study.analyse.inference.compare_family`)
    :param test: its paired test; :param equivalence_test: its equivalence test
    :return: ``None`` where no comparison was tested
    """
    tested = [c for c in comparisons.values() if math.isfinite(c.p_raw)]
    if not tested:
        return None
    n, alpha, family = max(c.n for c in tested), tested[0].alpha, tested[0].family_size
    has_margin = any(math.isfinite(c.p_equivalence) for c in tested)
    exclusive = equivalence_test == test
    level = alpha / (family * (1 if exclusive or not has_margin else 2))
    p_differs = smallest_p(test, n)
    p_equivalent = smallest_p(equivalence_test, n) / 2 if has_margin else math.nan
    return Attainable(n, level, p_differs, p_equivalent, p_differs <= level, has_margin and p_equivalent <= level)


def study_design(data: StudyData, env: str) -> tuple[Design, dict[str, str]] | None:
    """The design the env's variants form (see :func:`~sb3_ablation.study.plan.designs.find_design`)."""
    variants = [parse_variant(name) for name in data.runs.get(env, {})]
    return find_design({v.name: v.switches for v in variants if not v.is_reference})
