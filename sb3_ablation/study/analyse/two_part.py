"""Two-part outcomes: (a) how often runs fail, with exact tests, and (b) the return among the runs that learned.

A return averaged over runs that never learned mixes two questions: does the component make learning possible, and
how well does TD3 do once it learns. Here they are answered apart:

- two arms on paired seeds (:func:`two_arm`): the failure rates with the exact McNemar test on the seeds both ran
  (only the seeds where one failed and the other did not count), and the plan's paired test on the seeds where both
  learned;
- a factorial effect (:func:`factorial_two_part`): the failure rates with the component on and off, with the exact
  conditional test of no association stratified over the other factors (the exact version of Cochran-Mantel-Haenszel:
  given each stratum's margins, the failures with the component on follow a hypergeometric law per stratum, their sum
  the convolution; two-sided p by the probabilities not above the observed one), Holm over the family of effects, and
  the Mantel-Haenszel common odds ratio; and the return among the runs that learned: the mean difference (on minus off)
  within each stratum with learned runs on both sides, averaged over those strata, with a stratified permutation test.

Strata of a factor: the cells with the same levels of the other factors; in a fraction, where no two cells differ in
that factor alone, the last of the other factors is dropped from the key, one at a time, until each stratum holds both
levels (in the half fraction I = ABCDEF, the factor's partner in the defining word moves with it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.failures import paired_failure_test
from sb3_ablation.study.analyse.inference import EQUIVALENT, Comparison, compare_family, holm
from sb3_ablation.study.plan.designs import Design

#: permutations of the stratified permutation test of the learned return
PERMUTATIONS = 9999
#: relative tolerance of "not above the observed probability" (exact tests compare floating-point probabilities)
TIE_TOLERANCE = 1e-7


@dataclass(frozen=True)
class Rate:
    """:param failed: runs that failed; :param n: runs judged; :param ci: exact (Clopper-Pearson) interval"""

    failed: int
    n: int
    ci: tuple[float, float]

    @property
    def rate(self) -> float:
        return self.failed / self.n if self.n else math.nan


def rate(flags: Sequence[bool] | np.ndarray, alpha: float = 0.05) -> Rate:
    """The failure rate of some runs with its exact (1 - alpha) interval."""
    values = np.asarray(flags, dtype=bool).ravel()
    k, n = int(values.sum()), len(values)
    if not n:
        return Rate(0, 0, (math.nan, math.nan))
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    return Rate(k, n, (float(ci.low), float(ci.high)))


@dataclass(frozen=True)
class TwoArm:
    """
    A variant against the baseline on paired seeds, in two parts.

    :param variant: its failure rate
    :param baseline: the baseline's
    :param p_failure: exact McNemar p on the seeds both ran
    :param learned: the plan's paired test of the return on the seeds where both learned (``None``: fewer than 2)
    :param learned_seeds: those seeds
    """

    variant: Rate
    baseline: Rate
    p_failure: float
    learned: Comparison | None
    learned_seeds: tuple[int, ...]


def two_arm(
    failed: tuple[Mapping[int, bool], Mapping[int, bool]],
    returns: tuple[Mapping[int, float], Mapping[int, float]],
    alpha: float = 0.05,
    margin: float = math.nan,
    test: str = "wilcoxon",
    equivalence_test: str | None = None,
) -> TwoArm:
    """
    :param failed: ``(variant, baseline)``: seed -> the run failed
    :param returns: ``(variant, baseline)``: seed -> its return
    :param alpha: level of the intervals and of the learned-return comparison
    :param margin: equivalence margin of the learned-return comparison
    :param test: its paired test; :param equivalence_test: its equivalence test
    """
    variant, baseline = failed
    seeds = sorted(set(variant) & set(baseline))
    p = paired_failure_test([variant[s] for s in seeds], [baseline[s] for s in seeds])
    learned = [s for s in seeds if not variant[s] and not baseline[s] and s in returns[0] and s in returns[1]]
    comparison = None
    if len(learned) >= 2:
        differences = np.array([returns[0][s] - returns[1][s] for s in learned])
        comparison = compare_family({"learned": differences}, alpha, margin, 0.8, 2, test, 0, equivalence_test)["learned"]
    return TwoArm(rate(list(variant.values()), alpha), rate(list(baseline.values()), alpha), p, comparison, tuple(learned))


#: the label of a return equivalence withheld because an arm has failures
FAILURES_IN_AN_ARM = "failures in an arm"


def return_label(comparison: Comparison, variant: Rate, baseline: Rate) -> str | None:
    """
    What the verdict on the return of all runs must carry: :data:`FAILURES_IN_AN_ARM` for an ``equivalent`` where
    either arm has failed runs, which a test of the return cannot see as such (a rank test reads a failed run as one
    low rank): the report withholds that equivalence (``unresolved (failures in an arm)``,
    :func:`~sb3_ablation.study.render.labels.qualified_verdict`), and the failure rates and the return among the runs
    that learned (:class:`TwoArm`) answer there. ``None``: the verdict stands as it is.
    """
    if comparison.verdict == EQUIVALENT and (variant.failed or baseline.failed):
        return FAILURES_IN_AN_ARM
    return None


#: the start of the verdict of a return equivalence withheld by :func:`rare_failure_guard` (the line goes on with the
#: numbers of seeds)
RARE_FAILURES = "cannot tell: "
RARE_FAILURES_TEXT = "seeds cannot rule out rare failures that would cost the margin"


def failure_rate_upper(failed: int, n: int, level: float) -> float:
    """
    The exact one-sided upper confidence bound of a failure rate (Clopper-Pearson): the largest rate under which
    ``failed`` or fewer failures in ``n`` runs have probability at least ``level``.

    :param failed: failures seen
    :param n: runs judged (0: the bound is 1)
    :param level: one minus the bound's coverage
    """
    if failed >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - level, failed + 1, n - failed))


def rare_failure_guard(
    variant: Rate, baseline_mean: float, threshold: float | None, margin: float, level: float
) -> str | None:
    """
    Whether an ``equivalent`` on the return may stand under the ``partitioned`` rule, from the variant's failures: at n
    seeds a variant that fails rarely is indistinguishable from one that never fails, so a test of the mean return
    cannot hold its level against rare failures (docs/calibration.md, "The `partitioned` rule") unless the seeds bound
    the failure rate. The equivalence stands where the exact one-sided upper bound of the variant's failure rate
    (:func:`failure_rate_upper` at ``level``, the comparison's share of alpha) times the least a failed run loses (the
    baseline's mean return minus the failure threshold) is at most the margin.

    :param variant: the variant's failure rate (its failures and runs judged)
    :param baseline_mean: the baseline's mean final-window return
    :param threshold: the return below which a run did not learn (``None``: no rule on this task, so what a failure
        costs is unbounded and the equivalence is withheld)
    :param margin: the equivalence margin (not finite or not positive: no equivalence claim, nothing to guard)
    :param level: the comparison's share of alpha
    :return: ``None`` where the equivalence stands, else the verdict the report gives in its place, in one plain line
        (starting with :data:`RARE_FAILURES`)
    """
    if not (math.isfinite(margin) and margin > 0):
        return None
    cost = math.inf if threshold is None else baseline_mean - threshold
    # a baseline no better than the threshold (or without returns) loses nothing measurable to a failure
    if not cost > 0 or failure_rate_upper(variant.failed, variant.n, level) * cost <= margin:
        return None
    if not math.isfinite(cost):
        return f"{RARE_FAILURES}{variant.n} {RARE_FAILURES_TEXT} (the task has no failure threshold)"
    # the fewest seeds whose bound with no failure, 1 - level ** (1 / n), times the cost is at most the margin
    needed = math.ceil(math.log(level) / math.log1p(-margin / cost)) if margin < cost else 1
    while failure_rate_upper(0, needed, level) * cost > margin:  # floating-point edge of the closed form
        needed += 1
    return f"{RARE_FAILURES}{variant.n} {RARE_FAILURES_TEXT}; {needed} seeds without a failure would"


def strata(signs: np.ndarray, factor: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """
    The strata of one factor (module docstring): per stratum, the rows of ``signs`` with the factor on and off.

    :param signs: ``(cells, factors)`` of +1 / -1
    :param factor: the column of the factor
    """
    others = [j for j in range(signs.shape[1]) if j != factor]
    while True:
        groups: dict[tuple[int, ...], list[int]] = {}
        for row in range(len(signs)):
            groups.setdefault(tuple(int(v) for v in signs[row, others]), []).append(row)
        pairs = [
            (np.array([r for r in rows if signs[r, factor] > 0]), np.array([r for r in rows if signs[r, factor] < 0]))
            for _, rows in sorted(groups.items())
        ]
        if all(len(on) and len(off) for on, off in pairs) or not others:
            return [(on, off) for on, off in pairs if len(on) and len(off)]
        others.pop()


def exact_stratified_test(tables: Sequence[Sequence[Sequence[int]]]) -> tuple[float, float]:
    """
    The exact conditional test of no association in stratified 2 x 2 tables, and the Mantel-Haenszel common odds
    ratio.

    :param tables: per stratum ``[[failed_on, learned_on], [failed_off, learned_off]]``
    :return: ``(p, odds_ratio)``: the two-sided p (1 where every stratum's margins fix its table) and the common odds
        ratio of failing with the factor on against off (NaN where undefined: no discordant information)
    """
    distribution, observed = np.ones(1), 0
    numerator = denominator = 0.0
    for table in tables:
        (a, b), (c, d) = table
        n_on, n_off, failures = a + b, c + d, a + c
        total = n_on + n_off
        if not total:
            continue
        support = np.arange(max(0, failures - n_off), min(failures, n_on) + 1)
        pmf = np.zeros(min(failures, n_on) + 1)
        pmf[support] = stats.hypergeom.pmf(support, total, failures, n_on)
        distribution = np.convolve(distribution, pmf)
        observed += a
        numerator += a * d / total
        denominator += b * c / total
    p_observed = distribution[observed]
    p = float(min(1.0, distribution[distribution <= p_observed * (1 + TIE_TOLERANCE)].sum()))
    odds_ratio = numerator / denominator if denominator else (math.inf if numerator else math.nan)
    return p, float(odds_ratio)


@dataclass(frozen=True)
class FactorTwoPart:
    """
    One factorial effect in two parts.

    :param factor: the component
    :param on: the failure rate of its cells with it on
    :param off: with it off
    :param p_failure: the exact stratified test's p
    :param p_failure_adjusted: Holm over the family of effects
    :param odds_ratio: Mantel-Haenszel common odds ratio of failing, on against off
    :param strata: strata used
    :param learned_effect: the return among the runs that learned, on minus off, averaged over the strata with
        learned runs on both sides (NaN: none)
    :param learned_strata: those strata
    :param p_learned: the stratified permutation test's two-sided p (NaN: no stratum)
    :param verdict: ``differs`` where the failure rate differs at the family's level, else ``no evidence``
    """

    factor: str
    on: Rate
    off: Rate
    p_failure: float
    p_failure_adjusted: float
    odds_ratio: float
    strata: int
    learned_effect: float
    learned_strata: int
    p_learned: float
    verdict: str


def _learned_effect(
    returns: np.ndarray, failed: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray]], seed: int
) -> tuple[float, int, float]:
    """``(effect, strata, p)`` of the learned runs' return (module docstring): the mean over strata of (mean on - mean
    off), and its stratified permutation test (the on/off labels shuffled within each stratum)."""
    rng = np.random.default_rng(seed)
    observed, permuted = [], np.zeros(PERMUTATIONS)
    for on, off in pairs:
        on_values = returns[on][(failed[on] == 0) & np.isfinite(returns[on])]
        off_values = returns[off][(failed[off] == 0) & np.isfinite(returns[off])]
        if not (len(on_values) and len(off_values)):
            continue
        values = np.concatenate([on_values, off_values])
        labels = np.tile(np.arange(len(values)) < len(on_values), (PERMUTATIONS, 1))
        labels = rng.permuted(labels, axis=1)
        permuted += (labels @ values) / len(on_values) - (~labels @ values) / len(off_values)
        observed.append(on_values.mean() - off_values.mean())
    if not observed:
        return math.nan, 0, math.nan
    effect = float(np.mean(observed))
    extreme = int(np.sum(np.abs(permuted / len(observed)) >= abs(effect) * (1 - TIE_TOLERANCE)))
    return effect, len(observed), (1 + extreme) / (1 + PERMUTATIONS)


def factorial_two_part(
    design: Design,
    returns: np.ndarray,
    failed: np.ndarray,
    alpha: float = 0.05,
    rows: Sequence[int] | None = None,
    factors: Sequence[str] | None = None,
    seed: int = 0,
) -> dict[str, FactorTwoPart]:
    """
    The two-part analysis of the main effects of a factorial (module docstring).

    :param design: the design
    :param returns: ``(cells, seeds)`` final-window returns, rows in the order of ``design.cells``, NaN: no run
    :param failed: ``(cells, seeds)`` 1 where the run failed, 0 where it learned, NaN: no run
    :param alpha: the failure family's level (Holm) and the intervals'
    :param rows: the cells to use (default: all; e.g. a learning region)
    :param factors: the effects (default: every factor that varies among ``rows``)
    :param seed: seed of the permutation test
    :return: factor -> :class:`FactorTwoPart`, in the design's order
    """
    chosen = np.arange(len(design.cells)) if rows is None else np.asarray(rows, dtype=np.int64)
    signs = design.signs[chosen]
    varying = [f for j, f in enumerate(design.factors) if len(set(signs[:, j].tolist())) == 2]
    factors = list(factors) if factors is not None else varying
    returns, failed = np.asarray(returns, dtype=float)[chosen], np.asarray(failed, dtype=float)[chosen]
    results: dict[str, tuple[Rate, Rate, float, float, int, tuple[float, int, float]]] = {}
    for name in factors:
        column = design.factors.index(name)
        pairs = strata(signs, column)
        tables = []
        for on, off in pairs:
            on_flags, off_flags = failed[on][np.isfinite(failed[on])], failed[off][np.isfinite(failed[off])]
            tables.append(
                [[int(on_flags.sum()), int((on_flags == 0).sum())], [int(off_flags.sum()), int((off_flags == 0).sum())]]
            )
        p, odds = exact_stratified_test(tables)
        on_rows, off_rows = signs[:, column] > 0, signs[:, column] < 0
        on_flags, off_flags = failed[on_rows].ravel(), failed[off_rows].ravel()
        learned = _learned_effect(returns.ravel(), failed.ravel(), _flat(pairs, returns.shape[1]), seed)
        results[name] = (
            rate(on_flags[np.isfinite(on_flags)] > 0, alpha), rate(off_flags[np.isfinite(off_flags)] > 0, alpha),
            p, odds, len(pairs), learned,
        )  # fmt: skip
    adjusted = holm([r[2] for r in results.values()])
    return {
        name: FactorTwoPart(
            name,
            on,
            off,
            p,
            float(p_adj),
            odds,
            n_strata,
            learned[0],
            learned[1],
            learned[2],
            "differs" if p_adj <= alpha else "no evidence",
        )
        for (name, (on, off, p, odds, n_strata, learned)), p_adj in zip(results.items(), adjusted, strict=True)
    }


def _flat(pairs: list[tuple[np.ndarray, np.ndarray]], n_seeds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Strata of cell rows as strata of the flattened ``(cells * seeds)`` runs."""
    seeds = np.arange(n_seeds)
    return [((on[:, None] * n_seeds + seeds).ravel(), (off[:, None] * n_seeds + seeds).ravel()) for on, off in pairs]
