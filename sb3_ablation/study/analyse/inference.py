"""Paired comparisons with one family-wise error rate: the verdicts of an ablation study.

One *family* is a set of paired comparisons read together (by default: every variant against the baseline on one env
and one outcome). Each comparison is an array of per-seed differences (variant - baseline; the two runs of a seed
share initial weights and evaluation episodes), tested with the plan's paired test
(:mod:`~sb3_ablation.study.analyse.paired_tests`: Wilcoxon signed-rank by default, chosen by the calibration table in
docs/calibration.md because RL's collapse seeds ruin the t-test's power), and gets one of three verdicts:

- ``differs``: the test rejects "no difference";
- ``equivalent``: the equivalence test (two one-sided tests at ``±margin``) rejects "not equivalent", and "no
  difference" is not rejected;
- ``unresolved``: neither; the minimum detectable effect says how large a difference this many seeds could detect (a
  paired-t approximation) and :func:`seeds_needed` how many seeds would detect the observed one.

Both kinds of claims share one family-wise error rate: the 2m hypotheses of a family of m comparisons go through
Shaffer's step-down (at most one of a comparison's two hypotheses can be true), so the probability of any false
``differs`` or false ``equivalent`` in the family is at most alpha (:data:`GUARANTEE`). A difference can be both real
and within the margin: its verdict is then ``differs`` (``Comparison.within_margin`` says so).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse.family_verdicts import (
    DIFFERS,
    EQUIVALENT,
    GUARANTEE,
    UNRESOLVED,
    decide_family,
    exclusive_claims,
)
from sb3_ablation.study.analyse.paired_methods import smallest_p
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES, PairedResult, compare_paired
from sb3_ablation.study.plan.analysis_plan import CLAIMS, DEFAULT_EQUIVALENCE_TEST, DEFAULT_TEST

__all__ = ["DIFFERS", "EQUIVALENT", "GUARANTEE", "UNRESOLVED", "Comparison", "compare_family"]
VERDICTS = (DIFFERS, EQUIVALENT, UNRESOLVED)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """
    Holm-Bonferroni adjusted p-values: with the m p-values sorted ascending, ``adj_(i) = max_{j <= i} min(1,
    (m - j + 1) p_(j))``. Rejecting where ``adj <= alpha`` controls the family-wise error rate at alpha. NaN entries
    (no test) are not part of the family and stay NaN.

    :param p_values: raw p-values of one family
    :return: adjusted p-values, in the order given
    """
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m = len(tested)
    order = tested[np.argsort(p[tested], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def paired_t_power(effect: float | np.ndarray, sd: float, n: int | np.ndarray, alpha: float) -> np.ndarray:
    """
    Exact power of the two-sided paired t-test (n pairs) at level alpha against a true mean difference ``effect``:
    ``P(|T| > t_{1-alpha/2, n-1})`` with T noncentral t, ``n - 1`` degrees of freedom, noncentrality
    ``effect sqrt(n) / sd``.
    """
    n = np.asarray(n, dtype=np.float64)
    df = n - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    noncentrality = np.abs(effect) * np.sqrt(n) / sd
    # the far tail is negligible where scipy's nct returns NaN for it (noncentrality in the tens)
    far_tail = np.nan_to_num(stats.nct.cdf(-critical, df, noncentrality), nan=0.0)
    power: np.ndarray = stats.nct.sf(critical, df, noncentrality) + far_tail
    return power


def minimum_detectable_effect(sd: float, n: int, alpha: float, power: float = 0.8) -> float:
    """
    The smallest true mean difference that a two-sided paired t-test on ``n`` pairs detects at level ``alpha`` with
    probability ``power``, computed exactly with the noncentral t distribution (the usual approximation
    ``(t_{1-alpha/2} + t_{power}) sd / sqrt(n)`` is a little smaller: 1.662 sd instead of 1.682 sd for n = 5,
    alpha = 0.05, power 0.8).

    :param sd: standard deviation of the per-seed differences
    :param n: number of pairs (seeds)
    :param alpha: the test's level (for a family, the level a comparison must pass)
    :param power: the probability of detecting it
    :return: the effect, in the units of ``sd``; NaN with fewer than 2 pairs or an undefined sd; 0 when sd is 0
    """
    if n < 2 or not math.isfinite(sd):
        return math.nan
    n = int(n)
    table = _mde_table(float(alpha), float(power), MAX_SEEDS)
    return float(sd * (table[n - 2] if n <= MAX_SEEDS else _mde_in_sd(np.array([n]), alpha, power)[0]))


MAX_SEEDS = 1000


def _mde_in_sd(n: np.ndarray, alpha: float, power: float) -> np.ndarray:
    """
    The minimum detectable effect in units of the sd of the differences, for each n at once: bisection on the exact
    power, which grows with the effect, bracketed from the usual approximation upwards.
    """
    n = np.asarray(n, dtype=np.float64)
    high: np.ndarray = (stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) / np.sqrt(n)
    while np.any(short := paired_t_power(high, 1.0, n, alpha) < power):
        high = np.where(short, 2 * high, high)
    low = np.zeros_like(high)
    for _ in range(60):  # 2^-60 of the bracket: exact to double precision
        middle = (low + high) / 2
        enough = paired_t_power(middle, 1.0, n, alpha) >= power
        low, high = np.where(enough, low, middle), np.where(enough, middle, high)
    return high


@functools.lru_cache(maxsize=64)
def _mde_table(alpha: float, power: float, max_n: int) -> np.ndarray:
    """The minimum detectable effect in units of sd for n = 2 .. max_n (it depends on n, alpha and power only)."""
    return _mde_in_sd(np.arange(2, max_n + 1), alpha, power)


def seeds_needed(effect: float, sd: float, alpha: float, power: float = 0.8, max_n: int = MAX_SEEDS) -> int | None:
    """
    The fewest pairs (seeds) with which a two-sided paired t-test at level ``alpha`` detects a true mean difference
    ``effect`` with probability ``power`` (exact, noncentral t): the smallest n whose minimum detectable effect is at
    most ``|effect|``.

    :param effect: the difference to detect (e.g. the observed mean difference)
    :param sd: standard deviation of the per-seed differences
    :param max_n: the largest number considered
    :return: the number of seeds, or ``None`` when more than ``max_n`` would be needed (or effect is 0 / undefined)
    """
    if not (math.isfinite(effect) and math.isfinite(sd)) or effect == 0:
        return None
    if sd == 0:
        return 2
    table = _mde_table(float(alpha), float(power), int(max_n))
    enough = np.flatnonzero(table <= abs(effect) / sd)  # the MDE falls with n
    return int(enough[0]) + 2 if len(enough) else None


def family_description(claims: str, test: str, equivalence_test: str, where: str = "") -> str:
    """
    The tests of a family and how its claims share alpha, in words (a report's "test" of each comparison).

    :param claims: the plan's claims rule
    :param test: the test of "no difference"
    :param equivalence_test: the test of "not equivalent"
    :param where: what follows the test's name (e.g. the group-sequential looks)
    :return: e.g. ``Wilcoxon signed-rank test ...; equivalence: TOST with the ...; one family-wise alpha for differs and
        equivalent (Holm)``
    """
    if claims == "differs":
        return f"{TEST_NAMES[test]}{where}; no equivalence claims (claims: differs); Holm over the family"
    exclusive = exclusive_claims(claims, test, equivalence_test)
    rule = "partitioned: each comparison's share of alpha for both its claims" if claims == "partitioned" else (
        "Shaffer" if exclusive else "Holm"
    )  # fmt: skip
    return (
        f"{TEST_NAMES[test]}{where}; equivalence: TOST with the {TEST_NAMES[equivalence_test]}; one family-wise alpha "
        f"for differs and equivalent ({rule})"
    )


@dataclass(frozen=True)
class Comparison:
    """
    One paired comparison of a family (see the module docstring).

    :param name: what is compared (a variant, a contrast)
    :param n: number of pairs (seeds)
    :param effect: the test's estimate of the difference (Hodges-Lehmann for Wilcoxon, the mean for the t-test)
    :param ci: the test's (1 - alpha) interval (95% at alpha = 0.05), not corrected for the family; ``None`` with fewer
        than ``min_n`` pairs
    :param sd: standard deviation of the per-seed differences (NaN with fewer than 2)
    :param p_raw: p-value of the paired test (NaN without a test)
    :param p_adjusted: its Shaffer-adjusted p over the family's 2m hypotheses
    :param p_equivalence: TOST p-value (the larger of the two one-sided p-values) for ``±margin``
    :param p_equivalence_adjusted: its Shaffer-adjusted p
    :param margin: equivalence margin
    :param alpha: family-wise level
    :param family_size: number of tested comparisons in the family
    :param mde: minimum detectable effect at 80% power and level ``alpha / family_size`` (paired-t approximation)
    :param seeds_needed: seeds that detect the observed effect at 80% power and level ``alpha / family_size``
        (paired-t approximation; ``None``: more than 1000, or the observed effect is 0)
    :param verdict: ``differs``, ``equivalent`` or ``unresolved``
    :param test: the test behind the verdict, in words
    :param reason: why there is no test (too few pairs), or why no test could reject, or ""
    :param differences: the per-seed differences
    :param within: ``differs`` and also shown within ``±margin``
    """

    name: str
    n: int
    effect: float
    ci: tuple[float, float] | None
    sd: float
    p_raw: float
    p_adjusted: float
    p_equivalence: float
    p_equivalence_adjusted: float
    margin: float
    alpha: float
    family_size: int
    mde: float
    seeds_needed: int | None
    verdict: str
    test: str
    reason: str = ""
    differences: tuple[float, ...] = ()
    within: bool = False

    @property
    def within_margin(self) -> bool:
        """Both claims hold: the difference is real and shown to lie within ``±margin``."""
        return self.within


def compare_family(
    differences: Mapping[str, np.ndarray],
    alpha: float,
    margin: float,
    power: float = 0.8,
    min_n: int = 2,
    test: str = DEFAULT_TEST,
    seed: int = 0,
    equivalence_test: str | None = DEFAULT_EQUIVALENCE_TEST,
    claims: str = CLAIMS[0],
    alternatives: Mapping[str, str] | None = None,
) -> dict[str, Comparison]:
    """
    One family of paired comparisons (see the module docstring).

    :param differences: name -> per-seed differences (variant - baseline, or any per-seed contrast)
    :param alpha: family-wise level of the difference and equivalence claims together
    :param margin: equivalence margin (> 0; 0 or NaN: no equivalence claim possible)
    :param power: power for the minimum detectable effect and the seeds needed
    :param min_n: comparisons with fewer pairs get no test and the verdict ``unresolved``
    :param test: the paired test (a name of :data:`~sb3_ablation.study.analyse.paired_tests.TESTS`)
    :param seed: seed of the tests that resample (bootstrap, Monte Carlo sign flips)
    :param equivalence_test: the test of the equivalence claim (TOST); ``None``: ``test`` itself
    :param claims: the plan's claims rule (:data:`~sb3_ablation.study.plan.analysis_plan.CLAIMS`): ``differs`` tests
        no equivalence, ``partitioned`` tests both claims at each comparison's share of alpha
        (:func:`~sb3_ablation.study.analyse.family_verdicts.exclusive_claims`)
    :param alternatives: name -> ``"greater"`` or ``"less"`` for a one-sided hypothesis (e.g. one at an earlier
        budget): its p-value and interval are one-sided and it makes no equivalence claim; the others are two-sided
    :return: name -> comparison, in the order given
    """
    min_n = max(min_n, 2)
    arrays = {name: np.asarray(d, dtype=np.float64).ravel() for name, d in differences.items()}
    arrays = {name: d[np.isfinite(d)] for name, d in arrays.items()}
    has_margin = bool(claims != "differs" and math.isfinite(margin) and margin > 0)
    equivalence_test = equivalence_test or test
    sides = {name: (alternatives or {}).get(name, "two-sided") for name in arrays}
    tested: dict[str, PairedResult] = {}
    for name, d in arrays.items():
        if len(d) < min_n:
            continue
        paired = compare_paired(d, test, alpha, None, rng_seed=seed, alternative=sides[name])
        if has_margin and sides[name] == "two-sided":
            tost = compare_paired(d, equivalence_test, alpha, margin, rng_seed=seed).p_equivalent
            paired = dataclasses.replace(paired, p_equivalent=tost)
        tested[name] = paired
    exclusive = exclusive_claims(claims, test, equivalence_test)  # at most one hypothesis is true (Shaffer)
    verdicts = dict(zip(tested, decide_family(list(tested.values()), alpha, exclusive), strict=True))
    # the level Holm's (or Shaffer's) first step asks of a "no difference" hypothesis
    level = alpha / max(len(tested) * (1 if exclusive or not has_margin else 2), 1)
    description = family_description(claims, test, equivalence_test)
    result = {}
    for name, d in arrays.items():
        n = len(d)
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        if name not in tested:
            result[name] = Comparison(
                name, n, float(d.mean()) if n else math.nan, None, sd, math.nan, math.nan, math.nan, math.nan, margin,
                alpha, len(tested), math.nan, None, UNRESOLVED, "no test",
                reason=f"n = {n} < {min_n} pairs: no test", differences=tuple(float(x) for x in d),
            )  # fmt: skip
            continue
        r, v = tested[name], verdicts[name]
        floor = smallest_p(test, n)
        reason = f"{n} pairs cannot reach p <= {level:.2g} with this test (smallest p {floor:.2g})" if floor > level else ""
        result[name] = Comparison(
            name=name,
            n=n,
            effect=r.estimate,
            ci=(r.ci_low, r.ci_high),
            sd=sd,
            p_raw=r.p_differs,
            p_adjusted=v.p_differs_adjusted,
            p_equivalence=r.p_equivalent,
            p_equivalence_adjusted=v.p_equivalent_adjusted,
            margin=margin,
            alpha=alpha,
            family_size=len(tested),
            mde=minimum_detectable_effect(sd, n, level, power),
            seeds_needed=seeds_needed(r.estimate, sd, level, power),
            verdict=v.verdict,
            test=description,
            reason=reason if v.verdict == UNRESOLVED else "",
            differences=tuple(float(x) for x in d),
            within=v.within_margin,
        )
    return result
